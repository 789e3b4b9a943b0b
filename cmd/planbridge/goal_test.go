package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/rpc"
)

type goalInfo struct {
	Goal *struct {
		ID         string `json:"id"`
		Status     string `json:"status"`
		Reason     string `json:"reason"`
		TokensUsed int64  `json:"tokens_used"`
		Turns      int    `json:"turns"`
		Budget     int64  `json:"budget"`
	} `json:"goal"`
	Summary string `json:"summary"`
}

func getGoal(t *testing.T, ctx context.Context, c *rpc.Client, sess string) goalInfo {
	t.Helper()
	var g goalInfo
	if err := c.Call(ctx, "goal/get", map[string]string{"session": sess}, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// waitGoal waits until the session's Goal reaches status. It gives up a
// little before ctx ends, with the Goal, the session's events and the
// server's stderr, so a stall says where it stopped.
func waitGoal(t *testing.T, ctx context.Context, c *rpc.Client, sess, status string) goalInfo {
	t.Helper()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	var g goalInfo
	for time.Until(deadline) > 3*time.Second {
		g = getGoal(t, ctx, c, sess)
		if g.Goal != nil && g.Goal.Status == status {
			return g
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("goal: %+v", g.Goal)
	dumpEvents(t, c, sess)
	t.Fatalf("goal never reached %s", status)
	return g
}

// dumpEvents logs a session's stored events, for a failure's diagnosis.
func dumpEvents(t *testing.T, c *rpc.Client, sess string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var opened struct {
		Events []rpc.Event `json:"events"`
	}
	if err := c.Call(ctx, "session/open", map[string]any{"session": sess}, &opened); err != nil {
		t.Logf("session/open: %v", err)
		return
	}
	for _, e := range opened.Events {
		d := string(e.Data)
		if len(d) > 300 {
			d = d[:300] + "..."
		}
		t.Logf("event %d %s %s", e.Seq, e.Kind, d)
	}
}

func acceptGoal(t *testing.T, ctx context.Context, c *rpc.Client, sess string, budget int64, ctxAxis string) {
	t.Helper()
	v := getApproval(t, ctx, c, sess)
	v = update(t, ctx, c, sess, v.Attempt, handoff.Change{Axis: "execution", Value: "goal"})
	v = update(t, ctx, c, sess, v.Attempt, handoff.Change{Axis: "budget", Budget: &budget})
	v = update(t, ctx, c, sess, v.Attempt, handoff.Change{Axis: "mode", Value: "full-auto"})
	if ctxAxis != "" {
		v = update(t, ctx, c, sess, v.Attempt, handoff.Change{Axis: "context", Value: ctxAxis})
	}
	if err := c.Call(ctx, "approval/accept", map[string]string{"session": sess, "attempt": v.Attempt}, nil); err != nil {
		t.Fatal(err)
	}
}

const usage100 = `"usage": {"input_tokens": 100, "output_tokens": 50}`

func goalCompleteScript(summary bool) string {
	steps := []string{fmt.Sprintf(`{"text": %q, %s}`, planText, usage100)}
	if summary {
		steps = append(steps, `{"text": "## Scope\nrename\n"}`)
	}
	steps = append(steps,
		`{"text": "Editing.\n", "tool_calls": [{"name": "edit_file", "arguments": {"path": "greet.txt", "old": "hello", "new": "hi"}}], `+usage100+`}`,
		`{"text": "First turn done.\n", `+usage100+`}`,
		`{"expect_contains": ["Continue working toward the active Goal."], "text": "Adding notes.\n", "tool_calls": [{"name": "write_file", "arguments": {"path": "greet.txt", "content": "hi\n"}}, {"name": "update_goal", "arguments": {"status": "complete", "summary": "greet.txt says hi"}}], `+usage100+`}`,
		`{"text": "Goal complete.\n", `+usage100+`}`)
	return "[" + strings.Join(steps, ",\n") + "]"
}

func TestGoalCompletesWithAccounting(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, goalCompleteScript(false)))
	s, _ := proposeAndWait(t, ctx, p, ws)
	acceptGoal(t, ctx, p.c, s.ID, 10000, "")
	g := waitGoal(t, ctx, p.c, s.ID, "complete")
	if g.Goal.TokensUsed != 600 || g.Goal.Turns != 2 || g.Goal.Reason != "greet.txt says hi" {
		t.Fatalf("accounting %+v", g.Goal)
	}
	// Status and accounting settle together: no observer ever sees the Goal
	// complete with the last turn not booked yet.
	for _, e := range p.c.Events() {
		var ev goalInfo
		if e.Kind != "goal" || json.Unmarshal(e.Data, &ev) != nil || ev.Goal == nil || ev.Goal.Status != "complete" {
			continue
		}
		if ev.Goal.TokensUsed != 600 || ev.Goal.Turns != 2 {
			t.Fatalf("goal event %d shows complete with stale accounting: %+v", e.Seq, ev.Goal)
		}
	}
	// The continuation wrote inside the plan's scope (greet.txt).
	if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hi\n" {
		t.Fatalf("greet.txt %q", b)
	}
	// A completed Goal does not block Plan.
	if err := p.c.Call(ctx, "plan/enter", map[string]string{"session": s.ID}, nil); err != nil {
		t.Fatalf("plan after completed goal: %v", err)
	}
	kickoffs := 0
	for _, e := range p.c.Events() {
		if e.Kind == "user" && strings.Contains(string(e.Data), "Implement accepted plan as Goal") {
			kickoffs++
		}
	}
	if kickoffs != 1 {
		t.Fatalf("%d kickoffs", kickoffs)
	}
}

func TestGoalBudgetLimited(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	big := `"usage": {"input_tokens": 200, "output_tokens": 100}`
	script := fmt.Sprintf(`[{"text": %q},
	 {"text": "Working, not done.\n", %s},
	 {"expect_contains": ["<goal_budget_note>"], "text": "Still working.\n", %s}]`, planText, big, big)
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, script))
	s, _ := proposeAndWait(t, ctx, p, ws)
	acceptGoal(t, ctx, p.c, s.ID, 500, "")
	g := waitGoal(t, ctx, p.c, s.ID, "budget-limited")
	if g.Goal.TokensUsed != 600 || g.Goal.Turns != 2 {
		for _, e := range p.c.Events() {
			t.Logf("%s %s", e.Kind, e.Data)
		}
		t.Fatalf("accounting %+v", g.Goal)
	}
	time.Sleep(200 * time.Millisecond) // no further continuation may start
	for _, e := range p.c.Events() {
		if e.Kind == "error" {
			t.Fatalf("unexpected error (a continuation ran past the budget?): %s", e.Data)
		}
	}
	// An unfinished Goal blocks Plan.
	if err := p.c.Call(ctx, "plan/enter", map[string]string{"session": s.ID}, nil); err == nil || !strings.Contains(err.Error(), "Goal") {
		t.Fatalf("plan/enter with unfinished goal: %v", err)
	}
}

func TestGoalRestartPausesAndResumes(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	script := fmt.Sprintf(`[{"text": %q},
	 {"text": "Turn one.\n"},
	 {"text": "%s", "delay_ms": 40},
	 {"expect_contains": ["Continue working toward the active Goal."], "text": "Resumed.\n", "tool_calls": [{"name": "update_goal", "arguments": {"status": "complete", "summary": "done"}}]},
	 {"text": "Complete.\n"}]`, planText, strings.Repeat("slow ", 300))
	scriptFile := writeScript(t, script)
	p := startServe(t, state, "--engine", "script", "--script", scriptFile)
	s, _ := proposeAndWait(t, ctx, p, ws)
	acceptGoal(t, ctx, p.c, s.ID, 0, "")
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "text" && strings.Contains(string(e.Data), "slow") }); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
	p2 := startServe(t, state, "--engine", "script", "--script", scriptFile)
	g := getGoal(t, ctx, p2.c, s.ID)
	if g.Goal == nil || g.Goal.Status != "paused" || !strings.Contains(g.Goal.Reason, "restart") {
		t.Fatalf("after restart %+v", g.Goal)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(p2.c.Events()); n != 0 {
		t.Fatalf("a paused Goal continued by itself: %d events", n)
	}
	if err := p2.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/goal resume"}, nil); err != nil {
		t.Fatal(err)
	}
	waitGoal(t, ctx, p2.c, s.ID, "complete")
	// update_goal completes the Goal mid-turn; the turn is booked when it
	// settles, so wait for that.
	waitTurnEnd(t, ctx, p2.c, 1)
	g = getGoal(t, ctx, p2.c, s.ID)
	// The continuation killed mid-stream never settled, so it is not booked:
	// the kickoff and the resumed continuation are.
	if g.Goal.Turns != 2 {
		t.Errorf("turns %d, want 2 (kickoff + resumed continuation)", g.Goal.Turns)
	}
}

// The scripts above are re-read per process; a restarted process continues
// the replay where the previous one stopped because the cursor is stored.
var _ = json.Valid

// TestGoalStartObjectiveIsNotACommand: goal/start takes the objective
// verbatim, even when it begins with a command word; the view labels a
// plan-less Goal's first turn with its objective.
func TestGoalStartObjectiveIsNotACommand(t *testing.T) {
	ctx := ctxT(t)
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, `[
	 {"expect_contains": ["clear the build cache"], "text": "Clearing.\n", "tool_calls": [{"name": "update_goal", "arguments": {"status": "complete", "summary": "cache cleared"}}]},
	 {"text": "Done.\n"}]`))
	s := createSession(t, ctx, p.c, t.TempDir())
	if err := p.c.Call(ctx, "goal/start", map[string]string{"session": s.ID, "objective": ""}, nil); err == nil {
		t.Fatal("an empty objective started a Goal")
	}
	if err := p.c.Call(ctx, "goal/start", map[string]string{"session": s.ID, "objective": "clear the build cache"}, nil); err != nil {
		t.Fatal(err)
	}
	g := waitGoal(t, ctx, p.c, s.ID, "complete")
	if g.Goal.Reason != "cache cleared" {
		t.Fatalf("goal %+v", g.Goal)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "user" && strings.Contains(string(e.Data), "Work toward Goal: clear the build cache")
	}); err != nil {
		t.Fatal(err)
	}
}
