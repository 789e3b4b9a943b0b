package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/store"
	"planbridge/rpc"
)

// TestCrashAtEveryFailpoint kills the process at every handoff failpoint for
// each Context, restarts it, retries, and checks the handoff happened exactly
// once: one archive, at most one summary request, one kickoff, no retry
// record left, and the session's mode untouched.
func TestCrashAtEveryFailpoint(t *testing.T) {
	for _, cx := range []string{"current", "fresh", "summary"} {
		for _, fp := range handoff.Failpoints {
			t.Run(cx+"/"+fp, func(t *testing.T) { crashAndRetry(t, cx, fp) })
		}
	}
}

func crashAndRetry(t *testing.T, cx, fp string) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	script := writeScript(t, handoffScript(cx == "summary"))
	p := startServeEnv(t, []string{handoff.FailpointEnv + "=" + fp}, state, "--engine", "script", "--script", script)
	s, v := proposeAndWait(t, ctx, p, ws)
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "context", Value: cx})
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "mode", Value: "full-auto"})
	_ = p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil)
	// Direct execution never reaches the Goal failpoint; Summary only is summarized.
	applicable := (fp != "handoff.summarized" || cx == "summary") && !strings.HasPrefix(fp, "goal.") && fp != "handoff.goal"
	if !applicable {
		// This Context never reaches the failpoint: the handoff completes.
		if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
			return e.Kind == "handoff" && strings.Contains(string(e.Data), `"done"`)
		}); err != nil {
			t.Fatal(err)
		}
		p.stop()
	} else if !waitExit(p, 20*time.Second) {
		t.Fatalf("failpoint %s with %s: the process did not stop there", fp, cx)
	}
	crashed := applicable

	p2 := startServe(t, state, "--engine", "script", "--script", script)
	if crashed {
		var st struct {
			Plan           bool
			ProposalStatus string `json:"proposal_status"`
		}
		p2.c.Call(ctx, "plan/status", map[string]string{"session": s.ID}, &st)
		if fp == "handoff.archived" {
			// Nothing moved: the card comes back and is accepted again.
			if !st.Plan || st.ProposalStatus != "proposed" {
				t.Fatalf("after crash before metadata moved: %+v", st)
			}
			v2 := getApproval(t, ctx, p2.c, s.ID)
			if !v2.Pending || string(v2.Selection.Context) != cx {
				t.Fatalf("card after restart: %+v", v2)
			}
			if err := p2.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v2.Attempt}, nil); err != nil {
				t.Fatal(err)
			}
		} else {
			if st.Plan || st.ProposalStatus != "accepted" {
				t.Fatalf("after crash past acceptance: %+v", st)
			}
			if err := p2.c.Call(ctx, "handoff/retry", map[string]string{"session": s.ID}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := p2.c.WaitEvent(ctx, func(e rpc.Event) bool {
			return e.Kind == "handoff" && strings.Contains(string(e.Data), `"done"`)
		}); err != nil {
			t.Fatalf("handoff did not finish after retry: %v", err)
		}
	}

	// Exactly one archive.
	archives, _ := filepath.Glob(filepath.Join(state, "sessions", s.ID, "work", "plans", "accepted-*.md"))
	if len(archives) != 1 {
		t.Errorf("%d archives", len(archives))
	}
	// Event log across both processes: ≤1 summary, exactly one kickoff.
	var opened struct {
		Events []rpc.Event `json:"events"`
	}
	if err := p2.c.Call(ctx, "session/open", map[string]any{"session": s.ID}, &opened); err != nil {
		t.Fatal(err)
	}
	summaries, kickoffs := 0, 0
	for _, e := range opened.Events {
		var d map[string]any
		json.Unmarshal(e.Data, &d)
		if e.Kind == "summary" {
			summaries++
		}
		if e.Kind == "user" && d["display"] == "Implement accepted plan" {
			kickoffs++
		}
	}
	wantSummaries := map[bool]int{true: 1, false: 0}[cx == "summary"]
	if summaries != wantSummaries || kickoffs != 1 {
		t.Errorf("summaries=%d (want %d) kickoffs=%d (want 1)", summaries, wantSummaries, kickoffs)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hi\n" {
		t.Errorf("greet.txt = %q", b)
	}
	if data, err := p2.opened(t).GetRetryRecord(ctx, s.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("retry record left behind: %v %s", err, data)
	}
	var st struct{ Mode string }
	p2.c.Call(ctx, "plan/status", map[string]string{"session": s.ID}, &st)
	if st.Mode != "ask" {
		t.Errorf("session mode became %q; the accepted mode must stay implementation-scoped", st.Mode)
	}
}

// waitExit reports whether the process exited by itself (a failpoint) within d.
func waitExit(p *proc, d time.Duration) bool {
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
		return p.cmd.ProcessState.ExitCode() == handoff.FailpointExit
	case <-time.After(d):
		return false
	}
}

var _ = context.Background

// opened opens the state database of p's state directory beside the
// running server, for reading what it committed.
func (p *proc) opened(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), p.state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
