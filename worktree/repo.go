package worktree

import (
	"bytes"
	"compress/zlib"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// ErrNotRepository is returned by [Open] when no git checkout contains the
// directory.
var ErrNotRepository = errors.New("not a git checkout")

// Repo is an opened (non-bare) git checkout: the main worktree or a linked
// one. Its methods only read the repository; [AddWorktree] is what writes.
//
// A Repo is safe for concurrent use; it caches nothing that a later git
// command could make stale except the configuration read by [Open].
type Repo struct {
	// Root is the absolute top directory of the checkout.
	Root string
	// GitDir is the checkout's own git directory: Root/.git for the main
	// worktree, .git/worktrees/NAME for a linked one.
	GitDir string
	// CommonDir holds objects, refs and config shared by all worktrees.
	CommonDir string

	cfg config

	storeMu sync.Mutex // guards store: go-git's storage is not safe for concurrent use
	store   *filesystem.Storage

	packsOnce sync.Once
	packs     []packIndex // set by packsOnce
	maps      *mappings   // set by packsOnce
}

// Open finds the git checkout containing dir (dir itself or a parent holding
// a .git directory or a .git file, as in linked worktrees and submodules)
// and opens it. It reads the configuration (system, global, repository and
// worktree files) once; it runs nothing.
func Open(dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("worktree: open %s: %w", dir, err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("worktree: open %s: %w", dir, err)
	}
	for d := abs; ; {
		gitDir, err := findGitDir(d)
		if err != nil {
			return nil, err
		}
		if gitDir != "" {
			return openAt(d, gitDir)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil, fmt.Errorf("worktree: open %s: %w", dir, ErrNotRepository)
		}
		d = parent
	}
}

// Prefix is dir's place in the checkout as `git rev-parse --show-prefix`
// prints it run there: slash-separated with a trailing slash ("sub/dir/"),
// "" at the top of the checkout and for a directory outside it. Symbolic
// links in dir are resolved first, as [Open] resolves them.
func (r *Repo) Prefix(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	rel, err := filepath.Rel(r.Root, abs)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	return filepath.ToSlash(rel) + "/"
}

// findGitDir returns the git directory that d/.git names, or "" when d has
// no .git entry.
func findGitDir(d string) (string, error) {
	dotGit := filepath.Join(d, ".git")
	fi, err := os.Stat(dotGit)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscallENOTDIR):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("worktree: %w", err)
	case fi.IsDir():
		if _, err := os.Stat(filepath.Join(dotGit, "HEAD")); err != nil {
			return "", nil // not a repository: git keeps looking upwards
		}
		return dotGit, nil
	}
	gitDir, err := readGitFile(dotGit)
	if err != nil {
		return "", err
	}
	return gitDir, nil
}

// readGitFile parses a "gitdir: PATH" file; a relative PATH is relative to
// the file's directory.
func readGitFile(name string) (string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("worktree: %w", err)
	}
	line := strings.TrimRight(string(b), "\r\n")
	target, ok := strings.CutPrefix(line, "gitdir: ")
	if !ok {
		return "", fmt.Errorf("worktree: %s: not a gitdir file: %w", name, ErrNotRepository)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(name), target)
	}
	return filepath.Clean(target), nil
}

func openAt(root, gitDir string) (*Repo, error) {
	common := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimRight(string(b), "\r\n")
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = filepath.Clean(c)
	}
	if _, err := os.Stat(filepath.Join(common, "objects")); err != nil {
		return nil, fmt.Errorf("worktree: open %s: %w: %w", root, ErrNotRepository, err)
	}
	r := &Repo{Root: root, GitDir: gitDir, CommonDir: common}
	var err error
	if r.cfg, err = loadConfig(gitDir, common); err != nil {
		return nil, err
	}
	if r.cfg.objectFormat != "" && r.cfg.objectFormat != "sha1" {
		return nil, fmt.Errorf("worktree: open %s: object format %s: %w", root, r.cfg.objectFormat, errors.ErrUnsupported)
	}
	var commonFS = osfs.New(common)
	if common == gitDir {
		commonFS = nil
	}
	r.store = filesystem.NewStorageWithOptions(
		dotgit.NewRepositoryFilesystem(osfs.New(gitDir), commonFS),
		cache.NewObjectLRUDefault(), filesystem.Options{})
	return r, nil
}

// Head returns the branch HEAD is on (short name, e.g. "main"; "" when HEAD
// is detached) and the commit it points to (hex; "" on an unborn branch).
func (r *Repo) Head() (branch string, hash string, err error) {
	r.storeMu.Lock()
	defer r.storeMu.Unlock()
	ref, err := r.store.Reference(plumbing.HEAD)
	if err != nil {
		return "", "", fmt.Errorf("worktree: read HEAD: %w", err)
	}
	if ref.Type() == plumbing.HashReference {
		return "", ref.Hash().String(), nil
	}
	target := ref.Target()
	branch = strings.TrimPrefix(target.String(), "refs/heads/")
	resolved, err := r.store.Reference(target)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return branch, "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("worktree: resolve %s: %w", target, err)
	}
	if resolved.Type() != plumbing.HashReference {
		return "", "", fmt.Errorf("worktree: %s is a nested symbolic reference: %w", target, errors.ErrUnsupported)
	}
	return branch, resolved.Hash().String(), nil
}

// Branches returns the short names of all local branches (loose and
// packed), sorted.
func (r *Repo) Branches() ([]string, error) {
	r.storeMu.Lock()
	defer r.storeMu.Unlock()
	iter, err := r.store.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("worktree: list branches: %w", err)
	}
	defer iter.Close()
	var names []string
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Name().IsBranch() {
			names = append(names, ref.Name().Short())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("worktree: list branches: %w", err)
	}
	sort.Strings(names)
	return names, nil
}

// branchConflict returns the existing branch, loose or packed, that stops
// refs/heads/name from being created: the branch itself, or one whose
// name is a directory of it or has it as a directory ("plan" stops
// "plan/x", and "plan/x/y" stops "plan/x"), as git refuses them. It
// returns "" when the name is free.
func (r *Repo) branchConflict(name string) (string, error) {
	r.storeMu.Lock()
	defer r.storeMu.Unlock()
	it, err := r.store.IterReferences()
	if err != nil {
		return "", fmt.Errorf("worktree: list branches: %w", err)
	}
	defer it.Close()
	var found string
	err = it.ForEach(func(ref *plumbing.Reference) error {
		if !ref.Name().IsBranch() {
			return nil
		}
		have := ref.Name().Short()
		if have == name || strings.HasPrefix(name, have+"/") || strings.HasPrefix(have, name+"/") {
			if found == "" || have == name {
				found = have
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("worktree: list branches: %w", err)
	}
	return found, nil
}

// branchExists reports whether refs/heads/name exists, loose or packed.
func (r *Repo) branchExists(name string) (bool, error) {
	r.storeMu.Lock()
	defer r.storeMu.Unlock()
	_, err := r.store.Reference(plumbing.NewBranchReferenceName(name))
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("worktree: look up branch %s: %w", name, err)
	}
	return true, nil
}

// readObject returns the type and content of an object. Whole packed
// objects and loose objects are inflated directly (safe in parallel);
// deltas and anything else go through go-git's object storage under
// storeMu.
func (r *Repo) readObject(h [20]byte) (plumbing.ObjectType, []byte, error) {
	if t, data, ok := r.packedObject(h); ok {
		return t, data, nil
	}
	hexh := plumbing.Hash(h).String()
	f, err := os.Open(filepath.Join(r.CommonDir, "objects", hexh[:2], hexh[2:]))
	if err == nil {
		defer f.Close()
		zr, err := zlib.NewReader(f)
		if err != nil {
			return 0, nil, fmt.Errorf("worktree: object %s: %w", hexh, err)
		}
		data, err := io.ReadAll(zr)
		if err != nil {
			return 0, nil, fmt.Errorf("worktree: object %s: %w", hexh, err)
		}
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp < 0 || nul < sp {
			return 0, nil, fmt.Errorf("worktree: object %s: malformed header", hexh)
		}
		t, err := plumbing.ParseObjectType(string(data[:sp]))
		if err != nil {
			return 0, nil, fmt.Errorf("worktree: object %s: %w", hexh, err)
		}
		return t, data[nul+1:], nil
	}
	r.storeMu.Lock()
	defer r.storeMu.Unlock()
	obj, err := r.store.EncodedObject(plumbing.AnyObject, plumbing.Hash(h))
	if err != nil {
		return 0, nil, fmt.Errorf("worktree: object %s: %w", hexh, err)
	}
	rd, err := obj.Reader()
	if err != nil {
		return 0, nil, fmt.Errorf("worktree: object %s: %w", hexh, err)
	}
	defer rd.Close()
	data, err := io.ReadAll(rd)
	if err != nil {
		return 0, nil, fmt.Errorf("worktree: object %s: %w", hexh, err)
	}
	return obj.Type(), data, nil
}

// commitTree returns the root tree of a commit.
func (r *Repo) commitTree(commit [20]byte) ([20]byte, error) {
	t, data, err := r.readObject(commit)
	if err != nil {
		return [20]byte{}, err
	}
	if t != plumbing.CommitObject {
		return [20]byte{}, fmt.Errorf("worktree: %s is a %s, not a commit", plumbing.Hash(commit), t)
	}
	line, _, _ := bytes.Cut(data, []byte{'\n'})
	hexTree, ok := bytes.CutPrefix(line, []byte("tree "))
	if !ok {
		return [20]byte{}, fmt.Errorf("worktree: commit %s has no tree", plumbing.Hash(commit))
	}
	var h [20]byte
	if n, err := hex.Decode(h[:], hexTree); err != nil || n != 20 {
		return [20]byte{}, fmt.Errorf("worktree: commit %s: bad tree id", plumbing.Hash(commit))
	}
	return h, nil
}

// treeEntry is one entry of a tree object.
type treeEntry struct {
	name string
	mode uint32
	hash [20]byte
}

const (
	modeTree     = 0o040000
	modeFile     = 0o100644
	modeExec     = 0o100755
	modeSymlink  = 0o120000
	modeGitlink  = 0o160000
	modeTypeMask = 0o170000
)

// readTree returns the entries of a tree object in tree order. File modes
// are normalised as git does (any regular file is 100644 or 100755).
func (r *Repo) readTree(h [20]byte) ([]treeEntry, error) {
	t, data, err := r.readObject(h)
	if err != nil {
		return nil, err
	}
	if t != plumbing.TreeObject {
		return nil, fmt.Errorf("worktree: %s is a %s, not a tree", plumbing.Hash(h), t)
	}
	var out []treeEntry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("worktree: tree %s: malformed", plumbing.Hash(h))
		}
		var mode uint32
		for _, c := range data[:sp] {
			if c < '0' || c > '7' {
				return nil, fmt.Errorf("worktree: tree %s: bad mode", plumbing.Hash(h))
			}
			mode = mode<<3 | uint32(c-'0')
		}
		rest := data[sp+1:]
		nul := bytes.IndexByte(rest, 0)
		if nul < 0 || len(rest) < nul+21 {
			return nil, fmt.Errorf("worktree: tree %s: truncated", plumbing.Hash(h))
		}
		e := treeEntry{name: string(rest[:nul]), mode: normalizeMode(mode)}
		copy(e.hash[:], rest[nul+1:nul+21])
		out = append(out, e)
		data = rest[nul+21:]
	}
	return out, nil
}

func normalizeMode(m uint32) uint32 {
	switch m & modeTypeMask {
	case 0o100000:
		if m&0o111 != 0 {
			return modeExec
		}
		return modeFile
	case modeTree, modeSymlink, modeGitlink:
		return m & modeTypeMask
	}
	return m
}

// RootOf is the root of the checkout containing dir ([Open]'s Repo.Root).
func RootOf(dir string) (string, error) {
	r, err := Open(dir)
	if err != nil {
		return "", err
	}
	defer r.Close()
	return r.Root, nil
}

// HeadOf is [Repo.Head] of the checkout containing dir.
func HeadOf(dir string) (branch, hash string, err error) {
	r, err := Open(dir)
	if err != nil {
		return "", "", err
	}
	defer r.Close()
	return r.Head()
}
