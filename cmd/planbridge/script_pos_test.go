package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"planbridge/rpc"
)

// turnText returns the text the session streamed since from (an index into
// the client's events), and the index to continue from.
func turnText(c *rpc.Client, session string, from int) (string, int) {
	evs := c.Events()
	var b strings.Builder
	for _, e := range evs[from:] {
		if e.Kind == "text" && e.Session == session {
			var d struct{ Delta string }
			json.Unmarshal(e.Data, &d)
			b.WriteString(d.Delta)
		}
	}
	return b.String(), len(evs)
}

// waitAfter waits for an event matching pred among those after the first
// from (WaitEvent tries each event once, in order).
func waitAfter(ctx context.Context, c *rpc.Client, from int, pred func(rpc.Event) bool) error {
	i := 0
	_, err := c.WaitEvent(ctx, func(e rpc.Event) bool { i++; return i > from && pred(e) })
	return err
}

// instanceOf returns the instance id initialize answers.
func instanceOf(t *testing.T, ctx context.Context, c *rpc.Client) string {
	t.Helper()
	var r struct {
		Instance string `json:"instance"`
	}
	if err := c.Call(ctx, "initialize", map[string]any{}, &r); err != nil {
		t.Fatal(err)
	}
	return r.Instance
}

// submitAndWait sends text and waits for its turn to end.
func submitAndWait(t *testing.T, ctx context.Context, c *rpc.Client, session, text string) {
	t.Helper()
	seen := len(c.Events())
	if err := c.Call(ctx, "session/submit", map[string]string{"session": session, "text": text}, nil); err != nil {
		t.Fatal(err)
	}
	if err := waitAfter(ctx, c, seen, func(e rpc.Event) bool {
		return e.Kind == "turn_end" && e.Session == session
	}); err != nil {
		t.Fatalf("waiting for the turn of %q: %v", text, err)
	}
}

// The script's position belongs to the session: a second session, in the
// same process or after a restart, replays the script from its first step,
// while each session continues its own replay across a restart. A cancelled
// stream consumes its step and nothing more.
func TestScriptPositionPerSession(t *testing.T) {
	ctx := ctxT(t)
	state := t.TempDir()
	ws := gitRepo(t, map[string]string{"a.txt": "a\n"})
	script := writeScript(t, `[{"text": "one\n"}, {"text": "two two two two two two two two\n", "delay_ms": 200}, {"text": "three\n"}]`)
	p := startServe(t, state, "--engine", "script", "--script", script)
	first := instanceOf(t, ctx, p.c)
	if first != instanceOf(t, ctx, p.c) {
		t.Fatal("initialize gave two instance ids in one process")
	}
	a := createSession(t, ctx, p.c, ws)
	submitAndWait(t, ctx, p.c, a.ID, "first")
	if got, _ := turnText(p.c, a.ID, 0); got != "one\n" {
		t.Fatalf("session A, turn 1: %q", got)
	}
	// A second session starts the script from the beginning.
	b := createSession(t, ctx, p.c, ws)
	mark := len(p.c.Events())
	submitAndWait(t, ctx, p.c, b.ID, "first in B")
	if got, _ := turnText(p.c, b.ID, mark); got != "one\n" {
		t.Fatalf("session B, turn 1: %q (want the first step)", got)
	}
	// Interrupt A's second turn while it streams step 2.
	mark = len(p.c.Events())
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": a.ID, "text": "second"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := waitAfter(ctx, p.c, mark, func(e rpc.Event) bool { return e.Kind == "text" && e.Session == a.ID }); err != nil {
		t.Fatal(err)
	}
	if err := p.c.Call(ctx, "session/interrupt", map[string]string{"session": a.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if err := waitAfter(ctx, p.c, mark, func(e rpc.Event) bool { return e.Kind == "turn_end" && e.Session == a.ID }); err != nil {
		t.Fatal(err)
	}
	p.stop()

	// After a restart, A continues after the interrupted step and B after
	// its first; a new session C starts at the beginning.
	p2 := startServe(t, state, "--engine", "script", "--script", script)
	if second := instanceOf(t, ctx, p2.c); second == first || !strings.HasPrefix(second, "i-") {
		t.Fatalf("instance ids %q then %q: a restarted backend must be a new instance", first, second)
	}
	for _, id := range []string{a.ID, b.ID} {
		// With coalesce_text, a turn's deltas come as one event.
		var opened struct {
			Events []rpc.Event `json:"events"`
		}
		if err := p2.c.Call(ctx, "session/open", map[string]any{"session": id, "coalesce_text": true}, &opened); err != nil {
			t.Fatal(err)
		}
		var prev int64
		for i, e := range opened.Events {
			if e.Seq <= prev {
				t.Fatalf("coalesced seqs not increasing: %d after %d", e.Seq, prev)
			}
			prev = e.Seq
			if e.Kind == "text" && i > 0 && opened.Events[i-1].Kind == "text" {
				t.Fatalf("two text events in a row after coalescing: %s", e.Data)
			}
		}
		if id == b.ID {
			var d struct{ Delta string }
			for _, e := range opened.Events {
				if e.Kind == "text" {
					json.Unmarshal(e.Data, &d)
				}
			}
			if d.Delta != "one\n" {
				t.Errorf("coalesced text of session B: %q", d.Delta)
			}
		}
	}
	mark = len(p2.c.Events())
	submitAndWait(t, ctx, p2.c, a.ID, "third")
	if got, _ := turnText(p2.c, a.ID, mark); got != "three\n" {
		t.Errorf("session A after the interrupt and a restart: %q, want the third step", got)
	}
	mark = len(p2.c.Events())
	submitAndWait(t, ctx, p2.c, b.ID, "second in B")
	if got, _ := turnText(p2.c, b.ID, mark); !strings.HasPrefix(got, "two") {
		t.Errorf("session B after a restart: %q, want the second step", got)
	}
	c := createSession(t, ctx, p2.c, ws)
	mark = len(p2.c.Events())
	submitAndWait(t, ctx, p2.c, c.ID, "first in C")
	if got, _ := turnText(p2.c, c.ID, mark); got != "one\n" {
		t.Errorf("new session C after a restart: %q, want the first step", got)
	}
}
