package proposal

import (
	"strings"
	"testing"
)

// TestView: whatever the chunking, what a View shows while streaming plus
// what Done returns is exactly Extract's Visible text, the proposal block
// never shows (not even its opening tag line), and Result is Extract's.
func TestView(t *testing.T) {
	for _, c := range []struct {
		name, text, hidden string
		proposal           bool
	}{
		{"no block", "Just prose.\nMore prose", "", false},
		{"one block", "Intro\n<proposed_plan>\n# Title\n- step\n</proposed_plan>\nOutro", "# Title", true},
		{"glued prose", "Done.<proposed_plan>\n# T\n</proposed_plan>\n", "# T", true},
		{"unterminated", "Intro\n<proposed_plan>\n# Secret\n- step", "# Secret", false},
		{"fenced example", "```\n<proposed_plan>\n```\nafter", "", false},
		{"partial tag line at the end", "text <proposed_pl", "", false},
		{"crlf", "a\r\n<proposed_plan>\r\n# CR\r\n</proposed_plan>\r\nb", "# CR", true},
	} {
		want := Extract(c.text)
		for _, size := range []int{1, 2, 3, 7, len(c.text)} {
			v := NewView()
			if v.Result() != nil {
				t.Fatalf("%s: a result before Done", c.name)
			}
			var shown strings.Builder
			for i := 0; i < len(c.text); i += size {
				part := v.Write(c.text[i:min(i+size, len(c.text))])
				if c.hidden != "" && strings.Contains(shown.String()+part, c.hidden) {
					t.Fatalf("%s/%d: the block showed while streaming: %q", c.name, size, shown.String()+part)
				}
				shown.WriteString(part)
			}
			shown.WriteString(v.Done(c.text))
			if shown.String() != want.Visible {
				t.Errorf("%s/%d: shown %q, want %q", c.name, size, shown.String(), want.Visible)
			}
			r := v.Result()
			if r == nil || (r.Proposal != nil) != c.proposal || (r.Proposal != nil && r.Proposal.Hash != want.Proposal.Hash) ||
				len(r.Diagnostics) != len(want.Diagnostics) {
				t.Errorf("%s/%d: result %+v, want %+v", c.name, size, r, want)
			}
		}
	}
}

// TestNilView: outside Plan nothing is hidden, whatever the text says.
func TestNilView(t *testing.T) {
	for _, text := range []string{"", "prose", "Intro\n<proposed_plan>\n# T\n</proposed_plan>\n", "text <proposed_pl"} {
		var v *View
		var shown strings.Builder
		for i := 0; i < len(text); i += 3 {
			shown.WriteString(v.Write(text[i:min(i+3, len(text))]))
		}
		if rest := v.Done(text); rest != "" {
			t.Errorf("%q: Done held back %q", text, rest)
		}
		if shown.String() != text || v.Result() != nil {
			t.Errorf("%q: shown %q, result %v", text, shown.String(), v.Result())
		}
	}
}
