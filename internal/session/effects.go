package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"planbridge/internal/agent"
	"planbridge/internal/store"
	"planbridge/review"
	"planbridge/worktree"
)

// scopeWatch holds an implementation's shell commands to its declared
// scope. What a command writes cannot be known in advance, so the checkout
// is snapshotted before it and compared after it ([review.Take]); what
// changed outside the scope is then treated as a file tool's write there:
// the person is asked whether to extend the scope to it or restore it,
// in every permission mode, and where no person can answer it is restored
// and the implementation pauses.
type scopeWatch struct {
	s          *Session
	unattended bool
}

// watcher is the [agent.Watcher] of a non-Plan turn while a declared scope
// is held (nil otherwise).
func (s *Session) watcher(plan, unattended bool) agent.Watcher {
	if s.heldScope(plan) == nil {
		return nil
	}
	return &scopeWatch{s: s, unattended: unattended}
}

// AskScopeEffects is the kind of a question about what a command already
// changed outside the declared scope: allowing extends the scope,
// denying restores the changes ([AskKind]).
const AskScopeEffects = "scope_effects"

type askKindKey struct{}

// AskKind is the kind of the question an [Asker] is called for: "" for
// "may this call run?", or [AskScopeEffects].
func AskKind(ctx context.Context) string {
	k, _ := ctx.Value(askKindKey{}).(string)
	return k
}

// gitTree is [review.Tree] over one opened checkout.
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

func (g gitTree) Committed(commit, p string) (review.FileState, bool) {
	e, err := g.r.ReadCommitEntry(commit, p)
	if err != nil {
		return review.FileState{}, false
	}
	return review.CommittedState(e.Kind, e.Data), true
}

func (g gitTree) Changed(a, b string, max int) ([]string, bool, error) {
	return g.r.ChangedPaths(a, b, max)
}

// opened is the checkout of an implementation, opened for one look.
type opened struct {
	tree      gitTree
	root, git *os.Root
}

func openCheckout(rootDir string) (*opened, error) {
	r, err := worktree.Open(rootDir)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(r.Root)
	if err != nil {
		r.Close()
		return nil, err
	}
	o := &opened{tree: gitTree{r}, root: root}
	if g, err := os.OpenRoot(r.CommonDir); err == nil {
		o.git = g
	}
	return o, nil
}

func (o *opened) Close() {
	o.tree.r.Close()
	o.root.Close()
	if o.git != nil {
		o.git.Close()
	}
}

// maxListed bounds the paths a question or notice names one by one.
const maxListed = 20

func listPaths(ps []string) string {
	if len(ps) <= maxListed {
		return strings.Join(ps, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ps[:maxListed], ", "), len(ps)-maxListed)
}

func (w *scopeWatch) Before(ctx context.Context, call agent.ToolCall) (func(context.Context, string) string, error) {
	s := w.s
	base, err := s.loadBase()
	if err != nil || base.Root == "" {
		return nil, nil // no checkout: nothing to compare with (see doc.go)
	}
	o, err := openCheckout(base.Root)
	if err != nil {
		return nil, err
	}
	snap, err := review.Take(ctx, o.tree, o.root, o.git)
	o.Close()
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, out string) string {
		note := w.after(ctx, call, base, snap)
		if note == "" {
			return out
		}
		// First, so the result still ends with its exit status line.
		return note + "\n" + out
	}, nil
}

// after compares the checkout with snap and settles what the command
// changed outside the scope; it returns a note for the model ("" none).
func (w *scopeWatch) after(ctx context.Context, call agent.ToolCall, base *implBase, snap *review.Snapshot) string {
	s := w.s
	o, err := openCheckout(base.Root)
	if err != nil {
		return "[planbridge: the workspace could not be compared after this command: " + err.Error() + "]"
	}
	defer o.Close()
	changes, err := snap.Changes(context.WithoutCancel(ctx), o.tree, o.root, o.git)
	if err != nil {
		return "[planbridge: the workspace could not be compared after this command: " + err.Error() + "]"
	}
	sc, err := s.loadScope()
	if err != nil || sc == nil || !sc.Declared() {
		return ""
	}
	var changed []string
	for _, c := range changes {
		changed = append(changed, c.Path)
	}
	s.noteChanged(call.ID, changed)
	outside, paths := sc.Outside(changes, base.Prefix)
	if len(outside) == 0 {
		return ""
	}
	var a struct{ Command string }
	_ = json.Unmarshal(call.Arguments, &a)
	list := listPaths(paths)
	s.m.mu.Lock()
	ask := s.m.asker
	s.m.mu.Unlock()
	if !w.unattended && ask != nil {
		ctx := context.WithValue(ctx, askKindKey{}, AskScopeEffects)
		q := fmt.Sprintf("%s changed %s, outside the scope declared by the accepted plan: extend the scope to %s? (Deny restores them as they were before the command.)", call.Name, list, list)
		if ok, err := ask(ctx, s.id, call, q); ok && err == nil {
			s.recordScope(func(sc *review.Scope) { sc.Extend(paths, base.Prefix) })
			return "[planbridge: this command changed " + list + " outside the declared scope; the person extended the scope to them]"
		}
		return w.restore(a.Command, outside, o, "person")
	}
	note := w.restore(a.Command, outside, o, "unattended")
	s.pauseForScope(call.Name + " changed " + list + ", outside the declared scope, where no person could answer; restored")
	return note
}

// restore puts the changes back and records that in the scope.
func (w *scopeWatch) restore(command string, cs []review.Change, o *opened, by string) string {
	done, failed := review.Restore(o.root, o.git, cs)
	rs := review.Restoration{Command: command, Paths: done, By: by}
	if rs.Paths == nil {
		rs.Paths = []string{}
	}
	for p, err := range failed {
		rs.Failed = append(rs.Failed, p+": "+err.Error())
	}
	sort.Strings(rs.Failed)
	w.s.recordScope(func(sc *review.Scope) { sc.Restored = append(sc.Restored, rs) })
	note := "[planbridge: this command changed " + listPaths(done) + " outside the declared scope; they were restored as they were before it"
	if len(done) == 0 {
		note = "[planbridge: this command changed files outside the declared scope"
	}
	if len(rs.Failed) > 0 {
		note += "; NOT restored: " + listPaths(rs.Failed)
	}
	return note + "]"
}

// recordScope changes the implementation's scope file under scopeMu and
// publishes the result.
func (s *Session) recordScope(change func(*review.Scope)) {
	scopeMu <- struct{}{}
	defer func() { <-scopeMu }()
	sc, err := s.loadScope()
	if err != nil || sc == nil {
		s.m.log.Error("record scope change: no scope", "session", s.id, "err", err)
		return
	}
	change(sc)
	data, _ := json.Marshal(sc)
	if err := store.WriteFileAtomic(s.scopePath(), data, 0o600); err != nil {
		s.m.log.Error("record scope change", "session", s.id, "err", err)
		return
	}
	s.emit(ScopeEvent{*sc})
}

// noteChanged keeps, for the tool log, the files a watched call changed.
func (s *Session) noteChanged(callID string, paths []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watched == nil {
		s.watched = map[string][]string{}
	}
	s.watched[callID] = paths
}

// takeChanged returns (and forgets) what noteChanged kept for a call.
func (s *Session) takeChanged(callID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.watched[callID]
	delete(s.watched, callID)
	return p
}
