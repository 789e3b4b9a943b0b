package handoff

import (
	"strings"
	"testing"
)

// TestRenderHistory: the summary input never carries a proposal block
// (the accepted plan travels verbatim, apart), clips tool output, and
// shows calls.
func TestRenderHistory(t *testing.T) {
	long := strings.Repeat("x", 5000)
	got := RenderHistory([]HistoryMessage{
		{Role: "user", Content: "rename it"},
		{Role: "assistant", Content: "Looked.\n\n<proposed_plan>\n# Secret plan body\n</proposed_plan>\n", Calls: []HistoryCall{{Name: "read_file", Arguments: `{"path":"a"}`}}},
		{Role: "tool", Name: "read_file", Content: long},
		{Role: "user", Content: "<proposed_plan>\n# A person's text is not hidden\n</proposed_plan>"},
	})
	for _, want := range []string{"[user]\nrename it\n\n", "[assistant]\nLooked.\n" + OmittedPlan, "\n(calls read_file {\"path\":\"a\"})", "[tool read_file]\n" + strings.Repeat("x", 2000) + " …\n\n", "A person's text is not hidden"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Secret plan body") || strings.Contains(got, long) {
		t.Errorf("a proposal or a whole long result leaked:\n%s", got)
	}
}

func TestFreshMaterial(t *testing.T) {
	if got := FreshMaterial(t.TempDir()); !strings.Contains(got, "Repository HEAD: not a git repository") {
		t.Errorf("outside git: %s", got)
	}
	root := gitRepo(t, map[string]string{"a": "a\n"})
	if got := FreshMaterial(root); !strings.Contains(got, "Workspace: "+root) || !strings.Contains(got, " on branch ") {
		t.Errorf("in git: %s", got)
	}
}

// TestCompactMaterial: the summary, then what must not be lost, verbatim,
// each only when there is one.
func TestCompactMaterial(t *testing.T) {
	bare := CompactMaterial("  the gist \n", Compaction{})
	if bare != "Summary of the conversation so far (the context was compacted):\n\nthe gist" {
		t.Errorf("bare: %q", bare)
	}
	full := CompactMaterial("gist", Compaction{Carry: "Implementing \"T\": 1/3 done", Proposal: "Rename", ProposalPath: "work://plans/current.md", Reminder: "<plan reminder>"})
	for _, want := range []string{"gist\n\nImplementing \"T\": 1/3 done", "The current proposal \"Rename\" is saved at work://plans/current.md.", "\n\n<plan reminder>"} {
		if !strings.Contains(full, want) {
			t.Errorf("missing %q in %q", want, full)
		}
	}
	if strings.Index(full, "Implementing") > strings.Index(full, "proposal") || strings.Index(full, "proposal") > strings.Index(full, "<plan reminder>") {
		t.Errorf("order: %q", full)
	}
}
