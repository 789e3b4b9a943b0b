package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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

// TestParkedStartRefusedWithoutBase: a parked plan whose base cannot be
// staged at its start (Here) is not started — base_failed, the parked
// plan stays startable, the workspace untouched — and starts once it can.
func TestParkedStartRefusedWithoutBase(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	p := startServe(t, state, "--engine", "script", "--script", writeScript(t, handoffScript(false)))
	p.c.OnAsk(func(json.RawMessage) any { return map[string]bool{"allow": true} })
	s, v := proposeAndWait(t, ctx, p, ws)
	var parked parkedInfo
	if err := p.c.Call(ctx, "approval/park", map[string]string{"session": s.ID, "attempt": v.Attempt}, &parked); err != nil {
		t.Fatal(err)
	}
	rd := tracking.ReviewDir(state, s.ID)
	os.RemoveAll(rd)
	if err := os.WriteFile(rd, []byte("in the way\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := p.c.Call(ctx, "plan/startParked", map[string]string{"id": parked.ID}, nil)
	if refusalCode(err) != tracking.CodeBaseFailed || !strings.Contains(err.Error(), "nothing was started") {
		t.Fatalf("a start without a base: %v", err)
	}
	if ps := listParked(t, ctx, p.c, map[string]any{}); len(ps) != 1 || ps[0].Started {
		t.Fatalf("the parked plan after a refused start: %+v", ps)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hello\n" {
		t.Fatalf("greet.txt changed: %q", b)
	}
	if err := os.Remove(rd); err != nil {
		t.Fatal(err)
	}
	var res startInfo
	if err := p.c.Call(ctx, "plan/startParked", map[string]string{"id": parked.ID}, &res); err != nil || !res.Started {
		t.Fatalf("start: %+v %v", res, err)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "handoff" && strings.Contains(string(e.Data), `"done"`) }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hi\n" {
		t.Errorf("greet.txt = %q", b)
	}
}
