package main

import (
	"planbridge/rpc"
	"sync"
	"sync/atomic"
	"time"

	"fmt"
	"planbridge/handoff"
	"strings"
	"testing"
)

// TestGoalRunsQueuedFollowUpAfterKickoff: a follow-up queued while the card
// is pending runs after the Goal's kickoff, as its own Goal turn, and the
// Goal then continues; it never stalls idle with 0 turns.
func TestGoalRunsQueuedFollowUpAfterKickoff(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	script := fmt.Sprintf(`[{"text": %q},
	 {"expect_contains": ["Rename the greeting"], "expect_last_user_absent": ["also mention it in NOTES"], "text": "Kickoff turn.\n", %s},
	 {"expect_contains": ["also mention it in NOTES"], "text": "Noted.\n", %s},
	 {"expect_contains": ["Continue working toward the active Goal."], "text": "Finishing.\n", "tool_calls": [{"name": "update_goal", "arguments": {"status": "complete", "summary": "all done"}}], %s},
	 {"text": "Complete.\n", %s}]`, planText, usage100, usage100, usage100, usage100)
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, script))
	s, _ := proposeAndWait(t, ctx, p, ws)
	if err := p.c.Call(ctx, "session/queue", map[string]string{"session": s.ID, "text": "also mention it in NOTES"}, nil); err != nil {
		t.Fatal(err)
	}
	acceptGoal(t, ctx, p.c, s.ID, 0, "")
	g := waitGoal(t, ctx, p.c, s.ID, "complete")
	if g.Goal.Turns != 3 || g.Goal.TokensUsed != 600 {
		t.Fatalf("goal %+v, want 3 turns (kickoff, follow-up, continuation) and 600 tokens", g.Goal)
	}
	var order []string
	for _, e := range p.c.Events() {
		if e.Kind == "user" {
			order = append(order, string(e.Data))
		}
		if e.Kind == "error" {
			t.Errorf("error event: %s", e.Data)
		}
	}
	if len(order) != 4 || !strings.Contains(order[1], "Implement accepted plan as Goal") ||
		!strings.Contains(order[2], "also mention it in NOTES") || !strings.Contains(order[3], "Continue Goal") {
		t.Fatalf("turn order %q", order)
	}
}

// TestGoalEditReplacesHeldKickoff: a Goal whose plan kickoff is still held
// (here: the process died after constructing it) and whose objective the
// person then edits never sends the old kickoff against the new objective.
func TestGoalEditReplacesHeldKickoff(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	script := writeScript(t, fmt.Sprintf(`[{"text": %q},
	 {"expect_contains": ["Say hi and also bye"], "expect_last_user_absent": ["<accepted_plan>", "Implement the accepted plan as a Goal"], "text": "On it.\n", "tool_calls": [{"name": "update_goal", "arguments": {"status": "complete", "summary": "edited goal done"}}]},
	 {"text": "Done.\n"}]`, planText))
	p := startServeEnv(t, []string{handoff.FailpointEnv + "=handoff.goal"}, state, "--engine", "script", "--script", script)
	s, _ := proposeAndWait(t, ctx, p, ws)
	v := getApproval(t, ctx, p.c, s.ID)
	v = update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "execution", Value: "goal"})
	_ = p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil)
	if !waitExit(p, 20*time.Second) {
		t.Fatal("did not stop at handoff.goal")
	}
	p2 := startServe(t, state, "--engine", "script", "--script", script)
	for _, cmd := range []string{"/goal edit Say hi and also bye", "/goal resume"} {
		if err := p2.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": cmd}, nil); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
	}
	g := waitGoal(t, ctx, p2.c, s.ID, "complete")
	if g.Goal.Reason != "edited goal done" {
		t.Fatalf("goal %+v", g.Goal)
	}
	for _, e := range p2.c.Events() {
		if e.Kind == "error" {
			t.Errorf("error event: %s", e.Data)
		}
	}
}

// TestGoalFullBudgetNoteNotDeliveredLate: the 100 % note is never sent to
// the model after the person raised the budget (it would say the budget is
// used up when it is not); the person is told instead, when it happens.
func TestGoalFullBudgetNoteNotDeliveredLate(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	big := `"usage": {"input_tokens": 200, "output_tokens": 100}`
	script := fmt.Sprintf(`[{"text": %q},
	 {"text": "Working, not done.\n", %s},
	 {"expect_contains": ["<goal_budget_note>Goal budget note: 50%%"], "text": "Still working.\n", %s},
	 {"expect_contains": ["Continue working toward the active Goal."], "expect_last_user_absent": ["<goal_budget_note>", "used up"], "text": "Finishing.\n", "tool_calls": [{"name": "update_goal", "arguments": {"status": "complete"}}]},
	 {"text": "Done.\n"}]`, planText, big, big)
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, script))
	s, _ := proposeAndWait(t, ctx, p, ws)
	acceptGoal(t, ctx, p.c, s.ID, 500, "")
	waitGoal(t, ctx, p.c, s.ID, "budget-limited")
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "notice" && strings.Contains(string(e.Data), "budget") && strings.Contains(string(e.Data), "/goal budget")
	}); err != nil {
		t.Fatalf("the person was not told the budget is used up: %v", err)
	}
	for _, cmd := range []string{"/goal budget 10000", "/goal resume"} {
		if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": cmd}, nil); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
	}
	waitGoal(t, ctx, p.c, s.ID, "complete")
	for _, e := range p.c.Events() {
		if e.Kind == "error" {
			t.Errorf("error event: %s", e.Data)
		}
	}
}

// TestGoalUnfinishedRefusalSaysWhatUnblocks: entering Plan (or starting a
// second Goal) while a Goal is unfinished is refused with words that name
// what lifts the refusal; pausing does not, clearing does.
func TestGoalUnfinishedRefusalSaysWhatUnblocks(t *testing.T) {
	ctx := ctxT(t)
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, `[{"error": "model exploded"}]`))
	s := createSession(t, ctx, p.c, t.TempDir())
	if err := p.c.Call(ctx, "goal/start", map[string]string{"session": s.ID, "objective": "tidy the docs"}, nil); err != nil {
		t.Fatal(err)
	}
	waitGoal(t, ctx, p.c, s.ID, "paused")
	for _, try := range []struct{ method, text string }{{"plan/enter", ""}, {"session/submit", "/goal another objective"}} {
		err := p.c.Call(ctx, try.method, map[string]string{"session": s.ID, "text": try.text}, nil)
		if err == nil {
			t.Fatalf("%s %s succeeded with an unfinished Goal", try.method, try.text)
		}
		msg := err.Error()
		if !strings.Contains(msg, "goal_unfinished") && !strings.Contains(msg, "unfinished") {
			t.Errorf("%s: %v", try.method, msg)
		}
		if !strings.Contains(msg, "/goal clear") || !strings.Contains(msg, "a paused Goal still counts") {
			t.Errorf("%s refusal does not say what unblocks it: %q", try.method, msg)
		}
	}
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/goal clear"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.c.Call(ctx, "plan/enter", map[string]string{"session": s.ID}, nil); err != nil {
		t.Fatalf("plan/enter after /goal clear: %v", err)
	}
}

// TestGoalActionsAreAtomic: Goal actions racing on one session act on one
// Goal each: of two concurrent starts exactly one wins, and a clear racing
// a start never forgets a Goal it did not clear (see goalrun.Runner.Clear).
func TestGoalActionsAreAtomic(t *testing.T) {
	ctx := ctxT(t)
	p := startServe(t, t.TempDir()) // no engine: every Goal turn fails and pauses it
	const n = 40
	ids := make([]string, n)
	for i := range ids {
		ids[i] = createSession(t, ctx, p.c, t.TempDir()).ID
	}
	var wg sync.WaitGroup
	wins := make([]atomic.Int32, n)
	for i, id := range ids {
		for k := 0; k < 2; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if p.c.Call(ctx, "goal/start", map[string]string{"session": id, "objective": fmt.Sprintf("objective %d", k)}, nil) == nil {
					wins[i].Add(1)
				}
			}()
		}
	}
	wg.Wait()
	for i := range ids {
		if w := wins[i].Load(); w != 1 {
			t.Errorf("session %d: %d concurrent goal/start calls succeeded, want exactly 1", i, w)
		}
	}
}

// TestGoalClearRacingTurnsStaysCleared: /goal clear while the Goal's turns
// settle one after another never leaves the cleared Goal alive on disk (it
// would come back after a restart).
func TestGoalClearRacingTurnsStaysCleared(t *testing.T) {
	ctx := ctxT(t)
	steps := make([]string, 400)
	for i := range steps {
		steps[i] = `{"text": "step\n", "usage": {"input_tokens": 1, "output_tokens": 1}}`
	}
	script := writeScript(t, "["+strings.Join(steps, ",")+"]")
	for round := range 3 {
		state := t.TempDir()
		p := startServe(t, state, "--engine", "script", "--script", script)
		s := createSession(t, ctx, p.c, t.TempDir())
		if err := p.c.Call(ctx, "goal/start", map[string]string{"session": s.ID, "objective": "keep going"}, nil); err != nil {
			t.Fatal(err)
		}
		waitTurnEnd(t, ctx, p.c, 3+round)
		if err := p.c.Call(ctx, "goal/clear", map[string]string{"session": s.ID}, nil); err != nil {
			t.Fatal(err)
		}
		if g := getGoal(t, ctx, p.c, s.ID); g.Goal != nil {
			t.Fatalf("round %d: goal after clear %+v", round, g.Goal)
		}
		p.stop()
		p2 := startServe(t, state, "--engine", "script", "--script", script)
		if g := getGoal(t, ctx, p2.c, s.ID); g.Goal != nil {
			t.Fatalf("round %d: the cleared Goal came back after a restart: %+v", round, g.Goal)
		}
		p2.stop()
	}
}
