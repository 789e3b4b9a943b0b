package handoff

import "testing"

// TestNextRecovery: one recovery path, always the right next step, in
// priority order; a dispatched kickoff is never what it resends (the
// record's step decides in [Run]), and an unsent Goal kickoff goes first.
func TestNextRecovery(t *testing.T) {
	all := RecoveryState{ForkedTo: "s-f", Record: true, GoalPausedByRestart: true, KickoffPending: true, ImplementationPaused: true, Queued: 2}
	for _, c := range []struct {
		name  string
		st    RecoveryState
		want  RecoveryAction
		steer bool
	}{
		{"everything: the fork owns it", all, RecoverFork, false},
		{"a record", RecoveryState{Record: true, GoalPausedByRestart: true, Queued: 1}, RecoverHandoff, false},
		{"a Goal whose kickoff was never sent", RecoveryState{GoalPausedByRestart: true, KickoffPending: true, ImplementationPaused: true}, RecoverGoal, false},
		{"a Goal past its kickoff", RecoveryState{GoalPausedByRestart: true, Queued: 1}, RecoverGoal, true},
		{"a paused implementation", RecoveryState{ImplementationPaused: true, Queued: 3}, RecoverImplementation, false},
		{"queued follow-ups", RecoveryState{Queued: 1}, RecoverQueue, false},
		{"a pending kickoff alone is no paused Goal", RecoveryState{KickoffPending: true}, RecoverNothing, false},
		{"nothing", RecoveryState{}, RecoverNothing, false},
	} {
		got := NextRecovery(c.st)
		if got.Action != c.want || (got.Steer != "") != c.steer {
			t.Errorf("%s: %+v, want %q (steer %v)", c.name, got, c.want, c.steer)
		}
		if c.steer && got.Steer != InterruptedPrompt("") {
			t.Errorf("%s: steer %q", c.name, got.Steer)
		}
	}
}
