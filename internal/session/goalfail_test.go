package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
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

// TestGoalBookingCommitFails: a Goal turn whose booking cannot be stored
// (the Goal's commit fails after its kickoff went out) does not go on:
// the Goal is paused, the person gets an error event, and no
// continuation is sent under an account the store does not hold. Before,
// the failure was only logged and the Goal ran on.
func TestGoalBookingCommitFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, failing := goalCommitsFailingLater(t)
	// Each turn ends without ending the Goal: it would continue.
	eng := &textEngine{onStream: func() { failing.Store(true) }}
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
	if n := eng.count(); n != 1 {
		t.Errorf("%d requests, want the kickoff only", n)
	}
	if g := s.Goal(); g == nil || g.Status != goal.Paused || !strings.Contains(g.Reason, "could not be saved") {
		t.Errorf("Goal %+v, want paused for the failed save", g)
	}
	var told bool
	for _, e := range evs.of("error") {
		told = told || strings.Contains(e, "progress could not be saved")
	}
	if !told {
		t.Errorf("no error event: %v", evs.of("error"))
	}
}

// textEngine answers every request with text and no tool call; onStream
// runs before each answer.
type textEngine struct {
	mu       sync.Mutex
	n        int
	onStream func()
}

func (e *textEngine) Name() string { return "text" }
func (e *textEngine) Stream(ctx context.Context, req agent.Request, onText func(string)) (agent.Response, error) {
	e.mu.Lock()
	e.n++
	e.mu.Unlock()
	if e.onStream != nil {
		e.onStream()
	}
	return agent.Response{Text: "worked on it"}, nil
}

func (e *textEngine) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

// goalCommitsFailingLater opens a store whose Goal commits fail (a full
// disk) once the returned flag is set.
func goalCommitsFailingLater(t *testing.T) (*store.Store, *atomic.Bool) {
	t.Helper()
	failing := &atomic.Bool{}
	st, err := store.Open(context.Background(), t.TempDir(), store.WithCommitFailure(func(op string) error {
		if failing.Load() && op == store.OpGoal {
			return fmt.Errorf("commit %s: %w", op, syscall.ENOSPC)
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, failing
}
