package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"planbridge/goal"
	"planbridge/internal/agent"
	"planbridge/internal/store"
)

// TestDeletedSessionStaysDeleted: a posture change in flight when the
// session is deleted (a request that looked the session up before the
// delete committed) must not write the deleted session's row back: the
// row commit is an upsert, so before, SetMode after the delete stored a
// session without a directory or transcript, listed and loaded again.
func TestDeletedSessionStaysDeleted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := NewManager(Config{Store: st, Engine: &textEngine{}})
	defer m.Close()
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Delete(ctx, s.ID()); err != nil {
		t.Fatal(err)
	}
	// The request that looked s up before the delete goes on.
	_ = s.SetMode(ctx, string(agent.ModeEdits))
	_ = s.EnterPlan(ctx)
	if row, err := st.GetSession(ctx, s.ID()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the deleted session's row is back: %+v, %v", row, err)
	}
}

// endingEngine ends the Goal with update_goal complete at its first
// request and answers the tool result with text; before that answer,
// onResult runs.
type endingEngine struct {
	countingEngine
	onResult func()
}

func (e *endingEngine) Stream(ctx context.Context, req agent.Request, onText func(string)) (agent.Response, error) {
	if last := req.Messages[len(req.Messages)-1]; last.Role == agent.RoleTool && e.onResult != nil {
		e.onResult()
	}
	return e.countingEngine.Stream(ctx, req, onText)
}

// TestGoalBookingCommitFailsTellsTheTruth: a Goal turn that ended the
// Goal (update_goal complete) and whose booking cannot be stored: the
// error event must not say the Goal is paused while the Goal (in memory,
// in the goal event) is complete.
func TestGoalBookingCommitFailsTellsTheTruth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, failing := goalCommitsFailingLater(t)
	eng := &endingEngine{onResult: func() { failing.Store(true) }}
	m := NewManager(Config{Store: st, Engine: eng})
	defer m.Close()
	evs := recordEvents(m)
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GoalCommand(ctx, "tidy the repository"); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	g := s.Goal()
	if g == nil {
		t.Fatal("no Goal")
	}
	for _, e := range evs.of("error") {
		if strings.Contains(e, "Goal is paused") && g.Status != goal.Paused {
			t.Errorf("told %q, but the Goal is %s", e, g.Status)
		}
	}
}

type stall struct {
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

// TestGoalActionNotUndoneByKickoffDispatch: a Goal action (a budget
// change) committed while the kickoff's prompt commit, which carries the
// Goal's dispatch record, is between its snapshot of the Goal and its
// commit: once the prompt is stored (the model is asked; a crash here
// restarts from the store), the store must hold the budget the person
// set and was told is set.
func TestGoalActionNotUndoneByKickoffDispatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sl := &stall{reached: make(chan struct{}), release: make(chan struct{})}
	st, err := store.Open(ctx, t.TempDir(), store.WithCommitFailure(func(op string) error {
		if op == store.OpDispatch {
			sl.once.Do(func() { close(sl.reached); <-sl.release })
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var s *Session
	var once sync.Once
	var storedBudget int64 = -1
	eng := &textEngine{onStream: func() {
		once.Do(func() {
			row, err := st.CurrentGoal(context.Background(), s.ID())
			if err != nil {
				t.Error(err)
				return
			}
			var g goal.Goal
			if err := json.Unmarshal([]byte(row.Data), &g); err != nil {
				t.Error(err)
				return
			}
			storedBudget = g.Budget
		})
	}}
	m := NewManager(Config{Store: st, Engine: eng})
	defer m.Close()
	s, err = m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GoalCommand(ctx, "tidy the repository"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sl.reached:
	case <-ctx.Done():
		t.Fatal("the kickoff's prompt commit never came")
	}
	done := make(chan error, 1)
	go func() { _, err := s.GoalAction(ctx, goal.VerbBudget, "123456"); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Log("the action waits for the prompt's commit")
	}
	close(sl.release)
	for eng.count() == 0 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if _, err := s.GoalAction(ctx, goal.VerbPause, ""); err != nil {
		t.Log(err)
	}
	s.Interrupt()
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if storedBudget != 123456 {
		t.Errorf("when the kickoff went out the store held budget %d, memory 123456: the prompt's commit wrote an older Goal over the action", storedBudget)
	}
}
