package review

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// dirTree is a [Tree] with no commits whose status is every file under
// its directory (so every path is "dirty" and snapshotted from disk).
type dirTree struct{ dir string }

func (d dirTree) Head() string { return "" }
func (d dirTree) Dirty(context.Context) ([]string, error) {
	var out []string
	err := filepath.Walk(d.dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(d.dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	return out, err
}
func (dirTree) Committed(string, string) (FileState, bool)          { return FileState{}, false }
func (dirTree) Changed(string, string, int) ([]string, bool, error) { return nil, false, nil }

func openRoot(t *testing.T, dir string) *os.Root {
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestRestoreNeverWritesThroughALink(t *testing.T) {
	ctx := context.Background()
	dir, out := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "b.txt"), []byte("b\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("echo\n"), 0o755)
	root := openRoot(t, dir)
	tr := dirTree{dir}
	snap, err := Take(ctx, tr, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The command swaps a/ for a link out of the checkout, and replaces
	// the executable with a link to /etc/passwd.
	os.RemoveAll(filepath.Join(dir, "a"))
	os.Symlink(out, filepath.Join(dir, "a"))
	os.Remove(filepath.Join(dir, "run.sh"))
	os.Symlink("/etc/passwd", filepath.Join(dir, "run.sh"))
	cs, err := snap.Changes(ctx, tr, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]Change{}
	for _, c := range cs {
		byPath[c.Path] = c
	}
	if len(cs) != 3 || byPath["a"].Now.Kind != 'l' || byPath["a/b.txt"].Now.Kind != 0 || byPath["run.sh"].Now.Kind != 'l' {
		t.Fatalf("changes %+v", cs)
	}
	// Restoring only a/b.txt (as if a were in scope) must refuse, not
	// write into the link's target.
	done, failed := Restore(root, nil, nil, []Change{byPath["a/b.txt"]})
	if len(done) != 0 || failed["a/b.txt"] == nil {
		t.Fatalf("restored through a link: %v %v", done, failed)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Fatalf("wrote into the link's target: %v", ents)
	}
	// All of it: the link goes first, then a/b.txt and run.sh come back.
	keepDir := t.TempDir()
	done, failed = Restore(root, nil, openRoot(t, keepDir), cs)
	if len(done) != 3 || len(failed) != 0 {
		t.Fatalf("restore: %v %v", done, failed)
	}
	// What the command left is kept, not lost.
	if l, err := os.Readlink(filepath.Join(keepDir, "run.sh")); err != nil || l != "/etc/passwd" {
		t.Errorf("kept run.sh: %q %v", l, err)
	}
	if l, err := os.Readlink(filepath.Join(keepDir, "a")); err != nil || l != out {
		t.Errorf("kept a: %q %v", l, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a", "b.txt")); string(b) != "b\n" {
		t.Errorf("a/b.txt %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "run.sh")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("run.sh back as an executable file: %v %v", fi, err)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Fatalf("wrote into the link's target: %v", ents)
	}
	if cs, _ := snap.Changes(ctx, tr, root, nil); len(cs) != 0 {
		t.Errorf("after restoring, still changed: %+v", cs)
	}
}

func TestRestoreRefusesWhatWasNotKept(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	big := make([]byte, MaxWatchedFile+1)
	os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644)
	root := openRoot(t, dir)
	tr := dirTree{dir}
	snap, _ := Take(ctx, tr, root, nil)
	os.WriteFile(filepath.Join(dir, "big.bin"), []byte("small now"), 0o644)
	cs, _ := snap.Changes(ctx, tr, root, nil)
	if len(cs) != 1 || cs[0].Restorable() {
		t.Fatalf("changes %+v", cs)
	}
	_, failed := Restore(root, nil, nil, cs)
	if !errors.Is(failed["big.bin"], ErrNotRestorable) {
		t.Fatalf("failed %v", failed)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "big.bin")); string(b) != "small now" {
		t.Error("an unrestorable file was touched")
	}
}

// TestControlFilesWatched: a hook written into the git directory is a
// change (".git/hooks/…"), and restoring removes it.
func TestControlFilesWatched(t *testing.T) {
	ctx := context.Background()
	dir, gitDir := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(gitDir, "hooks"), 0o755)
	os.WriteFile(filepath.Join(gitDir, "config"), []byte("[core]\n"), 0o644)
	root, git := openRoot(t, dir), openRoot(t, gitDir)
	tr := dirTree{dir}
	snap, _ := Take(ctx, tr, root, git)
	os.WriteFile(filepath.Join(gitDir, "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(gitDir, "config"), []byte("[core]\n\tfsmonitor = evil\n"), 0o644)
	cs, _ := snap.Changes(ctx, tr, root, git)
	if len(cs) != 2 || cs[0].Path != ".git/config" || cs[1].Path != ".git/hooks/pre-commit" {
		t.Fatalf("changes %+v", cs)
	}
	keepDir := t.TempDir()
	if done, failed := Restore(root, git, openRoot(t, keepDir), cs); len(done) != 2 || len(failed) != 0 {
		t.Fatalf("restore %v %v", done, failed)
	}
	if b, _ := os.ReadFile(filepath.Join(gitDir, "config")); string(b) != "[core]\n" {
		t.Errorf("config %q", b)
	}
	if _, err := os.Lstat(filepath.Join(gitDir, "hooks", "pre-commit")); err == nil {
		t.Error("the hook stayed")
	}
	if b, _ := os.ReadFile(filepath.Join(keepDir, ".git", "config")); string(b) != "[core]\n\tfsmonitor = evil\n" {
		t.Errorf("kept config %q", b)
	}
}

// TestBaseChangesAndDiff: a base keeps dirty files' content, so only what
// changed after it counts; nothing is read through a link out of the root.
func TestBaseChangesAndDiff(t *testing.T) {
	ctx := context.Background()
	dir, out := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644)
	os.WriteFile(filepath.Join(out, "secret"), []byte("s\n"), 0o644)
	root := openRoot(t, dir)
	tr := dirTree{dir}
	var b Base
	if err := b.Take(ctx, tr, root); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\n"), 0o644)
	os.Symlink(out, filepath.Join(dir, "l"))
	cs, err := b.Changes(ctx, tr, root, []ToolEvent{{Tool: "write_file", Paths: []string{"l/secret"}}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, c := range cs {
		got[c.Path] = true
		if c.Path == "l/secret" && (c.Exists || len(c.After) != 0) {
			t.Errorf("read through a link out of the root: %+v", c)
		}
	}
	if !got["a.txt"] || !got["l"] || got["l/secret"] {
		t.Errorf("changes %v", got)
	}
	d, err := b.Diff(tr, root, "a.txt")
	if err != nil || d != "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n one\n+two\n" {
		t.Errorf("diff %q %v", d, err)
	}
	for _, bad := range []string{"", ".", "..", "../x", "/etc/passwd", "./a.txt", "a//b"} {
		if CleanRel(bad) {
			t.Errorf("CleanRel(%q)", bad)
		}
	}
}

func TestScopeOutside(t *testing.T) {
	sc := Scope{Paths: []string{"internal/foo", "README.md"}, Extensions: []string{"docs/x.md"}}
	var cs []Change
	for _, p := range []string{"ws/internal/foo/a.go", "ws/internal/foobar.go", "ws/README.md", "ws/docs/x.md", "other/y.go", "ws/.git/hooks/x", ".git/hooks/pre-commit"} {
		cs = append(cs, Change{Path: p})
	}
	_, paths := sc.Outside(cs, "ws/")
	if fmt.Sprint(paths) != "[ws/internal/foobar.go other/y.go ws/.git/hooks/x .git/hooks/pre-commit]" {
		t.Fatalf("outside %q", paths)
	}
	sc.Extend([]string{"ws/internal/foobar.go", "ws/internal/foobar.go"}, "ws/")
	if fmt.Sprint(sc.Extensions) != "[docs/x.md internal/foobar.go]" {
		t.Fatalf("extensions %q", sc.Extensions)
	}
}

// TestRestoreKeepsNothingItCannotCopy: a path whose current content is too
// large to copy is not restored, so nothing is lost.
func TestRestoreKeepsNothingItCannotCopy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("small\n"), 0o644)
	root := openRoot(t, dir)
	tr := dirTree{dir}
	snap, _ := Take(ctx, tr, root, nil)
	os.WriteFile(filepath.Join(dir, "f.txt"), make([]byte, MaxWatchedFile+1), 0o644)
	cs, _ := snap.Changes(ctx, tr, root, nil)
	_, failed := Restore(root, nil, openRoot(t, t.TempDir()), cs)
	if !errors.Is(failed["f.txt"], ErrNotKept) {
		t.Fatalf("failed %v", failed)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "f.txt")); fi.Size() != MaxWatchedFile+1 {
		t.Error("a file whose content could not be kept was restored over")
	}
}

// TestRestoreOddNames: names like options, with a newline or not UTF-8
// are paths like any other.
func TestRestoreOddNames(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	root := openRoot(t, dir)
	tr := dirTree{dir}
	snap, _ := Take(ctx, tr, root, nil)
	names := []string{"-rf", "--help", "a\nb", "\xff\xfe", " lead"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cs, _ := snap.Changes(ctx, tr, root, nil)
	if len(cs) != len(names) {
		t.Fatalf("changes %+v", cs)
	}
	if done, failed := Restore(root, nil, openRoot(t, t.TempDir()), cs); len(done) != len(names) || len(failed) != 0 {
		t.Fatalf("restore %q %v", done, failed)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left %v", ents)
	}
}
