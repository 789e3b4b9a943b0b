package review

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"planbridge/worktree"
)

// watchRepo is a committed 20k-file checkout with 20 dirty files.
func watchRepo(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	b.Setenv("HOME", dir)
	b.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	repo := filepath.Join(dir, "repo")
	for i := 0; i < 20000; i++ {
		p := filepath.Join(repo, fmt.Sprintf("pkg%02d/mod%d/f%d.go", i%20, i%10, i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("package m\n\nconst C%d = %d\n", i, i)), 0o644)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init"}, {"status", "-s"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	for i := 0; i < 20; i++ {
		os.WriteFile(filepath.Join(repo, fmt.Sprintf("pkg%02d/mod%d/f%d.go", i%20, i%10, i)), []byte("package m // dirty\n"), 0o644)
	}
	return repo
}

// BenchmarkScopeWatch is what holding one implementation bash command to
// its scope costs: a snapshot before it and the comparison after it, on
// a 20k-file checkout with 20 dirty files ([BenchmarkScopeWatchGitStatus]
// is one `git status --porcelain` on the same checkout).
func BenchmarkScopeWatch(b *testing.B) {
	repo := watchRepo(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		r, err := worktree.Open(repo)
		if err != nil {
			b.Fatal(err)
		}
		root, _ := os.OpenRoot(repo)
		snap, err := Take(ctx, gitTree{r}, root, nil)
		if err != nil {
			b.Fatal(err)
		}
		if cs, err := snap.Changes(ctx, gitTree{r}, root, nil); err != nil || len(cs) != 0 {
			b.Fatal(cs, err)
		}
		root.Close()
		r.Close()
	}
}

func BenchmarkScopeWatchGitStatus(b *testing.B) {
	repo := watchRepo(b)
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command("git", "status", "--porcelain")
		cmd.Dir = repo
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}
