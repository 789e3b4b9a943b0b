package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// lockGrace bounds the wait for a lock whose recorded holder is dead.
const lockGrace = 3 * time.Second

// ErrLocked is returned by [Lock] when another process holds the state
// directory.
var ErrLocked = errors.New("state directory in use")

// LockError names the process holding the state directory.
type LockError struct {
	Dir string
	PID int // 0 when the holder could not be identified
}

func (e *LockError) Error() string {
	who := "another planbridge process"
	if e.PID > 0 {
		who = fmt.Sprintf("another planbridge process (pid %d)", e.PID)
	}
	return fmt.Sprintf("state directory %s is in use by %s; only one planbridge serve may use a state directory (stop it, or use --state-dir)", e.Dir, who)
}

func (e *LockError) Unwrap() error { return ErrLocked }

// Lock takes the exclusive lock of state directory dir (flock on
// dir/serve.lock, which then holds this process's pid). The lock lasts
// until release is called or the process ends, however it ends. A second
// Lock on the same directory fails at once with a [*LockError].
func Lock(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	name := filepath.Join(dir, "serve.lock")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	// A holder that is gone can still hold the lock for a moment: a child
	// it was starting keeps a copy of every descriptor until its exec
	// closes them. So while the pid recorded is dead, wait a little.
	for deadline := time.Now().Add(lockGrace); ; {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock state dir: %w", err)
		}
		b, _ := os.ReadFile(name)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid <= 0 || !errors.Is(unix.Kill(pid, 0), unix.ESRCH) || time.Now().After(deadline) {
			f.Close()
			return nil, &LockError{Dir: dir, PID: pid}
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The pid is informational (the lock is the flock); write it in place.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		f.Sync()
	}
	return func() { f.Close() }, nil
}
