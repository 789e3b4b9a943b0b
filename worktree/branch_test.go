package worktree

import (
	"errors"
	"os/exec"
	"testing"
)

var branchNames = []string{
	// valid
	"main", "feature/x", "a", "foo-bar", "foo_bar", "v1.2.3", "a/b/c/d",
	"x@y", "@x", "x@", "a@b/c", "{", "}", "a{b}", "foo.bar.baz", "a.lock.b",
	"lockx.lock2", "a-", "a/-b", "a/b-", "#hash", "%", "plan/2026-11-30",
	"héllo", "日本語", "a+b", "a=b", "a,b", "a;b", "a'b", "a\"b", "a<b>",
	"a|b", "a&b", "a!b", "a$b", "a(b)", "a]b", "ab.", "a/.b", // (some invalid: kept for the oracle)
	"HEADx", "xHEAD", "head", "refs/heads/x", "refs", "@@", "a@@{", "a.b/c.d",
	"lock", ".lockx", "a/lock", "x.Lock", "_", "0", "a\u00a0b", "\xff",
	// invalid
	"", "-", "-x", "--x", "HEAD", "@", "a..b", "..", ".", "a.", "a/", "/a",
	"a//b", ".a", "a/.b", "a/b.", "a.lock", "a/b.lock", "a.lock/b", "a b",
	"a\tb", "a\nb", "a\x01b", "a\x7fb", "a~b", "a^b", "a:b", "a?b", "a*b",
	"a[b", "a\\b", "@{", "a@{b", "a@{-1}", "@{-1}", "x/@{u}", "a/./b",
	"a/../b", "./a", "a/..", "~", "^", ":", "?", "*", "[", "\\", " ", "a ",
	" a", "a/ b", "a.lock/", "/", "//", "a///b", "...", "a...b", "x.",
	"foo/bar.lock", "foo/.bar/baz", "a/b/", "@/x", "x/@",
}

func TestValidBranchNameOracle(t *testing.T) {
	if len(branchNames) < 80 {
		t.Fatalf("table has %d names, want at least 80", len(branchNames))
	}
	// Inside a fresh repository (no previous branch) so that git applies
	// its in-repository interpretation, as it would for a real fork.
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q")
	for _, name := range branchNames {
		cmd := exec.Command("git", "check-ref-format", "--branch", name)
		cmd.Dir = dir
		cmd.Env = gitEnv(t)
		gitOK := cmd.Run() == nil
		err := ValidBranchName(name)
		if gitOK != (err == nil) {
			t.Errorf("ValidBranchName(%q) = %v; git check-ref-format --branch accepts: %v", name, err, gitOK)
		}
		if err != nil && !errors.Is(err, ErrInvalidBranchName) {
			t.Errorf("ValidBranchName(%q) error %v does not wrap ErrInvalidBranchName", name, err)
		}
	}
}

func FuzzValidBranchName(f *testing.F) {
	for _, n := range branchNames {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, name string) {
		_ = ValidBranchName(name) // must not panic
	})
}
