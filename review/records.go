package review

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"planbridge/internal/atomicfile"
)

// currentFile names, in a review directory, the base of the latest
// implementation (for offline readers; the session itself goes by its
// tracked plan).
const currentFile = "current"

var baseIDRE = regexp.MustCompile(`^b-[0-9a-f]{16}$`)

// StageBase snapshots the workspace ws as the [Base] of an implementation,
// with its declared scope, into a new base directory of the review
// directory dir, durably (the directory's own entry included), and
// returns the base's id for the commit that starts the implementation to
// name ([TrackedPlan.Base]). A staged base no commit names is never read.
// A workspace that is no checkout gets a base without a root.
func StageBase(ctx context.Context, dir, ws, title, hash, artifact string, scope []string) (string, error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	id := "b-" + hex.EncodeToString(rnd[:])
	b := Base{ID: id, Title: title, Hash: hash, Artifact: artifact, Workspace: ws, Dirty: map[string]BaseFile{}}
	if o, err := openCheckout(ws); err == nil {
		b.Root, b.Prefix = o.tree.r.Root, o.tree.r.Prefix(ws)
		err = b.Take(ctx, o.tree, o.root)
		o.Close()
		if err != nil {
			return "", err
		}
	}
	bdir := filepath.Join(dir, id)
	// Below the session's directory (dir's parent), never creating it.
	if err := atomicfile.MkdirIn(filepath.Dir(filepath.Clean(dir)), bdir); err != nil {
		return "", err
	}
	data, _ := json.Marshal(b)
	if err := atomicfile.WriteFile(filepath.Join(bdir, "base.json"), data, 0o600); err != nil {
		return "", err
	}
	sc, _ := json.Marshal(Scope{Paths: scope})
	if err := atomicfile.WriteFile(filepath.Join(bdir, "scope.json"), sc, 0o600); err != nil {
		return "", err
	}
	// The base directory's own entry is durable before any commit names it.
	if err := atomicfile.SyncDir(dir); err != nil {
		return "", err
	}
	return id, nil
}

// BaseCommitted is called once the commit naming base is durable: it
// points offline readers at it ([ReadStoredReport]) and drops the earlier
// implementations' directories of the review directory dir. Both are best
// effort (the session goes by the commit): the error returned is only
// that of the pointer, for a log.
func BaseCommitted(dir, base string) error {
	if base == "" {
		return nil
	}
	err := atomicfile.WriteFile(filepath.Join(dir, currentFile), []byte(base+"\n"), 0o600)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() && e.Name() != base && baseIDRE.MatchString(e.Name()) {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	for _, legacy := range []string{"base.json", "tools.jsonl", "scope.json", "report.json"} {
		os.Remove(filepath.Join(dir, legacy))
	}
	return err
}

// baseDir is the directory of the running (or last) implementation's
// base; "" when none is recorded. A tracked plan from before bases were
// staged uses the review directory itself.
func (t *Tracker) baseDir() string {
	t.mu.Lock()
	p := t.plan
	base := ""
	if p != nil {
		base = p.Base
	}
	t.mu.Unlock()
	if p == nil {
		return ""
	}
	if base == "" {
		return t.cfg.Dir
	}
	if !baseIDRE.MatchString(base) {
		return ""
	}
	return filepath.Join(t.cfg.Dir, base)
}

func (t *Tracker) loadBase() (*Base, error) {
	dir := t.baseDir()
	if dir == "" {
		return nil, fs.ErrNotExist
	}
	return loadBaseAt(dir)
}

func loadBaseAt(dir string) (*Base, error) {
	data, err := os.ReadFile(filepath.Join(dir, "base.json"))
	if err != nil {
		return nil, err
	}
	var b Base
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("the implementation base is corrupt: %w", err)
	}
	return &b, nil
}

// Logging reports whether [Tracker.LogTool] records calls now: an
// implementation is running.
func (t *Tracker) Logging() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.plan != nil && t.plan.Status == ImplRunning
}

// LogTool records one completed tool call of a running implementation in
// its tool log: the paths it declared it writes (made root-relative), the
// step in progress, what a watched call was seen to change (control files
// left out), and for bash the command and its exit status. Nothing is
// logged when no implementation runs or it has no base.
func (t *Tracker) LogTool(call Call, ok bool, output string) {
	changed := t.takeChanged(call.ID)
	t.mu.Lock()
	p := t.plan
	active := p != nil && p.Status == ImplRunning
	step := ""
	if active {
		step = p.InProgress()
	}
	t.mu.Unlock()
	if !active {
		return
	}
	ws := t.cfg.Port.Workspace()
	dir := t.baseDir()
	if dir == "" {
		return
	}
	base, err := loadBaseAt(dir)
	if err != nil {
		return
	}
	ev := ToolEvent{Tool: call.Name, Step: step, OK: ok, Exit: -1}
	for _, p := range call.Writes {
		if rel, ok := workspaceRel(ws, p); ok {
			ev.Paths = append(ev.Paths, base.Prefix+rel)
		}
	}
	if call.Name == "bash" {
		ev.Command = call.Command
		ev.Exit = ExitStatus(output)
	}
	for _, p := range changed {
		if !strings.HasPrefix(p, ControlPrefix) {
			ev.Paths = append(ev.Paths, p)
		}
	}
	data, _ := json.Marshal(ev)
	t.logMu.Lock()
	defer t.logMu.Unlock()
	err = appendLine(filepath.Join(dir, "tools.jsonl"), data)
	if err != nil && !t.logFailing {
		// Once per failing streak: a full disk would otherwise repeat it
		// for every call.
		t.cfg.Port.Unsaved(fmt.Sprintf("the tool log (from the %s call on, until a write succeeds again; the report will not list those calls)", call.Name), err)
	}
	t.logFailing = err != nil
}

// appendLine appends line and a newline to the file at p (created if
// need be); the error is the first of opening, writing and closing.
func appendLine(p string, line []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// workspaceRel makes a tool's path workspace-relative and slash-separated;
// work:// paths and paths outside the workspace are not the workspace's.
func workspaceRel(ws, p string) (string, bool) {
	if p == "" || strings.HasPrefix(p, workScheme) {
		return "", false
	}
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(ws, p)
		if err != nil {
			return "", false
		}
		p = rel
	}
	p = filepath.ToSlash(filepath.Clean(p))
	if p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}

func readEvents(dir string) []ToolEvent {
	f, err := os.Open(filepath.Join(dir, "tools.jsonl"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []ToolEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev ToolEvent
		if json.Unmarshal(sc.Bytes(), &ev) == nil { // a torn last line is skipped
			out = append(out, ev)
		}
	}
	return out
}

// ErrNoReport: there is no accepted implementation to report on (or no
// base to compare with). Errors that wrap it carry the person's message.
var ErrNoReport = errors.New("no implementation to report on")

// ErrBadPath: a path asked about is not a path of the checkout.
var ErrBadPath = errors.New("not a path of the checkout")

// A SaveError is a record of the implementation that could not be
// written; its message names it.
type SaveError struct {
	What string // "the implementation report"
	Err  error
}

func (e *SaveError) Error() string { return "could not save " + e.What + ": " + e.Err.Error() }
func (e *SaveError) Unwrap() error { return e.Err }

// kindError is an error of a kind ([ErrNoReport], [ErrBadPath]) with its
// own message.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == e.kind }

func kindErrorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// Report builds the implementation report now ([Build]) from the
// accepted plan, its tracked steps, the changes since the base, the tool
// log and the scope's record, stores it and publishes it. An
// implementation without a base (none accepted, or the base unreadable)
// is [ErrNoReport].
func (t *Tracker) Report(ctx context.Context) (Report, error) {
	base, err := t.loadBase()
	if errors.Is(err, fs.ErrNotExist) {
		return Report{}, kindErrorf(ErrNoReport, "no plan has been accepted in this session yet, so there is no implementation to report on")
	}
	if err != nil {
		return Report{}, kindErrorf(ErrNoReport, "%v", err)
	}
	body, err := t.cfg.Port.ReadArtifact(strings.TrimPrefix(base.Artifact, workScheme), base.Hash)
	if err != nil {
		return Report{}, err
	}
	in := Input{Title: base.Title, Hash: base.Hash, Body: body, Base: base.Head}
	if p := t.Plan(); p != nil {
		for _, st := range p.Steps {
			in.Steps = append(in.Steps, StepState{ID: st.ID, Text: st.Imperative, Status: st.Status})
		}
	}
	dir := t.baseDir()
	in.Events = readEvents(dir)
	in.Changes, err = changesSince(ctx, base, in.Events)
	if err != nil {
		return Report{}, err
	}
	if err := t.settleLeftWatch(dir); err != nil {
		t.cfg.Port.Unsaved("the record of a command a stopped process left unsettled", err)
	}
	sc, err := t.loadScope()
	if err == nil && sc != nil {
		in.ScopeExtensions, in.ScopeRestored = sc.Extensions, sc.Restored
	} else {
		sc = nil
	}
	in.ScopeUnsettled = unsettled(dir, sc)
	r := Build(in)
	data, _ := json.Marshal(r)
	if err := t.writeRecord(filepath.Join(dir, "report.json"), data, 0o600); err != nil {
		// Never published as stored: the person asking is told it was not.
		return Report{}, &SaveError{What: "the implementation report", Err: err}
	}
	t.cfg.Port.ReportBuilt(r)
	return r, nil
}

// StoredReport is the last report built of the current implementation,
// or nil.
func (t *Tracker) StoredReport() *Report {
	dir := t.baseDir()
	if dir == "" {
		return nil
	}
	r, err := readReport(dir)
	if err != nil {
		return nil
	}
	return r
}

// ReadStoredReport reads the last report stored in a session's review
// directory: that of the implementation it names current.
func ReadStoredReport(dir string) (*Report, error) {
	if b, err := os.ReadFile(filepath.Join(dir, currentFile)); err == nil {
		id := strings.TrimSpace(string(b))
		if !baseIDRE.MatchString(id) {
			return nil, fmt.Errorf("the review directory names no valid base (%q)", id)
		}
		dir = filepath.Join(dir, id)
	}
	return readReport(dir)
}

func readReport(dir string) (*Report, error) {
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("the stored report is corrupt: %w", err)
	}
	return &r, nil
}

// changesSince lists the files changed since the base ([Base.Changes]);
// none when the workspace is no checkout.
func changesSince(ctx context.Context, base *Base, events []ToolEvent) ([]FileChange, error) {
	if base.Root == "" {
		return nil, nil // not a checkout: only tool-declared writes could be listed, without a base
	}
	o, err := openCheckout(base.Root)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	return base.Changes(ctx, o.tree, o.root, events)
}

// ReportIfEnded builds the report once when the implementation has ended:
// every step done, or (goalComplete) the Goal implementing it complete.
// A report already stored is not built again; one that could not be
// built or stored is [Port.Unsaved] (and tried again the next time).
func (t *Tracker) ReportIfEnded(ctx context.Context, goalComplete bool) {
	t.mu.Lock()
	ended := t.plan != nil && t.plan.Status == ImplDone || goalComplete
	t.mu.Unlock()
	if !ended {
		return
	}
	dir := t.baseDir()
	if dir == "" {
		return
	}
	if _, err := os.Stat(filepath.Join(dir, "base.json")); err != nil {
		return
	}
	if _, err := os.Stat(filepath.Join(dir, "report.json")); err == nil {
		return
	}
	if _, err := t.Report(ctx); err != nil {
		var se *SaveError
		if errors.As(err, &se) {
			t.cfg.Port.Unsaved(se.What, se.Err)
		} else {
			t.cfg.Port.Unsaved("the implementation report (it could not be built)", err)
		}
	}
}

// FileDiff is the unified diff of one checkout file (root-relative, as the
// report names it) from the implementation's base to now. No base is
// [ErrNoReport]; a path that is not the checkout's, or a file too large
// to diff, is [ErrBadPath].
func (t *Tracker) FileDiff(ctx context.Context, rel string) (string, error) {
	base, err := t.loadBase()
	if err != nil {
		return "", kindErrorf(ErrNoReport, "no plan has been accepted in this session yet, so there is no base to compare with")
	}
	if base.Root == "" || !CleanRel(rel) {
		return "", kindErrorf(ErrBadPath, "%q is not a path of the checkout", rel)
	}
	o, err := openCheckout(base.Root)
	if err != nil {
		return "", err
	}
	defer o.Close()
	d, err := base.Diff(o.tree, o.root, rel)
	if errors.Is(err, ErrTooLarge) {
		return "", kindErrorf(ErrBadPath, "%v", err)
	}
	return d, err
}
