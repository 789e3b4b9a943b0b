package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// ErrNotFound is returned when a looked-up row does not exist.
var ErrNotFound = errors.New("not found")

// Store is the SQLite database of one state directory. Safe for concurrent use.
type Store struct {
	db   *sql.DB
	dir  string
	fail func(op string) error // commit failpoint, nil in production
}

// DefaultDir returns the state directory: $PLANBRIDGE_STATE_DIR, else
// $XDG_STATE_HOME/planbridge, else ~/.local/state/planbridge.
func DefaultDir(getenv func(string) string) string {
	if d := getenv("PLANBRIDGE_STATE_DIR"); d != "" {
		return d
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "planbridge")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "planbridge")
	}
	return filepath.Join(os.TempDir(), "planbridge-state")
}

// Open opens (creating if needed) the database in dir and migrates it to the
// latest schema.
func Open(ctx context.Context, dir string, opts ...Option) (*Store, error) {
	if err := secureStateDir(dir); err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + filepath.Join(dir, "state.db") + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.SetMaxOpenConns(4)
	s := &Store{db: db, dir: dir}
	for _, o := range opts {
		o(s)
	}
	if err := s.migrate(ctx, migrations); err != nil {
		db.Close()
		return nil, err
	}
	if err := secureDBFiles(dir); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Dir is the state directory holding the database and session artifacts.
func (s *Store) Dir() string { return s.dir }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// DB exposes the handle for read queries in tests and doctor.
func (s *Store) DB() *sql.DB { return s.db }

// SchemaVersion reports the applied migration number.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v)
	return v, err
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }
