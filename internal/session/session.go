package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/command"
	"planbridge/internal/event"
	"planbridge/internal/eventlog"
	"planbridge/internal/goalrun"
	"planbridge/internal/handoffport"
	"planbridge/internal/interaction"
	"planbridge/internal/sessioninfo"
	"planbridge/internal/store"
	"planbridge/internal/tracking"
	"planbridge/internal/transcript"
	"planbridge/internal/turn"
)

// Session is one conversation bound to a workspace. Safe for concurrent use.
type Session struct {
	m         *Manager
	id        string
	workDir   string
	restarted bool // loaded from a previous process's state

	goal *goalrun.Runner // the Goal at run time: its state guarded by mu, its write lock before mu

	// rowMu orders the session row's commits (commitRow, the transcript's
	// steps and rotations, and through commitChange an acceptance, a park,
	// a fork's creation, a hand-over, a segment, the retry record): each
	// holds it from its snapshot of the row until its commit and the
	// in-memory change that follows, so an older snapshot never overwrites
	// a newer one. Manager.Delete holds it from its checks to the rows'
	// removal (then sets gone), and whileLive under it refuses every write
	// of a deleted session's rows or directory. Taken before mu.
	rowMu sync.Mutex

	mu      sync.Mutex // guards the fields below
	row     store.Session
	busy    bool
	deleted bool // Manager.Delete holds or removed it: nothing more may queue
	gone    bool // its rows are deleted (set under rowMu): no row commit may write them back
	queue   []turn.Req
	cancel  context.CancelFunc
	// card is the proposal and its one presentation (package
	// interaction): its state is guarded by mu; its own commit lock is
	// taken before pubMu and mu.
	card  *interaction.Card
	track *tracking.Tracking // the implementation's tracking (its tracker's own lock, a leaf under mu)
	// hand is the session side of the handoff step machines (package
	// internal/handoffport): its one piece of state, a parked plan's
	// start claim, is guarded by mu.
	hand *handoffport.Ports

	// tr is the transcript of the current context segment (its own locks:
	// commits take it before mu, reads take a leaf lock).
	tr     *transcript.Transcript
	events *eventlog.Log // the event log: numbering, write-ahead commits, text group commit, views
	turns  *turn.Runner  // executes the chosen turn (package internal/turn; its turn number under mu)
	// pubMu serialises [Session.changed], so a view derived earlier is
	// never published after one derived later. Taken before mu.
	pubMu sync.Mutex
}

// loadSession loads a stored session; restarted is false for a session this
// process created (a fork being handed its implementation), whose work in
// flight is not paused by restart.
func loadSession(ctx context.Context, m *Manager, row store.Session, restarted bool) (*Session, error) {
	s := &Session{m: m, id: row.ID, row: row, restarted: restarted,
		workDir: m.workDir(row.ID)}
	s.track = s.newTracking()
	s.card = s.newCard()
	var err error
	if s.tr, err = transcript.Load(ctx, transcript.Config{Session: row.ID, Segment: row.Segment, Store: m.st,
		Row: s.rowSnapshot, RowLock: &s.rowMu, OnSegment: s.segmentCommitted, Apply: s.applyRow, Redact: m.redact, Logger: m.log}); err != nil {
		return nil, err
	}
	if s.events, err = eventlog.Open(ctx, eventlog.Config{Session: row.ID, Store: m.st, Publish: m.listeners.Publish, Redact: m.redact, Logger: m.log}); err != nil {
		return nil, err
	}
	// Turn numbers continue from the log's last turn_start.
	last, err := m.st.LastTurn(ctx, row.ID)
	if err != nil {
		return nil, err
	}
	s.turns = s.newRunner(last)
	// Queued follow-ups come back queued; they run when the session is
	// next free (after a recovery, say), never on their own at load.
	queued, err := m.st.QueuedInputs(ctx, row.ID)
	if err != nil {
		return nil, err
	}
	for _, q := range queued {
		s.queue = append(s.queue, turn.Req{Text: q.Text, Display: q.Display, QueueID: q.ID, Guest: q.Guest})
	}
	if err := s.card.Load(ctx, row.Plan); err != nil {
		return nil, err
	}
	if err := s.track.Load(ctx, s.restarted); err != nil {
		return nil, err
	}
	if s.goal, err = goalrun.Load(ctx, goalrun.Config{Session: row.ID, Store: m.st, Host: goalHost{s}, Lock: &s.mu, Logger: m.log}, restarted); err != nil {
		return nil, err
	}
	s.hand = s.newPorts()
	return s, nil
}

// workDir is the work:// root of session id: <state>/sessions/<id>/work.
func (m *Manager) workDir(id string) string {
	return store.WorkDir(m.st.Dir(), id)
}

// ID is the session id.
func (s *Session) ID() string { return s.id }

// WorkDir is the directory behind the session's work:// addresses.
func (s *Session) WorkDir() string { return s.workDir }

// Info is the client-facing summary of a session ([sessioninfo.Info]).
type Info = sessioninfo.Info

// Info returns the session's current summary.
func (s *Session) Info() Info {
	s.mu.Lock()
	in := sessioninfo.FromRow(s.row, s.busy)
	in.Queued = len(s.queue)
	if p, ok := s.card.ProposalLocked(); ok {
		in.ProposalStatus, in.ProposalTitle = p.Status, p.Title
	}
	if a := s.card.PresentationLocked(); a.Pending() {
		in.Approval = map[bool]string{false: "shown", true: "hidden"}[a.Hidden]
	}
	in.Goal = s.goal.SummaryLocked()
	in.AcceptedPlan = s.track.Ref()
	s.mu.Unlock()
	in.LastSeq = s.events.LastSeq()
	return in
}

// Events returns the persisted event log after seq since (limit > 0
// returns at most limit events: the oldest ones after since).
func (s *Session) Events(ctx context.Context, since int64) ([]Event, error) {
	return s.EventsPage(ctx, since, 0)
}

// EventsPage is [Session.Events] with a page size (0: no limit).
func (s *Session) EventsPage(ctx context.Context, since int64, limit int) ([]Event, error) {
	return s.events.Page(ctx, since, limit)
}

// emit appends an event of the catalogue ([EventData]) to the log and then
// publishes it ([eventlog.Log.Emit]: write-ahead, numbers never reused,
// pending text first); status and approval events are refused: only
// [Session.changed] publishes them.
func (s *Session) emit(ev EventData) { s.events.Emit(ev) }

// changed is the one path status and approval (card) events come from;
// [Session.emit] refuses both kinds. Every mutation of what they describe
// (posture, mode, busy, queue, proposal, the pending presentation, Goal,
// fork link, counters) is followed by changed, which derives both views
// and publishes each only when it differs from the last one published
// ([eventlog.Log.View]): the card first (while a presentation is pending),
// then the status. So every such event is a change, and an unchanged set
// publishes nothing. The card is derived outside every lock (it reads
// files), the status from [Session.Info].
func (s *Session) changed() {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	s.mu.Lock()
	pending := s.card.PendingLocked()
	s.mu.Unlock()
	if pending {
		s.events.View(s.Approval())
	} else {
		s.events.EndView(event.KindApproval)
	}
	s.events.View(s.statusData())
}

// commitRow commits the session row with set applied and only then
// applies set in memory: when the commit fails nothing changed, so no
// turn runs under, and no status event announces, a posture the store
// does not hold; a deleted session's is refused ([Session.commitChange];
// caller must not hold s.mu).
func (s *Session) commitRow(ctx context.Context, set func(*store.Session)) error {
	return s.commitChange(ctx, func() (handoffport.Change, error) {
		row := s.row
		set(&row)
		return handoffport.Change{Commit: func(ctx context.Context) error { return s.m.st.PutSession(ctx, row) }, Done: func() { set(&s.row) }}, nil
	})
}

func (s *Session) statusData() event.Status { return s.Info().Status() }

// SetMode sets the permission mode. It never touches the Plan posture.
func (s *Session) SetMode(ctx context.Context, mode string) error {
	md, err := agent.ParseMode(mode)
	if err != nil {
		return errorf(CodeInvalidParams, "%v", err)
	}
	if err := s.commitRow(ctx, func(r *store.Session) { r.Mode = string(md) }); err != nil {
		return err
	}
	s.changed()
	return nil
}

// EnterPlan turns Plan on (a no-op if it is on). Entering starts a new Plan
// episode, which re-arms the full reminder template.
func (s *Session) EnterPlan(ctx context.Context) error {
	s.mu.Lock()
	if s.row.Plan {
		s.mu.Unlock()
		return nil
	}
	if err := s.goal.PlanRefusalLocked(); err != nil {
		s.mu.Unlock()
		return refused(err)
	}
	episode := s.row.PlanEpisode + 1
	s.mu.Unlock()
	if err := s.commitRow(ctx, func(r *store.Session) { r.Plan, r.PlanEpisode = true, episode }); err != nil {
		return err
	}
	s.changed()
	return nil
}

// ExitPlan turns Plan off. Only the person reaches this: no tool does.
func (s *Session) ExitPlan(ctx context.Context) error {
	s.mu.Lock()
	if !s.row.Plan {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	if err := s.commitRow(ctx, func(r *store.Session) { r.Plan = false }); err != nil {
		return err
	}
	s.card.Demote(ctx, handoff.OutcomeCancelled) // leaving Plan abandons the pending proposal
	s.changed()
	return nil
}

// PlanStatus is the answer to `/plan status` ([command.Status]).
type PlanStatus = command.PlanStatus

// Status reports posture, proposal state and the blocked-call count.
func (s *Session) Status() PlanStatus {
	in := s.Info()
	st := PlanStatus{Plan: in.Plan, Mode: in.Mode, ProposalStatus: in.ProposalStatus, ProposalTitle: in.ProposalTitle, BlockedTotal: in.BlockedTotal,
		RefusedTotal: in.RefusedTotal, AgentConfinement: agent.AgentConfinement(s.m.Engine())}
	if outs, err := s.m.st.ApprovalOutcomes(context.Background(), s.id); err == nil && len(outs) > 0 {
		st.LastApproval = outs[len(outs)-1].Outcome
	}
	st.Confinement, _ = agent.ShellConfinement(s.m.shell)
	return command.Status(st, s.TrackedPlan())
}

// SubmitResult says what happened to submitted text.
type SubmitResult struct {
	Queued  bool   `json:"queued"`
	Command string `json:"command,omitempty"`
}

// Submit handles text typed by the person: `/plan` commands act on the
// posture; anything else is a prompt, run now or queued behind the running
// turn. Matching is on the exact first token, so prose about planning never
// changes the posture.
func (s *Session) Submit(ctx context.Context, text string) (SubmitResult, error) {
	if err := CheckPrompt(text); err != nil {
		return SubmitResult{}, err
	}
	text = s.m.redact.String(text) // a pasted key goes no further: title, transcript, Goal, queue
	if fork := s.Info().ForkedTo; fork != "" {
		return SubmitResult{}, errForked(fork)
	}
	switch c := command.Parse(text); c.Kind {
	case command.Plan:
		return s.planCommand(ctx, c.Arg)
	case command.Compact:
		return SubmitResult{Command: c.Kind.String()}, s.Compact()
	case command.Review:
		r, err := s.Report(ctx)
		if err == nil {
			s.emit(event.Notice{Message: "Implementation report: " + r.Summary})
		}
		return SubmitResult{Command: c.Kind.String()}, err
	case command.Goal:
		msg, err := s.GoalCommand(ctx, c.Arg)
		if err == nil && msg != "" {
			s.emit(event.Notice{Message: msg})
		}
		return SubmitResult{Command: c.Kind.String()}, err
	}
	if s.Info().Plan {
		// An accepted follow-up in Plan demotes the proposal to a draft.
		s.card.Demote(ctx, handoff.OutcomeDemoted)
	}
	queued, err := s.prompt(ctx, text, false)
	return SubmitResult{Queued: queued}, err
}

// Queue adds text to the pending-input queue without demoting a pending
// proposal: it runs after the running turn, or after the kickoff when the
// plan is accepted.
func (s *Session) Queue(text string) (SubmitResult, error) { return s.queueText(text, false) }

// QueueGuest is [Session.Queue] for a prompt sent from a share link: its
// turn is unattended, so a write to a protected path is refused rather
// than asked ([agent.Gate.Unattended]). It is stored in the durable queue
// with its guest mark, so it survives a restart and its turn stays
// unattended after one.
func (s *Session) QueueGuest(text string) (SubmitResult, error) { return s.queueText(text, true) }

// queueText is [Session.Queue] for a person (guest false) or a share link.
func (s *Session) queueText(text string, guest bool) (SubmitResult, error) {
	if err := CheckPrompt(text); err != nil {
		return SubmitResult{}, err
	}
	queued, err := s.prompt(context.Background(), s.m.redact.String(text), guest)
	return SubmitResult{Queued: queued}, err
}

// planCommand carries out `/plan arg` ([command.ParsePlan]).
func (s *Session) planCommand(ctx context.Context, arg string) (SubmitResult, error) {
	res := SubmitResult{Command: command.Plan.String()}
	var err error
	switch command.ParsePlan(arg) {
	case command.PlanToggle:
		if s.Info().Plan {
			err = s.ExitPlan(ctx)
		} else {
			err = s.EnterPlan(ctx)
		}
	case command.PlanOn:
		err = s.EnterPlan(ctx)
	case command.PlanOff:
		err = s.ExitPlan(ctx)
	case command.PlanShow:
		s.emit(event.Notice{Message: s.Status().Text})
	case command.PlanParked:
		s.emit(event.Notice{Message: s.m.parkedText(ctx, s.id)})
	case command.PlanPrompt:
		if err = s.EnterPlan(ctx); err == nil {
			res.Queued, err = s.prompt(ctx, arg, false)
		}
	}
	return res, err
}

// prompt runs text, from a person (guest false) or a share link's guest,
// as a turn now, or queues it behind the running turn or the workflow
// that owns the session. It is durable first: a follow-up waiting in the
// queue survives a restart (with its guest mark), and leaves the queue in
// the transaction that stores it as the turn's prompt.
func (s *Session) prompt(ctx context.Context, text string, guest bool) (queued bool, err error) {
	if fork := s.Info().ForkedTo; fork != "" {
		// As [Session.Submit]: the implementation moved to the fork, so no
		// prompt (a queued one, a share link's) runs here any more.
		return false, errForked(fork)
	}
	if err := s.queueRoom(); err != nil {
		return false, err // nothing stored
	}
	id, err := s.m.st.EnqueueInput(ctx, s.id, store.QueuedInput{Text: text, Display: text, Guest: guest})
	if err != nil {
		return false, fmt.Errorf("could not queue the prompt: %w", err)
	}
	if err := s.queueRoom(); err != nil { // again: others may have queued meanwhile
		s.turns.DropQueued(id)
		return false, err
	}
	return s.enqueue(turn.Req{Text: text, Display: text, QueueID: id, Guest: guest}), nil
}

// errForked refuses a prompt in a planning session that handed over to
// its Worktree fork.
func errForked(fork string) error {
	return &Error{Code: CodeSessionEnded, Message: "this planning session continued in its Worktree fork " + fork + "; open that session"}
}

// Limits on a person's input, the same for every surface.
const (
	// MaxPromptBytes bounds one prompt.
	MaxPromptBytes = 1 << 20
	// MaxQueued bounds the prompts waiting in a session's pending-input
	// queue; the next one is refused with [CodeQueueFull].
	MaxQueued = 16
)

// CheckPrompt refuses an empty or oversized prompt ([CodeInvalidParams],
// [CodePromptTooLarge]), the same on every surface.
func CheckPrompt(text string) error {
	if strings.TrimSpace(text) == "" {
		return errorf(CodeInvalidParams, "empty prompt")
	}
	if len(text) > MaxPromptBytes {
		return errorf(CodePromptTooLarge, "the prompt is %d bytes; the limit is %d (1 MiB): attach large text as a file instead", len(text), MaxPromptBytes)
	}
	return nil
}

// queueRoom refuses when [MaxQueued] prompts already wait.
func (s *Session) queueRoom() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted {
		return errorf(CodeBusy, "the session is being deleted")
	}
	if n := len(s.queue); n >= MaxQueued {
		return errorf(CodeQueueFull, "%d prompts are already waiting in this session's queue (the limit is %d); wait for them to run", n, MaxQueued)
	}
	return nil
}

func (s *Session) enqueue(req turn.Req) (queued bool) {
	s.mu.Lock()
	s.queue = append(s.queue, req)
	n := len(s.queue)
	started := s.kickLocked()
	s.mu.Unlock()
	if !started {
		s.emit(event.Queued{Text: req.Display, Queued: n})
		s.changed() // pending input now blocks a Worktree fork
		return true
	}
	s.changed()
	return false
}

// nextLocked picks the next turn when the session is free. The order
// (kickoff, queued input, continuation) is [goal.Decide]'s; the session only
// executes it (a pause it decides is stored by the Goal's runner).
func (s *Session) nextLocked() (req turn.Req, ok bool) {
	if s.m.isClosed() {
		return turn.Req{}, false
	}
	for {
		d := goal.Decide(s.goal.GoalLocked(), s.goal.SituationLocked(goal.Situation{Busy: s.busy,
			InteractionPending: s.card.PendingLocked(), QueuedReady: len(s.queue)}))
		switch d.Action {
		case goal.RunQueued:
			req, s.queue = s.queue[0], s.queue[1:]
			return req, true
		case goal.Kickoff:
			return goalTurn(s.goal.TurnLocked(true)), true
		case goal.Continue:
			return goalTurn(s.goal.TurnLocked(false)), true
		case goal.Pause:
			s.goal.DecidedPauseLocked(d.Reason) // and decide again: queued input may run now
		default:
			return turn.Req{}, false
		}
	}
}

// kickLocked starts the queue runner if input is ready. Caller holds s.mu.
func (s *Session) kickLocked() bool {
	req, ok := s.nextLocked()
	if !ok {
		return false
	}
	s.busy = true
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.m.turns.Add(1)
	go s.runQueue(ctx, cancel, req)
	return true
}

// kick starts queued input if nothing holds it.
func (s *Session) kick() {
	s.mu.Lock()
	started := s.kickLocked()
	s.mu.Unlock()
	if started {
		s.changed()
	}
}

// runQueue runs req, then hands the session to what comes next
// ([Session.kickLocked] starts it as the next runner before this one
// ends, so the session is never seen free between two turns).
func (s *Session) runQueue(ctx context.Context, cancel context.CancelFunc, req turn.Req) {
	defer s.m.turns.Done()
	err := s.turns.Run(ctx, req)
	cancel()
	s.mu.Lock()
	s.busy, s.cancel = false, nil
	var kept *turn.PromptKept
	if errors.As(err, &kept) {
		// Still queued in the store: queued in memory too, first,
		// and not tried again until the next kick.
		s.queue = append([]turn.Req{req}, s.queue...)
		s.mu.Unlock()
		s.changed()
		return
	}
	started := s.kickLocked()
	s.mu.Unlock()
	if !started {
		s.changed() // not busy: the card's blockers too
	}
}

// own runs fn as the session's root workflow (handoff, retry, compaction):
// queued input waits until it returns. It fails with busy if something else
// owns it. The function fn returns, if any, runs once the session is free
// again, so what it reports (a failure, say) is never answered with "busy".
func (s *Session) own(fn func(ctx context.Context) (after func())) error {
	s.mu.Lock()
	if s.busy {
		s.mu.Unlock()
		return errorf(CodeBusy, "the session is busy; wait for the running turn or interrupt it")
	}
	if s.row.ForkedTo != "" {
		fork := s.row.ForkedTo
		s.mu.Unlock()
		return &Error{Code: CodeSessionEnded, Message: "this planning session continued in its Worktree fork " + fork}
	}
	s.busy = true
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.mu.Unlock()
	s.m.turns.Add(1)
	s.changed()
	go func() {
		defer s.m.turns.Done()
		after := fn(ctx)
		cancel()
		s.mu.Lock()
		s.busy, s.cancel = false, nil
		s.mu.Unlock()
		s.changed()
		if after != nil {
			after()
		}
		s.kick()
	}()
	return nil
}

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// Interrupt cancels the running turn and drops queued prompts. A pending
// approval card closes as interrupted, its proposal a draft: an
// interruption is never an approval.
func (s *Session) Interrupt() {
	dropped := s.stopTurn()
	s.card.Interrupt(context.Background(), true)
	if dropped > 0 {
		s.changed() // the queue emptied, even with no turn to end
	}
}

// stopTurn cancels the running turn and drops queued prompts, returning
// how many it dropped.
func (s *Session) stopTurn() (dropped int) {
	s.mu.Lock()
	cancel := s.cancel
	dropped = len(s.queue)
	s.queue = nil
	s.mu.Unlock()
	if dropped > 0 {
		s.turns.DropQueued() // all of them
	}
	if cancel != nil {
		cancel()
		s.emit(event.Notice{Message: fmt.Sprintf("interrupted (%d queued prompt(s) dropped)", dropped)})
	}
	return dropped
}

// stopForShutdown cancels the running turn as the process stops. Queued
// prompts stay queued, in memory and in the store: the next start runs
// them through the one recovery path, as after a crash.
func (s *Session) stopForShutdown() {
	s.mu.Lock()
	cancel, kept := s.cancel, len(s.queue)
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		s.emit(event.Notice{Message: fmt.Sprintf("interrupted: planbridge is stopping (%d queued prompt(s) stay queued for the next start)", kept)})
	}
}

// Wait blocks until no turn is running (for tests and the demo).
func (s *Session) Wait(ctx context.Context) error {
	for {
		s.mu.Lock()
		busy := s.busy
		s.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// rowSnapshot is the session row a transcript commit writes.
func (s *Session) rowSnapshot() store.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.row
}

// segmentCommitted follows a committed segment rotation in the row.
func (s *Session) segmentCommitted(seg int64) {
	s.mu.Lock()
	s.row.Segment = seg
	s.mu.Unlock()
}

// applyRow follows a committed turn step's change of the row
// ([transcript.Config.Apply]).
func (s *Session) applyRow(set func(*store.Session)) {
	s.mu.Lock()
	set(&s.row)
	s.mu.Unlock()
}
