package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/internal/store"
)

// goalKickoffDispatch returns the commit that marks Goal id's kickoff as
// sent (its pending prompt cleared) in the transaction that stores the
// prompt, and the in-memory counterpart run once that committed. After it
// the kickoff is never sent again: a failure or crash continues the Goal.
func (s *Session) goalKickoffDispatch(id string) (dispatch func(*store.TurnStep), dispatched func()) {
	dispatch = func(st *store.TurnStep) {
		s.mu.Lock()
		defer s.mu.Unlock()
		g := s.gl.g
		if g == nil || g.ID != id {
			return
		}
		c := *g
		c.UpdatedAt = time.Now()
		data, _ := json.Marshal(&c)
		st.Goal = &store.GoalRow{ID: id, SessionID: s.id, Data: string(data)}
	}
	dispatched = func() {
		s.mu.Lock()
		if s.gl.g != nil && s.gl.g.ID == id {
			s.gl.kickoff = ""
		}
		s.mu.Unlock()
	}
	return dispatch, dispatched
}

// RecoverResult says which step [Session.Recover] took.
type RecoverResult struct {
	Started bool   `json:"started"`
	Action  string `json:"action"` // "handoff", "implementation", "goal" or "queue"
	Step    string `json:"step,omitempty"`
	Session string `json:"session"` // where it runs (a Worktree fork runs in the fork)
}

// Recover is the one recovery path after any interruption (a crash, a
// failed step, an interrupted turn). It always does the right next step:
// an accepted plan whose handoff has not dispatched its kickoff resumes
// from its recorded step; a dispatched implementation continues from its
// stored transcript, told it was interrupted (never the kickoff again); a
// tracked implementation paused by restart resumes; a Goal paused by
// restart resumes (its kickoff, if that was never sent, else a
// continuation that says it was interrupted); otherwise follow-ups still
// queued from before the restart run. A planning session that
// handed its implementation to a Worktree fork recovers the fork. With
// nothing to recover it fails with [CodeNothingToRetry]. The choice is
// [handoff.NextRecovery]'s; the session carries it out.
func (s *Session) Recover(ctx context.Context) (RecoverResult, error) {
	st := handoff.RecoveryState{ForkedTo: s.Info().ForkedTo}
	data, err := s.m.st.GetRetryRecord(ctx, s.id)
	switch {
	case err == nil:
		st.Record = true
	case !errors.Is(err, store.ErrNotFound):
		return RecoverResult{}, err
	}
	s.mu.Lock()
	g := s.gl.g
	st.GoalPausedByRestart = g != nil && g.Status == goal.Paused && g.Reason == goal.ReasonRestart
	st.KickoffPending = s.gl.kickoff != ""
	st.Queued = len(s.queue)
	s.mu.Unlock()
	if p := s.TrackedPlan(); p != nil && p.Status == ImplPaused {
		st.ImplementationPaused = true
	}
	next := handoff.NextRecovery(st)
	res := RecoverResult{Started: true, Session: s.id, Action: string(next.Action)}
	switch next.Action {
	case handoff.RecoverFork:
		f, err := s.m.Get(ctx, st.ForkedTo)
		if err != nil {
			return RecoverResult{}, err
		}
		return f.Recover(ctx)
	case handoff.RecoverHandoff:
		rec, err := handoff.UnmarshalRecord(data)
		if err != nil {
			return RecoverResult{}, &Error{Code: CodeNothingToRetry, Message: err.Error()}
		}
		res.Step = string(rec.Step)
		return res, s.startHandoff(rec)
	case handoff.RecoverGoal:
		// The Goal implements it: running first, or nothing resumes (a
		// failed tracking commit leaves both paused, as stored).
		if err := s.track.Continue(ctx); err != nil {
			return RecoverResult{}, fmt.Errorf("could not resume the implementation: %w", err)
		}
		_, err := s.GoalAction(ctx, GoalResume, next.Steer)
		return res, err
	case handoff.RecoverImplementation:
		return res, s.ResumeImplementation(ctx)
	case handoff.RecoverQueue:
		s.kick() // follow-ups that waited when the process stopped run now
		return res, nil
	}
	return RecoverResult{}, &Error{Code: CodeNothingToRetry, Message: handoff.ErrNothingToRetry.Error()}
}
