package session

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"planbridge/goal"
	"planbridge/internal/agent"
	"planbridge/internal/store"
)

// blockingEngine answers nothing until its turn is cancelled.
type blockingEngine struct{ started chan struct{} }

func (e *blockingEngine) Name() string { return "blocking" }
func (e *blockingEngine) Stream(ctx context.Context, req agent.Request, onText func(string)) (agent.Response, error) {
	select {
	case e.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return agent.Response{}, ctx.Err()
}

// TestGoalActionCommitFails: a person's Goal action whose commit fails
// (a full disk) changes nothing: the error is returned, the Goal in memory
// is what the store holds, and no turn runs for a Goal the store does not
// hold. Before, the unstored Goal stayed in memory, active with its
// kickoff pending, and the next kick ran it.
func TestGoalActionCommitFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("start", func(t *testing.T) {
		st, err := store.Open(ctx, t.TempDir(), store.WithFailingCommits(store.OpGoal))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		eng := &countingEngine{}
		m := NewManager(Config{Store: st, Engine: eng})
		defer m.Close()
		s, err := m.Create(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.GoalCommand(ctx, "tidy the repository"); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("start: %v, want ENOSPC", err)
		}
		if g := s.Goal(); g != nil {
			t.Errorf("an unstored Goal is in memory: %+v", g)
		}
		// A prompt kicks the session: it must not run the Goal.
		if _, err := s.Submit(ctx, "hello"); err != nil {
			t.Fatal(err)
		}
		if err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		for _, r := range eng.requests() {
			for _, msg := range r.Messages {
				if msg.Role == agent.RoleUser && msg.Content != "hello" {
					t.Errorf("a request carried %q", msg.Content)
				}
			}
		}
		if _, err := st.CurrentGoal(ctx, s.ID()); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("stored Goal: %v", err)
		}
	})

	t.Run("resume", func(t *testing.T) {
		dir, ws := t.TempDir(), t.TempDir()
		// A first process starts a Goal and pauses it while its kickoff runs.
		st, err := store.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		eng := &blockingEngine{started: make(chan struct{}, 1)}
		m := NewManager(Config{Store: st, Engine: eng})
		s, err := m.Create(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.GoalCommand(ctx, "tidy the repository"); err != nil {
			t.Fatal(err)
		}
		<-eng.started
		if _, err := s.GoalAction(ctx, goal.VerbPause, ""); err != nil {
			t.Fatal(err)
		}
		s.Interrupt()
		if err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		id := s.ID()
		m.Close()
		st.Close()

		// The next process cannot commit the Goal: resume changes nothing.
		st, err = store.Open(ctx, dir, store.WithFailingCommits(store.OpGoal))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ceng := &countingEngine{}
		m = NewManager(Config{Store: st, Engine: ceng})
		defer m.Close()
		s, err = m.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if g := s.Goal(); g == nil || g.Status != goal.Paused {
			t.Fatalf("loaded Goal %+v, want paused", g)
		}
		if _, err := s.GoalAction(ctx, goal.VerbResume, ""); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("resume: %v, want ENOSPC", err)
		}
		if g := s.Goal(); g == nil || g.Status != goal.Paused {
			t.Errorf("Goal after a failed resume: %+v, want paused", g)
		}
		if err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(ceng.requests()); n != 0 {
			t.Errorf("%d requests for a Goal whose resume was not stored", n)
		}
	})
}
