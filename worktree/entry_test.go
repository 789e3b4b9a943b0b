package worktree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestChangedPathsOracle compares ChangedPaths with `git diff --name-only
// --no-renames` over additions, deletions, modifications, mode and type
// changes (file ↔ directory, file ↔ link) at several depths.
func TestChangedPathsOracle(t *testing.T) {
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q")
	for p, c := range map[string]string{"a.txt": "a\n", "same.txt": "s\n", "sub/b.txt": "b\n", "sub/deep/c.txt": "c\n", "x": "file\n", "gone/d.txt": "d\n", "run.sh": "echo\n"} {
		writeFile(t, dir, p, c)
	}
	os.Symlink("a.txt", filepath.Join(dir, "link"))
	gitCmd(t, dir, "add", "-A")
	gitCmd(t, dir, "commit", "-qm", "c1")
	c1 := strings.TrimSpace(gitCmd(t, dir, "rev-parse", "HEAD"))
	writeFile(t, dir, "a.txt", "a2\n")
	writeFile(t, dir, "sub/deep/new.txt", "n\n")
	os.RemoveAll(filepath.Join(dir, "gone"))
	os.Remove(filepath.Join(dir, "x"))
	writeFile(t, dir, "x/inside.txt", "now a directory\n")
	os.Chmod(filepath.Join(dir, "run.sh"), 0o755)
	os.Remove(filepath.Join(dir, "link"))
	writeFile(t, dir, "link", "now a file\n")
	gitCmd(t, dir, "add", "-A")
	gitCmd(t, dir, "commit", "-qm", "c2")
	c2 := strings.TrimSpace(gitCmd(t, dir, "rev-parse", "HEAD"))
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, pair := range [][2]string{{c1, c2}, {c2, c1}, {c1, c1}} {
		got, trunc, err := r.ChangedPaths(pair[0], pair[1], 0)
		if err != nil || trunc {
			t.Fatal(err, trunc)
		}
		want := strings.Fields(gitCmd(t, dir, "diff", "--name-only", "--no-renames", pair[0], pair[1]))
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s..%s: got %q, git says %q", pair[0][:7], pair[1][:7], got, want)
		}
	}
	if got, trunc, _ := r.ChangedPaths(c1, c2, 2); len(got) != 2 || !trunc {
		t.Errorf("bounded: %q %v", got, trunc)
	}
	if got, _, err := r.ChangedPaths("", c1, 0); err != nil || len(got) != 8 {
		t.Errorf("from no commit: %q %v", got, err)
	}
	// ReadCommitEntry tells kinds apart.
	for p, want := range map[string]byte{"run.sh": 'f', "link": 'l', "a.txt": 'f'} {
		e, err := r.ReadCommitEntry(c1, p)
		if err != nil || e.Kind != want {
			t.Errorf("%s at c1: %c %v", p, e.Kind, err)
		}
	}
	if e, err := r.ReadCommitEntry(c2, "run.sh"); err != nil || e.Kind != 'x' {
		t.Errorf("run.sh at c2: %c %v", e.Kind, err)
	}
	if e, _ := r.ReadCommitEntry(c1, "link"); string(e.Data) != "a.txt" {
		t.Errorf("link target %q", e.Data)
	}
	for _, p := range []string{"sub", "missing", "x/inside.txt", "../a.txt"} {
		if _, err := r.ReadCommitEntry(c1, p); err == nil || (p != "../a.txt" && !errors.Is(err, fs.ErrNotExist)) {
			t.Errorf("%s: %v", p, err)
		}
	}
}
