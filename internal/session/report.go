package session

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"planbridge/goal"
	"planbridge/internal/agent"
	"planbridge/internal/store"
	"planbridge/review"
	"planbridge/worktree"
)

// Snapshot caps of the implementation base.
const (
	maxSnapFile  = 1 << 20  // a dirty file larger than this keeps only its hash
	maxSnapTotal = 32 << 20 // content kept for dirty files in all
)

// A snapshot is one file's content at the implementation's base.
type snapshot struct {
	Absent  bool   `json:"absent,omitempty"`
	Hash    string `json:"hash,omitempty"`    // sha256 of the content
	Content []byte `json:"content,omitempty"` // nil when too large (Hash only)
}

// implBase is what acceptance records so the report compares against the
// exact state the implementation started from: HEAD, plus the content of
// every file already dirty then (Here mode with uncommitted work).
//
// A base is staged in its own directory (review/<ID>/) before the commit
// that starts its implementation, and that commit names it
// ([TrackedPlan.Base]): there is no moment at which an implementation runs
// without its base, and no base is ever taken from a workspace the
// implementation has already changed.
type implBase struct {
	ID        string              `json:"id"`
	Title     string              `json:"title"`
	Hash      string              `json:"hash"`     // the accepted plan's
	Artifact  string              `json:"artifact"` // its work:// archive
	Workspace string              `json:"workspace"`
	Root      string              `json:"root,omitempty"` // checkout root ("" not a checkout)
	Prefix    string              `json:"prefix,omitempty"`
	Head      string              `json:"head,omitempty"`
	Dirty     map[string]snapshot `json:"dirty"` // by root-relative path
}

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

const noFollow = syscall.O_NOFOLLOW

var logMu sync.Mutex // orders appends to tool logs

func hashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// stageBase snapshots the workspace ws as the base of an implementation
// of session sess, with its declared scope, into a new base directory,
// durably, and returns the base's id for the commit that starts the
// implementation to name. A staged base no commit names is never read.
func (m *Manager) stageBase(ctx context.Context, sess, ws, title, hash, artifact string, scope []string) (string, error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	id := "b-" + hex.EncodeToString(rnd[:])
	b := implBase{ID: id, Title: title, Hash: hash, Artifact: artifact, Workspace: ws, Dirty: map[string]snapshot{}}
	if repo, err := worktree.Open(ws); err == nil {
		b.Root, b.Prefix = repo.Root, relPrefix(repo.Root, ws)
		_, b.Head, _ = repo.Head()
		entries, err := repo.Status(ctx)
		repo.Close()
		if err != nil {
			return "", fmt.Errorf("the workspace status: %w", err)
		}
		total := 0
		for _, e := range entries {
			b.Dirty[e.Path] = readSnapshot(filepath.Join(b.Root, filepath.FromSlash(e.Path)), &total)
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
	if err := syncDir(root); err != nil {
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

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
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

// readSnapshot reads a regular file without following a final symbolic
// link; anything else is recorded by what it is (absent, or a hash of
// its link target).
func readSnapshot(full string, total *int) snapshot {
	fi, err := os.Lstat(full)
	if err != nil {
		return snapshot{Absent: true}
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		t, _ := os.Readlink(full)
		return snapshot{Hash: hashOf([]byte("symlink:" + t))}
	}
	if !fi.Mode().IsRegular() {
		return snapshot{Absent: true}
	}
	f, err := os.OpenFile(full, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return snapshot{Absent: true}
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, maxSnapFile+1))
	if len(data) > maxSnapFile || *total+len(data) > maxSnapTotal {
		h := sha256.New()
		h.Write(data)
		io.Copy(h, f)
		return snapshot{Hash: hex.EncodeToString(h.Sum(nil))}
	}
	*total += len(data)
	return snapshot{Hash: hashOf(data), Content: data}
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
		ev.Exit = exitStatus(output)
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

// exitStatus reads the "[exit status N]" line bash results end with (-1
// when there is none: the command did not run).
func exitStatus(output string) int {
	out := strings.TrimRight(output, "\n")
	i := strings.LastIndexByte(out, '\n')
	last := out[i+1:]
	if v, ok := strings.CutPrefix(last, "[exit status "); ok {
		if n, err := strconv.Atoi(strings.TrimSuffix(v, "]")); err == nil {
			return n
		}
	}
	return -1
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
	if sc, err := s.loadScope(); err == nil && sc != nil {
		in.ScopeExtensions, in.ScopeRestored = sc.Extensions, sc.Restored
	}
	r := review.Build(in)
	data, _ := json.Marshal(r)
	if err := store.WriteFileAtomic(filepath.Join(dir, "report.json"), data, 0o600); err != nil {
		return review.Report{}, err
	}
	s.emit(ReportEvent{r})
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

// changesSince lists the files whose content now differs from the base:
// candidates are the files dirty now or at the base, and the files tool
// calls declared they wrote.
func changesSince(ctx context.Context, base *implBase, events []review.ToolEvent) ([]review.FileChange, error) {
	if base.Root == "" {
		return nil, nil // not a checkout: only tool-declared writes could be listed, without a base
	}
	repo, err := worktree.Open(base.Root)
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	entries, err := repo.Status(ctx)
	if err != nil {
		return nil, err
	}
	cand := map[string]bool{}
	for _, e := range entries {
		cand[e.Path] = true
	}
	for p := range base.Dirty {
		cand[p] = true
	}
	for _, ev := range events {
		for _, p := range ev.Paths {
			cand[p] = true
		}
	}
	var out []review.FileChange
	total := 0
	for p := range cand {
		before, ok := base.Dirty[p]
		if !ok {
			before = snapshot{Absent: true}
			if base.Head != "" {
				if data, err := repo.ReadCommitFile(base.Head, p); err == nil {
					before = snapshot{Hash: hashOf(data), Content: data}
				}
			}
		}
		after := readSnapshot(filepath.Join(base.Root, filepath.FromSlash(p)), &total)
		if before.Absent == after.Absent && before.Hash == after.Hash {
			continue
		}
		out = append(out, review.FileChange{Path: p, Before: before.Content, After: after.Content, Existed: !before.Absent, Exists: !after.Absent})
	}
	return out, nil
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
	clean, ok := workspaceRel(base.Root, rel)
	if base.Root == "" || !ok || clean != rel {
		return "", errorf(CodeInvalidParams, "%q is not a path of the checkout", rel)
	}
	repo, err := worktree.Open(base.Root)
	if err != nil {
		return "", err
	}
	defer repo.Close()
	before, okb := base.Dirty[rel]
	if !okb {
		before = snapshot{Absent: true}
		if base.Head != "" {
			if data, err := repo.ReadCommitFile(base.Head, rel); err == nil {
				before = snapshot{Hash: hashOf(data), Content: data}
			}
		}
	}
	total := 0
	after := readSnapshot(filepath.Join(base.Root, filepath.FromSlash(rel)), &total)
	if (before.Content == nil && !before.Absent) || (after.Content == nil && !after.Absent) {
		return "", errorf(CodeInvalidParams, "%s is too large to diff here", rel)
	}
	aName, bName := "a/"+rel, "b/"+rel
	if before.Absent {
		aName = "/dev/null"
	}
	if after.Absent {
		bName = "/dev/null"
	}
	return review.Unified(aName, bName, string(before.Content), string(after.Content), 3), nil
}
