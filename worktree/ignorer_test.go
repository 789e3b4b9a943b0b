package worktree

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestIgnorerOracle compares Ignored with git check-ignore --no-index.
func TestIgnorerOracle(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir+"/xdg", "GIT_CONFIG_NOSYSTEM=1")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	run("init", "-q")
	files := map[string]string{
		".gitignore":          "*.log\nbuild/\n!keep.log\n/top.txt\n",
		"sub/.gitignore":      "local/\n*.tmp\n!important.tmp\n",
		".git/info/exclude":   "secret*\n",
		"sub/deep/.gitignore": "!again.log\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	paths := []string{"a.log", "keep.log", "build", "sub/build", "top.txt", "sub/top.txt", "sub/local", "sub/x.tmp",
		"sub/important.tmp", "secret.go", "sub/deep/again.log", "sub/deep/other.log", "src/main.go", "sub/deep/x.tmp"}
	dirs := map[string]bool{"build": true, "sub/build": true, "sub/local": true}
	for _, p := range paths {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if dirs[p] {
			os.MkdirAll(full, 0o755)
		} else {
			os.WriteFile(full, []byte("x\n"), 0o644)
		}
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	g := r.Ignorer()
	ignoredCount := 0
	for _, p := range paths {
		arg := p
		if dirs[p] {
			arg += "/"
		}
		want := strings.TrimSpace(run("check-ignore", "--no-index", arg)) == arg
		if want {
			ignoredCount++
		}
		if got := g.Ignored(p, dirs[p]); got != want {
			t.Errorf("%s: Ignored=%v, git check-ignore=%v", p, got, want)
		}
	}
	if ignoredCount < 5 || ignoredCount > len(paths)-4 {
		t.Errorf("oracle says %d of %d ignored: the fixture does not exercise both sides", ignoredCount, len(paths))
	}
	if !g.Ignored(".git", true) || !g.Ignored(".git/config", false) {
		t.Error(".git not ignored")
	}
}
