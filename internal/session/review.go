package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"planbridge/review"
	"planbridge/worktree"
)

// planChecks caches the pre-approval checks of one proposal body.
type planChecks struct {
	hash     string
	warnings []review.Warning
}

// planWarnings returns the checks of the proposal with this hash, running
// them (outside the session lock) the first time the card shows it.
func (s *Session) planWarnings(hash, body, workspace string) []review.Warning {
	s.mu.Lock()
	c := s.checks
	s.mu.Unlock()
	if c.hash == hash && c.warnings != nil {
		return c.warnings
	}
	w := checkPlan(body, workspace)
	s.mu.Lock()
	s.checks = planChecks{hash: hash, warnings: w}
	s.mu.Unlock()
	return w
}

// checksHint is the hint offered to the model with feedback on the
// proposal with this hash ("" when its checks found nothing).
func (s *Session) checksHint(hash string) string {
	s.mu.Lock()
	c := s.checks
	s.mu.Unlock()
	if c.hash != hash {
		return ""
	}
	return review.Hint(c.warnings)
}

// checkPlan runs [review.Check] over the workspace through an [os.Root]
// (no symbolic link leads out of it), skipping what git ignores when the
// workspace is a checkout. The result is never nil.
func checkPlan(body, workspace string) []review.Warning {
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return []review.Warning{}
	}
	defer root.Close()
	ws := review.Workspace{FS: root.FS()}
	if repo, err := worktree.Open(workspace); err == nil {
		defer repo.Close()
		ign := repo.Ignorer()
		prefix := relPrefix(repo.Root, workspace)
		ws.Ignored = func(rel string, isDir bool) bool { return ign.Ignored(prefix+rel, isDir) }
	}
	w := review.Check(body, ws, review.Limits{})
	if w == nil {
		w = []review.Warning{}
	}
	return w
}

// relPrefix is workspace relative to the checkout root, as "sub/dir/" or "".
func relPrefix(root, workspace string) string {
	if rel, err := relSlash(root, workspace); err == nil && rel != "." {
		return rel + "/"
	}
	return ""
}

func relSlash(root, dir string) (string, error) {
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%s is not under %s", dir, root)
	}
	return filepath.ToSlash(rel), nil
}
