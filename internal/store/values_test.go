package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSessionValuesGoWithTheSession, over the real SQLite file: a
// session's values (the script engine's positions) are deleted with it,
// a failed delete keeps them, a value written after the delete is refused
// and leaves no row, and another session's values stay.
func TestSessionValuesGoWithTheSession(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, WithFailingCommits(OpDelete))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"s-1", "s-2"} {
		if err := s.PutSession(ctx, Session{ID: id, Workspace: "/w", Mode: "ask"}); err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(SessionDir(dir, id), 0o700)
		if err := s.PutValue(ctx, id, "script-cursor:/x/a.json", "3"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutValue(ctx, "s-1", "script-cursor:/x/a.json", "4"); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.Value(ctx, "s-1", "script-cursor:/x/a.json"); v != "4" || !ok || err != nil {
		t.Fatalf("value %q %v %v", v, ok, err)
	}
	if err := s.DeleteSession(ctx, "s-1"); err == nil {
		t.Fatal("delete with a failing commit succeeded")
	}
	if _, ok, _ := s.Value(ctx, "s-1", "script-cursor:/x/a.json"); !ok {
		t.Fatal("a failed delete lost the session's value")
	}
	s.Close()

	s, err = Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.DeleteSession(ctx, "s-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutValue(ctx, "s-1", "script-cursor:/x/a.json", "5"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a value written after the delete: %v, want ErrNotFound", err)
	}
	if n := countRows(t, dir, `SELECT COUNT(*) FROM session_values WHERE session_id = 's-1'`); n != 0 {
		t.Errorf("%d values of the deleted session remain", n)
	}
	if n := countRows(t, dir, `SELECT COUNT(*) FROM kv`); n != 0 {
		t.Errorf("%d key-value rows", n)
	}
	if v, ok, _ := s.Value(ctx, "s-2", "script-cursor:/x/a.json"); v != "3" || !ok {
		t.Errorf("the other session's value: %q %v", v, ok)
	}
}

// TestScriptCursorsMigrate: positions kept in the key-value table before
// migration 14 ("script-cursor:<script>:<id>") become values of their
// session, a script path with colons and underscores included; those of a
// session already deleted go.
func TestScriptCursorsMigrate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	old := &Store{db: db, dir: dir}
	if err := old.migrate(ctx, migrations[:13]); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Format(time.RFC3339Nano)
	for _, id := range []string{"s-1", "s-2"} {
		if _, err := db.Exec(`INSERT INTO sessions (id, workspace, plan, mode, created_at, updated_at) VALUES (?, '/w', 0, 'ask', ?, ?)`, id, now, now); err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(SessionDir(dir, id), 0o700)
	}
	for k, v := range map[string]string{
		"script-cursor:/a/b.json:s-1":     "2",
		"script-cursor:/a:x_y/c.json:s-1": "7",
		"script-cursor:/a/b.json:s-2":     "1",
		"script-cursor:/a/b.json:s-gone":  "9",
		"script-cursor:/a/b.json:xs-2":    "8", // not s-2's
		"other":                           "kept",
	} {
		if _, err := db.Exec(`INSERT INTO kv (key, value) VALUES (?, ?)`, k, v); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct{ id, key, want string }{
		{"s-1", "script-cursor:/a/b.json", "2"},
		{"s-1", "script-cursor:/a:x_y/c.json", "7"},
		{"s-2", "script-cursor:/a/b.json", "1"},
	} {
		if v, ok, err := s.Value(ctx, c.id, c.key); v != c.want || !ok || err != nil {
			t.Errorf("%s %s: %q %v %v, want %q", c.id, c.key, v, ok, err, c.want)
		}
	}
	if n := countRows(t, dir, `SELECT COUNT(*) FROM session_values`); n != 3 {
		t.Errorf("%d values, want 3", n)
	}
	if n := countRows(t, dir, `SELECT COUNT(*) FROM kv WHERE key LIKE 'script-cursor:%'`); n != 0 {
		t.Errorf("%d positions left in kv", n)
	}
	if v, ok, _ := s.Get(ctx, "other"); v != "kept" || !ok {
		t.Errorf("another key-value row: %q %v", v, ok)
	}
}

// countRows runs a COUNT query on the state directory's database file,
// through a connection of its own.
func countRows(t *testing.T, dir, q string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
