package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"planbridge/internal/agent"
	"planbridge/internal/store"
)

// writingEngine asks for one write in the workspace, then answers;
// asked is set once it was asked.
type writingEngine struct {
	mu    sync.Mutex
	n     int
	asked atomic.Bool
}

func (e *writingEngine) Name() string { return "writing" }
func (e *writingEngine) Stream(ctx context.Context, req agent.Request, onText func(string)) (agent.Response, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked.Store(true)
	if e.n++; e.n == 1 {
		args, _ := json.Marshal(map[string]string{"path": "notes.txt", "content": "x"})
		return agent.Response{ToolCalls: []agent.ToolCall{{ID: "w1", Name: "write_file", Arguments: args}}}, nil
	}
	return agent.Response{Text: "done"}, nil
}

// storeFailing opens a store in a fresh directory whose commits fail
// (ENOSPC) where fail says so; it is given the operation and its attempts
// so far (from 0).
func storeFailing(t *testing.T, fail func(op string, n int) bool) *store.Store {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	st, err := store.Open(context.Background(), t.TempDir(), store.WithCommitFailure(func(op string) error {
		mu.Lock()
		n := seen[op]
		seen[op]++
		mu.Unlock()
		if fail(op, n) {
			return fmt.Errorf("commit %s: %w", op, syscall.ENOSPC)
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// runOne submits prompt to a new session (Plan on when plan) and waits
// for its turn to end.
func runOne(t *testing.T, m *Manager, plan bool, prompt string) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if plan {
		if err := s.EnterPlan(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Submit(ctx, prompt); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTurnRowFieldsChangeOnlyWithTheirCommit: what a turn changes in the
// session row (its title, the full reminder's delivery, the refusal
// counters) changes in memory only once the commit carrying it succeeded,
// so the status never shows, and the next turn never runs under, a row
// the store does not hold; a count that cannot be saved is told.
func TestTurnRowFieldsChangeOnlyWithTheirCommit(t *testing.T) {
	ctx := context.Background()
	writer := &writingEngine{}
	for _, c := range []struct {
		name   string
		fail   func(op string, n int) bool
		engine agent.Engine
		plan   bool
		errors string // a substring of an error event
	}{
		// The prompt's commit and the settlement fail: no title.
		{"title", func(op string, _ int) bool { return op == store.OpPrompt || op == store.OpTurn }, &replyEngine{}, false, "no space"},
		// The assistant's step commits, the settlement does not: the
		// full template is not recorded delivered.
		{"template", func(op string, n int) bool { return op == store.OpTurn && n >= 1 }, &replyEngine{}, true, "could not save the turn"},
		// A Plan refusal whose count cannot be committed, nor anything
		// after it (the assistant's step with the call commits).
		{"blocked count", func(op string, n int) bool {
			return writer.asked.Load() && (op == store.OpSession || op == store.OpTurn && n >= 1)
		}, writer, true, "could not be counted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := storeFailing(t, c.fail)
			m := NewManager(Config{Store: st, Engine: c.engine})
			defer m.Close()
			evs := recordEvents(m)
			s := runOne(t, m, c.plan, "hello world")
			stored, err := st.GetSession(ctx, s.ID())
			if err != nil {
				t.Fatal(err)
			}
			mem := s.rowSnapshot()
			if mem.Title != stored.Title || mem.TemplateEpisode != stored.TemplateEpisode ||
				mem.BlockedTotal != stored.BlockedTotal || mem.RefusedTotal != stored.RefusedTotal {
				t.Errorf("memory title %q template %d blocked %d refused %d; the store holds %q %d %d %d",
					mem.Title, mem.TemplateEpisode, mem.BlockedTotal, mem.RefusedTotal,
					stored.Title, stored.TemplateEpisode, stored.BlockedTotal, stored.RefusedTotal)
			}
			if errs := strings.Join(evs.of("error"), "\n"); !strings.Contains(errs, c.errors) {
				t.Errorf("error events %s, want %q", errs, c.errors)
			}
		})
	}
}

// TestQueueRemovalFailureIsTold: a queued prompt whose turn never reaches
// its prompt's commit (no engine is configured) leaves the queue; when
// that removal cannot be committed the prompt stays in the store's queue,
// where the next start would run it again, and the person is told.
func TestQueueRemovalFailureIsTold(t *testing.T) {
	ctx := context.Background()
	st := storeFailing(t, func(op string, n int) bool { return op == store.OpQueue && n >= 1 }) // the enqueue commits
	m := NewManager(Config{Store: st})
	defer m.Close()
	evs := recordEvents(m)
	s := runOne(t, m, false, "hello world")
	errs := strings.Join(evs.of("error"), "\n")
	if !strings.Contains(errs, "no model engine is configured") || !strings.Contains(errs, "could not be removed from the stored queue") {
		t.Errorf("error events %s", errs)
	}
	if q, err := st.QueuedInputs(ctx, s.ID()); err != nil || len(q) != 1 {
		t.Errorf("stored queue %v, %v", q, err)
	}
}

// TestInterruptQueueDropFailureIsTold: an interrupt drops the queued
// prompts; when their removal from the store cannot be committed they stay
// stored, and the next start would run them: the person is told, not only
// the log.
func TestInterruptQueueDropFailureIsTold(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var full atomic.Bool
	st := storeFailing(t, func(op string, _ int) bool { return op == store.OpQueue && full.Load() })
	eng := &blockingEngine{started: make(chan struct{}, 1)}
	m := NewManager(Config{Store: st, Engine: eng})
	defer m.Close()
	evs := recordEvents(m)
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(ctx, "the running turn"); err != nil {
		t.Fatal(err)
	}
	<-eng.started
	if res, err := s.Queue("a follow-up"); err != nil || !res.Queued {
		t.Fatalf("queue: %+v, %v", res, err)
	}
	full.Store(true)
	s.Interrupt()
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if errs := strings.Join(evs.of("error"), "\n"); !strings.Contains(errs, "could not be removed from the stored queue") {
		t.Errorf("error events %q", errs)
	}
	if q, err := st.QueuedInputs(ctx, s.ID()); err != nil || len(q) != 1 {
		t.Errorf("stored queue %v, %v", q, err)
	}
}
