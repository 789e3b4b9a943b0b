package goalrun

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
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
	// ReadArtifact checks a work:// artifact still has its hash.
	ReadArtifact(path, hash string) error
	// Enqueue queues a Goal turn (the person's steering) and starts it if
	// the session is free; Kick starts what is ready. Never with the lock.
	Enqueue(t Turn)
	Kick()
	// Failpoint is the handoff's failpoint hook ([handoff.Failpoint]).
	Failpoint(name string)
}

// Config configures a [Runner].
type Config struct {
	Session string
	Store   Store
	Host    Host
	// Lock is the session aggregate's lock; it guards the Runner's State.
	Lock   sync.Locker
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
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

// Refusal is a Goal action package goal refused: nothing changed.
type Refusal struct{ Err error }

func (r *Refusal) Error() string { return r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }

// Runner is a session's Goal at run time. Safe for concurrent use (see
// the package doc for its locks).
type Runner struct {
	cfg Config
	// writeMu orders Goal writes (a snapshot until its commit); taken
	// before cfg.Lock.
	writeMu sync.Mutex
	st      goal.State // guarded by cfg.Lock
}

// New is a Runner with no Goal; [Runner.Load] loads the stored one.
func New(cfg Config) *Runner {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Runner{cfg: cfg}
}

func (r *Runner) row(rec goal.Record) store.GoalRow {
	return store.GoalRow{ID: rec.ID, SessionID: r.cfg.Session, Data: rec.Data, Kickoff: rec.Kickoff}
}

// Load loads the session's current Goal. One that was active when an
// earlier process stopped (restarted) comes back paused, and is stored so;
// a record that does not decode is logged and ignored.
func (r *Runner) Load(ctx context.Context, restarted bool) error {
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

// StoredSummary is the one-line summary of a stored Goal row as loading
// it after a restart would show it (an active Goal paused); "" if it does
// not decode.
func StoredSummary(row store.GoalRow) string {
	st, _, err := goal.Load(row.Data, "", true)
	if err != nil {
		return ""
	}
	return st.Goal.Summary()
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

// Changed stores and announces the Goal after a pause no caller waits on
// (a budget run out, a plan gone stale); a failed commit is logged and
// told as an error event, the pause kept (the safe side).
func (r *Runner) Changed() {
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

// KickoffPendingLocked reports a kickoff not yet sent.
func (r *Runner) KickoffPendingLocked() bool { return r.st.Kickoff != "" }

// UnfinishedLocked reports an unfinished Goal ([goal.State.Unfinished]).
func (r *Runner) UnfinishedLocked() bool { return r.st.Unfinished() }

// PauseLocked pauses an active Goal in memory ([goal.Goal.Pause]); the
// caller stores it ([Runner.Save], [Runner.Changed]).
func (r *Runner) PauseLocked(reason string) {
	if r.st.Goal != nil {
		r.st.Goal.Pause(reason)
	}
}

// PlanRefMatches checks the Goal's accepted plan ([handoff.ParsePlanRef])
// still has its hash ("": a Goal without a plan always matches).
func (r *Runner) PlanRefMatches(ref string) bool {
	a, ok := handoff.ParsePlanRef(ref)
	if !ok {
		return ref == ""
	}
	return r.cfg.Host.ReadArtifact(a.Path, a.Hash) == nil
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

// Admit binds a turn about to be sent to the active Goal or drops a stale
// one ([goal.State.Admit]; drop says why). A turn it newly binds (a
// person's prompt, free: it brings no policy) takes the Goal's policy
// (pol non-nil); suffix carries the budget notes not yet delivered.
func (r *Runner) Admit(t goal.Turn, free bool) (bound goal.Turn, pol *handoff.Policy, suffix, drop string) {
	r.cfg.Lock.Lock()
	defer r.cfg.Lock.Unlock()
	was := t.Bound()
	bound, suffix, drop = r.st.Admit(t, free)
	if drop != "" {
		return t, nil, "", drop
	}
	if bound.Bound() && !was {
		pol = policy(r.st.Goal)
	}
	return bound, pol, suffix, ""
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
		r.PauseLocked("its progress could not be saved: " + err.Error())
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

// Act performs one explicit Goal action (verb is one of package goal's
// verbs; [goal.State.Act], clear [Runner.Clear]); rest is the objective
// (start, edit), the steering (resume) or the budget. The action reads
// and changes the Goal and commits it in one critical section under the
// aggregate's lock, with the posture it depends on (Plan refuses a start;
// a new Goal takes the permission mode), so it never mutates a Goal that
// was cleared or replaced after it was looked up, and no turn is chosen
// for a state the store does not hold. A refusal is a [*Refusal]; a
// commit that fails puts the State back and returns the commit's error.
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
		return "", &Refusal{Err: err}
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
// is a [*Refusal].
func (r *Runner) Clear(ctx context.Context) (string, error) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.cfg.Lock.Lock()
	rec, err := r.st.Cleared()
	if err != nil {
		r.cfg.Lock.Unlock()
		return "", &Refusal{Err: err}
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

func (r *Runner) requestEnd(ctx context.Context, args json.RawMessage) (string, error) {
	r.cfg.Lock.Lock()
	reply, err := r.st.RequestEnd(args)
	r.cfg.Lock.Unlock()
	if err != nil {
		return "", err
	}
	if err := r.Save(ctx); err != nil {
		return "", err
	}
	return reply, nil
}

// UpdateGoal is the Goal step of a plan handoff ([handoff.GoalPort]):
// decide runs on the current Goal under the aggregate's lock, and what it
// returns is committed (store.CommitGoalStart) before the lock is let go;
// a failed commit, or an error from decide, puts the State back. No Goal
// write interleaves.
func (r *Runner) UpdateGoal(ctx context.Context, decide func(*goal.Goal) (*goal.Goal, string, error)) error {
	r.cfg.Lock.Lock()
	// What changes in memory is undone if the commit fails: a Goal that is
	// not stored must not run.
	undo := r.undoLocked()
	g, kickoff, err := decide(r.st.Goal)
	if err != nil || g == nil {
		undo()
		r.cfg.Lock.Unlock()
		return err
	}
	if g != r.st.Goal {
		r.st = goal.State{Goal: g, Kickoff: kickoff}
	}
	rec, _ := r.st.Record(r.cfg.Now())
	r.cfg.Lock.Unlock()
	if err := r.cfg.Store.CommitGoalStart(ctx, r.row(rec)); err != nil {
		r.cfg.Lock.Lock()
		undo()
		r.cfg.Lock.Unlock()
		return err
	}
	r.Announce()
	return nil
}

// Failpoint is the handoff's failpoint hook ([handoff.GoalPort]).
func (r *Runner) Failpoint(name string) { r.cfg.Host.Failpoint(name) }
