package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// wtHermetic isolates git (and the worktree package) from the user's
// configuration.
func wtHermetic(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_AUTHOR_NAME", "t")
	t.Setenv("GIT_AUTHOR_EMAIL", "t@example.com")
	t.Setenv("GIT_COMMITTER_NAME", "t")
	t.Setenv("GIT_COMMITTER_EMAIL", "t@example.com")
}

func wtGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func wtRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	wtGit(t, dir, "init", "-q", "-b", "main")
	for p, c := range map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", ".gitignore": "*.log\n"} {
		wtWrite(t, dir, p, c)
	}
	wtGit(t, dir, "add", "-A")
	wtGit(t, dir, "commit", "-q", "-m", "init")
	return dir
}

func wtWrite(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sortedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

func TestRunStatusMatchesGit(t *testing.T) {
	wtHermetic(t)
	dir := wtRepo(t)
	var stdout, stderr bytes.Buffer
	if code := runStatus([]string{dir}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("clean status: exit %d: %s", code, stderr.String())
	}
	if want := "On branch main\nnothing to commit, working tree clean\n"; stdout.String() != want {
		t.Errorf("clean status = %q, want %q", stdout.String(), want)
	}

	wtWrite(t, dir, "a.txt", "changed\n")
	wtWrite(t, dir, "new/file.txt", "n\n")
	wtWrite(t, dir, "x.log", "ignored\n")
	wtWrite(t, dir, "staged.txt", "s\n")
	wtGit(t, dir, "add", "staged.txt")
	os.Remove(filepath.Join(dir, "d/b.txt"))
	stdout.Reset()
	if code := runStatus([]string{"--porcelain", filepath.Join(dir, "d")}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("status: exit %d: %s", code, stderr.String())
	}
	want := sortedLines(wtGit(t, dir, "-c", "core.fsmonitor=false", "status", "--porcelain", "--untracked-files=all", "--no-renames"))
	if got := sortedLines(stdout.String()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("planbridge status --porcelain:\n%s\ngit:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestStatusPorcelainByteIdentical runs the binary: `planbridge status
// --porcelain` prints exactly what `git status --porcelain
// --untracked-files=all --no-renames` prints (the flags it claims), in
// git's order, for staged-then-modified files, renames, deletions, type
// changes, unmerged paths and untracked files.
func TestStatusPorcelainByteIdentical(t *testing.T) {
	wtHermetic(t)
	dir := wtRepo(t)
	for i := range 60 {
		wtWrite(t, dir, fmt.Sprintf("k%02d.txt", i), "k\n")
	}
	wtWrite(t, dir, "conflict.txt", "base\n")
	wtWrite(t, dir, "link", "a file\n")
	wtWrite(t, dir, "gone.txt", "g\n")
	wtGit(t, dir, "add", "-A")
	wtGit(t, dir, "commit", "-q", "-m", "more")
	wtGit(t, dir, "checkout", "-q", "-b", "side")
	wtWrite(t, dir, "conflict.txt", "side\n")
	wtGit(t, dir, "commit", "-qam", "side")
	wtGit(t, dir, "checkout", "-q", "main")
	wtWrite(t, dir, "conflict.txt", "main\n")
	wtGit(t, dir, "commit", "-qam", "main")
	if out, err := exec.Command("git", "-C", dir, "merge", "-q", "side").CombinedOutput(); err == nil {
		t.Fatalf("merge did not conflict: %s", out)
	}
	for i := range 60 { // staged, then many worktree-only changes before the MM paths
		wtWrite(t, dir, fmt.Sprintf("z%02d.txt", i), "z\n")
	}
	wtGit(t, dir, "add", "z*.txt")
	for i := range 60 {
		wtWrite(t, dir, fmt.Sprintf("k%02d.txt", i), "changed\n")
	}
	wtWrite(t, dir, "z59.txt", "staged, then modified\n")
	wtGit(t, dir, "mv", "d/b.txt", "d/renamed.txt")
	wtGit(t, dir, "rm", "-q", "gone.txt")
	os.Remove(filepath.Join(dir, "a.txt"))
	os.Remove(filepath.Join(dir, "link"))
	os.Symlink("k00.txt", filepath.Join(dir, "link"))
	wtWrite(t, dir, "0-untracked.txt", "u\n")
	wtWrite(t, dir, "new dir/file.txt", "u\n")

	got, err := exec.Command(binary, "status", "--porcelain", dir).Output()
	if err != nil {
		t.Fatalf("planbridge status: %v", err)
	}
	want := wtGit(t, dir, "-c", "core.fsmonitor=false", "status", "--porcelain", "--untracked-files=all", "--no-renames")
	if string(got) != want {
		t.Errorf("planbridge status --porcelain:\n%s\ngit:\n%s", got, want)
	}
	for _, line := range []string{"AM z59.txt", "UU conflict.txt", " T link", "D  gone.txt", " D a.txt", "D  d/b.txt", "A  d/renamed.txt"} {
		if !strings.Contains(want, line+"\n") {
			t.Errorf("the fixture lost %q:\n%s", line, want)
		}
	}
	if !strings.HasSuffix(want, "?? 0-untracked.txt\n?? \"new dir/file.txt\"\n") {
		t.Errorf("git does not list untracked paths last:\n%s", want)
	}
}

func TestRunStatusErrors(t *testing.T) {
	wtHermetic(t)
	var stdout, stderr bytes.Buffer
	if code := runStatus([]string{t.TempDir()}, nil, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "not a git checkout") {
		t.Errorf("outside a repository: exit %d, %q", code, stderr.String())
	}
	if code := runStatus([]string{"a", "b"}, nil, &stdout, &stderr); code != 2 {
		t.Errorf("two directories: exit %d", code)
	}
}

func TestRunWorktreeAdd(t *testing.T) {
	wtHermetic(t)
	dir := wtRepo(t)
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runWorktree([]string{"add", dir, "--branch", "plan/feature-x"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("worktree add: exit %d: %s", code, stderr.String())
	}
	wt := filepath.Join(root, ".worktrees", "feature-x")
	if strings.TrimSpace(stdout.String()) != wt {
		t.Errorf("printed %q, want %s", stdout.String(), wt)
	}
	if list := wtGit(t, dir, "worktree", "list", "--porcelain"); !strings.Contains(list, "worktree "+wt+"\n") || !strings.Contains(list, "branch refs/heads/plan/feature-x\n") {
		t.Errorf("git worktree list:\n%s", list)
	}
	if out := wtGit(t, wt, "status", "--porcelain"); out != "" {
		t.Errorf("git status in the new worktree:\n%s", out)
	}

	explicit := filepath.Join(t.TempDir(), "elsewhere")
	stdout.Reset()
	if code := runWorktree([]string{"add", "--branch", "other", "--path", explicit, dir}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("worktree add --path: exit %d: %s", code, stderr.String())
	}
	if strings.TrimSpace(stdout.String()) != explicit {
		t.Errorf("printed %q, want %s", stdout.String(), explicit)
	}

	stderr.Reset()
	if code := runWorktree([]string{"add", "--branch", "other", dir}, nil, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "already exists") {
		t.Errorf("existing branch: exit %d, %q", code, stderr.String())
	}
	for _, args := range [][]string{{"add", dir}, {"remove", dir}, {}, {"add", "--branch", "bad..name", dir}} {
		if code := runWorktree(args, nil, &stdout, &stderr); code != 2 {
			t.Errorf("runWorktree(%q) = %d, want 2", args, code)
		}
	}
}
