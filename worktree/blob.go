package worktree

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// ReadCommitFile returns the content of the regular file at path
// (slash-separated, relative to the root) in the tree of commit (40 hex
// digits). A path absent from that tree, or naming a directory, symbolic
// link or submodule there, is [fs.ErrNotExist].
func (r *Repo) ReadCommitFile(commit, path string) ([]byte, error) {
	var c [20]byte
	if n, err := hex.Decode(c[:], []byte(commit)); err != nil || n != 20 || len(commit) != 40 {
		return nil, fmt.Errorf("worktree: %q is not a commit id", commit)
	}
	h, err := r.commitTree(c)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(path, "/")
	for i, name := range parts {
		if name == "" || name == "." || name == ".." {
			return nil, fmt.Errorf("worktree: invalid path %q", path)
		}
		entries, err := r.readTree(h)
		if err != nil {
			return nil, err
		}
		found := false
		for _, e := range entries {
			if e.name != name {
				continue
			}
			last := i == len(parts)-1
			switch {
			case last && (e.mode == modeFile || e.mode == modeExec):
				t, data, err := r.readObject(e.hash)
				if err != nil {
					return nil, err
				}
				if t != plumbing.BlobObject {
					return nil, fmt.Errorf("worktree: %s is a %s, not a blob", plumbing.Hash(e.hash), t)
				}
				return data, nil
			case !last && e.mode == modeTree:
				h, found = e.hash, true
			}
			break
		}
		if !found {
			return nil, fmt.Errorf("worktree: %s in %s: %w", path, commit[:12], fs.ErrNotExist)
		}
	}
	return nil, errors.New("unreachable")
}
