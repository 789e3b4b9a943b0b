package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"planbridge/rpc"
)

const fourStepPlan = "Plan ready.\n<proposed_plan>\n# Greeter flag\n\n## Key Changes\n- Add the name flag to main.go\n- Print the greeting with the name\n- Document the flag in README\n- Add a test for the flag\n\n## Validation\n- go test ./...\n</proposed_plan>\n"

type tracked struct {
	Plan *struct {
		Status string `json:"status"`
		Steps  []struct {
			ID, Status string
		} `json:"steps"`
	} `json:"plan"`
}

func getTracking(t *testing.T, ctx context.Context, c *rpc.Client, sess string) tracked {
	t.Helper()
	var tr tracked
	if err := c.Call(ctx, "session/tracking", map[string]string{"session": sess}, &tr); err != nil {
		t.Fatal(err)
	}
	if tr.Plan == nil {
		t.Fatal("no tracked plan")
	}
	return tr
}

func acceptFullAuto(t *testing.T, ctx context.Context, c *rpc.Client, sess string) {
	t.Helper()
	v := getApproval(t, ctx, c, sess)
	v = update(t, ctx, c, sess, v.Attempt, handoffChange("mode", "full-auto"))
	if err := c.Call(ctx, "approval/accept", map[string]string{"session": sess, "attempt": v.Attempt}, nil); err != nil {
		t.Fatal(err)
	}
}

func stepCalls(status string, ids ...string) string {
	var calls []string
	for _, id := range ids {
		calls = append(calls, fmt.Sprintf(`{"name": "update_plan_step", "arguments": {"step": %q, "status": %q}}`, id, status))
	}
	return "[" + strings.Join(calls, ",") + "]"
}

// TestImplementationCrossesCompaction: after a compaction the model is given
// the remaining steps only, not the finished ones.
func TestImplementationCrossesCompaction(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"main.go": "package main\n"})
	script := writeScript(t, fmt.Sprintf(`[
	 {"text": %q},
	 {"text": "Starting.\n", "tool_calls": %s},
	 {"text": "Two steps done.\n"},
	 {"text": "The person asked for a greeter flag; main.go was edited."},
	 {"expect_contains": ["Steps still to do", "[s3] Document the flag in README", "[s4] Add a test for the flag", "2 of 4 steps are finished"],
	  "expect_absent": ["Add the name flag to main.go", "Print the greeting with the name"],
	  "text": "Continuing with the rest.\n", "tool_calls": %s},
	 {"text": "All four steps are done.\n"}
	]`, fourStepPlan, stepCalls("completed", "s1", "s2"), stepCalls("completed", "s3", "s4")))
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", script)
	s, _ := proposeAndWait(t, ctx, p, ws)
	acceptFullAuto(t, ctx, p.c, s.ID)
	waitHandoffDone(t, ctx, p.c)
	if tr := getTracking(t, ctx, p.c, s.ID); tr.Plan.Steps[1].Status != "completed" || tr.Plan.Steps[2].Status != "pending" {
		t.Fatalf("after kickoff %+v", tr.Plan)
	}
	// Shrink the window: the next turn must compact first.
	if err := p.c.Call(ctx, "initialize", map[string]any{"models": map[string]any{"context_window": 100}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "continue"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 3)
	for _, e := range p.c.Events() {
		if e.Kind == "error" {
			t.Fatalf("error event: %s", e.Data)
		}
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "compacted" }); err != nil {
		t.Fatal(err)
	}
	tr := getTracking(t, ctx, p.c, s.ID)
	if tr.Plan.Status != "done" {
		t.Fatalf("plan %+v", tr.Plan)
	}
}

func waitHandoffDone(t *testing.T, ctx context.Context, c *rpc.Client) {
	t.Helper()
	if _, err := c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "handoff" && (strings.Contains(string(e.Data), `"done"`) || strings.Contains(string(e.Data), `"failed"`))
	}); err != nil {
		t.Fatal(err)
	}
}

// TestKillMidImplementationPausesAndResumes: a process killed while an
// implementation is in flight comes back paused with its completed steps;
// resuming finishes the rest.
func TestKillMidImplementationPausesAndResumes(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"main.go": "package main\n"})
	state := t.TempDir()
	script := writeScript(t, fmt.Sprintf(`[
	 {"text": %q},
	 {"text": "Starting.\n", "tool_calls": %s},
	 {"text": "Two steps done.\n"},
	 {"text": "%s", "delay_ms": 50},
	 {"expect_contains": ["Steps still to do", "[s3]", "[s4]"], "text": "Resuming.\n", "tool_calls": %s},
	 {"text": "Finished.\n"}
	]`, fourStepPlan, stepCalls("completed", "s1", "s2"), strings.Repeat("slow ", 400), stepCalls("completed", "s3", "s4")))
	p := startServe(t, state, "--engine", "script", "--script", script)
	s, _ := proposeAndWait(t, ctx, p, ws)
	acceptFullAuto(t, ctx, p.c, s.ID)
	waitHandoffDone(t, ctx, p.c)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "keep going"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "text" && strings.Contains(string(e.Data), "slow") }); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()

	p2 := startServe(t, state, "--engine", "script", "--script", script)
	tr := getTracking(t, ctx, p2.c, s.ID)
	if tr.Plan.Status != "paused" || tr.Plan.Steps[0].Status != "completed" || tr.Plan.Steps[1].Status != "completed" || tr.Plan.Steps[2].Status != "pending" {
		t.Fatalf("after restart: %+v", tr.Plan)
	}
	var st struct{ Text string }
	p2.c.Call(ctx, "plan/status", map[string]string{"session": s.ID}, &st)
	if !strings.Contains(st.Text, "paused, 2/4 steps done") {
		t.Errorf("/plan status: %q", st.Text)
	}
	if err := p2.c.Call(ctx, "implementation/resume", map[string]string{"session": s.ID}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p2.c, 1)
	for _, e := range p2.c.Events() {
		if e.Kind == "error" {
			t.Fatalf("error: %s", e.Data)
		}
	}
	if tr := getTracking(t, ctx, p2.c, s.ID); tr.Plan.Status != "done" {
		t.Fatalf("after resume: %+v", tr.Plan)
	}
	_ = json.Valid
	_ = time.Second
}

// TestPromptSurvivesCrashMidTurn: a prompt is durable before it is sent, so
// after a crash mid-turn the model still sees it in the conversation.
func TestPromptSurvivesCrashMidTurn(t *testing.T) {
	ctx := ctxT(t)
	state := t.TempDir()
	script := writeScript(t, fmt.Sprintf(`[
	 {"text": "%s", "delay_ms": 40},
	 {"expect_contains": ["remember the word zebra"], "text": "It was zebra.\n"}]`, strings.Repeat("thinking ", 300)))
	p := startServe(t, state, "--engine", "script", "--script", script)
	s := createSession(t, ctx, p.c, t.TempDir())
	p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "remember the word zebra"}, nil)
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "text" }); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
	p2 := startServe(t, state, "--engine", "script", "--script", script)
	p2.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "which word?"}, nil)
	waitTurnEnd(t, ctx, p2.c, 1)
	for _, e := range p2.c.Events() {
		if e.Kind == "error" {
			t.Fatalf("the prompt was lost: %s", e.Data)
		}
	}
}

// TestResumeWhoseCommitFailsResumesNothing: with the tracking commit
// failing (a full disk), implementation/resume fails visibly and resumes
// nothing: the implementation stays paused, in the store and as served,
// and no implementation turn starts while the store has it paused.
func TestResumeWhoseCommitFailsResumesNothing(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"main.go": "package main\n"})
	state := t.TempDir()
	script := writeScript(t, fmt.Sprintf(`[
	 {"text": %q},
	 {"text": "Starting.\n", "tool_calls": %s},
	 {"text": "Two steps done.\n"}
	]`, fourStepPlan, stepCalls("completed", "s1", "s2")))
	p := startServe(t, state, "--engine", "script", "--script", script)
	s, _ := proposeAndWait(t, ctx, p, ws)
	acceptFullAuto(t, ctx, p.c, s.ID)
	waitHandoffDone(t, ctx, p.c)
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
	// The restart pauses the implementation (committed) ...
	p2 := startServe(t, state, "--engine", "script", "--script", script)
	if tr := getTracking(t, ctx, p2.c, s.ID); tr.Plan.Status != "paused" {
		t.Fatalf("after restart: %+v", tr.Plan)
	}
	p2.cmd.Process.Signal(syscall.SIGKILL)
	p2.cmd.Wait()
	// ... and with the disk full, resuming it must not go ahead.
	p3 := startServeEnv(t, []string{"PLANBRIDGE_STORE_FAIL=tracking"}, state, "--engine", "script", "--script", script)
	if tr := getTracking(t, ctx, p3.c, s.ID); tr.Plan.Status != "paused" {
		t.Fatalf("before resume: %+v", tr.Plan)
	}
	err := p3.c.Call(ctx, "implementation/resume", map[string]string{"session": s.ID}, nil)
	if err == nil || !strings.Contains(err.Error(), "no space") {
		t.Fatalf("resume over a failing tracking commit: %v", err)
	}
	if tr := getTracking(t, ctx, p3.c, s.ID); tr.Plan.Status != "paused" {
		t.Fatalf("served after a failed resume: %+v", tr.Plan)
	}
	for _, e := range p3.c.Events() {
		if e.Kind == "turn_start" || (e.Kind == "steps" && strings.Contains(string(e.Data), `"running"`)) {
			t.Fatalf("a failed resume published %s %s", e.Kind, e.Data)
		}
	}
}
