package transcript

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"planbridge/internal/agent"
	"planbridge/internal/redact"
	"planbridge/internal/store"
)

var errDiskFull = errors.New("no space left on device")

// fakeStore is the store port: the committed rows, each commit recorded
// whole (one transaction), and a switch that fails commits as a full
// disk would.
type fakeStore struct {
	mu      sync.Mutex
	rows    []store.Message
	steps   []store.TurnStep
	segs    []store.Segment
	ops     []string
	fail    bool
	readErr error
}

func (f *fakeStore) Messages(context.Context, string) ([]store.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.Message(nil), f.rows...), f.readErr
}

func (f *fakeStore) add(ms []store.Message) error {
	for _, m := range ms {
		for _, r := range f.rows {
			if r.Idx == m.Idx {
				return fmt.Errorf("UNIQUE constraint failed: messages.idx %d", m.Idx)
			}
		}
	}
	f.rows = append(f.rows, ms...)
	return nil
}

func (f *fakeStore) CommitTurnStep(_ context.Context, op string, st store.TurnStep) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errDiskFull
	}
	if err := f.add(st.Messages); err != nil {
		return err
	}
	f.steps, f.ops = append(f.steps, st), append(f.ops, op)
	return nil
}

func (f *fakeStore) CommitSegment(_ context.Context, g store.Segment) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errDiskFull
	}
	if g.Message != nil {
		if err := f.add([]store.Message{*g.Message}); err != nil {
			return err
		}
	}
	f.segs = append(f.segs, g)
	return nil
}

// host is the session side: its row, and the segment it was told of.
type host struct {
	mu  sync.Mutex
	row store.Session
	// told is every segment OnSegment reported.
	told []int64
}

func (h *host) Row() store.Session { h.mu.Lock(); defer h.mu.Unlock(); return h.row }
func (h *host) OnSegment(seg int64) {
	h.mu.Lock()
	h.row.Segment = seg
	h.told = append(h.told, seg)
	h.mu.Unlock()
}

func open(t *testing.T, st *fakeStore, h *host, red Redactor) *Transcript {
	t.Helper()
	tr, err := Load(context.Background(), Config{Session: "s1", Segment: h.row.Segment, Store: st, Row: h.Row, OnSegment: h.OnSegment, Redact: red})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func contents(ms []agent.Message) string {
	var b []string
	for _, m := range ms {
		b = append(b, m.Role+":"+m.Content)
	}
	return strings.Join(b, " ")
}

// TestLoad: the current segment's messages come back, indices continue
// after every stored one, and damaged tool calls or reasoning never lose
// the message.
func TestLoad(t *testing.T) {
	cases := []struct {
		name     string
		segment  int64
		rows     []store.Message
		want     string
		next     int64
		thinking bool // the last message keeps its reasoning
	}{
		{name: "empty", want: "", next: 0},
		{name: "one segment", rows: []store.Message{{Idx: 0, Role: "user", Content: "a"}, {Idx: 1, Role: "assistant", Content: "b"}},
			want: "user:a assistant:b", next: 2},
		{name: "a later segment: earlier ones are not the context, their indices count", segment: 1,
			rows: []store.Message{{Idx: 0, Role: "user", Content: "old"}, {Idx: 1, Segment: 1, Role: "user", Content: "summary"}, {Idx: 2, Segment: 1, Role: "assistant", Content: "c"}},
			want: "user:summary assistant:c", next: 3},
		{name: "a rotated segment with no message yet", segment: 2,
			rows: []store.Message{{Idx: 0, Role: "user", Content: "old"}, {Idx: 4, Segment: 1, Role: "user", Content: "x"}},
			want: "", next: 5},
		{name: "corrupt tool calls: the message stays", rows: []store.Message{{Idx: 0, Role: "assistant", Content: "a", ToolCalls: "[{"}},
			want: "assistant:a", next: 1},
		{name: "corrupt reasoning: dropped, the message stays", rows: []store.Message{{Idx: 0, Role: "assistant", Content: "a", Thinking: "{"}},
			want: "assistant:a", next: 1},
		{name: "reasoning comes back", rows: []store.Message{{Idx: 0, Role: "assistant", Content: "a", Thinking: `[{"text":"hm"}]`}},
			want: "assistant:a", next: 1, thinking: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &host{row: store.Session{ID: "s1", Segment: c.segment}}
			tr := open(t, &fakeStore{rows: c.rows}, h, nil)
			if got := contents(tr.Messages()); got != c.want {
				t.Errorf("messages %q, want %q", got, c.want)
			}
			if n := tr.Next(); n != c.next {
				t.Errorf("next %d, want %d", n, c.next)
			}
			if ms := tr.Messages(); len(ms) > 0 && (len(ms[len(ms)-1].Thinking) > 0) != c.thinking {
				t.Errorf("reasoning %v, want %v", ms[len(ms)-1].Thinking, c.thinking)
			}
		})
	}
	if _, err := Load(context.Background(), Config{Session: "s1", Store: &fakeStore{readErr: errDiskFull}}); !errors.Is(err, errDiskFull) {
		t.Errorf("a failed read: %v", err)
	}
}

// TestCommits: a commit is one transaction (messages, the session row
// and what the caller adds); only what is committed joins the
// conversation; a failed commit changes nothing, and the next one takes
// the same indices.
func TestCommits(t *testing.T) {
	call := agent.ToolCall{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a"}`)}
	type step struct {
		fail   bool
		append []agent.Message // nil with rotate == 0: an empty step
		rotate int64           // rotate to this segment instead
	}
	cases := []struct {
		name  string
		steps []step
		want  string // the context after
		next  int64
		rows  string // idx/segment:role of every stored message
		told  []int64
	}{
		{name: "append", steps: []step{{append: []agent.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "yo", ToolCalls: []agent.ToolCall{call}}}}},
			want: "user:hi assistant:yo", next: 2, rows: "0/0:user 1/0:assistant"},
		{name: "a failed append changes nothing",
			steps: []step{{append: []agent.Message{{Role: "user", Content: "hi"}}}, {fail: true, append: []agent.Message{{Role: "assistant", Content: "lost"}}},
				{append: []agent.Message{{Role: "assistant", Content: "again"}}}},
			want: "user:hi assistant:again", next: 2, rows: "0/0:user 1/0:assistant"},
		{name: "an empty step commits the row only", steps: []step{{}},
			want: "", next: 0, rows: ""},
		{name: "rotate", steps: []step{{append: []agent.Message{{Role: "user", Content: "hi"}}}, {rotate: 1}, {append: []agent.Message{{Role: "assistant", Content: "after"}}}},
			want: "user:material assistant:after", next: 3, rows: "0/0:user 1/1:user 2/1:assistant", told: []int64{1}},
		{name: "a failed rotation changes nothing and tells nobody",
			steps: []step{{append: []agent.Message{{Role: "user", Content: "hi"}}}, {fail: true, rotate: 1}, {append: []agent.Message{{Role: "assistant", Content: "same"}}}},
			want:  "user:hi assistant:same", next: 2, rows: "0/0:user 1/0:assistant"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &fakeStore{}
			h := &host{row: store.Session{ID: "s1", Title: "t"}}
			tr := open(t, st, h, nil)
			for i, s := range c.steps {
				st.fail = s.fail
				var err error
				if s.rotate > 0 {
					err = tr.Rotate(context.Background(), s.rotate, "material", "")
				} else {
					err = tr.Append(context.Background(), store.OpTurn, s.append, func(ts *store.TurnStep) { ts.Record = fmt.Sprint("rec", i) })
				}
				if (err != nil) != s.fail {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			if got := contents(tr.Messages()); got != c.want {
				t.Errorf("context %q, want %q", got, c.want)
			}
			if tr.Next() != c.next {
				t.Errorf("next %d, want %d", tr.Next(), c.next)
			}
			var rows []string
			for _, r := range st.rows {
				rows = append(rows, fmt.Sprintf("%d/%d:%s", r.Idx, r.Segment, r.Role))
			}
			if got := strings.Join(rows, " "); got != c.rows {
				t.Errorf("stored %q, want %q", got, c.rows)
			}
			if fmt.Sprint(h.told) != fmt.Sprint(c.told) {
				t.Errorf("told %v, want %v", h.told, c.told)
			}
			// Each step is whole: the row it writes is the host's, on the
			// segment its messages are in, and carries what with added.
			for _, s := range st.steps {
				for _, m := range s.Messages {
					if m.Segment != s.Session.Segment {
						t.Errorf("message %d on segment %d, row on %d", m.Idx, m.Segment, s.Session.Segment)
					}
				}
				if s.Session.Title != "t" || !strings.HasPrefix(s.Record, "rec") {
					t.Errorf("step %+v", s)
				}
			}
			for _, g := range st.segs {
				if g.Message == nil || g.Session.Segment != g.Message.Segment || g.Session.Title != "t" {
					t.Errorf("segment %+v", g)
				}
			}
		})
	}
}

// TestRotateRecord: a handoff's rotation commits its retry record in the
// segment's transaction.
func TestRotateRecord(t *testing.T) {
	st := &fakeStore{}
	h := &host{row: store.Session{ID: "s1", Segment: 3}}
	tr := open(t, st, h, nil)
	if err := tr.Rotate(context.Background(), 4, "fresh", `{"step":"context"}`); err != nil {
		t.Fatal(err)
	}
	if len(st.segs) != 1 || st.segs[0].Record != `{"step":"context"}` || st.segs[0].Session.Segment != 4 || h.Row().Segment != 4 {
		t.Fatalf("segments %+v, row %+v", st.segs, h.Row())
	}
}

// TestAppendRedacts: stored content and tool calls are masked; the
// conversation in memory is what the model produced.
func TestAppendRedacts(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	set := &redact.Set{}
	set.Add(secret)
	st := &fakeStore{}
	tr := open(t, st, &host{row: store.Session{ID: "s1"}}, set)
	call := agent.ToolCall{ID: "c1", Name: "bash", Arguments: json.RawMessage(`{"command":"echo ` + secret + `"}`)}
	if err := tr.Append(context.Background(), store.OpTurn, []agent.Message{{Role: "assistant", Content: "key " + secret, ToolCalls: []agent.ToolCall{call}}}, nil); err != nil {
		t.Fatal(err)
	}
	r := st.rows[0]
	if strings.Contains(r.Content+r.ToolCalls, secret) || !strings.Contains(r.Content, redact.Mask) || !strings.Contains(r.ToolCalls, redact.Mask) {
		t.Errorf("stored %q %q", r.Content, r.ToolCalls)
	}
	if m := tr.Messages()[0]; !strings.Contains(m.Content, secret) {
		t.Errorf("memory %q", m.Content)
	}
}

// TestConcurrentAppends: indices are taken and committed in one piece,
// so concurrent commits never share or skip one.
func TestConcurrentAppends(t *testing.T) {
	st := &fakeStore{}
	tr := open(t, st, &host{row: store.Session{ID: "s1"}}, nil)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				if err := tr.Append(context.Background(), store.OpTurn, []agent.Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: "b"}}, nil); err != nil {
					t.Error(err)
				}
			}
		}(i)
	}
	wg.Wait()
	if n := tr.Next(); n != 160 || len(st.rows) != 160 || len(tr.Messages()) != 160 {
		t.Fatalf("next %d, %d rows, %d messages", n, len(st.rows), len(tr.Messages()))
	}
	for i, r := range st.rows {
		if r.Idx != int64(i) {
			t.Fatalf("row %d has index %d", i, r.Idx)
		}
	}
}

// lockCheckingStore records, at each commit, whether the row lock was free.
type lockCheckingStore struct {
	*fakeStore
	lock *sync.Mutex
	free []bool
}

func (s *lockCheckingStore) check() {
	ok := s.lock.TryLock()
	if ok {
		s.lock.Unlock()
	}
	s.free = append(s.free, ok)
}

func (s *lockCheckingStore) CommitTurnStep(ctx context.Context, op string, st store.TurnStep) error {
	s.check()
	return s.fakeStore.CommitTurnStep(ctx, op, st)
}

func (s *lockCheckingStore) CommitSegment(ctx context.Context, g store.Segment) error {
	s.check()
	return s.fakeStore.CommitSegment(ctx, g)
}

// TestRowLockHeldAcrossCommits: a step and a rotation hold the row lock
// from their snapshot of the session row through the commit (and the
// segment's report), so the session's other row writers (a posture
// change) never commit between the snapshot and the commit and then see
// their newer row overwritten; after each, the lock is free again.
func TestRowLockHeldAcrossCommits(t *testing.T) {
	var rowMu sync.Mutex
	st := &lockCheckingStore{fakeStore: &fakeStore{}, lock: &rowMu}
	h := &host{row: store.Session{ID: "s1", Segment: 1}}
	var snapshots []bool // the lock was held when the row was read
	row := func() store.Session {
		ok := rowMu.TryLock()
		if ok {
			rowMu.Unlock()
		}
		snapshots = append(snapshots, !ok)
		return h.Row()
	}
	tr, err := Load(context.Background(), Config{Session: "s1", Segment: 1, Store: st, Row: row, RowLock: &rowMu,
		OnSegment: h.OnSegment})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Append(context.Background(), store.OpTurn, []agent.Message{{Role: agent.RoleUser, Content: "hi"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Rotate(context.Background(), 2, "fresh", ""); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(st.free) != "[false false]" || fmt.Sprint(snapshots) != "[true true]" {
		t.Errorf("row lock free at commits %v, held at snapshots %v; want held throughout", st.free, snapshots)
	}
	if !rowMu.TryLock() {
		t.Fatal("the row lock is still held after the commits")
	}
}

// TestAppendRowAppliesOnlyCommitted: a step that changes the session row
// writes the change with the step and hands it to the session only once
// committed, still under the row lock (so no other row writer commits
// between the two); a failed commit hands nothing over.
func TestAppendRowAppliesOnlyCommitted(t *testing.T) {
	for _, fail := range []bool{false, true} {
		var rowMu sync.Mutex
		st := &fakeStore{fail: fail}
		h := &host{row: store.Session{ID: "s1"}}
		var held []bool // the row lock was held when the change was applied
		apply := func(set func(*store.Session)) {
			ok := rowMu.TryLock()
			if ok {
				rowMu.Unlock()
			}
			held = append(held, !ok)
			h.mu.Lock()
			set(&h.row)
			h.mu.Unlock()
		}
		tr, err := Load(context.Background(), Config{Session: "s1", Store: st, Row: h.Row, RowLock: &rowMu, Apply: apply})
		if err != nil {
			t.Fatal(err)
		}
		err = tr.AppendRow(context.Background(), store.OpPrompt, []agent.Message{{Role: agent.RoleUser, Content: "hi"}},
			func(r *store.Session) { r.Title = "hi" }, func(s *store.TurnStep) { s.Dequeue = 3 })
		if fail {
			if err == nil || h.Row().Title != "" || len(held) != 0 || len(tr.Messages()) != 0 {
				t.Errorf("failed commit: err %v, title %q, applied %v, %d messages", err, h.Row().Title, held, len(tr.Messages()))
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(st.steps) != 1 || st.steps[0].Session.Title != "hi" || st.steps[0].Dequeue != 3 {
			t.Errorf("committed %+v", st.steps)
		}
		if h.Row().Title != "hi" || len(held) != 1 || !held[0] {
			t.Errorf("title %q in memory, applied under the row lock %v", h.Row().Title, held)
		}
	}
}
