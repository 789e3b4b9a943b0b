package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// deadPID is the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// holdLock has another process (flock(1)) hold dir's lock for d, with
// pid recorded as its holder, and returns once it holds it.
func holdLock(t *testing.T, dir string, pid int, d time.Duration) *exec.Cmd {
	t.Helper()
	name := filepath.Join(dir, "serve.lock")
	if err := os.WriteFile(name, []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, "ready")
	c := exec.Command("flock", "-x", name, "sh", "-c", "touch "+ready+"; sleep "+strconv.FormatFloat(d.Seconds(), 'f', 2, 64))
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	for {
		if _, err := os.Stat(ready); err == nil {
			return c
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLockWaitsOutADeadHolder: a lock still held just after its recorded
// holder died (a child it was starting has the descriptor until its exec)
// is taken once that child lets go; a live holder refuses at once.
func TestLockWaitsOutADeadHolder(t *testing.T) {
	t.Run("dead", func(t *testing.T) {
		dir := t.TempDir()
		holdLock(t, dir, deadPID(t), 300*time.Millisecond)
		release, err := Lock(dir)
		if err != nil {
			t.Fatalf("the lock of a dead holder: %v", err)
		}
		release()
	})
	t.Run("live", func(t *testing.T) {
		dir := t.TempDir()
		holdLock(t, dir, os.Getpid(), 10*time.Second)
		_, err := Lock(dir)
		var le *LockError
		if !errors.As(err, &le) || le.PID != os.Getpid() {
			t.Fatalf("a live holder: %v", err)
		}
	})
}
