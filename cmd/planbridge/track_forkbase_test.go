package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/store"
	"planbridge/internal/tracking"
	"planbridge/rpc"
)

// TestForkWhoseBaseCannotBeStagedFailsTheHandOver: a Worktree fork whose
// implementation base cannot be staged (a file where the fork's review
// directory goes) fails the hand-over, the step that names the base: the
// planning session keeps its plan and its record, the fork runs nothing
// under a scope it could not hold, and the person is told. Once the base
// can be staged, the one recovery path hands it over and the fork
// implements it.
func TestForkWhoseBaseCannotBeStagedFailsTheHandOver(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	script := writeScript(t, forkScript())
	// Stop once the fork's session exists, to put the file in its way.
	p := startServeEnv(t, []string{handoff.FailpointEnv + "=fork.session"}, state, "--engine", "script", "--script", script)
	s, v := prepareFork(t, ctx, p, ws)
	_ = p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt, "branch": "feature/rename"}, nil)
	if !waitExit(p, 20*time.Second) {
		t.Fatal("did not stop at fork.session")
	}
	st, err := store.Open(ctx, state)
	if err != nil {
		t.Fatal(err)
	}
	forks, err := st.ForksOf(ctx, s.ID)
	st.Close()
	if err != nil || len(forks) != 1 {
		t.Fatalf("forks %+v %v", forks, err)
	}
	blocked := tracking.ReviewDir(state, forks[0].ID)
	if err := os.WriteFile(blocked, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}

	p2 := startServe(t, state, "--engine", "script", "--script", script)
	if err := p2.c.Call(ctx, "handoff/retry", map[string]string{"session": s.ID}, nil); err != nil {
		t.Fatal(err)
	}
	failed, err := p2.c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "handoff" && (strings.Contains(string(e.Data), `"failed"`) || strings.Contains(string(e.Data), `"done"`))
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(failed.Data), `"failed"`) {
		t.Fatalf("the hand-over went on without the fork's base: %s", failed.Data)
	}
	told, err := p2.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "error" && e.Session == s.ID })
	if err != nil || !strings.Contains(string(told.Data), "could not stage the fork's implementation base") {
		t.Fatalf("not told: %s %v", told.Data, err)
	}
	if tr := getTracking(t, ctx, p2.c, s.ID); len(tr.Plan.Steps) == 0 {
		t.Fatalf("the source lost its plan: %+v", tr.Plan)
	}
	var opened struct {
		Session struct {
			ForkedTo string `json:"forked_to"`
		} `json:"session"`
	}
	if err := p2.c.Call(ctx, "session/open", map[string]any{"session": s.ID, "limit": 1}, &opened); err != nil || opened.Session.ForkedTo != "" {
		t.Fatalf("handed over without its base: forked_to %q, %v", opened.Session.ForkedTo, err)
	}

	if err := os.Remove(blocked); err != nil {
		t.Fatal(err)
	}
	if err := p2.c.Call(ctx, "handoff/retry", map[string]string{"session": s.ID}, nil); err != nil {
		t.Fatal(err)
	}
	checkFork(t, ctx, p2.c, state, ws, s)
}
