package worktree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadCommitFile(t *testing.T) {
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q")
	writeFile(t, dir, "a.txt", "one\n")
	writeFile(t, dir, "sub/deep/b.go", "package b\n")
	os.Symlink("a.txt", filepath.Join(dir, "link"))
	gitCmd(t, dir, "add", "-A")
	gitCmd(t, dir, "commit", "-qm", "c1")
	head := strings.TrimSpace(gitCmd(t, dir, "rev-parse", "HEAD"))
	writeFile(t, dir, "a.txt", "two\n")
	gitCmd(t, dir, "commit", "-qam", "c2")
	gitCmd(t, dir, "gc", "-q") // packed objects too
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if b, err := r.ReadCommitFile(head, "a.txt"); err != nil || string(b) != "one\n" {
		t.Fatalf("a.txt at c1: %q %v", b, err)
	}
	if b, err := r.ReadCommitFile(head, "sub/deep/b.go"); err != nil || string(b) != "package b\n" {
		t.Fatalf("b.go: %q %v", b, err)
	}
	for _, p := range []string{"missing", "sub", "sub/deep", "link", "a.txt/x", "sub/../a.txt"} {
		if _, err := r.ReadCommitFile(head, p); err == nil || (p != "sub/../a.txt" && !errors.Is(err, fs.ErrNotExist)) {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := r.ReadCommitFile("nothex", "a.txt"); err == nil {
		t.Error("bad commit id accepted")
	}
}
