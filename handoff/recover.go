package handoff

import (
	"context"
	"fmt"
)

// RecoveryAction is the next step of the one recovery path.
type RecoveryAction string

// The recovery actions, in the order [NextRecovery] prefers them.
const (
	RecoverFork           RecoveryAction = "fork"           // recover the Worktree fork that owns the implementation
	RecoverHandoff        RecoveryAction = "handoff"        // resume the record from its step ([Run])
	RecoverGoal           RecoveryAction = "goal"           // resume the Goal a restart paused
	RecoverImplementation RecoveryAction = "implementation" // resume the tracked implementation a restart paused
	RecoverQueue          RecoveryAction = "queue"          // run the follow-ups still queued
	RecoverNothing        RecoveryAction = ""               // nothing to recover
)

// RecoveryState is what a session knows after an interruption (a crash, a
// failed step, an interrupted turn).
type RecoveryState struct {
	ForkedTo             string // the fork this planning session handed over to
	Record               bool   // a retry record exists
	GoalPausedByRestart  bool
	KickoffPending       bool // the Goal's kickoff was never sent
	ImplementationPaused bool // the tracked implementation was paused by restart
	Queued               int  // follow-ups waiting in the durable queue
}

// Recovery is what [NextRecovery] chose. Steer is the prompt a resumed
// Goal continues with ("" when its unsent kickoff goes first).
type Recovery struct {
	Action RecoveryAction
	Steer  string
}

// NextRecovery is the one recovery path's decision: the fork recovers a
// handed-over implementation; a record resumes from its step (a
// dispatched kickoff continues, never resent); a Goal paused by restart
// resumes, its unsent kickoff first or else told it was interrupted; a
// tracked implementation paused by restart resumes; else queued
// follow-ups run; else there is nothing to recover.
func NextRecovery(st RecoveryState) Recovery {
	switch {
	case st.ForkedTo != "":
		return Recovery{Action: RecoverFork}
	case st.Record:
		return Recovery{Action: RecoverHandoff}
	case st.GoalPausedByRestart && st.KickoffPending:
		return Recovery{Action: RecoverGoal}
	case st.GoalPausedByRestart:
		return Recovery{Action: RecoverGoal, Steer: InterruptedPrompt("")}
	case st.ImplementationPaused:
		return Recovery{Action: RecoverImplementation}
	case st.Queued > 0:
		return Recovery{Action: RecoverQueue}
	}
	return Recovery{Action: RecoverNothing}
}

// CodeNothingToRetry refuses a recovery with nothing to recover (or a
// retry record that cannot be read).
const CodeNothingToRetry = "nothing_to_retry"

// Recovered is what [Recover] did: the step it took and the session it
// runs in (a Worktree fork's implementation runs in the fork).
type Recovered struct {
	Started bool   `json:"started"`
	Action  string `json:"action"` // "handoff", "implementation", "goal" or "queue"
	Step    string `json:"step,omitempty"`
	Session string `json:"session"`
}

// RecoverPort is what [Recover] reads of the session that recovers and the
// steps it has the session take. State only reads; each other method is
// the session carrying out one [RecoveryAction].
type RecoverPort interface {
	// ID is the recovering session's id.
	ID() string
	// State is the session's [RecoveryState] now and, when State.Record,
	// the stored retry record.
	State(ctx context.Context) (RecoveryState, string, error)
	// RecoverFork is [Recover] of the fork id.
	RecoverFork(ctx context.Context, id string) (Recovered, error)
	// Start runs [Run] on rec as the session's owning workflow.
	Start(rec *Record) error
	// ContinueImplementation sets the tracked implementation running
	// again (committed), without sending anything.
	ContinueImplementation(ctx context.Context) error
	// ResumeGoal resumes the Goal a restart paused with steer ("": its
	// unsent kickoff).
	ResumeGoal(ctx context.Context, steer string) error
	// ResumeImplementation resumes the tracked implementation a restart
	// paused.
	ResumeImplementation(ctx context.Context) error
	// RunQueue runs the follow-ups still queued.
	RunQueue()
}

// Recover is the one recovery path after any interruption (a crash, a
// failed step, an interrupted turn): it takes [NextRecovery]'s step over
// p. A record that cannot be read, or nothing to recover, is a
// [CodeNothingToRetry] [Refusal]; every other error is the step's own.
// A step that fails after it was chosen still reports which it was, except
// a Goal's whose implementation could not be set running (nothing resumed).
func Recover(ctx context.Context, p RecoverPort) (Recovered, error) {
	st, data, err := p.State(ctx)
	if err != nil {
		return Recovered{}, err
	}
	next := NextRecovery(st)
	res := Recovered{Started: true, Session: p.ID(), Action: string(next.Action)}
	switch next.Action {
	case RecoverFork:
		return p.RecoverFork(ctx, st.ForkedTo)
	case RecoverHandoff:
		rec, err := UnmarshalRecord(data)
		if err != nil {
			return Recovered{}, &Refusal{Code: CodeNothingToRetry, Message: err.Error()}
		}
		res.Step = string(rec.Step)
		return res, p.Start(rec)
	case RecoverGoal:
		// The Goal implements it: running first, or nothing resumes (a
		// failed tracking commit leaves both paused, as stored).
		if err := p.ContinueImplementation(ctx); err != nil {
			return Recovered{}, fmt.Errorf("could not resume the implementation: %w", err)
		}
		return res, p.ResumeGoal(ctx, next.Steer)
	case RecoverImplementation:
		return res, p.ResumeImplementation(ctx)
	case RecoverQueue:
		p.RunQueue()
		return res, nil
	}
	return Recovered{}, &Refusal{Code: CodeNothingToRetry, Message: ErrNothingToRetry.Error()}
}
