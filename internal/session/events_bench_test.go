package session

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"planbridge/internal/agent"
	"planbridge/internal/store"
)

// deltaEngine streams the same text as n deltas.
type deltaEngine struct {
	text string
	n    int
}

func (e deltaEngine) Name() string { return "deltas" }

func (e deltaEngine) Stream(ctx context.Context, req agent.Request, onText func(string)) (agent.Response, error) {
	step := len(e.text) / e.n
	for i := 0; i < e.n; i++ {
		end := (i + 1) * step
		if i == e.n-1 {
			end = len(e.text)
		}
		onText(e.text[i*step : end])
	}
	return agent.Response{Text: e.text}, nil
}

// benchTurn runs b.N turns whose reply streams as n deltas, end to end:
// the session, the event log (SQLite, synchronous=FULL) and a subscriber
// encoding every notification as the JSON-RPC adapter does.
func benchTurn(b *testing.B, n int) {
	ctx := context.Background()
	st, err := store.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	text := strings.Repeat("word ", 5000)
	m := NewManager(Config{Store: st, Engine: deltaEngine{text: text, n: n}})
	ended := make(chan struct{}, 1)
	m.Subscribe(func(ev Event) {
		if _, err := json.Marshal(ev); err != nil {
			b.Error(err)
		}
		if ev.Kind == "turn_end" {
			ended <- struct{}{}
		}
	})
	s, err := m.Create(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Submit(ctx, "go"); err != nil {
			b.Fatal(err)
		}
		<-ended
	}
	b.StopTimer()
	m.Close()
}

// BenchmarkTurnDeltas1 and BenchmarkTurnDeltas5000: the same reply sent as
// one delta and as 5,000 (make bench prints the ratio; budget 3×).
func BenchmarkTurnDeltas1(b *testing.B)    { benchTurn(b, 1) }
func BenchmarkTurnDeltas5000(b *testing.B) { benchTurn(b, 5000) }

// TestEventsWriteAhead: every event a subscriber sees is already in a
// committed row under the same number (text deltas grouped, one event per
// batch), and a reopened manager continues after the highest number.
func TestEventsWriteAhead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("word ", 2000)
	m := NewManager(Config{Store: st, Engine: deltaEngine{text: text, n: 2000}})
	var bad []string
	seen, texts := 0, 0
	var streamed strings.Builder
	done := make(chan struct{}, 1)
	var last int64
	m.Subscribe(func(ev Event) {
		seen++
		if ev.Seq != last+1 {
			bad = append(bad, "out of order")
		}
		last = ev.Seq
		evs, err := st.Events(ctx, ev.Session, ev.Seq-1)
		if err != nil || len(evs) == 0 || evs[0].Seq != ev.Seq || evs[0].Kind != ev.Kind {
			bad = append(bad, "event "+ev.Kind+" published before it was committed")
		}
		if ev.Kind == "text" {
			texts++
			var d struct{ Delta string }
			json.Unmarshal(ev.Data, &d)
			streamed.WriteString(d.Delta)
		}
		if ev.Kind == "turn_end" {
			done <- struct{}{}
		}
	})
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	<-done
	m.Close()
	if len(bad) > 0 {
		t.Fatalf("%d violations, first: %s", len(bad), bad[0])
	}
	if streamed.String() != text {
		t.Errorf("streamed text differs (%d vs %d bytes)", streamed.Len(), len(text))
	}
	if texts >= 2000 {
		t.Errorf("%d text events for 2000 deltas: not grouped", texts)
	}
	st.Close()
	st2, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	m2 := NewManager(Config{Store: st2})
	s2, err := m2.Get(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if s2.Info().LastSeq != last {
		t.Fatalf("reopened at %d, last published %d", s2.Info().LastSeq, last)
	}
	if err := s2.SetMode(ctx, "edits"); err != nil {
		t.Fatal(err)
	}
	if s2.Info().LastSeq != last+1 {
		t.Errorf("next number %d, want %d", s2.Info().LastSeq, last+1)
	}
}

// TestEventCommitFailureIsVisibleAndTakesNoNumber: an event whose commit
// fails (disk full) is still shown, as a non-durable error without a
// number; no number is given out for it, so none is reused later.
func TestEventCommitFailureIsVisibleAndTakesNoNumber(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, t.TempDir(), store.WithFailingCommits(store.OpEvents))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := NewManager(Config{Store: st})
	var got []Event
	m.Subscribe(func(ev Event) { got = append(got, ev) })
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetMode(ctx, "edits"); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatal("nothing was shown")
	}
	for _, ev := range got {
		var d struct {
			Durable *bool `json:"durable"`
		}
		json.Unmarshal(ev.Data, &d)
		if ev.Seq != 0 || ev.Kind != "error" || d.Durable == nil || *d.Durable || !strings.Contains(string(ev.Data), "no space left") {
			t.Errorf("shown %d %s %s", ev.Seq, ev.Kind, ev.Data)
		}
	}
	if n := s.Info().LastSeq; n != 0 {
		t.Errorf("a failed commit took number %d", n)
	}
}

// TestStatusEventsOnlyOnChange: status events come from one path and only
// when the status changed.
func TestStatusEventsOnlyOnChange(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := NewManager(Config{Store: st})
	var statuses []string
	m.Subscribe(func(ev Event) {
		if ev.Kind == "status" {
			statuses = append(statuses, string(ev.Data))
		}
	})
	s, err := m.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"edits", "edits", "edits", "ask"} {
		if err := s.SetMode(ctx, mode); err != nil {
			t.Fatal(err)
		}
	}
	s.EnterPlan(ctx)
	s.EnterPlan(ctx) // a no-op
	if len(statuses) != 4 {
		t.Fatalf("%d status events, want 4 (create, edits, ask, plan):\n%s", len(statuses), strings.Join(statuses, "\n"))
	}
	for i := 1; i < len(statuses); i++ {
		if statuses[i] == statuses[i-1] {
			t.Errorf("status %d repeats the previous one", i)
		}
	}
}
