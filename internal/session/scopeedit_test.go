package session

import (
	"context"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/interaction"
	"planbridge/internal/store"
)

// TestScopeEditDuringSelectionCommit: a scope edit of the card while a
// selection change of the same card commits is not a decision on the
// card: it is stored, as before the card became a part of its own. In
// between it was refused as settings_changed ("the approval settings
// changed during acceptance"), though nothing was being accepted.
func TestScopeEditDuringSelectionCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := NewManager(Config{Store: st, Engine: &textEngine{}})
	defer m.Close()
	s, err := m.Create(ctx, gitWorkspace(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnterPlan(ctx); err != nil {
		t.Fatal(err)
	}
	var during func()
	s.card = interaction.New(interaction.Config{Session: s.id, WorkDir: s.workDir, Lock: &s.mu, Store: s.m.st,
		Host: cardHost{s}, Tracker: s.track, Mask: s.m.redact.String, MaxFeedback: MaxPromptBytes, Logger: s.m.log,
		Live: func(fn func() error) error {
			if f := during; f != nil {
				during = nil
				f()
			}
			return s.whileLive(fn)
		}})
	if err := s.card.Publish(ctx, "Rename the greeting", "# Rename the greeting\n\n1. Rename it.\n2. Test it.\n", false); err != nil {
		t.Fatal(err)
	}
	attempt := s.Approval().Card.Attempt
	var scopeErr error
	during = func() { _, scopeErr = s.UpdateScope(ctx, attempt, []string{"main.go"}) }
	if _, err := s.UpdateSelection(ctx, attempt, handoff.Change{Axis: "context", Value: "fresh"}); err != nil {
		t.Fatal(err)
	}
	if during != nil {
		t.Fatal("the selection change committed nothing")
	}
	if scopeErr != nil {
		t.Errorf("the scope edit during the selection commit: %v, want it stored", scopeErr)
	}
	if got := s.Approval().Scope; len(got) != 1 || got[0] != "main.go" {
		t.Errorf("the card's scope = %q, want [main.go]", got)
	}
}
