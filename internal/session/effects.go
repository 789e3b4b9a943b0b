package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

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
	dir := s.baseDir()
	var a struct{ Command string }
	_ = json.Unmarshal(call.Arguments, &a)
	// The mark first: it may record an earlier process's unsettled
	// command in the scope, which the records below then include.
	if err := s.beginWatch(dir, a.Command); err != nil {
		return nil, err
	}
	recs, err := readRecords(dir)
	if err != nil {
		s.endWatch(dir)
		return nil, err
	}
	return func(ctx context.Context, out string) string {
		defer s.endWatch(dir)
		var notes []string
		if touched := w.s.restoreRecords(dir, recs); len(touched) > 0 {
			notes = append(notes, "[planbridge: this command changed planbridge's own records of the implementation ("+strings.Join(touched, ", ")+"); they were restored]")
		}
		if note := w.after(ctx, call, base, snap); note != "" {
			notes = append(notes, note)
		}
		if len(notes) == 0 {
			return out
		}
		// First, so the result still ends with its exit status line.
		return strings.Join(notes, "\n") + "\n" + out
	}, nil
}

// recordFiles are the implementation's own records in its base directory.
// An unconfined command can reach them (they lie outside the workspace,
// not out of its reach): it could widen its own scope or rewrite its base.
// Each watched command is checked not to have changed them.
var recordFiles = []string{"base.json", "scope.json", "tools.jsonl", watchFile}

// readRecords reads the record files (a nil entry: absent).
func readRecords(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, name := range recordFiles {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
}

// restoreRecords puts back the record files a command changed and names
// them (telling the person too).
func (s *Session) restoreRecords(dir string, before map[string][]byte) []string {
	var touched []string
	for _, name := range recordFiles {
		p := filepath.Join(dir, name)
		now, err := os.ReadFile(p)
		if err != nil {
			now = nil
		}
		if string(now) == string(before[name]) && (now == nil) == (before[name] == nil) {
			continue
		}
		touched = append(touched, name)
		if before[name] == nil {
			err = os.RemoveAll(p)
		} else {
			err = store.WriteFileAtomic(p, before[name], 0o600)
		}
		if err != nil {
			s.m.log.Error("restore an implementation record", "session", s.id, "file", name, "err", err)
		}
	}
	if len(touched) > 0 {
		s.emit(NoticeEvent{Message: "A command changed planbridge's records of the implementation (" + strings.Join(touched, ", ") + "); they were restored."})
	}
	return touched
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
		ok, err := ask(ctx, s.id, call, q)
		if ok && err == nil {
			s.recordScope(func(sc *review.Scope) { sc.Extend(paths, base.Prefix) })
			return "[planbridge: this command changed " + list + " outside the declared scope; the person extended the scope to them]"
		}
		by := "person"
		if err != nil {
			by = "no answer" // interrupted, timed out, or the client went away
		}
		return w.restore(a.Command, outside, o, by)
	}
	note := w.restore(a.Command, outside, o, "unattended")
	s.pauseForScope(call.Name + " changed " + list + ", outside the declared scope, where no person could answer; restored")
	return note
}

// restore puts the changes back and records that in the scope.
func (w *scopeWatch) restore(command string, cs []review.Change, o *opened, by string) string {
	// What the command left is kept beside the implementation's records:
	// restoring never loses it (another process may have written there).
	n := 1
	if sc, err := w.s.loadScope(); err == nil && sc != nil {
		n = len(sc.Restored) + 1
	}
	rel := filepath.Join("restored", strconv.Itoa(n))
	dir := filepath.Join(w.s.baseDir(), rel)
	var keep *os.Root
	if err := os.MkdirAll(dir, 0o700); err == nil {
		keep, _ = os.OpenRoot(dir)
	}
	if keep == nil {
		return "[planbridge: this command changed " + listPaths(pathsOf(cs)) + " outside the declared scope; they could not be restored (no place to keep what it left)]"
	}
	defer keep.Close()
	done, failed := review.Restore(o.root, o.git, keep, cs)
	kept, _ := filepath.Rel(w.s.m.st.Dir(), dir)
	rs := review.Restoration{Command: command, Paths: done, By: by, Kept: filepath.ToSlash(kept)}
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
	s.emit(ScopeEvent{Scope: *sc})
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

// watchFile marks, in the base directory, a watched command in flight.
// It outlives the process only when the process stopped during the
// command: that command's effects were never held to the scope.
const watchFile = "watching"

// watching counts this process's watched commands in flight, by base
// directory (guarded by watchMu).
var (
	watchMu  sync.Mutex
	watching = map[string]int{}
)

// beginWatch records a command in flight, durably, first turning a mark
// left by an earlier process into a record of the scope (unsettled).
func (s *Session) beginWatch(dir, command string) error {
	s.settleLeftWatch(dir)
	watchMu.Lock()
	watching[dir]++
	watchMu.Unlock()
	if err := store.WriteFileAtomic(filepath.Join(dir, watchFile), []byte(command), 0o600); err != nil {
		s.endWatch(dir)
		return err
	}
	return nil
}

func (s *Session) endWatch(dir string) {
	watchMu.Lock()
	defer watchMu.Unlock()
	if watching[dir]--; watching[dir] <= 0 {
		delete(watching, dir)
		os.Remove(filepath.Join(dir, watchFile))
	}
}

// settleLeftWatch turns a mark no command of this process holds (left by
// a process that stopped during that command) into a record of the scope:
// the command is unsettled.
func (s *Session) settleLeftWatch(dir string) {
	watchMu.Lock()
	defer watchMu.Unlock()
	if watching[dir] > 0 {
		return
	}
	b, err := os.ReadFile(filepath.Join(dir, watchFile))
	if err != nil {
		return
	}
	s.recordScope(func(sc *review.Scope) { sc.Unsettled = append(sc.Unsettled, string(b)) })
	os.Remove(filepath.Join(dir, watchFile))
}

func pathsOf(cs []review.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path
	}
	return out
}
