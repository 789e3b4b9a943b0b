package store

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// asNobodyEnv marks a test binary that [runAsNobody] started.
const asNobodyEnv = "PLANBRIDGE_TEST_AS_NOBODY"

// runAsNobody runs test name of this binary again as uid/gid 65534 (a
// copy of the binary where nobody can run it) and fails t with its
// output unless it passes. It is for what only an unprivileged process
// meets (a permission root ignores).
func runAsNobody(t *testing.T, name string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "planbridge-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "store.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^"+name+"$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), asNobodyEnv+"=1", "TMPDIR=/tmp")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherUID}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("%s as nobody: %v\n%s", name, err, out)
	}
}

// TestFinishDeletesNeverStopsTheStart: what a start cannot settle of the
// deletes a crash cut short is reported, one sentence each, and never
// stops the others nor the start; nothing of a session whose rows remain
// is removed. Real files, one of them beyond the process's permissions
// (so the test runs as nobody: root ignores permissions). Before, the
// first directory that could not be removed failed FinishDeletes, and
// with it the server's start.
func TestFinishDeletesNeverStopsTheStart(t *testing.T) {
	if os.Geteuid() == 0 && os.Getenv(asNobodyEnv) == "" {
		runAsNobody(t, "TestFinishDeletesNeverStopsTheStart")
		return
	}
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sessions := filepath.Join(dir, "sessions")
	trash := func(id string) string { return filepath.Join(sessions, ".deleted-"+id) }
	// Each killed between its steps: s-stuck and s-gone after their rows
	// went, s-back after its move, s-again after its move and then used
	// again (it has a directory of its own).
	for _, id := range []string{"s-stuck", "s-gone", "s-back", "s-again"} {
		if err := s.PutSession(ctx, Session{ID: id, Workspace: "/w", Mode: "ask"}); err != nil {
			t.Fatal(err)
		}
		plans := filepath.Join(trash(id), "work", "plans")
		if err := os.MkdirAll(plans, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(plans, "accepted-1.md"), []byte("# "+id+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"s-stuck", "s-gone"} {
		if err := s.deleteRows(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(SessionDir(dir, "s-again"), "work"), 0o700); err != nil {
		t.Fatal(err)
	}
	// What s-stuck left cannot be removed: its plans directory is not
	// writable.
	locked := filepath.Join(trash("s-stuck"), "work", "plans")
	if err := os.Chmod(locked, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o700) })

	unfinished, err := s.FinishDeletes(ctx)
	if err != nil {
		t.Fatalf("FinishDeletes = %v: one delete it cannot settle must not stop the others", err)
	}
	if len(unfinished) != 2 || !strings.Contains(unfinished[0]+unfinished[1], trash("s-stuck")) || !strings.Contains(unfinished[0]+unfinished[1], trash("s-again")) {
		t.Fatalf("unfinished = %q: want s-stuck's and s-again's, each naming its directory", unfinished)
	}
	for _, u := range unfinished {
		if strings.Contains(u, "s-stuck") && !strings.Contains(u, "remove it by hand") ||
			strings.Contains(u, "s-again") && !strings.Contains(u, "by hand") {
			t.Errorf("%q does not say what to do", u)
		}
	}
	if b, err := os.ReadFile(filepath.Join(SessionDir(dir, "s-back"), "work", "plans", "accepted-1.md")); string(b) != "# s-back\n" {
		t.Errorf("s-back's plan was not put back: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(trash("s-again"), "work", "plans", "accepted-1.md")); string(b) != "# s-again\n" {
		t.Errorf("s-again's earlier plan is lost: %q %v", b, err)
	}
	for _, p := range []string{trash("s-gone"), trash("s-back")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", p, err)
		}
	}
	if probs := s.Check(ctx, false); len(probs) > 0 {
		t.Errorf("the state directory after the start: %v", probs)
	}
}
