package interaction

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/review"
)

var errDiskFull = errors.New("disk full")

// fakeStore is the card's store in memory. Its proposal commits fail from
// the failFrom-th one on (1-based; 0 never), like a disk filling up;
// block, when set, holds the next proposal commit until it is closed.
type fakeStore struct {
	mu       sync.Mutex
	row      *store.Proposal
	outcomes []store.ApprovalOutcome
	puts     int // proposal commits tried
	failFrom int
	// failOutcomes makes outcome commits fail.
	failOutcomes bool
	block        chan struct{}
	entered      chan struct{} // told when a commit is held by block
}

func (f *fakeStore) GetProposal(ctx context.Context, session string) (store.Proposal, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.row == nil {
		return store.Proposal{}, store.ErrNotFound
	}
	return *f.row, nil
}

func (f *fakeStore) PutProposal(ctx context.Context, p store.Proposal) error {
	f.mu.Lock()
	block, entered := f.block, f.entered
	f.block = nil // one commit is held
	f.mu.Unlock()
	if block != nil {
		entered <- struct{}{}
		<-block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.puts++
	if f.failFrom > 0 && f.puts >= f.failFrom {
		return errDiskFull
	}
	f.row = &p
	return nil
}

func (f *fakeStore) PutApprovalOutcome(ctx context.Context, o store.ApprovalOutcome) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failOutcomes {
		return errDiskFull
	}
	for _, e := range f.outcomes {
		if e.Attempt == o.Attempt {
			return nil // the first outcome of an attempt is kept
		}
	}
	f.outcomes = append(f.outcomes, o)
	return nil
}

func (f *fakeStore) ApprovalOutcomes(ctx context.Context, session string) ([]store.ApprovalOutcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.ApprovalOutcome(nil), f.outcomes...), nil
}

func (f *fakeStore) EditedFiles(ctx context.Context, session string) ([]string, error) {
	return nil, nil
}

func (f *fakeStore) stored() (store.Proposal, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.row == nil {
		return store.Proposal{}, false
	}
	return *f.row, true
}

func (f *fakeStore) fail(from int) {
	f.mu.Lock()
	f.failFrom = from
	f.mu.Unlock()
}

func (f *fakeStore) lastOutcome() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.outcomes) == 0 {
		return ""
	}
	return f.outcomes[len(f.outcomes)-1].Outcome
}

// fakeHost is the session around the card. It checks the locking
// contract: …Locked methods run with the aggregate lock held, the others
// without it.
type fakeHost struct {
	t    *testing.T
	lock *sync.Mutex

	workspace string
	loose     bool             // goroutines race: the lock may be another's
	onChanged func()           // called on every Changed
	onEmit    func(event.Data) // called on every Emit

	mu       sync.Mutex
	plan     bool
	closed   bool
	events   []event.Data
	changed  int
	kicks    int
	enqueued []string
}

func (h *fakeHost) held(name string) {
	if h.lock.TryLock() {
		h.lock.Unlock()
		h.t.Errorf("%s called without the aggregate lock", name)
	}
}

// free checks the aggregate lock is not held (by this goroutine: the
// tests call the card from one goroutine at a time, but for the race).
func (h *fakeHost) free(name string) {
	if h.loose {
		return
	}
	if !h.lock.TryLock() {
		h.t.Errorf("%s called with the aggregate lock held", name)
		return
	}
	h.lock.Unlock()
}

func (h *fakeHost) PlanLocked() bool { h.held("PlanLocked"); return h.plan }
func (h *fakeHost) DefaultsLocked() handoff.Selection {
	h.held("DefaultsLocked")
	return handoff.Defaults("ask", 0, handoff.Policy{})
}
func (h *fakeHost) CardLocked() ([]handoff.Model, handoff.ForkState, string) {
	h.held("CardLocked")
	return nil, handoff.ForkState{}, h.workspace
}
func (h *fakeHost) Timeout() time.Duration { h.held("Timeout"); return 0 }
func (h *fakeHost) Closed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}
func (h *fakeHost) Emit(ev event.Data) {
	h.free("Emit")
	if h.onEmit != nil {
		h.onEmit(ev)
	}
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
}
func (h *fakeHost) Changed() {
	h.free("Changed")
	if h.onChanged != nil {
		h.onChanged()
	}
	h.mu.Lock()
	h.changed++
	h.mu.Unlock()
}
func (h *fakeHost) Kick() {
	h.free("Kick")
	h.mu.Lock()
	h.kicks++
	h.mu.Unlock()
}
func (h *fakeHost) Enqueue(prompt, display string) {
	h.free("Enqueue")
	h.mu.Lock()
	h.enqueued = append(h.enqueued, prompt)
	h.mu.Unlock()
}

// kinds lists the kinds of the events emitted so far, and forgets them.
func (h *fakeHost) take() []event.Data {
	h.mu.Lock()
	defer h.mu.Unlock()
	evs := h.events
	h.events = nil
	return evs
}

func kinds(evs []event.Data) string {
	var k []string
	for _, e := range evs {
		k = append(k, e.Kind())
	}
	return strings.Join(k, ",")
}

// fakeTracker keeps versions and comments in memory.
type fakeTracker struct {
	failComments bool
	failVersions bool
	mu           sync.Mutex
	versions     []string
	comments     map[string][]review.Comment
}

func (f *fakeTracker) RecordVersion(hash, body string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failVersions {
		return errDiskFull
	}
	f.versions = append(f.versions, hash)
	return nil
}
func (f *fakeTracker) SaveComments(hash string, comments []review.Comment) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failComments {
		return errDiskFull
	}
	if f.comments == nil {
		f.comments = map[string][]review.Comment{}
	}
	f.comments[hash] = append(f.comments[hash], comments...)
	return nil
}
func (f *fakeTracker) Warnings(hash, body, workspace string) []review.Warning { return nil }
func (f *fakeTracker) Card(hash, body string) review.VersionCard {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, h := range f.versions {
		if h == hash {
			return review.VersionCard{Version: i + 1, Revisions: i}
		}
	}
	return review.VersionCard{}
}
func (f *fakeTracker) CardScope(hash, body string) []string { return []string{"x.go"} }
func (f *fakeTracker) ChecksHint(hash string) string        { return "" }

// rig is a card over fakes, in Plan.
type rig struct {
	t     *testing.T
	ctx   context.Context
	lock  *sync.Mutex
	st    *fakeStore
	host  *fakeHost
	track *fakeTracker
	card  *Card
	dir   string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	lock := &sync.Mutex{}
	r := &rig{t: t, ctx: context.Background(), lock: lock, st: &fakeStore{}, host: &fakeHost{t: t, lock: lock, plan: true, workspace: t.TempDir()},
		track: &fakeTracker{}, dir: t.TempDir()}
	r.card = r.open()
	return r
}

// open is a card over the rig's store and work directory (a restart
// opens a second one).
func (r *rig) open() *Card {
	return New(Config{Session: "s-1", WorkDir: r.dir, Lock: r.lock, Store: r.st, Host: r.host, Tracker: r.track,
		Mask: func(s string) string { return strings.ReplaceAll(s, "sk-secret", "[redacted]") }, MaxFeedback: 1 << 10,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

const planA = "# Fix the bug\n\n## Steps\n1. Edit x.go\n"

// proposed publishes a plan and returns the card's attempt.
func (r *rig) proposed(body string) string {
	r.t.Helper()
	if err := r.card.Publish(r.ctx, "Fix the bug", body, false); err != nil {
		r.t.Fatal(err)
	}
	a := r.attempt()
	if a == "" {
		r.t.Fatal("no card after the proposal")
	}
	r.host.take()
	return a
}

func (r *rig) attempt() string {
	r.lock.Lock()
	defer r.lock.Unlock()
	return r.card.PresentationLocked().Attempt
}

func (r *rig) memory() (store.Proposal, bool) {
	r.lock.Lock()
	defer r.lock.Unlock()
	return r.card.ProposalLocked()
}

// same fails unless the proposal in memory is the stored one.
func (r *rig) same(step string) {
	r.t.Helper()
	mem, okm := r.memory()
	row, oks := r.st.stored()
	if okm != oks || okm && (mem.Status != row.Status || mem.Hash != row.Hash || mem.Selection != row.Selection ||
		mem.Rejections != row.Rejections || mem.PersonEdited != row.PersonEdited) {
		r.t.Errorf("%s: memory %+v (%v) is not the store's %+v (%v)", step, mem, okm, row, oks)
	}
	// Nothing shown that is not stored: a pending card's selection is
	// its stored one, or the defaults when none is stored.
	if a := r.attempt(); a != "" && oks && row.Selection != "" {
		if got := r.card.View().Selection.Stored(); got != row.Selection {
			r.t.Errorf("%s: the card shows %s, the store holds %s", step, got, row.Selection)
		}
	}
}

func code(err error) string {
	if r, ok := handoff.AsRefusal(err); ok {
		return r.Code
	}
	if err != nil {
		return fmt.Sprintf("error(%v)", err)
	}
	return ""
}
