package handoff

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
