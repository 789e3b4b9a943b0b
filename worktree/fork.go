package worktree

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Files planbridge adds to a linked worktree's administrative directory
// (git ignores files it does not know there).
const (
	ownerFile    = "planbridge-owner"    // who began it, written first
	completeFile = "planbridge-complete" // "<commit> <files>", written last
)

// ErrIncomplete is returned by [VerifyFork] for a worktree that is missing,
// was left half-written, or does not match its completion mark.
var ErrIncomplete = errors.New("the worktree is incomplete")

func writeSynced(name, content string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(content)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = syncDir(filepath.Dir(name))
	}
	return werr
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// VerifyFork checks that path holds a complete linked worktree made by
// [AddWorktreeWith] on branch: the completion mark is there, the
// worktree's HEAD names the branch, its index holds as many entries as the
// marked commit's tree has files, and each of those files exists in the
// checkout. Anything else is [ErrIncomplete] (wrapped with the reason).
func VerifyFork(repoDir, path, branch string) error {
	r, err := Open(repoDir)
	if err != nil {
		return err
	}
	defer r.Close()
	name := r.registeredWorktree(filepath.Clean(path))
	if name == "" {
		return fmt.Errorf("%w: %s is not a registered worktree", ErrIncomplete, path)
	}
	admin := filepath.Join(r.CommonDir, "worktrees", name)
	mark, err := os.ReadFile(filepath.Join(admin, completeFile))
	if err != nil {
		return fmt.Errorf("%w: its checkout never finished (no completion mark)", ErrIncomplete)
	}
	f := strings.Fields(string(mark))
	if len(f) != 2 {
		return fmt.Errorf("%w: unreadable completion mark", ErrIncomplete)
	}
	files, err := strconv.Atoi(f[1])
	if err != nil {
		return fmt.Errorf("%w: unreadable completion mark", ErrIncomplete)
	}
	if b, err := os.ReadFile(filepath.Join(admin, "HEAD")); err != nil || strings.TrimSpace(string(b)) != "ref: refs/heads/"+branch {
		return fmt.Errorf("%w: its HEAD is not branch %s", ErrIncomplete, branch)
	}
	var commit [20]byte
	if _, err := hex.Decode(commit[:], []byte(f[0])); err != nil {
		return fmt.Errorf("%w: unreadable completion mark", ErrIncomplete)
	}
	tree, err := r.commitTree(commit)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIncomplete, err)
	}
	co := &checkout{ctx: context.Background(), r: r}
	if _, err := co.flatten("", "", tree); err != nil {
		return fmt.Errorf("%w: %v", ErrIncomplete, err)
	}
	if len(co.files) != files {
		return fmt.Errorf("%w: the mark says %d files, the tree has %d", ErrIncomplete, files, len(co.files))
	}
	idx, release, err := readIndex(filepath.Join(admin, "index"))
	if err != nil {
		return fmt.Errorf("%w: no readable index: %v", ErrIncomplete, err)
	}
	n := len(idx.entries)
	release()
	if n != files {
		return fmt.Errorf("%w: the index has %d entries, the tree %d files", ErrIncomplete, n, files)
	}
	for _, cf := range co.files {
		if _, err := os.Lstat(filepath.Join(path, filepath.FromSlash(cf.path))); err != nil {
			return fmt.Errorf("%w: %s is missing from the checkout", ErrIncomplete, cf.path)
		}
	}
	return nil
}

// Discard removes what [AddWorktreeWith] with this owner began at path on
// branch from commit base and did not finish, and only that: the owner's
// staging directory, the administrative directory marked with owner
// (never an unmarked or
// differently marked one), the directory at path when it is that
// worktree's or empty, and, only when it found an administrative
// directory marked with owner (the proof that this attempt got as far as
// the branch, which is created after it), a lock of the branch ref whose
// content is base (or empty: the write never happened) and the branch if
// it points at base and no other worktree uses it. Anything else it finds
// there, a branch at base without that proof included, is left alone and
// reported.
func Discard(repoDir, path, branch, base, owner string) error {
	if owner == "" {
		return errors.New("worktree: discard needs the owner")
	}
	if err := validOwner(owner); err != nil {
		return err
	}
	r, err := Open(repoDir)
	if err != nil {
		return err
	}
	defer r.Close()
	path = filepath.Clean(path)
	// A staging directory a crash left before it was moved into place:
	// its name carries the owner, so it is ours.
	if err := os.RemoveAll(stagingDir(r.CommonDir, owner)); err != nil {
		return err
	}
	// The branch first, while the proof that it is ours still stands: an
	// administrative directory marked with owner (AddWorktreeWith creates
	// the branch only once that directory is in place), so a crash in
	// here never leaves our branch without its proof.
	if err := r.discardBranch(branch, base, r.ownerMarked(owner)); err != nil {
		return err
	}
	ours := false
	if name := r.registeredWorktree(path); name != "" {
		admin := filepath.Join(r.CommonDir, "worktrees", name)
		b, err := os.ReadFile(filepath.Join(admin, ownerFile))
		if err != nil || strings.TrimSpace(string(b)) != owner {
			return fmt.Errorf("worktree: %s is registered as worktree %s, which planbridge did not begin for this fork; left alone", path, name)
		}
		ours = true
		if err := os.RemoveAll(admin); err != nil {
			return err
		}
	}
	// Admin directories of ours that never got registered: the gitdir file
	// missing or cut short by the crash.
	des, _ := os.ReadDir(filepath.Join(r.CommonDir, "worktrees"))
	for _, de := range des {
		admin := filepath.Join(r.CommonDir, "worktrees", de.Name())
		if b, err := os.ReadFile(filepath.Join(admin, ownerFile)); err == nil && strings.TrimSpace(string(b)) == owner {
			if gd, err := os.ReadFile(filepath.Join(admin, "gitdir")); errors.Is(err, fs.ErrNotExist) ||
				err == nil && strings.TrimSpace(string(gd)) != filepath.Join(path, ".git") {
				// The .git file at path is written after this admin dir's
				// owner mark and before its gitdir file (so before any
				// checkout): a path holding it, pointing here or cut short
				// by the crash, and nothing else, was made by us.
				if b, err := os.ReadFile(filepath.Join(path, ".git")); err == nil &&
					(strings.TrimSpace(string(b)) == "gitdir: "+admin || onlyEntry(path, ".git") && strings.HasPrefix("gitdir: "+admin+"\n", string(b))) {
					ours = true
				}
				os.RemoveAll(admin)
			}
		}
	}
	if fi, err := os.Lstat(path); err == nil {
		switch {
		case ours && fi.IsDir():
			if err := os.RemoveAll(path); err != nil {
				return err
			}
		case fi.IsDir() && isEmptyDir(path):
			os.Remove(path)
		default:
			return fmt.Errorf("worktree: %s exists and is not a worktree planbridge began for this fork; left alone", path)
		}
	}
	return nil
}

// ownerMarked reports whether an administrative directory marked with
// owner is in CommonDir/worktrees.
func (r *Repo) ownerMarked(owner string) bool {
	des, _ := os.ReadDir(filepath.Join(r.CommonDir, "worktrees"))
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join(r.CommonDir, "worktrees", de.Name(), ownerFile))
		if err == nil && strings.TrimSpace(string(b)) == owner {
			return true
		}
	}
	return false
}

// discardBranch removes the lock (content base or empty) and the branch
// (pointing at base) that an attempt of ours left, only when marked proves
// the attempt got that far; otherwise a branch or lock there is somebody
// else's and is left alone.
func (r *Repo) discardBranch(branch, base string, marked bool) error {
	ref := filepath.Join(r.CommonDir, "refs", "heads", filepath.FromSlash(branch))
	if b, err := os.ReadFile(ref + ".lock"); err == nil {
		if c := strings.TrimSpace(string(b)); marked && (c == "" || c == base) {
			os.Remove(ref + ".lock")
		} else {
			return fmt.Errorf("worktree: %s.lock is held by another writer; left alone", ref)
		}
	}
	if exists, _ := r.branchExists(branch); exists {
		if !marked {
			return fmt.Errorf("worktree: branch %s exists and planbridge did not create it for this fork; left alone", branch)
		}
		var commit [20]byte
		if _, err := hex.Decode(commit[:], []byte(base)); err == nil {
			r.deleteBranchIf(branch, commit)
		}
		if still, _ := r.branchExists(branch); still {
			return fmt.Errorf("worktree: branch %s exists and does not point at the fork's base %s; left alone", branch, base)
		}
	}
	return nil
}

func isEmptyDir(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) == 0
}

// BranchConflict returns the existing branch of the repository holding
// dir that stops a new branch name from being created: name itself, or a
// branch that is a directory of it or has it as a directory, loose or
// packed (git refuses those too). It returns "" when name is free.
func BranchConflict(dir, name string) (string, error) {
	r, err := Open(dir)
	if err != nil {
		return "", err
	}
	defer r.Close()
	return r.branchConflict(name)
}

// BranchExists reports whether refs/heads/name exists in the repository
// holding dir.
func BranchExists(dir, name string) (bool, error) {
	r, err := Open(dir)
	if err != nil {
		return false, err
	}
	defer r.Close()
	return r.branchExists(name)
}

// onlyEntry reports whether dir holds exactly one entry, name.
func onlyEntry(dir, name string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(2)
	return len(names) == 1 && names[0] == name
}
