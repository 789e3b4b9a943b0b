package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestListAfterRestartShowsStoredState: after a restart, session/list
// reports each session's proposal and Goal as opening it would, also for
// sessions nobody has opened yet.
func TestListAfterRestartShowsStoredState(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	script := writeScript(t, fmt.Sprintf(`[{"text": %q}, {"error": "model exploded"}]`, planText))
	p := startServe(t, state, "--engine", "script", "--script", script)
	a, _ := proposeAndWait(t, ctx, p, ws)
	b := createSession(t, ctx, p.c, t.TempDir())
	if err := p.c.Call(ctx, "goal/start", map[string]string{"session": b.ID, "objective": "tidy"}, nil); err != nil {
		t.Fatal(err)
	}
	waitGoal(t, ctx, p.c, b.ID, "paused")
	p.stop()

	p2 := startServe(t, state, "--engine", "script", "--script", script)
	var list []struct {
		ID             string `json:"id"`
		ProposalStatus string `json:"proposal_status"`
		ProposalTitle  string `json:"proposal_title"`
		Approval       string `json:"approval"`
		Goal           string `json:"goal"`
	}
	if err := p2.c.Call(ctx, "session/list", map[string]any{}, &list); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, in := range list {
		switch in.ID {
		case a.ID:
			seen++
			if in.ProposalStatus != "proposed" || in.ProposalTitle != "Rename the greeting" || in.Approval != "shown" {
				t.Errorf("planning session listed as %+v", in)
			}
		case b.ID:
			seen++
			if !strings.HasPrefix(in.Goal, "Goal paused") {
				t.Errorf("Goal session listed as %+v", in)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("list %+v", list)
	}
}
