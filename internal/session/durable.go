package session

import (
	"context"
	"encoding/json"
	"errors"
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
// nothing to recover it fails with [CodeNothingToRetry].
func (s *Session) Recover(ctx context.Context) (RecoverResult, error) {
	if fork := s.Info().ForkedTo; fork != "" {
		f, err := s.m.Get(ctx, fork)
		if err != nil {
			return RecoverResult{}, err
		}
		return f.Recover(ctx)
	}
	res := RecoverResult{Started: true, Session: s.id}
	data, err := s.m.st.GetRetryRecord(ctx, s.id)
	switch {
	case err == nil:
		rec, err := handoff.UnmarshalRecord(data)
		if err != nil {
			return RecoverResult{}, &Error{Code: CodeNothingToRetry, Message: err.Error()}
		}
		res.Action, res.Step = "handoff", string(rec.Step)
		return res, s.startHandoff(rec)
	case !errors.Is(err, store.ErrNotFound):
		return RecoverResult{}, err
	}
	s.mu.Lock()
	g := s.gl.g
	restartPaused := g != nil && g.Status == goal.Paused && g.Reason == goal.ReasonRestart
	pendingKickoff := s.gl.kickoff != ""
	s.mu.Unlock()
	if restartPaused {
		res.Action = "goal"
		steer := handoff.InterruptedPrompt("")
		if pendingKickoff {
			steer = "" // the kickoff was never sent: it goes first
		}
		s.setImplStatus(ctx, ImplRunning, "") // the Goal implements it
		_, err := s.GoalAction(ctx, GoalResume, steer)
		return res, err
	}
	if p := s.TrackedPlan(); p != nil && p.Status == ImplPaused {
		res.Action = "implementation"
		return res, s.ResumeImplementation(ctx)
	}
	s.mu.Lock()
	queued := len(s.queue)
	s.mu.Unlock()
	if queued > 0 {
		// Follow-ups that waited when the process stopped run now.
		res.Action = "queue"
		s.kick()
		return res, nil
	}
	return RecoverResult{}, &Error{Code: CodeNothingToRetry, Message: handoff.ErrNothingToRetry.Error()}
}
