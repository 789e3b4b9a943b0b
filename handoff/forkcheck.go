package handoff

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"planbridge/internal/atomicfile"
	"planbridge/worktree"
)

// NotGitBlocker is the fork blocker of a workspace that is no git checkout.
const NotGitBlocker = "the workspace is not a git checkout"

// ForkState is what of a session can refuse a Worktree fork whatever
// the branch.
type ForkState struct {
	Queued         int  // follow-ups waiting in the queue
	Busy           bool // a request is running
	GoalUnfinished bool // the session has an unfinished Goal
	NoGit          bool // the workspace is no git checkout
}

// ForkBlockers names what refuses a fork in st, in the words the card
// shows and the refusal uses (none: an empty slice).
func ForkBlockers(st ForkState) []string {
	out := []string{}
	if st.Queued > 0 {
		out = append(out, fmt.Sprintf("pending input (%d queued follow-up(s)): resolve it before forking", st.Queued))
	}
	if st.Busy {
		out = append(out, "a request is running")
	}
	if st.GoalUnfinished {
		out = append(out, "an unfinished Goal is active in this session")
	}
	if st.NoGit {
		out = append(out, NotGitBlocker)
	}
	return out
}

// BranchBlocker says why a fork on branch cannot start in the checkout at
// root ("" if it can), in the words the card shows and the refusal uses:
// an invalid name, an existing branch (or one git would not create
// beside it: "plan" stops "plan/x", "plan/x/y" stops "plan/x", loose or
// packed), or an existing fork directory
// ([ForkDir]). Checked before acceptance, so that whatever exists at the
// fork's branch or directory afterwards is the fork's own. Nothing it
// names was made by planbridge, so the words suggest no deletion.
func BranchBlocker(root, branch string) string {
	if err := worktree.ValidBranchName(branch); err != nil {
		return fmt.Sprintf("branch %q: %v", branch, err)
	}
	switch have, err := worktree.BranchConflict(root, branch); {
	case err != nil || have == branch:
		return fmt.Sprintf("branch %s already exists; choose another branch name", branch)
	case have != "":
		return fmt.Sprintf("branch %s cannot be created next to the existing branch %s; choose another branch name", branch, have)
	}
	if dir := ForkDir(root, branch); exists(dir) {
		return fmt.Sprintf("%s already exists; choose another branch name, or move that directory away yourself", dir)
	}
	return ""
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// WorktreeNotice is the card's "uncommitted changes stay behind" line for
// the checkout holding workspace, from the status walk (never a git
// helper): the changes other than the files the session edited (edited,
// workspace-relative with slashes), which the fork restores. noGit
// reports that workspace is no git checkout, which blocks a fork.
func WorktreeNotice(ctx context.Context, workspace string, edited []string) (notice string, noGit bool) {
	r, err := worktree.Open(workspace)
	if err != nil {
		return "not a git checkout: Worktree is unavailable", true
	}
	defer r.Close()
	entries, err := r.Status(ctx)
	if err != nil {
		return "could not check for uncommitted changes: " + err.Error(), false
	}
	restored := map[string]bool{}
	for _, p := range edited {
		restored[p] = true
	}
	behind := 0
	for _, e := range entries {
		if !restored[e.Path] {
			behind++
		}
	}
	if behind == 0 {
		return "the fork starts from HEAD; no uncommitted changes stay behind", false
	}
	return fmt.Sprintf("%d uncommitted change(s) stay behind (the fork starts from HEAD; files this session edited are restored)", behind), false
}

// RestoreEdits copies the files the session edited (paths, relative to
// workspace, with slashes) from the source checkout at root into the fork
// at dir, keeping their permission bits. A path that leaves root, a file
// that is gone, or one that is not a regular file is skipped; nothing
// else in the source is copied. Each file is written atomically, its
// missing folders created below dir, never dir itself (a fork removed
// meanwhile fails the restore).
func RestoreEdits(workspace, root, dir string, paths []string) error {
	for _, rel := range paths {
		src := filepath.Join(workspace, filepath.FromSlash(rel))
		in, err := filepath.Rel(root, src)
		if err != nil || in == ".." || strings.HasPrefix(in, ".."+string(filepath.Separator)) {
			continue
		}
		if err := copyRegular(dir, src, filepath.Join(dir, in)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("restore %s into the fork: %w", rel, err)
		}
	}
	return nil
}

// copyRegular copies src to dst, below the existing directory anchor,
// when src (not followed if a symbolic link) is a regular file.
func copyRegular(anchor, src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil || !fi.Mode().IsRegular() {
		return err
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	return atomicfile.WriteFileIn(anchor, dst, b, fi.Mode().Perm())
}
