package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func forkRepo(t *testing.T) (dir, head string) {
	t.Helper()
	dir = t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q")
	run("config", "user.email", "t@example.com")
	run("config", "user.name", "t")
	for i, name := range []string{"a.txt", "d/b.txt", "d/e/c.txt"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(strings.Repeat("x", i+1)), 0o644)
	}
	run("add", ".")
	run("commit", "-qm", "m")
	return dir, run("rev-parse", "HEAD")
}

// TestForkVerifyAndDiscard: a complete fork verifies; each way a crash can
// leave one half-made fails verification and is discarded (only what the
// owner made) so it can be redone; what others made is left alone.
func TestForkVerifyAndDiscard(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		damage func(t *testing.T, repo, path, admin string)
	}{
		{"no completion mark", func(t *testing.T, repo, path, admin string) { os.Remove(filepath.Join(admin, completeFile)) }},
		{"no index", func(t *testing.T, repo, path, admin string) { os.Remove(filepath.Join(admin, "index")) }},
		{"a file missing", func(t *testing.T, repo, path, admin string) { os.Remove(filepath.Join(path, "d", "e", "c.txt")) }},
		{"no gitdir yet", func(t *testing.T, repo, path, admin string) {
			os.Remove(filepath.Join(admin, "gitdir"))
			os.Remove(filepath.Join(admin, completeFile))
		}},
		{"gitdir cut short", func(t *testing.T, repo, path, admin string) {
			os.WriteFile(filepath.Join(admin, "gitdir"), nil, 0o644)
			os.Remove(filepath.Join(admin, completeFile))
			for _, e := range []string{"a.txt", "d"} {
				os.RemoveAll(filepath.Join(path, e))
			}
		}},
		{".git cut short", func(t *testing.T, repo, path, admin string) {
			os.Remove(filepath.Join(admin, "gitdir"))
			os.Remove(filepath.Join(admin, completeFile))
			os.RemoveAll(path)
			os.MkdirAll(path, 0o755)
			os.WriteFile(filepath.Join(path, ".git"), []byte("gitdir: "), 0o644)
		}},
		{"stale ref lock", func(t *testing.T, repo, path, admin string) {
			// A crash inside the branch's creation: the marked
			// administrative directory is in place (it comes first),
			// nothing else is written yet.
			ents, _ := os.ReadDir(admin)
			for _, e := range ents {
				if e.Name() != ownerFile {
					os.RemoveAll(filepath.Join(admin, e.Name()))
				}
			}
			os.RemoveAll(path)
			ref := filepath.Join(repo, ".git", "refs", "heads", "feature", "x")
			b, _ := os.ReadFile(ref)
			os.Remove(ref)
			os.WriteFile(ref+".lock", b, 0o644)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo, head := forkRepo(t)
			path := filepath.Join(repo, ".worktrees", "x")
			a, err := AddWorktreeWith(ctx, repo, path, "feature/x", AddOptions{Owner: "o1", Commit: head})
			if err != nil {
				t.Fatal(err)
			}
			if err := VerifyFork(repo, path, "feature/x"); err != nil {
				t.Fatalf("complete fork: %v", err)
			}
			c.damage(t, repo, path, a.GitDir)
			if err := VerifyFork(repo, path, "feature/x"); !errors.Is(err, ErrIncomplete) {
				t.Fatalf("damaged fork verified: %v", err)
			}
			if err := Discard(repo, path, "feature/x", head, "someone-else"); err == nil {
				t.Fatal("discarded a fork of another owner")
			}
			if err := Discard(repo, path, "feature/x", head, "o1"); err != nil {
				t.Fatal(err)
			}
			if _, err := AddWorktreeWith(ctx, repo, path, "feature/x", AddOptions{Owner: "o1", Commit: head}); err != nil {
				t.Fatalf("redo after discard: %v", err)
			}
			if err := VerifyFork(repo, path, "feature/x"); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("git", "-C", path, "status", "--porcelain").CombinedOutput()
			if err != nil || len(strings.TrimSpace(string(out))) != 0 {
				t.Fatalf("git status in the redone fork: %v %q", err, out)
			}
		})
	}
}

// TestDiscardLeavesOthersAlone: a directory, branch or lock planbridge did
// not make is never removed.
func TestDiscardLeavesOthersAlone(t *testing.T) {
	repo, head := forkRepo(t)
	path := filepath.Join(repo, ".worktrees", "x")
	os.MkdirAll(path, 0o755)
	os.WriteFile(filepath.Join(path, "mine.txt"), []byte("keep"), 0o644)
	if err := Discard(repo, path, "feature/x", head, "o1"); err == nil {
		t.Fatal("discarded a directory nobody marked")
	}
	if _, err := os.Stat(filepath.Join(path, "mine.txt")); err != nil {
		t.Fatal("removed a file it did not make")
	}
	os.RemoveAll(path)
	ref := filepath.Join(repo, ".git", "refs", "heads", "feature", "x")
	os.MkdirAll(filepath.Dir(ref), 0o755)
	os.WriteFile(ref+".lock", []byte(strings.Repeat("0", 40)+"\n"), 0o644)
	if err := Discard(repo, path, "feature/x", head, "o1"); err == nil {
		t.Fatal("removed a ref lock of another writer")
	}
	if _, err := os.Stat(ref + ".lock"); err != nil {
		t.Fatal("the other writer's lock is gone")
	}
	// A lock whose content is the base, and then a branch at the base, that
	// a person (or their git) made while no attempt of this owner got as
	// far as its marked administrative directory: not ours, left alone.
	os.WriteFile(ref+".lock", []byte(head+"\n"), 0o644)
	if err := Discard(repo, path, "feature/x", head, "o1"); err == nil {
		t.Fatal("removed a ref lock at the base that no attempt of o1 made")
	}
	if _, err := os.Stat(ref + ".lock"); err != nil {
		t.Fatal("the other writer's lock at the base is gone")
	}
	os.Remove(ref + ".lock")
	cmd := exec.Command("git", "-C", repo, "branch", "feature/x")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git branch: %v\n%s", err, out)
	}
	if err := Discard(repo, path, "feature/x", head, "o1"); err == nil || !strings.Contains(err.Error(), "left alone") {
		t.Fatalf("discard with a person's branch at the base: %v", err)
	}
	if out, err := exec.Command("git", "-C", repo, "rev-parse", "--verify", "-q", "refs/heads/feature/x").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != head {
		t.Fatalf("the person's branch feature/x was deleted: %v %s", err, out)
	}
	// The same branch made by this owner's attempt (marked administrative
	// directory in place) is discarded.
	os.Remove(filepath.Join(repo, ".git", "refs", "heads", "feature", "x"))
	exec.Command("git", "-C", repo, "pack-refs", "--all").Run()
	if _, err := AddWorktreeWith(context.Background(), repo, path, "feature/x", AddOptions{Owner: "o1", Commit: head}); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(repo, ".git", "worktrees", "x", completeFile))
	if err := Discard(repo, path, "feature/x", head, "o1"); err != nil {
		t.Fatalf("discard of o1's own attempt: %v", err)
	}
	if out, err := exec.Command("git", "-C", repo, "rev-parse", "--verify", "-q", "refs/heads/feature/x").CombinedOutput(); err == nil {
		t.Fatalf("o1's branch survived its discard: %s", out)
	}
}

// TestAddCrashLeavesNoOrphan: a SIGKILL at each point AddWorktreeWith can
// be cut (before the owner mark, after it, after the checkout) leaves
// nothing that blocks or confuses the retry: Discard removes what the
// owner began, the redone fork gets the same administrative name, and no
// unmarked .git/worktrees entry or staging directory remains.
func TestAddCrashLeavesNoOrphan(t *testing.T) {
	if fp := os.Getenv("PB_WORKTREE_CRASH_AT"); fp != "" {
		repo, head := os.Getenv("PB_WORKTREE_REPO"), os.Getenv("PB_WORKTREE_HEAD")
		_, err := AddWorktreeWith(context.Background(), repo, filepath.Join(repo, ".worktrees", "x"), "feature/x",
			AddOptions{Owner: "o1", Commit: head, Failpoint: func(name string) {
				if name == fp {
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {}
				}
			}})
		t.Fatalf("the failpoint %s was never reached (err %v)", fp, err)
	}
	for _, fp := range []string{"worktree.staged", "worktree.admin", "worktree.checkout"} {
		t.Run(fp, func(t *testing.T) {
			repo, head := forkRepo(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestAddCrashLeavesNoOrphan$")
			cmd.Env = append(os.Environ(), "PB_WORKTREE_CRASH_AT="+fp, "PB_WORKTREE_REPO="+repo, "PB_WORKTREE_HEAD="+head)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the child was not killed at %s: %v\n%s", fp, err, out)
			}
			path := filepath.Join(repo, ".worktrees", "x")
			if err := VerifyFork(repo, path, "feature/x"); !errors.Is(err, ErrIncomplete) {
				t.Fatalf("a fork cut at %s verified: %v", fp, err)
			}
			if err := Discard(repo, path, "feature/x", head, "o1"); err != nil {
				t.Fatalf("discard after a crash at %s: %v", fp, err)
			}
			a, err := AddWorktreeWith(context.Background(), repo, path, "feature/x", AddOptions{Owner: "o1", Commit: head})
			if err != nil {
				t.Fatalf("redo after a crash at %s: %v", fp, err)
			}
			if a.Name != "x" {
				t.Errorf("the redone fork's administrative directory is %q, not x: an orphan holds the name", a.Name)
			}
			var names []string
			ents, _ := os.ReadDir(filepath.Join(repo, ".git", "worktrees"))
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if len(names) != 1 || names[0] != "x" {
				t.Errorf(".git/worktrees holds %v after the retry, want [x]", names)
			}
			if m, _ := filepath.Glob(filepath.Join(repo, ".git", "planbridge-staging-*")); len(m) != 0 {
				t.Errorf("staging left behind: %v", m)
			}
			if err := VerifyFork(repo, path, "feature/x"); err != nil {
				t.Fatal(err)
			}
			list, err := exec.Command("git", "-C", repo, "worktree", "list", "--porcelain").CombinedOutput()
			if err != nil || strings.Count(string(list), "worktree ") != 2 || strings.Contains(string(list), "prunable") {
				t.Errorf("git worktree list: %v\n%s", err, list)
			}
			st, err := exec.Command("git", "-C", path, "status", "--porcelain").CombinedOutput()
			if err != nil || len(strings.TrimSpace(string(st))) != 0 {
				t.Errorf("git status in the redone fork: %v %q", err, st)
			}
		})
	}
}
