package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMigrateFromEveryOldSchema(t *testing.T) {
	ctx := context.Background()
	for from := 0; from < len(migrations); from++ {
		dir := t.TempDir()
		s, err := Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		// Rebuild the database at version `from` with a session written by that schema.
		os.Remove(filepath.Join(dir, "state.db"))
		os.Remove(filepath.Join(dir, "state.db-wal"))
		os.Remove(filepath.Join(dir, "state.db-shm"))
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "state.db"))
		if err != nil {
			t.Fatal(err)
		}
		old := &Store{db: db, dir: dir}
		if err := old.migrate(ctx, migrations[:from]); err != nil {
			t.Fatal(err)
		}
		if from >= 1 {
			if _, err := db.Exec(`INSERT INTO sessions (id, workspace, plan, mode, created_at, updated_at) VALUES ('s-old', '/w', 1, 'edits', ?, ?)`,
				time.Now().Format(time.RFC3339Nano), time.Now().Format(time.RFC3339Nano)); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()

		s, err = Open(ctx, dir)
		if err != nil {
			t.Fatalf("from %d: %v", from, err)
		}
		if v, _ := s.SchemaVersion(ctx); v != len(migrations) {
			t.Errorf("from %d: version %d, want %d", from, v, len(migrations))
		}
		if from >= 1 {
			r, err := s.GetSession(ctx, "s-old")
			if err != nil || !r.Plan || r.Mode != "edits" {
				t.Errorf("from %d: old session %+v %v", from, r, err)
			}
		}
		s.Close()
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	s.db.Exec(`PRAGMA user_version = 999`)
	s.Close()
	if _, err := Open(ctx, dir); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("want a clear refusal, got %v", err)
	}
}

func TestPragmas(t *testing.T) {
	s, err := Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mode string
	var sync, busy int
	s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	s.db.QueryRow(`PRAGMA synchronous`).Scan(&sync)
	s.db.QueryRow(`PRAGMA busy_timeout`).Scan(&busy)
	if mode != "wal" || sync != 2 || busy < 1000 {
		t.Fatalf("journal_mode=%s synchronous=%d busy_timeout=%d", mode, sync, busy)
	}
}

func TestCorruptEventRowDoesNotHideTheLog(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutSession(ctx, Session{ID: "s1", Workspace: "/w", Mode: "ask"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	err = s.AppendEvents(ctx, "s1", []Event{
		{Seq: 1, Kind: "text", Data: json.RawMessage(`{"delta":"a"}`), Time: now},
		{Seq: 2, Kind: "text", Data: json.RawMessage(`{"delta":"b"}`), Time: now},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.db.Exec(`UPDATE events SET data = '{half' WHERE seq = 1`)
	evs, err := s.Events(ctx, "s1", 0)
	if err != nil || len(evs) != 2 || evs[0].Kind != "corrupt" || evs[1].Kind != "text" {
		t.Fatalf("events %+v %v", evs, err)
	}
}

func TestWriteFileOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a", "plan.md")
	// It creates no directory: a session's folder comes only with the session.
	if _, err := WriteFileOnce(p, []byte("one"), 0o444); err == nil {
		t.Fatal("written into a directory that does not exist")
	}
	if _, err := os.Lstat(filepath.Dir(p)); !os.IsNotExist(err) {
		t.Fatalf("the write created its directory: %v", err)
	}
	os.Mkdir(filepath.Dir(p), 0o700)
	if reused, err := WriteFileOnce(p, []byte("one"), 0o444); err != nil || reused {
		t.Fatal(reused, err)
	}
	if reused, err := WriteFileOnce(p, []byte("one"), 0o444); err != nil || !reused {
		t.Fatal(reused, err)
	}
	if _, err := WriteFileOnce(p, []byte("two"), 0o444); err == nil {
		t.Fatal("overwrote an immutable file")
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Fatalf("content %q", b)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("temp files left: %v", ents)
	}
}
