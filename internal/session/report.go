package session

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
	"sync"

	"planbridge/goal"
	"planbridge/internal/agent"
	"planbridge/internal/atomicfile"
	"planbridge/internal/store"
	"planbridge/review"
)

// implBase is the implementation's base ([review.Base]). It is staged in
// its own directory (review/<ID>/) before the commit that starts its
// implementation, and that commit names it ([TrackedPlan.Base]): there is
// no moment at which an implementation runs without its base, and no base
// is ever taken from a workspace the implementation has already changed.
type implBase = review.Base

// reviewDir holds the bases, tool logs and reports of a session's
// implementations. It lies outside work://, so the model cannot reach it.
func (m *Manager) reviewDir(id string) string {
	return filepath.Join(m.st.Dir(), "sessions", id, "review")
}

// ReviewDir is the directory of a session's implementation reports under a
// state directory (for reading them offline, [ReadStoredReport]).
func ReviewDir(stateDir, id string) string {
	return filepath.Join(stateDir, "sessions", id, "review")
}

// currentFile names, in a review directory, the base of the latest
// implementation (for offline readers; the session itself goes by its
// tracked plan).
const currentFile = "current"

var baseIDRE = regexp.MustCompile(`^b-[0-9a-f]{16}$`)

// baseDir is the directory of the running (or last) implementation's
// base; "" when none is recorded. A tracked plan from before bases were
// staged uses the review directory itself.
func (s *Session) baseDir() string {
	s.mu.Lock()
	p := s.track.plan
	s.mu.Unlock()
	if p == nil {
		return ""
	}
	if p.Base == "" {
		return s.m.reviewDir(s.id)
	}
	if !baseIDRE.MatchString(p.Base) {
		return ""
	}
	return filepath.Join(s.m.reviewDir(s.id), p.Base)
}

var logMu sync.Mutex // orders appends to tool logs

// stageBase snapshots the workspace ws as the base of an implementation
// of session sess, with its declared scope, into a new base directory,
// durably, and returns the base's id for the commit that starts the
// implementation to name. A staged base no commit names is never read.
func (m *Manager) stageBase(ctx context.Context, sess, ws, title, hash, artifact string, scope []string) (string, error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	id := "b-" + hex.EncodeToString(rnd[:])
	b := implBase{ID: id, Title: title, Hash: hash, Artifact: artifact, Workspace: ws, Dirty: map[string]review.BaseFile{}}
	if o, err := openCheckout(ws); err == nil {
		b.Root, b.Prefix = o.tree.r.Root, relPrefix(o.tree.r.Root, ws)
		err = b.Take(ctx, o.tree, o.root)
		o.Close()
		if err != nil {
			return "", err
		}
	}
	root := m.reviewDir(sess)
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	data, _ := json.Marshal(b)
	if err := store.WriteFileAtomic(filepath.Join(dir, "base.json"), data, 0o600); err != nil {
		return "", err
	}
	sc, _ := json.Marshal(review.Scope{Paths: scope})
	if err := store.WriteFileAtomic(filepath.Join(dir, "scope.json"), sc, 0o600); err != nil {
		return "", err
	}
	// The base directory's own entry is durable before any commit names it.
	if err := atomicfile.SyncDir(root); err != nil {
		return "", err
	}
	return id, nil
}

// stageBase stages the base of an implementation of this session's plan
// in its workspace as it is now ([Manager.stageBase]); "" (logged) when
// it cannot, which loses only the report, never the acceptance.
func (s *Session) stageBase(ctx context.Context, hash, artifact, title, body string) string {
	s.mu.Lock()
	ws := s.row.Workspace
	s.mu.Unlock()
	id, err := s.m.stageBase(ctx, s.id, ws, title, hash, artifact, s.cardScope(hash, body))
	if err != nil {
		s.m.log.Error("stage the implementation base", "session", s.id, "err", err)
		return ""
	}
	return id
}

// baseCommitted is called once the commit naming base is durable: it
// points offline readers at it and drops the earlier implementations'
// directories. Both are best effort: the session goes by the commit.
func (m *Manager) baseCommitted(sess, base string) {
	if base == "" {
		return
	}
	root := m.reviewDir(sess)
	if err := store.WriteFileAtomic(filepath.Join(root, currentFile), []byte(base+"\n"), 0o600); err != nil {
		m.log.Warn("record the current implementation base", "session", sess, "err", err)
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if e.IsDir() && e.Name() != base && baseIDRE.MatchString(e.Name()) {
			os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
	for _, legacy := range []string{"base.json", "tools.jsonl", "scope.json", "report.json"} {
		os.Remove(filepath.Join(root, legacy))
	}
}

func (s *Session) loadBase() (*implBase, error) {
	dir := s.baseDir()
	if dir == "" {
		return nil, fs.ErrNotExist
	}
	return loadBaseAt(dir)
}

func loadBaseAt(dir string) (*implBase, error) {
	data, err := os.ReadFile(filepath.Join(dir, "base.json"))
	if err != nil {
		return nil, err
	}
	var b implBase
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("the implementation base is corrupt: %w", err)
	}
	return &b, nil
}

// logToolEvent records one completed tool call of the implementation: the
// paths it declared it writes (root-relative), the step in progress, and
// for bash the command and its exit status.
func (s *Session) logToolEvent(call agent.ToolCall, ok bool, output string) {
	changed := s.takeChanged(call.ID)
	s.mu.Lock()
	p := s.track.plan
	active := p != nil && p.Status == ImplRunning
	step := ""
	if active {
		for _, st := range p.Steps {
			if st.Status == StepInProgress {
				step = st.ID
			}
		}
	}
	ws := s.row.Workspace
	s.mu.Unlock()
	if !active {
		return
	}
	dir := s.baseDir()
	if dir == "" {
		return
	}
	base, err := loadBaseAt(dir)
	if err != nil {
		return
	}
	ev := review.ToolEvent{Tool: call.Name, Step: step, OK: ok, Exit: -1}
	if t := s.registry().Get(call.Name); t != nil && t.Meta.Writes != nil {
		if targets, err := t.Meta.Writes(call.Arguments); err == nil {
			for _, p := range targets {
				if rel, ok := workspaceRel(ws, p); ok {
					ev.Paths = append(ev.Paths, base.Prefix+rel)
				}
			}
		}
	}
	if call.Name == "bash" {
		var a struct{ Command string }
		_ = json.Unmarshal(call.Arguments, &a)
		ev.Command = a.Command
		ev.Exit = review.ExitStatus(output)
	}
	for _, p := range changed {
		if !strings.HasPrefix(p, review.ControlPrefix) {
			ev.Paths = append(ev.Paths, p)
		}
	}
	data, _ := json.Marshal(ev)
	logMu.Lock()
	defer logMu.Unlock()
	f, err := os.OpenFile(filepath.Join(dir, "tools.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		s.m.log.Warn("log tool call", "session", s.id, "err", err)
		return
	}
	f.Write(append(data, '\n'))
	f.Close()
}

// workspaceRel makes a tool's path workspace-relative and slash-separated;
// work:// paths and paths outside the workspace are not the workspace's.
func workspaceRel(ws, p string) (string, bool) {
	if p == "" || agent.IsWorkPath(p) {
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

func readEvents(dir string) []review.ToolEvent {
	f, err := os.Open(filepath.Join(dir, "tools.jsonl"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []review.ToolEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev review.ToolEvent
		if json.Unmarshal(sc.Bytes(), &ev) == nil { // a torn last line is skipped
			out = append(out, ev)
		}
	}
	return out
}

// CodeNoReport: there is no accepted implementation to report on.
const CodeNoReport = "no_report"

// Report builds the implementation report now, stores it and publishes it
// (a "report" event).
func (s *Session) Report(ctx context.Context) (review.Report, error) {
	base, err := s.loadBase()
	if errors.Is(err, fs.ErrNotExist) {
		return review.Report{}, errorf(CodeNoReport, "no plan has been accepted in this session yet, so there is no implementation to report on")
	}
	if err != nil {
		return review.Report{}, errorf(CodeNoReport, "%v", err)
	}
	body, err := s.readArtifact(strings.TrimPrefix(base.Artifact, agent.WorkScheme), base.Hash)
	if err != nil {
		return review.Report{}, err
	}
	in := review.Input{Title: base.Title, Hash: base.Hash, Body: body, Base: base.Head}
	if p := s.TrackedPlan(); p != nil {
		for _, st := range p.Steps {
			in.Steps = append(in.Steps, review.StepState{ID: st.ID, Text: st.Imperative, Status: st.Status})
		}
	}
	dir := s.baseDir()
	in.Events = readEvents(dir)
	in.Changes, err = changesSince(ctx, base, in.Events)
	if err != nil {
		return review.Report{}, err
	}
	s.settleLeftWatch(dir)
	if sc, err := s.loadScope(); err == nil && sc != nil {
		in.ScopeExtensions, in.ScopeRestored, in.ScopeUnsettled = sc.Extensions, sc.Restored, sc.Unsettled
	}
	r := review.Build(in)
	data, _ := json.Marshal(r)
	if err := store.WriteFileAtomic(filepath.Join(dir, "report.json"), data, 0o600); err != nil {
		return review.Report{}, err
	}
	s.emit(ReportEvent{Report: r})
	return r, nil
}

// StoredReport is the last report built of the current implementation,
// or nil.
func (s *Session) StoredReport() *review.Report {
	dir := s.baseDir()
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
// directory ([ReviewDir]): that of the implementation it names current.
func ReadStoredReport(dir string) (*review.Report, error) {
	if b, err := os.ReadFile(filepath.Join(dir, currentFile)); err == nil {
		id := strings.TrimSpace(string(b))
		if !baseIDRE.MatchString(id) {
			return nil, fmt.Errorf("the review directory names no valid base (%q)", id)
		}
		dir = filepath.Join(dir, id)
	}
	return readReport(dir)
}

func readReport(dir string) (*review.Report, error) {
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return nil, err
	}
	var r review.Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("the stored report is corrupt: %w", err)
	}
	return &r, nil
}

// changesSince lists the files changed since the base ([review.Base.Changes]);
// none when the workspace is no checkout.
func changesSince(ctx context.Context, base *implBase, events []review.ToolEvent) ([]review.FileChange, error) {
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

// reportIfEnded builds the report once when the implementation has ended:
// every step done, or the implementing Goal complete.
func (s *Session) reportIfEnded(ctx context.Context) {
	s.mu.Lock()
	p := s.track.plan
	ended := p != nil && p.Status == ImplDone
	if g := s.gl.g; g != nil && g.Status == goal.Complete && g.PlanRef != "" {
		ended = true
	}
	s.mu.Unlock()
	if !ended {
		return
	}
	dir := s.baseDir()
	if dir == "" {
		return
	}
	if _, err := os.Stat(filepath.Join(dir, "base.json")); err != nil {
		return
	}
	if _, err := os.Stat(filepath.Join(dir, "report.json")); err == nil {
		return
	}
	if _, err := s.Report(ctx); err != nil {
		s.m.log.Warn("build the implementation report", "session", s.id, "err", err)
	}
}

// FileDiff is the unified diff of one workspace file (root-relative, as the
// report names it) from the implementation's base to now.
func (s *Session) FileDiff(ctx context.Context, rel string) (string, error) {
	base, err := s.loadBase()
	if err != nil {
		return "", errorf(CodeNoReport, "no plan has been accepted in this session yet, so there is no base to compare with")
	}
	if base.Root == "" || !review.CleanRel(rel) {
		return "", errorf(CodeInvalidParams, "%q is not a path of the checkout", rel)
	}
	o, err := openCheckout(base.Root)
	if err != nil {
		return "", err
	}
	defer o.Close()
	d, err := base.Diff(o.tree, o.root, rel)
	if errors.Is(err, review.ErrTooLarge) {
		return "", errorf(CodeInvalidParams, "%v", err)
	}
	return d, err
}
