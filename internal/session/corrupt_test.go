package session

import (
	"context"
	"strings"
	"testing"

	"planbridge/internal/store"
)

// TestCorruptRowsOpenWithClearErrors: a session whose stored proposal
// selection, tracking, Goal and retry record are corrupt still opens; the
// selection falls back to defaults, and a retry says the record is corrupt
// instead of guessing.
func TestCorruptRowsOpenWithClearErrors(t *testing.T) {
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
	id := s.ID()
	db := st.DB()
	for _, q := range []string{
		`INSERT INTO proposals (session_id, status, title, path, hash, selection, updated_at) VALUES ('` + id + `', 'draft', 'T', 'plans/current.md', 'abc', '{not json', 'x')`,
		`INSERT INTO tracking (session_id, todos, plan, updated_at) VALUES ('` + id + `', '[{broken', '{"status":', 'x')`,
		`INSERT INTO goals (id, session_id, data, updated_at) VALUES ('g-1', '` + id + `', '{"status": 42', 'x')`,
		`INSERT INTO retry_records (session_id, data, updated_at) VALUES ('` + id + `', '{"step":"recorded"', 'x')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	st2, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	m2 := NewManager(Config{Store: st2})
	s2, err := m2.Get(ctx, id)
	if err != nil {
		t.Fatalf("a session with corrupt rows did not open: %v", err)
	}
	if v := s2.Approval(); v.Selection.Location != "here" || v.Selection.Context != "current" {
		t.Errorf("selection did not fall back to defaults: %+v", v.Selection)
	}
	if len(s2.Todos()) != 0 || s2.TrackedPlan() != nil || s2.Goal() != nil {
		t.Errorf("corrupt tracking/goal leaked through")
	}
	_, err = s2.Recover(ctx)
	if err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("retry of a corrupt record: %v", err)
	}
	if _, err := s2.Submit(ctx, "/plan status"); err != nil {
		t.Errorf("the session is not usable: %v", err)
	}
}
