package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"planbridge/internal/event"
	"planbridge/internal/redact"
	"planbridge/internal/store"
)

var errDiskFull = errors.New("no space left on device")

// fakeStore is the store port: committed rows, and a switch that makes
// the next commits fail as a full disk would.
type fakeStore struct {
	mu      sync.Mutex
	rows    []store.Event
	fail    bool
	lastErr error // LastSeq's error
}

func (f *fakeStore) AppendEvents(_ context.Context, session string, evs []store.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errDiskFull
	}
	for _, e := range evs {
		if n := len(f.rows); n > 0 && e.Seq <= f.rows[n-1].Seq {
			return errors.New("UNIQUE constraint failed: events.seq") // a reused number
		}
		f.rows = append(f.rows, e)
	}
	return nil
}

func (f *fakeStore) EventsPage(_ context.Context, session string, since int64, limit int) ([]store.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.Event
	for _, e := range f.rows {
		if e.Seq > since && (limit <= 0 || len(out) < limit) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeStore) LastSeq(context.Context, string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lastErr != nil {
		return 0, f.lastErr
	}
	if len(f.rows) == 0 {
		return 0, nil
	}
	return f.rows[len(f.rows)-1].Seq, nil
}

func (f *fakeStore) setFail(v bool) { f.mu.Lock(); f.fail = v; f.mu.Unlock() }

func (f *fakeStore) has(seq int64, kind string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.rows {
		if e.Seq == seq && e.Kind == kind {
			return true
		}
	}
	return false
}

// rig is a log over a fake store, recording what is published and
// checking write-ahead at every publication.
type rig struct {
	t   *testing.T
	st  *fakeStore
	log *Log

	mu  sync.Mutex
	pub []event.Event
	// early names an event published before its row was committed.
	early []string
	got   chan event.Event
}

func newRig(t *testing.T, st *fakeStore, red Redactor, coalesce time.Duration) *rig {
	t.Helper()
	r := &rig{t: t, st: st, got: make(chan event.Event, 100)}
	l, err := Open(context.Background(), Config{Session: "s1", Store: st, Publish: r.publish, Redact: red, Coalesce: coalesce})
	if err != nil {
		t.Fatal(err)
	}
	r.log = l
	return r
}

func (r *rig) publish(ev event.Event) {
	if ev.Seq != 0 && !r.st.has(ev.Seq, ev.Kind) {
		r.early = append(r.early, ev.Kind)
	}
	r.mu.Lock()
	r.pub = append(r.pub, ev)
	r.mu.Unlock()
	r.got <- ev
}

// seen is what was published, as "seq:kind" ("0:error" for a failed
// commit's notification).
func (r *rig) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.pub))
	for i, e := range r.pub {
		out[i] = strings.Join([]string{itoa(e.Seq), e.Kind}, ":")
	}
	return out
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

const hour = time.Hour // a coalescing window no test waits out

func notice(m string) event.Notice { return event.Notice{Message: m} }

// TestLog: numbering, write-ahead, failed commits, group commit and its
// order, views published only on change, refused kinds, paging.
func TestLog(t *testing.T) {
	cases := []struct {
		name  string
		rows  []store.Event // committed before Open
		do    func(r *rig)
		want  []string // published, in order
		last  int64    // LastSeq after
		check func(t *testing.T, r *rig)
	}{
		{
			name: "numbers start after none",
			do:   func(r *rig) { r.log.Emit(notice("a")); r.log.Emit(notice("b")) },
			want: []string{"1:notice", "2:notice"}, last: 2,
		},
		{
			name: "reload continues after the last committed number",
			rows: []store.Event{{Seq: 6, Kind: "notice"}, {Seq: 7, Kind: "turn_end"}},
			do:   func(r *rig) { r.log.Emit(notice("a")) },
			want: []string{"8:notice"}, last: 8,
		},
		{
			name: "a failed commit is shown without a number and takes none",
			do: func(r *rig) {
				r.log.Emit(notice("a"))
				r.st.setFail(true)
				r.log.Emit(notice("lost"))
				r.log.View(event.Status{Mode: "edits"})
				r.st.setFail(false)
				r.log.Emit(notice("b"))
			},
			want: []string{"1:notice", "0:error", "0:error", "2:notice"}, last: 2,
			check: func(t *testing.T, r *rig) {
				for _, i := range []int{1, 2} {
					var d event.Error
					if err := json.Unmarshal(r.pub[i].Data, &d); err != nil || d.Durable == nil || *d.Durable ||
						!strings.Contains(d.Message, "could not save an event (") || !strings.Contains(d.Message, "no space left") {
						t.Errorf("notification %d: %s", i, r.pub[i].Data)
					}
				}
			},
		},
		{
			name: "a failed view is tried again, not remembered",
			do: func(r *rig) {
				r.st.setFail(true)
				r.log.View(event.Status{Mode: "edits"})
				r.st.setFail(false)
				r.log.View(event.Status{Mode: "edits"})
				r.log.View(event.Status{Mode: "edits"})
			},
			want: []string{"0:error", "1:status"}, last: 1,
		},
		{
			name: "text gathered before an emit is committed first, as one event",
			do: func(r *rig) {
				r.log.Text("hel")
				r.log.Text("")
				r.log.Text("lo")
				r.log.Emit(notice("after"))
				r.log.Text(" again")
				r.log.View(event.Status{Busy: true})
				r.log.Text("!")
				r.log.Flush()
				r.log.Flush() // nothing left: no event
			},
			want: []string{"1:text", "2:notice", "3:text", "4:status", "5:text"}, last: 5,
			check: func(t *testing.T, r *rig) {
				for i, want := range map[int]string{0: "hello", 2: " again", 4: "!"} {
					var d event.Text
					json.Unmarshal(r.pub[i].Data, &d)
					if d.Delta != want {
						t.Errorf("text %d = %q, want %q", i, d.Delta, want)
					}
				}
			},
		},
		{
			name: "a failed text commit loses the batch visibly, keeps order",
			do: func(r *rig) {
				r.log.Text("x")
				r.st.setFail(true)
				r.log.Flush()
				r.st.setFail(false)
				r.log.Emit(notice("n"))
			},
			want: []string{"0:error", "1:notice"}, last: 1,
		},
		{
			name: "an unchanged status or card publishes nothing",
			do: func(r *rig) {
				card := cardView{Attempt: "a1"}
				r.log.View(event.Status{Mode: "ask"})
				r.log.View(event.Status{Mode: "ask"})
				r.log.View(card)
				r.log.View(card)
				r.log.View(event.Status{Mode: "edits"})
				r.log.View(event.Status{Mode: "edits"})
				r.log.View(cardView{Attempt: "a2"})
				r.log.EndView(event.KindApproval) // the presentation ended
				r.log.View(event.Status{Mode: "edits"})
				r.log.View(cardView{Attempt: "a2"}) // presented again: shown again
				r.log.View(cardView{Attempt: "a2"})
			},
			want: []string{"1:status", "2:approval", "3:status", "4:approval", "5:approval"}, last: 5,
		},
		{
			name: "emit refuses the derived kinds",
			do: func(r *rig) {
				r.log.Emit(event.Status{Mode: "edits"})
				r.log.Emit(cardView{Attempt: "a1"})
				r.log.View(notice("not a view"))
				r.log.View(event.Status{Mode: "edits"}) // not taken as published by the refused emit
			},
			want: []string{"1:status"}, last: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &fakeStore{rows: c.rows}
			r := newRig(t, st, nil, hour)
			c.do(r)
			if got := r.seen(); strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("published %v, want %v", got, c.want)
			}
			if len(r.early) > 0 {
				t.Errorf("published before committed: %v", r.early)
			}
			if n := r.log.LastSeq(); n != c.last {
				t.Errorf("LastSeq %d, want %d", n, c.last)
			}
			for _, e := range r.pub {
				if e.Session != "s1" {
					t.Errorf("event %d for session %q", e.Seq, e.Session)
				}
			}
			// What was published under a number is what is committed.
			evs, err := r.log.Page(context.Background(), 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var want []event.Event
			for _, e := range r.pub {
				if e.Seq != 0 {
					want = append(want, e)
				}
			}
			if len(c.rows) == 0 && !sameEvents(evs, want) {
				t.Errorf("the log holds %v, published %v", evs, want)
			}
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

// cardView stands for the session's approval card: a derived view of kind
// "approval".
type cardView struct {
	Attempt string `json:"attempt"`
}

func (cardView) Kind() string { return event.KindApproval }

func sameEvents(a, b []event.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Seq != b[i].Seq || a[i].Kind != b[i].Kind || string(a[i].Data) != string(b[i].Data) || !a[i].Time.Equal(b[i].Time) {
			return false
		}
	}
	return true
}

// TestRedaction: secrets are masked before the store and the publisher
// see an event; data that masking would leave invalid JSON is withheld.
func TestRedaction(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	cases := []struct {
		name string
		emit func(l *Log)
		want string // the data stored and published
	}{
		{"masked in place", func(l *Log) { l.Emit(notice("key " + secret + " pasted")) },
			`{"message":"key [redacted] pasted"}`},
		// The secret spans the JSON's own quotes: masked, the data would
		// not parse, so none of it is kept.
		{"invalid once masked", func(l *Log) { l.Emit(notice(`pre-"message":"` + secret)) },
			`{"error":"event withheld: it contained a secret"}`},
		{"a view is masked too", func(l *Log) { l.View(cardView{Attempt: secret}) },
			`{"attempt":"[redacted]"}`},
		{"a view invalid once masked", func(l *Log) { l.View(cardView{Attempt: `x","attempt":"` + secret}) },
			`{"error":"event withheld: it contained a secret"}`},
		{"no secret: unchanged", func(l *Log) { l.Emit(notice("plain")) }, `{"message":"plain"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := &redact.Set{}
			set.Add(secret, `"attempt":"x\",\"attempt\":\"`+secret)
			if c.name == "invalid once masked" {
				set.Add(`"message":"pre-\"message\":\"` + secret)
			}
			st := &fakeStore{}
			r := newRig(t, st, set, hour)
			c.emit(r.log)
			if len(r.pub) != 1 || len(st.rows) != 1 {
				t.Fatalf("published %d, stored %d", len(r.pub), len(st.rows))
			}
			if got := string(r.pub[0].Data); got != c.want {
				t.Errorf("published %s, want %s", got, c.want)
			}
			if got := string(st.rows[0].Data); got != c.want {
				t.Errorf("stored %s, want %s", got, c.want)
			}
			if strings.Contains(string(st.rows[0].Data), secret) {
				t.Error("the secret reached the store")
			}
		})
	}
}

// TestTextTimer: text gathering ends on its own (no later event needed),
// as one event, committed before it is published.
func TestTextTimer(t *testing.T) {
	st := &fakeStore{}
	r := newRig(t, st, nil, time.Millisecond)
	for _, d := range []string{"a", "b", "c"} {
		r.log.Text(d)
	}
	ev := <-r.got
	var d event.Text
	json.Unmarshal(ev.Data, &d)
	// The timer may fire between deltas; what matters is that the text
	// arrives whole, in order, committed first.
	text := d.Delta
	for text != "abc" {
		if len(text) >= 3 {
			t.Fatalf("text %q", text)
		}
		ev = <-r.got
		json.Unmarshal(ev.Data, &d)
		text += d.Delta
	}
	if len(r.early) > 0 {
		t.Errorf("published before committed: %v", r.early)
	}
}

// TestPage: a page read commits gathered text first, honours since and
// limit, and names the session.
func TestPage(t *testing.T) {
	st := &fakeStore{}
	r := newRig(t, st, nil, hour)
	r.log.Emit(notice("1"))
	r.log.Emit(notice("2"))
	r.log.Text("pending")
	evs, err := r.log.Page(context.Background(), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Seq != 2 || evs[1].Kind != "text" || evs[1].Session != "s1" {
		t.Fatalf("page %v", evs)
	}
	if evs, _ = r.log.Page(context.Background(), 0, 2); len(evs) != 2 || evs[1].Seq != 2 {
		t.Fatalf("limited page %v", evs)
	}
}

// TestOpenFails: a log whose last number cannot be read is not opened
// (it would hand out numbers the store may hold).
func TestOpenFails(t *testing.T) {
	_, err := Open(context.Background(), Config{Session: "s1", Store: &fakeStore{lastErr: errDiskFull}})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Open: %v", err)
	}
}

// TestConcurrentUse: emitters, views and a stream at once still give
// every event the next number, in delivery order, committed first, and
// the stream's text arrives whole and in order.
func TestConcurrentUse(t *testing.T) {
	st := &fakeStore{}
	r := newRig(t, st, nil, time.Millisecond)
	r.got = make(chan event.Event, 10000)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				r.log.Emit(notice(fmt.Sprint(g, i)))
				r.log.View(event.Status{Queued: i % 3})
			}
		}(g)
	}
	var want strings.Builder
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 500; i++ {
			d := fmt.Sprint(i, ",")
			want.WriteString(d)
			r.log.Text(d)
		}
	}()
	wg.Wait()
	r.log.Flush()
	var text strings.Builder
	for i, e := range r.pub {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
		if e.Kind == "text" {
			var d event.Text
			json.Unmarshal(e.Data, &d)
			text.WriteString(d.Delta)
		}
	}
	if text.String() != want.String() {
		t.Errorf("streamed text out of order or lost: %d bytes of %d", text.Len(), want.Len())
	}
	if len(r.early) > 0 || len(st.rows) != len(r.pub) {
		t.Errorf("%d published early; %d rows, %d published", len(r.early), len(st.rows), len(r.pub))
	}
}
