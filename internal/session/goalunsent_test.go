package session

import (
	"context"
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

// TestGoalTurnUnsent: a Goal turn that cannot be sent — its prompt's
// commit fails (a full disk), or no model engine is configured — is tried
// once: the Goal pauses, saying why, with its kickoff still pending, and
// once the cause is gone a resume sends the kickoff (never a
// continuation of a kickoff that was never sent). Before, nothing booked
// the turn, so the Goal stayed active with its kickoff pending and the
// session chose the same turn again at once, forever (hundreds of
// attempts a second, each with its error events).
func TestGoalTurnUnsent(t *testing.T) {
	for _, tc := range []struct {
		name     string
		engine   bool
		reason   string
		attempts func(prompts int64, starts int) int
	}{
		{name: "the prompt's commit fails", engine: true, reason: "no space left on device",
			attempts: func(prompts int64, _ int) int { return int(prompts) }},
		{name: "no model engine", reason: "no model engine is configured",
			attempts: func(_ int64, starts int) int { return starts }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var failing atomic.Bool
			var prompts atomic.Int64
			failing.Store(true)
			st, err := store.Open(ctx, t.TempDir(), store.WithCommitFailure(func(op string) error {
				if op == store.OpDispatch || op == store.OpPrompt {
					prompts.Add(1)
					if failing.Load() {
						return fmt.Errorf("commit %s: %w", op, syscall.ENOSPC)
					}
				}
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			eng := &countingEngine{}
			cfg := Config{Store: st}
			if tc.engine {
				cfg.Engine = eng
			}
			m := NewManager(cfg)
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
				t.Fatalf("the session never came free (the Goal turn loops?): %v", err)
			}
			if n := tc.attempts(prompts.Load(), len(evs.of("turn_start"))); n != 1 {
				t.Errorf("%d attempts, want 1", n)
			}
			g := s.Goal()
			if g == nil || g.Status != goal.Paused || !strings.Contains(g.Reason, "could not be sent") || !strings.Contains(g.Reason, tc.reason) {
				t.Fatalf("Goal %+v, want paused for the unsent turn", g)
			}
			s.mu.Lock()
			_, pending := s.goal.RecoveryLocked()
			s.mu.Unlock()
			if !pending {
				t.Error("the kickoff that was never sent is no longer pending")
			}
			if len(eng.requests()) != 0 {
				t.Errorf("%d requests", len(eng.requests()))
			}
			if !tc.engine {
				return
			}
			// The disk has room again: a resume sends the kickoff.
			failing.Store(false)
			if _, err := s.GoalAction(ctx, goal.VerbResume, ""); err != nil {
				t.Fatal(err)
			}
			if err := s.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			reqs := eng.requests()
			if len(reqs) == 0 || !goal.IsObjectiveKickoff(lastUser(reqs[0].Messages)) {
				t.Fatalf("after the resume the model was asked %d times, first %q; want the kickoff", len(reqs), firstUser(reqs))
			}
			if g := s.Goal(); g == nil || g.Status != goal.Complete {
				t.Errorf("Goal %+v, want complete", g)
			}
		})
	}
}

func firstUser(reqs []agent.Request) string {
	if len(reqs) == 0 {
		return ""
	}
	return lastUser(reqs[0].Messages)
}
