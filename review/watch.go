package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"planbridge/internal/atomicfile"

	"golang.org/x/sys/unix"
)

// scopeOverrideRel is where the person's edit of the card's scope for the
// proposal with this hash is kept (under the plans folder: the model
// cannot write it).
func (t *Tracker) scopeOverride(hash string) string {
	return filepath.Join(t.cfg.Work, t.cfg.Plans, fmt.Sprintf("scope-%s.json", hash[:min(16, len(hash))]))
}

// CardScope is the scope the card shows for a proposal: the person's edit
// if any ([Tracker.SetCardScope]), else the paths its Key Changes and
// steps name ([DeriveScope]).
func (t *Tracker) CardScope(hash, body string) []string {
	if data, err := os.ReadFile(t.scopeOverride(hash)); err == nil {
		var paths []string
		if json.Unmarshal(data, &paths) == nil {
			return paths
		}
	}
	return DeriveScope(body)
}

// SetCardScope records the person's edit of the card's scope for the
// proposal with this hash: paths already cleaned ([CleanScope]); an empty
// list declares none, so nothing is held.
func (t *Tracker) SetCardScope(hash string, paths []string) error {
	data, _ := json.Marshal(paths)
	return atomicfile.WriteFileIn(t.workAnchor(), t.scopeOverride(hash), data, 0o644)
}

func (t *Tracker) scopePath() string {
	dir := t.baseDir()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "scope.json")
}

func (t *Tracker) loadScope() (*Scope, error) {
	p := t.scopePath()
	if p == "" {
		return nil, nil
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var sc Scope
	if err := json.Unmarshal(data, &sc); err != nil {
		return nil, err
	}
	return &sc, nil
}

// Holding reports whether a declared scope is held now: an accepted
// plan's implementation is not done and its recorded scope names paths.
// A scope that cannot be read, or is missing from a staged base (which
// always has one), is held too, allowing nothing: a command that broke
// the file never releases the scope.
func (t *Tracker) Holding() bool {
	if !t.Running() {
		return false
	}
	_, held := t.scopeNow()
	return held
}

// scopeNow is the implementation's recorded scope (nil when none can be
// read) and whether it holds: declared, or unreadable (allowing nothing).
func (t *Tracker) scopeNow() (sc *Scope, held bool) {
	sc, err := t.loadScope()
	switch {
	case err != nil:
		return nil, true
	case sc == nil:
		return nil, t.staged()
	}
	return sc, sc.Declared()
}

// staged reports whether the tracked plan names a staged base, whose
// directory [StageBase] always gives a scope file.
func (t *Tracker) staged() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.plan != nil && baseIDRE.MatchString(t.plan.Base)
}

// Allows is the held scope's decision for a workspace path (relative,
// slash-separated). It reads the recorded scope at each decision, so an
// extension granted earlier in the same turn holds at once, and fails
// closed: a scope file that cannot be read allows nothing, so the person
// is asked.
func (t *Tracker) Allows(rel string) bool {
	sc, err := t.loadScope()
	if err != nil || sc == nil {
		return false
	}
	return sc.Allows(rel)
}

// Extend records, after the person allowed a write outside the held
// scope, the workspace paths (relative, slash-separated, as really
// written) it writes; paths already allowed are not recorded again. The
// changed scope is published; one the scope file could not hold is
// [Port.Unsaved] instead (the next write there asks again).
func (t *Tracker) Extend(rels []string) {
	if sc, err := t.loadScope(); err != nil || sc == nil || !sc.Declared() {
		return
	}
	if err := t.changeScope(func(sc *Scope) bool {
		changed := false
		for _, rel := range rels {
			if !sc.Allows(rel) && !slices.Contains(sc.Extensions, rel) {
				sc.Extensions = append(sc.Extensions, rel)
				changed = true
			}
		}
		return changed
	}); err != nil {
		t.cfg.Port.Unsaved("the scope's extension to "+listPaths(rels), err)
	}
}

// errNoScope: there is no readable scope file to record a change in.
var errNoScope = errors.New("the implementation has no readable scope file")

// changeScope changes the implementation's scope file under scopeMu and
// publishes the result when change reports a change. The error is why
// the scope file does not hold the change (no scope, or one that cannot
// be read or written); nothing is published then, and the caller tells
// the person ([Port.Unsaved]) or records it elsewhere.
func (t *Tracker) changeScope(change func(*Scope) bool) error {
	t.scopeMu.Lock()
	defer t.scopeMu.Unlock()
	sc, err := t.loadScope()
	if err == nil && sc == nil {
		err = errNoScope
	}
	if err != nil {
		return err
	}
	if !change(sc) {
		return nil
	}
	data, _ := json.Marshal(sc)
	if err := t.writeRecord(t.scopePath(), data, 0o600); err != nil {
		return err
	}
	t.cfg.Port.ScopeChanged(*sc)
	return nil
}

func (t *Tracker) recordScope(change func(*Scope)) error {
	return t.changeScope(func(sc *Scope) bool { change(sc); return true })
}

// Watch holds a shell command, whose writes cannot be declared, to the
// declared scope ([agent.Watcher] through the session): the checkout is
// snapshotted before it and compared after it ([Take], [Snapshot.Changes]);
// what changed outside the scope is treated as a file tool's write
// there: the person is asked whether to extend the scope to it (allowed)
// or restore it (denied, or no answer), in every permission mode; where
// no person can answer (unattended) it is restored and the implementation
// pauses ([Port.Pause]). The implementation's own records are checked not
// to have changed and put back if they did. A mark in the base directory
// says a command is in flight: one left by a process that stopped during
// its command is recorded as unsettled in the scope. after never fails;
// it returns the output the model gets, with notes first.
func (t *Tracker) Watch(ctx context.Context, call Call, unattended bool) (after func(ctx context.Context, out string) string, err error) {
	base, err := t.loadBase()
	if err != nil || base.Root == "" {
		return nil, nil // no checkout: nothing to compare with
	}
	o, err := openCheckout(base.Root)
	if err != nil {
		return nil, err
	}
	snap, err := Take(ctx, o.tree, o.root, o.git)
	o.Close()
	if err != nil {
		return nil, err
	}
	dir := t.baseDir()
	// The mark first: it may record an earlier process's unsettled
	// command in the scope, which the records below then include.
	if err := t.beginWatch(dir, call.Command); err != nil {
		return nil, err
	}
	recs, err := readRecords(dir)
	if err != nil {
		t.endWatch(dir)
		return nil, err
	}
	return func(ctx context.Context, out string) string {
		defer t.endWatch(dir)
		var notes []string
		if touched := t.restoreRecords(dir, recs); len(touched) > 0 {
			notes = append(notes, "[planbridge: this command changed planbridge's own records of the implementation ("+strings.Join(touched, ", ")+"); they were restored]")
		}
		if note := t.after(ctx, call, unattended, base, snap); note != "" {
			notes = append(notes, note)
		}
		if len(notes) == 0 {
			return out
		}
		// First, so the result still ends with its exit status line.
		return strings.Join(notes, "\n") + "\n" + out
	}, nil
}

// maxListed bounds the paths a question or notice names one by one.
const maxListed = 20

func listPaths(ps []string) string {
	if len(ps) <= maxListed {
		return strings.Join(ps, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ps[:maxListed], ", "), len(ps)-maxListed)
}

// recordFiles are the implementation's own records in its base directory.
// An unconfined command can reach them (they lie outside the workspace,
// not out of its reach): it could widen its own scope or rewrite its base.
// Each watched command is checked not to have changed them.
var recordFiles = []string{"base.json", "scope.json", "tools.jsonl", watchFile, unsettledFile}

// readRecords reads the record files (a nil entry: absent, or no regular
// file: planbridge writes none other, so it is restored from what it was).
func readRecords(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, name := range recordFiles {
		b, _, err := readRecord(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
}

// readRecord reads the regular file at p without following a link. odd
// reports something else there (a link, a directory, a fifo): its
// content is never read.
func readRecord(p string) (b []byte, odd bool, err error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		if _, lerr := os.Lstat(p); lerr == nil {
			return nil, true, nil // a link (ELOOP) or something unreadable in its place
		}
		return nil, false, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, true, nil
	}
	b, err = io.ReadAll(f)
	return b, false, err
}

// restoreRecords puts back the record files a command changed and names
// them (telling the person too: one that could not be put back is
// [Port.Unsaved], never told restored).
func (t *Tracker) restoreRecords(dir string, before map[string][]byte) []string {
	var touched, restored []string
	for _, name := range recordFiles {
		p := filepath.Join(dir, name)
		now, odd, err := readRecord(p)
		if err != nil {
			now, odd = nil, true
		}
		if !odd && string(now) == string(before[name]) && (now == nil) == (before[name] == nil) {
			continue
		}
		touched = append(touched, name)
		if odd || before[name] == nil {
			err = os.RemoveAll(p) // never written through: a link goes, not its target
		}
		if err == nil && before[name] != nil {
			err = t.writeRecord(p, before[name], 0o600)
		}
		if err != nil {
			t.cfg.Port.Unsaved("the implementation's record "+name+" (a command changed it, and it could not be put back)", err)
			continue
		}
		restored = append(restored, name)
	}
	if len(restored) > 0 {
		t.cfg.Port.Notice("A command changed planbridge's records of the implementation (" + strings.Join(restored, ", ") + "); they were restored.")
	}
	return touched
}

// after compares the checkout with snap and settles what the command
// changed outside the scope; it returns a note for the model ("" none).
func (t *Tracker) after(ctx context.Context, call Call, unattended bool, base *Base, snap *Snapshot) string {
	o, err := openCheckout(base.Root)
	if err != nil {
		return "[planbridge: the workspace could not be compared after this command: " + err.Error() + "]"
	}
	defer o.Close()
	changes, err := snap.Changes(context.WithoutCancel(ctx), o.tree, o.root, o.git)
	if err != nil {
		return "[planbridge: the workspace could not be compared after this command: " + err.Error() + "]"
	}
	sc, held := t.scopeNow()
	if !held {
		return ""
	}
	all := pathsOf(changes)
	t.noteChanged(call.ID, all)
	outside, paths := changes, all // an unreadable scope allows nothing
	if sc != nil {
		outside, paths = sc.Outside(changes, base.Prefix)
	}
	if len(outside) == 0 {
		return ""
	}
	list := listPaths(paths)
	if ask := t.cfg.Port.Asker(); !unattended && ask != nil {
		q := fmt.Sprintf("%s changed %s, outside the scope declared by the accepted plan: extend the scope to %s? (Deny restores them as they were before the command.)", call.Name, list, list)
		ok, err := ask(ctx, call, q)
		if ok && err == nil {
			if err := t.recordScope(func(sc *Scope) { sc.Extend(paths, base.Prefix) }); err != nil {
				t.cfg.Port.Unsaved("the scope's extension to "+list, err)
				return "[planbridge: this command changed " + list + " outside the declared scope; the person allowed them, but the scope's record could not be saved, so a later write there is asked about again]"
			}
			return "[planbridge: this command changed " + list + " outside the declared scope; the person extended the scope to them]"
		}
		by := "person"
		if err != nil {
			by = "no answer" // interrupted, timed out, or the client went away
		}
		return t.restore(call.Command, outside, o, by)
	}
	note := t.restore(call.Command, outside, o, "unattended")
	t.cfg.Port.Pause(call.Name + " changed " + list + ", outside the declared scope, where no person could answer; restored")
	return note
}

// restore puts the changes back and records that in the scope.
func (t *Tracker) restore(command string, cs []Change, o *checkout, by string) string {
	// What the command left is kept beside the implementation's records:
	// restoring never loses it (another process may have written there).
	// Each restoration has a directory of its own: the next number the
	// scope records, or a later one when that exists already (an earlier
	// restoration the scope could not record).
	n := 1
	if sc, err := t.loadScope(); err == nil && sc != nil {
		n = len(sc.Restored) + 1
	}
	bd := t.baseDir() // "" once no plan is tracked: nowhere to keep, never a relative path
	parent := filepath.Join(bd, "restored")
	var dir string
	var keep *os.Root
	if bd != "" && atomicfile.MkdirIn(t.recordAnchor(), parent) == nil {
		for ; n < 1<<20; n++ {
			dir = filepath.Join(parent, strconv.Itoa(n))
			err := os.Mkdir(dir, 0o700)
			if err == nil {
				keep, _ = os.OpenRoot(dir)
			}
			if !errors.Is(err, fs.ErrExist) {
				break
			}
		}
	}
	if keep == nil {
		return "[planbridge: this command changed " + listPaths(pathsOf(cs)) + " outside the declared scope; they could not be restored (no place to keep what it left)]"
	}
	defer keep.Close()
	done, failed := Restore(o.root, o.git, keep, cs)
	kept, _ := filepath.Rel(t.cfg.State, dir)
	rs := Restoration{Command: command, Paths: done, By: by, Kept: filepath.ToSlash(kept)}
	if rs.Paths == nil {
		rs.Paths = []string{}
	}
	for p, err := range failed {
		rs.Failed = append(rs.Failed, p+": "+err.Error())
	}
	sort.Strings(rs.Failed)
	if err := t.recordScope(func(sc *Scope) { sc.Restored = append(sc.Restored, rs) }); err != nil {
		t.cfg.Port.Unsaved("the scope's record of the restoration of "+listPaths(pathsOf(cs)), err)
	}
	note := "[planbridge: this command changed " + listPaths(done) + " outside the declared scope; they were restored as they were before it"
	if len(done) == 0 {
		note = "[planbridge: this command changed files outside the declared scope"
	}
	if len(rs.Failed) > 0 {
		note += "; NOT restored: " + listPaths(rs.Failed)
	}
	return note + "]"
}

// noteChanged keeps, for the tool log, the files a watched call changed.
func (t *Tracker) noteChanged(callID string, paths []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.watched == nil {
		t.watched = map[string][]string{}
	}
	t.watched[callID] = paths
}

// takeChanged returns (and forgets) what noteChanged kept for a call.
func (t *Tracker) takeChanged(callID string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.watched[callID]
	delete(t.watched, callID)
	return p
}

// watchFile marks, in the base directory, a watched command in flight.
// It outlives the process only when the process stopped during the
// command: that command's effects were never held to the scope.
const watchFile = "watching"

// unsettledFile records, in the base directory, the unsettled commands
// the scope file could not record (it could not be read or written): one
// JSON string a line. [Tracker.unsettled] reads both.
const unsettledFile = "unsettled.jsonl"

// beginWatch records a command in flight, durably, first turning a mark
// left by an earlier process into a record of the scope (unsettled). A
// mark that cannot be recorded anywhere is kept, and no command starts
// (its mark would replace the one left).
func (t *Tracker) beginWatch(dir, command string) error {
	if err := t.settleLeftWatch(dir); err != nil {
		return err
	}
	t.watchMu.Lock()
	t.watching[dir]++
	t.watchMu.Unlock()
	if err := atomicfile.WriteFile(filepath.Join(dir, watchFile), []byte(command), 0o600); err != nil { // dir exists: WriteFile creates none
		t.endWatch(dir)
		return err
	}
	return nil
}

func (t *Tracker) endWatch(dir string) {
	t.watchMu.Lock()
	defer t.watchMu.Unlock()
	if t.watching[dir]--; t.watching[dir] <= 0 {
		delete(t.watching, dir)
		os.Remove(filepath.Join(dir, watchFile))
	}
}

// settleLeftWatch turns a mark no command of this process holds (left by
// a process that stopped during that command) into a record of the scope:
// the command is unsettled. Where the scope file cannot record it (it
// cannot be read or written) it is recorded in [unsettledFile]; the mark
// is removed only once one of them holds it, and the error of one that
// could not is returned.
func (t *Tracker) settleLeftWatch(dir string) error {
	t.watchMu.Lock()
	defer t.watchMu.Unlock()
	if t.watching[dir] > 0 {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, watchFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("could not read the mark of a command a stopped process left: %w", err)
	}
	if t.recordScope(func(sc *Scope) { sc.Unsettled = append(sc.Unsettled, string(b)) }) != nil {
		if err := appendUnsettled(dir, string(b)); err != nil {
			return fmt.Errorf("could not record the command a stopped process left unsettled: %w", err)
		}
	}
	os.Remove(filepath.Join(dir, watchFile))
	return nil
}

// appendUnsettled adds command to [unsettledFile], atomically.
func appendUnsettled(dir, command string) error {
	p := filepath.Join(dir, unsettledFile)
	old, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	line, _ := json.Marshal(command)
	return atomicfile.WriteFile(p, append(append(old, line...), '\n'), 0o600)
}

// unsettled is every unsettled command of the implementation in base
// directory dir: the scope's record (sc, nil when it cannot be read),
// then those only [unsettledFile] holds. A line that does not parse is
// named as it stands rather than dropped.
func unsettled(dir string, sc *Scope) []string {
	var out []string
	if sc != nil {
		out = append(out, sc.Unsettled...)
	}
	b, err := os.ReadFile(filepath.Join(dir, unsettledFile))
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" {
			continue
		}
		var c string
		if json.Unmarshal([]byte(l), &c) != nil {
			c = l
		}
		out = append(out, c)
	}
	return out
}

func pathsOf(cs []Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path
	}
	return out
}
