package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"planbridge/goal"
	"planbridge/internal/agent"
	"planbridge/internal/store"
)

// failOnceEngine is a countingEngine that arms one failing Goal commit
// before its first answer (the kickoff's update_goal call) and calls
// afterTool before its second (the refused call's result is in).
type failOnceEngine struct {
	countingEngine
	arm       *atomic.Bool
	afterTool func()
}

func (e *failOnceEngine) Stream(ctx context.Context, req agent.Request, onText func(string)) (agent.Response, error) {
	switch len(e.requests()) {
	case 0:
		e.arm.Store(true)
	case 1:
		e.afterTool()
	}
	return e.countingEngine.Stream(ctx, req, onText)
}

// TestUpdateGoalCommitFails: update_goal whose commit fails (a full disk)
// records nothing: the model is told the end was not recorded, the Goal
// in memory is what the store holds (active, no end requested), and the
// turn's booking does not end it. The Goal goes on and ends when the
// model asks again and that is stored. Before, the requested end stayed
// in memory only: the tool returned the bare commit error, and the
// booking then completed the Goal from an end the store never held.
func TestUpdateGoalCommitFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	arm := &atomic.Bool{}
	st, err := store.Open(ctx, t.TempDir(), store.WithCommitFailure(func(op string) error {
		if op == store.OpGoal && arm.CompareAndSwap(true, false) {
			return fmt.Errorf("commit %s: %w", op, syscall.ENOSPC)
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eng := &failOnceEngine{arm: arm}
	m := NewManager(Config{Store: st, Engine: eng})
	defer m.Close()
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var inMemory, inStore goal.Goal
	eng.afterTool = func() { // the tool's commit failed: memory is what the store holds
		inMemory = *s.Goal()
		if row, err := st.CurrentGoal(ctx, s.ID()); err == nil {
			json.Unmarshal([]byte(row.Data), &inStore)
		}
	}
	if _, err := s.GoalCommand(ctx, "tidy the repository"); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	reqs := eng.requests()
	if inMemory.EndRequested != nil || inStore.EndRequested != nil || inMemory.Status != goal.Active || inStore.Status != goal.Active {
		t.Errorf("after the failed update_goal: in memory %+v, stored %+v; want both active with no end requested", inMemory, inStore)
	}
	// The kickoff (update_goal, refused), its answer, a continuation
	// (update_goal, stored), its answer.
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4 (the Goal ended on the unstored end?)", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != agent.RoleTool || !strings.Contains(last.Content, "the end was not recorded") || !strings.Contains(last.Content, "no space left") {
		t.Errorf("the model was told %q, want that the end was not recorded", last.Content)
	}
	if !strings.Contains(lastUser(reqs[2].Messages), goal.ContinuePrompt) {
		t.Errorf("third request is not a continuation: %q", lastUser(reqs[2].Messages))
	}
	if g := s.Goal(); g == nil || g.Status != goal.Complete || g.EndRequested != nil {
		t.Fatalf("Goal %+v, want complete", g)
	}
	row, err := st.CurrentGoal(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	var stored goal.Goal
	if err := json.Unmarshal([]byte(row.Data), &stored); err != nil || stored.Status != goal.Complete || stored.Turns != 2 {
		t.Errorf("stored Goal %+v (%v), want complete after two turns", stored, err)
	}
}
