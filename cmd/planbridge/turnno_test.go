package main

import (
	"encoding/json"
	"testing"

	"planbridge/rpc"
)

// TestTurnNumbersSurviveRestart: turn numbers continue after the backend
// restarts (a clean stop, then a SIGKILL), in the live events and in the
// stored log; they never start again at 1.
func TestTurnNumbersSurviveRestart(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"a.txt": "a\n"})
	state := t.TempDir()
	script := writeScript(t, `[{"text": "one"}, {"text": "two"}, {"text": "three"}, {"text": "four"}]`)
	turnsOf := func(evs []rpc.Event, session string) (starts, ends []int64) {
		for _, e := range evs {
			if e.Session != "" && e.Session != session {
				continue
			}
			var d struct {
				Turn int64 `json:"turn"`
			}
			if e.Kind != "turn_start" && e.Kind != "turn_end" {
				continue
			}
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatalf("%s: %v", e.Kind, err)
			}
			if e.Kind == "turn_start" {
				starts = append(starts, d.Turn)
			} else {
				ends = append(ends, d.Turn)
			}
		}
		return starts, ends
	}
	submit := func(p *proc, id, text string) {
		t.Helper()
		if err := p.c.Call(ctx, "session/submit", map[string]string{"session": id, "text": text}, nil); err != nil {
			t.Fatal(err)
		}
	}

	p := startServe(t, state, "--engine", "script", "--script", script)
	s := createSession(t, ctx, p.c, ws)
	submit(p, s.ID, "first")
	waitTurnEnd(t, ctx, p.c, 1)
	submit(p, s.ID, "second")
	waitTurnEnd(t, ctx, p.c, 2)
	p.stop()

	want := []int64{1, 2}
	for i, kill := range []bool{false, true} {
		p = startServe(t, state, "--engine", "script", "--script", script)
		var opened struct {
			Events []rpc.Event `json:"events"`
		}
		if err := p.c.Call(ctx, "session/open", map[string]string{"session": s.ID}, &opened); err != nil {
			t.Fatal(err)
		}
		submit(p, s.ID, "after restart")
		waitTurnEnd(t, ctx, p.c, 1)
		live, liveEnds := turnsOf(p.c.Events(), s.ID)
		n := int64(3 + i)
		if len(live) != 1 || live[0] != n || len(liveEnds) != 1 || liveEnds[0] != n {
			t.Fatalf("restart %d: live turn_start %v, turn_end %v; want [%d]", i, live, liveEnds, n)
		}
		stored, _ := turnsOf(opened.Events, s.ID)
		if !equalInts(stored, want) {
			t.Fatalf("restart %d: stored turn_start %v, want %v", i, stored, want)
		}
		want = append(want, n)
		if kill {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		} else {
			p.stop()
		}
	}
	p = startServe(t, state, "--engine", "script", "--script", script)
	var opened struct {
		Events []rpc.Event `json:"events"`
	}
	if err := p.c.Call(ctx, "session/open", map[string]string{"session": s.ID}, &opened); err != nil {
		t.Fatal(err)
	}
	if stored, ends := turnsOf(opened.Events, s.ID); !equalInts(stored, want) || !equalInts(ends, want) {
		t.Fatalf("stored turn_start %v, turn_end %v; want %v", stored, ends, want)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
