package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(st), ") Z ")
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	for i := 0; i < 1000; i++ {
		b, err := os.ReadFile(file)
		var pid int
		if err == nil && len(b) > 0 {
			if _, err := fmt.Sscan(string(b), &pid); err == nil {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no pid written")
	return 0
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; alive(pid); i++ {
		if i > 3000 { // 30 s: a hang guard
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d outlived its agent", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCloseKillsWhatLeftTheGroup: an agent's command in a session and
// process group of its own (as Claude Code starts them) dies with Close,
// and with the agent when it dies by itself.
func TestCloseKillsWhatLeftTheGroup(t *testing.T) {
	noop := func(context.Context, string, json.RawMessage) (any, error) { return nil, nil }
	for _, how := range []string{"close", "exit"} {
		t.Run(how, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pid")
			// The pid is written from inside the new session, so the test
			// never looks at the child before setsid has run.
			script := fmt.Sprintf(`setsid sh -c 'echo $$ > %s; exec sleep 1000' </dev/null >/dev/null 2>&1 & `, pidfile)
			if how == "exit" {
				script += "sleep 0.2; exit 3"
			} else {
				script += "exec cat"
			}
			p, err := Start(Command{Argv: []string{"sh", "-c", script}, Env: os.Environ()}, noop)
			if err != nil {
				t.Fatal(err)
			}
			pid := readPid(t, pidfile)
			if pgid, _ := syscall.Getpgid(pid); pgid == p.Pid() {
				t.Fatalf("the command is in the agent's group %d", pgid)
			}
			if how == "close" {
				p.Close(time.Second)
			} else {
				<-p.Done()
			}
			waitGone(t, pid)
		})
	}
}

// TestKillOrphans: a command the agent started whose parent exited (an
// orphan, reparented away from the agent) is killed; one still below the
// agent is left alone.
func TestKillOrphans(t *testing.T) {
	noop := func(context.Context, string, json.RawMessage) (any, error) { return nil, nil }
	dir := t.TempDir()
	orphan, kept := filepath.Join(dir, "orphan"), filepath.Join(dir, "kept")
	script := fmt.Sprintf(`sh -c 'setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > %s' ; sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > %s; exec cat`, orphan, kept)
	p, err := Start(Command{Argv: []string{"sh", "-c", script}, Env: os.Environ()}, noop)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(time.Second)
	o, k := readPid(t, orphan), readPid(t, kept)
	// The orphan's parent shell exits at once: wait for the reparenting
	// (its parent is then neither that shell nor the agent).
	ppid := func(pid int) int {
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		n := 0
		if len(f) > 1 {
			fmt.Sscan(f[1], &n)
		}
		return n
	}
	for i := 0; ; i++ {
		pp := ppid(o)
		if pp != 0 && pp != p.Pid() && ppid(pp) != p.Pid() {
			break
		}
		if i > 3000 { // 30 s: a hang guard
			t.Fatal("the orphan was never reparented")
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.KillOrphans()
	waitGone(t, o)
	if !alive(k) {
		t.Error("KillOrphans killed a command still below the agent")
	}
}
