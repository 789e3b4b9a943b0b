package worktree

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitEnv is a hermetic environment for the git CLI: no system or user
// configuration beyond what a test writes into its own HOME.
func gitEnv(t testing.TB) []string {
	home := os.Getenv("HOME")
	return append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1",
		"HOME="+home,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_TERMINAL_PROMPT=0",
	)
}

// gitCmd runs git in dir and returns its standard output; it fails the test
// when git fails.
func gitCmd(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(t)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, msg)
	}
	return string(out)
}

// writeFile creates dir/rel with content and parents.
func writeFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// settle waits until the next second and has git refresh and rewrite the
// index, so no entry is racily clean any more (a source checkout that has
// been left alone for a moment, as a real one has).
func settle(t testing.TB, dir string) {
	t.Helper()
	time.Sleep(1100 * time.Millisecond)
	cmd := exec.Command("git", "update-index", "-q", "--really-refresh")
	cmd.Dir, cmd.Env = dir, gitEnv(t)
	cmd.Run() // exits 1 when files are modified, which is expected
	gitCmd(t, dir, "update-index", "--force-write-index")
}
