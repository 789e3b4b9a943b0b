package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"planbridge/handoff"
	"planbridge/internal/tracking"
)

// TestAcceptRefusedWithoutBase: an implementation whose base (the scope
// the person approved, and the report's starting point) cannot be staged
// is not started: acceptance is refused with base_failed, the card stays
// pending, the workspace and Plan are untouched; once the base can be
// staged, accepting the same card implements it once.
func TestAcceptRefusedWithoutBase(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	p := startServe(t, state, "--engine", "script", "--script", writeScript(t, handoffScript(false)))
	s, v := proposeAndWait(t, ctx, p, ws)
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "mode", Value: "full-auto"})
	// The review directory cannot be made: a file stands where it goes.
	rd := tracking.ReviewDir(state, s.ID)
	if err := os.RemoveAll(rd); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rd, []byte("in the way\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil)
	if refusalCode(err) != tracking.CodeBaseFailed || !strings.Contains(err.Error(), "nothing was started") {
		t.Fatalf("accept without a base: %v", err)
	}
	after := getApproval(t, ctx, p.c, s.ID)
	if !after.Pending || after.Attempt != v.Attempt {
		t.Fatalf("the card after a refused acceptance: %+v", after)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hello\n" {
		t.Fatalf("greet.txt changed: %q", b)
	}
	var opened struct{ Session sessionInfo }
	if err := p.c.Call(ctx, "session/open", map[string]any{"session": s.ID, "limit": 1}, &opened); err != nil || !opened.Session.Plan {
		t.Fatalf("Plan was left by a refused acceptance: %+v, %v", opened.Session, err)
	}
	if err := os.Remove(rd); err != nil {
		t.Fatal(err)
	}
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 2)
	if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hi\n" {
		dumpEvents(t, p.c, s.ID)
		t.Fatalf("greet.txt after the accepted implementation: %q", b)
	}
}

// TestAcceptStagesABaseWithoutHistory: failing closed on the base never
// refuses a workspace whose base is simply empty: a repository with no
// commit yet, or a directory that is no git checkout, is implemented.
func TestAcceptStagesABaseWithoutHistory(t *testing.T) {
	for _, unborn := range []bool{true, false} {
		t.Run(map[bool]string{true: "unborn", false: "no git"}[unborn], func(t *testing.T) {
			ctx := ctxT(t)
			ws := t.TempDir()
			if unborn {
				if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
					t.Fatal(err, string(out))
				}
			}
			os.WriteFile(filepath.Join(ws, "greet.txt"), []byte("hello\n"), 0o644)
			p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, handoffScript(false)))
			s, v := proposeAndWait(t, ctx, p, ws)
			v = update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "mode", Value: "full-auto"})
			if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err != nil {
				t.Fatal(err)
			}
			waitTurnEnd(t, ctx, p.c, 2)
			if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hi\n" {
				t.Fatalf("greet.txt after the implementation: %q", b)
			}
		})
	}
}
