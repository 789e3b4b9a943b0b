package worktree

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"golang.org/x/sys/unix"
)

// benchFiles is the size of the generated benchmark repository.
const benchFiles = 20000

var bench struct {
	once sync.Once
	tmp  string // removed by TestMain
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bench.tmp != "" {
		os.RemoveAll(bench.tmp)
	}
	os.Exit(code)
}

// benchRepo returns a committed, settled repository of benchFiles files in
// 20×10 directories (some executable, some ignored files beside them),
// built once per test binary run with the git CLI.
func benchRepo(b *testing.B) string {
	b.Helper()
	hermetic := func() {
		b.Setenv("HOME", filepath.Join(bench.tmp, "home"))
		b.Setenv("XDG_CONFIG_HOME", filepath.Join(bench.tmp, "home", ".config"))
		b.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	}
	bench.once.Do(func() {
		if bench.tmp, bench.err = os.MkdirTemp("", "worktree-bench-"); bench.err != nil {
			return
		}
		hermetic()
		dir := filepath.Join(bench.tmp, "repo")
		rng := rand.New(rand.NewSource(1))
		line := []byte("the quick brown fox jumps over the lazy dog 0123456789\n")
		n := 0
		for d := 0; d < 20; d++ {
			for s := 0; s < 10; s++ {
				sub := filepath.Join(dir, fmt.Sprintf("pkg%02d", d), fmt.Sprintf("mod%d", s))
				if bench.err = os.MkdirAll(sub, 0o755); bench.err != nil {
					return
				}
				for f := 0; f < benchFiles/200; f++ {
					var content []byte
					for l := rng.Intn(40) + 1; l > 0; l-- {
						content = append(content, line...)
					}
					content = strconv.AppendInt(content, int64(n), 10)
					mode := os.FileMode(0o644)
					if f%50 == 0 {
						mode = 0o755
					}
					if bench.err = os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%03d.go", f)), content, mode); bench.err != nil {
						return
					}
					n++
				}
				if s == 0 {
					os.WriteFile(filepath.Join(sub, "generated.o"), []byte("obj"), 0o644)
				}
			}
		}
		os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.o\nbuild/\n"), 0o644)
		for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "bench"}} {
			gitCmd(b, dir, args...)
		}
		settle(b, dir)
		unix.Sync() // no writeback of the setup during the timed runs
		bench.dir = dir
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	hermetic()
	return bench.dir
}

func BenchmarkStatus(b *testing.B) {
	dir := benchRepo(b)
	ctx := context.Background()
	for b.Loop() {
		r, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		entries, err := r.Status(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(entries) != 0 {
			b.Fatalf("benchmark repository is not clean: %v", entries[0])
		}
	}
}

func BenchmarkGitStatusCLI(b *testing.B) {
	dir := benchRepo(b)
	for b.Loop() {
		cmd := exec.Command("git", "-c", "core.fsmonitor=false", "status", "--porcelain")
		cmd.Dir, cmd.Env = dir, gitEnv(b)
		out, err := cmd.Output()
		if err != nil || len(out) != 0 {
			b.Fatalf("git status: %v %q", err, out)
		}
	}
}

func BenchmarkGoGitStatus(b *testing.B) {
	dir := benchRepo(b)
	for b.Loop() {
		repo, err := git.PlainOpen(dir)
		if err != nil {
			b.Fatal(err)
		}
		w, err := repo.Worktree()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.Status(); err != nil {
			b.Fatal(err)
		}
	}
}

// removeWorktree deletes a linked worktree and its branch without git, so
// that cleanup costs the same for both add benchmarks, then flushes dirty
// pages so that one iteration's writeback does not slow the next.
func removeWorktree(b *testing.B, repo, path, name, branch string) {
	b.Helper()
	for _, p := range []string{path, filepath.Join(repo, ".git", "worktrees", name), filepath.Join(repo, ".git", "refs", "heads", branch)} {
		if err := os.RemoveAll(p); err != nil {
			b.Fatal(err)
		}
	}
	unix.Sync()
}

// BenchmarkAddWorktreeVsGit forks the 20k-file repository with AddWorktree
// and with `git worktree add`, alternating which goes first each round so
// neither pays for the other's deletions (ext4 inode reuse and writeback
// make a fixed order unfair), and reports both as ours-ns/op and git-ns/op.
func BenchmarkAddWorktreeVsGit(b *testing.B) {
	dir := benchRepo(b)
	ctx := context.Background()
	var ours, git time.Duration
	rounds := 0
	runOurs := func(branch string) {
		path := filepath.Join(bench.tmp, branch)
		t0 := time.Now()
		a, err := AddWorktree(ctx, dir, path, branch)
		ours += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if a.Files != benchFiles+1 {
			b.Fatalf("wrote %d files", a.Files)
		}
		removeWorktree(b, dir, path, a.Name, branch)
	}
	runGit := func(branch string) {
		path := filepath.Join(bench.tmp, branch)
		cmd := exec.Command("git", "-c", "core.fsmonitor=false", "worktree", "add", "-q", "-b", branch, path, "HEAD")
		cmd.Dir, cmd.Env = dir, gitEnv(b)
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		git += time.Since(t0)
		if err != nil {
			b.Fatalf("git worktree add: %v\n%s", err, out)
		}
		removeWorktree(b, dir, path, branch, branch)
	}
	// An untimed warm-up pair: the fresh repository is still being written back.
	runOurs("warm-ours")
	runGit("warm-git")
	ours, git = 0, 0
	for b.Loop() {
		rounds++
		n := strconv.Itoa(rounds)
		if rounds%2 == 1 {
			runOurs("ours" + n)
			runGit("git" + n)
		} else {
			runGit("git" + n)
			runOurs("ours" + n)
		}
	}
	b.ReportMetric(float64(ours.Nanoseconds())/float64(rounds), "ours-ns/op")
	b.ReportMetric(float64(git.Nanoseconds())/float64(rounds), "git-ns/op")
}
