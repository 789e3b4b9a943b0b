package handoff

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	run("config", "user.email", "t@example.com")
	run("config", "user.name", "t")
	for name, content := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
	}
	run("add", ".")
	run("commit", "-qm", "m")
	run("branch", "taken")
	return dir
}

func TestBranchBlocker(t *testing.T) {
	root := gitRepo(t, map[string]string{"a.txt": "a\n"})
	os.MkdirAll(filepath.Join(root, ".worktrees", "occupied"), 0o755)
	for _, c := range []struct{ branch, want string }{
		{"feature/free", ""},
		{"taken", "branch taken already exists; choose another branch name"},
		{"bad..name", `branch "bad..name": `},
		{"", `branch "": `},
		{"plan/occupied", filepath.Join(root, ".worktrees", "occupied") + " already exists; choose another branch name, or move that directory away yourself"},
	} {
		got := BranchBlocker(root, c.branch)
		if c.want == "" && got != "" || c.want != "" && !strings.HasPrefix(got, c.want) {
			t.Errorf("BranchBlocker(%q) = %q, want %q", c.branch, got, c.want)
		}
		if strings.Contains(got, "-D") || strings.Contains(got, "rm ") {
			t.Errorf("BranchBlocker(%q) suggests a deletion: %q", c.branch, got)
		}
	}
}

func TestWorktreeNotice(t *testing.T) {
	ctx := context.Background()
	if n, noGit := WorktreeNotice(ctx, t.TempDir(), nil); !noGit || !strings.Contains(n, "not a git checkout") {
		t.Errorf("outside git: %q %v", n, noGit)
	}
	root := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	if n, noGit := WorktreeNotice(ctx, root, nil); noGit || n != "the fork starts from HEAD; no uncommitted changes stay behind" {
		t.Errorf("clean: %q %v", n, noGit)
	}
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("A\n"), 0o644)
	os.WriteFile(filepath.Join(root, "new.txt"), []byte("n\n"), 0o644)
	if n, _ := WorktreeNotice(ctx, root, nil); !strings.HasPrefix(n, "2 uncommitted change(s) stay behind") {
		t.Errorf("two changes: %q", n)
	}
	// What the session edited is restored in the fork: it does not stay behind.
	if n, _ := WorktreeNotice(ctx, root, []string{"a.txt"}); !strings.HasPrefix(n, "1 uncommitted change(s) stay behind") {
		t.Errorf("one edited by the session: %q", n)
	}
}

func TestRestoreEdits(t *testing.T) {
	root := gitRepo(t, map[string]string{"a.txt": "a\n", "d/b.sh": "b\n"})
	ws := filepath.Join(root, "d") // the workspace may be below the root
	os.WriteFile(filepath.Join(root, "d", "b.sh"), []byte("edited\n"), 0o755)
	os.Chmod(filepath.Join(root, "d", "b.sh"), 0o755)
	os.WriteFile(filepath.Join(root, "d", "secret"), []byte("not edited\n"), 0o644)
	outside := filepath.Join(t.TempDir(), "outside.txt")
	os.WriteFile(outside, []byte("outside\n"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(root, "d", "link"))
	fork := t.TempDir()
	os.MkdirAll(filepath.Join(fork, "d"), 0o755)
	paths := []string{"b.sh", "gone.txt", "../../" + filepath.Base(filepath.Dir(outside)) + "/outside.txt", "link"}
	if err := RestoreEdits(ws, root, fork, paths); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(fork, "d", "b.sh"))
	if b, _ := os.ReadFile(filepath.Join(fork, "d", "b.sh")); err != nil || string(b) != "edited\n" || fi.Mode().Perm() != 0o755 {
		t.Errorf("the edited file: %q %v %v", b, fi, err)
	}
	for _, not := range []string{"d/secret", "d/link", "d/gone.txt", "outside.txt"} {
		if _, err := os.Lstat(filepath.Join(fork, not)); err == nil {
			t.Errorf("%s was copied into the fork", not)
		}
	}
	ents, _ := os.ReadDir(fork)
	if len(ents) != 1 {
		t.Errorf("the fork holds %v", ents)
	}
}

func TestForkBlockers(t *testing.T) {
	if got := ForkBlockers(ForkState{}); got == nil || len(got) != 0 {
		t.Errorf("none: %#v", got)
	}
	got := ForkBlockers(ForkState{Queued: 2, Busy: true, GoalUnfinished: true, NoGit: true})
	want := []string{"pending input (2 queued follow-up(s)): resolve it before forking", "a request is running",
		"an unfinished Goal is active in this session", NotGitBlocker}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("all: %q", got)
	}
	if got := ForkBlockers(ForkState{Busy: true}); len(got) != 1 || got[0] != "a request is running" {
		t.Errorf("busy: %q", got)
	}
}

// TestForkRecord: the fork's record is the source's as a Here handoff
// from its first step; the source's record is untouched.
func TestForkRecord(t *testing.T) {
	rec := newRecord(Worktree, Summary, Goal)
	rec.Step, rec.Reason, rec.Tries, rec.Summary, rec.GoalID = StepForked, "boom", 2, "sum", "g-1"
	rec.Fork = Fork{Session: "s-f", Dir: "/r/.worktrees/x", Branch: "feature/x", Owner: "o", Base: "abc", Point: 7}
	f := ForkRecord(rec)
	if f.Selection.Location != Here || f.Step != StepRecorded || f.Fork != (Fork{}) || f.Reason != "" || f.Tries != 0 {
		t.Errorf("fork record %+v", f)
	}
	if f.Selection.Context != Summary || f.Selection.Execution != Goal || f.Summary != "sum" || f.GoalID != "g-1" || f.Artifact != rec.Artifact {
		t.Errorf("the fork lost what it runs with: %+v", f)
	}
	if rec.Selection.Location != Worktree || rec.Step != StepForked || rec.Fork.Session != "s-f" {
		t.Errorf("the source's record changed: %+v", rec)
	}
}

// TestBranchBlockerAgreesWithGit asks real git, in a fresh copy of the
// repository for each name, whether `git branch NAME` succeeds: the card's
// blocker is empty exactly when it does (a branch that is a directory of
// the name or has it as a directory, loose or packed, stops it; a tag or
// a remote-tracking ref of the same name does not).
func TestBranchBlockerAgreesWithGit(t *testing.T) {
	git := func(dir string, args ...string) error {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("git %v: %v: %s", args, err, out)
		}
		return nil
	}
	setup := func(t *testing.T) string {
		root := gitRepo(t, map[string]string{"a.txt": "a\n"})
		for _, args := range [][]string{
			{"branch", "plan"}, {"branch", "deep/a/b"}, {"branch", "pk/x"}, {"branch", "pkd"},
			{"tag", "tagonly"}, {"update-ref", "refs/remotes/origin/remote-only", "HEAD"},
			{"pack-refs", "--all"},
			{"branch", "loose/x/y"},
		} {
			if err := git(root, args...); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	for _, name := range []string{
		"plan/x", "plan", "deep/a", "deep", "deep/a/b/c", "deep/b", "pk/x/y", "pk", "pk/x", "pkd",
		"loose/x", "loose", "loose/x/y/z", "loose/z",
		"tagonly", "remote-only", "origin/remote-only", "refs/heads/q", "é/ü", "free",
	} {
		t.Run(name, func(t *testing.T) {
			root := setup(t)
			blocker := BranchBlocker(root, name)
			gitErr := git(root, "branch", name)
			if (blocker == "") != (gitErr == nil) {
				t.Errorf("BranchBlocker(%q) = %q, but git branch: %v", name, blocker, gitErr)
			}
		})
	}
}
