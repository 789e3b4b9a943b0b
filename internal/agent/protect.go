package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// WriteClass is what a file write would change, as the gate sees it.
type WriteClass int

// Write classes, from harmless to most guarded.
const (
	// WriteWorkspace is an ordinary workspace file.
	WriteWorkspace WriteClass = iota
	// WriteNotes is the session's own scratch area: work:// outside plans/.
	WriteNotes
	// WriteProtected is a repository control file (.git/**, a linked
	// worktree's git dir) or planbridge's own project configuration
	// (.planbridge/**, skills): git and planbridge run what is written there.
	WriteProtected
	// WritePublished is work://plans/**: the published plan belongs to the
	// session, never to a model tool.
	WritePublished
)

func (c WriteClass) String() string {
	return [...]string{"workspace", "notes", "protected", "published"}[c]
}

// PlansDir is the work:// folder of published plans.
const PlansDir = "plans"

// ErrProtected is returned by a tool that was about to write a protected
// path without the person's confirmation (the gate asks first; this is the
// executor's own check, made again on the path it really writes).
var ErrProtected = errors.New("refused: repository control file")

// ErrPublished is returned for a model write under work://plans/.
var ErrPublished = errors.New("refused: work://plans/ holds the published plan, which belongs to the session; write your notes under work://notes/")

// WriteTarget is one path a call writes, resolved.
type WriteTarget struct {
	Path  string // as the tool call spelled it
	Abs   string // the file really written (symlinks followed)
	Class WriteClass
	Why   string // for WriteProtected: what the path is, in words
	// Rel is, for WriteWorkspace, Abs relative to the resolved workspace,
	// slash-separated: the path a declared scope judges.
	Rel string
}

// ClassifyWrite resolves p like [Roots.Resolve] and says what writing it
// would change. extra are further absolute directories whose contents are
// project configuration (skills folders outside the workspace).
//
// The model is git's own: a path is a repository control file when any of
// its components is a git directory name as a case-insensitive file system
// would see it (".git", ".GIT", ".git." and ".git " on NTFS, "git~1", with
// the code points HFS+ ignores removed), when it lies in the git
// directory a linked worktree's ".git" file names, or when any folder
// above it in the workspace is a git directory by git's own test ([isGitDir]:
// a ".git" symlink's target, a nested repository's store, a bare
// repository). The check runs on the resolved path, so "..", symlinks and
// absolute spellings cannot hide it, and again on the path as spelled,
// so a link that lives in ".git" or work://plans/ is guarded there too.
func (r Roots) ClassifyWrite(p string, extra ...string) (WriteTarget, error) {
	abs, err := r.Resolve(p)
	if err != nil {
		return WriteTarget{}, err
	}
	t := WriteTarget{Path: p, Abs: abs, Class: WriteWorkspace}
	// The resolved path is what a write changes; the spelled one is where
	// a link itself lives (deleting a link changes its folder, and a link
	// named ".git" is git's). Either one guarded makes the write guarded.
	work, ws := "", realOr(r.Workspace)
	if r.Work != "" {
		work = realOr(r.Work)
	}
	t.Class, t.Why = r.classifyAbs(abs, work, ws, extra)
	if t.Class == WriteWorkspace {
		if h := hooksDir(ws); h != "" {
			if _, in := under(h, abs); in {
				t.Class, t.Why = WriteProtected, "git's hooks directory (core.hooksPath): git runs these files itself"
			}
		}
	}
	if lex, ok := r.lexical(p); ok {
		lw := ""
		if r.Work != "" {
			lw = filepath.Clean(r.Work)
		}
		if c, why := r.classifyAbs(lex, lw, filepath.Clean(r.Workspace), extra); c > t.Class {
			t.Class, t.Why = c, why
		}
	}
	if rel, in := under(ws, abs); in && t.Class == WriteWorkspace {
		t.Rel = filepath.ToSlash(rel)
	}
	return t, nil
}

// lexical is p joined to its root without following any symlink.
func (r Roots) lexical(p string) (string, bool) {
	switch {
	case IsWorkPath(p):
		if r.Work == "" {
			return "", false
		}
		return filepath.Join(r.Work, filepath.Clean("/"+strings.TrimPrefix(p, WorkScheme))), true
	case filepath.IsAbs(p):
		return filepath.Clean(p), true
	}
	return filepath.Join(r.Workspace, filepath.Clean("/"+p)), true
}

// classifyAbs classifies an absolute path against the work tree and
// workspace roots (both spelled the same way as abs: resolved or not).
func (r Roots) classifyAbs(abs, work, ws string, extra []string) (WriteClass, string) {
	if work != "" {
		if rel, ok := under(work, abs); ok {
			first, _, _ := strings.Cut(rel, string(filepath.Separator))
			if strings.EqualFold(foldName(first), PlansDir) {
				return WritePublished, ""
			}
			return WriteNotes, ""
		}
	}
	if rel, ok := under(ws, abs); ok {
		parts := strings.Split(rel, string(filepath.Separator))
		for _, c := range parts {
			if isDotGit(c) {
				return WriteProtected, "a git repository control file (git runs commands named in its config and hooks)"
			}
		}
		if len(parts) > 0 && strings.EqualFold(foldName(parts[0]), ".planbridge") {
			return WriteProtected, "planbridge's project configuration (skills and settings the agent follows)"
		}
		// Any git directory, whatever its name: a .git symlink's target,
		// a nested repository's gitdir, a bare repository.
		for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
			if _, in := under(ws, d); !in {
				break
			}
			if isGitDir(d) {
				return WriteProtected, "a git directory (git runs commands named in its config and hooks)"
			}
			if d == ws {
				break
			}
		}
	}
	for _, g := range gitDirsOf(ws) {
		if _, ok := under(g, abs); ok {
			return WriteProtected, "the git directory of this worktree (git runs commands named in its config and hooks)"
		}
	}
	for _, d := range extra {
		if d == "" {
			continue
		}
		_, in := under(realOr(d), abs)
		if _, spelled := under(filepath.Clean(d), abs); in || spelled {
			return WriteProtected, "planbridge's skills configuration"
		}
	}
	return WriteWorkspace, ""
}

// isGitDir is git's is_git_directory(), made broader where that is the
// safe side: a directory with a HEAD (file or link) and either its own
// objects/ and refs/ directories or a commondir file (a linked worktree's
// or a submodule's git directory, whose objects live in the common one).
func isGitDir(d string) bool {
	st, err := os.Lstat(filepath.Join(d, "HEAD"))
	if err != nil || st.IsDir() {
		return false
	}
	if st, err := os.Lstat(filepath.Join(d, "commondir")); err == nil && !st.IsDir() {
		return true
	}
	for _, sub := range []string{"objects", "refs"} {
		if st, err := os.Stat(filepath.Join(d, sub)); err != nil || !st.IsDir() {
			return false
		}
	}
	return true
}

// under reports whether abs is root or inside it, with the relative path.
func under(root, abs string) (string, bool) {
	if abs == root {
		return ".", true
	}
	if !strings.HasPrefix(abs, root+string(filepath.Separator)) {
		return "", false
	}
	return abs[len(root)+1:], true
}

// writeAnchor is the directory below which a write of abs (resolved) may
// create the directories it needs, and which it never creates itself: the
// session's directory (the work:// root's parent) for a work:// target, so
// that a write racing the session's delete brings back nothing; the
// workspace for a target in it; else abs's own directory (none created).
func (e *Env) writeAnchor(abs string) string {
	if e.Roots.Work != "" {
		// The session's directory, which exists while the session does
		// (work:// itself may not exist yet), as spelled or resolved.
		lex := filepath.Dir(filepath.Clean(e.Roots.Work))
		for _, sess := range []string{realOr(lex), lex} {
			if w := filepath.Join(sess, filepath.Base(e.Roots.Work)); w == abs || strings.HasPrefix(abs, w+string(filepath.Separator)) {
				return sess
			}
		}
	}
	if ws := realOr(e.Roots.Workspace); ws == abs || strings.HasPrefix(abs, ws+string(filepath.Separator)) {
		return ws
	}
	return filepath.Dir(abs)
}

func realOr(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// foldName removes what case-insensitive file systems ignore at the end of
// a name (NTFS: trailing dots and spaces) and anywhere in it (HFS+: the
// ignorable code points git's is_hfs_dotgit skips).
func foldName(c string) string {
	c = strings.Map(func(r rune) rune {
		switch {
		case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
			return -1
		}
		return r
	}, c)
	return strings.TrimRight(c, ". ")
}

// isDotGit reports whether a path component names a git directory on some
// file system git supports.
func isDotGit(c string) bool {
	f := foldName(c)
	return strings.EqualFold(f, ".git") || strings.EqualFold(f, "git~1")
}

// gitDirsOf returns the directories a ".git" file at the workspace root
// names (a linked worktree or submodule: "gitdir: PATH", plus that git
// directory's "commondir"), resolved. A ".git" directory is covered by the
// component rule and yields nothing here.
func gitDirsOf(ws string) []string {
	b, err := readSmall(filepath.Join(ws, ".git"))
	if err != nil {
		return nil
	}
	line, _, _ := strings.Cut(string(b), "\n")
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return nil
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(ws, dir)
	}
	dirs := []string{realOr(dir)}
	if c, err := readSmall(filepath.Join(dir, "commondir")); err == nil {
		common := strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(dir, common)
		}
		dirs = append(dirs, realOr(common))
	}
	return dirs
}

// hooksDir is the directory git runs this worktree's hooks from, as git
// itself resolves it (core.hooksPath from any config level, relative to
// the worktree, "~" expanded; .git/hooks by default): husky and similar
// tools point it at an ordinary folder of the checkout. "" when ws is not
// in a repository.
func hooksDir(ws string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", ws, "rev-parse", "--git-path", "hooks")
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	h := strings.TrimRight(string(out), "\r\n")
	if h == "" || strings.Contains(h, "\n") {
		return ""
	}
	if !filepath.IsAbs(h) {
		h = filepath.Join(ws, h)
	}
	return realOr(h)
}

// readSmall reads a regular file of at most 4 KiB.
func readSmall(p string) ([]byte, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > 4<<10 {
		return nil, fmt.Errorf("%s: not a small regular file", p)
	}
	return os.ReadFile(p)
}

// resolveWrite is the executors' own check on a path they are about to
// write: it resolves p again (the gate decided on an earlier look) and
// refuses the published plan always and protected paths unless the person
// confirmed this call.
func (e *Env) resolveWrite(p string) (string, error) {
	t, err := e.Roots.ClassifyWrite(p, e.Protected...)
	if err != nil {
		return "", err
	}
	switch t.Class {
	case WritePublished:
		return "", fmt.Errorf("%s: %w", p, ErrPublished)
	case WriteProtected:
		if !e.AllowProtected {
			return "", fmt.Errorf("%s: %w: %s", p, ErrProtected, t.Why)
		}
	}
	return t.Abs, nil
}
