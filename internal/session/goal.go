package session

import (
	"context"
	"strings"

	"planbridge/goal"
	"planbridge/internal/goalrun"
	"planbridge/internal/turn"
)

// CodeRetryConflict reports a different unfinished Goal found by a retry.
const CodeRetryConflict = goalrun.CodeRetryConflict

// goalHost is the session side of its Goal's runner ([goalrun.Host]).
type goalHost struct{ s *Session }

func (h goalHost) PostureLocked() (plan bool, mode string) { return h.s.row.Plan, h.s.row.Mode }
func (h goalHost) Emit(ev EventData)                       { h.s.emit(ev) }
func (h goalHost) Enqueue(t goalrun.Turn)                  { h.s.enqueue(goalTurn(t)) }
func (h goalHost) Kick()                                   { h.s.kick() }
func (h goalHost) ReadArtifact(path, hash string) (string, error) {
	return h.s.readArtifact(path, hash)
}

// goalTurn is the turn request of a Goal turn.
func goalTurn(t goalrun.Turn) turn.Req {
	return turn.Req{Text: t.Text, Display: t.Display, Policy: t.Policy, Goal: t.Goal, Dispatch: t.Dispatch, Dispatched: t.Dispatched}
}

// Goal returns a copy of the session's Goal (nil if none).
func (s *Session) Goal() *goal.Goal { return s.goal.Goal() }

// GoalCommand performs a typed `/goal` command ([goal.ParseCommand]).
func (s *Session) GoalCommand(ctx context.Context, arg string) (string, error) {
	verb, rest := goal.ParseCommand(arg)
	return s.GoalAction(ctx, verb, rest)
}

// GoalAction performs one explicit Goal action ([goalrun.Runner.Act]: verb
// is one of package goal's verbs; arg is the objective, the steering or
// the budget), decided and committed under the session's lock with the
// posture it depends on.
func (s *Session) GoalAction(ctx context.Context, verb, arg string) (string, error) {
	rest := strings.TrimSpace(s.m.redact.String(arg)) // an objective is stored and shown to every tier
	cfg := s.m.modelConfig()
	msg, err := s.goal.Act(ctx, verb, rest, goalrun.Defaults{Budget: cfg.GoalBudget, Model: cfg.Default.Model, Effort: cfg.Default.Effort})
	return msg, refused(err)
}
