package worktree

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

// Conditions [AddWorktree] refuses on; callers branch on them with
// errors.Is. The error text names the cleanup command when one applies.
var (
	ErrBranchExists = errors.New("branch already exists")
	ErrPathExists   = errors.New("worktree path already exists")
	ErrUnbornHead   = errors.New("HEAD has no commit to branch from")
)

// Added describes a linked worktree created by [AddWorktree].
type Added struct {
	Path   string // absolute directory of the new checkout
	Branch string // the new branch, checked out there
	Commit string // hex id of the commit the branch points to
	Name   string // administrative name: GitDir is CommonDir/worktrees/Name
	GitDir string // the worktree's administrative directory
	Files  int    // files, symlinks and gitlinks written
	Copied int    // of Files, copied from the source checkout instead of inflated
}

// DefaultPath returns where a fork of the checkout at root on branch goes:
// root/.worktrees/<last component of branch>, as the handoff specifies.
func DefaultPath(root, branch string) string {
	return filepath.Join(root, ".worktrees", path.Base(branch))
}

// CleanupCommand returns the shell command that removes a worktree at dir
// and its branch from the repository at src, as shown to a person when a
// fork is refused: git -C SRC worktree remove --force DIR && git -C SRC
// branch -D BRANCH.
func CleanupCommand(src, dir, branch string) string {
	return fmt.Sprintf("git -C %s worktree remove --force %s && git -C %s branch -D %s",
		shellQuote(src), shellQuote(dir), shellQuote(src), shellQuote(branch))
}

// CleanupFor returns the shell command that clears the way for a fork at
// dir on branch in the checkout containing src, for what is really there:
// `git -C SRC worktree remove --force DIR` for a registered worktree, `rm
// -rf DIR` for any other directory, then `git -C SRC branch -D BRANCH` if
// the branch exists; the parts are joined with " && ". It returns "" when
// nothing is in the way, and [CleanupCommand] when src cannot be opened.
func CleanupFor(src, dir, branch string) string {
	r, err := Open(src)
	if err != nil {
		return CleanupCommand(src, dir, branch)
	}
	defer r.Close()
	root := shellQuote(r.Root)
	var parts []string
	if r.registeredWorktree(filepath.Clean(dir)) != "" {
		parts = append(parts, fmt.Sprintf("git -C %s worktree remove --force %s", root, shellQuote(dir)))
	} else if _, err := os.Lstat(dir); err == nil {
		parts = append(parts, "rm -rf -- "+shellQuote(dir))
	}
	if ok, err := r.branchExists(branch); ok || err != nil {
		parts = append(parts, fmt.Sprintf("git -C %s branch -D %s", root, shellQuote(branch)))
	}
	return strings.Join(parts, " && ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' || r == '@' || r == ',' ||
			(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// AddWorktree creates a linked worktree at path on a new branch from the
// HEAD commit of the checkout containing repoDir, like `git worktree add -b
// branch path HEAD`, and returns what it made. A relative path is taken
// relative to that checkout's root.
//
// The result is what the git CLI expects of a linked worktree: the
// administrative directory CommonDir/worktrees/NAME (HEAD, commondir,
// gitdir, index with stat data and a cache tree), the worktree's .git file,
// and refs/heads/branch (no reflog is written). Files are written in
// parallel, by directory. Each comes from the cheapest proven source: a
// blob in a pack (whole or as a delta) is inflated from the memory-mapped
// pack unless it is larger than 64 KiB; a loose or large blob whose source
// index entry matches HEAD and whose stat data proves it clean in the
// source checkout (the status walk's proof) is copied from there with
// copy_file_range; anything else is read from the object store. Files are
// written byte-for-byte: no attribute, filter or end-of-line conversion.
// Executable bits and symbolic links are honoured. No hook, filter or
// other repository helper runs.
//
// It refuses, changing nothing and suggesting no deletion, when the
// branch name is invalid
// ([ErrInvalidBranchName]), the branch exists ([ErrBranchExists]), path
// exists and is not an empty directory or is already registered as a
// worktree ([ErrPathExists]), or HEAD is unborn ([ErrUnbornHead]). When it
// fails later, or ctx is cancelled, it removes what it created.
func AddWorktree(ctx context.Context, repoDir, path, branch string) (*Added, error) {
	return AddWorktreeWith(ctx, repoDir, path, branch, AddOptions{})
}

// AddOptions refines [AddWorktreeWith].
type AddOptions struct {
	// Commit is the hex id to branch from instead of HEAD's commit.
	Commit string
	// Owner, when set, is written into the administrative directory
	// before anything else is created there or at the path, so that
	// [Discard] can later tell a half-made worktree of this owner from
	// anybody else's. The directory is then built under a staging name
	// that carries the owner (CommonDir/planbridge-staging-OWNER) and
	// moved into CommonDir/worktrees only once marked, so a crash never
	// leaves an unmarked CommonDir/worktrees/NAME behind.
	Owner string
	// Failpoint, when set, is called between the steps a crash can
	// separate: "worktree.staged" (the staging directory exists, not yet
	// marked), "worktree.admin" (the marked directory is in place) and
	// "worktree.checkout" (the files are written, the index not yet).
	Failpoint func(name string)
}

func (o AddOptions) failpoint(name string) {
	if o.Failpoint != nil {
		o.Failpoint(name)
	}
}

// validOwner accepts owner marks that are safe as part of a file name.
func validOwner(owner string) error {
	for _, c := range []byte(owner) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("worktree: owner %q: only letters, digits, - and _ are allowed", owner)
		}
	}
	return nil
}

// stagingDir is where an owner's administrative directory is built before
// it is moved into place. Its name proves whose it is.
func stagingDir(common, owner string) string {
	return filepath.Join(common, "planbridge-staging-"+owner)
}

// AddWorktreeWith is [AddWorktree] with options. Once the checkout and its
// index are complete it writes a completion mark into the administrative
// directory (the commit and the file count), which [VerifyFork] checks: a
// worktree left half-written by a crash is never taken for a complete one.
func AddWorktreeWith(ctx context.Context, repoDir, path, branch string, opt AddOptions) (*Added, error) {
	if err := ValidBranchName(branch); err != nil {
		return nil, err
	}
	r, err := Open(repoDir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if !filepath.IsAbs(path) {
		path = filepath.Join(r.Root, path)
	}
	path = filepath.Clean(path)
	_, head, err := r.Head()
	if err != nil {
		return nil, err
	}
	if head == "" {
		return nil, fmt.Errorf("worktree: add %s: %w", path, ErrUnbornHead)
	}
	if opt.Commit != "" {
		head = opt.Commit
	}
	var commit [20]byte
	if _, err := hex.Decode(commit[:], []byte(head)); err != nil {
		return nil, fmt.Errorf("worktree: HEAD %q: %w", head, err)
	}
	// The refusals name what is in the way but suggest deleting nothing:
	// this function did not make it, so it may be somebody's work.
	if err := r.checkBranchFree(branch); err != nil {
		return nil, fmt.Errorf("worktree: add %s: %w (choose another branch name)", path, err)
	}
	if name := r.registeredWorktree(path); name != "" {
		return nil, fmt.Errorf("worktree: add %s: %w: registered as worktree %s (choose another path)", path, ErrPathExists, name)
	}
	createdDir, err := checkEmptyDir(path)
	if err != nil {
		return nil, fmt.Errorf("worktree: add %s: %w (choose another path)", path, err)
	}

	a := &Added{Path: path, Branch: branch, Commit: head}
	ok := false
	var undo []func()
	defer func() {
		if !ok {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()

	// 1. The administrative directory (for an owner, marked before it is
	// in place), then 2. the branch, created exclusively so a concurrent
	// creator loses. A branch of an owner's is thus never without the
	// owner's mark: [Discard] deletes a branch only on that proof. The
	// directory is locked only until it and the worktree's .git file point
	// at each other, so that `git worktree prune` cannot remove it
	// meanwhile, and a crash during
	// the long checkout leaves a worktree that the cleanup command (git
	// worktree remove --force, which refuses locked worktrees) removes.
	if opt.Owner != "" {
		if err := validOwner(opt.Owner); err != nil {
			return nil, err
		}
		a.Name, a.GitDir, err = r.makeOwnedAdminDir(path, opt)
	} else {
		a.Name, a.GitDir, err = r.makeAdminDir(path)
	}
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() { os.RemoveAll(a.GitDir) })
	opt.failpoint("worktree.admin")
	if err := r.createBranch(branch, commit); err != nil {
		return nil, err
	}
	undo = append(undo, func() { r.deleteBranchIf(branch, commit) })
	if createdDir != "" {
		undo = append(undo, func() { os.RemoveAll(createdDir) })
	} else {
		undo = append(undo, func() { emptyDir(path) })
	}
	for _, f := range []struct{ name, content string }{
		{filepath.Join(a.GitDir, "locked"), "initializing\n"},
		{filepath.Join(a.GitDir, "commondir"), "../..\n"},
		{filepath.Join(a.GitDir, "HEAD"), "ref: refs/heads/" + branch + "\n"},
		{filepath.Join(path, ".git"), "gitdir: " + a.GitDir + "\n"},
		{filepath.Join(a.GitDir, "gitdir"), filepath.Join(path, ".git") + "\n"},
	} {
		if err := os.MkdirAll(filepath.Dir(f.name), 0o777); err != nil {
			return nil, fmt.Errorf("worktree: add %s: %w", path, err)
		}
		if err := os.WriteFile(f.name, []byte(f.content), 0o666); err != nil {
			return nil, fmt.Errorf("worktree: add %s: %w", path, err)
		}
	}
	if err := os.Remove(filepath.Join(a.GitDir, "locked")); err != nil {
		return nil, fmt.Errorf("worktree: add %s: %w", path, err)
	}

	// 3. The checkout, then its index.
	tree, err := r.commitTree(commit)
	if err != nil {
		return nil, err
	}
	co := &checkout{ctx: ctx, r: r, dst: path + "/"}
	if err := co.run(tree); err != nil {
		return nil, fmt.Errorf("worktree: add %s: %w", path, err)
	}
	a.Files, a.Copied = len(co.files), int(co.copied.Load())
	opt.failpoint("worktree.checkout")

	if err := writeIndex(filepath.Join(a.GitDir, "index"), co.files, co.root); err != nil {
		return nil, fmt.Errorf("worktree: add %s: %w", path, err)
	}
	if err := writeSynced(filepath.Join(a.GitDir, completeFile), fmt.Sprintf("%s %d\n", head, len(co.files))); err != nil {
		return nil, fmt.Errorf("worktree: add %s: %w", path, err)
	}
	ok = true
	return a, nil
}

// checkEmptyDir accepts a missing path or an empty directory. It returns the
// topmost directory AddWorktree will have to create (to remove on failure),
// or "" when path exists.
func checkEmptyDir(path string) (string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		top := path
		for {
			parent := filepath.Dir(top)
			if _, err := os.Lstat(parent); err == nil || parent == top {
				return top, nil
			}
			top = parent
		}
	}
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%w and is not a directory", ErrPathExists)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if names, _ := f.Readdirnames(1); len(names) > 0 {
		return "", fmt.Errorf("%w and is not empty", ErrPathExists)
	}
	return "", nil
}

// emptyDir removes the contents of dir, keeping dir.
func emptyDir(dir string) {
	names, _ := os.ReadDir(dir)
	for _, n := range names {
		os.RemoveAll(filepath.Join(dir, n.Name()))
	}
}

// registeredWorktree returns the administrative name of the linked worktree
// registered at path, or "".
func (r *Repo) registeredWorktree(path string) string {
	des, _ := os.ReadDir(filepath.Join(r.CommonDir, "worktrees"))
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join(r.CommonDir, "worktrees", de.Name(), "gitdir"))
		if err != nil {
			continue
		}
		if filepath.Dir(strings.TrimSpace(string(b))) == path {
			return de.Name()
		}
	}
	return ""
}

// makeAdminDir creates CommonDir/worktrees/NAME where NAME is the path's
// base name made ref-safe, with a number appended when taken (as git does).
func (r *Repo) makeAdminDir(path string) (name, dir string, err error) {
	base := sanitizeWorktreeName(filepath.Base(path))
	parent := filepath.Join(r.CommonDir, "worktrees")
	if err := os.MkdirAll(parent, 0o777); err != nil {
		return "", "", fmt.Errorf("worktree: %w", err)
	}
	for n := 0; n < 10000; n++ {
		name = base
		if n > 0 {
			name += strconv.Itoa(n)
		}
		dir = filepath.Join(parent, name)
		err := os.Mkdir(dir, 0o777)
		if err == nil {
			return name, dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", "", fmt.Errorf("worktree: %w", err)
		}
	}
	return "", "", fmt.Errorf("worktree: no free administrative name for %s", base)
}

// makeOwnedAdminDir is [Repo.makeAdminDir] for an owner: the directory is
// made under its staging name, marked with the owner (synced), and only
// then renamed, never over an existing name, into CommonDir/worktrees. A
// staging directory left by an earlier crash of the same owner is
// removed first (its name proves it is this owner's).
func (r *Repo) makeOwnedAdminDir(path string, opt AddOptions) (name, dir string, err error) {
	staging := stagingDir(r.CommonDir, opt.Owner)
	if err := os.RemoveAll(staging); err != nil {
		return "", "", fmt.Errorf("worktree: %w", err)
	}
	if err := os.Mkdir(staging, 0o777); err != nil {
		return "", "", fmt.Errorf("worktree: %w", err)
	}
	opt.failpoint("worktree.staged")
	if err := writeSynced(filepath.Join(staging, ownerFile), opt.Owner+"\n"); err != nil {
		os.RemoveAll(staging)
		return "", "", fmt.Errorf("worktree: add %s: %w", path, err)
	}
	base := sanitizeWorktreeName(filepath.Base(path))
	parent := filepath.Join(r.CommonDir, "worktrees")
	if err := os.MkdirAll(parent, 0o777); err != nil {
		os.RemoveAll(staging)
		return "", "", fmt.Errorf("worktree: %w", err)
	}
	for n := 0; n < 10000; n++ {
		name = base
		if n > 0 {
			name += strconv.Itoa(n)
		}
		dir = filepath.Join(parent, name)
		err := unix.Renameat2(unix.AT_FDCWD, staging, unix.AT_FDCWD, dir, unix.RENAME_NOREPLACE)
		if err == nil {
			if err := syncDir(parent); err != nil {
				return "", "", fmt.Errorf("worktree: %w", err)
			}
			return name, dir, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			os.RemoveAll(staging)
			return "", "", fmt.Errorf("worktree: move %s into place: %w", staging, err)
		}
	}
	os.RemoveAll(staging)
	return "", "", fmt.Errorf("worktree: no free administrative name for %s", base)
}

func sanitizeWorktreeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			b[i] = '-'
		}
	}
	s = strings.TrimLeft(string(b), ".")
	s = strings.TrimSuffix(s, ".lock")
	s = strings.ReplaceAll(s, "..", ".")
	if s == "" {
		s = "worktree"
	}
	return s
}

// createBranch creates refs/heads/name at commit through a lock file, so it
// fails if any other writer created it meanwhile.
func (r *Repo) createBranch(name string, commit [20]byte) error {
	ref := filepath.Join(r.CommonDir, "refs", "heads", filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(ref), 0o777); err != nil {
		return fmt.Errorf("worktree: create branch %s: %w", name, err)
	}
	lock := ref + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return fmt.Errorf("worktree: create branch %s: %w", name, err)
	}
	_, werr := f.WriteString(hex.EncodeToString(commit[:]) + "\n")
	if werr == nil {
		werr = f.Sync() // like git's default core.fsync for references
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = r.checkBranchFree(name)
	}
	if werr == nil {
		werr = os.Rename(lock, ref)
	}
	if werr != nil {
		os.Remove(lock)
		return fmt.Errorf("worktree: create branch %s: %w", name, werr)
	}
	return nil
}

// checkBranchFree refuses, with [ErrBranchExists], a branch name that
// exists or that an existing branch stops ([Repo.branchConflict]).
func (r *Repo) checkBranchFree(name string) error {
	have, err := r.branchConflict(name)
	switch {
	case err != nil:
		return err
	case have == name:
		return fmt.Errorf("%w: %s", ErrBranchExists, name)
	case have != "":
		return fmt.Errorf("%w: %s stops %s (a branch cannot be both a name and a directory of names)", ErrBranchExists, have, name)
	}
	return nil
}

// deleteBranchIf removes the loose ref of a branch this package created,
// if it still points at commit.
func (r *Repo) deleteBranchIf(name string, commit [20]byte) {
	ref := filepath.Join(r.CommonDir, "refs", "heads", filepath.FromSlash(name))
	if b, err := os.ReadFile(ref); err == nil && strings.TrimSpace(string(b)) == hex.EncodeToString(commit[:]) {
		os.Remove(ref)
	}
}

// coFile is one non-directory entry of the checkout, with the stat data of
// what was written (index order).
type coFile struct {
	path string
	mode uint32
	hash [20]byte
	st   unix.Stat_t
}

// coTree mirrors a tree of HEAD for the index's cache-tree extension.
type coTree struct {
	name     string
	hash     [20]byte
	entries  int
	children []*coTree
}

// checkout writes a tree into an empty directory.
type checkout struct {
	ctx    context.Context
	r      *Repo
	dst    string // with trailing separator
	files  []coFile
	dirs   []string
	root   *coTree
	copied atomic.Int64
}

func (co *checkout) run(tree [20]byte) error {
	var err error
	if co.root, err = co.flatten("", "", tree); err != nil {
		return err
	}
	for _, d := range co.dirs {
		if err := os.Mkdir(co.dst+d, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	src, release, err := readIndex(filepath.Join(co.r.GitDir, "index"))
	if err != nil {
		src, release = &gitIndex{}, func() {} // no copies; inflate everything
	}
	defer release()
	// Pair each file with its source index entry: both lists are in index order.
	srcEntry := make([]*indexEntry, len(co.files))
	for i, j := 0, 0; i < len(co.files) && j < len(src.entries); {
		switch c := strings.Compare(co.files[i].path, src.entries[j].name); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			if e := &src.entries[j]; e.stage == 0 && e.hash == co.files[i].hash && e.mode == co.files[i].mode &&
				!e.skipWorktree && !e.intentToAdd {
				srcEntry[i] = e
			}
			i++
			j++
		}
	}
	racySec := src.mtime.Unix()

	// Work is handed out by directory: writers creating files in
	// different directories do not queue on the same directory lock.
	var chunks []int // start of each run of files sharing a directory
	for i := range co.files {
		if i == 0 || parentDir(co.files[i].path) != parentDir(co.files[i-1].path) {
			chunks = append(chunks, i)
		}
	}
	chunks = append(chunks, len(co.files))
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for range workerCount() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			var in inflater
			for {
				c := int(next.Add(1) - 1)
				if c >= len(chunks)-1 {
					return
				}
				for i := chunks[c]; i < chunks[c+1]; i++ {
					err := co.ctx.Err()
					if err == nil {
						err = co.write(&co.files[i], srcEntry[i], racySec, buf, &in)
					}
					if err != nil {
						once.Do(func() { firstErr = err })
						next.Store(int64(len(chunks)))
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

func parentDir(p string) string { return p[:strings.LastIndexByte(p, '/')+1] }

// workerCount is the number of parallel file writers: twice the cores, as
// file creation blocks in the kernel (journal, directory locks) often
// enough that one writer per core leaves cores idle.
func workerCount() int { return 2 * runtime.GOMAXPROCS(0) }

// flatten lists the tree recursively in index order, collecting
// directories to create and the cache tree.
func (co *checkout) flatten(prefix, name string, h [20]byte) (*coTree, error) {
	if err := co.ctx.Err(); err != nil {
		return nil, err
	}
	tes, err := co.r.readTree(h)
	if err != nil {
		return nil, err
	}
	node := &coTree{name: name, hash: h}
	before := len(co.files)
	for _, te := range tes {
		p := prefix + te.name
		if te.mode == modeTree {
			co.dirs = append(co.dirs, p)
			child, err := co.flatten(p+"/", te.name, te.hash)
			if err != nil {
				return nil, err
			}
			node.children = append(node.children, child)
			continue
		}
		co.files = append(co.files, coFile{path: p, mode: te.mode, hash: te.hash})
	}
	node.entries = len(co.files) - before
	return node, nil
}

// write creates one file of the checkout and records its stat data.
func (co *checkout) write(f *coFile, src *indexEntry, racySec int64, buf []byte, in *inflater) error {
	dst := co.dst + f.path
	switch f.mode {
	case modeGitlink:
		if err := os.Mkdir(dst, 0o777); err != nil {
			return err
		}
		return nil // stat data of a gitlink stays zero, as git leaves it
	case modeSymlink:
		_, target, err := co.r.readObject(f.hash)
		if err != nil {
			return err
		}
		if err := os.Symlink(string(target), dst); err != nil {
			return err
		}
		return unix.Lstat(dst, &f.st)
	}
	perm := uint32(0o666)
	if f.mode == modeExec {
		perm = 0o777
	}
	out, err := unix.Open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, perm)
	if err != nil {
		return &fs.PathError{Op: "create", Path: dst, Err: err}
	}
	defer unix.Close(out)
	// A blob in a mapped pack is cheapest to inflate (no system call),
	// unless it is large and the source checkout proves its copy clean;
	// a loose or unmapped blob is copied when proven clean; anything else
	// comes from the object store.
	p, off := co.r.locate(f.hash)
	if p != nil {
		if t, size, _, ok := p.entryHeader(off); src == nil || !ok || t > int(plumbing.TagObject) || size <= inflateMax {
			_, data, err := co.r.resolve(p, off, in, 0)
			if err != nil {
				return fmt.Errorf("%s: %w", f.path, err)
			}
			if err := writeAll(out, data); err != nil {
				return &fs.PathError{Op: "write", Path: dst, Err: err}
			}
			return unix.Fstat(out, &f.st)
		}
	}
	if src != nil {
		copied, err := co.copyClean(out, f.path, src, racySec, buf)
		if err != nil {
			return err
		}
		if copied {
			co.copied.Add(1)
			return unix.Fstat(out, &f.st)
		}
	}
	_, data, err := co.r.readObject(f.hash)
	if err != nil {
		return err
	}
	if err := writeAll(out, data); err != nil {
		return &fs.PathError{Op: "write", Path: dst, Err: err}
	}
	return unix.Fstat(out, &f.st)
}

// inflateMax is the largest blob the checkout inflates from a mapped pack
// rather than copying from the source checkout: below it, four system
// calls on the source file cost more than decompressing in memory.
const inflateMax = 64 << 10

// copyClean copies the source checkout's file into out when its stat data
// proves it unchanged since the index recorded the blob we need (the same
// proof the status walk uses); copied is false when it cannot prove it.
func (co *checkout) copyClean(out int, path string, e *indexEntry, racySec int64, buf []byte) (copied bool, err error) {
	in, err := unix.Open(co.r.Root+"/"+path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, nil
	}
	defer unix.Close(in)
	var st unix.Stat_t
	if unix.Fstat(in, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG ||
		!statMatches(e, &st) || int64(e.mtimeSec) >= racySec {
		return false, nil
	}
	remain := st.Size
	for remain > 0 {
		n, err := unix.CopyFileRange(in, nil, out, nil, int(remain), 0)
		if err != nil || n == 0 {
			break // unsupported here (or odd): finish with read/write below
		}
		remain -= int64(n)
	}
	for remain > 0 {
		n, err := unix.Read(in, buf)
		if err != nil {
			return false, err
		}
		if n == 0 {
			return false, io.ErrUnexpectedEOF
		}
		if err := writeAll(out, buf[:n]); err != nil {
			return false, err
		}
		remain -= int64(n)
	}
	return true, nil
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// writeIndex writes a version 2 index of files (in index order) with a
// cache-tree extension, atomically through index.lock.
func writeIndex(name string, files []coFile, root *coTree) error {
	buf := make([]byte, 0, 12+len(files)*96)
	be := binary.BigEndian
	buf = append(buf, "DIRC"...)
	buf = be.AppendUint32(buf, 2)
	buf = be.AppendUint32(buf, uint32(len(files)))
	for i := range files {
		f := &files[i]
		st := &f.st
		start := len(buf)
		for _, v := range []uint32{
			uint32(st.Ctim.Sec), uint32(st.Ctim.Nsec), uint32(st.Mtim.Sec), uint32(st.Mtim.Nsec),
			uint32(st.Dev), uint32(st.Ino), f.mode, st.Uid, st.Gid, uint32(st.Size),
		} {
			buf = be.AppendUint32(buf, v)
		}
		buf = append(buf, f.hash[:]...)
		buf = be.AppendUint16(buf, uint16(min(len(f.path), 0xfff)))
		buf = append(buf, f.path...)
		pad := (62+len(f.path)+8)&^7 - (len(buf) - start)
		for ; pad > 0; pad-- {
			buf = append(buf, 0)
		}
	}
	var ext []byte
	var walk func(t *coTree)
	walk = func(t *coTree) {
		ext = append(ext, t.name...)
		ext = append(ext, 0)
		ext = append(ext, strconv.Itoa(t.entries)+" "+strconv.Itoa(len(t.children))+"\n"...)
		ext = append(ext, t.hash[:]...)
		for _, c := range t.children {
			walk(c)
		}
	}
	if root != nil {
		walk(root)
		buf = append(buf, "TREE"...)
		buf = be.AppendUint32(buf, uint32(len(ext)))
		buf = append(buf, ext...)
	}
	sum := sha1.Sum(buf)
	buf = append(buf, sum[:]...)

	lock := name + ".lock"
	if err := os.WriteFile(lock, buf, 0o666); err != nil {
		return err
	}
	if err := os.Rename(lock, name); err != nil {
		os.Remove(lock)
		return err
	}
	return nil
}
