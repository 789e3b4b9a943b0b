package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"planbridge/internal/atomicfile"
)

// patchChange is one file of a validated patch: what is there now and
// what will be.
type patchChange struct {
	spelled string      // the path as the patch names it
	abs     string      // the file written or removed (a link itself when deleting a link)
	existed bool        // abs exists now
	old     []byte      // its content (a symlink's target text for a link)
	oldLink bool        // abs is a symbolic link (deletions only)
	perm    os.FileMode // mode of the original, or of a new file
	content []byte      // the new content
	remove  bool
	tmp     string // staged new content, next to abs
}

// applyPatch applies every file of files or none: every hunk is checked
// and every new file staged next to its target before the first one is
// moved into place; when a later move fails, the files already changed are
// restored from the originals read during validation, and staged files and
// directories created for them are removed. A path named twice (however
// spelled) is refused. commit, when not nil, runs before each move (tests
// inject failures there).
func applyPatch(env *Env, files []FilePatch, commit func(i int) error) ([]string, error) {
	changes := make([]*patchChange, 0, len(files))
	seen := map[string]string{}
	for _, f := range files {
		if f.OldPath != "" && f.NewPath != "" && f.OldPath != f.NewPath {
			return nil, fmt.Errorf("renames are not supported (%s → %s)", f.OldPath, f.NewPath)
		}
		c, err := validateChange(env, f)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[c.abs]; dup {
			return nil, fmt.Errorf("the patch changes %s twice (also as %s); send one section per file", c.spelled, prev)
		}
		seen[c.abs] = c.spelled
		changes = append(changes, c)
	}
	var made []string // directories created while staging, deepest last
	cleanup := func() {
		for _, c := range changes {
			if c.tmp != "" {
				os.Remove(c.tmp)
			}
		}
		for i := len(made) - 1; i >= 0; i-- {
			os.Remove(made[i]) // only if still empty
		}
	}
	for _, c := range changes {
		if c.remove {
			continue
		}
		dirs, err := mkdirs(env.writeAnchor(c.abs), filepath.Dir(c.abs))
		made = append(made, dirs...)
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("%s: %w", c.spelled, err)
		}
		if c.tmp, err = stage(c.abs, c.content, c.perm); err != nil {
			cleanup()
			return nil, fmt.Errorf("%s: %w", c.spelled, err)
		}
	}
	for i, c := range changes {
		err := error(nil)
		if commit != nil {
			err = commit(i)
		}
		if err == nil {
			err = c.move()
		}
		if err != nil {
			rerr := rollback(changes[:i+1])
			cleanup()
			if rerr != nil {
				return nil, fmt.Errorf("%s: %w; restoring the files already changed also failed: %v", c.spelled, err, rerr)
			}
			return nil, fmt.Errorf("%s: %w (nothing was changed)", c.spelled, err)
		}
	}
	dirs := map[string]bool{}
	for _, c := range changes {
		dirs[filepath.Dir(c.abs)] = true
	}
	for d := range dirs {
		_ = atomicfile.SyncDir(d) // best effort: the renames are done
	}
	var names []string
	for _, c := range changes {
		names = append(names, c.spelled)
	}
	sort.Strings(names)
	return names, nil
}

// validateChange resolves and checks one file of a patch and computes its
// new content; nothing is written.
func validateChange(env *Env, f FilePatch) (*patchChange, error) {
	c := &patchChange{spelled: f.Target(), remove: f.NewPath == "", perm: 0o644}
	abs, err := env.resolveWrite(c.spelled)
	if err != nil {
		return nil, err
	}
	c.abs = abs
	if c.remove {
		// Deleting a link removes the link: address it, not its target.
		if link, lerr := linkPath(env, c.spelled); lerr == nil {
			if st, err := os.Lstat(link); err == nil && st.Mode()&os.ModeSymlink != 0 {
				c.abs, c.oldLink = link, true
			}
		}
	}
	if f.OldPath == "" {
		if _, err := os.Lstat(c.abs); err == nil {
			return nil, fmt.Errorf("%s already exists", f.NewPath)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", f.NewPath, err)
		}
	} else {
		st, err := os.Lstat(c.abs)
		if err != nil {
			return nil, err
		}
		c.existed, c.perm = true, st.Mode().Perm()
		if c.oldLink {
			target, err := os.Readlink(c.abs)
			if err != nil {
				return nil, err
			}
			c.old = []byte(target)
		} else {
			if !st.Mode().IsRegular() {
				return nil, fmt.Errorf("%s is not a regular file", c.spelled)
			}
			if c.old, err = os.ReadFile(c.abs); err != nil {
				return nil, err
			}
		}
	}
	content, err := f.Apply(string(c.old))
	if err != nil && c.oldLink {
		// A model that read the link's target may delete it by content.
		if b, rerr := os.ReadFile(c.abs); rerr == nil {
			content, err = f.Apply(string(b))
		}
	}
	if err != nil {
		return nil, err
	}
	if c.remove && content != "" {
		return nil, fmt.Errorf("%s: the deletion does not remove the whole file", c.spelled)
	}
	c.content = []byte(content)
	return c, nil
}

// linkPath is the file p names without following a final symlink: its
// resolved parent and its own name.
func linkPath(env *Env, p string) (string, error) {
	base := filepath.Base(strings.TrimPrefix(p, WorkScheme))
	dir := strings.TrimSuffix(p, base)
	if dir == "" || dir == WorkScheme {
		dir += "."
	}
	d, err := env.Roots.Resolve(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, base), nil
}

// move puts one staged change into place.
func (c *patchChange) move() error {
	if c.remove {
		return os.Remove(c.abs)
	}
	if !c.existed {
		// link(2) refuses an existing target: a file that appeared since
		// validation is not overwritten.
		if err := os.Link(c.tmp, c.abs); err != nil {
			return err
		}
		os.Remove(c.tmp)
		c.tmp = ""
		return nil
	}
	if err := os.Rename(c.tmp, c.abs); err != nil {
		return err
	}
	c.tmp = ""
	return nil
}

// rollback restores the originals of changes that were moved (the last one
// may not have been: restoring it is harmless).
func rollback(changes []*patchChange) error {
	var errs []error
	for i := len(changes) - 1; i >= 0; i-- {
		c := changes[i]
		switch {
		case !c.existed:
			if c.tmp == "" { // moved: the new file is ours
				if err := os.Remove(c.abs); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
				}
			}
		case c.oldLink:
			if _, err := os.Lstat(c.abs); errors.Is(err, os.ErrNotExist) {
				if err := os.Symlink(string(c.old), c.abs); err != nil {
					errs = append(errs, err)
				}
			}
		case c.remove || c.tmp == "":
			if err := atomicfile.WriteFile(c.abs, c.old, c.perm); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// mkdirs creates dir and its missing parents below anchor (never anchor
// itself, which must exist, nor anything above it: see
// [Env.writeAnchor]), returning the ones it made.
func mkdirs(anchor, dir string) ([]string, error) {
	if fi, err := os.Stat(anchor); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s: %w", anchor, atomicfile.ErrGone)
	}
	if _, in := under(anchor, dir); !in {
		return nil, fmt.Errorf("%s is not below %s", dir, anchor)
	}
	var missing []string
	for d := dir; d != anchor; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
	}
	var made []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil {
			return made, err
		}
		made = append(made, missing[i])
	}
	return made, nil
}

// stage writes data to a synced temporary file next to path.
func stage(path string, data []byte, perm os.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".patch*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if werr == nil {
		werr = f.Chmod(perm)
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(name)
		return "", werr
	}
	return name, nil
}
