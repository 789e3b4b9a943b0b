package goalrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
)

// Store is the Goal's data access: internal/store's named operations.
type Store interface {
	// CurrentGoal is the session's most recent Goal not cleared
	// ([store.ErrNotFound]: none).
	CurrentGoal(ctx context.Context, sessionID string) (store.GoalRow, error)
	// PutGoal commits a Goal row (OpGoal).
	PutGoal(ctx context.Context, row store.GoalRow) error
	// CommitGoalStart commits the Goal a plan handoff starts, its retry
	// record cleared with it (OpGoal).
	CommitGoalStart(ctx context.Context, row store.GoalRow) error
}

// Host is what the Runner needs of the session aggregate.
type Host interface {
	// PostureLocked is the session's Plan posture and permission mode;
	// called with [Config.Lock] held.
	PostureLocked() (plan bool, mode string)
	// Emit appends an event to the session's log (never with the lock held).
	Emit(ev event.Data)
	// ReadArtifact reads a work:// artifact, failing unless it still has
	// its hash.
	ReadArtifact(path, hash string) (string, error)
	// Enqueue queues a Goal turn (the person's steering) and starts it if
	// the session is free; Kick starts what is ready. Never with the lock.
	Enqueue(t Turn)
	Kick()
}

// Config configures a [Runner].
type Config struct {
	Session string
	Store   Store
	Host    Host
	// Lock is the session aggregate's lock; it guards the Runner's State.
	Lock   sync.Locker
	Logger *slog.Logger
	// Now is the clock (nil: time.Now); Failpoint the handoff's failpoint
	// hook (nil: [handoff.Failpoint]).
	Now       func() time.Time
	Failpoint func(name string)
}

// Turn is a Goal turn for the session to run (the session's own turn
// request carries these fields).
type Turn struct {
	Text, Display string
	Policy        *handoff.Policy
	Goal          goal.Turn
	// Dispatch, for a kickoff, adds the Goal row with its kickoff marked
	// sent to the transaction that stores the prompt; Dispatched is called
	// once that committed.
	Dispatch   func(*store.TurnStep)
	Dispatched func()
}

// Defaults is what a new Goal takes from the session's model policy.
type Defaults struct {
	Budget        int64
	Model, Effort string
}

// Refusal codes: what a Goal action or the posture refuses is a
// [*handoff.Refusal] with one of these codes, nothing changed.
const (
	// CodeUnfinished: an unfinished Goal refuses a second Goal and Plan.
	CodeUnfinished = handoff.CodeGoalUnfinished
	// CodeInvalid: package goal refused the action (no Goal, no
	// objective, Plan on, a bad budget, a status that does not allow it).
	CodeInvalid = "invalid_params"
	// CodeRetryConflict: a plan handoff's retry found a different
	// unfinished Goal ([handoff.ErrGoalConflict]).
	CodeRetryConflict = "retry_conflict"
)

// refusal is goal's refusal err as a [*handoff.Refusal].
func refusal(err error) error {
	if errors.Is(err, goal.ErrUnfinished) {
		return &handoff.Refusal{Code: CodeUnfinished, Message: err.Error() + "; " + goal.UnfinishedHint}
	}
	return &handoff.Refusal{Code: CodeInvalid, Message: err.Error()}
}

// Runner is a session's Goal at run time. Safe for concurrent use (see
// the package doc for its locks).
type Runner struct {
	cfg Config
	// writeMu orders Goal writes (a snapshot until its commit); taken
	// before cfg.Lock.
	writeMu sync.Mutex
	st      goal.State // guarded by cfg.Lock
}

// Load is the Runner of a session with its current Goal loaded. One that
// was active when an earlier process stopped (restarted) comes back
// paused, and is stored so; a record that does not decode is logged and
// ignored.
func Load(ctx context.Context, cfg Config, restarted bool) (*Runner, error) {
	r := New(cfg)
	return r, r.load(ctx, restarted)
}

// New is a Runner with no Goal.
func New(cfg Config) *Runner {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Failpoint == nil {
		cfg.Failpoint = handoff.Failpoint
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Runner{cfg: cfg}
}

func (r *Runner) row(rec goal.Record) store.GoalRow {
	return store.GoalRow{ID: rec.ID, SessionID: r.cfg.Session, Data: rec.Data, Kickoff: rec.Kickoff}
}

func (r *Runner) load(ctx context.Context, restarted bool) error {
	row, err := r.cfg.Store.CurrentGoal(ctx, r.cfg.Session)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	st, changed, err := goal.Load(row.Data, row.Kickoff, restarted)
	if err != nil {
		r.cfg.Logger.Warn("corrupt goal record; ignored", "session", r.cfg.Session, "goal", row.ID, "err", err)
		return nil
	}
	r.cfg.Lock.Lock()
	r.st = st
	r.cfg.Lock.Unlock()
	if changed {
		return r.Save(ctx)
	}
	return nil
}

// StoredSummary is the one-line summary of session's stored Goal as
// loading it after a restart would show it (an active Goal paused); ""
// if there is none or it cannot be read.
func StoredSummary(ctx context.Context, st Store, session string) string {
	row, err := st.CurrentGoal(ctx, session)
	if err != nil {
		return ""
	}
	gs, _, err := goal.Load(row.Data, "", true)
	if err != nil {
		return ""
	}
	return gs.Goal.Summary()
}

// Save commits the Goal as it is now (nothing if none). The write lock is
// held from the snapshot to the commit, so no other Goal write slips in
// between and is overwritten by the stale snapshot.
func (r *Runner) Save(ctx context.Context) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.cfg.Lock.Lock()
	rec, ok := r.st.Record(r.cfg.Now())
	r.cfg.Lock.Unlock()
	if !ok {
		return nil
	}
	return r.cfg.Store.PutGoal(ctx, r.row(rec))
}

// Announce emits the goal event: the Goal as it is now.
func (r *Runner) Announce() {
	r.cfg.Lock.Lock()
	g, pending := r.st.View()
	r.cfg.Lock.Unlock()
	data := event.Goal{Summary: g.Summary()}
	if g != nil {
		data = event.Goal{Goal: g, Summary: g.Summary(), KickoffPending: &pending}
	}
	r.cfg.Host.Emit(data)
}

// undoLocked returns what puts the State back as it is now, for a change
// in memory whose commit fails: the State and the Goal's own fields (a
// change may edit the Goal in place). Caller holds the lock, and holds it
// again when calling the result.
func (r *Runner) undoLocked() (undo func()) {
	prev := r.st
	var prevGoal goal.Goal
	if prev.Goal != nil {
		prevGoal = *prev.Goal
	}
	return func() {
		r.st = prev
		if prev.Goal != nil {
			*prev.Goal = prevGoal
		}
	}
}

// changed stores and announces the Goal after a pause no caller waits on
// (a budget run out, a plan gone stale); a failed commit is logged and
// told as an error event, the pause kept (the safe side).
func (r *Runner) changed() {
	if err := r.Save(context.Background()); err != nil {
		// What changed is a pause (the safe side, kept in memory; a
		// restart loads an active Goal paused too): the person is told
		// it is not stored.
		r.cfg.Logger.Error("save goal", "session", r.cfg.Session, "err", err)
		r.cfg.Host.Emit(event.Error{Message: "The Goal's pause could not be saved: " + err.Error()})
	}
	r.Announce()
}

// Goal returns a copy of the Goal (nil if none).
func (r *Runner) Goal() *goal.Goal {
	r.cfg.Lock.Lock()
	defer r.cfg.Lock.Unlock()
	g, _ := r.st.View()
	return g
}

// GoalLocked is the Goal itself (nil: none), to read under the lock;
// change it only through the Runner.
func (r *Runner) GoalLocked() *goal.Goal { return r.st.Goal }

// SummaryLocked is the Goal's one-line summary ("" for none).
func (r *Runner) SummaryLocked() string {
	if r.st.Goal == nil {
		return ""
	}
	return r.st.Goal.Summary()
}

// UnfinishedLocked reports an unfinished Goal ([goal.State.Unfinished]).
func (r *Runner) UnfinishedLocked() bool { return r.st.Unfinished() }

// Unfinished is [Runner.UnfinishedLocked] with the Goal's summary, taking
// the lock.
func (r *Runner) Unfinished() (unfinished bool, summary string) {
	r.cfg.Lock.Lock()
	defer r.cfg.Lock.Unlock()
	return r.st.Unfinished(), r.st.Goal.Summary()
}

// PlanRefusalLocked refuses entering Plan while the Goal is unfinished
// ([CodeUnfinished]); nil allows it.
func (r *Runner) PlanRefusalLocked() error {
	if !r.st.Unfinished() {
		return nil
	}
	return &handoff.Refusal{Code: CodeUnfinished, Message: "cannot enter Plan while a Goal is unfinished (" + r.st.Goal.Summary() + "); " + goal.UnfinishedHint}
}

// RecoveryLocked is what of the Goal the one recovery path decides on
// ([handoff.RecoveryState]): a Goal a restart paused, a kickoff not sent.
func (r *Runner) RecoveryLocked() (pausedByRestart, kickoffPending bool) {
	g := r.st.Goal
	return g != nil && g.Status == goal.Paused && g.Reason == goal.ReasonRestart, r.st.Kickoff != ""
}

// PlanComplete reports a Goal that implemented an accepted plan and is
// complete: the implementation has ended.
func (r *Runner) PlanComplete() bool {
	r.cfg.Lock.Lock()
	defer r.cfg.Lock.Unlock()
	g := r.st.Goal
	return g != nil && g.Status == goal.Complete && g.PlanRef != ""
}

// SituationLocked is sit (what the session knows: busy, the card, the
// queue) with what the Goal knows for [goal.Decide]: its kickoff pending
// and, for an active Goal that could run now, whether its plan still
// has its hash.
func (r *Runner) SituationLocked(sit goal.Situation) goal.Situation {
	sit.KickoffPending = r.st.Kickoff != ""
	if r.st.Active() && !sit.Busy && !sit.InteractionPending {
		sit.PlanRefMatches = r.planRefMatches(r.st.Goal.PlanRef)
	}
	return sit
}

// pauseLocked pauses an active Goal in memory ([goal.Goal.Pause]).
func (r *Runner) pauseLocked(reason string) {
	if r.st.Goal != nil {
		r.st.Goal.Pause(reason)
	}
}

// DecidedPauseLocked pauses an active Goal as [goal.Decide] chose (its
// budget run out, its plan gone stale); it is stored and announced
// ([Runner.changed]) on its own once the lock is let go.
func (r *Runner) DecidedPauseLocked(reason string) {
	r.pauseLocked(reason)
	go r.changed()
}

// Pause pauses an active Goal, stores and announces it; a commit that
// fails is returned with the pause kept in memory (the safe side; the
// caller reports it).
func (r *Runner) Pause(ctx context.Context, reason string) error {
	r.cfg.Lock.Lock()
	r.pauseLocked(reason)
	r.cfg.Lock.Unlock()
	err := r.Save(ctx)
	r.Announce()
	return err
}

// planRefMatches checks the Goal's accepted plan ([handoff.ParsePlanRef])
// still has its hash ("": a Goal without a plan always matches).
func (r *Runner) planRefMatches(ref string) bool {
	a, ok := handoff.ParsePlanRef(ref)
	if !ok {
		return ref == ""
	}
	_, err := r.cfg.Host.ReadArtifact(a.Path, a.Hash)
	return err == nil
}

// policy is the implementation policy of Goal turns.
func policy(g *goal.Goal) *handoff.Policy {
	return &handoff.Policy{Model: g.Policy.Model, Effort: g.Policy.Effort, Mode: g.Policy.Mode}
}

// TurnLocked builds the Goal turn [goal.Decide] chose ([goal.State.Next]):
// the kickoff (kickoff true), marked sent with its prompt, or a
// continuation. The Goal must be there.
func (r *Runner) TurnLocked(kickoff bool) Turn {
	t, text, display := r.st.Next(kickoff)
	if display == "" {
		display = handoff.KickoffDisplay(true)
	}
	req := Turn{Text: text, Display: display, Policy: policy(r.st.Goal), Goal: t}
	if kickoff {
		req.Dispatch, req.Dispatched = r.kickoffDispatch(t.ID)
	}
	return req
}

// kickoffDispatch returns the commit that marks Goal id's kickoff as sent
// (its pending prompt cleared) in the transaction that stores the prompt,
// and the in-memory counterpart run once that committed. After it the
// kickoff is never sent again: a failure or crash continues the Goal.
func (r *Runner) kickoffDispatch(id string) (dispatch func(*store.TurnStep), dispatched func()) {
	dispatch = func(st *store.TurnStep) {
		r.cfg.Lock.Lock()
		defer r.cfg.Lock.Unlock()
		if rec, ok := r.st.Dispatched(id, r.cfg.Now()); ok {
			st.Goal = &store.GoalRow{ID: rec.ID, SessionID: r.cfg.Session, Data: rec.Data}
		}
	}
	dispatched = func() {
		r.cfg.Lock.Lock()
		r.st.KickoffSent(id)
		r.cfg.Lock.Unlock()
	}
	return dispatch, dispatched
}

// Admit binds a turn about to be sent (its binding t, its policy pol,
// its prompt text) to the active Goal, or drops a stale Goal turn
// ([goal.State.Admit]; drop says why, and nothing changes). A turn it
// newly binds (a person's prompt: no policy of its own) takes the Goal's
// policy; a Goal turn's prompt carries the budget notes not yet
// delivered.
func (r *Runner) Admit(t *goal.Turn, pol **handoff.Policy, text *string) (drop string) {
	r.cfg.Lock.Lock()
	defer r.cfg.Lock.Unlock()
	was := t.Bound()
	bound, suffix, drop := r.st.Admit(*t, *pol == nil)
	if drop != "" {
		return drop
	}
	if *t = bound; bound.Bound() && !was {
		*pol = policy(r.st.Goal)
	}
	*text += suffix
	return ""
}

// Book books a Goal turn at settlement ([goal.State.Book]), stores and
// announces it; retry asks for the same turn again. A booking whose
// commit fails stops the Goal (see the package doc).
func (r *Runner) Book(ctx context.Context, t goal.Turn, usage agent.Usage, wall time.Duration, err error) (retry bool) {
	r.cfg.Lock.Lock()
	b, ok := r.st.Book(t, goal.TurnUsage{InputTokens: int64(usage.InputTokens), OutputTokens: int64(usage.OutputTokens), Wall: wall},
		err, errors.Is(err, agent.ErrTransient))
	r.cfg.Lock.Unlock()
	if !ok {
		return false
	}
	if err := r.Save(context.WithoutCancel(ctx)); err != nil {
		// The booking is not stored: the Goal does not go on under an
		// account the store does not hold. It stops here, paused (the
		// safe side: a restart loads an active Goal paused too), and the
		// person is told.
		r.cfg.Logger.Error("save goal", "session", r.cfg.Session, "err", err)
		r.cfg.Lock.Lock()
		paused := r.st.Active()
		r.pauseLocked("its progress could not be saved: " + err.Error())
		r.cfg.Lock.Unlock()
		// Only a Goal this pauses is told paused: one the turn ended
		// (update_goal, its budget) is told as it is, unsaved.
		msg := "The Goal's progress could not be saved, so the Goal is paused: "
		if !paused {
			msg = "The Goal's progress could not be saved (the Goal stays as this turn left it, unsaved): "
		}
		r.cfg.Host.Emit(event.Error{Message: msg + err.Error()})
		r.Announce()
		return false
	}
	r.Announce()
	if b.Notice != "" {
		r.cfg.Host.Emit(event.Notice{Message: b.Notice})
	}
	return b.Requeue
}

// Unsent is a turn of the Goal (its kickoff or a continuation) that
// ended with err before its prompt was stored — its commit failed (a full
// disk), or no model could take it: nothing was sent and nothing is
// booked, its kickoff stays pending. The Goal pauses (stored and
// announced as [Runner.DecidedPauseLocked]'s pause, a failed commit kept
// in memory and told), so the session never chooses the same unsendable
// turn again, in a loop; before, it did, as fast as the failures came.
// A turn cancelled (an interrupt, the process stopping), another turn
// bound to the Goal, or a Goal replaced or no longer active since is left
// alone. Whatever the turn, the budget notes it was handed go back to the
// Goal ([goal.State.Unsent]): the next Goal turn carries them.
func (r *Runner) Unsent(ctx context.Context, t goal.Turn, err error) {
	r.cfg.Lock.Lock()
	r.st.Unsent(t) // its budget notes wait for the next Goal turn
	r.cfg.Lock.Unlock()
	if err == nil || errors.Is(err, context.Canceled) || ctx.Err() != nil || !(t.Kickoff || t.Continuation) {
		return
	}
	r.cfg.Lock.Lock()
	g := r.st.Goal
	active := g != nil && g.ID == t.ID && g.Status == goal.Active
	if active {
		g.Pause("its turn could not be sent: " + err.Error())
	}
	r.cfg.Lock.Unlock()
	if active {
		r.changed()
	}
}

// Act performs one explicit Goal action (verb is one of package goal's
// verbs; [goal.State.Act], clear [Runner.Clear]); rest is the objective
// (start, edit), the steering (resume) or the budget. The action reads
// and changes the Goal and commits it in one critical section under the
// aggregate's lock, with the posture it depends on (Plan refuses a start;
// a new Goal takes the permission mode), so it never mutates a Goal that
// was cleared or replaced after it was looked up, and no turn is chosen
// for a state the store does not hold. A refusal is a [*handoff.Refusal]
// ([CodeUnfinished], [CodeInvalid]); a commit that fails puts the State
// back and returns the commit's error.
func (r *Runner) Act(ctx context.Context, verb, rest string, d Defaults) (string, error) {
	if verb == goal.VerbClear {
		return r.Clear(ctx)
	}
	r.writeMu.Lock()
	r.cfg.Lock.Lock()
	undo := r.undoLocked()
	plan, mode := r.cfg.Host.PostureLocked()
	now := r.cfg.Now()
	a, err := r.st.Act(verb, rest, goal.ActContext{InPlan: plan, Budget: d.Budget, Now: now,
		Policy: goal.Policy{Model: d.Model, Effort: d.Effort, Mode: mode}})
	var commitErr error
	if err == nil && verb != goal.VerbStatus {
		if rec, ok := r.st.Record(now); ok {
			commitErr = r.cfg.Store.PutGoal(ctx, r.row(rec))
		}
		if commitErr != nil {
			undo()
		}
	}
	r.cfg.Lock.Unlock()
	r.writeMu.Unlock()
	switch {
	case err != nil:
		return "", refusal(err)
	case verb == goal.VerbStatus:
		return a.Message, nil
	case commitErr != nil:
		return "", commitErr
	}
	r.Announce()
	if g := a.Goal; a.Steer != "" {
		r.cfg.Host.Enqueue(Turn{Text: a.Steer, Display: a.Steer, Policy: policy(g), Goal: goal.Turn{ID: g.ID, Objective: g.Objective}})
	} else if a.Schedule {
		r.cfg.Host.Kick()
	}
	return a.Message, nil
}

// Clear marks the current Goal cleared, durably, and forgets it. The
// locks are held across the commit, so a Goal started meanwhile is never
// the one forgotten and no save of the old Goal lands after it. No Goal
// is a [CodeInvalid] refusal.
func (r *Runner) Clear(ctx context.Context) (string, error) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.cfg.Lock.Lock()
	rec, err := r.st.Cleared()
	if err != nil {
		r.cfg.Lock.Unlock()
		return "", refusal(err)
	}
	err = r.cfg.Store.PutGoal(ctx, store.GoalRow{ID: rec.ID, SessionID: r.cfg.Session, Data: rec.Data, Cleared: true})
	if err == nil {
		r.st = goal.State{}
	}
	r.cfg.Lock.Unlock()
	if err != nil {
		return "", err
	}
	r.Announce()
	return "Goal cleared.", nil
}

// Tools are offered while a Goal is active: update_goal ([goal.UpdateTool])
// is the model's only way to end it. Its end is recorded only once
// stored; a failed commit puts the Goal back and tells the model the end
// was not recorded.
func (r *Runner) Tools() []*agent.Tool {
	r.cfg.Lock.Lock()
	active := r.st.Active()
	r.cfg.Lock.Unlock()
	if !active {
		return nil
	}
	return []*agent.Tool{{
		Spec: agent.ToolSpec(goal.UpdateTool),
		Meta: agent.Meta{SessionOnly: true},
		Run: func(ctx context.Context, env *agent.Env, args json.RawMessage) (string, error) {
			return r.requestEnd(ctx, args)
		},
	}}
}

// requestEnd records the model's end ([goal.State.RequestEnd]) and
// commits it under the locks, like a person's action: a failed commit
// puts the Goal back, so the turn's booking never settles an end the
// store does not hold, and the model is told the end was not recorded.
func (r *Runner) requestEnd(ctx context.Context, args json.RawMessage) (string, error) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.cfg.Lock.Lock()
	defer r.cfg.Lock.Unlock()
	undo := r.undoLocked()
	reply, err := r.st.RequestEnd(args)
	if err != nil {
		return "", err
	}
	rec, _ := r.st.Record(r.cfg.Now())
	if err := r.cfg.Store.PutGoal(ctx, r.row(rec)); err != nil {
		undo()
		return "", fmt.Errorf("the end was not recorded, so the Goal stays active (it could not be saved: %w)", err)
	}
	return reply, nil
}

// Start is the Goal step of a plan handoff: [handoff.StartGoal] over env
// and this Runner; a different unfinished Goal found by a retry is a
// [CodeRetryConflict] refusal.
func (r *Runner) Start(ctx context.Context, env handoff.Env, rec *handoff.Record) error {
	err := handoff.StartGoal(ctx, env, r, rec)
	if errors.Is(err, handoff.ErrGoalConflict) {
		return &handoff.Refusal{Code: CodeRetryConflict, Message: strings.TrimPrefix(err.Error(), handoff.ErrGoalConflict.Error()+": ")}
	}
	return err
}

// UpdateGoal is the Goal step of a plan handoff ([handoff.GoalPort]):
// decide runs on the current Goal under the aggregate's lock, and what it
// returns is committed (store.CommitGoalStart) before the lock is let go;
// a failed commit, or an error from decide, puts the State back. No Goal
// write interleaves.
func (r *Runner) UpdateGoal(ctx context.Context, decide func(*goal.Goal) (*goal.Goal, string, error)) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.cfg.Lock.Lock()
	// What changes in memory is undone if the commit fails: a Goal that is
	// not stored must not run.
	undo := r.undoLocked()
	g, kickoff, err := decide(r.st.Goal)
	if err == nil && g != nil {
		if g != r.st.Goal {
			r.st = goal.State{Goal: g, Kickoff: kickoff}
		}
		rec, _ := r.st.Record(r.cfg.Now())
		err = r.cfg.Store.CommitGoalStart(ctx, r.row(rec))
	}
	if err != nil || g == nil {
		undo()
	}
	r.cfg.Lock.Unlock()
	if err != nil || g == nil {
		return err
	}
	r.Announce()
	return nil
}

// Failpoint is the handoff's failpoint hook ([handoff.GoalPort]).
func (r *Runner) Failpoint(name string) { r.cfg.Failpoint(name) }
