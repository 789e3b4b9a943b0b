package worktree

import (
	"path/filepath"
	"strings"
	"sync"
)

// An Ignorer answers whether a path of the checkout is ignored, with the
// same files and precedence as the status walk: core.excludesFile, then
// info/exclude, then each .gitignore from the top down to the path's
// directory (in-tree files opened without following a symbolic link).
// Tracked files are not special-cased: it answers for the patterns only.
// It is safe for concurrent use.
type Ignorer struct {
	root string
	top  *ignoreList

	mu    sync.Mutex
	lists map[string]*ignoreList // by directory ("" or "dir/")
}

// Ignorer returns the checkout's ignore matcher.
func (r *Repo) Ignorer() *Ignorer {
	excludes := &ignoreList{patterns: readIgnoreFile(r.cfg.excludesFile, false)}
	info := &ignoreList{parent: excludes, patterns: readIgnoreFile(filepath.Join(r.CommonDir, "info", "exclude"), false)}
	return &Ignorer{root: r.Root + "/", top: info, lists: map[string]*ignoreList{}}
}

// Ignored reports whether rel (slash-separated, relative to the checkout's
// root, no trailing slash) is ignored; isDir says it is a directory. A path
// inside .git is always ignored. Like git, a caller walking the tree does
// not descend into an ignored directory.
func (g *Ignorer) Ignored(rel string, isDir bool) bool {
	if rel == ".git" || strings.HasPrefix(rel, ".git/") {
		return true
	}
	dir := ""
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		dir = rel[:i+1]
	}
	return g.list(dir).excluded(rel, isDir)
}

// list returns the chain of patterns that applies inside dir ("" or "a/b/").
func (g *Ignorer) list(dir string) *ignoreList {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.listLocked(dir)
}

func (g *Ignorer) listLocked(dir string) *ignoreList {
	if l, ok := g.lists[dir]; ok {
		return l
	}
	parent := g.top
	if dir != "" {
		up := strings.TrimSuffix(dir, "/")
		i := strings.LastIndexByte(up, '/')
		parent = g.listLocked(up[:i+1])
	}
	l := parent
	if ps := readIgnoreFile(g.root+dir+".gitignore", true); len(ps) > 0 {
		l = &ignoreList{parent: parent, base: dir, patterns: ps}
	}
	g.lists[dir] = l
	return l
}
