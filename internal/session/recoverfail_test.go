package session

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"planbridge/goal"
	"planbridge/internal/store"
	"planbridge/review"
)

// TestGoalRecoverWhoseTrackingCommitFailsChangesNothing: a Goal paused by
// a restart, implementing a tracked plan paused with it, is recovered with
// the tracking commit failing (a full disk). The recovery fails visibly
// and changes nothing: the implementation stays paused in memory as in the
// store, the Goal stays paused by restart, and nothing is sent.
func TestGoalRecoverWhoseTrackingCommitFailsChangesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	st, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	m1 := NewManager(Config{Store: st, Engine: &countingEngine{}})
	crashed := make(chan struct{})
	m1.failpoint = func(name string) {
		if name == "goal.dispatched" {
			close(crashed)
			runtime.Goexit() // the process stops here
		}
	}
	s1, err := m1.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s1.track.Begin(review.Accepted{Title: "Tidy", Body: "# Tidy\n\n## Steps\n\n1. One\n2. Two\n"})
	if err := st.PutTracking(ctx, s1.ID(), store.Tracking(s1.track.Row())); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.GoalCommand(ctx, "tidy the repository"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-crashed:
	case <-ctx.Done():
		t.Fatal("never reached goal.dispatched")
	}

	// The restart pauses both, committed.
	m2 := NewManager(Config{Store: st, Engine: &countingEngine{}})
	s2, err := m2.Get(ctx, s1.ID())
	if err != nil {
		t.Fatal(err)
	}
	if p := s2.TrackedPlan(); p == nil || p.Status != ImplPaused {
		t.Fatalf("after the restart the implementation is %+v, want paused", p)
	}
	if g := s2.Goal(); g == nil || g.Status != goal.Paused || g.Reason != goal.ReasonRestart {
		t.Fatalf("after the restart the Goal is %+v, want paused by restart", g)
	}
	m2.Close()

	// With the tracking commit failing, recovering must not go ahead.
	st3, err := store.Open(ctx, dir, store.WithFailingCommits(store.OpTracking))
	if err != nil {
		t.Fatal(err)
	}
	defer st3.Close()
	eng := &countingEngine{}
	m3 := NewManager(Config{Store: st3, Engine: eng})
	defer m3.Close()
	s3, err := m3.Get(ctx, s1.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3.Recover(ctx); err == nil {
		t.Fatal("the Goal's recovery succeeded with its tracking commit failing")
	}
	if p := s3.TrackedPlan(); p == nil || p.Status != ImplPaused {
		t.Errorf("a failed recovery left the implementation %+v in memory, want paused as stored", p)
	}
	if g := s3.Goal(); g == nil || g.Status != goal.Paused || g.Reason != goal.ReasonRestart {
		t.Errorf("a failed recovery left the Goal %+v, want paused by restart", g)
	}
	if err := s3.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(eng.requests()); n != 0 {
		t.Errorf("a failed recovery sent %d requests", n)
	}
	row, err := st3.GetTracking(ctx, s1.ID())
	if err != nil {
		t.Fatal(err)
	}
	var stored TrackedPlan
	if err := json.Unmarshal([]byte(row.Plan), &stored); err != nil || stored.Status != ImplPaused {
		t.Errorf("stored implementation %+v (%v), want paused", stored, err)
	}
}
