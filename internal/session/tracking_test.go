package session

import (
	"context"
	"strings"
	"testing"

	"planbridge/internal/store"
)

// newTestManager is a manager over a fresh store; both are closed when
// the test ends.
func newTestManager(t *testing.T) *Manager {
	t.Helper()
	st, err := store.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := NewManager(Config{Store: st})
	t.Cleanup(m.Close)
	return m
}

func newTestSession(t *testing.T) *Session {
	t.Helper()
	s, err := newTestManager(t).Create(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRejectedWriteLeavesPreviousList(t *testing.T) {
	s := newTestSession(t)
	ctx := context.Background()
	first, err := s.track.WriteTodos(ctx, items("|investigate|in_progress", "|propose|pending"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.track.WriteTodos(ctx, items("|a|in_progress", "|b|in_progress")); err == nil {
		t.Fatal("two in_progress accepted")
	}
	if got := s.Todos(); len(got) != 2 || got[0] != first[0] || got[1] != first[1] {
		t.Fatalf("previous list changed: %+v", got)
	}
	// Persisted: a fresh load sees the same list.
	s.m.mu.Lock()
	delete(s.m.sessions, s.id)
	s.m.mu.Unlock()
	again, err := s.m.Get(ctx, s.id)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Todos(); len(got) != 2 || got[0] != first[0] {
		t.Fatalf("after reload: %+v", got)
	}
	if _, err := again.track.WriteTodos(ctx, nil); err != nil || len(again.Todos()) != 0 {
		t.Fatalf("clearing: %v %+v", err, again.Todos())
	}
}

func items(spec ...string) []TodoItem {
	var out []TodoItem
	for _, s := range spec {
		id, rest, _ := strings.Cut(s, "|")
		content, status, _ := strings.Cut(rest, "|")
		out = append(out, TodoItem{ID: id, Content: content, Status: status})
	}
	return out
}
