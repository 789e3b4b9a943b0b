package tracking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/internal/trackbind"
	"planbridge/review"
)

// Stable error codes of the implementation's tracking (carried by a
// [handoff.Refusal], which the session turns into its own error).
const (
	// CodeNoReport: there is no accepted implementation to report on.
	CodeNoReport = "no_report"
	// CodeInvalidScope refuses a scope edit naming a path outside the workspace.
	CodeInvalidScope = "invalid_scope"
	// CodeBaseFailed refuses a start whose implementation base could not
	// be staged; the card (or the parked plan) stays as it was.
	CodeBaseFailed = "base_failed"
	// CodeInvalidParams: a path asked about is not one of the checkout.
	CodeInvalidParams = "invalid_params"
	// CodeNoProposal: a plan version asked about does not exist.
	CodeNoProposal = "no_proposal"
	// CodeNothingToRetry: there is no paused implementation to resume.
	CodeNothingToRetry = handoff.CodeNothingToRetry
)

// Host is the session as its tracking reaches it: the aggregate's state
// and the helpers several parts share. Each method takes the aggregate's
// lock itself where it reads guarded state, so none may be called with
// that lock held; none is called with the tracker's own (leaf) lock held.
type Host interface {
	// Emit appends an event to the session's log and publishes it.
	Emit(ev event.Data)
	// Roots are the session's workspace and work:// root, as they are now.
	Roots() agent.Roots
	// Tool finds a tool in the session's registry (nil: none by that name).
	Tool(name string) *agent.Tool
	// Ask is the person's asker for this session, nil while no client
	// could answer.
	Ask() agent.Asker
	// GoalComplete reports whether the session's Goal, bound to an
	// accepted plan, is complete (an implementation ended by its Goal).
	GoalComplete() bool
	// PauseGoal pauses the session's Goal, if any, for why, commits and
	// announces it; the error is its commit's. stopTurn cancels the turn
	// that was running when the Goal paused (in the same critical
	// section), if any.
	PauseGoal(ctx context.Context, why string) (stopTurn func(), err error)
}

// Store is the data access of the tracking: its row and the files the
// session's tools edited (one named store operation each).
type Store interface {
	GetTracking(ctx context.Context, session string) (store.Tracking, error)
	PutTracking(ctx context.Context, session string, t store.Tracking) error
	AddEditedFile(ctx context.Context, session, path string) error
}

// Config configures a [Tracking].
type Config struct {
	Session string // the session's id
	State   string // the state directory
	Work    string // the session's work:// root
	Store   Store
	Host    Host
	Log     *slog.Logger // nil: discard
}

// A Tracking is one session's implementation tracking: its
// [review.Tracker] (embedded: the runtime's own methods, as review
// documents them, except three it binds to the session: [Tracking.Load]
// reads the row from the [Store], [Tracking.Resume] codes its refusal,
// [Tracking.ReportIfEnded] asks the [Host] whether the Goal completed)
// with the tracker's port implemented over the session ([Host], [Store]),
// and what the session does with it — load it, start it at acceptance,
// pause it for the scope, resume it, stage and name its bases, hand it to
// a Worktree fork, record edited files, report — with the tracker's
// errors given their stable codes ([Coded]). Safe for concurrent use.
type Tracking struct {
	*review.Tracker
	cfg Config
}

// ReviewDir is the directory of a session's implementation reports under a
// state directory: the bases, tool logs and reports, outside work://, so
// the model cannot reach it ([review.ReadStoredReport] reads it offline).
func ReviewDir(stateDir, id string) string {
	return filepath.Join(stateDir, "sessions", id, "review")
}

// New is the tracking of one session, nothing tracked yet ([Tracking.Load]
// brings back its stored row).
func New(cfg Config) *Tracking {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	t := &Tracking{cfg: cfg}
	t.Tracker = review.NewTracker(review.Config{Session: cfg.Session, Dir: ReviewDir(cfg.State, cfg.Session), State: cfg.State,
		Work: cfg.Work, Plans: agent.PlansDir, Log: cfg.Log, Port: port{t}})
	return t
}

// Load brings back the stored row ([review.Tracker.Load]: when restarted,
// a running implementation comes back paused, committed at once).
func (t *Tracking) Load(ctx context.Context, restarted bool) error {
	row, err := t.cfg.Store.GetTracking(ctx, t.cfg.Session)
	if err != nil {
		return err
	}
	return t.Tracker.Load(ctx, review.Row(row), restarted)
}

// port is the tracking as its tracker's [review.Port].
type port struct{ t *Tracking }

func (p port) CommitTracking(ctx context.Context, row review.Row) error {
	return p.t.cfg.Store.PutTracking(ctx, p.t.cfg.Session, store.Tracking(row))
}
func (p port) TodosChanged(items []review.TodoItem) { p.t.cfg.Host.Emit(event.Todo{Items: items}) }
func (p port) StepsChanged(plan *review.TrackedPlan) {
	p.t.cfg.Host.Emit(event.Steps{TrackedPlan: plan})
}
func (p port) ScopeChanged(sc review.Scope)   { p.t.cfg.Host.Emit(event.Scope{Scope: sc}) }
func (p port) ReportBuilt(r review.Report)    { p.t.cfg.Host.Emit(event.Report{Report: r}) }
func (p port) Notice(msg string)              { p.t.cfg.Host.Emit(event.Notice{Message: msg}) }
func (p port) Unsaved(what string, err error) { p.t.unsaved(what, err) }
func (p port) Pause(reason string)            { p.t.PauseForScope(reason) }
func (p port) Workspace() string              { return p.t.cfg.Host.Roots().Workspace }
func (p port) ReadArtifact(rel, hash string) (string, error) {
	return handoff.ReadArtifact(p.t.cfg.Work, rel, hash)
}
func (p port) Asker() review.Asker { return trackbind.Asker(p.t.cfg.Host.Ask()) }

// unsaved tells the person, with an error event, that a record they
// depend on was not written.
func (t *Tracking) unsaved(what string, err error) {
	t.cfg.Log.Error("a record the person depends on was not saved", "session", t.cfg.Session, "what", what, "err", err)
	t.cfg.Host.Emit(event.Error{Message: fmt.Sprintf("Could not save %s: %v", what, err)})
}

// Binding is the tracker as the session's turns reach it (package trackbind).
func (t *Tracking) Binding() trackbind.Binding {
	return trackbind.Binding{Tracker: t.Tracker, Tool: t.cfg.Host.Tool, Roots: t.cfg.Host.Roots}
}

// Tools are the tracker's tools as session-only agent tools.
func (t *Tracking) Tools() []*agent.Tool { return trackbind.Tools(t.Tracker) }

// StartLocked installs, in memory only, the steps of an accepted plan as a
// running implementation ([review.Tracker.Begin]) for the commit that
// starts it to store ([review.Tracker.Row]). It is called with the
// aggregate's lock held, in the critical section that closes the card
// (so nobody sees the card closed and the plan not tracked), and never
// calls the Host; mine and prev are for [Tracking.UndoLocked] when that
// commit fails.
func (t *Tracking) StartLocked(a review.Accepted) (mine, prev *review.TrackedPlan) {
	return t.Begin(a)
}

// UndoLocked puts back what [Tracking.StartLocked] replaced, unless a
// concurrent start that won installed its own; under the aggregate's
// lock, with the card's undo.
func (t *Tracking) UndoLocked(mine, prev *review.TrackedPlan) { t.Undo(mine, prev) }

// PauseForScope stops an unattended turn that would write outside the
// scope: the implementation pauses, then its Goal (whoever sees the Goal
// paused sees the implementation paused), and the turn ends without
// writing. A pause whose commit fails still stops the turn and is kept
// in memory (the safe side), but is announced as what it is: an error,
// not a pause.
func (t *Tracking) PauseForScope(reason string) {
	ctx := context.Background()
	why := "outside the declared scope: " + reason
	err := t.SetStatus(ctx, review.ImplPaused, why)
	stop, gerr := t.cfg.Host.PauseGoal(ctx, why)
	if gerr != nil && err == nil {
		err = gerr // the Goal's pause is not stored: reported like the implementation's
	}
	if err != nil {
		t.cfg.Host.Emit(event.Error{Message: fmt.Sprintf("The implementation was stopped (%s), but its pause could not be saved: %v", reason, err)})
	} else {
		t.cfg.Host.Emit(event.Notice{Message: "Implementation paused: " + reason})
	}
	if stop != nil {
		stop()
	}
}

// Resume sets a paused implementation running again ([review.Tracker.Resume])
// and returns the prompt that continues it and its policy, for the
// session to queue. Nothing paused is [CodeNothingToRetry]; a commit that
// fails resumes nothing.
func (t *Tracking) Resume(ctx context.Context) (prompt string, policy handoff.Policy, err error) {
	prompt, policy, err = t.Tracker.Resume(ctx)
	if errors.Is(err, review.ErrNothingToResume) {
		return "", policy, &handoff.Refusal{Code: CodeNothingToRetry, Message: err.Error()}
	}
	if err != nil {
		return "", policy, fmt.Errorf("could not resume the implementation: %w", err) // its commit failed: nothing resumed
	}
	return prompt, policy, nil
}

// ReportIfEnded builds the report once when the implementation has ended:
// every step done, or its Goal complete ([review.Tracker.ReportIfEnded];
// a report that could not be stored is an error event).
func (t *Tracking) ReportIfEnded(ctx context.Context) {
	t.Tracker.ReportIfEnded(ctx, t.cfg.Host.GoalComplete())
}

// Coded gives the tracker's errors of a kind their stable code (a
// [handoff.Refusal]); others are returned as they are.
func Coded(err error) error {
	code := ""
	switch {
	case errors.Is(err, review.ErrNoReport):
		code = CodeNoReport
	case errors.Is(err, review.ErrBadPath):
		code = CodeInvalidParams
	case errors.Is(err, review.ErrNoVersion):
		code = CodeNoProposal
	default:
		return err
	}
	return &handoff.Refusal{Code: code, Message: err.Error()}
}

// CleanScope is the person's scope edit, cleaned ([review.CleanScope]); a
// path outside the workspace is [CodeInvalidScope].
func CleanScope(paths []string) ([]string, error) {
	clean, bad, ok := review.CleanScope(paths)
	if !ok {
		return nil, &handoff.Refusal{Code: CodeInvalidScope, Message: fmt.Sprintf("%q is not a path inside the workspace; the scope is unchanged", bad)}
	}
	return clean, nil
}

// StageBase stages the base of an implementation of the plan (hash, its
// work:// artifact, title and body) in the session's workspace as it is
// now, with the card's scope ([review.StageBase]). It fails closed: a
// base that cannot be staged is [CodeBaseFailed] and refuses the start
// it was for (nothing moved), because without it the scope the person
// approved on the card would not be held.
func (t *Tracking) StageBase(ctx context.Context, hash, artifact, title, body string) (string, error) {
	id, err := review.StageBase(ctx, ReviewDir(t.cfg.State, t.cfg.Session), t.cfg.Host.Roots().Workspace, title, hash, artifact, t.CardScope(hash, body))
	if err != nil {
		return "", &handoff.Refusal{Code: CodeBaseFailed, Message: fmt.Sprintf("the implementation's base (its scope and report) could not be taken, so nothing was started: %v", err)}
	}
	return id, nil
}

// BaseCommitted is called once the commit naming base is durable: the
// review directory points offline readers at it ([review.BaseCommitted]).
// The session goes by its commit, so a pointer that cannot be written
// fails nothing, but is an error event: `planbridge report` would not
// find this implementation's report.
func (t *Tracking) BaseCommitted(base string) { t.baseCommitted(t.cfg.Session, base) }

func (t *Tracking) baseCommitted(session, base string) {
	if err := review.BaseCommitted(ReviewDir(t.cfg.State, session), base); err != nil {
		t.unsaved("the pointer to the current implementation's report (planbridge report, offline, will not find it; the session still shows it)", err)
	}
}

// A Fork is the tracking a Worktree fork takes over: its row, with the
// fork's own base staged in the fork's review directory and named in the
// plan (Base; "" when no plan is tracked).
type Fork struct {
	Row  store.Tracking
	Base string
}

// ForFork is this session's tracking as the Worktree fork session fork,
// checked out in dir, takes it over from the accepted artifact (rel, hash
// of work://): the fork's base is its checkout as it is now, before
// anything of the implementation runs there. A base that cannot be staged
// fails the hand-over (the step that names it), as at acceptance: the
// fork never runs with a plan whose scope cannot be held.
func (t *Tracking) ForFork(ctx context.Context, fork, dir, rel, hash string) (Fork, error) {
	f := Fork{Row: store.Tracking(t.Row())}
	var p review.TrackedPlan
	if f.Row.Plan == "" || json.Unmarshal([]byte(f.Row.Plan), &p) != nil {
		return f, nil
	}
	body, err := handoff.ReadArtifact(t.cfg.Work, rel, hash)
	if err != nil {
		return Fork{}, err
	}
	p.Base, err = review.StageBase(ctx, ReviewDir(t.cfg.State, fork), dir, p.Title, hash, agent.WorkScheme+rel, t.CardScope(hash, body))
	if err != nil {
		return Fork{}, fmt.Errorf("could not stage the fork's implementation base (its scope and report): %w", err)
	}
	b, _ := json.Marshal(p)
	f.Row.Plan, f.Base = string(b), p.Base
	return f, nil
}

// ForkCommitted is [Tracking.BaseCommitted] for the fork f handed over to
// session fork, once the hand-over's commit is durable; this session no
// longer tracks the plan ([review.Tracker.Forget] is the caller's, in the
// same critical section as its row).
func (t *Tracking) ForkCommitted(fork string, f Fork) {
	if f.Base != "" {
		t.baseCommitted(fork, f.Base)
	}
}

// RecordEdit remembers the workspace files call edited ([agent.EditedFiles]),
// which a later Worktree fork carries into its checkout. One that cannot
// be recorded is an error event naming it: a fork would not carry it.
func (t *Tracking) RecordEdit(call agent.ToolCall) {
	for _, p := range agent.EditedFiles(call, t.cfg.Host.Roots().Workspace) {
		if err := t.cfg.Store.AddEditedFile(context.Background(), t.cfg.Session, p); err != nil {
			t.unsaved(fmt.Sprintf("that %s was edited (a Worktree fork would not carry it)", p), err)
		}
	}
}

// StoredPlan is the accepted plan in session id's stored tracking, read
// without loading the session (nil if none or unreadable). A plan that was
// running is reported paused, as opening the session would.
func StoredPlan(ctx context.Context, st Store, id string) *review.PlanRef {
	t, err := st.GetTracking(ctx, id)
	if err != nil || t.Plan == "" {
		return nil
	}
	p, _, err := review.LoadPlan(t.Plan, true)
	if err != nil {
		return nil
	}
	return p.Ref()
}
