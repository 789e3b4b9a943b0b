package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newExcludeRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q")
	writeFile(t, dir, "a.txt", "a\n")
	gitCmd(t, dir, "add", "a.txt")
	gitCmd(t, dir, "commit", "-q", "-m", "init")
	return dir
}

// After a fork at the default place, real git reports the main checkout
// clean; a second fork adds no second line.
func TestExcludeForksGitStatusClean(t *testing.T) {
	dir := newExcludeRepo(t)
	excl := filepath.Join(dir, ".git", "info", "exclude")
	// An existing exclude file without a final newline keeps its line.
	if err := os.WriteFile(excl, []byte("*.tmp"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, branch := range []string{"plan/one", "plan/two"} {
		if _, err := AddWorktree(context.Background(), dir, DefaultPath(dir, branch), branch); err != nil {
			t.Fatal(err)
		}
		if st := gitCmd(t, dir, "status", "--porcelain", "--untracked-files=normal"); !strings.Contains(st, "?? .worktrees/") {
			if i == 0 {
				t.Fatalf("before ExcludeForks git should list the forks dir; status %q", st)
			}
		}
		wrote, err := ExcludeForks(dir)
		if err != nil {
			t.Fatal(err)
		}
		if wrote != (i == 0) {
			t.Fatalf("fork %d: wrote = %v", i, wrote)
		}
		if st := gitCmd(t, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
			t.Fatalf("git status in the main checkout after fork %d: %q", i, st)
		}
		writeFile(t, dir, "x.tmp", "") // the old pattern still applies
		if st := gitCmd(t, dir, "status", "--porcelain"); st != "" {
			t.Fatalf("the old exclude line was broken: %q", st)
		}
	}
	b, _ := os.ReadFile(excl)
	if string(b) != "*.tmp\n/.worktrees/\n" {
		t.Fatalf("exclude = %q", b)
	}
	// Our own status agrees.
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if st, err := r.Status(context.Background()); err != nil || len(st) != 0 {
		t.Fatalf("Status = %v, %v", st, err)
	}
}

// Already ignored (by .gitignore, core.excludesFile or a pattern that is
// not our line) means nothing is written; a negation that un-ignores it
// means it is written.
func TestExcludeForksOnlyWhenNotIgnored(t *testing.T) {
	for _, tc := range []struct {
		name, gitignore, exclude string
		write                    bool
	}{
		{"gitignore", ".worktrees/\n", "", false},
		{"gitignore glob", ".work*\n", "", false},
		{"exclude", "", ".worktrees\n", false},
		{"unrelated", "*.o\n", "build/\n", true},
		{"our line", "", "/.worktrees/\n", false},
		{"re-included", "!.worktrees/\n", ".worktrees/\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newExcludeRepo(t)
			if tc.gitignore != "" {
				writeFile(t, dir, ".gitignore", tc.gitignore)
				gitCmd(t, dir, "add", ".gitignore")
				gitCmd(t, dir, "commit", "-q", "-m", "ignore")
			}
			excl := filepath.Join(dir, ".git", "info", "exclude")
			if err := os.WriteFile(excl, []byte(tc.exclude), 0o644); err != nil {
				t.Fatal(err)
			}
			wrote, err := ExcludeForks(dir)
			if err != nil || wrote != tc.write {
				t.Fatalf("ExcludeForks = %v, %v; want %v", wrote, err, tc.write)
			}
			b, _ := os.ReadFile(excl)
			if !tc.write && string(b) != tc.exclude {
				t.Fatalf("exclude changed: %q", b)
			}
			if wrote, err := ExcludeForks(dir); err != nil || wrote {
				t.Fatalf("second ExcludeForks = %v, %v; want no write", wrote, err)
			}
			if _, err := AddWorktree(context.Background(), dir, DefaultPath(dir, "b"), "b"); err != nil {
				t.Fatal(err)
			}
			want := ""
			if strings.HasPrefix(tc.gitignore, "!") {
				want = "?? .worktrees/b/\n" // the project's own .gitignore says to show it
			}
			if st := gitCmd(t, dir, "status", "--porcelain", "--untracked-files=all"); st != want {
				t.Fatalf("git status: %q, want %q", st, want)
			}
		})
	}
}

// A symbolic link at info/exclude is not followed: nothing is written
// through it.
func TestExcludeForksRefusesSymlink(t *testing.T) {
	dir := newExcludeRepo(t)
	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	excl := filepath.Join(dir, ".git", "info", "exclude")
	os.Remove(excl)
	if err := os.Symlink(target, excl); err != nil {
		t.Fatal(err)
	}
	if _, err := ExcludeForks(dir); err == nil {
		t.Fatal("a symlinked exclude file was accepted")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Fatalf("written through the link: %q", b)
	}
}
