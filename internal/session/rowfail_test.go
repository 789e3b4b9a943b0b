package session

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"planbridge/internal/event"
	"planbridge/internal/store"
)

// TestFailedPostureCommitChangesNothing: when the session row's commit
// fails (a full disk), ExitPlan, EnterPlan and SetMode fail and leave the
// session as it was, in memory too: the next turn must not run outside
// Plan while the person was told leaving Plan failed, and a later status
// event must not announce a posture the store never held.
func TestFailedPostureCommitChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(Config{Store: st})
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnterPlan(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMode(ctx, "edits"); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	off, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	offID := off.ID()
	m.Close()
	st.Close()

	st, err = store.Open(ctx, dir, store.WithFailingCommits(store.OpSession))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m = NewManager(Config{Store: st})
	defer m.Close()
	var mu sync.Mutex
	var statuses []event.Status
	m.Subscribe(func(ev Event) {
		if ev.Kind == "status" {
			var se event.Status
			if err := json.Unmarshal(ev.Data, &se); err == nil {
				mu.Lock()
				statuses = append(statuses, se)
				mu.Unlock()
			}
		}
	})
	s, err = m.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ExitPlan(ctx); err == nil {
		t.Fatal("ExitPlan succeeded with its commit failing")
	}
	if !s.Info().Plan {
		t.Error("a failed ExitPlan left the session outside Plan in memory: the next turn would run without Plan")
	}
	if err := s.SetMode(ctx, "full-auto"); err == nil {
		t.Fatal("SetMode succeeded with its commit failing")
	}
	if got := s.Info().Mode; got != "edits" {
		t.Errorf("a failed SetMode left mode %q in memory, want edits", got)
	}
	s.changed() // whatever publishes next shows the stored posture
	mu.Lock()
	defer mu.Unlock()
	for _, se := range statuses {
		if !se.Plan || se.Mode != "edits" {
			t.Errorf("a status event announced plan=%v mode=%q, which the store never held", se.Plan, se.Mode)
		}
	}
	row, err := st.GetSession(ctx, id)
	if err != nil || !row.Plan || row.Mode != "edits" {
		t.Fatalf("stored row: %+v %v", row, err)
	}

	// A failed EnterPlan leaves the session outside Plan, its episode as
	// it was.
	off, err = m.Get(ctx, offID)
	if err != nil {
		t.Fatal(err)
	}
	off.mu.Lock()
	ep := off.row.PlanEpisode
	off.mu.Unlock()
	if err := off.EnterPlan(ctx); err == nil {
		t.Fatal("EnterPlan succeeded with its commit failing")
	}
	off.mu.Lock()
	defer off.mu.Unlock()
	if off.row.Plan || off.row.PlanEpisode != ep {
		t.Errorf("a failed EnterPlan left plan=%v episode %d (was %d)", off.row.Plan, off.row.PlanEpisode, ep)
	}
}

// TestNoPromptAfterHandOverToFork: a planning session that handed its
// implementation to a Worktree fork takes no prompt, whichever way it
// comes (submitted, queued, a share link's): nothing is stored or run.
func TestNoPromptAfterHandOverToFork(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := NewManager(Config{Store: st})
	defer m.Close()
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.row.ForkedTo = "the-fork"
	s.mu.Unlock()
	for name, send := range map[string]func() (SubmitResult, error){
		"submit": func() (SubmitResult, error) { return s.Submit(ctx, "go on") },
		"queue":  func() (SubmitResult, error) { return s.Queue("go on") },
		"guest":  func() (SubmitResult, error) { return s.QueueGuest("go on") },
	} {
		_, err := send()
		var se *Error
		if !errors.As(err, &se) || se.Code != CodeSessionEnded {
			t.Errorf("%s after the hand-over: %v, want %s", name, err, CodeSessionEnded)
		}
	}
	if q, _ := st.QueuedInputs(ctx, s.ID()); len(q) != 0 || s.Info().Queued != 0 || s.Info().Busy {
		t.Fatalf("a prompt was taken after the hand-over: %+v", q)
	}
}
