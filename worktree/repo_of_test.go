package worktree

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestRootOfHeadOf: the root and HEAD of the checkout holding a directory,
// from the directory itself, a subdirectory and a linked worktree; a
// directory outside any checkout is ErrNotRepository for both.
func TestRootOfHeadOf(t *testing.T) {
	hermetic(t)
	repo := newRepo(t, map[string]string{"sub/a.txt": "a\n"})
	repo, _ = filepath.EvalSymlinks(repo)
	head := strings.TrimSpace(gitCmd(t, repo, "rev-parse", "HEAD"))
	linked := filepath.Join(t.TempDir(), "linked")
	gitCmd(t, repo, "worktree", "add", "-q", "-b", "topic", linked)
	linked, _ = filepath.EvalSymlinks(linked)
	for _, c := range []struct {
		dir, root, branch string
	}{
		{repo, repo, "main"},
		{filepath.Join(repo, "sub"), repo, "main"},
		{linked, linked, "topic"},
	} {
		root, err := RootOf(c.dir)
		if err != nil || root != c.root {
			t.Errorf("RootOf(%s) = %q %v, want %q", c.dir, root, err, c.root)
		}
		branch, hash, err := HeadOf(c.dir)
		if err != nil || branch != c.branch || hash != head {
			t.Errorf("HeadOf(%s) = %q %q %v, want %q %q", c.dir, branch, hash, err, c.branch, head)
		}
	}
	plain := t.TempDir()
	if _, err := RootOf(plain); !errors.Is(err, ErrNotRepository) {
		t.Errorf("RootOf outside a checkout: %v", err)
	}
	if b, h, err := HeadOf(plain); !errors.Is(err, ErrNotRepository) || b != "" || h != "" {
		t.Errorf("HeadOf outside a checkout: %q %q %v", b, h, err)
	}
}
