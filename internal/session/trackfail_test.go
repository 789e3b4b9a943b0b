package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/store"
	"planbridge/proposal"
	"planbridge/review"
)

// eventLog is what a manager published, in order.
type eventLog struct {
	mu  sync.Mutex
	evs []Event
}

func recordEvents(m *Manager) *eventLog {
	l := &eventLog{}
	m.Subscribe(func(ev Event) {
		l.mu.Lock()
		l.evs = append(l.evs, ev)
		l.mu.Unlock()
	})
	return l
}

// of is the data of each event of kind, as text.
func (l *eventLog) of(kind string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, ev := range l.evs {
		if ev.Kind == kind {
			out = append(out, string(ev.Data))
		}
	}
	return out
}

const trackedBody = "# Tidy\n\n## Steps\n\n1. One\n2. Two\n"

// storedPausedPlan stores, in a first process over dir, a session whose
// tracked implementation is paused by a restart and whose handoff record
// stands at step; it returns the session's id.
func storedPausedPlan(t *testing.T, dir string, step handoff.Step) string {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := NewManager(Config{Store: st, Engine: &countingEngine{}})
	defer m.Close()
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.track.Begin(review.Accepted{Title: "Tidy", Body: trackedBody})
	if err := s.track.SetStatus(ctx, ImplPaused, "paused by restart"); err != nil {
		t.Fatal(err)
	}
	rec := &handoff.Record{Step: step, Title: "Tidy", Selection: handoff.Selection{Location: handoff.Here, Context: handoff.Current},
		Artifact: handoff.Artifact{Path: handoff.ArtifactPath(proposal.HashBody(trackedBody)), Hash: proposal.HashBody(trackedBody)}}
	if err := st.PutRetryRecord(ctx, s.ID(), rec.Marshal()); err != nil {
		t.Fatal(err)
	}
	return s.ID()
}

// reopenFailingTracking opens dir again with every tracking commit failing
// as a full disk would, and the session id from it.
func reopenFailingTracking(t *testing.T, dir, id string) (*Manager, *Session, *countingEngine, *store.Store) {
	t.Helper()
	st, err := store.Open(context.Background(), dir, store.WithFailingCommits(store.OpTracking))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	eng := &countingEngine{}
	m := NewManager(Config{Store: st, Engine: eng})
	t.Cleanup(m.Close)
	s, err := m.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m, s, eng, st
}

func storedStatus(t *testing.T, st *store.Store, id string) string {
	t.Helper()
	row, err := st.GetTracking(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var p TrackedPlan
	if err := json.Unmarshal([]byte(row.Plan), &p); err != nil {
		t.Fatal(err)
	}
	return p.Status
}

// TestTrackingCommitFailsVisibly: every tracker commit that fails (the
// store's ENOSPC failpoint on the tracking row) fails its step visibly:
// nothing announces a status the store does not hold, nothing runs on
// under it, and the person is told.
func TestTrackingCommitFailsVisibly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A pause for the scope (an unattended write outside it) whose commit
	// fails is kept (paused is the safe side) and the turn still stops,
	// but it is not announced as paused: an error says it was not saved.
	t.Run("pause for the scope", func(t *testing.T) {
		st, err := store.Open(ctx, t.TempDir(), store.WithFailingCommits(store.OpTracking))
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
		s.track.Begin(review.Accepted{Title: "Tidy", Body: trackedBody})
		evs := recordEvents(m)
		s.track.PauseForScope("docs/x.md")
		if p := s.TrackedPlan(); p == nil || p.Status != ImplPaused {
			t.Errorf("the implementation is %+v after a failed pause, want paused in memory (the safe side)", p)
		}
		if steps := evs.of("steps"); len(steps) != 0 {
			t.Errorf("a pause the store does not hold was announced: %q", steps)
		}
		for _, n := range evs.of("notice") {
			if strings.Contains(n, "Implementation paused") {
				t.Errorf("a pause the store does not hold was announced: %s", n)
			}
		}
		if errs := evs.of("error"); len(errs) != 1 || !strings.Contains(errs[0], "could not be saved") || !strings.Contains(errs[0], syscall.ENOSPC.Error()) {
			t.Errorf("error events %q, want one saying the pause was not saved, and why", errs)
		}
	})

	// Recovering a handoff whose implementation was paused by a restart
	// sets it running first (acceptance's own start, startHandoff); a
	// commit that fails there fails the handoff visibly and runs nothing.
	t.Run("a handoff's start", func(t *testing.T) {
		dir := t.TempDir()
		id := storedPausedPlan(t, dir, handoff.StepDispatched)
		m, s, eng, st := reopenFailingTracking(t, dir, id)
		evs := recordEvents(m)
		if _, err := s.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		// The workflow's last word (an error after its failure, or its
		// handoff done) is published after the session stopped being busy.
		waitFor(t, ctx, func() bool {
			return len(evs.of("error")) > 0 || strings.Contains(strings.Join(evs.of("handoff"), " "), `"done"`)
		})
		if err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(eng.requests()); n != 0 {
			t.Errorf("the implementation ran (%d requests) although its status could not be committed", n)
		}
		if p := s.TrackedPlan(); p == nil || p.Status != ImplPaused {
			t.Errorf("in memory the implementation is %+v, want paused as stored", p)
		}
		if got := storedStatus(t, st, id); got != ImplPaused {
			t.Errorf("stored status %s, want paused", got)
		}
		hs := evs.of("handoff")
		if len(hs) != 1 || !strings.Contains(hs[0], `"failed"`) {
			t.Errorf("handoff events %q, want one failed", hs)
		}
		if errs := evs.of("error"); len(errs) != 1 || !strings.Contains(errs[0], syscall.ENOSPC.Error()) {
			t.Errorf("error events %q, want the failed commit named", errs)
		}
		if steps := evs.of("steps"); len(steps) != 0 {
			t.Errorf("a status the store does not hold was announced: %q", steps)
		}
		if _, err := st.GetRetryRecord(ctx, id); err != nil {
			t.Errorf("the handoff's record is gone: %v", err)
		}
	})

	// A dispatched kickoff's continuation (the handoff port's Continue)
	// sets the implementation running before it sends anything; a commit
	// that fails there returns the error and sends nothing.
	t.Run("a kickoff's continuation", func(t *testing.T) {
		dir := t.TempDir()
		id := storedPausedPlan(t, dir, handoff.StepDispatched)
		_, s, eng, st := reopenFailingTracking(t, dir, id)
		rec := &handoff.Record{Step: handoff.StepDispatched, Title: "Tidy"}
		err := s.hand.Env().Continue(ctx, rec)
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("the continuation returned %v, want the failed commit", err)
		}
		if n := len(eng.requests()); n != 0 {
			t.Errorf("the continuation sent %d requests although its status could not be committed", n)
		}
		if p := s.TrackedPlan(); p == nil || p.Status != ImplPaused {
			t.Errorf("in memory the implementation is %+v, want paused as stored", p)
		}
		if got := storedStatus(t, st, id); got != ImplPaused {
			t.Errorf("stored status %s, want paused", got)
		}
	})
}
