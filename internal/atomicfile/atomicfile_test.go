package atomicfile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestStaleTempOfAKilledWriterIsRemoved: a temp file left by a process that
// died is removed by the next write of the same file; one of a live
// process, or of another file, is not.
func TestStaleTempOfAKilledWriterIsRemoved(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "greet.txt")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, tempPrefix(target)+strconv.Itoa(dead.Process.Pid)+"-abc")
	live := filepath.Join(dir, tempPrefix(target)+"1-abc") // pid 1 is alive
	other := filepath.Join(dir, tempPrefix(filepath.Join(dir, "other"))+strconv.Itoa(dead.Process.Pid)+"-abc")
	for _, f := range []string{stale, live, other} {
		os.WriteFile(f, []byte("half"), 0o600)
	}
	if err := WriteFile(target, []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Error("the dead writer's temp file survived")
	}
	for _, f := range []string{live, other} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s removed", f)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "hi\n" {
		t.Fatalf("content %q", b)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	if reused, err := WriteOnce(target, []byte("hi\n"), 0o444); err != nil || !reused {
		t.Errorf("write-once of identical content: %v %v", reused, err)
	}
	if _, err := WriteOnce(target, []byte("other"), 0o444); !errors.Is(err, ErrExists) {
		t.Errorf("write-once over different content: %v", err)
	}
}
