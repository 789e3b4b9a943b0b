package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"planbridge/sandbox"
)

// WorkScheme prefixes paths in the session's own artifact tree.
const WorkScheme = "work://"

// ErrOutsideWorkspace is returned for a path that escapes its root.
var ErrOutsideWorkspace = errors.New("path escapes the workspace")

// Roots confines tool paths: ordinary paths to Workspace, work:// paths to
// Work (the session's artifact directory). Reads may also reach ReadRoots,
// the directories a person added in configuration; writes never do.
//
// Reads by every tool and by Plan's shell obey one policy,
// [sandbox.ReadPolicy] over [Roots.ReadPolicyRoots]: the workspace,
// work:// and the read roots, symlinks resolved, never /proc, /sys or /dev.
type Roots struct {
	Workspace string
	Work      string
	ReadRoots []string
	// Hidden are paths no read may reach even inside a root (planbridge's
	// state directory), except work:// itself.
	Hidden []string
}

// ReadPolicyRoots lists what may be read: the workspace, the work:// tree
// (when the session has one) and the configured read roots.
func (r Roots) ReadPolicyRoots() []string {
	roots := []string{r.Workspace}
	if r.Work != "" {
		roots = append(roots, r.Work)
	}
	return append(roots, r.ReadRoots...)
}

// ResolveRead maps a tool path for reading: work:// paths and paths
// relative to the workspace as [Roots.Resolve] does, absolute paths
// anywhere the read policy allows. The result has every symlink resolved;
// a path outside the policy wraps [ErrOutsideWorkspace].
func (r Roots) ResolveRead(p string) (string, error) {
	abs, err := r.readAbs(p)
	if err != nil {
		return "", err
	}
	pol, err := sandbox.NewReadPolicy(r.ReadPolicyRoots(), r.Hidden)
	if err != nil {
		return "", err
	}
	real, err := pol.Resolve("/", abs)
	if errors.Is(err, sandbox.ErrOutsideRoots) {
		return "", fmt.Errorf("%s: %w (reads are confined to the workspace, work:// and configured read roots)", p, ErrOutsideWorkspace)
	}
	return real, err
}

// OpenRead opens a tool path for reading under the read policy, checked
// race-free ([sandbox.ReadPolicy.Open]).
func (r Roots) OpenRead(p string) (*os.File, error) {
	abs, err := r.readAbs(p)
	if err != nil {
		return nil, err
	}
	pol, err := sandbox.NewReadPolicy(r.ReadPolicyRoots(), r.Hidden)
	if err != nil {
		return nil, err
	}
	f, err := pol.Open("/", abs)
	if errors.Is(err, sandbox.ErrOutsideRoots) {
		return nil, fmt.Errorf("%s: %w (reads are confined to the workspace, work:// and configured read roots)", p, ErrOutsideWorkspace)
	}
	return f, err
}

func (r Roots) readAbs(p string) (string, error) {
	switch {
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("path contains a NUL byte")
	case IsWorkPath(p):
		if r.Work == "" {
			return "", fmt.Errorf("%s: this session has no work:// tree", p)
		}
		rel := filepath.Clean(strings.TrimPrefix(p, WorkScheme))
		if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", fmt.Errorf("%s: %w", p, ErrOutsideWorkspace)
		}
		return filepath.Join(r.Work, rel), nil
	case filepath.IsAbs(p):
		return filepath.Clean(p), nil
	}
	return filepath.Join(r.Workspace, p), nil
}

// IsWorkPath reports whether p addresses the session's work:// tree.
func IsWorkPath(p string) bool { return strings.HasPrefix(p, WorkScheme) }

// Resolve maps a tool path to an absolute path inside its root. It refuses
// `..` escapes, absolute paths outside the workspace and symlinks that lead
// out of the root (checked on the longest existing prefix, so a path to a
// file that does not exist yet is still checked through its parents).
func (r Roots) Resolve(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path contains a NUL byte")
	}
	root, rel := r.Workspace, p
	switch {
	case IsWorkPath(p):
		if r.Work == "" {
			return "", fmt.Errorf("%s: this session has no work:// tree", p)
		}
		root, rel = r.Work, strings.TrimPrefix(p, WorkScheme)
		if filepath.IsAbs(rel) {
			return "", fmt.Errorf("%s: %w", p, ErrOutsideWorkspace)
		}
	case filepath.IsAbs(p):
		var err error
		if rel, err = filepath.Rel(root, filepath.Clean(p)); err != nil {
			return "", fmt.Errorf("%s: %w", p, ErrOutsideWorkspace)
		}
	}
	rel = filepath.Clean(rel)
	if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%s: %w", p, ErrOutsideWorkspace)
	}
	abs := filepath.Join(root, rel)
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		if IsWorkPath(p) && os.IsNotExist(err) {
			return abs, nil // work tree not created yet: nothing to follow
		}
		return "", fmt.Errorf("workspace: %w", err)
	}
	// Follow symlinks on the longest existing prefix.
	probe := abs
	var tail []string
	for {
		if _, err := os.Lstat(probe); err == nil {
			break
		}
		parent := filepath.Dir(probe)
		if parent == probe {
			break
		}
		tail = append(tail, filepath.Base(probe))
		probe = parent
	}
	real, err := filepath.EvalSymlinks(probe)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	if real != realRoot && !strings.HasPrefix(real, realRoot+string(filepath.Separator)) {
		return "", fmt.Errorf("%s: %w (through a symlink)", p, ErrOutsideWorkspace)
	}
	for i := len(tail) - 1; i >= 0; i-- {
		real = filepath.Join(real, tail[i])
	}
	return real, nil
}

// Display turns an absolute path back into the form tools show the model.
func (r Roots) Display(abs string) string {
	if r.Work != "" {
		if rel, err := filepath.Rel(r.Work, abs); err == nil && !strings.HasPrefix(rel, "..") {
			return WorkScheme + filepath.ToSlash(rel)
		}
	}
	if rel, err := filepath.Rel(r.Workspace, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return abs
}
