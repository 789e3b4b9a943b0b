package session

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"planbridge/internal/store"
)

// TestReportRacingDelete: an implementation report (review/report, the
// /review command) of a session whose implementation is done, while the
// session is deleted. Before, the report's record was written after the
// delete had moved the directory aside, bringing the deleted session's
// directory back without rows (which the next start refuses as a
// database behind its files): in 2 of 15 runs here. Now it comes before
// the delete or is refused as not_found. The delete lands at a spread of
// moments into the report, so a regression shows in most runs.
func TestReportRacingDelete(t *testing.T) {
	for i := 0; i < 12; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		dir := t.TempDir()
		st, err := store.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		m := NewManager(Config{Store: st, Engine: &textEngine{}})
		s, attempt := carded(t, ctx, m)
		if _, err := s.Accept(ctx, attempt, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		for _, step := range []string{"s1", "s2"} {
			if _, err := s.track.UpdateStep(ctx, step, "completed"); err != nil {
				t.Fatal(err)
			}
		}
		if p := s.TrackedPlan(); p == nil || p.Status != ImplDone {
			t.Fatalf("the implementation: %+v, want done", p)
		}
		var wg sync.WaitGroup
		var rerr error
		wg.Add(1)
		go func() { defer wg.Done(); _, rerr = s.Report(ctx) }()
		time.Sleep(time.Duration(i) * 250 * time.Microsecond)
		_, derr := m.Delete(ctx, s.ID())
		wg.Wait()
		if derr != nil {
			t.Fatalf("run %d: the delete: %v", i, derr)
		}
		var e *Error
		if rerr != nil && !(errors.As(rerr, &e) && e.Code == CodeNotFound) {
			t.Errorf("run %d: the report: %v, want it stored or %s", i, rerr, CodeNotFound)
		}
		if _, err := os.Lstat(store.SessionDir(dir, s.ID())); !os.IsNotExist(err) {
			t.Errorf("run %d: the deleted session's directory is back (%v)", i, err)
		}
		if probs := st.Check(ctx, false); len(probs) > 0 {
			t.Errorf("run %d: the state directory after the delete: %v", i, probs)
		}
		m.Close()
		st.Close()
		cancel()
	}
}
