package worktree

import (
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// A CommitEntry is one non-directory entry of a commit's tree.
type CommitEntry struct {
	// Kind is 'f' (regular file), 'x' (executable file), 'l' (symbolic
	// link, Data its target) or 'g' (submodule, no Data).
	Kind byte
	Data []byte
}

// ReadCommitEntry returns the entry at path (slash-separated, relative to
// the root) in the tree of commit (40 hex digits). A path absent there,
// or naming a directory, is [fs.ErrNotExist].
func (r *Repo) ReadCommitEntry(commit, path string) (CommitEntry, error) {
	h, err := r.treeOf(commit)
	if err != nil {
		return CommitEntry{}, err
	}
	parts := strings.Split(path, "/")
	for i, name := range parts {
		if name == "" || name == "." || name == ".." {
			return CommitEntry{}, fmt.Errorf("worktree: invalid path %q", path)
		}
		entries, err := r.readTree(h)
		if err != nil {
			return CommitEntry{}, err
		}
		var hit *treeEntry
		for j := range entries {
			if entries[j].name == name {
				hit = &entries[j]
				break
			}
		}
		last := i == len(parts)-1
		switch {
		case hit == nil:
		case !last && hit.mode == modeTree:
			h = hit.hash
			continue
		case last && hit.mode == modeGitlink:
			return CommitEntry{Kind: 'g'}, nil
		case last && hit.mode != modeTree:
			t, data, err := r.readObject(hit.hash)
			if err != nil {
				return CommitEntry{}, err
			}
			if t != plumbing.BlobObject {
				return CommitEntry{}, fmt.Errorf("worktree: %s is a %s, not a blob", plumbing.Hash(hit.hash), t)
			}
			kind := byte('f')
			switch hit.mode {
			case modeExec:
				kind = 'x'
			case modeSymlink:
				kind = 'l'
			}
			return CommitEntry{Kind: kind, Data: data}, nil
		}
		break
	}
	return CommitEntry{}, fmt.Errorf("worktree: %s in %s: %w", path, commit[:min(12, len(commit))], fs.ErrNotExist)
}

// ChangedPaths lists the non-directory paths whose entries differ between
// the trees of commits a and b (either may be "" for no commit), without
// rename detection; max bounds the list (truncated reports the cut).
func (r *Repo) ChangedPaths(a, b string, max int) (paths []string, truncated bool, err error) {
	var ta, tb [20]byte
	if a != "" {
		if ta, err = r.treeOf(a); err != nil {
			return nil, false, err
		}
	}
	if b != "" {
		if tb, err = r.treeOf(b); err != nil {
			return nil, false, err
		}
	}
	var walk func(prefix string, x, y [20]byte) error
	walk = func(prefix string, x, y [20]byte) error {
		if x == y || truncated {
			return nil
		}
		read := func(h [20]byte) (map[string]treeEntry, error) {
			m := map[string]treeEntry{}
			if h == ([20]byte{}) {
				return m, nil
			}
			es, err := r.readTree(h)
			for _, e := range es {
				m[e.name] = e
			}
			return m, err
		}
		ex, err := read(x)
		if err != nil {
			return err
		}
		ey, err := read(y)
		if err != nil {
			return err
		}
		names := map[string]bool{}
		for n := range ex {
			names[n] = true
		}
		for n := range ey {
			names[n] = true
		}
		for n := range names {
			p, q := ex[n], ey[n]
			if p.mode == q.mode && p.hash == q.hash {
				continue
			}
			var sx, sy [20]byte
			if p.mode == modeTree {
				sx = p.hash
			} else if p.mode != 0 {
				add(&paths, &truncated, max, prefix+n)
			}
			if q.mode == modeTree {
				sy = q.hash
			} else if q.mode != 0 && (p.mode == modeTree || p.mode == 0) {
				add(&paths, &truncated, max, prefix+n)
			}
			if sx != sy {
				if err := walk(prefix+n+"/", sx, sy); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err = walk("", ta, tb)
	return paths, truncated, err
}

func add(paths *[]string, truncated *bool, max int, p string) {
	if max > 0 && len(*paths) >= max {
		*truncated = true
		return
	}
	*paths = append(*paths, p)
}

func (r *Repo) treeOf(commit string) ([20]byte, error) {
	var c [20]byte
	if n, err := hex.Decode(c[:], []byte(commit)); err != nil || n != 20 || len(commit) != 40 {
		return [20]byte{}, fmt.Errorf("worktree: %q is not a commit id", commit)
	}
	return r.commitTree(c)
}
