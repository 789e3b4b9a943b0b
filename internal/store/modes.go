package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// File modes of the state directory: only its owner may read it, whatever
// the umask or the modes a pre-existing directory had. SQLite creates the
// -wal and -shm files with the database file's mode, so making state.db
// 0600 before the first open covers them; existing ones are fixed too.
const (
	stateDirMode = 0o700
	dbFileMode   = 0o600
)

// secureStateDir creates dir (0700) or tightens an existing one, and
// creates or tightens state.db and its -wal and -shm files (0600).
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
	db := filepath.Join(dir, "state.db")
	f, err := os.OpenFile(db, os.O_RDWR|os.O_CREATE, dbFileMode)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	f.Close()
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
