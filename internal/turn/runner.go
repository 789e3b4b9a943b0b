package turn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/command"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/proposal"
	"planbridge/review"
)

// Posture is the part of the session a turn is assembled from (and a
// compaction carries), a snapshot taken under the aggregate's lock.
type Posture struct {
	Plan bool // the turn's immutable Plan stamp
	// FullReminder: the Plan episode's full reminder template is not yet
	// delivered (the row's template episode is not its Plan episode).
	FullReminder bool
	// PlanEpisode is the Plan episode the turn's reminder belongs to: a
	// full reminder delivered is that episode's, never one entered while
	// the turn ran (which keeps its own armed).
	PlanEpisode int64
	Title       string // "" until the first turn names the session
	Mode        string
	Workspace   string
	Segment     int64  // the current context segment
	Parent      string // the session this one was forked from ("": none)
	// Proposal and ProposalPath name a pending proposal (status proposed),
	// which a compaction carries.
	Proposal, ProposalPath string
}

// Host is the session's side of a turn: one adapter the session
// implements. Methods named …Locked are called with [Config.Lock] held;
// the others are called without it (they may take it).
type Host interface {
	// PostureLocked is the session's posture now.
	PostureLocked() Posture
	// Engine is the configured model engine (nil: none); ModelConfig the
	// model policy.
	Engine() agent.Engine
	ModelConfig() handoff.ModelConfig
	// Tools are the tools the session's turns are offered.
	Tools() *agent.Registry
	// Asker asks the person whether a call may run (nil: nobody can).
	Asker() agent.Asker
	// CommitRow commits the session row with set applied, and only then
	// applies set in memory.
	CommitRow(ctx context.Context, set func(*store.Session)) error
	// RequeueFirst puts req back at the head of the session's queue.
	RequeueFirst(req Req)
	// Response is told the extraction of each completed root-assistant
	// response (nil outside Plan, where nothing can propose).
	Response(res *proposal.Result)
	// AdmitGoal binds req to the active Goal or names why a stale Goal
	// turn is dropped unsent; UnsentGoal is told of a Goal turn that ended
	// without its prompt stored (err: why); BookGoal books a Goal turn once
	// its messages are durable and says whether it runs again (its one
	// retry).
	AdmitGoal(req *Req) (drop string)
	UnsentGoal(ctx context.Context, t goal.Turn, err error)
	BookGoal(ctx context.Context, t goal.Turn, usage agent.Usage, wall time.Duration, err error) (retry bool)
	// Edited records the workspace files a completed call edited.
	Edited(call agent.ToolCall)
	// Binding is the implementation's tracking as a turn reaches it;
	// Plan is its tracked plan (nil: none); PauseForScope stops an
	// unattended write outside the scope; ReportIfEnded builds the report
	// once the implementation ended.
	Binding() Tracking
	Plan() *review.TrackedPlan
	PauseForScope(reason string)
	ReportIfEnded(ctx context.Context)
	// Failpoint receives the turn's crash points.
	Failpoint(name string)
}

// Tracking is the implementation's tracking as a turn reaches it
// (trackbind.Binding is one): the scope the gate holds, the watcher of
// unconfined shell commands, the tool log, a scope extended by a call the
// person allowed.
type Tracking interface {
	Scope(plan bool) agent.WriteScope
	Watcher(plan, unattended bool) agent.Watcher
	LogTool(call agent.ToolCall, ok bool, output string)
	Extend(call agent.ToolCall)
}

// Transcript is the current context segment (*transcript.Transcript is
// one).
type Transcript interface {
	Messages() []agent.Message
	// AppendRow commits msgs with the session row (set applied to it, and
	// to the session's copy once committed) and what with adds.
	AppendRow(ctx context.Context, op string, msgs []agent.Message, set func(*store.Session), with func(*store.TurnStep)) error
	// Rotate starts segment seg with material as its first message.
	Rotate(ctx context.Context, seg int64, material, record string) error
}

// Events is the session's event log (*eventlog.Log is one).
type Events interface {
	Emit(d event.Data)
	Text(delta string) // a streamed text delta (group-committed)
}

// Store is the store's part a turn touches directly (*store.Store is
// one): the durable queue.
type Store interface {
	DropQueuedInput(ctx context.Context, sessionID string, ids ...int64) error
}

// Config configures a [Runner].
type Config struct {
	Session string
	// Lock is the aggregate's lock: it guards the runner's turn number
	// and is held for [Host.PostureLocked].
	Lock       sync.Locker
	Host       Host
	Transcript Transcript
	Events     Events
	Store      Store
	LastTurn   int64 // the last turn started (from the log): numbering continues after it
	// Agent's static setting: the shell, the read roots and hidden paths,
	// the work:// root and the person's configuration directory (its
	// skills folders are protected).
	Shell     agent.Shell
	ReadRoots []string
	Hidden    []string
	WorkDir   string
	UserDir   func() string
	Logger    *slog.Logger
}

// Runner executes a session's turns, one at a time: choosing and owning
// the next turn is the session's.
type Runner struct {
	cfg  Config
	last int64 // the last turn started; guarded by cfg.Lock
}

// New returns the runner of cfg.Session.
func New(cfg Config) *Runner {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Runner{cfg: cfg, last: cfg.LastTurn}
}

// PromptKept is a queued prompt's turn that ended because its prompt
// could not be stored (a full disk): nothing was sent, and the prompt
// stays queued, first, in the store. The session puts it back first in
// memory too and does not run it again until the next kick, so it does
// not fail in a loop.
type PromptKept struct{ Err error }

func (e *PromptKept) Error() string { return e.Err.Error() }
func (e *PromptKept) Unwrap() error { return e.Err }

// Run runs req as one model turn and persists what it produced. It
// returns the turn's error (nil when it settled successfully; a
// [*PromptKept] for a queued prompt whose commit failed).
func (r *Runner) Run(ctx context.Context, req Req) error {
	h := r.cfg.Host
	l := &ledger{r: r}
	if req.QueueID != 0 {
		// The queue entry leaves in the prompt's commit, or with the turn
		// if it never gets that far; a prompt whose commit failed stays
		// queued, in the store as in memory.
		defer func() {
			if !l.stored && !l.failed {
				r.DropQueued(req.QueueID)
			}
		}()
		dispatch, id := req.Dispatch, req.QueueID
		req.Dispatch = func(st *store.TurnStep) {
			if dispatch != nil {
				dispatch(st)
			}
			st.Dequeue = id
		}
	}
	if why := h.AdmitGoal(&req); why != "" {
		r.cfg.Events.Emit(event.Notice{Message: "Dropped a stale Goal turn without sending it: " + why + "."})
		return nil
	}
	started := time.Now()
	text := req.Text
	if r.NeedsCompaction(text) {
		if err := r.Compact(ctx, "the context neared the model's window"); err != nil {
			r.cfg.Events.Emit(event.Error{Message: "automatic compaction failed: " + err.Error()})
		}
	}
	r.cfg.Lock.Lock()
	r.last++
	l.turn = r.last
	p := h.PostureLocked()
	history := agent.CompleteToolCalls(r.cfg.Transcript.Messages())
	r.cfg.Lock.Unlock()
	eng := r.engine(p)
	l.req, l.plan = &req, p.Plan
	if p.Title == "" {
		// The session is named in the turn's first commit that succeeds.
		title := command.Title(text)
		l.row = func(row *store.Session) {
			if row.Title == "" {
				row.Title = title
			}
		}
	}
	fullReminder := p.Plan && p.FullReminder
	cfg := h.ModelConfig()
	pol := cfg.Turn(p.Plan, p.Mode, req.Policy)
	l.display = cmp.Or(req.Display, text)
	err := cfg.Check(pol.Model)
	if eng == nil {
		err = errors.New("no model engine is configured")
	}
	if err != nil { // nothing is sent, but the person sees what failed
		l.Announce()
		h.UnsentGoal(ctx, req.Goal, err)
		return r.finish(ctx, l, err, -1, nil)
	}
	roots := agent.Roots{Workspace: p.Workspace, Work: r.cfg.WorkDir, ReadRoots: r.cfg.ReadRoots, Hidden: r.cfg.Hidden}
	// Skills folders are project configuration wherever they live.
	protected := handoff.SkillDirs(p.Workspace, r.cfg.UserDir())
	bind := h.Binding()
	unattended := req.Guest || req.Goal.Continuation
	t := &agent.Turn{
		Engine:   eng,
		Model:    pol.Model,
		Effort:   pol.Effort,
		Messages: agent.RootConversation(p.Workspace, history, text, p.Plan, fullReminder),
		Tools:    h.Tools(),
		Gate: agent.Gate{Plan: p.Plan, Mode: agent.Mode(pol.Mode), Shell: r.cfg.Shell, Roots: roots, Protected: protected,
			Unattended: unattended, Scope: bind.Scope(p.Plan)},
		Env:   agent.Env{Roots: roots, Shell: r.cfg.Shell, Protected: protected},
		Ask:   r.asker(),
		Watch: bind.Watcher(p.Plan, unattended),
		Sink:  &sink{r: r, plan: p.Plan, view: viewFor(p.Plan)},
	}
	// A Goal's kickoff and continuations are retried by the Goal (the
	// continuation regenerates them); any other turn, a person's or a
	// guest's follow-up bound to the Goal included, is retried once by
	// Send.
	opts := agent.SendOptions{RetryTransient: !req.Goal.Kickoff && !req.Goal.Continuation && !req.Goal.Retried}
	if req.Goal.Kickoff {
		opts.BeforePrompt = "goal.kickoff"
	}
	if req.Dispatched != nil {
		opts.Dispatched = map[bool]string{true: "goal.dispatched", false: "handoff.dispatched"}[req.Goal.Kickoff]
	}
	res, retried, err := t.Send(ctx, l, opts)
	if !l.stored {
		h.UnsentGoal(ctx, req.Goal, err)
		err = r.finish(ctx, l, err, -1, nil)
		if l.failed && req.QueueID != 0 && err != nil {
			return &PromptKept{err}
		}
		return err
	}
	if retried {
		req.Goal.Retried = true // the Goal does not retry it again
	}
	if req.Goal.Bound() && h.BookGoal(ctx, req.Goal, res.Usage, time.Since(started), err) {
		retry := req
		retry.Goal.Retried = true
		h.RequeueFirst(retry)
	}
	// The full template counts as delivered only once a model response
	// actually arrived: a cancelled dispatch leaves it armed.
	delivered := int64(-1)
	if fullReminder && len(res.Messages) > 0 {
		delivered = p.PlanEpisode
	}
	return r.finish(ctx, l, err, delivered, req.Settle)
}

// finish settles a turn whose messages are already durable: the session
// row (the full reminder's delivery for Plan episode delivered, -1 for
// none; a title no commit stored yet) and, for a successful turn, its
// settlement, in one commit. A failing commit fails the turn (ok false,
// an error event); the returned error is the turn's.
func (r *Runner) finish(ctx context.Context, l *ledger, err error, delivered int64, settle func(*store.TurnStep)) error {
	if err != nil {
		settle = nil // only a successful turn settles
	}
	set := l.row
	if delivered >= 0 {
		set = func(row *store.Session) {
			if l.row != nil {
				l.row(row)
			}
			// The turn's episode, not the row's now: a Plan episode
			// entered during the turn keeps its full reminder armed.
			row.TemplateEpisode = delivered
		}
	}
	// Persist even after cancellation: the transcript must not lose what happened.
	if perr := r.cfg.Transcript.AppendRow(context.WithoutCancel(ctx), store.OpTurn, nil, set, settle); perr != nil {
		r.cfg.Logger.Error("persist turn", "session", r.cfg.Session, "err", perr)
		if err == nil {
			err = fmt.Errorf("could not save the turn: %w", perr)
		}
	}
	end, failure := event.NewTurnEnd(l.turn, err)
	if failure != nil {
		r.cfg.Events.Emit(*failure)
	}
	r.cfg.Host.ReportIfEnded(context.WithoutCancel(ctx))
	r.cfg.Events.Emit(end)
	return err
}

// engine is the model engine of the session's requests. An engine that
// keeps state per session (the script's replay position) gives the
// session its own view; a fork starts from its parent's state.
func (r *Runner) engine(p Posture) agent.Engine {
	eng := r.cfg.Host.Engine()
	if se, ok := eng.(agent.SessionEngine); ok {
		return se.ForSession(r.cfg.Session, p.Parent)
	}
	return eng
}

// posture is [Host.PostureLocked] under the aggregate's lock.
func (r *Runner) posture() Posture {
	r.cfg.Lock.Lock()
	defer r.cfg.Lock.Unlock()
	return r.cfg.Host.PostureLocked()
}

// asker is the host's asker, a call the person allowed extending the
// implementation's scope.
func (r *Runner) asker() agent.Asker {
	ask := r.cfg.Host.Asker()
	if ask == nil {
		return nil
	}
	return func(ctx context.Context, call agent.ToolCall, reason string) (bool, error) {
		ok, err := ask(ctx, call, reason)
		if ok && err == nil {
			r.cfg.Host.Binding().Extend(call) // allowing a write outside the scope extends it
		}
		return ok, err
	}
}

// DropQueued removes the session's queue entries ids that are done with
// (all of them when none is given; a no-op for an entry the prompt's
// commit removed). A removal that fails leaves the prompts in the store's
// queue, where the next start would run them: the person is told.
func (r *Runner) DropQueued(ids ...int64) {
	if err := r.cfg.Store.DropQueuedInput(context.Background(), r.cfg.Session, ids...); err != nil {
		r.cfg.Logger.Error("drop queued input", "session", r.cfg.Session, "err", err)
		r.cfg.Events.Emit(event.Error{Message: "A dropped prompt could not be removed from the stored queue (the next start may run it): " + err.Error()})
	}
}

// ledger is a turn's [agent.Ledger]: its prompt and steps committed
// through the transcript, its events emitted.
type ledger struct {
	r       *Runner
	req     *Req
	display string
	turn    int64
	plan    bool
	// row is the change to the session row the turn's first successful
	// commit carries (its title; nil: none).
	row    func(*store.Session)
	stored bool // the prompt's commit succeeded
	failed bool // the prompt's commit failed (not cancelled)
}

func (l *ledger) Prompt(ctx context.Context, m agent.Message) error {
	op := store.OpPrompt
	if l.req.Dispatched != nil {
		op = store.OpDispatch
	}
	err := l.r.cfg.Transcript.AppendRow(ctx, op, []agent.Message{m}, l.row, l.req.Dispatch)
	l.stored = err == nil
	l.failed = err != nil && ctx.Err() == nil
	if l.stored {
		l.row = nil
	}
	return err
}

func (l *ledger) Step(ctx context.Context, m agent.Message) error {
	return l.r.cfg.Transcript.AppendRow(ctx, store.OpTurn, []agent.Message{m}, nil, nil)
}

// Announce shows the prompt and the turn's start once the prompt is
// durable (or once it is clear it will not be sent), so a crash or a
// failed commit never shows a kickoff the conversation does not hold.
func (l *ledger) Announce() {
	l.r.cfg.Events.Emit(event.User{Text: l.display, Display: l.display})
	l.r.cfg.Events.Emit(event.TurnStart{Turn: l.turn, Plan: l.plan})
}

func (l *ledger) Dispatched() {
	if l.req.Dispatched != nil {
		l.req.Dispatched()
	}
}

func (l *ledger) Retrying(cause error) {
	l.r.cfg.Events.Emit(event.Notice{Message: "The model request failed (" + cause.Error() + "); retrying once."})
}

func (l *ledger) Failpoint(name string) { l.r.cfg.Host.Failpoint(name) }
