package handoffport

import (
	"context"
	"errors"

	"planbridge/handoff"
	"planbridge/internal/store"
	"planbridge/review"
)

// Recover is the one recovery path after any interruption (a crash, a
// failed step, an interrupted turn): [handoff.Recover] over this session,
// which always takes the right next step ([handoff.NextRecovery]) and
// with nothing to recover fails with a [handoff.CodeNothingToRetry]
// refusal.
func (p *Ports) Recover(ctx context.Context) (handoff.Recovered, error) {
	return handoff.Recover(ctx, recovery{env{p}})
}

// recovery is the session side of [handoff.Recover] ([handoff.RecoverPort]).
type recovery struct{ env }

func (r recovery) ID() string { return r.p.cfg.Session }

// State reads the stored record, then, under the lock, the Goal's and
// the queue's facts together, then the tracked plan.
func (r recovery) State(ctx context.Context) (handoff.RecoveryState, string, error) {
	cfg := r.p.cfg
	cfg.Lock.Lock()
	st := handoff.RecoveryState{ForkedTo: cfg.Host.RowLocked().ForkedTo}
	cfg.Lock.Unlock()
	data, err := cfg.Store.GetRetryRecord(ctx, cfg.Session)
	switch {
	case err == nil:
		st.Record = true
	case !errors.Is(err, store.ErrNotFound):
		return st, "", err
	}
	cfg.Lock.Lock()
	st.GoalPausedByRestart, st.KickoffPending = cfg.Goal.RecoveryLocked()
	st.Queued = cfg.Host.QueuedLocked()
	cfg.Lock.Unlock()
	if p := cfg.Track.Plan(); p != nil && p.Status == review.ImplPaused {
		st.ImplementationPaused = true
	}
	return st, data, nil
}

func (r recovery) RecoverFork(ctx context.Context, id string) (handoff.Recovered, error) {
	f, err := r.p.cfg.Host.Open(ctx, id)
	if err != nil {
		return handoff.Recovered{}, err
	}
	return f.Recover(ctx)
}

func (r recovery) ContinueImplementation(ctx context.Context) error {
	return r.p.cfg.Track.Continue(ctx)
}

func (r recovery) ResumeGoal(ctx context.Context, steer string) error {
	return r.p.cfg.Host.ResumeGoal(ctx, steer)
}

func (r recovery) ResumeImplementation(ctx context.Context) error {
	return r.p.cfg.Host.ResumeImplementation(ctx)
}

func (r recovery) RunQueue() { r.p.cfg.Host.Kick() } // follow-ups that waited when the process stopped run now
