package turn

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/proposal"
	"planbridge/review"
)

// errDisk is what a failing commit returns (a full disk).
var errDisk = fmt.Errorf("commit: %w", syscall.ENOSPC)

// fakeHost is the session's side: its row and proposal under mu (the
// aggregate's lock, handed to the runner), and a record of every hook.
type fakeHost struct {
	t        *testing.T
	mu       sync.Mutex // the aggregate's lock; guards row and proposal
	row      store.Session
	proposal string
	engine   agent.Engine
	models   handoff.ModelConfig
	rowFail  error  // CommitRow fails with it
	drop     string // AdmitGoal drops the turn for this reason
	retry    bool   // BookGoal asks for the turn again
	plan     *review.TrackedPlan
	asker    agent.Asker

	rec        sync.Mutex // guards what follows
	booked     []goal.Turn
	unsent     []goal.Turn
	requeued   []Req
	responses  []*proposal.Result
	paused     []string
	reports    int
	failpoints []string
	extended   []string
	edited     []string // calls whose edits were recorded
}

func (h *fakeHost) PostureLocked() Posture {
	if h.mu.TryLock() {
		h.mu.Unlock()
		h.t.Error("PostureLocked called without the aggregate's lock")
	}
	p := Posture{Plan: h.row.Plan, FullReminder: h.row.TemplateEpisode != h.row.PlanEpisode, PlanEpisode: h.row.PlanEpisode, Title: h.row.Title,
		Mode: h.row.Mode, Workspace: h.row.Workspace, Segment: h.row.Segment, Parent: h.row.ParentID}
	if h.proposal != "" {
		p.Proposal, p.ProposalPath = h.proposal, "work://plans/current.md"
	}
	return p
}

func (h *fakeHost) Engine() agent.Engine             { return h.engine }
func (h *fakeHost) ModelConfig() handoff.ModelConfig { return h.models }
func (h *fakeHost) Tools() *agent.Registry           { return agent.NewRegistry() }
func (h *fakeHost) Asker() agent.Asker               { return h.asker }
func (h *fakeHost) Binding() Tracking                { return fakeTracking{h} }
func (h *fakeHost) Plan() *review.TrackedPlan        { return h.plan }

func (h *fakeHost) CommitRow(ctx context.Context, set func(*store.Session)) error {
	if h.rowFail != nil {
		return h.rowFail
	}
	h.mu.Lock()
	set(&h.row)
	h.mu.Unlock()
	return nil
}

func (h *fakeHost) RequeueFirst(req Req) {
	h.rec.Lock()
	h.requeued = append(h.requeued, req)
	h.rec.Unlock()
}

func (h *fakeHost) Response(res *proposal.Result) {
	h.rec.Lock()
	h.responses = append(h.responses, res)
	h.rec.Unlock()
}

func (h *fakeHost) AdmitGoal(req *Req) string { return h.drop }

func (h *fakeHost) BookGoal(ctx context.Context, t goal.Turn, usage agent.Usage, wall time.Duration, err error) bool {
	h.rec.Lock()
	h.booked = append(h.booked, t)
	h.rec.Unlock()
	return h.retry
}

func (h *fakeHost) UnsentGoal(ctx context.Context, t goal.Turn, err error) {
	if err == nil {
		h.t.Error("UnsentGoal without the error")
	}
	h.rec.Lock()
	h.unsent = append(h.unsent, t)
	h.rec.Unlock()
}

func (h *fakeHost) Edited(call agent.ToolCall) {
	h.rec.Lock()
	h.edited = append(h.edited, call.ID)
	h.rec.Unlock()
}

func (h *fakeHost) PauseForScope(reason string) {
	h.rec.Lock()
	h.paused = append(h.paused, reason)
	h.rec.Unlock()
}

func (h *fakeHost) ReportIfEnded(ctx context.Context) {
	h.rec.Lock()
	h.reports++
	h.rec.Unlock()
}

func (h *fakeHost) Failpoint(name string) {
	h.rec.Lock()
	h.failpoints = append(h.failpoints, name)
	h.rec.Unlock()
}

func (h *fakeHost) snapshot() store.Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.row
}

type fakeTracking struct{ h *fakeHost }

func (fakeTracking) Scope(bool) agent.WriteScope                    { return nil }
func (fakeTracking) Watcher(bool, bool) agent.Watcher               { return nil }
func (fakeTracking) LogTool(call agent.ToolCall, ok bool, _ string) {}
func (f fakeTracking) Extend(call agent.ToolCall) {
	f.h.rec.Lock()
	f.h.extended = append(f.h.extended, call.ID)
	f.h.rec.Unlock()
}

// committed is one turn step the fake transcript committed.
type committed struct {
	op   string
	msgs []agent.Message
	step store.TurnStep
}

// fakeTranscript commits in memory, like the real one: the row (set
// applied) with the step, the host's row changed only once committed. fail
// decides each attempt (n counts attempts from 0); a cancelled context
// fails the commit as the store does.
type fakeTranscript struct {
	host *fakeHost
	fail func(op string, n int) error

	mu      sync.Mutex
	msgs    []agent.Message
	tried   []string
	steps   []committed
	rotated []string
}

func (t *fakeTranscript) Messages() []agent.Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.msgs[:len(t.msgs):len(t.msgs)]
}

func (t *fakeTranscript) AppendRow(ctx context.Context, op string, msgs []agent.Message, set func(*store.Session), with func(*store.TurnStep)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tried = append(t.tried, op)
	if err := ctx.Err(); err != nil {
		return err
	}
	if t.fail != nil {
		if err := t.fail(op, len(t.tried)-1); err != nil {
			return err
		}
	}
	row := t.host.snapshot()
	if set != nil {
		set(&row)
	}
	st := store.TurnStep{Session: row}
	if with != nil {
		with(&st)
	}
	t.steps = append(t.steps, committed{op, msgs, st})
	t.msgs = append(t.msgs, msgs...)
	if set != nil {
		t.host.mu.Lock()
		set(&t.host.row)
		t.host.mu.Unlock()
	}
	return nil
}

func (t *fakeTranscript) Rotate(ctx context.Context, seg int64, material, record string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tried = append(t.tried, "segment")
	if t.fail != nil {
		if err := t.fail("segment", len(t.tried)-1); err != nil {
			return err
		}
	}
	t.rotated = append(t.rotated, material)
	t.msgs = []agent.Message{{Role: agent.RoleUser, Content: material}}
	t.host.mu.Lock()
	t.host.row.Segment = seg
	t.host.mu.Unlock()
	return nil
}

// fakeEvents records the events emitted, in order.
type fakeEvents struct {
	mu  sync.Mutex
	evs []event.Data
}

func (e *fakeEvents) Emit(d event.Data) {
	e.mu.Lock()
	e.evs = append(e.evs, d)
	e.mu.Unlock()
}

func (e *fakeEvents) Text(delta string) { e.Emit(event.Text{Delta: delta}) }

// kinds is the kinds emitted, text deltas joined into one.
func (e *fakeEvents) kinds() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ks []string
	for _, d := range e.evs {
		if k := d.Kind(); k != "text" || len(ks) == 0 || ks[len(ks)-1] != "text" {
			ks = append(ks, k)
		}
	}
	return strings.Join(ks, " ")
}

// errors is the messages of the error events.
func (e *fakeEvents) errors() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, d := range e.evs {
		if x, ok := d.(event.Error); ok {
			out = append(out, x.Message)
		}
	}
	return out
}

func (e *fakeEvents) turnEnd() (event.TurnEnd, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, d := range e.evs {
		if x, ok := d.(event.TurnEnd); ok {
			return x, true
		}
	}
	return event.TurnEnd{}, false
}

// fakeStore is the store's queue.
type fakeStore struct {
	mu      sync.Mutex
	dropErr error
	dropped []int64
}

func (s *fakeStore) DropQueuedInput(ctx context.Context, session string, ids ...int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropErr != nil {
		return s.dropErr
	}
	s.dropped = append(s.dropped, ids...)
	return nil
}

// scriptEngine answers each request with the next reply; a reply "block"
// waits for cancellation, "transient" fails transiently.
type scriptEngine struct {
	mu      sync.Mutex
	replies []string
	reqs    []agent.Request
	onBlock func() // called as a "block" reply starts waiting
}

func (e *scriptEngine) Name() string { return "script-fake" }

func (e *scriptEngine) Stream(ctx context.Context, req agent.Request, onText func(string)) (agent.Response, error) {
	e.mu.Lock()
	e.reqs = append(e.reqs, req)
	reply := "done"
	if len(e.replies) > 0 {
		reply, e.replies = e.replies[0], e.replies[1:]
	}
	e.mu.Unlock()
	switch reply {
	case "block":
		if e.onBlock != nil {
			e.onBlock()
		}
		<-ctx.Done()
		return agent.Response{}, ctx.Err()
	case "transient":
		return agent.Response{}, fmt.Errorf("connection reset: %w", agent.ErrTransient)
	}
	onText(reply)
	return agent.Response{Text: reply, Usage: agent.Usage{InputTokens: 10, OutputTokens: 2}}, nil
}

func (e *scriptEngine) requests() []agent.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]agent.Request(nil), e.reqs...)
}

// rig is one runner over fakes.
type rig struct {
	host   *fakeHost
	tr     *fakeTranscript
	events *fakeEvents
	st     *fakeStore
	eng    *scriptEngine
	r      *Runner
}

func newRig(t *testing.T, row store.Session) *rig {
	t.Helper()
	if row.ID == "" {
		row.ID = "s1"
	}
	if row.Workspace == "" {
		row.Workspace = t.TempDir()
	}
	if row.Mode == "" {
		row.Mode = "ask"
	}
	g := &rig{host: &fakeHost{t: t, row: row}, events: &fakeEvents{}, st: &fakeStore{}, eng: &scriptEngine{}}
	g.host.engine = g.eng
	g.tr = &fakeTranscript{host: g.host}
	g.r = New(Config{Session: row.ID, Lock: &g.host.mu, Host: g.host, Transcript: g.tr, Events: g.events, Store: g.st,
		LastTurn: 4, WorkDir: t.TempDir(), UserDir: func() string { return t.TempDir() },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return g
}

// failFrom fails every commit of op from its nth attempt of that op on (n
// from 0); other ops commit.
func failFrom(op string, n int) func(string, int) error {
	seen := 0
	return func(o string, _ int) error {
		if o != op {
			return nil
		}
		seen++
		if seen > n {
			return errDisk
		}
		return nil
	}
}
