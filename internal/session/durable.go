package session

import (
	"context"
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
		if r, ok := s.gl.Dispatched(id, time.Now()); ok {
			st.Goal = &store.GoalRow{ID: r.ID, SessionID: s.id, Data: r.Data}
		}
	}
	dispatched = func() {
		s.mu.Lock()
		s.gl.KickoffSent(id)
		s.mu.Unlock()
	}
	return dispatch, dispatched
}

// RecoverResult says which step [Session.Recover] took.
type RecoverResult = handoff.Recovered

// Recover is the one recovery path after any interruption (a crash, a
// failed step, an interrupted turn): [handoff.Recover] over this session,
// which always takes the right next step ([handoff.NextRecovery]) and
// with nothing to recover fails with [CodeNothingToRetry].
func (s *Session) Recover(ctx context.Context) (RecoverResult, error) {
	res, err := handoff.Recover(ctx, recovery{handoffEnv{s}})
	if r, ok := err.(*handoff.Refusal); ok { // Recover's own, never a step's
		err = &Error{Code: r.Code, Message: r.Message}
	}
	return res, err
}

// recovery is the session side of [handoff.Recover] ([handoff.RecoverPort]).
type recovery struct{ handoffEnv }

func (r recovery) ID() string { return r.s.id }

func (r recovery) State(ctx context.Context) (handoff.RecoveryState, string, error) {
	s := r.s
	st := handoff.RecoveryState{ForkedTo: s.Info().ForkedTo}
	data, err := s.m.st.GetRetryRecord(ctx, s.id)
	switch {
	case err == nil:
		st.Record = true
	case !errors.Is(err, store.ErrNotFound):
		return st, "", err
	}
	s.mu.Lock()
	g := s.gl.Goal
	st.GoalPausedByRestart = g != nil && g.Status == goal.Paused && g.Reason == goal.ReasonRestart
	st.KickoffPending = s.gl.Kickoff != ""
	st.Queued = len(s.queue)
	s.mu.Unlock()
	if p := s.TrackedPlan(); p != nil && p.Status == ImplPaused {
		st.ImplementationPaused = true
	}
	return st, data, nil
}

func (r recovery) RecoverFork(ctx context.Context, id string) (RecoverResult, error) {
	f, err := r.s.m.Get(ctx, id)
	if err != nil {
		return RecoverResult{}, err
	}
	return f.Recover(ctx)
}

func (r recovery) ContinueImplementation(ctx context.Context) error { return r.s.track.Continue(ctx) }

func (r recovery) ResumeGoal(ctx context.Context, steer string) error {
	_, err := r.s.GoalAction(ctx, goal.VerbResume, steer)
	return err
}

func (r recovery) ResumeImplementation(ctx context.Context) error {
	return r.s.ResumeImplementation(ctx)
}

func (r recovery) RunQueue() { r.s.kick() } // follow-ups that waited when the process stopped run now
