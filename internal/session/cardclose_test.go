package session

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
)

// proposingEngine answers every request with a plan block.
type proposingEngine struct{}

func (proposingEngine) Name() string { return "proposing" }
func (proposingEngine) Stream(ctx context.Context, req agent.Request, onText func(string)) (agent.Response, error) {
	const text = "Here is the plan.\n<proposed_plan>\n# Fix the bug\n## Summary\nDo it.\n</proposed_plan>\n"
	onText(text)
	return agent.Response{Text: text}, nil
}

// presented opens a session over st whose card is up.
func presented(t *testing.T, ctx context.Context, st *store.Store) (*Manager, *Session) {
	t.Helper()
	m := NewManager(Config{Store: st, Engine: proposingEngine{}})
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnterPlan(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(ctx, "plan the fix"); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if !s.Approval().Pending {
		t.Fatal("no card after the proposal")
	}
	return m, s
}

func lastOutcome(t *testing.T, ctx context.Context, s *Session) string {
	t.Helper()
	outs, err := s.Outcomes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) == 0 {
		return ""
	}
	return outs[len(outs)-1].Outcome
}

// TestCardClosesNobodyDecided: a card closed by its timeout, an interrupt
// or the server stopping records its outcome and leaves the proposal as
// each says (a draft, or proposed to be presented again); a stale attempt's
// timeout changes nothing.
func TestCardClosesNobodyDecided(t *testing.T) {
	for _, tc := range []struct {
		name    string
		close   func(s *Session, attempt string)
		outcome string // "" for none
		status  string
	}{
		{"timed out", func(s *Session, a string) { s.card.TimeOut(a) }, handoff.OutcomeTimedOut, ProposalDraft},
		{"stale timeout", func(s *Session, a string) { s.card.TimeOut("a-stale") }, "", ProposalProposed},
		{"timeout after a cancel", func(s *Session, a string) {
			if err := s.CancelApproval(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			s.card.TimeOut(a)
		}, handoff.OutcomeCancelled, ProposalDraft},
		{"interrupted", func(s *Session, a string) { s.Interrupt() }, handoff.OutcomeInterrupted, ProposalDraft},
		{"server stopping", func(s *Session, a string) { s.card.Interrupt(context.Background(), false) }, handoff.OutcomeInterrupted, ProposalProposed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, err := store.Open(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			m, s := presented(t, ctx, st)
			defer m.Close()
			attempt := s.Approval().Attempt
			tc.close(s, attempt)
			if got := lastOutcome(t, ctx, s); got != tc.outcome {
				t.Errorf("outcome %q, want %q", got, tc.outcome)
			}
			if pending := s.Approval().Pending; pending != (tc.outcome == "") {
				t.Errorf("card pending %v", pending)
			}
			p, err := st.GetProposal(ctx, s.ID())
			if err != nil || p.Status != tc.status || s.Info().ProposalStatus != tc.status {
				t.Errorf("proposal %q in the store (%v), %q in memory; want %q", p.Status, err, s.Info().ProposalStatus, tc.status)
			}
		})
	}
}

// TestInterruptWhoseDemotionFails: the card closes as interrupted and its
// outcome is recorded even when the proposal's demotion cannot be
// committed (a full disk); the proposal stays what the store holds.
func TestInterruptWhoseDemotionFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	st, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	m, s := presented(t, ctx, st)
	id := s.ID()
	m.Close()
	st.Close()

	st, err = store.Open(ctx, dir, store.WithFailingCommits(store.OpProposal))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m = NewManager(Config{Store: st, Engine: proposingEngine{}})
	defer m.Close()
	s, err = m.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Approval().Pending {
		t.Fatal("the card is not presented again after the restart")
	}
	s.Interrupt()
	if got := lastOutcome(t, ctx, s); got != handoff.OutcomeInterrupted {
		t.Errorf("outcome %q, want interrupted", got)
	}
	if s.Approval().Pending {
		t.Error("the card is still up")
	}
	p, err := st.GetProposal(ctx, id)
	if err != nil || p.Status != ProposalProposed || s.Info().ProposalStatus != ProposalProposed {
		t.Errorf("proposal %q (%v) in the store, %q in memory; want proposed in both", p.Status, err, s.Info().ProposalStatus)
	}
}

// TestCardActionWhoseCommitFails: over a real store whose proposal
// commits fail (a full disk), a person's cancel, feedback or edit returns
// the error with the card up under its attempt and nothing recorded or
// queued; leaving Plan closes the card all the same (nobody decided on
// it), the proposal stays proposed in memory as in the store, and the
// person is told with an error event.
func TestCardActionWhoseCommitFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		act    func(ctx context.Context, s *Session, attempt string) error
		closes bool
	}{
		{"cancel", func(ctx context.Context, s *Session, a string) error { return s.CancelApproval(ctx, a) }, false},
		{"feedback", func(ctx context.Context, s *Session, a string) error { return s.Feedback(ctx, a, "smaller steps", nil) }, false},
		{"edit", func(ctx context.Context, s *Session, a string) error {
			_, err := s.EditProposal(ctx, a, "# Fix it\n\n1. Do it.\n")
			return err
		}, false},
		{"leaving Plan", func(ctx context.Context, s *Session, a string) error { return s.ExitPlan(ctx) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var failing atomic.Bool
			st, err := store.Open(ctx, t.TempDir(), store.WithCommitFailure(func(op string) error {
				if failing.Load() && op == store.OpProposal {
					return errors.New("disk full")
				}
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			m, s := presented(t, ctx, st)
			defer m.Close()
			attempt := s.Approval().Attempt
			since := s.Info().LastSeq
			failing.Store(true)
			err = tc.act(ctx, s, attempt)
			if !tc.closes && (err == nil || !strings.Contains(err.Error(), "disk full")) {
				t.Fatalf("error %v, want the failed commit", err)
			}
			if got := s.Approval(); got.Pending == tc.closes || !tc.closes && got.Attempt != attempt {
				t.Errorf("card pending %v under %q, want closed %v (attempt %q)", got.Pending, got.Attempt, tc.closes, attempt)
			}
			want := map[bool]string{true: handoff.OutcomeCancelled, false: ""}[tc.closes]
			if got := lastOutcome(t, ctx, s); got != want {
				t.Errorf("outcome %q, want %q", got, want)
			}
			p, err := st.GetProposal(ctx, s.ID())
			if err != nil || p.Status != ProposalProposed || s.Info().ProposalStatus != ProposalProposed || p.Rejections != 0 {
				t.Errorf("proposal %+v (%v) in the store, %q in memory; want proposed in both", p, err, s.Info().ProposalStatus)
			}
			evs, err := s.Events(ctx, since)
			if err != nil {
				t.Fatal(err)
			}
			told := false
			for _, ev := range evs {
				if ev.Kind == (event.Error{}).Kind() && strings.Contains(string(ev.Data), "disk full") {
					told = true
				}
			}
			if told != tc.closes {
				t.Errorf("error event %v, want %v (%d events)", told, tc.closes, len(evs))
			}
			if !tc.closes {
				failing.Store(false)
				if err := tc.act(ctx, s, attempt); err != nil {
					t.Errorf("again once the disk is back: %v", err)
				}
			}
		})
	}
}
