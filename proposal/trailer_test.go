package proposal

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTrailer(t *testing.T) {
	hash := HashBody("# Add a flag\n\n- step")
	for _, tc := range []struct {
		title, hash, want string
		ok                bool
	}{
		{"Add a --name flag", hash, "Plan: Add a --name flag (sha256:" + hash[:12] + ")", true},
		{"  multi\nline\r\ttitle  ", hash, "Plan: multi line title (sha256:" + hash[:12] + ")", true},
		{"esc\x1b[31mred\u2028sep\u200bzw", hash, "Plan: esc [31mred sep zw (sha256:" + hash[:12] + ")", true},
		{"", hash, "Plan: untitled (sha256:" + hash[:12] + ")", true},
		{"\n\t", hash, "Plan: untitled (sha256:" + hash[:12] + ")", true},
		{"bad utf8 \xff", hash, "Plan: bad utf8 \uFFFD (sha256:" + hash[:12] + ")", true},
		{"t", "abc", "", false},
		{"t", strings.ToUpper(hash), "", false},
		{"t", "zzzzzzzzzzzzzz", "", false},
		{"t", "", "", false},
	} {
		got, ok := Trailer(tc.title, tc.hash)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Trailer(%q, %q) = %q, %v; want %q, %v", tc.title, tc.hash, got, ok, tc.want, tc.ok)
		}
		if strings.ContainsAny(got, "\n\r\x1b") {
			t.Errorf("Trailer(%q) is not one safe line: %q", tc.title, got)
		}
	}
	long, ok := Trailer(strings.Repeat("é", 500), hash)
	title := strings.TrimSuffix(strings.TrimPrefix(long, "Plan: "), " (sha256:"+hash[:12]+")")
	if !ok || utf8.RuneCountInString(title) != MaxTrailerTitle || !strings.HasSuffix(title, "…") {
		t.Errorf("long title: %q", long)
	}
}
