package handoff

import (
	"context"
	"errors"
	"strings"
	"testing"
)

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

// fakeRecovery is a [RecoverPort] that records the step it was told to take.
type fakeRecovery struct {
	st      RecoveryState
	data    string
	stErr   error
	stepErr error
	contErr error // ContinueImplementation's
	did     []string
}

func (f *fakeRecovery) ID() string { return "s-1" }
func (f *fakeRecovery) State(ctx context.Context) (RecoveryState, string, error) {
	return f.st, f.data, f.stErr
}
func (f *fakeRecovery) RecoverFork(ctx context.Context, id string) (Recovered, error) {
	f.did = append(f.did, "fork "+id)
	return Recovered{Started: true, Action: "handoff", Session: id}, f.stepErr
}
func (f *fakeRecovery) Start(rec *Record) error {
	f.did = append(f.did, "start "+string(rec.Step))
	return f.stepErr
}
func (f *fakeRecovery) ContinueImplementation(ctx context.Context) error {
	f.did = append(f.did, "running")
	return f.contErr
}
func (f *fakeRecovery) ResumeGoal(ctx context.Context, steer string) error {
	f.did = append(f.did, "goal "+steer)
	return f.stepErr
}
func (f *fakeRecovery) ResumeImplementation(ctx context.Context) error {
	f.did = append(f.did, "implementation")
	return f.stepErr
}
func (f *fakeRecovery) RunQueue() { f.did = append(f.did, "queue") }

// TestRecover: Recover takes exactly NextRecovery's step over the port,
// reports it (also when the step then fails, never for a refusal), hands
// the fork's own result on, and refuses an unreadable record or nothing
// to recover with CodeNothingToRetry.
func TestRecover(t *testing.T) {
	rec := (&Record{Step: StepContextReady, Selection: Selection{Location: Here}, Artifact: Artifact{Path: "plans/accepted-ab.md", Hash: "ab"}}).Marshal()
	boom := errors.New("boom")
	for _, c := range []struct {
		name    string
		port    fakeRecovery
		want    Recovered
		did     string
		err     error  // the step's error, handed on as is
		refusal string // else a CodeNothingToRetry refusal with this text
	}{
		{"the fork", fakeRecovery{st: RecoveryState{ForkedTo: "s-f", Record: true}}, Recovered{Started: true, Action: "handoff", Session: "s-f"}, "fork s-f", nil, ""},
		{"the fork fails", fakeRecovery{st: RecoveryState{ForkedTo: "s-f"}, stepErr: boom}, Recovered{Started: true, Action: "handoff", Session: "s-f"}, "fork s-f", boom, ""},
		{"a record", fakeRecovery{st: RecoveryState{Record: true}, data: rec}, Recovered{Started: true, Action: "handoff", Step: "context_ready", Session: "s-1"}, "start context_ready", nil, ""},
		{"a record whose start fails", fakeRecovery{st: RecoveryState{Record: true}, data: rec, stepErr: boom}, Recovered{Started: true, Action: "handoff", Step: "context_ready", Session: "s-1"}, "start context_ready", boom, ""},
		{"an unreadable record", fakeRecovery{st: RecoveryState{Record: true}, data: "{"}, Recovered{}, "", nil, "?"},
		{"a Goal's unsent kickoff", fakeRecovery{st: RecoveryState{GoalPausedByRestart: true, KickoffPending: true}}, Recovered{Started: true, Action: "goal", Session: "s-1"}, "running;goal ", nil, ""},
		{"a Goal past its kickoff", fakeRecovery{st: RecoveryState{GoalPausedByRestart: true}}, Recovered{Started: true, Action: "goal", Session: "s-1"}, "running;goal " + InterruptedPrompt(""), nil, ""},
		{"a Goal whose resume fails", fakeRecovery{st: RecoveryState{GoalPausedByRestart: true}, stepErr: boom}, Recovered{Started: true, Action: "goal", Session: "s-1"}, "running;goal " + InterruptedPrompt(""), boom, ""},
		{"a Goal whose implementation cannot run", fakeRecovery{st: RecoveryState{GoalPausedByRestart: true}, contErr: boom}, Recovered{}, "running", nil, ""},
		{"an implementation", fakeRecovery{st: RecoveryState{ImplementationPaused: true}, stepErr: boom}, Recovered{Started: true, Action: "implementation", Session: "s-1"}, "implementation", boom, ""},
		{"the queue", fakeRecovery{st: RecoveryState{Queued: 2}}, Recovered{Started: true, Action: "queue", Session: "s-1"}, "queue", nil, ""},
		{"nothing", fakeRecovery{}, Recovered{}, "", nil, ErrNothingToRetry.Error()},
		{"the state cannot be read", fakeRecovery{st: RecoveryState{Queued: 1}, stErr: boom}, Recovered{}, "", boom, ""},
	} {
		p := c.port
		got, err := Recover(context.Background(), &p)
		if got != c.want || strings.Join(p.did, ";") != c.did {
			t.Errorf("%s: %+v after %q, want %+v after %q", c.name, got, p.did, c.want, c.did)
		}
		if c.refusal != "" {
			r, ok := err.(*Refusal)
			if !ok || r.Code != CodeNothingToRetry || (c.refusal != "?" && r.Message != c.refusal) {
				t.Errorf("%s: %v, want a %s refusal", c.name, err, CodeNothingToRetry)
			}
			continue
		}
		if c.port.contErr != nil {
			if !errors.Is(err, c.port.contErr) || err.Error() != "could not resume the implementation: boom" {
				t.Errorf("%s: error %v", c.name, err)
			}
			continue
		}
		if err != c.err {
			t.Errorf("%s: error %v, want %v", c.name, err, c.err)
		}
	}
}
