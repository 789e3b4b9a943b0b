package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// File modes of the state directory: only its owner may read it, whatever
// the umask or the modes a pre-existing directory had. SQLite creates the
// -wal and -shm files with the database file's mode, so state.db is made
// 0600 before it is opened when it exists, and all three right after the
// open (nothing else can reach them meanwhile: the directory is 0700).
const (
	stateDirMode = 0o700
	dbFileMode   = 0o600
)

// secureStateDir creates dir (0700) or tightens an existing one, and
// tightens the database files already there ([secureDBFiles]).
func secureStateDir(dir string) error {
	if err := os.MkdirAll(dir, stateDirMode); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	if st.Mode().Perm() != stateDirMode {
		if err := os.Chmod(dir, stateDirMode); err != nil {
			return fmt.Errorf("state dir %s is readable by others and cannot be made private: %w", dir, err)
		}
	}
	return secureDBFiles(dir)
}

// secureDBFiles makes state.db and its -wal and -shm files 0600, those
// that exist: before the database is opened (so files SQLite creates next
// take the database's mode) and again after (for the ones it just made).
func secureDBFiles(dir string) error {
	db := filepath.Join(dir, "state.db")
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		st, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("database file: %w", err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("database file %s is not a regular file", p)
		}
		if st.Mode().Perm() != dbFileMode {
			if err := os.Chmod(p, dbFileMode); err != nil {
				return fmt.Errorf("database file %s is readable by others and cannot be made private: %w", p, err)
			}
		}
	}
	return nil
}
