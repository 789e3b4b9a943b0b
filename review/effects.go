package review

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
)

// Bounds of a [Snapshot]. Past them a command is still observed, but less
// of what it changed can be restored.
const (
	// MaxWatchedPaths bounds the paths dirty before a command that are
	// snapshotted one by one; the rest are compared by size, mode and
	// modification time only and cannot be restored.
	MaxWatchedPaths = 20000
	// MaxWatchedFile is the largest file whose content a snapshot keeps
	// (a larger one keeps its hash: a change is seen, not restorable).
	MaxWatchedFile = 1 << 20
	// MaxWatchedTotal bounds the content a snapshot keeps in all.
	MaxWatchedTotal = 32 << 20
	// MaxCommitPaths bounds the paths compared when HEAD moved during the
	// command (a commit, checkout or reset it ran).
	MaxCommitPaths = 20000
)

// A Tree is the git checkout a [Snapshot] observes: its HEAD, the paths
// its status lists, and committed entries. Paths are root-relative and
// slash-separated.
type Tree interface {
	// Head is the commit HEAD names ("" none).
	Head() string
	// Dirty lists the paths `git status --untracked-files=all` lists
	// (ignored files are not).
	Dirty(ctx context.Context) ([]string, error)
	// Committed is the entry at p in commit; ok is false when it has none.
	Committed(commit, p string) (FileState, bool)
	// Changed lists the paths whose entries differ between two commits
	// (at most max; truncated reports a cut).
	Changed(a, b string, max int) (paths []string, truncated bool, err error)
}

// A FileState is one path as a snapshot saw it.
type FileState struct {
	// Kind: 0 absent, 'f' file, 'x' executable file, 'l' symbolic link
	// (Data its target), 'd' directory, 'o' anything else.
	Kind byte
	Data []byte // content (or link target); nil when not kept
	Hash string // identity of the content ("" for d, o, absent)
	Kept bool   // Data holds the whole content: restorable
}

func (a FileState) same(b FileState) bool { return a.Kind == b.Kind && a.Hash == b.Hash }

// ControlFiles are the repository control files a snapshot watches in the
// git directory, since a command can change them while no status lists
// them: the configuration, hooks and info/ (attributes, exclude).
var ControlFiles = []string{"config", "hooks", "info"}

// ControlPrefix names control files in a [Change] (".git/hooks/pre-commit").
const ControlPrefix = ".git/"

// A Snapshot is the checkout just before a command whose writes cannot be
// declared in advance (an unconfined shell command).
type Snapshot struct {
	head    string
	files   map[string]FileState
	control map[string]FileState
	Partial bool // more paths were dirty than [MaxWatchedPaths]
}

// A Change is one path a command changed: its state before and now.
type Change struct {
	Path   string
	Before FileState
	Now    FileState
}

// Restorable reports whether the path's state before the command is known
// in full (absent, a directory, or content kept).
func (c Change) Restorable() bool {
	return c.Before.Kind == 0 || c.Before.Kind == 'd' || c.Before.Kept
}

// Take snapshots the checkout: HEAD, every dirty path (bounded), and the
// control files under git (nil: none watched). The root is where the
// files are read through ([os.Root]: no symbolic link leads out).
func Take(ctx context.Context, t Tree, root, git *os.Root) (*Snapshot, error) {
	s := &Snapshot{head: t.Head(), files: map[string]FileState{}, control: map[string]FileState{}}
	dirty, err := t.Dirty(ctx)
	if err != nil {
		return nil, err
	}
	total := 0
	for i, p := range dirty {
		if i >= MaxWatchedPaths {
			s.Partial = true
			s.files[p] = statState(root, p)
			continue
		}
		s.files[p] = readState(root, p, &total)
	}
	for _, p := range controlPaths(git) {
		s.control[p] = readState(git, p, &total)
	}
	return s, nil
}

// Changes compares the checkout now with the snapshot: the paths dirty
// then or now, and when HEAD moved the paths the two commits differ in,
// plus the control files. Only the net effect is seen: a path written and
// put back as it was is no change.
func (s *Snapshot) Changes(ctx context.Context, t Tree, root, git *os.Root) ([]Change, error) {
	cand := map[string]bool{}
	for p := range s.files {
		cand[p] = true
	}
	dirty, err := t.Dirty(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range dirty {
		cand[p] = true
	}
	if head := t.Head(); head != s.head {
		moved, _, err := t.Changed(s.head, head, MaxCommitPaths)
		if err != nil {
			return nil, err
		}
		for _, p := range moved {
			cand[p] = true
		}
	}
	var out []Change
	total := 0
	for p := range cand {
		before, ok := s.files[p]
		if !ok && s.head != "" { // not dirty then: as committed, else absent
			if e, ok := t.Committed(s.head, p); ok {
				before = e
			}
		}
		var now FileState
		if strings.HasPrefix(before.Hash, "stat:") {
			now = statState(root, p)
		} else {
			now = readState(root, p, &total)
		}
		if before.Kind == 'g' || before.same(now) || before.Kind == 0 && now.Kind == 'd' {
			continue // submodules are compared by commit only (not here); directories are not files
		}
		out = append(out, Change{Path: p, Before: before, Now: now})
	}
	ctl := map[string]bool{}
	for p := range s.control {
		ctl[p] = true
	}
	for _, p := range controlPaths(git) {
		ctl[p] = true
	}
	for p := range ctl {
		before := s.control[p]
		now := readState(git, p, &total)
		if !before.same(now) {
			out = append(out, Change{Path: ControlPrefix + p, Before: before, Now: now})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// controlPaths lists the watched control files present under git.
func controlPaths(git *os.Root) []string {
	if git == nil {
		return nil
	}
	var out []string
	for _, name := range ControlFiles {
		fi, err := git.Lstat(name)
		if err != nil {
			continue
		}
		if !fi.IsDir() {
			out = append(out, name)
			continue
		}
		d, err := git.Open(name)
		if err != nil {
			continue
		}
		ents, _ := d.ReadDir(1000)
		d.Close()
		for _, e := range ents {
			out = append(out, name+"/"+e.Name())
		}
	}
	return out
}

// readState reads one path without following a final symbolic link.
func readState(root *os.Root, p string, total *int) FileState {
	fi, err := root.Lstat(p)
	if err != nil {
		return FileState{}
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, _ := root.Readlink(p)
		return FileState{Kind: 'l', Data: []byte(t), Hash: hashOf([]byte("link:" + t)), Kept: true}
	case fi.IsDir():
		return FileState{Kind: 'd'}
	case !fi.Mode().IsRegular():
		return FileState{Kind: 'o', Hash: fi.Mode().Type().String()}
	}
	kind := byte('f')
	if fi.Mode()&0o111 != 0 {
		kind = 'x'
	}
	f, err := root.OpenFile(p, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return FileState{Kind: 'o', Hash: "unreadable"}
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, MaxWatchedFile+1))
	if len(data) > MaxWatchedFile || *total+len(data) > MaxWatchedTotal {
		h := sha256.New()
		h.Write(data)
		io.Copy(h, f)
		return FileState{Kind: kind, Hash: hex.EncodeToString(h.Sum(nil))}
	}
	*total += len(data)
	return FileState{Kind: kind, Data: data, Hash: hashOf(data), Kept: true}
}

// statState is the cheap identity of a path past [MaxWatchedPaths].
func statState(root *os.Root, p string) FileState {
	fi, err := root.Lstat(p)
	if err != nil {
		return FileState{}
	}
	kind := byte('o')
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		kind = 'l'
	case fi.IsDir():
		kind = 'd'
	case fi.Mode().IsRegular() && fi.Mode()&0o111 != 0:
		kind = 'x'
	case fi.Mode().IsRegular():
		kind = 'f'
	}
	return FileState{Kind: kind, Hash: fmt.Sprintf("stat:%d:%d:%v", fi.Size(), fi.ModTime().UnixNano(), fi.Mode())}
}

// CommittedState is the state of a committed entry of kind ('f', 'x', 'l'
// or 'g') and content, comparable with what a snapshot reads from disk.
func CommittedState(kind byte, data []byte) FileState {
	switch kind {
	case 'l':
		return FileState{Kind: 'l', Data: data, Hash: hashOf([]byte("link:" + string(data))), Kept: true}
	case 'g':
		return FileState{Kind: 'g'}
	}
	return FileState{Kind: kind, Data: data, Hash: hashOf(data), Kept: true}
}

const oNoFollow = syscall.O_NOFOLLOW

func hashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// ErrNotRestorable: the state before the command is not known in full.
var ErrNotRestorable = errors.New("its content before the command was not kept (too large, or past the snapshot's bounds)")

// Restore puts the changed paths back as they were before the command: a
// created path is removed, a changed or deleted one gets its content (and
// executable bit, or link target) back. Paths are handled deepest created
// first, so a directory or link the command put in a parent's place is
// gone before anything is written under it; nothing is written through a
// symbolic link (an [os.Root], and every parent is checked to be a real
// directory). Nothing is lost: what a path holds when it is restored
// (read again then, since it may have changed since [Snapshot.Changes]) is
// first copied into keep at the same path (nil keeps nothing), and a path
// whose content is too large to copy is left as it is. It returns the
// paths restored and, for each one it could not restore, why.
func Restore(root, git, keep *os.Root, changes []Change) (restored []string, failed map[string]error) {
	failed = map[string]error{}
	cs := append([]Change(nil), changes...)
	sort.SliceStable(cs, func(i, j int) bool {
		ri, rj := cs[i].Before.Kind == 0, cs[j].Before.Kind == 0
		if ri != rj {
			return ri // removals first
		}
		if ri {
			return strings.Count(cs[i].Path, "/") > strings.Count(cs[j].Path, "/")
		}
		return cs[i].Path < cs[j].Path
	})
	total := 0
	for _, c := range cs {
		r, p := root, c.Path
		if rest, ok := strings.CutPrefix(p, ControlPrefix); ok && git != nil {
			r, p = git, rest
		}
		if err := restoreOne(r, p, c, keep, &total); err != nil {
			failed[c.Path] = err
			continue
		}
		restored = append(restored, c.Path)
	}
	return restored, failed
}

// ErrNotKept: a path's current content is too large to keep a copy of,
// so it is not restored (that would lose it).
var ErrNotKept = errors.New("its content now is too large to keep a copy of, so it was left as it is")

func restoreOne(r *os.Root, p string, c Change, keep *os.Root, total *int) error {
	if !c.Restorable() {
		return ErrNotRestorable
	}
	if c.Before.Kind == 'd' {
		return nil // a directory stays; what the command put under it is its own change
	}
	if err := realParents(r, p); err != nil {
		return err
	}
	if err := keepCopy(r, p, keep, c.Path, total); err != nil {
		return err
	}
	if fi, err := r.Lstat(p); err == nil {
		if fi.IsDir() {
			if c.Before.Kind != 0 {
				return fmt.Errorf("a directory the command made now holds its place")
			}
			if err := r.Remove(p); err != nil { // only an empty one: its files are changes of their own
				return err
			}
		} else if err := r.Remove(p); err != nil {
			return err
		}
	}
	switch c.Before.Kind {
	case 0:
		return nil
	case 'l':
		return r.Symlink(string(c.Before.Data), p)
	case 'f', 'x':
		perm := os.FileMode(0o644)
		if c.Before.Kind == 'x' {
			perm = 0o755
		}
		if err := r.MkdirAll(path.Dir(p), 0o755); err != nil {
			return err
		}
		tmp := path.Join(path.Dir(p), ".planbridge-restore-"+hashOf([]byte(p))[:12])
		f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, perm)
		if err != nil {
			return err
		}
		_, werr := f.Write(c.Before.Data)
		if err := f.Chmod(perm); werr == nil {
			werr = err
		}
		if err := f.Close(); werr == nil {
			werr = err
		}
		if werr == nil {
			werr = r.Rename(tmp, p)
		}
		if werr != nil {
			r.Remove(tmp)
		}
		return werr
	}
	return fmt.Errorf("its earlier kind %q cannot be restored", c.Before.Kind)
}

// keepCopy copies what p holds now (a file or link) into keep at name.
func keepCopy(r *os.Root, p string, keep *os.Root, name string, total *int) error {
	if keep == nil {
		return nil
	}
	now := readState(r, p, total)
	switch now.Kind {
	case 'f', 'x', 'l':
	default:
		return nil // absent, a directory, or no content to lose
	}
	if !now.Kept {
		return ErrNotKept
	}
	if err := keep.MkdirAll(path.Dir(name), 0o700); err != nil {
		return fmt.Errorf("keep a copy: %w", err)
	}
	keep.Remove(name) // an earlier copy of the same restoration
	if now.Kind == 'l' {
		return keep.Symlink(string(now.Data), name)
	}
	return keep.WriteFile(name, now.Data, 0o600)
}

// realParents checks that every existing parent of p is a real directory.
func realParents(r *os.Root, p string) error {
	dir := path.Dir(p)
	var parts []string
	for dir != "." && dir != "/" {
		parts = append(parts, dir)
		dir = path.Dir(dir)
	}
	for i := len(parts) - 1; i >= 0; i-- {
		fi, err := r.Lstat(parts[i])
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is no longer a directory (a %s holds its place)", parts[i], kindName(fi.Mode()))
		}
	}
	return nil
}

func kindName(m fs.FileMode) string {
	if m&fs.ModeSymlink != 0 {
		return "symbolic link"
	}
	return "file"
}
