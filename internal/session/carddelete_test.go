package session

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/interaction"
	"planbridge/internal/store"
)

// TestDeleteDuringCardAction: a session deleted while a person's action
// on its card is between the attempt's check and its first write. Before,
// the card's writes (the plan file, its version, the proposal row, the
// outcome) bypassed whileLive: an edit wrote the deleted session's
// directory back without rows, which the next start refuses as a
// database behind its session files, and failed on a foreign key. Each
// is now refused as not_found, writing nothing.
func TestDeleteDuringCardAction(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, s *Session, attempt string) error
	}{
		{"edit", func(ctx context.Context, s *Session, attempt string) error {
			_, err := s.EditProposal(ctx, attempt, "# Rename the greeting\n\n1. Rename it.\n2. Test it well.\n")
			return err
		}},
		{"feedback", func(ctx context.Context, s *Session, attempt string) error {
			return s.Feedback(ctx, attempt, "smaller steps", []Comment{{Line: 3, Text: "split this"}})
		}},
		{"selection", func(ctx context.Context, s *Session, attempt string) error {
			_, err := s.UpdateSelection(ctx, attempt, handoff.Change{Axis: "context", Value: "fresh"})
			return err
		}},
		{"cancel", func(ctx context.Context, s *Session, attempt string) error {
			return s.CancelApproval(ctx, attempt)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dir := t.TempDir()
			st, err := store.Open(ctx, dir)
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
			armed := false
			var delErr error
			deleted := false
			s.card = interaction.New(interaction.Config{Session: s.id, WorkDir: s.workDir, Lock: &s.mu, Store: s.m.st,
				Host: cardHost{s}, Tracker: s.track, Mask: s.m.redact.String, MaxFeedback: MaxPromptBytes, Logger: s.m.log,
				Live: func(fn func() error) error {
					if armed {
						armed, deleted = false, true
						_, delErr = m.Delete(ctx, s.ID())
					}
					return s.whileLive(fn)
				}})
			if err := s.card.Publish(ctx, "Rename the greeting", "# Rename the greeting\n\n1. Rename it.\n2. Test it.\n", false); err != nil {
				t.Fatal(err)
			}
			attempt := s.Approval().Card.Attempt
			if attempt == "" {
				t.Fatal("no card is presented")
			}
			armed = true
			err = tc.run(ctx, s, attempt)
			if !deleted || delErr != nil {
				t.Fatalf("the delete in between: ran %v, %v", deleted, delErr)
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeNotFound {
				t.Errorf("the action after the delete: %v, want %s", err, CodeNotFound)
			}
			if _, err := os.Lstat(store.SessionDir(dir, s.ID())); !os.IsNotExist(err) {
				t.Errorf("the deleted session's directory is back (%v)", err)
			}
			if probs := st.Check(ctx, false); len(probs) > 0 {
				t.Errorf("the state directory after the delete: %v", probs)
			}
		})
	}
}

// TestUpdateScopeOfDeletedSession: a scope edit whose attempt check
// passed before the session was deleted (here: the card held up after
// the delete, as by an action that checked it just before) writes no
// scope file into the deleted session's directory. Before, the file
// brought the directory back without rows.
func TestUpdateScopeOfDeletedSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	st, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := NewManager(Config{Store: st, Engine: &textEngine{}})
	defer m.Close()
	s, attempt := carded(t, ctx, m)
	if _, err := m.Delete(ctx, s.ID()); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.card.ReopenLocked(attempt) // the check comes before the delete
	s.mu.Unlock()
	_, err = s.UpdateScope(ctx, attempt, []string{"main.go"})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeNotFound {
		t.Errorf("the scope edit after the delete: %v, want %s", err, CodeNotFound)
	}
	if _, err := os.Lstat(store.SessionDir(dir, s.ID())); !os.IsNotExist(err) {
		t.Errorf("the deleted session's directory is back (%v)", err)
	}
	if probs := st.Check(ctx, false); len(probs) > 0 {
		t.Errorf("the state directory after the delete: %v", probs)
	}
}
