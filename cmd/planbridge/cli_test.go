package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// runBinary runs the planbridge binary with args and stdin, and returns
// its exit status, stdout and stderr.
func runBinary(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("planbridge %q: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// TestCLIConventions: --help and -h list every subcommand and exit 0;
// --version works; every subcommand has --help with a description (exit 0,
// on stdout); usage mistakes exit 2 with the usage on stderr.
func TestCLIConventions(t *testing.T) {
	names := []string{"serve", "demo", "doctor", "classify", "sh", "extract", "status", "worktree", "version"}
	for _, flag := range []string{"--help", "-h", "help"} {
		code, out, _ := runBinary(t, "", flag)
		if code != 0 {
			t.Errorf("planbridge %s: exit %d", flag, code)
		}
		for _, n := range names {
			if !strings.Contains(out, "\n  "+n+" ") {
				t.Errorf("planbridge %s does not list %s:\n%s", flag, n, out)
			}
		}
	}
	if code, out, _ := runBinary(t, "", "--version"); code != 0 || !strings.HasPrefix(out, "planbridge ") {
		t.Errorf("--version: %d %q", code, out)
	}
	for _, n := range names {
		for _, flag := range []string{"--help", "-h"} {
			code, out, errOut := runBinary(t, "", n, flag)
			lines := strings.Split(out, "\n")
			if code != 0 || !strings.HasPrefix(out, "usage: planbridge "+n) || len(lines) < 3 || lines[1] != "" || len(lines[2]) < 10 {
				t.Errorf("planbridge %s %s: exit %d, stdout %q, stderr %q", n, flag, code, out, errOut)
			}
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"classify"}, "usage: planbridge classify"},
		{[]string{"serve", "extra"}, `unexpected argument "extra"`},
		{[]string{"serve", "--no-such-flag"}, "usage: planbridge serve"},
		{[]string{"extract", "file.txt"}, "usage: planbridge extract"},
		{[]string{"worktree"}, "usage: planbridge worktree add"},
		{[]string{"version", "x"}, "usage: planbridge version"},
		{[]string{"no-such-subcommand"}, "unknown subcommand"},
	} {
		code, out, errOut := runBinary(t, "ls\n", tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("planbridge %q: exit %d, stdout %q, stderr %q (want exit 2 and %q)", tc.args, code, out, errOut, tc.want)
		}
	}
	if code, out, _ := runBinary(t, "ls | wc -l", "classify", "-"); code != 0 || out != "allow\n" {
		t.Errorf("classify - : %d %q", code, out)
	}
}

// openPTY returns both ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// TestBareOnTerminalExplains: a bare planbridge whose stdin is a terminal
// says it is a JSON-RPC server and how to use it instead of waiting; with
// stdin a pipe it serves JSON-RPC.
func TestBareOnTerminalExplains(t *testing.T) {
	_, tty := openPTY(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary)
	cmd.Env = append(os.Environ(), "PLANBRIDGE_STATE_DIR="+filepath.Join(t.TempDir(), "state"))
	cmd.Stdin = tty
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("bare planbridge on a terminal: %v, stderr %q", err, errb.String())
	}
	if !strings.Contains(errb.String(), "JSON-RPC server") || !strings.Contains(errb.String(), "planbridge serve") || out.Len() != 0 {
		t.Fatalf("stdout %q stderr %q", out.String(), errb.String())
	}

	// Stdin a pipe: it serves.
	cmd = exec.CommandContext(ctx, binary)
	cmd.Env = append(os.Environ(), "PLANBRIDGE_STATE_DIR="+filepath.Join(t.TempDir(), "state"))
	cmd.Stdin = strings.NewReader(frame(`{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}`))
	got, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(got), "Content-Length: ") || !strings.Contains(string(got), `"id":1`) {
		t.Fatalf("bare planbridge with a pipe: %v %q", err, got)
	}
}

// TestDoctorCreatesNothing: doctor reports a missing state directory and
// database without creating either.
func TestDoctorCreatesNothing(t *testing.T) {
	state := filepath.Join(t.TempDir(), "nested", "state")
	code, out, errOut := runBinary(t, "", "doctor", "--state-dir", state)
	if code != 0 || !strings.Contains(out, "not created yet") {
		t.Fatalf("doctor: %d %q %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Dir(state)); !os.IsNotExist(err) {
		t.Fatalf("doctor created %s (%v)", filepath.Dir(state), err)
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	runBinary(t, "", "doctor", "--state-dir", state)
	if _, err := os.Stat(filepath.Join(state, "state.db")); !os.IsNotExist(err) {
		t.Fatalf("doctor created the database (%v)", err)
	}
	// A 0-byte database with no sessions is reported, and stays 0 bytes:
	// doctor writes no schema and leaves no -wal or -shm behind.
	db := filepath.Join(state, "state.db")
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runBinary(t, "", "doctor", "--state-dir", state)
	if code != 0 || !strings.Contains(out, "0 bytes") {
		t.Fatalf("doctor on an empty database: %d %q %q", code, out, errOut)
	}
	if fi, err := os.Stat(db); err != nil || fi.Size() != 0 {
		t.Fatalf("doctor wrote into the empty database: %v %v", fi, err)
	}
	ents, _ := os.ReadDir(state)
	if len(ents) != 1 {
		t.Fatalf("doctor left files behind: %v", ents)
	}
}

// TestDemoPrintsPromptOnceAndCleansUp: the demo (what make demo runs)
// prints the prompt once and leaves no temporary directory behind, unless
// --keep.
func TestDemoPrintsPromptOnceAndCleansUp(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(binary, "demo")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "> Make the greeting's name configurable"); n != 1 {
		t.Errorf("the prompt is printed %d times:\n%s", n, out)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("demo left %v behind in TMPDIR", ents)
	}
	cmd = exec.Command(binary, "demo", "--keep")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("demo --keep: %v\n%s", err, out)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 1 {
		t.Errorf("demo --keep kept %v", ents)
	}
}
