package worktree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrefixOracle: Prefix agrees with `git rev-parse --show-prefix` run in
// the directory, reached directly, through a linked directory, or through
// a link to the checkout itself; a directory outside the checkout has none.
func TestPrefixOracle(t *testing.T) {
	dir := newRepo(t, map[string]string{"sub/deep/a.txt": "a\n", "b.txt": "b\n", "odd name/-x/c.txt": "c\n"})
	links := t.TempDir()
	if err := os.Symlink(dir, filepath.Join(links, "repo")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "sub", "deep"), filepath.Join(dir, "deeplink")); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, d := range []string{
		dir,
		filepath.Join(dir, "sub"),
		filepath.Join(dir, "sub", "deep"),
		filepath.Join(dir, "odd name", "-x"),
		filepath.Join(dir, "deeplink"),
		filepath.Join(links, "repo", "sub"),
		filepath.Join(links, "repo"),
	} {
		want := strings.TrimSpace(gitCmd(t, d, "rev-parse", "--show-prefix"))
		if got := r.Prefix(d); got != want {
			t.Errorf("Prefix(%s) = %q, git says %q", d, got, want)
		}
	}
	for _, d := range []string{filepath.Dir(dir), links, "/"} {
		if got := r.Prefix(d); got != "" {
			t.Errorf("Prefix(%s) = %q outside the checkout, want none", d, got)
		}
	}
}
