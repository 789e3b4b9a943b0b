package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitFails(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, gitEnv(t)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Errorf("git %s succeeded, want a refusal:\n%s", strings.Join(args, " "), out)
	}
	return string(out)
}

func TestAddWorktreeGitView(t *testing.T) {
	hermetic(t)
	dir := newRepo(t, map[string]string{
		"README":       "readme\n",
		"bin/run.sh":   "#!/bin/sh\necho run\n",
		"src/a/b.go":   "package a\n",
		"src/c.txt":    "c\n",
		"dirty.txt":    "committed\n",
		"staged.txt":   "committed\n",
		"docs/x.md":    "x\n",
		"space in.txt": "s\n",
		"big.bin":      strings.Repeat("0123456789abcdef", 8<<10),
	})
	os.Chmod(filepath.Join(dir, "bin/run.sh"), 0o755)
	symlink(t, "src/c.txt", filepath.Join(dir, "link"))
	gitCmd(t, dir, "add", "-A")
	gitCmd(t, dir, "commit", "-q", "-m", "exec and symlink")
	gitCmd(t, dir, "gc", "-q") // objects come from a pack
	writeFile(t, dir, "dirty.txt", "uncommitted\n")
	writeFile(t, dir, "staged.txt", "staged\n")
	gitCmd(t, dir, "add", "staged.txt")
	writeFile(t, dir, "untracked.txt", "u\n")
	settle(t, dir)

	added, err := AddWorktree(context.Background(), dir, ".worktrees/feat", "plan/feat")
	if err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(mustEval(t, dir), ".worktrees", "feat")
	if added.Path != wt || added.Branch != "plan/feat" || added.Name != "feat" {
		t.Errorf("Added = %+v", added)
	}
	head := strings.TrimSpace(gitCmd(t, dir, "rev-parse", "HEAD"))
	if added.Commit != head {
		t.Errorf("Commit = %s, want %s", added.Commit, head)
	}
	if added.Files != 10 || added.Copied != 1 {
		// Packed small blobs are inflated; the large clean one is copied.
		t.Errorf("Files = %d, Copied = %d; want 10, 1", added.Files, added.Copied)
	}

	// Our own view first (before git refreshes the new index).
	if got := ourStatus(t, wt); len(got) != 0 {
		t.Errorf("our status of the new worktree: %q", got)
	}
	if out := gitCmd(t, wt, "-c", "core.fsmonitor=false", "status", "--porcelain", "--untracked-files=all"); out != "" {
		t.Errorf("git status of the new worktree:\n%s", out)
	}
	list := gitCmd(t, dir, "worktree", "list", "--porcelain")
	if !strings.Contains(list, "worktree "+wt+"\nHEAD "+head+"\nbranch refs/heads/plan/feat\n") {
		t.Errorf("git worktree list:\n%s", list)
	}
	if b := strings.TrimSpace(gitCmd(t, wt, "rev-parse", "--abbrev-ref", "HEAD")); b != "plan/feat" {
		t.Errorf("branch in worktree = %q", b)
	}
	if c, _ := os.ReadFile(filepath.Join(wt, "dirty.txt")); string(c) != "committed\n" {
		t.Errorf("dirty.txt = %q, want HEAD's content", c)
	}
	if c, _ := os.ReadFile(filepath.Join(wt, "staged.txt")); string(c) != "committed\n" {
		t.Errorf("staged.txt = %q, want HEAD's content", c)
	}
	if c, _ := os.ReadFile(filepath.Join(wt, "big.bin")); string(c) != strings.Repeat("0123456789abcdef", 8<<10) {
		t.Errorf("big.bin differs (%d bytes)", len(c))
	}
	if _, err := os.Lstat(filepath.Join(wt, "untracked.txt")); err == nil {
		t.Error("untracked file was copied into the worktree")
	}
	if fi, err := os.Stat(filepath.Join(wt, "bin/run.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("bin/run.sh lost its executable bit: %v %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(wt, "link")); err != nil || target != "src/c.txt" {
		t.Errorf("link = %q, %v", target, err)
	}
	gitCmd(t, dir, "fsck", "--no-progress")
	if out := gitFails(t, dir, "branch", "-d", "plan/feat"); !strings.Contains(out, "checked out") && !strings.Contains(out, "used by worktree") {
		t.Errorf("git branch -d refused for another reason:\n%s", out)
	}
	gitCmd(t, dir, "stash", "-q")
	if out := gitFails(t, dir, "checkout", "plan/feat"); !strings.Contains(out, "already checked out") && !strings.Contains(out, "already used by worktree") {
		t.Errorf("git checkout refused for another reason:\n%s", out)
	}
	gitCmd(t, dir, "stash", "pop", "-q")

	// Same base name again: the administrative name gets a number.
	added2, err := AddWorktree(context.Background(), dir, filepath.Join(t.TempDir(), "feat"), "feat2")
	if err != nil {
		t.Fatal(err)
	}
	if added2.Name != "feat1" {
		t.Errorf("second administrative name = %q, want feat1", added2.Name)
	}
	gitCmd(t, dir, "worktree", "remove", wt)
	gitCmd(t, dir, "worktree", "remove", added2.Path)
	gitCmd(t, dir, "branch", "-d", "plan/feat", "feat2")
	if _, err := os.Stat(wt); err == nil {
		t.Error("git worktree remove left the directory")
	}
}

func TestAddWorktreeRefusals(t *testing.T) {
	hermetic(t)
	dir := newRepo(t, map[string]string{"a": "a\n"})
	gitCmd(t, dir, "branch", "taken")
	writeFile(t, dir, ".worktrees/busy/file", "x\n")
	before := gitCmd(t, dir, "for-each-ref")
	ctx := context.Background()

	_, err := AddWorktree(ctx, dir, ".worktrees/x", "taken")
	// A branch this package did not make: nothing suggests deleting it.
	if !errors.Is(err, ErrBranchExists) || !strings.Contains(err.Error(), "taken") || strings.Contains(err.Error(), "-D") {
		t.Errorf("existing branch: %v", err)
	}
	_, err = AddWorktree(ctx, dir, ".worktrees/busy", "fresh")
	if !errors.Is(err, ErrPathExists) {
		t.Errorf("non-empty path: %v", err)
	}
	_, err = AddWorktree(ctx, dir, ".worktrees/y", "bad..name")
	if !errors.Is(err, ErrInvalidBranchName) {
		t.Errorf("invalid name: %v", err)
	}
	if after := gitCmd(t, dir, "for-each-ref"); after != before {
		t.Errorf("refs changed by refused adds:\n%s", after)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "worktrees")); err == nil {
		t.Error("a refused add left an administrative directory")
	}

	// An existing fork at the path is refused without a deletion hint;
	// CleanupCommand (what a person runs for a fork they own) removes it.
	if _, err := AddWorktree(ctx, dir, ".worktrees/fork", "fork"); err != nil {
		t.Fatal(err)
	}
	_, err = AddWorktree(ctx, dir, ".worktrees/fork", "fork")
	want := CleanupCommand(mustEval(t, dir), filepath.Join(mustEval(t, dir), ".worktrees", "fork"), "fork")
	if !errors.Is(err, ErrBranchExists) || strings.Contains(err.Error(), "remove") || strings.Contains(err.Error(), "-D") {
		t.Errorf("re-adding a fork: %v", err)
	}
	cmd := exec.Command("sh", "-c", want)
	cmd.Env = gitEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("cleanup command failed: %v\n%s", err, out)
	}
	if strings.Contains(gitCmd(t, dir, "branch"), "fork") {
		t.Error("cleanup command left the branch")
	}

	// Unborn HEAD.
	empty := t.TempDir()
	gitCmd(t, empty, "init", "-q")
	if _, err := AddWorktree(ctx, empty, "wt", "x"); !errors.Is(err, ErrUnbornHead) {
		t.Errorf("unborn HEAD: %v", err)
	}
}

// TestAddWorktreeRefusesRefConflicts: a branch that is a directory of the
// new name, or has it as one, loose or packed, refuses the add before
// anything is written, as git refuses it; a packed one is never given a
// loose ref beside it (a name that is both a ref and a directory of refs,
// which git then cannot read).
func TestAddWorktreeRefusesRefConflicts(t *testing.T) {
	hermetic(t)
	dir := newRepo(t, map[string]string{"a": "a\n"})
	gitCmd(t, dir, "branch", "pk/x")
	gitCmd(t, dir, "branch", "pkd")
	gitCmd(t, dir, "pack-refs", "--all")
	gitCmd(t, dir, "branch", "plan")
	gitCmd(t, dir, "branch", "deep/a/b")
	before := gitCmd(t, dir, "for-each-ref")
	ctx := context.Background()
	for _, name := range []string{"pk/x/y", "pk", "pkd/z", "plan/x", "deep/a", "deep"} {
		_, err := AddWorktree(ctx, dir, ".worktrees/"+strings.ReplaceAll(name, "/", "-"), name)
		if !errors.Is(err, ErrBranchExists) || strings.Contains(err.Error(), "-D") {
			t.Errorf("AddWorktree(%q): %v, want a refusal naming the branch in the way", name, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, ".git", "refs", "heads", filepath.FromSlash(name))); err == nil && name != "deep/a" && name != "deep" {
			t.Errorf("AddWorktree(%q) left a loose ref", name)
		}
	}
	if after := gitCmd(t, dir, "for-each-ref"); after != before {
		t.Errorf("refs changed by refused adds:\n%s\nwas\n%s", after, before)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "worktrees")); err == nil {
		t.Error("a refused add left an administrative directory")
	}
}

func TestAddWorktreeCancelled(t *testing.T) {
	hermetic(t)
	files := map[string]string{}
	for i := 0; i < 200; i++ {
		files[filepath.Join("d", strings.Repeat("x", i%7+1), "f"+strings.Repeat("y", i%13)+".txt")] = "x\n"
	}
	dir := newRepo(t, files)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := AddWorktree(ctx, dir, ".worktrees/c", "c"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled add: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".worktrees")); err == nil {
		t.Error("cancelled add left its directory")
	}
	if strings.Contains(gitCmd(t, dir, "branch"), " c\n") {
		t.Error("cancelled add left its branch")
	}
	if out := gitCmd(t, dir, "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 1 {
		t.Errorf("cancelled add left a registered worktree:\n%s", out)
	}
}

func TestAddWorktreeRunsNoHelper(t *testing.T) {
	dir, marker := hostileRepo(t)
	added, err := AddWorktree(context.Background(), dir, ".worktrees/h", "h")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("AddWorktree ran a repository helper (marker exists)")
	}
	if c, _ := os.ReadFile(filepath.Join(added.Path, "d/b.txt")); string(c) != "b\n" {
		t.Errorf("d/b.txt = %q, want HEAD's content", c)
	}
	if got := ourStatus(t, added.Path); len(got) != 0 {
		t.Errorf("status of the new worktree: %q", got)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("Status ran a repository helper (marker exists)")
	}
}

// TestAddWorktreeLooseCopies covers the copy path for loose objects and
// for a file modified in the source checkout (never copied).
func TestAddWorktreeLooseCopies(t *testing.T) {
	hermetic(t)
	dir := newRepo(t, map[string]string{"a.txt": "a\n", "b/c.txt": "c\n", "d.txt": "d\n"})
	writeFile(t, dir, "d.txt", "dirty\n")
	settle(t, dir)
	added, err := AddWorktree(context.Background(), dir, "../wt", "loose")
	if err != nil {
		t.Fatal(err)
	}
	if added.Files != 3 || added.Copied != 2 {
		t.Errorf("Files = %d, Copied = %d; want 3, 2", added.Files, added.Copied)
	}
	if c, _ := os.ReadFile(filepath.Join(added.Path, "d.txt")); string(c) != "d\n" {
		t.Errorf("d.txt = %q", c)
	}
	if out := gitCmd(t, added.Path, "status", "--porcelain"); out != "" {
		t.Errorf("git status:\n%s", out)
	}
}

// TestAddWorktreeFromDeltas checks the checkout against git for blobs and
// trees stored as deltas in a pack.
func TestAddWorktreeFromDeltas(t *testing.T) {
	hermetic(t)
	var lines []string
	for i := 0; i < 300; i++ {
		lines = append(lines, "line "+strings.Repeat("x", i%17)+" of a long, similar file")
	}
	files := map[string]string{}
	for i := 0; i < 12; i++ {
		files["sim/f"+string(rune('a'+i))+".txt"] = strings.Join(lines[i:], "\n")
	}
	dir := newRepo(t, files)
	for v := 0; v < 5; v++ {
		lines[v*7] = "changed in version " + string(rune('0'+v))
		writeFile(t, dir, "sim/fa.txt", strings.Join(lines, "\n"))
		writeFile(t, dir, "sim/new"+string(rune('0'+v))+".txt", strings.Join(lines[v:], "\n"))
		gitCmd(t, dir, "add", "-A")
		gitCmd(t, dir, "commit", "-q", "-m", "v")
	}
	gitCmd(t, dir, "gc", "-q", "--aggressive")
	if vp := gitCmd(t, dir, "verify-pack", "-v", filepath.Join(dir, ".git", "objects", "pack", packName(t, dir))); !strings.Contains(vp, "chain length = ") {
		t.Fatalf("fixture has no deltas:\n%s", vp)
	}
	added, err := AddWorktree(context.Background(), dir, ".worktrees/d", "d")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(gitCmd(t, dir, "ls-files")) {
		want := gitCmd(t, dir, "show", "HEAD:"+p)
		if got, _ := os.ReadFile(filepath.Join(added.Path, p)); string(got) != want {
			t.Errorf("%s differs from HEAD", p)
		}
	}
	if out := gitCmd(t, added.Path, "status", "--porcelain"); out != "" {
		t.Errorf("git status:\n%s", out)
	}
	compareStatus(t, dir)
}

func packName(t *testing.T, dir string) string {
	t.Helper()
	des, _ := os.ReadDir(filepath.Join(dir, ".git", "objects", "pack"))
	for _, de := range des {
		if strings.HasSuffix(de.Name(), ".idx") {
			return de.Name()
		}
	}
	t.Fatal("no pack")
	return ""
}
