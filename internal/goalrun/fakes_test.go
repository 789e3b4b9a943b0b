package goalrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"syscall"
	"testing"
	"time"

	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/internal/event"
	"planbridge/internal/store"
)

// fakeStore holds Goal rows in memory. Its commits are numbered from 1;
// from commit failFrom on (0: never) every commit fails with ENOSPC, as a
// disk that filled up. onCommit runs inside each commit, before it
// succeeds or fails.
type fakeStore struct {
	mu       sync.Mutex
	rows     map[string]store.GoalRow
	current  string   // the current Goal's id ("" none)
	ops      []string // "put" or "start", one per successful commit
	commits  int
	failFrom int
	onCommit func()
}

func newFakeStore() *fakeStore { return &fakeStore{rows: map[string]store.GoalRow{}} }

var errDiskFull = fmt.Errorf("commit goal: %w", syscall.ENOSPC)

func (f *fakeStore) commit(op string, row store.GoalRow) error {
	f.mu.Lock()
	f.commits++
	fail := f.failFrom > 0 && f.commits >= f.failFrom
	hook := f.onCommit
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
	if fail {
		return errDiskFull
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rows[row.ID] = row
	f.ops = append(f.ops, op)
	switch {
	case !row.Cleared:
		f.current = row.ID
	case f.current == row.ID:
		f.current = ""
	}
	return nil
}

func (f *fakeStore) PutGoal(ctx context.Context, row store.GoalRow) error {
	return f.commit("put", row)
}
func (f *fakeStore) CommitGoalStart(ctx context.Context, row store.GoalRow) error {
	return f.commit("start", row)
}

func (f *fakeStore) CurrentGoal(ctx context.Context, session string) (store.GoalRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.current == "" {
		return store.GoalRow{}, store.ErrNotFound
	}
	return f.rows[f.current], nil
}

// failFromNext makes every commit from the next one on fail.
func (f *fakeStore) failFromNext() {
	f.mu.Lock()
	f.failFrom = f.commits + 1
	f.mu.Unlock()
}

// snapshot is a copy of the rows and the current id.
func (f *fakeStore) snapshot() (map[string]store.GoalRow, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rows := map[string]store.GoalRow{}
	for k, v := range f.rows {
		rows[k] = v
	}
	return rows, f.current
}

// stored is the current Goal as the store holds it (nil: none) and its
// pending kickoff.
func (f *fakeStore) stored(t *testing.T) (*goal.Goal, string) {
	t.Helper()
	row, err := f.CurrentGoal(context.Background(), "s")
	if errors.Is(err, store.ErrNotFound) {
		return nil, ""
	}
	var g goal.Goal
	if err := json.Unmarshal([]byte(row.Data), &g); err != nil {
		t.Fatal(err)
	}
	return &g, row.Kickoff
}

// fakeHost is the session aggregate: a posture, an event log, a queue.
// It checks the lock discipline: the posture is read with the lock held,
// and nothing is emitted, queued or kicked with it held.
type fakeHost struct {
	t         *testing.T
	lock      *sync.Mutex
	plan      bool
	mode      string
	artifacts map[string]string // path → hash
	mu        sync.Mutex
	events    []event.Data
	enqueued  []Turn
	kicks     int
	emitted   chan struct{} // a value per event
}

func (h *fakeHost) mustBeFree(what string) {
	if !h.lock.TryLock() {
		h.t.Errorf("%s with the aggregate's lock held", what)
		return
	}
	h.lock.Unlock()
}

func (h *fakeHost) PostureLocked() (bool, string) {
	if h.lock.TryLock() {
		h.lock.Unlock()
		h.t.Error("the posture was read without the aggregate's lock")
	}
	return h.plan, h.mode
}

func (h *fakeHost) Emit(ev event.Data) {
	h.mustBeFree("an event emitted")
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
	h.emitted <- struct{}{}
}

func (h *fakeHost) Enqueue(t Turn) {
	h.mustBeFree("a turn queued")
	h.mu.Lock()
	h.enqueued = append(h.enqueued, t)
	h.mu.Unlock()
}

func (h *fakeHost) Kick() {
	h.mustBeFree("the session kicked")
	h.mu.Lock()
	h.kicks++
	h.mu.Unlock()
}

func (h *fakeHost) ReadArtifact(path, hash string) (string, error) {
	if h.artifacts[path] != hash {
		return "", errors.New("changed")
	}
	return "body", nil
}

// kinds is the kinds of the events emitted so far.
func (h *fakeHost) kinds() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, ev := range h.events {
		out = append(out, ev.Kind())
	}
	return out
}

// lastEvent is the last event emitted of kind (nil: none).
func (h *fakeHost) lastEvent(kind string) event.Data {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.events) - 1; i >= 0; i-- {
		if h.events[i].Kind() == kind {
			return h.events[i]
		}
	}
	return nil
}

// waitEvents waits until n events were emitted in all.
func (h *fakeHost) waitEvents(t *testing.T, n int) {
	t.Helper()
	for {
		h.mu.Lock()
		got := len(h.events)
		h.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-h.emitted:
		case <-time.After(time.Minute):
			t.Fatalf("%d events after a minute, want %d", got, n)
		}
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// rig is a Runner over a fake store and a fake host sharing one lock.
type rig struct {
	r    *Runner
	st   *fakeStore
	host *fakeHost
	lock *sync.Mutex
	now  time.Time
}

func newRig(t *testing.T) *rig {
	lock := &sync.Mutex{}
	g := &rig{st: newFakeStore(), lock: lock, now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC),
		host: &fakeHost{t: t, lock: lock, mode: "edits", artifacts: map[string]string{}, emitted: make(chan struct{}, 1000)}}
	var failpoints []string
	g.r = New(Config{Session: "s", Store: g.st, Host: g.host, Lock: lock,
		Logger: quiet, Now: func() time.Time { return g.now }, Failpoint: func(name string) { failpoints = append(failpoints, name) }})
	return g
}

// act performs a Goal action that must succeed.
func (g *rig) act(t *testing.T, verb, rest string) {
	t.Helper()
	if _, err := g.r.Act(context.Background(), verb, rest, Defaults{Budget: 1000, Model: "m", Effort: "low"}); err != nil {
		t.Fatalf("%s %q: %v", verb, rest, err)
	}
}

// memory is a copy of the Goal in memory and whether its kickoff is pending.
func (g *rig) memory() (*goal.Goal, bool) {
	g.lock.Lock()
	defer g.lock.Unlock()
	return g.r.st.View()
}

// sameGoal compares two Goals (nil or not) field by field, times by instant.
func sameGoal(a, b *goal.Goal) bool {
	if a == nil || b == nil {
		return a == b
	}
	ca, cb := *a, *b
	if !ca.CreatedAt.Equal(cb.CreatedAt) || !ca.UpdatedAt.Equal(cb.UpdatedAt) {
		return false
	}
	ca.CreatedAt, cb.CreatedAt, ca.UpdatedAt, cb.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return reflect.DeepEqual(ca, cb)
}

// refusalCode is err's [handoff.Refusal] code ("" if it is none).
func refusalCode(err error) string {
	if r, ok := handoff.AsRefusal(err); ok {
		return r.Code
	}
	return ""
}
