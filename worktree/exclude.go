package worktree

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// forkDir is the directory under a checkout's root that [DefaultPath] puts
// forks in.
const forkDir = ".worktrees"

// ignoredAtRoot reports whether the top-level directory name of the
// checkout is ignored by core.excludesFile, $GIT_COMMON_DIR/info/exclude or
// the root .gitignore, with git's precedence (the status walk's matcher).
func (r *Repo) ignoredAtRoot(name string) bool {
	excludes := &ignoreList{patterns: readIgnoreFile(r.cfg.excludesFile, false)}
	ign := &ignoreList{parent: excludes, patterns: readIgnoreFile(filepath.Join(r.CommonDir, "info", "exclude"), false)}
	if ps := readIgnoreFile(filepath.Join(r.Root, ".gitignore"), true); len(ps) > 0 {
		ign = &ignoreList{parent: ign, patterns: ps}
	}
	return ign.excluded(name, true)
}

// ExcludeForks makes `git status` in the checkout containing repoDir stop
// listing the forks directory (`?? .worktrees/`): unless that directory is
// already ignored or the line is there (a .gitignore may re-include it),
// it appends the line `/.worktrees/` to the repository's info/exclude
// (shared by all its worktrees; created if missing). It is idempotent, runs no git helper, and never follows a symbolic link at
// info/exclude (one is refused with an error, nothing written). It reports
// whether it wrote.
func ExcludeForks(repoDir string) (bool, error) {
	r, err := Open(repoDir)
	if err != nil {
		return false, err
	}
	defer r.Close()
	if r.ignoredAtRoot(forkDir) {
		return false, nil
	}
	info := filepath.Join(r.CommonDir, "info")
	if err := os.MkdirAll(info, 0o777); err != nil {
		return false, fmt.Errorf("worktree: exclude %s: %w", forkDir, err)
	}
	name := filepath.Join(info, "exclude")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o666)
	if err != nil {
		return false, fmt.Errorf("worktree: exclude %s: %w", forkDir, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false, fmt.Errorf("worktree: exclude %s: %s is not a regular file", forkDir, name)
	}
	old, err := io.ReadAll(f)
	if err != nil {
		return false, fmt.Errorf("worktree: exclude %s: %w", forkDir, err)
	}
	line := "/" + forkDir + "/\n"
	if bytes.HasPrefix(old, []byte(line)) || bytes.Contains(old, []byte("\n"+line)) {
		return false, nil // ours, overridden by a .gitignore that re-includes it
	}
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		line = "\n" + line
	}
	if _, err := f.Write([]byte(line)); err != nil { // at the end: ReadAll read to it
		return false, fmt.Errorf("worktree: exclude %s: %w", forkDir, err)
	}
	if err := f.Sync(); err != nil {
		return false, fmt.Errorf("worktree: exclude %s: %w", forkDir, err)
	}
	return true, nil
}
