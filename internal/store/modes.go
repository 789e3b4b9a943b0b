package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
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
// tightens the database files already there ([secureDBFiles]). A state
// dir, a link naming it, or a database file owned by another user is
// refused: root can chmod anything, and the owner keeps full access.
func secureStateDir(dir string) error {
	if err := os.MkdirAll(dir, stateDirMode); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	if lst, err := os.Lstat(dir); err == nil && lst.Mode()&os.ModeSymlink != 0 {
		// Whoever owns the link can point it elsewhere later.
		if err := ownedByUs(dir, lst, "state dir link"); err != nil {
			return err
		}
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("state dir %s is not a directory", dir)
	}
	// A directory someone else made (a predictable name in /tmp) stays
	// theirs after a chmod: they could plant or read the database.
	if err := ownedByUs(dir, st, "state dir"); err != nil {
		return err
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
		if err := ownedByUs(p, st, "database file"); err != nil {
			return err
		}
		if st.Mode().Perm() != dbFileMode {
			if err := os.Chmod(p, dbFileMode); err != nil {
				return fmt.Errorf("database file %s is readable by others and cannot be made private: %w", p, err)
			}
		}
	}
	return nil
}

// ownedByUs refuses a file whose owner is not this process's effective
// user: modes alone do not make another user's directory or file private.
func ownedByUs(p string, st os.FileInfo, what string) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); sys.Uid != uint32(uid) {
		return fmt.Errorf("%s %s belongs to uid %d, not to this user (uid %d): refusing to keep secrets there; remove it or choose another --state-dir", what, p, sys.Uid, uid)
	}
	return nil
}
