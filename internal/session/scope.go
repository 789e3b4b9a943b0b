package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"planbridge/internal/agent"
	"planbridge/internal/store"
	"planbridge/review"
)

// CodeInvalidScope refuses a scope edit naming a path outside the workspace.
const CodeInvalidScope = "invalid_scope"

// scopeOverrideRel is where the person's edit of the card's scope for the
// proposal with this hash is kept (under plans/: the model cannot write it).
func scopeOverrideRel(hash string) string {
	return fmt.Sprintf("%s/scope-%s.json", agent.PlansDir, hash[:min(16, len(hash))])
}

// cardScope is the scope the card shows for a proposal: the person's edit
// if any, else the paths its Key Changes and steps name.
func (s *Session) cardScope(hash, body string) []string {
	if data, err := os.ReadFile(s.workPath(scopeOverrideRel(hash))); err == nil {
		var paths []string
		if json.Unmarshal(data, &paths) == nil {
			return paths
		}
	}
	return review.DeriveScope(body)
}

// UpdateScope replaces the card's scope with the person's paths
// (workspace-relative files and directories; an empty list declares none,
// so nothing is held).
func (s *Session) UpdateScope(ctx context.Context, attempt string, paths []string) (ApprovalView, error) {
	clean, bad, ok := review.CleanScope(paths)
	if !ok {
		return ApprovalView{}, errorf(CodeInvalidScope, "%q is not a path inside the workspace; the scope is unchanged", bad)
	}
	s.mu.Lock()
	if err := s.checkAttemptLocked(attempt); err != nil {
		s.mu.Unlock()
		return ApprovalView{}, err
	}
	hash := s.prop.Hash
	s.mu.Unlock()
	data, _ := json.Marshal(clean)
	if err := store.WriteFileAtomic(s.workPath(scopeOverrideRel(hash)), data, 0o644); err != nil {
		return ApprovalView{}, err
	}
	s.changed()
	return s.Approval(), nil
}

func (s *Session) scopePath() string {
	dir := s.baseDir()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "scope.json")
}

func (s *Session) loadScope() (*review.Scope, error) {
	p := s.scopePath()
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
	var sc review.Scope
	if err := json.Unmarshal(data, &sc); err != nil {
		return nil, err
	}
	return &sc, nil
}

// heldScope is the scope the gate holds for a non-Plan turn while an
// accepted plan's implementation is not done (nil otherwise). It reads the
// recorded scope at each decision, so an extension granted earlier in the
// same turn holds at once.
func (s *Session) heldScope(plan bool) agent.WriteScope {
	if plan {
		return nil
	}
	s.mu.Lock()
	p := s.track.plan
	running := p != nil && p.Status != ImplDone
	s.mu.Unlock()
	if !running {
		return nil
	}
	if sc, err := s.loadScope(); err != nil || sc == nil || !sc.Declared() {
		return nil
	}
	return liveScope{s}
}

type liveScope struct{ s *Session }

// Allows fails closed: a scope file that cannot be read allows nothing,
// so the person is asked.
func (l liveScope) Allows(rel string) bool {
	sc, err := l.s.loadScope()
	if err != nil || sc == nil {
		return false
	}
	return sc.Allows(rel)
}

// scopeMu orders read-modify-write of a session's scope file.
var scopeMu = make(chan struct{}, 1)

// extendScope records, after the person allowed call, the paths it writes
// outside the held scope.
func (s *Session) extendScope(call agent.ToolCall) {
	sc, err := s.loadScope()
	if err != nil || sc == nil || !sc.Declared() {
		return
	}
	t := s.registry().Get(call.Name)
	if t == nil || t.Meta.Writes == nil {
		return
	}
	targets, err := t.Meta.Writes(call.Arguments)
	if err != nil {
		return
	}
	s.mu.Lock()
	ws := s.row.Workspace
	s.mu.Unlock()
	roots := agent.Roots{Workspace: ws, Work: s.workDir}
	scopeMu <- struct{}{}
	defer func() { <-scopeMu }()
	changed := false
	for _, p := range targets {
		w, err := roots.ClassifyWrite(p)
		if err != nil || w.Class != agent.WriteWorkspace {
			continue
		}
		rel, err := filepath.Rel(realPath(ws), w.Abs)
		if err != nil {
			continue
		}
		rel = filepath.ToSlash(rel)
		if !sc.Allows(rel) && !slices.Contains(sc.Extensions, rel) {
			sc.Extensions = append(sc.Extensions, rel)
			changed = true
		}
	}
	if !changed {
		return
	}
	data, _ := json.Marshal(sc)
	if err := store.WriteFileAtomic(s.scopePath(), data, 0o600); err != nil {
		s.m.log.Error("record scope extension", "session", s.id, "err", err)
		return
	}
	s.emit(ScopeEvent{Scope: *sc})
}

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// pauseForScope stops an unattended turn that would write outside the
// scope: the implementation and its Goal pause, and the turn ends without
// writing. The person extends the scope (approving the write when the
// implementation resumes attended) or resumes it.
func (s *Session) pauseForScope(reason string) {
	ctx := context.Background()
	// The implementation first: whoever sees the Goal paused sees it paused.
	s.setImplStatus(ctx, ImplPaused, "outside the declared scope: "+reason)
	s.mu.Lock()
	if g := s.gl.g; g != nil {
		g.Pause("outside the declared scope: " + reason)
	}
	cancel := s.cancel
	s.mu.Unlock()
	if err := s.saveGoal(ctx); err != nil {
		s.m.log.Error("save goal", "session", s.id, "err", err)
	}
	s.emitGoal()
	s.emit(NoticeEvent{Message: "Implementation paused: " + reason})
	if cancel != nil {
		cancel()
	}
}
