package handoffport

import (
	"context"
	"path/filepath"
	"sync"

	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/internal/tracking"
	"planbridge/internal/turn"
	"planbridge/review"
)

// Store is the data access of the ports: one named store operation per
// commit boundary, and the reads the checks need.
type Store interface {
	Dir() string
	PutRetryRecord(ctx context.Context, session, data string) error
	GetRetryRecord(ctx context.Context, session string) (string, error)
	CommitSegment(ctx context.Context, g store.Segment) error
	CommitAcceptance(ctx context.Context, a store.Acceptance) error
	CommitPark(ctx context.Context, p store.Park) error
	CommitForkSession(ctx context.Context, f store.ForkSession) error
	CommitHandOver(ctx context.Context, h store.HandOver) error
	EditedFiles(ctx context.Context, session string) ([]string, error)
	GetSession(ctx context.Context, id string) (store.Session, error)
	LiveShareRooms(ctx context.Context, session string) (int, error)
}

// Change is one commit of the session's rows as [Host.Commit]'s prepare
// makes it, under the aggregate's lock.
type Change struct {
	Commit func(context.Context) error // the named store operation, run outside the lock
	Done   func()                      // under the lock once committed: memory follows the store (nil: nothing)
	Undo   func()                      // under the lock when the commit failed: what prepare moved goes back (nil: nothing)
}

// Recoverer is another session of the same process, opened for its
// recovery (a Worktree fork).
type Recoverer interface {
	ID() string
	Recover(ctx context.Context) (handoff.Recovered, error)
}

// Host is the session aggregate as the ports reach it. Methods named
// …Locked are called with [Config.Lock] held and must not take it; every
// other method is called without it.
type Host interface {
	// Commit is the session's one commit sequence of its rows: refused
	// once the session is deleted (nothing runs), prepare under the
	// lock, the commit outside it, then Done or Undo under it.
	Commit(ctx context.Context, prepare func() (Change, error)) error
	// WhileLive runs fn, which writes the session's rows or directory,
	// unless the session is deleted (then it refuses and fn never runs).
	WhileLive(fn func() error) error
	// RowLocked is the session row as held in memory; SetRowLocked
	// changes it in memory (after a commit that stored it).
	RowLocked() store.Session
	SetRowLocked(set func(*store.Session))
	// BusyLocked: a turn or a root workflow runs. QueuedLocked: how many
	// prompts wait. ForkStateLocked: what of the session refuses a fork
	// whatever the branch.
	BusyLocked() bool
	QueuedLocked() int
	ForkStateLocked() handoff.ForkState
	Emit(ev event.Data)
	Changed()
	Kick()
	// Own runs fn as the session's root workflow (refused while busy or
	// handed over); what fn returns runs once the session is free.
	Own(fn func(ctx context.Context) (after func())) error
	// Born marks session id as created by this process (no restart).
	Born(id string)
	// Open is another session of the process (a fork), loaded if needed.
	Open(ctx context.Context, id string) (Recoverer, error)
	// CheckModel refuses a model that is not available.
	CheckModel(name string) error
	// ResumeGoal is the person's Goal resume with steer; ResumeImplementation
	// the person's resume of a paused implementation.
	ResumeGoal(ctx context.Context, steer string) error
	ResumeImplementation(ctx context.Context) error
	// Failpoint receives the crash points of the steps.
	Failpoint(name string)
}

// Card is the session's proposal and its presentation (package
// interaction's Card), guarded by [Config.Lock].
type Card interface {
	CheckLocked(attempt string) error
	CloseLocked() string
	ReopenLocked(attempt string)
	ProposalLocked() (store.Proposal, bool)
	SelectionLocked() handoff.Selection
	SetLocked(p store.Proposal)
	PendingLocked() bool
	Body(p store.Proposal) (body string, differs bool, err error)
	RecordOutcome(ctx context.Context, attempt, outcome, title, hash string)
}

// Tracking is the implementation's tracking (package tracking's).
type Tracking interface {
	StageBase(ctx context.Context, hash, artifact, title, body string) (string, error)
	StartLocked(a review.Accepted) (mine, prev *review.TrackedPlan)
	UndoLocked(mine, prev *review.TrackedPlan)
	Row() review.Row
	BaseCommitted(base string)
	EmitSteps()
	SetStatus(ctx context.Context, status, reason string) error
	ForFork(ctx context.Context, fork, dir, rel, hash string) (tracking.Fork, error)
	ForkCommitted(fork string, f tracking.Fork)
	Forget()
	Plan() *review.TrackedPlan
	Continue(ctx context.Context) error
}

// Goal is the session's Goal at run time (package goalrun's Runner).
type Goal interface {
	Start(ctx context.Context, env handoff.Env, rec *handoff.Record) error
	Goal() *goal.Goal
	Unfinished() (bool, string)
	RecoveryLocked() (pausedByRestart, kickoffPending bool)
}

// Turns executes the session's turns (package turn's Runner).
type Turns interface {
	Run(ctx context.Context, req turn.Req) error
	Summarize(ctx context.Context, notice, system, input string) (string, error)
}

// Transcript is the current context segment (package transcript's).
type Transcript interface {
	Messages() []agent.Message
	Next() int64
	Rotate(ctx context.Context, seg int64, material, record string) error
}

// Config configures the [Ports] of one session.
type Config struct {
	Session string      // the session's id
	WorkDir string      // its work:// root
	Lock    sync.Locker // the aggregate's lock
	Store   Store
	Host    Host
	Card    Card
	Track   Tracking
	Goal    Goal
	Turns   Turns
	Tr      Transcript
	Git     handoff.Git                // the repository side of the fork step
	NewID   func(prefix string) string // a fresh random id (a fork session's, a parked plan's)
}

// Ports is the session side of the handoff step machines of one
// session. Its one piece of state, the claim of a parked plan's start,
// is guarded by [Config.Lock]. Safe for concurrent use.
type Ports struct {
	cfg      Config
	starting bool // a parked plan is being started (between its checks and its hand-over); under cfg.Lock
}

// New returns the ports of one session.
func New(cfg Config) *Ports {
	return &Ports{cfg: cfg}
}

// StartingLocked reports whether a parked plan's start holds the session
// (from its checks to its hand-over).
func (p *Ports) StartingLocked() bool { return p.starting }

// workDirOf is the work:// root of session id.
func (p *Ports) workDirOf(id string) string {
	return store.WorkDir(p.cfg.Store.Dir(), id)
}

// workPath maps a session-relative artifact path to its file.
func (p *Ports) workPath(rel string) string {
	return filepath.Join(p.cfg.WorkDir, filepath.FromSlash(rel))
}

// workspace is the session's workspace directory.
func (p *Ports) workspace() string {
	p.cfg.Lock.Lock()
	defer p.cfg.Lock.Unlock()
	return p.cfg.Host.RowLocked().Workspace
}

// refusal is a stable code and the person's words ([handoff.Refusal]),
// which the session hands on as its own error.
func refusal(code, msg string) error { return &handoff.Refusal{Code: code, Message: msg} }

// Stable codes of the ports' own refusals.
const (
	CodeNotFound       = "not_found"
	CodeBusy           = "busy"
	CodeNoProposal     = "no_proposal"
	CodeAlreadyStarted = "already_started"
)
