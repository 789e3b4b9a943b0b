package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
)

// CodeRetryConflict reports a different unfinished Goal found by a retry.
const CodeRetryConflict = "retry_conflict"

func (s *Session) loadGoal(ctx context.Context) error {
	row, err := s.m.st.CurrentGoal(ctx, s.id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	st, changed, err := goal.Load(row.Data, row.Kickoff, s.restarted)
	if err != nil {
		s.m.log.Warn("corrupt goal record; ignored", "session", s.id, "goal", row.ID, "err", err)
		return nil
	}
	if s.gl = st; changed {
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
	r, ok := s.gl.Record(time.Now())
	s.mu.Unlock()
	if !ok {
		return store.GoalRow{}, false
	}
	return store.GoalRow{ID: r.ID, SessionID: s.id, Data: r.Data, Kickoff: r.Kickoff}, true
}

func (s *Session) emitGoal() {
	s.mu.Lock()
	g, pending := s.gl.View()
	s.mu.Unlock()
	data := event.Goal{Summary: g.Summary()}
	if g != nil {
		data = event.Goal{Goal: g, Summary: g.Summary(), KickoffPending: &pending}
	}
	s.emit(data)
}

// goalUndoLocked returns what puts the Goal state back as it is now,
// for a change in memory whose commit fails: the state and the Goal's
// own fields (a change may edit the Goal in place). Caller holds s.mu,
// and holds it again when calling the result.
func (s *Session) goalUndoLocked() (undo func()) {
	prev := s.gl
	var prevGoal goal.Goal
	if prev.Goal != nil {
		prevGoal = *prev.Goal
	}
	return func() {
		s.gl = prev
		if prev.Goal != nil {
			*prev.Goal = prevGoal
		}
	}
}

// goalChanged stores and announces the Goal after a pause no caller
// waits on (a budget run out); a failed save is logged and told as an
// error event.
func (s *Session) goalChanged() {
	if err := s.saveGoal(context.Background()); err != nil {
		// What changed is a pause (the safe side, kept in memory; a
		// restart loads an active Goal paused too): the person is told
		// it is not stored.
		s.m.log.Error("save goal", "session", s.id, "err", err)
		s.emit(event.Error{Message: "The Goal's pause could not be saved: " + err.Error()})
	}
	s.emitGoal()
}

// Goal returns a copy of the session's Goal (nil if none).
func (s *Session) Goal() *goal.Goal {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, _ := s.gl.View()
	return g
}

// planRefMatches checks the Goal's accepted plan ([handoff.ParsePlanRef])
// still has its hash ("": a Goal without a plan always matches).
func (s *Session) planRefMatches(ref string) bool {
	a, ok := handoff.ParsePlanRef(ref)
	if !ok {
		return ref == ""
	}
	_, err := s.readArtifact(a.Path, a.Hash)
	return err == nil
}

// goalPolicy is the implementation policy of Goal turns.
func goalPolicy(g *goal.Goal) *handoff.Policy {
	return &handoff.Policy{Model: g.Policy.Model, Effort: g.Policy.Effort, Mode: g.Policy.Mode}
}

// goalTurnLocked builds the Goal turn [goal.Decide] chose ([goal.State.Next]).
// Caller holds s.mu.
func (s *Session) goalTurnLocked(kickoff bool) turnReq {
	t, text, display := s.gl.Next(kickoff)
	if display == "" {
		display = handoff.KickoffDisplay(true)
	}
	req := turnReq{text: text, display: display, policy: goalPolicy(s.gl.Goal), goal: t}
	if kickoff {
		// The kickoff is marked sent with its prompt: never sent twice.
		req.dispatch, req.dispatched = s.goalKickoffDispatch(t.ID)
	}
	return req
}

// admitGoalTurn binds a turn to the active Goal or drops a stale one
// ([goal.State.Admit]); a Goal turn takes the Goal's policy and the budget
// notes not yet delivered.
func (s *Session) admitGoalTurn(req *turnReq) (drop string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := req.goal.Bound()
	t, suffix, drop := s.gl.Admit(req.goal, req.policy == nil)
	if drop != "" {
		return drop
	}
	if req.goal = t; t.Bound() && !was {
		req.policy = goalPolicy(s.gl.Goal) // a person's follow-up while the Goal is active
	}
	req.text += suffix
	return ""
}

// settleGoalTurn books a Goal turn at settlement ([goal.State.Book]) and
// carries out what it says; retry asks for the same turn again.
func (s *Session) settleGoalTurn(ctx context.Context, req turnReq, usage agent.Usage, wall time.Duration, err error) (retry bool) {
	s.mu.Lock()
	b, ok := s.gl.Book(req.goal, goal.TurnUsage{InputTokens: int64(usage.InputTokens), OutputTokens: int64(usage.OutputTokens), Wall: wall},
		err, errors.Is(err, agent.ErrTransient))
	s.mu.Unlock()
	if !ok {
		return false
	}
	if err := s.saveGoal(context.WithoutCancel(ctx)); err != nil {
		// The booking is not stored: the Goal does not go on under an
		// account the store does not hold. It stops here, paused (the
		// safe side: a restart loads an active Goal paused too), and the
		// person is told.
		s.m.log.Error("save goal", "session", s.id, "err", err)
		s.mu.Lock()
		paused := s.gl.Active()
		if paused {
			s.gl.Goal.Pause("its progress could not be saved: " + err.Error())
		}
		s.mu.Unlock()
		// Only a Goal this pauses is told paused: one the turn ended
		// (update_goal, its budget) is told as it is, unsaved.
		msg := "The Goal's progress could not be saved, so the Goal is paused: "
		if !paused {
			msg = "The Goal's progress could not be saved (the Goal stays as this turn left it, unsaved): "
		}
		s.emit(event.Error{Message: msg + err.Error()})
		s.emitGoal()
		return false
	}
	s.emitGoal()
	if b.Notice != "" {
		s.emit(event.Notice{Message: b.Notice})
	}
	return b.Requeue
}

// GoalCommand performs a typed `/goal` command ([goal.ParseCommand]).
func (s *Session) GoalCommand(ctx context.Context, arg string) (string, error) {
	verb, rest := goal.ParseCommand(arg)
	return s.GoalAction(ctx, verb, rest)
}

// GoalAction performs one explicit Goal action (verb is one of package
// goal's verbs, [goal.VerbStart] and the rest; [goal.State.Act]); arg is
// the objective (start, edit), the steering (resume) or the budget ("N" or
// "none"). Each action reads and changes the Goal in one critical section,
// with the posture it depends on (Plan refuses a start; a new Goal takes
// the permission mode), so it never mutates a Goal that was cleared or
// replaced after it was looked up.
func (s *Session) GoalAction(ctx context.Context, verb, arg string) (string, error) {
	rest := strings.TrimSpace(s.m.redact.String(arg)) // an objective is stored and shown to every tier
	if verb == goal.VerbClear {
		return s.clearGoal(ctx)
	}
	// Read before taking s.mu, which the action holds throughout, its
	// commit included: no turn is chosen for a Goal (or a Goal state)
	// the store does not hold. A commit that fails puts the state back
	// as it was and changes nothing (goalMu before mu, as saveGoal).
	cfg := s.m.modelConfig()
	s.goalMu.Lock()
	s.mu.Lock()
	undo := s.goalUndoLocked()
	a, err := s.gl.Act(verb, rest, goal.ActContext{InPlan: s.row.Plan, Budget: cfg.GoalBudget, Now: time.Now(),
		Policy: goal.Policy{Model: cfg.Default.Model, Effort: cfg.Default.Effort, Mode: s.row.Mode}})
	var commitErr error
	if err == nil && verb != goal.VerbStatus {
		if r, ok := s.gl.Record(time.Now()); ok {
			commitErr = s.m.st.PutGoal(ctx, store.GoalRow{ID: r.ID, SessionID: s.id, Data: r.Data, Kickoff: r.Kickoff})
		}
		if commitErr != nil {
			undo()
		}
	}
	s.mu.Unlock()
	s.goalMu.Unlock()
	switch {
	case errors.Is(err, goal.ErrUnfinished):
		return "", &Error{Code: CodeGoalUnfinished, Message: err.Error() + "; " + goal.UnfinishedHint}
	case err != nil:
		return "", errorf(CodeInvalidParams, "%v", err)
	case verb == goal.VerbStatus:
		return a.Message, nil
	case commitErr != nil:
		return "", commitErr
	}
	s.emitGoal()
	if g := a.Goal; a.Steer != "" {
		s.enqueue(turnReq{text: a.Steer, display: a.Steer, policy: goalPolicy(g), goal: goal.Turn{ID: g.ID, Objective: g.Objective}})
	} else if a.Schedule {
		s.kick()
	}
	return a.Message, nil
}

// clearGoal marks the current Goal cleared, durably, and forgets it. The
// locks are held across the write, so a Goal started meanwhile is never the
// one forgotten and no save of the old Goal lands after it.
func (s *Session) clearGoal(ctx context.Context) (string, error) {
	s.goalMu.Lock()
	defer s.goalMu.Unlock()
	s.mu.Lock()
	r, err := s.gl.Cleared()
	if err != nil {
		s.mu.Unlock()
		return "", errorf(CodeInvalidParams, "%v", err)
	}
	err = s.m.st.PutGoal(ctx, store.GoalRow{ID: r.ID, SessionID: s.id, Data: r.Data, Cleared: true})
	if err == nil {
		s.gl = goal.State{}
	}
	s.mu.Unlock()
	if err != nil {
		return "", err
	}
	s.emitGoal()
	return "Goal cleared.", nil
}

// goalTools are offered while a Goal is active: update_goal
// ([goal.UpdateTool]) is the model's only way to end it.
func (s *Session) goalTools() []*agent.Tool {
	s.mu.Lock()
	active := s.gl.Active()
	s.mu.Unlock()
	if !active {
		return nil
	}
	return []*agent.Tool{{
		Spec: agent.ToolSpec(goal.UpdateTool),
		Meta: agent.Meta{SessionOnly: true},
		Run: func(ctx context.Context, env *agent.Env, args json.RawMessage) (string, error) {
			s.mu.Lock()
			reply, err := s.gl.RequestEnd(args)
			s.mu.Unlock()
			if err != nil {
				return "", err
			}
			if err := s.saveGoal(ctx); err != nil {
				return "", err
			}
			return reply, nil
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
	undo := s.goalUndoLocked()
	g, kickoff, err := decide(s.gl.Goal)
	if err != nil || g == nil {
		undo()
		s.mu.Unlock()
		return err
	}
	if g != s.gl.Goal {
		s.gl = goal.State{Goal: g, Kickoff: kickoff}
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
