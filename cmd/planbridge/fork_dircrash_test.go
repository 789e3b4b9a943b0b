package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/store"
	"planbridge/rpc"
)

// TestForkSessionCrashBeforeItsDirectoryResumes: a crash after the fork
// session's row committed but before its directory was made (the row
// first, so a directory never exists without its session) leaves the
// source's record naming a fork with no directory. The one recovery path
// must still hand the plan over and the fork implement it: the install
// and the fork's base are anchored at the fork's directory, which nothing
// on the resumed path creates.
func TestForkSessionCrashBeforeItsDirectoryResumes(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	script := writeScript(t, forkScript())
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
	// The state a SIGKILL between CreateForkSession's commit and its
	// directory leaves: the row, no directory.
	if err := os.RemoveAll(store.SessionDir(state, forks[0].ID)); err != nil {
		t.Fatal(err)
	}

	p2 := startServe(t, state, "--engine", "script", "--script", script)
	if err := p2.c.Call(ctx, "handoff/retry", map[string]string{"session": s.ID}, nil); err != nil {
		t.Fatal(err)
	}
	ended, err := p2.c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "handoff" && (strings.Contains(string(e.Data), `"failed"`) || strings.Contains(string(e.Data), `"done"`))
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(ended.Data), `"failed"`) {
		told, _ := p2.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "error" && e.Session == s.ID })
		t.Fatalf("the resumed fork step failed: %s; told %s", ended.Data, told.Data)
	}
	checkFork(t, ctx, p2.c, state, ws, s)
}
