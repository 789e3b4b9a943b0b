package session

import (
	"context"

	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/tracking"
	"planbridge/internal/turn"
	"planbridge/review"
)

// The implementation's tracking is package tracking's ([tracking.Tracking],
// s.track); the session implements its host (trackHost). These names keep
// the session's callers reading as before.
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

func (s *Session) newTracking() *tracking.Tracking {
	return tracking.New(tracking.Config{Session: s.id, State: s.m.st.Dir(), Work: s.workDir, Store: s.m.st, Host: trackHost{s}, Log: s.m.log})
}

// trackHost is the session as its tracking's [tracking.Host].
type trackHost struct{ s *Session }

func (h trackHost) Emit(ev event.Data)           { h.s.emit(ev) }
func (h trackHost) Tool(name string) *agent.Tool { return h.s.registry().Get(name) }

func (h trackHost) Roots() agent.Roots {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return agent.Roots{Workspace: h.s.row.Workspace, Work: h.s.workDir}
}

func (h trackHost) Ask() agent.Asker { return h.s.asker() }

func (h trackHost) GoalComplete() bool { return h.s.goal.PlanComplete() }

// PauseGoal pauses the Goal (its runner stores and announces it), then
// takes the running turn's cancel; the Goal and the turn are the
// aggregate's.
func (h trackHost) PauseGoal(ctx context.Context, why string) (stopTurn func(), err error) {
	err = h.s.goal.Pause(ctx, why)
	h.s.mu.Lock()
	cancel := h.s.cancel
	h.s.mu.Unlock()
	if cancel == nil {
		return nil, err
	}
	return cancel, err
}

// Todos returns the current todo list.
func (s *Session) Todos() []TodoItem { return s.track.Todos() }

// TrackedPlan returns a copy of the tracked plan (nil if none).
func (s *Session) TrackedPlan() *TrackedPlan { return s.track.Plan() }

// ResumeImplementation continues a paused implementation with its remaining
// steps, under the accepted implementation policy ([tracking.Tracking.Resume]).
func (s *Session) ResumeImplementation(ctx context.Context) error {
	text, policy, err := s.track.Resume(ctx)
	if err != nil {
		return refused(err)
	}
	s.enqueue(turn.Req{Text: text, Display: "Resume implementation", Policy: &policy})
	return nil
}

// Report builds the implementation report now, stores it and publishes it
// (a "report" event). It writes into the session's review directory, and
// a session whose implementation is done may be deleted meanwhile: it is
// refused once the session is deleted ([Session.whileLive]), so the
// report never writes a deleted session's directory back.
func (s *Session) Report(ctx context.Context) (r review.Report, err error) {
	err = s.whileLive(func() error {
		r, err = s.track.Report(ctx)
		return err
	})
	return r, refused(tracking.Coded(err))
}

// StoredReport is the last report built of the current implementation,
// or nil.
func (s *Session) StoredReport() *review.Report { return s.track.StoredReport() }

// FileDiff is the unified diff of one workspace file (root-relative, as the
// report names it) from the implementation's base to now.
func (s *Session) FileDiff(ctx context.Context, rel string) (string, error) {
	d, err := s.track.FileDiff(ctx, rel)
	return d, refused(tracking.Coded(err))
}

// DiffVersions diffs version from against version to; to 0 is the current
// proposal's version and from 0 the one before it.
func (s *Session) DiffVersions(from, to int) (review.VersionDiff, error) {
	s.mu.Lock()
	p, _ := s.card.ProposalLocked()
	hash := p.Hash
	s.mu.Unlock()
	d, err := s.track.DiffVersions(hash, from, to)
	return d, refused(tracking.Coded(err))
}

// UpdateScope replaces the card's scope with the person's paths
// (workspace-relative files and directories; an empty list declares none,
// so nothing is held).
func (s *Session) UpdateScope(ctx context.Context, attempt string, paths []string) (ApprovalView, error) {
	clean, err := tracking.CleanScope(paths)
	if err != nil {
		return ApprovalView{}, refused(err)
	}
	s.mu.Lock()
	if err := s.card.CurrentLocked(attempt); err != nil { // no decision: a selection commit does not refuse it
		s.mu.Unlock()
		return ApprovalView{}, refused(err)
	}
	p, _ := s.card.ProposalLocked()
	hash := p.Hash
	s.mu.Unlock()
	// Into the session's directory: refused once it is deleted.
	if err := s.whileLive(func() error { return s.track.SetCardScope(hash, clean) }); err != nil {
		return ApprovalView{}, err
	}
	s.changed()
	return s.Approval(), nil
}
