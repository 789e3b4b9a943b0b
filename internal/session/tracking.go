package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/internal/trackbind"
	"planbridge/review"
)

// The runtime that holds an implementation to its plan is package
// review's [review.Tracker]; the session owns one (s.track), implements
// its [review.Port] (trackerPort: the tracking row's commit, the events,
// the pause of the turn and its Goal), reaches it from its turns through
// package trackbind (s.bind) and maps its errors to stable codes.
// These names keep the session's callers reading as before.
type (
	TodoItem    = review.TodoItem
	TrackedPlan = review.TrackedPlan
	PlanRef     = review.PlanRef
)

// Implementation statuses ([review.TrackedPlan]).
const (
	ImplRunning = review.ImplRunning
	ImplPaused  = review.ImplPaused
	ImplDone    = review.ImplDone
)

// ReadStoredReport reads the last report stored in a session's review
// directory ([ReviewDir]).
var ReadStoredReport = review.ReadStoredReport

// Stable error codes of the implementation's review.
const (
	// CodeNoReport: there is no accepted implementation to report on.
	CodeNoReport = "no_report"
	// CodeInvalidScope refuses a scope edit naming a path outside the workspace.
	CodeInvalidScope = "invalid_scope"
)

// reviewDir holds the bases, tool logs and reports of a session's
// implementations. It lies outside work://, so the model cannot reach it.
func (m *Manager) reviewDir(id string) string { return ReviewDir(m.st.Dir(), id) }

// ReviewDir is the directory of a session's implementation reports under a
// state directory (for reading them offline, [ReadStoredReport]).
func ReviewDir(stateDir, id string) string {
	return filepath.Join(stateDir, "sessions", id, "review")
}

func (s *Session) newTracker() *review.Tracker {
	return review.NewTracker(review.Config{Session: s.id, Dir: s.m.reviewDir(s.id), State: s.m.st.Dir(),
		Work: s.workDir, Plans: agent.PlansDir, Log: s.m.log, Port: trackerPort{s}})
}

// trackerPort is the session as its tracker's [review.Port].
type trackerPort struct{ s *Session }

func (p trackerPort) CommitTracking(ctx context.Context, row review.Row) error {
	return p.s.m.st.PutTracking(ctx, p.s.id, store.Tracking(row))
}
func (p trackerPort) TodosChanged(items []TodoItem)  { p.s.emit(event.Todo{Items: items}) }
func (p trackerPort) StepsChanged(plan *TrackedPlan) { p.s.emit(event.Steps{TrackedPlan: plan}) }
func (p trackerPort) ScopeChanged(sc review.Scope)   { p.s.emit(event.Scope{Scope: sc}) }
func (p trackerPort) ReportBuilt(r review.Report)    { p.s.emit(event.Report{Report: r}) }
func (p trackerPort) Notice(msg string)              { p.s.emit(event.Notice{Message: msg}) }
func (p trackerPort) Pause(reason string)            { p.s.pauseForScope(reason) }
func (p trackerPort) ReadArtifact(rel, hash string) (string, error) {
	return p.s.readArtifact(rel, hash)
}

func (p trackerPort) Workspace() string {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	return p.s.row.Workspace
}

func (p trackerPort) Asker() review.Asker {
	p.s.m.mu.Lock()
	ask := p.s.m.asker
	p.s.m.mu.Unlock()
	if ask == nil {
		return nil
	}
	return trackbind.Asker(func(ctx context.Context, call agent.ToolCall, q string) (bool, error) {
		return ask(ctx, p.s.id, call, q)
	})
}

func (s *Session) loadTracking(ctx context.Context) error {
	t, err := s.m.st.GetTracking(ctx, s.id)
	if err != nil {
		return err
	}
	return s.track.Load(ctx, review.Row(t), s.restarted)
}

// Todos returns the current todo list.
func (s *Session) Todos() []TodoItem { return s.track.Todos() }

// TrackedPlan returns a copy of the tracked plan (nil if none).
func (s *Session) TrackedPlan() *TrackedPlan { return s.track.Plan() }

// startTrackingLocked installs the steps of an accepted plan (running), in
// the decision (under s.mu) that closes its card; mine and prev are for
// s.track.Undo when the commit storing it fails.
func (s *Session) startTrackingLocked(title, artifact, hash, body string, policy handoff.Policy, base string) (mine, prev *TrackedPlan) {
	return s.track.Begin(review.Accepted{Title: title, Artifact: artifact, Hash: hash, Body: body, Policy: policy, Base: base})
}

// setImplStatus moves the tracked implementation between running and
// paused ([review.Tracker.SetStatus]). A commit that fails announces
// nothing and is returned, so the step it was for fails visibly.
func (s *Session) setImplStatus(ctx context.Context, status, reason string) error {
	return s.track.SetStatus(ctx, status, reason)
}

// ResumeImplementation continues a paused implementation with its remaining
// steps, under the accepted implementation policy.
func (s *Session) ResumeImplementation(ctx context.Context) error {
	text, policy, err := s.track.Resume(ctx)
	if errors.Is(err, review.ErrNothingToResume) {
		return &Error{Code: CodeNothingToRetry, Message: err.Error()}
	}
	if err != nil {
		return fmt.Errorf("could not resume the implementation: %w", err) // its commit failed: nothing resumed
	}
	s.enqueue(turnReq{text: text, display: "Resume implementation", policy: &policy})
	return nil
}

// pauseForScope stops an unattended turn that would write outside the
// scope: the implementation and its Goal pause, and the turn ends without
// writing. The person extends the scope (approving the write when the
// implementation resumes attended) or resumes it. The Goal and the turn
// are the aggregate's, so this stays here. A pause whose commit fails
// still stops the turn and is kept in memory (the safe side), but is
// announced as what it is: an error, not a pause.
func (s *Session) pauseForScope(reason string) {
	ctx := context.Background()
	// The implementation first: whoever sees the Goal paused sees it paused.
	err := s.setImplStatus(ctx, ImplPaused, "outside the declared scope: "+reason)
	if gerr := s.goal.Pause(ctx, "outside the declared scope: "+reason); gerr != nil && err == nil {
		err = gerr // the Goal's pause is not stored: reported like the implementation's
	}
	s.mu.Lock()
	cancel := s.cancel
	s.mu.Unlock()
	if err != nil {
		s.emit(event.Error{Message: fmt.Sprintf("The implementation was stopped (%s), but its pause could not be saved: %v", reason, err)})
	} else {
		s.emit(event.Notice{Message: "Implementation paused: " + reason})
	}
	if cancel != nil {
		cancel()
	}
}

// reportIfEnded builds the report once when the implementation has ended:
// every step done, or the implementing Goal complete.
func (s *Session) reportIfEnded(ctx context.Context) {
	s.track.ReportIfEnded(ctx, s.goal.PlanComplete())
}

// Report builds the implementation report now, stores it and publishes it
// (a "report" event).
func (s *Session) Report(ctx context.Context) (review.Report, error) {
	r, err := s.track.Report(ctx)
	return r, reviewError(err)
}

// StoredReport is the last report built of the current implementation,
// or nil.
func (s *Session) StoredReport() *review.Report { return s.track.StoredReport() }

// FileDiff is the unified diff of one workspace file (root-relative, as the
// report names it) from the implementation's base to now.
func (s *Session) FileDiff(ctx context.Context, rel string) (string, error) {
	d, err := s.track.FileDiff(ctx, rel)
	return d, reviewError(err)
}

// DiffVersions diffs version from against version to; to 0 is the current
// proposal's version and from 0 the one before it.
func (s *Session) DiffVersions(from, to int) (review.VersionDiff, error) {
	s.mu.Lock()
	p, _ := s.card.ProposalLocked()
	hash := p.Hash
	s.mu.Unlock()
	d, err := s.track.DiffVersions(hash, from, to)
	return d, reviewError(err)
}

// reviewError gives the tracker's errors of a kind their stable code.
func reviewError(err error) error {
	switch {
	case errors.Is(err, review.ErrNoReport):
		return errorf(CodeNoReport, "%s", err.Error())
	case errors.Is(err, review.ErrBadPath):
		return errorf(CodeInvalidParams, "%s", err.Error())
	case errors.Is(err, review.ErrNoVersion):
		return errorf(CodeNoProposal, "%s", err.Error())
	}
	return err
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
	p, _ := s.card.ProposalLocked()
	hash := p.Hash
	s.mu.Unlock()
	if err := s.track.SetCardScope(hash, clean); err != nil {
		return ApprovalView{}, err
	}
	s.changed()
	return s.Approval(), nil
}

// stageBase stages the base of an implementation of session sess in the
// workspace ws as it is now ([review.StageBase]), with the card's scope.
func (m *Manager) stageBase(ctx context.Context, sess, ws, title, hash, artifact string, scope []string) (string, error) {
	return review.StageBase(ctx, m.reviewDir(sess), ws, title, hash, artifact, scope)
}

// stageBase stages the base of an implementation of this session's plan
// in its workspace as it is now. It fails closed: a base that cannot be
// staged refuses the start it was for (nothing moved), because without
// it the scope the person approved on the card would not be held.
func (s *Session) stageBase(ctx context.Context, hash, artifact, title, body string) (string, error) {
	s.mu.Lock()
	ws := s.row.Workspace
	s.mu.Unlock()
	id, err := s.m.stageBase(ctx, s.id, ws, title, hash, artifact, s.track.CardScope(hash, body))
	if err != nil {
		return "", errorf(CodeBaseFailed, "the implementation's base (its scope and report) could not be taken, so nothing was started: %v", err)
	}
	return id, nil
}

// CodeBaseFailed refuses a start whose implementation base could not be
// staged; the card (or the parked plan) stays as it was.
const CodeBaseFailed = "base_failed"

// baseCommitted is called once the commit naming base is durable
// ([review.BaseCommitted]).
func (m *Manager) baseCommitted(sess, base string) {
	if err := review.BaseCommitted(m.reviewDir(sess), base); err != nil {
		m.log.Warn("record the current implementation base", "session", sess, "err", err)
	}
}

// bind is the session's tracker as its turns reach it (package trackbind).
func (s *Session) bind() trackbind.Binding {
	return trackbind.Binding{Tracker: s.track,
		Tool: func(name string) *agent.Tool { return s.registry().Get(name) },
		Roots: func() agent.Roots {
			s.mu.Lock()
			defer s.mu.Unlock()
			return agent.Roots{Workspace: s.row.Workspace, Work: s.workDir}
		}}
}

// AskKind is the kind of the question an [Asker] is called for: "" for
// "may this call run?", or [trackbind.AskScopeEffects].
func AskKind(ctx context.Context) string { return trackbind.AskKind(ctx) }
