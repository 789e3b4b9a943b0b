package handoffport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/internal/tracking"
	"planbridge/internal/turn"
	"planbridge/proposal"
	"planbridge/review"
)

// lock is the aggregate's lock as the fakes see it: every method named
// …Locked checks it is held, every other Host method that it is not.
type lock struct {
	mu   sync.Mutex
	held atomic.Bool
}

func (l *lock) Lock()   { l.mu.Lock(); l.held.Store(true) }
func (l *lock) Unlock() { l.held.Store(false); l.mu.Unlock() }

// fakeStore counts its commits and fails every named operation from the
// failFrom-th on (0: never) with ENOSPC, as a full disk does.
type fakeStore struct {
	t        *testing.T
	dir      string
	calls    []string
	failFrom int
	record   string // the retry record ("": none)
	parked   map[string]store.ParkedPlan
	edited   []string
	records  map[string]string // other sessions' retry records
	sessions map[string]bool   // other sessions that exist
	shared   int
	readErr  error // every read of a retry record fails with it

	acceptance *store.Acceptance
	park       *store.Park
	fork       *store.ForkSession
	handOver   *store.HandOver
	segment    *store.Segment
}

func (f *fakeStore) op(name string) error {
	f.calls = append(f.calls, name)
	if f.failFrom > 0 && len(f.calls) >= f.failFrom {
		return fmt.Errorf("%s: %w", name, syscall.ENOSPC)
	}
	return nil
}

func (f *fakeStore) Dir() string { return f.dir }
func (f *fakeStore) PutRetryRecord(ctx context.Context, session, data string) error {
	if err := f.op("PutRetryRecord"); err != nil {
		return err
	}
	f.record = data
	return nil
}

func (f *fakeStore) GetRetryRecord(ctx context.Context, session string) (string, error) {
	if f.readErr != nil {
		return "", f.readErr
	}
	if session != "s-1" {
		if r, ok := f.records[session]; ok {
			return r, nil
		}
		return "", store.ErrNotFound
	}
	if f.record == "" {
		return "", store.ErrNotFound
	}
	return f.record, nil
}

func (f *fakeStore) CommitSegment(ctx context.Context, g store.Segment) error {
	if err := f.op("CommitSegment"); err != nil {
		return err
	}
	f.segment = &g
	return nil
}

func (f *fakeStore) CommitAcceptance(ctx context.Context, a store.Acceptance) error {
	if err := f.op("CommitAcceptance"); err != nil {
		return err
	}
	if a.Parked != "" {
		p := f.parked[a.Parked]
		if !p.StartedAt.IsZero() {
			return store.ErrAlreadyStarted
		}
		p.StartedLocation = a.ParkedLocation
		f.parked[a.Parked] = p
	}
	f.acceptance, f.record = &a, a.Record
	return nil
}

func (f *fakeStore) CommitPark(ctx context.Context, p store.Park) error {
	if err := f.op("CommitPark"); err != nil {
		return err
	}
	f.park = &p
	return nil
}

func (f *fakeStore) CommitForkSession(ctx context.Context, fs store.ForkSession) error {
	if err := f.op("CommitForkSession"); err != nil {
		return err
	}
	f.fork, f.record = &fs, fs.SourceRecord
	return nil
}

func (f *fakeStore) CommitHandOver(ctx context.Context, h store.HandOver) error {
	if err := f.op("CommitHandOver"); err != nil {
		return err
	}
	f.handOver, f.record = &h, ""
	return nil
}

func (f *fakeStore) GetSession(ctx context.Context, id string) (store.Session, error) {
	if !f.sessions[id] {
		return store.Session{}, store.ErrNotFound
	}
	return store.Session{ID: id}, nil
}

func (f *fakeStore) LiveShareRooms(ctx context.Context, session string) (int, error) {
	return f.shared, nil
}

func (f *fakeStore) EditedFiles(ctx context.Context, session string) ([]string, error) {
	return f.edited, nil
}

func (f *fakeStore) ParkedPlans(ctx context.Context, session string, all bool) ([]store.ParkedPlan, error) {
	var out []store.ParkedPlan
	for _, p := range f.parked {
		out = append(out, p)
	}
	return out, nil
}

func (f *fakeStore) GetParkedPlan(ctx context.Context, id string) (store.ParkedPlan, error) {
	p, ok := f.parked[id]
	if !ok {
		return store.ParkedPlan{}, store.ErrNotFound
	}
	return p, nil
}

// fakeHost is the session: its row, busy, queue and the commit sequence
// (refused once gone, prepare under the lock, Done or Undo under it).
type fakeHost struct {
	t      *testing.T
	l      *lock
	row    store.Session
	busy   bool
	queued int
	gone   bool
	// onCommit runs before each commit's prepare (a delete racing it).
	onCommit func()
	events   []event.Data
	changed  int
	kicked   int
	born     []string
	points   []string
	owned    int
	opened   map[string]*fakeRecoverer
}

func (h *fakeHost) locked(name string) {
	h.t.Helper()
	if !h.l.held.Load() {
		h.t.Errorf("%s called without the aggregate's lock", name)
	}
}

func (h *fakeHost) unlocked(name string) {
	h.t.Helper()
	if h.l.held.Load() {
		h.t.Errorf("%s called with the aggregate's lock held", name)
	}
}

var errGone = &handoff.Refusal{Code: CodeNotFound, Message: "session was deleted"}

func (h *fakeHost) Commit(ctx context.Context, prepare func() (Change, error)) error {
	h.unlocked("Commit")
	return h.WhileLive(func() error {
		h.l.Lock()
		c, err := prepare()
		h.l.Unlock()
		if err != nil {
			return err
		}
		err = c.Commit(ctx)
		f := c.Undo
		if err == nil {
			f = c.Done
		}
		if f != nil {
			h.l.Lock()
			f()
			h.l.Unlock()
		}
		return err
	})
}

func (h *fakeHost) WhileLive(fn func() error) error {
	h.unlocked("WhileLive")
	if h.onCommit != nil {
		h.onCommit()
	}
	if h.gone {
		return errGone
	}
	return fn()
}

func (h *fakeHost) RowLocked() store.Session { h.locked("RowLocked"); return h.row }
func (h *fakeHost) SetRowLocked(set func(*store.Session)) {
	h.locked("SetRowLocked")
	set(&h.row)
}
func (h *fakeHost) BusyLocked() bool  { h.locked("BusyLocked"); return h.busy }
func (h *fakeHost) QueuedLocked() int { h.locked("QueuedLocked"); return h.queued }
func (h *fakeHost) ForkStateLocked() handoff.ForkState {
	h.locked("ForkStateLocked")
	return handoff.ForkState{Queued: h.queued, Busy: h.busy}
}
func (h *fakeHost) Emit(ev event.Data) { h.unlocked("Emit"); h.events = append(h.events, ev) }
func (h *fakeHost) Changed()           { h.unlocked("Changed"); h.changed++ }
func (h *fakeHost) Kick()              { h.unlocked("Kick"); h.kicked++ }

// Own runs fn at once, as the session's root workflow would.
func (h *fakeHost) Own(fn func(context.Context) func()) error {
	h.unlocked("Own")
	h.owned++
	if after := fn(context.Background()); after != nil {
		after()
	}
	return nil
}
func (h *fakeHost) Born(id string) { h.born = append(h.born, id) }
func (h *fakeHost) Open(ctx context.Context, id string) (Recoverer, error) {
	h.unlocked("Open")
	if r, ok := h.opened[id]; ok {
		return r, nil
	}
	return nil, errors.New("no session " + id)
}
func (h *fakeHost) CheckModel(name string) error                   { return nil }
func (h *fakeHost) ResumeGoal(ctx context.Context, s string) error { return nil }
func (h *fakeHost) ResumeImplementation(ctx context.Context) error { return nil }
func (h *fakeHost) Failpoint(name string)                          { h.points = append(h.points, name) }

type fakeRecoverer struct {
	id        string
	recovered int
}

func (r *fakeRecoverer) ID() string { return r.id }
func (r *fakeRecoverer) Recover(ctx context.Context) (handoff.Recovered, error) {
	r.recovered++
	return handoff.Recovered{}, nil
}

// fakeCard is one presented proposal.
type fakeCard struct {
	h       *fakeHost
	attempt string // the pending attempt ("": none)
	prop    store.Proposal
	sel     handoff.Selection
	body    string
	reopen  int
	outcome []string
}

func (c *fakeCard) CheckLocked(attempt string) error {
	c.h.locked("Card.CheckLocked")
	if c.attempt == "" || attempt != c.attempt {
		return &handoff.Refusal{Code: "stale_attempt", Message: "stale"}
	}
	return nil
}
func (c *fakeCard) CloseLocked() string {
	c.h.locked("Card.CloseLocked")
	a := c.attempt
	c.attempt = ""
	return a
}
func (c *fakeCard) ReopenLocked(attempt string) {
	c.h.locked("Card.ReopenLocked")
	c.attempt = attempt
	c.reopen++
}
func (c *fakeCard) ProposalLocked() (store.Proposal, bool) {
	c.h.locked("Card.ProposalLocked")
	return c.prop, c.prop.Hash != ""
}
func (c *fakeCard) SelectionLocked() handoff.Selection {
	c.h.locked("Card.SelectionLocked")
	return c.sel
}
func (c *fakeCard) SetLocked(p store.Proposal) { c.h.locked("Card.SetLocked"); c.prop = p }
func (c *fakeCard) PendingLocked() bool        { c.h.locked("Card.PendingLocked"); return c.attempt != "" }
func (c *fakeCard) Body(p store.Proposal) (string, bool, error) {
	c.h.unlocked("Card.Body")
	return c.body, false, nil
}
func (c *fakeCard) RecordOutcome(ctx context.Context, attempt, outcome, title, hash string) {
	c.h.unlocked("Card.RecordOutcome")
	c.outcome = append(c.outcome, outcome)
}

// fakeTrack is the tracking: a plan installed in memory, undone by the
// commit's failure.
type fakeTrack struct {
	h         *fakeHost
	plan      *review.TrackedPlan
	staged    int
	statuses  []string
	forgot    bool
	statusErr error
}

func (t *fakeTrack) StageBase(ctx context.Context, hash, artifact, title, body string) (string, error) {
	t.h.unlocked("Track.StageBase")
	t.staged++
	return "base-1", nil
}
func (t *fakeTrack) StartLocked(a review.Accepted) (mine, prev *review.TrackedPlan) {
	t.h.locked("Track.StartLocked")
	prev, t.plan = t.plan, &review.TrackedPlan{Title: a.Title, Hash: a.Hash, Status: review.ImplRunning}
	return t.plan, prev
}
func (t *fakeTrack) UndoLocked(mine, prev *review.TrackedPlan) {
	t.h.locked("Track.UndoLocked")
	if t.plan == mine {
		t.plan = prev
	}
}
func (t *fakeTrack) Row() review.Row {
	if t.plan == nil {
		return review.Row{}
	}
	return review.Row{Plan: t.plan.Title}
}
func (t *fakeTrack) BaseCommitted(base string) {}
func (t *fakeTrack) EmitSteps()                {}
func (t *fakeTrack) SetStatus(ctx context.Context, status, reason string) error {
	t.h.unlocked("Track.SetStatus")
	if t.statusErr != nil {
		return t.statusErr
	}
	t.statuses = append(t.statuses, status)
	return nil
}
func (t *fakeTrack) ForFork(ctx context.Context, fork, dir, rel, hash string) (tracking.Fork, error) {
	return tracking.Fork{Row: store.Tracking{Todos: "todos", Plan: "plan"}}, nil
}
func (t *fakeTrack) ForkCommitted(fork string, f tracking.Fork) {}
func (t *fakeTrack) Forget()                                    { t.h.locked("Track.Forget"); t.forgot = true }
func (t *fakeTrack) Plan() *review.TrackedPlan                  { return t.plan }
func (t *fakeTrack) Continue(ctx context.Context) error         { return nil }

type fakeGoal struct {
	h *fakeHost
	g *goal.Goal
}

func (g fakeGoal) Goal() *goal.Goal { g.h.unlocked("Goal.Goal"); return g.g }

func (g fakeGoal) Start(ctx context.Context, env handoff.Env, rec *handoff.Record) error { return nil }
func (g fakeGoal) Unfinished() (bool, string)                                            { return false, "" }
func (g fakeGoal) RecoveryLocked() (bool, bool) {
	g.h.locked("Goal.RecoveryLocked")
	return false, false
}

type fakeTurns struct {
	h    *fakeHost
	runs []turn.Req
}

func (t *fakeTurns) Run(ctx context.Context, req turn.Req) error {
	t.h.unlocked("Turns.Run")
	t.runs = append(t.runs, req)
	return nil
}
func (t *fakeTurns) Summarize(ctx context.Context, notice, system, input string) (string, error) {
	return "summary", nil
}

type fakeTr struct {
	rotated []int64
	failErr error
}

func (t *fakeTr) Messages() []agent.Message { return nil }
func (t *fakeTr) Next() int64               { return 7 }
func (t *fakeTr) Rotate(ctx context.Context, seg int64, material, record string) error {
	if t.failErr != nil {
		return t.failErr
	}
	t.rotated = append(t.rotated, seg)
	return nil
}

// world is one session's ports over fakes.
type world struct {
	p     *Ports
	l     *lock
	st    *fakeStore
	h     *fakeHost
	card  *fakeCard
	track *fakeTrack
	turns *fakeTurns
	tr    *fakeTr
}

const planBody = "# Tidy\n\n1. Do it.\n"

func newWorld(t *testing.T) *world {
	t.Helper()
	l := &lock{}
	dir := t.TempDir()
	h := &fakeHost{t: t, l: l, row: store.Session{ID: "s-1", Workspace: t.TempDir(), Plan: true, Segment: 1}, opened: map[string]*fakeRecoverer{}}
	hash := proposal.HashBody(planBody)
	w := &world{l: l, h: h, st: &fakeStore{t: t, dir: dir, parked: map[string]store.ParkedPlan{}}}
	w.card = &fakeCard{h: h, attempt: "a-1", sel: handoff.Defaults("ask", 0, handoff.Policy{}), body: planBody,
		prop: store.Proposal{SessionID: "s-1", Status: "proposed", Title: "Tidy", Hash: hash, Body: planBody}}
	w.track = &fakeTrack{h: h}
	w.turns = &fakeTurns{h: h}
	w.tr = &fakeTr{}
	n := 0
	w.p = New(Config{Session: "s-1", WorkDir: t.TempDir(), Lock: l, Store: w.st, Host: h, Card: w.card, Track: w.track,
		Goal: fakeGoal{h: h}, Turns: w.turns, Tr: w.tr, NewID: func(prefix string) string { n++; return fmt.Sprintf("%snew%d", prefix, n) }})
	return w
}
