package review

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"sync"

	"planbridge/handoff"
	"planbridge/internal/atomicfile"
)

// A Tracker is the runtime that holds one session's implementation to its
// accepted plan: the todo list and the tracked plan (steps, implementation
// status), the records of the implementation (its staged base, declared
// scope, tool log and report, in the session's review directory), the
// scope held during the implementation with the [Watch] around commands
// whose writes cannot be declared, the plan versions with their line
// comments, and the pre-approval checks of the current proposal.
//
// The session owns one Tracker per session and reaches it through a
// [Port]. The lock guarding the tracked state is a leaf: no method calls
// the Port while holding it, so the session may call [Tracker.Begin],
// [Tracker.Undo], [Tracker.Forget], [Tracker.Row], [Tracker.Ref],
// [Tracker.Plan], [Tracker.Todos] and [Tracker.Running] under its own
// lock (an acceptance installs the plan in the same decision that closes
// its card). Every other method may call the Port (changes of the scope
// file are ordered by a lock of their own, held while the change is
// published) and must not be called under a lock the Port's methods
// take. Safe for concurrent use.
//
// What changes in memory is committed through [Port.CommitTracking]
// before it is published; a rejected todo list, a failed commit of a new
// list, leaves the previous list as it was, and a step or a move to
// running ([Tracker.SetStatus], [Tracker.Resume], [Tracker.Continue]: a
// Goal recovered) whose commit fails is put back as it was; a pause whose
// commit fails is kept in memory, where paused is the safe side. Either
// way nothing is published and the error is returned. Files the Tracker
// writes are written atomically; their layout is fixed (a restart reads what an
// earlier process wrote):
//
//	<Dir>/current                   the base of the latest implementation (offline readers)
//	<Dir>/b-<16 hex>/base.json      a staged base ([StageBase])
//	<Dir>/b-<16 hex>/scope.json     its declared scope, extensions, restorations, unsettled commands
//	<Dir>/b-<16 hex>/tools.jsonl    one [ToolEvent] per completed tool call
//	<Dir>/b-<16 hex>/watching       a watched command in flight
//	<Dir>/b-<16 hex>/unsettled.jsonl unsettled commands the scope file could not record
//	<Dir>/b-<16 hex>/restored/N/    what the Nth restored command had left
//	<Dir>/b-<16 hex>/report.json    the last [Report] built
//	<Work>/<Plans>/vN.md            plan version N (read-only, written once)
//	<Work>/<Plans>/vN.comments.json the person's line comments on version N
//	<Work>/<Plans>/scope-<hash16>.json the person's edit of the card's scope
//
// A tracked plan from before bases were staged uses <Dir> itself as its
// base directory.
type Tracker struct {
	cfg Config

	mu     sync.Mutex // guards the fields below; a leaf lock
	todos  []TodoItem
	plan   *TrackedPlan
	checks planChecks
	// watched are the files each watched call changed, until logged.
	watched map[string][]string

	// scopeMu orders read-modify-write of the scope file; taken after
	// watchMu, never with mu held.
	scopeMu sync.Mutex
	// watchMu guards watching: this process's watched commands in flight,
	// by base directory.
	watchMu  sync.Mutex
	watching map[string]int
	// writeRecord writes the scope's record, the records a command
	// changed, put back, and the report ([atomicfile.WriteFileIn] below
	// the session's directory; a
	// test's full disk).
	writeRecord func(path string, data []byte, perm os.FileMode) error
	logMu       sync.Mutex // orders appends to the tool log and guards logFailing
	// logFailing: the last append to the tool log failed (and was told).
	logFailing bool
}

// Config configures a [Tracker].
type Config struct {
	Session string       // the session's id (for logs)
	Dir     string       // the session's review directory, outside work:// (the model cannot reach it)
	State   string       // the state directory: restored copies are named relative to it
	Work    string       // the session's work:// root
	Plans   string       // the folder of plan files under Work, which the model cannot write
	Log     *slog.Logger // nil: discard
	Port    Port
}

// Port is what a [Tracker] needs from the session that owns it. No method
// is called with the Tracker's lock held.
type Port interface {
	// CommitTracking durably commits the session's tracking row (one
	// named store operation).
	CommitTracking(ctx context.Context, row Row) error
	// TodosChanged, StepsChanged, ScopeChanged, ReportBuilt and Notice
	// publish what changed, after it was committed or written.
	TodosChanged(items []TodoItem)
	StepsChanged(p *TrackedPlan)
	ScopeChanged(sc Scope)
	ReportBuilt(r Report)
	Notice(msg string)
	// Unsaved tells the person that a record of the implementation could
	// not be written (what names it: "the tool log", "the scope's record
	// of …", "the implementation report"), with the write's error. It is
	// called instead of announcing the record: nothing that failed to be
	// written is published as written.
	Unsaved(what string, err error)
	// Workspace is the session's workspace directory.
	Workspace() string
	// ReadArtifact reads the work:// file rel, which must hash to hash.
	ReadArtifact(rel, hash string) (string, error)
	// Asker is how to ask the person about call, or nil where no client
	// could answer now.
	Asker() Asker
	// Pause pauses the implementation (through [Tracker.SetStatus]) and
	// whatever drives it, and stops the running turn: an unattended write
	// outside the scope, which nobody could be asked about.
	Pause(reason string)
}

// An Asker asks the person a question about one call; ok is the answer,
// err that none came (interrupted, timed out, the client went away).
type Asker func(ctx context.Context, call Call, question string) (ok bool, err error)

// Call is a tool call as the Tracker sees it.
type Call struct {
	ID, Name string
	// Command is a bash call's command ("" for other tools).
	Command string
	// Arguments are the call's raw arguments, for the [Asker].
	Arguments json.RawMessage
	// Writes are the paths the tool declared the call writes, as the tool
	// spells them (absolute, workspace-relative or work://).
	Writes []string
}

// Row is the session's tracking row: the todo list and the tracked plan,
// as JSON ("" plan: none).
type Row struct {
	Todos string
	Plan  string
}

// NewTracker returns the Tracker of one session, with nothing tracked yet
// ([Tracker.Load] brings back a stored row).
func NewTracker(cfg Config) *Tracker {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	t := &Tracker{cfg: cfg, watching: map[string]int{}}
	t.writeRecord = func(path string, data []byte, perm os.FileMode) error {
		return atomicfile.WriteFileIn(t.recordAnchor(), path, data, perm)
	}
	return t
}

// Load installs a stored row. A corrupt todo list starts empty and a
// corrupt plan is dropped (both logged). A restart never forgets an
// implementation in flight: when restarted, a running one comes back
// paused ("paused by restart"), committed at once.
func (t *Tracker) Load(ctx context.Context, row Row, restarted bool) error {
	t.mu.Lock()
	if row.Todos != "" {
		if err := json.Unmarshal([]byte(row.Todos), &t.todos); err != nil {
			t.cfg.Log.Warn("corrupt todo list; starting empty", "session", t.cfg.Session, "err", err)
			t.todos = nil
		}
	}
	if row.Plan == "" {
		t.mu.Unlock()
		return nil
	}
	p, pause, err := LoadPlan(row.Plan, restarted)
	if err != nil {
		t.mu.Unlock()
		t.cfg.Log.Warn("corrupt plan progress; dropped", "session", t.cfg.Session, "err", err)
		return nil
	}
	t.plan = p
	t.mu.Unlock()
	if pause {
		return t.save(ctx)
	}
	return nil
}

// Row is the tracking row as it is now in memory.
func (t *Tracker) Row() Row {
	t.mu.Lock()
	defer t.mu.Unlock()
	todos, _ := json.Marshal(t.todos)
	if t.todos == nil {
		todos = []byte("[]")
	}
	plan := ""
	if t.plan != nil {
		b, _ := json.Marshal(t.plan)
		plan = string(b)
	}
	return Row{Todos: string(todos), Plan: plan}
}

func (t *Tracker) save(ctx context.Context) error {
	return t.cfg.Port.CommitTracking(ctx, t.Row())
}

// Todos returns a copy of the todo list.
func (t *Tracker) Todos() []TodoItem {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]TodoItem(nil), t.todos...)
}

// WriteTodos replaces the whole todo list after validating all of it
// ([ValidateTodos]); a rejected write, or one whose commit fails, leaves
// the previous list untouched. An empty list clears.
func (t *Tracker) WriteTodos(ctx context.Context, items []TodoItem) ([]TodoItem, error) {
	valid, err := ValidateTodos(items)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	prev := t.todos
	t.todos = valid
	t.mu.Unlock()
	if err := t.save(ctx); err != nil {
		t.mu.Lock()
		t.todos = prev
		t.mu.Unlock()
		return nil, err
	}
	t.cfg.Port.TodosChanged(valid)
	return valid, nil
}

// Plan returns a copy of the tracked plan (nil if none).
func (t *Tracker) Plan() *TrackedPlan {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.planLocked()
}

func (t *Tracker) planLocked() *TrackedPlan {
	if t.plan == nil {
		return nil
	}
	p := *t.plan
	p.Steps = append([]PlanStep(nil), p.Steps...)
	return &p
}

// Ref names the tracked plan ([TrackedPlan.Ref]); nil if none.
func (t *Tracker) Ref() *PlanRef {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.plan == nil {
		return nil
	}
	return t.plan.Ref()
}

// Running reports whether an implementation is tracked and not done
// (running or paused): the scope is held while it is.
func (t *Tracker) Running() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.plan != nil && t.plan.Status != ImplDone
}

// EmitSteps publishes the tracked plan's progress (nothing when none).
func (t *Tracker) EmitSteps() {
	if p := t.Plan(); p != nil {
		t.cfg.Port.StepsChanged(p)
	}
}

// ErrNoPlan: there is no accepted plan with steps to update.
var ErrNoPlan = errors.New("there is no accepted plan with steps to update")

// UpdateStep sets one step's status (by id like "s2" or 1-based number;
// [TrackedPlan.SetStep]), commits and publishes the progress. A failed
// commit puts the step (and the implementation's status, which the last
// step ends) back as they were: the implementation never ends in memory
// only, which would release its held scope.
func (t *Tracker) UpdateStep(ctx context.Context, step, status string) (*TrackedPlan, error) {
	t.mu.Lock()
	p := t.plan
	if p == nil {
		t.mu.Unlock()
		return nil, ErrNoPlan
	}
	prevSteps := append([]PlanStep(nil), p.Steps...)
	prevStatus, prevReason := p.Status, p.Reason
	err := p.SetStep(step, status)
	mine := append([]PlanStep(nil), p.Steps...)
	myStatus := p.Status
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := t.save(ctx); err != nil {
		t.mu.Lock()
		// Only what this call changed, unless something changed it since.
		if t.plan == p {
			for i := range p.Steps {
				if i < len(mine) && i < len(prevSteps) && p.Steps[i].Status == mine[i].Status {
					p.Steps[i].Status = prevSteps[i].Status
				}
			}
			if p.Status == myStatus && myStatus != prevStatus {
				p.Status, p.Reason = prevStatus, prevReason
			}
		}
		t.mu.Unlock()
		return nil, err
	}
	t.EmitSteps()
	return t.Plan(), nil
}

// An Accepted plan is what [Tracker.Begin] tracks: the accepted plan's
// title, archive (work:// address), hash and body, the implementation
// policy, and the id of its staged base ("" none).
type Accepted struct {
	Title, Artifact, Hash, Body string
	Policy                      handoff.Policy
	Base                        string
}

// Begin installs, in memory only, the steps of an accepted plan as a
// running implementation, for the commit that starts it to store
// ([Tracker.Row]); mine is the plan installed, prev the one it replaced,
// for [Tracker.Undo] when that commit fails. It never calls the Port.
func (t *Tracker) Begin(a Accepted) (mine, prev *TrackedPlan) {
	steps, clipped := StepsFromProposal(a.Body)
	mine = &TrackedPlan{Title: a.Title, Artifact: a.Artifact, Hash: a.Hash, Status: ImplRunning, Policy: a.Policy, Steps: steps, Clipped: clipped, Base: a.Base}
	t.mu.Lock()
	defer t.mu.Unlock()
	prev, t.plan = t.plan, mine
	return mine, prev
}

// Undo puts prev back if the plan installed is still mine (a concurrent
// start that won keeps its own). It never calls the Port.
func (t *Tracker) Undo(mine, prev *TrackedPlan) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.plan == mine {
		t.plan = prev
	}
}

// Forget drops the tracked plan in memory (a Worktree fork took it over,
// in the commit that hands over). It never calls the Port.
func (t *Tracker) Forget() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.plan = nil
}

// SetStatus moves the tracked implementation between running and paused
// (a done one, or one already there, is left alone), commits and
// publishes the progress. A commit that fails publishes nothing and
// returns its error: a move to running is put back (nothing runs on under
// a status the store does not hold); a pause is kept in memory, where
// paused is the safe side (the scope stays held, nothing resumes on its
// own), for the next commit of the row to store.
func (t *Tracker) SetStatus(ctx context.Context, status, reason string) error {
	t.mu.Lock()
	p := t.plan
	if p == nil || p.Status == ImplDone || p.Status == status {
		t.mu.Unlock()
		return nil
	}
	prevStatus, prevReason := p.Status, p.Reason
	p.Status, p.Reason = status, reason
	t.mu.Unlock()
	if err := t.save(ctx); err != nil {
		t.mu.Lock()
		if status != ImplPaused && t.plan == p && p.Status == status && p.Reason == reason {
			p.Status, p.Reason = prevStatus, prevReason
		}
		t.mu.Unlock()
		return err
	}
	t.EmitSteps()
	return nil
}

// ErrNothingToResume: there is no paused implementation.
var ErrNothingToResume = errors.New("there is no paused implementation to resume")

// Resume sets a paused implementation running again and returns the
// prompt that continues it with its remaining steps, and its policy. One
// paused by a restart is told it was interrupted ([handoff.InterruptedPrompt]).
// A resume whose commit fails resumes nothing: it stays paused, nothing is
// published, and the commit's error is returned.
func (t *Tracker) Resume(ctx context.Context) (prompt string, policy handoff.Policy, err error) {
	p := t.Plan()
	if p == nil || p.Status != ImplPaused {
		return "", handoff.Policy{}, ErrNothingToResume
	}
	if err := t.SetStatus(ctx, ImplRunning, ""); err != nil {
		return "", handoff.Policy{}, err
	}
	prompt = "Resume implementing the accepted plan. " + p.Carry() + "\nContinue with the first step still to do and update each step's status with update_plan_step."
	if p.Reason == "paused by restart" {
		prompt = handoff.InterruptedPrompt(p.Carry()) + "\nUpdate each step's status with update_plan_step."
	}
	return prompt, p.Policy, nil
}

// Continue sets a paused implementation running again for whatever
// drives it on its own prompt (a Goal recovered after a restart). A done
// or running one, or none, is left alone. A commit that fails continues
// nothing: it stays paused, nothing is published, and the commit's error
// is returned.
func (t *Tracker) Continue(ctx context.Context) error {
	return t.SetStatus(ctx, ImplRunning, "")
}

// planChecks caches the pre-approval checks of one proposal body.
type planChecks struct {
	hash     string
	warnings []Warning
}

// Warnings returns the pre-approval checks ([CheckDir]) of the proposal
// with this hash, running them (outside the lock) the first time.
func (t *Tracker) Warnings(hash, body, workspace string) []Warning {
	t.mu.Lock()
	c := t.checks
	t.mu.Unlock()
	if c.hash == hash && c.warnings != nil {
		return c.warnings
	}
	w := CheckDir(body, workspace)
	t.mu.Lock()
	t.checks = planChecks{hash: hash, warnings: w}
	t.mu.Unlock()
	return w
}

// ChecksHint is the hint offered to the model with feedback on the
// proposal with this hash ([Hint]; "" when its checks found nothing or
// were not run).
func (t *Tracker) ChecksHint(hash string) string {
	t.mu.Lock()
	c := t.checks
	t.mu.Unlock()
	if c.hash != hash {
		return ""
	}
	return Hint(c.warnings)
}
