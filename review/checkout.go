package review

import (
	"context"
	"os"

	"planbridge/worktree"
)

// gitTree is [Tree] over one opened checkout.
type gitTree struct{ r *worktree.Repo }

func (g gitTree) Head() string {
	_, h, _ := g.r.Head()
	return h
}

func (g gitTree) Dirty(ctx context.Context) ([]string, error) {
	es, err := g.r.Status(ctx)
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.Path)
	}
	return out, err
}

func (g gitTree) Committed(commit, p string) (FileState, bool) {
	e, err := g.r.ReadCommitEntry(commit, p)
	if err != nil {
		return FileState{}, false
	}
	return CommittedState(e.Kind, e.Data), true
}

func (g gitTree) Changed(a, b string, max int) ([]string, bool, error) {
	return g.r.ChangedPaths(a, b, max)
}

// checkout is the checkout of an implementation, opened for one look:
// its [Tree], its root and its git directory as [os.Root]s (git nil when
// that cannot be opened).
type checkout struct {
	tree      gitTree
	root, git *os.Root
}

func openCheckout(dir string) (*checkout, error) {
	r, err := worktree.Open(dir)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(r.Root)
	if err != nil {
		r.Close()
		return nil, err
	}
	o := &checkout{tree: gitTree{r}, root: root}
	if g, err := os.OpenRoot(r.CommonDir); err == nil {
		o.git = g
	}
	return o, nil
}

func (o *checkout) Close() {
	o.tree.r.Close()
	o.root.Close()
	if o.git != nil {
		o.git.Close()
	}
}

// CheckDir runs [Check] over the workspace directory through an [os.Root]
// (no symbolic link leads out of it), skipping what git ignores when the
// workspace is (inside) a checkout. The result is never nil.
func CheckDir(body, workspace string) []Warning {
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return []Warning{}
	}
	defer root.Close()
	ws := Workspace{FS: root.FS()}
	if repo, err := worktree.Open(workspace); err == nil {
		defer repo.Close()
		ign := repo.Ignorer()
		prefix := repo.Prefix(workspace)
		ws.Ignored = func(rel string, isDir bool) bool { return ign.Ignored(prefix+rel, isDir) }
	}
	w := Check(body, ws, Limits{})
	if w == nil {
		w = []Warning{}
	}
	return w
}
