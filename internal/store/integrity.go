package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// DamageError reports a state directory whose database is missing, empty,
// corrupt or behind the session files beside it. Nothing was changed.
type DamageError struct {
	Dir      string
	Problems []string
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("the state directory %s is damaged, so planbridge refuses to start and changed nothing: %s. "+
		"Restore state.db (with its -wal file) from a backup, or move the directory aside to start afresh; `planbridge doctor` reports details",
		e.Dir, strings.Join(e.Problems, "; "))
}

// SessionDirs lists the session ids that have a directory under
// dir/sessions (each session gets one when it is created).
func SessionDirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(dir, "sessions"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "s-") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// SessionDir is the directory of session id in state directory dir.
func SessionDir(dir, id string) string { return filepath.Join(dir, "sessions", id) }

// WorkDir is the work:// root of session id in the state directory dir:
// the session's directory's work/.
func WorkDir(dir, id string) string { return filepath.Join(SessionDir(dir, id), "work") }

// Preflight is the quick check before [Open] creates or migrates anything:
// a database that is missing or empty while session directories exist, a
// corrupt one, or one without rows for sessions whose directories exist
// (its -wal lost) is a [*DamageError]. It reads without writing: when no
// -wal file exists the database is opened immutable, so not even a -shm
// file appears. With a -wal file present, the same row check runs after
// Open, through [Store.Check].
func Preflight(ctx context.Context, dir string) error {
	ids, err := SessionDirs(dir)
	if err != nil {
		return fmt.Errorf("read state dir: %w", err)
	}
	db := filepath.Join(dir, "state.db")
	fi, err := os.Stat(db)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if len(ids) > 0 {
			return &DamageError{Dir: dir, Problems: []string{fmt.Sprintf("state.db is missing but %d session directories exist", len(ids))}}
		}
		return nil
	case err != nil:
		return fmt.Errorf("state.db: %w", err)
	case fi.Size() == 0:
		if len(ids) > 0 {
			return &DamageError{Dir: dir, Problems: []string{fmt.Sprintf("state.db is empty (0 bytes) but %d session directories exist", len(ids))}}
		}
		return nil
	}
	if _, err := os.Stat(db + "-wal"); err == nil {
		return nil // checked after Open, with the log applied
	}
	h, err := sql.Open("sqlite", "file:"+db+"?"+url.Values{"immutable": {"1"}, "mode": {"ro"}}.Encode())
	if err != nil {
		return err
	}
	defer h.Close()
	probs := check(ctx, h, dir, ids, false)
	if len(probs) > 0 {
		return &DamageError{Dir: dir, Problems: probs}
	}
	return nil
}

// Check runs SQLite's quick_check (integrity_check when full) and compares
// the sessions table with the session directories. It returns the problems
// found (none: an empty slice).
func (s *Store) Check(ctx context.Context, full bool) []string {
	ids, err := SessionDirs(s.dir)
	if err != nil {
		return []string{err.Error()}
	}
	return check(ctx, s.db, s.dir, ids, full)
}

func check(ctx context.Context, db *sql.DB, dir string, ids []string, full bool) []string {
	var probs []string
	pragma := "PRAGMA quick_check"
	if full {
		pragma = "PRAGMA integrity_check"
	}
	rows, err := db.QueryContext(ctx, pragma)
	if err != nil {
		return []string{"the database cannot be read: " + err.Error()}
	}
	for rows.Next() {
		var line string
		if rows.Scan(&line) == nil && line != "ok" {
			probs = append(probs, "integrity: "+line)
		}
	}
	rows.Close()
	if len(probs) > 0 {
		return probs
	}
	known := map[string]bool{}
	r2, err := db.QueryContext(ctx, `SELECT id FROM sessions`)
	if err != nil {
		if len(ids) > 0 {
			return []string{fmt.Sprintf("the database has no sessions table but %d session directories exist", len(ids))}
		}
		return nil
	}
	for r2.Next() {
		var id string
		if r2.Scan(&id) == nil {
			known[id] = true
		}
	}
	r2.Close()
	var missing []string
	for _, id := range ids {
		if !known[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		show := missing
		if len(show) > 3 {
			show = show[:3]
		}
		probs = append(probs, fmt.Sprintf("the database is behind its session files: %d session(s) have a directory but no row (%s), as after a lost -wal file",
			len(missing), strings.Join(show, ", ")))
	}
	return probs
}
