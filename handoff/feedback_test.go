package handoff

import (
	"strings"
	"testing"
)

func TestFeedbackSizeAndMask(t *testing.T) {
	mask := func(s string) string { return strings.ReplaceAll(s, "sk-secret", "***") }
	for _, tc := range []struct {
		name     string
		text     string
		comments []LineComment
		size     int
		wantText string
		wantCom  []string
	}{
		{"words only", "tighten step 2", nil, 14, "tighten step 2", nil},
		{"empty", "", nil, 0, "", nil},
		{"comments count, lines do not", "x", []LineComment{{Line: 1000, Text: "ab"}, {Line: 2, Text: "cde"}}, 6, "x", []string{"ab", "cde"}},
		{"multibyte counts bytes", "é", []LineComment{{Line: 1, Text: "日"}}, 5, "é", []string{"日"}},
		{"masked everywhere", "use sk-secret", []LineComment{{Line: 3, Text: "key sk-secret here"}}, 31, "use ***", []string{"key *** here"}},
	} {
		if got := FeedbackSize(tc.text, tc.comments); got != tc.size {
			t.Errorf("%s: size %d, want %d", tc.name, got, tc.size)
		}
		orig := append([]LineComment(nil), tc.comments...)
		text, cs := MaskFeedback(tc.text, tc.comments, mask)
		if text != tc.wantText || len(cs) != len(tc.wantCom) {
			t.Fatalf("%s: %q %v", tc.name, text, cs)
		}
		for i, c := range cs {
			if c.Text != tc.wantCom[i] || c.Line != orig[i].Line {
				t.Errorf("%s: comment %d = %+v", tc.name, i, c)
			}
			if tc.comments[i] != orig[i] {
				t.Errorf("%s: the caller's comment %d changed: %+v", tc.name, i, tc.comments[i])
			}
		}
	}
}
