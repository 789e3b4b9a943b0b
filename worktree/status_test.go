package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// hermetic points HOME and XDG_CONFIG_HOME at empty temporary directories
// and disables the system configuration, for git and for this package.
func hermetic(t *testing.T) (home string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	os.Unsetenv("GIT_CONFIG_GLOBAL")
	return home
}

// newRepo creates a repository with one commit of files.
func newRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q", "-b", "main")
	for p, c := range files {
		writeFile(t, dir, p, c)
	}
	gitCmd(t, dir, "add", "-A")
	gitCmd(t, dir, "commit", "-q", "--allow-empty", "-m", "init")
	return dir
}

// gitStatus returns git's porcelain lines, in git's order.
func gitStatus(t *testing.T, dir string) []string {
	t.Helper()
	out := gitCmd(t, dir, "-c", "core.fsmonitor=false", "status", "--porcelain", "--untracked-files=all", "--no-renames")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func ourStatus(t *testing.T, dir string) []string {
	t.Helper()
	r, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	entries, err := r.Status(context.Background())
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	var lines []string
	for _, e := range entries {
		lines = append(lines, e.Porcelain())
	}
	return lines
}

func compareStatus(t *testing.T, dir string) {
	t.Helper()
	// Ours first: git status refreshes the index, which would hide a wrong
	// racy-git decision of ours.
	ours := ourStatus(t, dir)
	want := gitStatus(t, dir)
	if strings.Join(ours, "\n") != strings.Join(want, "\n") {
		t.Errorf("status mismatch in %s\nours:\n  %s\ngit:\n  %s", dir,
			strings.Join(ours, "\n  "), strings.Join(want, "\n  "))
	}
	// Again after git refreshed the index.
	if again := ourStatus(t, dir); strings.Join(again, "\n") != strings.Join(want, "\n") {
		t.Errorf("status mismatch after git refreshed the index\nours:\n  %s\ngit:\n  %s",
			strings.Join(again, "\n  "), strings.Join(want, "\n  "))
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestStatusOracle(t *testing.T) {
	base := map[string]string{
		"README":          "readme\n",
		"a/b/c.txt":       "c\n",
		"a/b/d.txt":       "d\n",
		"a/e.txt":         "e\n",
		"a.c":             "a.c\n",
		"a0":              "a0\n",
		"mod.txt":         "one\n",
		"del.txt":         "gone soon\n",
		"dir/del/x":       "x\n",
		"dir/del/y":       "y\n",
		"ren/old.txt":     "renamed\n",
		"exec.sh":         "#!/bin/sh\n",
		"build/keep.txt":  "tracked in an ignored dir\n",
		"space name.txt":  "s\n",
		"ünï.txt":         "u\n",
		"typechange":      "file\n",
		".gitignore":      "*.log\n!keep.log\nbuild/\n/anchored\n**/deep/*.o\nnested-ign/\n",
		"sub/.gitignore":  "*.tmp\n!important.tmp\n",
		"wl/.gitignore":   "*\n!*/\n!*.txt\n!.gitignore\n",
		"wl/in.txt":       "x\n",
		"esc/.gitignore":  "\\#hash\n\\!bang\ntrail\\ \nsp  \n[[:digit:]]x\nq?q\n",
		"esc/tracked.txt": "t\n",
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"clean", func(t *testing.T, dir string) {}},
		{"changes", func(t *testing.T, dir string) {
			writeFile(t, dir, "mod.txt", "two\n")
			os.Remove(filepath.Join(dir, "del.txt"))
			os.RemoveAll(filepath.Join(dir, "dir"))
			writeFile(t, dir, "new/deep/er/file.txt", "n\n")
			writeFile(t, dir, "a/b/untracked.txt", "u\n")
			writeFile(t, dir, "staged.txt", "s\n")
			gitCmd(t, dir, "add", "staged.txt")
			writeFile(t, dir, "a/e.txt", "staged change\n")
			gitCmd(t, dir, "add", "a/e.txt")
			writeFile(t, dir, "a/e.txt", "and a worktree change\n")
			writeFile(t, dir, "added-then-deleted", "x\n")
			gitCmd(t, dir, "add", "added-then-deleted")
			os.Remove(filepath.Join(dir, "added-then-deleted"))
			gitCmd(t, dir, "mv", "ren/old.txt", "ren/new.txt")
			gitCmd(t, dir, "rm", "-q", "--cached", "README")
			os.Chmod(filepath.Join(dir, "exec.sh"), 0o755)
			os.Remove(filepath.Join(dir, "typechange"))
			symlink(t, "README", filepath.Join(dir, "typechange"))
			writeFile(t, dir, "space name.txt", "changed\n")
			writeFile(t, dir, "ünï.txt", "changed\n")
			writeFile(t, dir, "new file\twith tab", "x\n")
		}},
		{"ignores", func(t *testing.T, dir string) {
			for _, p := range []string{
				"x.log", "keep.log", "sub/keep.log", "build/new.txt", "anchored", "sub/anchored",
				"p/deep/a.o", "deep/b.o", "p/deep/c.c", "sub/a.tmp", "sub/important.tmp",
				"sub/s2/b.tmp", "sub/s2/important.tmp", "nested-ign/x", "nested-ign/y/z",
				"wl/a.c", "wl/b.txt", "wl/d/e.c", "wl/d/f.txt", "esc/#hash", "esc/!bang",
				"esc/trail ", "esc/sp", "esc/1x", "esc/ax", "esc/qaq", "esc/q/q",
				"info-excluded.txt", "d1/info-dir/x", "global.ign", "g/global.ign", "xdg.ign",
				"neg/a.log", "neg/.gitignore", "neg/sub/b.log",
			} {
				writeFile(t, dir, p, "x\n")
			}
			writeFile(t, dir, "neg/.gitignore", "!*.log\n")
			writeFile(t, dir, "reinc/.gitignore", "ign/\n!ign/keep\n")
			writeFile(t, dir, "reinc/ign/keep", "k\n")
			writeFile(t, dir, "reinc/ign/other", "o\n")
			writeFile(t, dir, ".git/info/exclude", "info-excluded.txt\ninfo-dir/\n")
		}},
		{"symlinks and nested repos", func(t *testing.T, dir string) {
			symlink(t, "a", filepath.Join(dir, "link-to-dir"))
			symlink(t, "missing", filepath.Join(dir, "dangling"))
			symlink(t, "../README", filepath.Join(dir, "sl/link"))
			nested := filepath.Join(dir, "vendor/nested")
			os.MkdirAll(nested, 0o755)
			gitCmd(t, nested, "init", "-q")
			writeFile(t, nested, "inner.txt", "i\n")
			gitCmd(t, dir, "worktree", "add", "-q", "-b", "wt-side", ".worktrees/side")
			writeFile(t, dir, "emptydir/.keep-not", "")
			os.MkdirAll(filepath.Join(dir, "really-empty/sub"), 0o755)
			writeFile(t, dir, "fakegit/.git/notarepo", "x\n")
			writeFile(t, dir, "fakegit/file", "x\n")
		}},
		{"file replaced by dir", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "mod.txt"))
			writeFile(t, dir, "mod.txt/inside", "x\n")
			os.RemoveAll(filepath.Join(dir, "a/b"))
			writeFile(t, dir, "a/b", "now a file\n")
		}},
		{"packed objects", func(t *testing.T, dir string) {
			// Objects in a pack (some as deltas); a staged change
			// invalidates the cache tree so HEAD trees are read from it.
			writeFile(t, dir, "a/b/c.txt", "c\nmore\n")
			gitCmd(t, dir, "commit", "-q", "-am", "second")
			gitCmd(t, dir, "gc", "-q")
			writeFile(t, dir, "a/b/d.txt", "staged\n")
			gitCmd(t, dir, "add", "a/b/d.txt")
			gitCmd(t, dir, "rm", "-q", "--cached", "a/e.txt")
			writeFile(t, dir, "mod.txt", "worktree\n")
		}},
		{"staged then modified, late in the list", func(t *testing.T, dir string) {
			// Many staged paths, then worktree changes to staged paths: the
			// worktree column must survive whatever the list grows to.
			// 100 staged paths, then 100 worktree-only changes earlier in
			// index order (the result list grows and moves), then worktree
			// changes to staged paths: a pointer kept into the list would
			// lose their "M".
			for i := range 100 {
				writeFile(t, dir, fmt.Sprintf("k%03d.txt", i), "committed\n")
			}
			gitCmd(t, dir, "add", ".")
			gitCmd(t, dir, "commit", "-q", "-m", "more files")
			for i := range 100 {
				writeFile(t, dir, fmt.Sprintf("z%03d.txt", i), "staged\n")
			}
			writeFile(t, dir, "README", "staged\n")
			gitCmd(t, dir, "add", ".")
			for i := range 100 {
				writeFile(t, dir, fmt.Sprintf("k%03d.txt", i), "worktree only\n")
			}
			writeFile(t, dir, "z099.txt", "and modified\n")
			writeFile(t, dir, "z000.txt", "and modified\n")
			writeFile(t, dir, "README", "modified\n")
			writeFile(t, dir, "0-untracked-sorts-first-but-lists-last", "u\n")
			writeFile(t, dir, "zz/untracked", "u\n")
		}},
		{"renames", func(t *testing.T, dir string) {
			gitCmd(t, dir, "mv", "ren/old.txt", "ren/new.txt")              // staged rename
			os.Rename(filepath.Join(dir, "a.c"), filepath.Join(dir, "b.c")) // worktree rename
			gitCmd(t, dir, "mv", "a0", "z0")
			writeFile(t, dir, "z0", "renamed and modified\n")
		}},
		{"deletions", func(t *testing.T, dir string) {
			gitCmd(t, dir, "rm", "-q", "del.txt")               // D_
			os.Remove(filepath.Join(dir, "mod.txt"))            // _D
			gitCmd(t, dir, "rm", "-q", "--cached", "a/b/c.txt") // D_ and ??
			writeFile(t, dir, "README", "staged\n")
			gitCmd(t, dir, "add", "README")
			os.Remove(filepath.Join(dir, "README")) // MD
			writeFile(t, dir, "fresh.txt", "x\n")
			gitCmd(t, dir, "add", "fresh.txt")
			os.Remove(filepath.Join(dir, "fresh.txt")) // AD
		}},
		{"type changes", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "typechange"))
			symlink(t, "README", filepath.Join(dir, "typechange"))
			gitCmd(t, dir, "add", "typechange") // T_
			os.Remove(filepath.Join(dir, "a0"))
			symlink(t, "a.c", filepath.Join(dir, "a0")) // _T
			os.Remove(filepath.Join(dir, "a.c"))
			symlink(t, "README", filepath.Join(dir, "a.c"))
			gitCmd(t, dir, "add", "a.c")
			os.Remove(filepath.Join(dir, "a.c"))
			writeFile(t, dir, "a.c", "a file again\n") // TT
		}},
		{"unmerged", func(t *testing.T, dir string) {
			g := func(args ...string) {
				gitCmd(t, dir, append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
			}
			g("checkout", "-q", "-b", "side")
			writeFile(t, dir, "mod.txt", "side\n")
			writeFile(t, dir, "both-added.txt", "side\n")
			os.Remove(filepath.Join(dir, "del.txt"))
			writeFile(t, dir, "exec.sh", "side\n")
			g("add", "-A")
			g("commit", "-q", "-m", "side")
			g("checkout", "-q", "main")
			writeFile(t, dir, "mod.txt", "main\n")
			writeFile(t, dir, "both-added.txt", "main\n")
			writeFile(t, dir, "del.txt", "main changes it\n")
			os.Remove(filepath.Join(dir, "exec.sh"))
			writeFile(t, dir, "README", "main\n")
			g("add", "-A")
			g("commit", "-q", "-m", "main")
			cmd := exec.Command("git", "-c", "user.name=t", "-c", "user.email=t@t", "merge", "-q", "side")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err == nil {
				t.Fatalf("merge did not conflict: %s", out)
			}
			writeFile(t, dir, "a/e.txt", "worktree change during the merge\n")
			writeFile(t, dir, "untracked-during-merge", "u\n")
		}},
		{"racy same second", func(t *testing.T, dir string) {
			// Same size, same second as the index write, mtime put back:
			// only the content (and ctime) differ.
			p := filepath.Join(dir, "mod.txt")
			writeFile(t, dir, "mod.txt", "111\n")
			gitCmd(t, dir, "add", "mod.txt")
			fi, _ := os.Stat(p)
			writeFile(t, dir, "mod.txt", "222\n")
			os.Chtimes(p, fi.ModTime(), fi.ModTime())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := hermetic(t)
			writeFile(t, home, ".gitconfig", "[core]\n\texcludesFile = ~/global-ignore\n")
			writeFile(t, home, "global-ignore", "global.ign\n")
			dir := newRepo(t, base)
			os.Chmod(filepath.Join(dir, "exec.sh"), 0o644)
			tc.setup(t, dir)
			compareStatus(t, dir)
		})
	}
}

func TestStatusXDGDefaultExcludes(t *testing.T) {
	home := hermetic(t)
	writeFile(t, home, ".config/git/ignore", "*.xdg\n")
	dir := newRepo(t, map[string]string{"f": "f\n"})
	writeFile(t, dir, "a.xdg", "x\n")
	writeFile(t, dir, "b.txt", "x\n")
	compareStatus(t, dir)
	if got := ourStatus(t, dir); len(got) != 1 || got[0] != "?? b.txt" {
		t.Errorf("got %q, want only ?? b.txt", got)
	}
}

func TestStatusUnbornAndSubdirOpen(t *testing.T) {
	hermetic(t)
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q")
	writeFile(t, dir, "x/y.txt", "y\n")
	writeFile(t, dir, "z.txt", "z\n")
	gitCmd(t, dir, "add", "x")
	compareStatus(t, dir)
	r, err := Open(filepath.Join(dir, "x"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Root != mustEval(t, dir) {
		t.Errorf("Root = %s, want %s", r.Root, dir)
	}
	b, h, err := r.Head()
	if err != nil || h != "" || b == "" {
		t.Errorf("Head() = %q, %q, %v; want a branch with no commit", b, h, err)
	}
}

func TestStatusLinkedWorktree(t *testing.T) {
	hermetic(t)
	dir := newRepo(t, map[string]string{"a": "a\n", "d/b": "b\n"})
	wt := filepath.Join(t.TempDir(), "wt")
	gitCmd(t, dir, "worktree", "add", "-q", "-b", "side", wt)
	writeFile(t, wt, "a", "changed\n")
	writeFile(t, wt, "d/new", "n\n")
	compareStatus(t, wt)
	r, err := Open(filepath.Join(wt, "d"))
	if err != nil {
		t.Fatal(err)
	}
	b, h, err := r.Head()
	want := strings.TrimSpace(gitCmd(t, wt, "rev-parse", "HEAD"))
	if err != nil || b != "side" || h != want {
		t.Errorf("Head() = %q, %q, %v; want side, %s", b, h, err, want)
	}
	br, err := r.Branches()
	if err != nil || strings.Join(br, ",") != "main,side" {
		t.Errorf("Branches() = %v, %v", br, err)
	}
}

func TestStatusCancelled(t *testing.T) {
	hermetic(t)
	dir := newRepo(t, map[string]string{"a": "a\n"})
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Status(ctx); err == nil {
		t.Error("Status with a cancelled context succeeded")
	}
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	e, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// hostileRepo configures an fsmonitor hook, a clean filter for every path
// and a post-checkout hook, each of which creates marker when run.
func hostileRepo(t *testing.T) (dir, marker string) {
	t.Helper()
	hermetic(t)
	dir = newRepo(t, map[string]string{"a.txt": "a\n", "d/b.txt": "b\n"})
	marker = filepath.Join(t.TempDir(), "marker")
	script := filepath.Join(t.TempDir(), "hook.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$0 $*\" >> "+marker+"\ncat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, dir, "config", "core.fsmonitor", script)
	gitCmd(t, dir, "config", "filter.evil.clean", script)
	gitCmd(t, dir, "config", "filter.evil.smudge", script)
	gitCmd(t, dir, "config", "filter.evil.required", "true")
	writeFile(t, dir, ".gitattributes", "* filter=evil\n")
	hook := filepath.Join(dir, ".git", "hooks", "post-checkout")
	os.MkdirAll(filepath.Dir(hook), 0o755)
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Make every entry need hashing: stat data no longer matches.
	time.Sleep(10 * time.Millisecond)
	writeFile(t, dir, "a.txt", "a\n")
	writeFile(t, dir, "d/b.txt", "changed\n")
	return dir, marker
}

func TestStatusRunsNoHelper(t *testing.T) {
	dir, marker := hostileRepo(t)
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := r.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("Status ran a repository helper (marker exists)")
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Porcelain())
	}
	want := []string{"?? .gitattributes", " M d/b.txt"}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	// Sanity check of the fixture: git itself does run the helper.
	cmd := exec.Command("git", "status", "--porcelain")
	cmd.Dir, cmd.Env = dir, gitEnv(t)
	cmd.Run()
	if _, err := os.Stat(marker); err != nil {
		t.Error("fixture is not hostile: git status did not create the marker")
	}
}

func TestHeadDetachedAndPackedBranches(t *testing.T) {
	hermetic(t)
	dir := newRepo(t, map[string]string{"a": "a\n"})
	gitCmd(t, dir, "branch", "feature/one")
	gitCmd(t, dir, "branch", "two")
	gitCmd(t, dir, "pack-refs", "--all")
	head := strings.TrimSpace(gitCmd(t, dir, "rev-parse", "HEAD"))
	gitCmd(t, dir, "checkout", "-q", "--detach")
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, h, err := r.Head()
	if err != nil || b != "" || h != head {
		t.Errorf("Head() = %q, %q, %v; want detached at %s", b, h, err, head)
	}
	br, err := r.Branches()
	if err != nil || strings.Join(br, ",") != "feature/one,main,two" {
		t.Errorf("Branches() = %v, %v", br, err)
	}
	writeFile(t, dir, "a", "changed\n")
	compareStatus(t, dir)
	if _, err := AddWorktree(context.Background(), dir, "wt", "two"); !errors.Is(err, ErrBranchExists) {
		t.Errorf("packed branch not seen as existing: %v", err)
	}
}
