package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
)

// goalUnfinishedHint says what lifts a goal_unfinished refusal.
const goalUnfinishedHint = "a paused Goal still counts: resume it until it completes (/goal resume, after /goal budget if it ran out) or end it with /goal clear"

// CodeRetryConflict reports a different unfinished Goal found by a retry.
const CodeRetryConflict = "retry_conflict"

// goalState is the session's Goal (guarded by s.mu).
type goalState struct {
	g       *goal.Goal
	kickoff string   // pending kickoff prompt (a plan handoff's, or a /goal start's)
	notes   []string // budget notes not yet delivered to the model
	retry   bool     // the next kickoff/continuation is the one transient retry
}

func (s *Session) loadGoal(ctx context.Context) error {
	row, err := s.m.st.CurrentGoal(ctx, s.id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var g goal.Goal
	if err := json.Unmarshal([]byte(row.Data), &g); err != nil {
		s.m.log.Warn("corrupt goal record; ignored", "session", s.id, "goal", row.ID, "err", err)
		return nil
	}
	s.gl = goalState{g: &g, kickoff: row.Kickoff}
	if g.Status == goal.Active && s.restarted {
		g.RestorePaused() // a Goal loaded after a restart comes back paused
		return s.saveGoal(ctx)
	}
	return nil
}

// saveGoal persists the Goal. It holds s.goalMu from the snapshot to the
// write, so a clear cannot slip in between and be overwritten by the stale
// snapshot.
func (s *Session) saveGoal(ctx context.Context) error {
	s.goalMu.Lock()
	defer s.goalMu.Unlock()
	row, ok := s.goalRow()
	if !ok {
		return nil
	}
	return s.m.st.PutGoal(ctx, row)
}

// goalRow is the stored form of the session's Goal (ok false: none).
func (s *Session) goalRow() (store.GoalRow, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gs := s.gl
	if gs.g == nil {
		return store.GoalRow{}, false
	}
	gs.g.UpdatedAt = time.Now()
	data, _ := json.Marshal(gs.g)
	return store.GoalRow{ID: gs.g.ID, SessionID: s.id, Data: string(data), Kickoff: gs.kickoff}, true
}

func (s *Session) emitGoal() {
	s.mu.Lock()
	g := s.gl.g
	data := event.Goal{Summary: g.Summary()}
	if g != nil {
		c := *g
		pending := s.gl.kickoff != ""
		data = event.Goal{Goal: &c, Summary: c.Summary(), KickoffPending: &pending}
	}
	s.mu.Unlock()
	s.emit(data)
}

func (s *Session) goalUnfinishedLocked() bool {
	return s.gl.g != nil && s.gl.g.Status.Unfinished()
}

// Goal returns a copy of the session's Goal (nil if none).
func (s *Session) Goal() *goal.Goal {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gl.g == nil {
		return nil
	}
	c := *s.gl.g
	return &c
}

// planRefMatches checks the Goal's accepted plan still has its hash.
func (s *Session) planRefMatches(ref string) bool {
	if ref == "" {
		return true
	}
	p, hash, ok := strings.Cut(strings.TrimPrefix(ref, agent.WorkScheme), "#")
	if !ok {
		return false
	}
	_, err := s.readArtifact(p, hash)
	return err == nil
}

// goalPolicy is the implementation policy of Goal turns.
func goalPolicy(g *goal.Goal) *handoff.Policy {
	return &handoff.Policy{Model: g.Policy.Model, Effort: g.Policy.Effort, Mode: g.Policy.Mode}
}

// goalTurnLocked builds the Goal turn [goal.Decide] chose: the pending
// kickoff or a continuation. It consumes the one-retry mark. Caller holds s.mu.
func (s *Session) goalTurnLocked(kickoff bool) turnReq {
	g := s.gl.g
	t := goal.Turn{ID: g.ID, Objective: g.Objective, Kickoff: kickoff, Continuation: !kickoff, Retried: s.gl.retry}
	s.gl.retry = false
	if kickoff {
		display := handoff.KickoffDisplay(true)
		if g.PlanRef == "" || goal.IsObjectiveKickoff(s.gl.kickoff) {
			display = "Work toward Goal: " + g.Objective
		}
		req := turnReq{text: s.gl.kickoff, display: display, policy: goalPolicy(g), goal: t}
		// The kickoff is marked sent with its prompt: never sent twice.
		req.dispatch, req.dispatched = s.goalKickoffDispatch(g.ID)
		return req
	}
	return turnReq{text: goal.ContinuePrompt, display: "Continue Goal", policy: goalPolicy(g), goal: t}
}

// admitGoalTurn binds a turn to the active Goal or drops a stale one
// ([goal.Admit]); a Goal turn takes the Goal's policy and the budget notes
// not yet delivered.
func (s *Session) admitGoalTurn(req *turnReq) (drop string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := req.goal.Bound()
	t, suffix, drop := goal.Admit(s.gl.g, req.goal, req.policy == nil, s.gl.notes)
	if drop != "" {
		return drop
	}
	if req.goal = t; t.Bound() && !was {
		req.policy = goalPolicy(s.gl.g) // a person's follow-up while the Goal is active
	}
	if suffix != "" {
		req.text += suffix
		s.gl.notes = nil
	}
	return ""
}

// settleGoalTurn books a Goal turn at settlement ([goal.Goal.Book]) and
// carries out what it says; retry asks for the same turn again.
func (s *Session) settleGoalTurn(ctx context.Context, req turnReq, usage agent.Usage, wall time.Duration, err error) (retry bool) {
	s.mu.Lock()
	g := s.gl.g
	if g == nil || g.ID != req.goal.ID {
		s.mu.Unlock()
		return false
	}
	b := g.Book(req.goal, goal.TurnUsage{InputTokens: int64(usage.InputTokens), OutputTokens: int64(usage.OutputTokens), Wall: wall},
		err, errors.Is(err, agent.ErrTransient))
	s.gl.notes = append(s.gl.notes, b.Notes...)
	if b.RetryNext {
		s.gl.retry = true
	}
	if b.KickoffDone {
		s.gl.kickoff = ""
	}
	s.mu.Unlock()
	if serr := s.saveGoal(context.WithoutCancel(ctx)); serr != nil {
		s.m.log.Error("save goal", "session", s.id, "err", serr)
	}
	s.emitGoal()
	if b.Notice != "" {
		s.emit(event.Notice{Message: b.Notice})
	}
	return b.Requeue
}

// Goal actions, as [Session.GoalAction] takes them (package goal's verbs).
const (
	GoalStatus = goal.VerbStatus
	GoalStart  = goal.VerbStart
	GoalPause  = goal.VerbPause
	GoalResume = goal.VerbResume
	GoalBudget = goal.VerbBudget
	GoalEdit   = goal.VerbEdit
	GoalClear  = goal.VerbClear
)

// GoalCommand performs a typed `/goal` command ([goal.ParseCommand]).
func (s *Session) GoalCommand(ctx context.Context, arg string) (string, error) {
	verb, rest := goal.ParseCommand(arg)
	return s.GoalAction(ctx, verb, rest)
}

// GoalAction performs one explicit Goal action; arg is the objective
// (start, edit), the steering (resume) or the budget ("N" or "none"). Each
// action reads and changes the Goal in one critical section, so it never
// mutates a Goal that was cleared or replaced after it was looked up.
func (s *Session) GoalAction(ctx context.Context, verb, arg string) (string, error) {
	rest := strings.TrimSpace(s.m.redact.String(arg)) // an objective is stored and shown to every tier
	// Read before taking s.mu, which the action holds throughout.
	model, effort := s.m.sessionModel()
	cfg := s.m.modelConfig()
	if verb == GoalClear {
		return s.clearGoal(ctx)
	}
	s.mu.Lock()
	msg, kick, steer, err := s.goalActionLocked(verb, rest, goal.Policy{Model: model, Effort: effort}, cfg.GoalBudget)
	s.mu.Unlock()
	if verb == GoalStatus && err == nil {
		return msg, nil
	}
	if err != nil {
		var ae *Error
		if errors.As(err, &ae) {
			return "", err
		}
		return "", errorf(CodeInvalidParams, "%v", err)
	}
	if err := s.saveGoal(ctx); err != nil {
		return "", err
	}
	s.emitGoal()
	if steer != nil {
		s.enqueue(*steer)
	} else if kick {
		s.kick()
	}
	return msg, nil
}

// goalActionLocked applies one Goal action other than clear to the current
// Goal ([goal.Act]) and carries out what it says for the session's own
// state (the held kickoff, the budget notes, a steering turn). Caller
// holds s.mu. policy carries the session's model and effort for a new
// Goal; budget is the default budget of a new Goal.
func (s *Session) goalActionLocked(verb, rest string, policy goal.Policy, budget int64) (msg string, kick bool, steer *turnReq, err error) {
	policy.Mode = s.row.Mode
	a, err := goal.Act(s.gl.g, verb, rest, goal.ActContext{InPlan: s.row.Plan, Policy: policy, Budget: budget, Now: time.Now()})
	switch {
	case errors.Is(err, goal.ErrUnfinished):
		return "", false, nil, &Error{Code: CodeGoalUnfinished, Message: err.Error() + "; " + goalUnfinishedHint}
	case err != nil:
		return "", false, nil, errorf(CodeInvalidParams, "%v", err)
	}
	switch {
	case a.Goal != s.gl.g:
		s.gl = goalState{g: a.Goal, kickoff: a.Kickoff}
	case a.KickoffEdited && s.gl.kickoff != "":
		s.gl.kickoff = a.Kickoff
	}
	if a.BudgetChanged {
		s.gl.notes = nil // they describe the old budget
	}
	if g := a.Goal; a.Steer != "" {
		steer = &turnReq{text: a.Steer, display: a.Steer, policy: goalPolicy(g), goal: goal.Turn{ID: g.ID, Objective: g.Objective}}
	}
	return a.Message, a.Schedule, steer, nil
}

// clearGoal marks the current Goal cleared, durably, and forgets it. The
// locks are held across the write, so a Goal started meanwhile is never the
// one forgotten and no save of the old Goal lands after it.
func (s *Session) clearGoal(ctx context.Context) (string, error) {
	s.goalMu.Lock()
	defer s.goalMu.Unlock()
	s.mu.Lock()
	g := s.gl.g
	if g == nil {
		s.mu.Unlock()
		return "", errorf(CodeInvalidParams, "there is no Goal; start one with /goal OBJECTIVE")
	}
	data, _ := json.Marshal(g)
	err := s.m.st.PutGoal(ctx, store.GoalRow{ID: g.ID, SessionID: s.id, Data: string(data), Cleared: true})
	if err == nil {
		s.gl = goalState{}
	}
	s.mu.Unlock()
	if err != nil {
		return "", err
	}
	s.emitGoal()
	return "Goal cleared.", nil
}

// goalTools are offered while a Goal is active: update_goal is the model's
// only way to end it.
func (s *Session) goalTools() []*agent.Tool {
	s.mu.Lock()
	active := s.gl.g != nil && s.gl.g.Status == goal.Active
	s.mu.Unlock()
	if !active {
		return nil
	}
	return []*agent.Tool{{
		Spec: agent.ToolSpec{Name: "update_goal", Description: "End the active Goal: status complete, or blocked with a summary of what blocks it.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"status":{"type":"string","enum":["complete","blocked"]},"summary":{"type":"string"}},"required":["status"]}`)},
		Meta: agent.Meta{SessionOnly: true},
		Run: func(ctx context.Context, env *agent.Env, args json.RawMessage) (string, error) {
			var a struct{ Status, Summary string }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", fmt.Errorf("update_goal: invalid arguments: %w", err)
			}
			s.mu.Lock()
			g := s.gl.g
			if g == nil {
				s.mu.Unlock()
				return "", fmt.Errorf("there is no active Goal")
			}
			// The end is settled with this turn's accounting, in one save
			// and one event, when the turn ends.
			err := g.RequestEnd(a.Status, a.Summary)
			s.mu.Unlock()
			if err != nil {
				return "", err
			}
			if err := s.saveGoal(ctx); err != nil {
				return "", err
			}
			return "Recorded: the Goal becomes " + strings.TrimSpace(a.Status) + " when this turn ends; finish your reply without further tool calls.", nil
		},
	}}
}

// StartGoal is the Goal step of the handoff: [handoff.StartGoal] over
// this session.
func (e *handoffEnv) StartGoal(ctx context.Context, rec *handoff.Record) error {
	err := handoff.StartGoal(ctx, e, e, rec)
	if errors.Is(err, handoff.ErrGoalConflict) {
		return &Error{Code: CodeRetryConflict, Message: strings.TrimPrefix(err.Error(), handoff.ErrGoalConflict.Error()+": ")}
	}
	return err
}

// UpdateGoal: see [handoff.GoalPort]. The commit is store.CommitGoalStart.
func (e *handoffEnv) UpdateGoal(ctx context.Context, decide func(*goal.Goal) (*goal.Goal, string, error)) error {
	s := e.s
	s.mu.Lock()
	// What changes in memory is undone if the commit fails: a Goal that is
	// not stored must not run.
	prev := s.gl
	var prevGoal goal.Goal
	if prev.g != nil {
		prevGoal = *prev.g
	}
	undo := func() {
		s.gl = prev
		if prev.g != nil {
			*prev.g = prevGoal
		}
	}
	g, kickoff, err := decide(s.gl.g)
	if err != nil || g == nil {
		undo()
		s.mu.Unlock()
		return err
	}
	if g != s.gl.g {
		s.gl = goalState{g: g, kickoff: kickoff}
	}
	s.mu.Unlock()
	row, _ := s.goalRow()
	if err := s.m.st.CommitGoalStart(ctx, row); err != nil {
		s.mu.Lock()
		undo()
		s.mu.Unlock()
		return err
	}
	s.emitGoal()
	return nil
}
