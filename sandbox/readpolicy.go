package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrOutsideRoots is returned, wrapped, for a path the [ReadPolicy] does
// not let anyone read.
var ErrOutsideRoots = errors.New("outside the read roots")

// neverRead are trees no read root can open, even "/" configured as one:
// other processes' memory and environment, kernel state, devices and
// terminals, and the process's own descriptors (fd 0 is the JSON-RPC
// stream).
var neverRead = []string{"/proc", "/sys", "/dev"}

// ReadPolicy says which paths may be read: those beneath one of Roots and
// not beneath one of Hidden (unless a root lies inside that hidden path
// and holds them), after resolving every symlink, and never
// under /proc, /sys or /dev (except /dev/null, which is always readable
// and writable). The zero value reads nothing but /dev/null. A ReadPolicy
// is immutable after [NewReadPolicy] and safe for concurrent use.
type ReadPolicy struct {
	roots  []string // resolved, cleaned, absolute
	hidden []string
}

// NewReadPolicy resolves roots and hidden paths (symlinks followed) and
// returns the policy. A root that does not exist is dropped (a work tree
// not created yet); a relative root, and one that would hold or lie in
// /proc, /sys or /dev ("/" among them), is an error.
func NewReadPolicy(roots, hidden []string) (*ReadPolicy, error) {
	p := &ReadPolicy{}
	for _, set := range []struct {
		in  []string
		out *[]string
	}{{roots, &p.roots}, {hidden, &p.hidden}} {
		for _, r := range set.in {
			if r == "" {
				continue
			}
			if !filepath.IsAbs(r) {
				return nil, fmt.Errorf("read root %q is not an absolute path", r)
			}
			real, err := filepath.EvalSymlinks(r)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("read root %q: %w", r, err)
			}
			if set.out == &p.roots {
				for _, n := range neverRead {
					if beneath(n, real) || beneath(real, n) {
						return nil, fmt.Errorf("read root %q would include %s, which nothing may read", r, n)
					}
				}
			}
			*set.out = append(*set.out, real)
		}
	}
	return p, nil
}

// Roots returns the resolved read roots.
func (p *ReadPolicy) Roots() []string { return append([]string(nil), p.roots...) }

// Hidden returns the resolved hidden paths.
func (p *ReadPolicy) Hidden() []string { return append([]string(nil), p.hidden...) }

// beneath reports whether path equals dir or lies inside it.
func beneath(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// allowedReal reports whether an already resolved absolute path is
// readable, and the root it lies in.
func (p *ReadPolicy) allowedReal(real string) (string, bool) {
	if real == os.DevNull {
		return "", true
	}
	for _, n := range neverRead {
		if beneath(real, n) {
			return "", false
		}
	}
	// The most specific root wins: a root inside a hidden path (work://
	// inside the state directory) is readable, the rest of it is not.
	best := ""
	for _, r := range p.roots {
		if beneath(real, r) && len(r) > len(best) {
			best = r
		}
	}
	if best == "" {
		return "", false
	}
	for _, h := range p.hidden {
		if beneath(real, h) && len(h) >= len(best) {
			return "", false
		}
	}
	return best, true
}

// Resolve returns path (absolute, or relative to dir) with every symlink
// resolved, or an error wrapping [ErrOutsideRoots] when the policy does not
// let it be read, or the lookup error (a *fs.PathError) when it does not
// exist. A missing path outside the roots reports ErrOutsideRoots, so the
// error does not tell whether a file exists there.
func (p *ReadPolicy) Resolve(dir, path string) (string, error) {
	if strings.IndexByte(path, 0) >= 0 {
		return "", &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("path contains a NUL byte")}
	}
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, path)
	}
	abs = filepath.Clean(abs)
	if abs == os.DevNull {
		return abs, nil
	}
	real, err := p.resolve(abs)
	if errors.Is(err, ErrOutsideRoots) {
		return "", &fs.PathError{Op: "open", Path: path, Err: ErrOutsideRoots}
	}
	if err != nil {
		// Judge a missing path by its lexical form, so that an error
		// never reveals what exists outside the roots.
		if _, ok := p.allowedReal(abs); !ok {
			return "", &fs.PathError{Op: "open", Path: path, Err: ErrOutsideRoots}
		}
		return "", err
	}
	if _, ok := p.allowedReal(real); !ok {
		return "", &fs.PathError{Op: "open", Path: path, Err: ErrOutsideRoots}
	}
	return real, nil
}

// resolve follows every symlink in the clean absolute path abs, as the
// kernel would, and refuses (ErrOutsideRoots) when any step — the path
// itself or a link's target — lies under /proc, /sys or /dev: a link
// through /proc/self/fd/0 is refused even when fd 0 happens to be
// /dev/null.
func (p *ReadPolicy) resolve(abs string) (string, error) {
	if abs == os.DevNull {
		return abs, nil
	}
	never := func(q string) bool {
		for _, n := range neverRead {
			if beneath(q, n) {
				return true
			}
		}
		return false
	}
	if never(abs) {
		return "", ErrOutsideRoots
	}
	done, todo := "/", strings.TrimPrefix(abs, "/")
	for links := 0; todo != ""; {
		var part string
		part, todo, _ = strings.Cut(todo, "/")
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, part)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > 40 {
			return "", &fs.PathError{Op: "open", Path: abs, Err: unix.ELOOP}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(done, target)
		}
		target = filepath.Clean(target)
		if never(target) && target != os.DevNull {
			return "", ErrOutsideRoots
		}
		done, todo = "/", strings.TrimPrefix(filepath.Join(target, todo), "/")
	}
	if never(done) && done != os.DevNull {
		return "", ErrOutsideRoots
	}
	return done, nil
}

// Open opens path read-only when the policy allows it. The check is made
// on the resolved path and then enforced by the kernel: the file is opened
// with openat2 beneath its root's descriptor with RESOLVE_BENEATH and
// RESOLVE_NO_MAGICLINKS, so a symlink swapped in between the check and the
// open cannot lead outside. Only regular files and directories open
// (FIFOs, sockets and devices inside a root are refused); the open never
// blocks and never makes a terminal the controlling one.
func (p *ReadPolicy) Open(dir, path string) (*os.File, error) {
	real, err := p.Resolve(dir, path)
	if err != nil {
		return nil, err
	}
	if real == os.DevNull {
		return os.Open(os.DevNull)
	}
	root, _ := p.allowedReal(real)
	rootFD, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(rootFD)
	rel, err := filepath.Rel(root, real)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrOutsideRoots}
	}
	fd, err := unix.Openat2(rootFD, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		if errors.Is(err, unix.EXDEV) {
			err = ErrOutsideRoots // a symlink changed under us
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), real)
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		err = fmt.Errorf("not a regular file or directory")
	}
	if err == nil {
		err = unix.SetNonblock(fd, false)
	}
	if err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return f, nil
}

// Stat is os.Stat (or os.Lstat when follow is false) for a path the policy
// lets be read; others report [ErrOutsideRoots].
func (p *ReadPolicy) Stat(dir, path string, follow bool) (fs.FileInfo, error) {
	if !follow {
		abs := path
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(dir, path)
		}
		abs = filepath.Clean(abs)
		// The link itself must sit in an allowed directory.
		if _, err := p.Resolve("/", filepath.Dir(abs)); err != nil {
			return nil, &fs.PathError{Op: "lstat", Path: path, Err: ErrOutsideRoots}
		}
		return os.Lstat(abs)
	}
	real, err := p.Resolve(dir, path)
	if err != nil {
		return nil, err
	}
	return os.Stat(real)
}
