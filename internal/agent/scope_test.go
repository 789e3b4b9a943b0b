package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type prefixScope []string

func (s prefixScope) Allows(rel string) bool {
	for _, p := range s {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

func TestGateHoldsDeclaredScope(t *testing.T) {
	ws, work := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(ws, "in"), 0o755)
	os.MkdirAll(filepath.Join(ws, "out"), 0o755)
	// A link inside the scope that leads out of it is judged by its target.
	os.Symlink(filepath.Join(ws, "out"), filepath.Join(ws, "in", "link"))
	reg := NewRegistry(DefaultTools()...)
	roots := Roots{Workspace: ws, Work: work}
	call := func(tool, path string) (*Tool, ToolCall) {
		args, _ := json.Marshal(map[string]string{"path": path, "content": "x"})
		return reg.Get(tool), ToolCall{Name: tool, Arguments: args}
	}
	for _, mode := range []Mode{ModeAsk, ModeEdits, ModeFullAuto} {
		g := Gate{Mode: mode, Roots: roots, Scope: prefixScope{"in"}}
		if d := g.Decide(call("write_file", "in/a.go")); mode != ModeAsk && d.Verdict != Run || len(d.OutsideScope) != 0 {
			t.Errorf("%s in scope: %+v", mode, d)
		}
		for _, p := range []string{"out/b.go", "in/link/c.go", filepath.Join(ws, "top.go")} {
			d := g.Decide(call("write_file", p))
			if d.Verdict != Ask || len(d.OutsideScope) != 1 || !strings.Contains(d.Reason, "extend the scope to") {
				t.Errorf("%s %s: %+v", mode, p, d)
			}
		}
		// Notes are the session's, not the implementation's scope.
		if d := g.Decide(call("write_file", "work://notes/n.md")); mode == ModeFullAuto && d.Verdict != Run {
			t.Errorf("%s notes: %+v", mode, d)
		}
		g.Unattended = true
		if d := g.Decide(call("write_file", "out/b.go")); d.Verdict != Refuse || d.Code != CodeOutsideScope || !slices.Equal(d.OutsideScope, []string{"out/b.go"}) {
			t.Errorf("%s unattended: %+v", mode, d)
		}
	}
	// No scope: the permission mode decides alone.
	if d := (Gate{Mode: ModeFullAuto, Roots: roots}).Decide(call("write_file", "out/b.go")); d.Verdict != Run {
		t.Errorf("no scope: %+v", d)
	}
}
