package session

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"planbridge/handoff"
	"planbridge/internal/event"
	"planbridge/internal/store"
)

// TestStatusAndCardEventsExactlyOnChange: status and approval (card)
// events come from one path: each mutation of what they describe
// publishes exactly one of each kind that changed, and an unchanged set
// publishes none; no call site can emit them by hand.
func TestStatusAndCardEventsExactlyOnChange(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	var mu sync.Mutex
	count := map[string]int{}
	m.Subscribe(func(ev Event) {
		mu.Lock()
		count[ev.Kind]++
		mu.Unlock()
	})
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnterPlan(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.card.Publish(ctx, "Rename the greeting", "# Rename the greeting\n\n## Steps\n1. Edit greet.txt\n", false); err != nil {
		t.Fatal(err)
	}
	attempt := s.Approval().Attempt
	if attempt == "" {
		t.Fatal("no card")
	}
	update := func(axis, value string) func() error {
		return func() error {
			_, err := s.UpdateSelection(ctx, attempt, handoff.Change{Axis: axis, Value: value})
			return err
		}
	}
	hide := func(h bool) func() error {
		return func() error { _, err := s.SetHidden(attempt, h); return err }
	}
	steps := []struct {
		name          string
		do            func() error
		status, cards int
	}{
		{"hide", hide(true), 1, 1},
		{"hide again", hide(true), 0, 0},
		{"show", hide(false), 1, 1},
		{"show again", hide(false), 0, 0},
		{"same context", update("context", "current"), 0, 0},
		{"fresh context", update("context", "fresh"), 0, 1},
		{"fresh context again", update("context", "fresh"), 0, 0},
		{"mode", func() error { return s.SetMode(ctx, "edits") }, 1, 0},
		{"same mode", func() error { return s.SetMode(ctx, "edits") }, 0, 0},
		{"enter Plan while in Plan", func() error { return s.EnterPlan(ctx) }, 0, 0},
		{"queue a follow-up (blocks a fork)", func() error { _, err := s.Queue("and then this"); return err }, 1, 1},
		{"hand-written status", func() error { s.emit(s.statusData()); return nil }, 0, 0},
		{"hand-written card", func() error { s.emit(s.Approval()); return nil }, 0, 0},
	}
	// A second card, cancelled: the status changes once, no card follows
	// (its end is an approval_closed event).
	s2, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s2.EnterPlan(ctx)
	if err := s2.card.Publish(ctx, "Other", "# Other\n\n## Steps\n1. x\n", false); err != nil {
		t.Fatal(err)
	}
	steps = append(steps, struct {
		name          string
		do            func() error
		status, cards int
	}{"cancel", func() error { return s2.CancelApproval(ctx, s2.Approval().Attempt) }, 1, 0})
	for _, c := range steps {
		mu.Lock()
		before := [2]int{count["status"], count["approval"]}
		mu.Unlock()
		if err := c.do(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		mu.Lock()
		got := [2]int{count["status"] - before[0], count["approval"] - before[1]}
		mu.Unlock()
		if got != [2]int{c.status, c.cards} {
			t.Errorf("%s: %d status and %d card events, want %d and %d", c.name, got[0], got[1], c.status, c.cards)
		}
	}
}

// TestInterruptDroppingQueuePublishesStatus: prompts still queued from
// before a restart (not yet run) that an interruption drops change the
// status (queued 0); a client resuming with since sees that event.
func TestInterruptDroppingQueuePublishesStatus(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := NewManager(Config{Store: st})
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	m.Close()
	for _, text := range []string{"one", "two"} {
		if _, err := st.EnqueueInput(ctx, id, store.QueuedInput{Text: text, Display: text, Guest: text == "two"}); err != nil {
			t.Fatal(err)
		}
	}
	m = NewManager(Config{Store: st})
	defer m.Close()
	s, err = m.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if q := s.Info().Queued; q != 2 {
		t.Fatalf("restart loaded %d queued prompts, want 2", q)
	}
	s.changed() // the status a client sees after the restart: queued 2
	s.Interrupt()
	evs, err := st.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var last *event.Status
	for _, ev := range evs {
		if ev.Kind == "status" {
			var se event.Status
			if err := json.Unmarshal(ev.Data, &se); err != nil {
				t.Fatal(err)
			}
			last = &se
		}
	}
	if last == nil || last.Queued != 0 {
		t.Fatalf("the last stored status after the interruption: %+v, want queued 0", last)
	}
	if q, _ := st.QueuedInputs(ctx, id); len(q) != 0 {
		t.Fatalf("dropped prompts still stored: %+v", q)
	}
}
