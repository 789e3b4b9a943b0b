package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"planbridge/handoff"
	"planbridge/rpc"
)

// TestDeleteRacesWritesThenRestart, through the real binary: over many
// rounds, session/delete races the card's actions (selection changes,
// hide and show, edit, cancel), an approve-and-park and a /review report
// of a finished implementation; after every round a new `planbridge
// serve` on the state directory starts cleanly (no "database behind its
// session files", nothing left to settle), and no deleted session has a
// directory, set aside or not. Before, a write racing a delete could
// write the deleted session's directory back; now none can create it.
func TestDeleteRacesWritesThenRestart(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	script := writeScript(t, fmt.Sprintf(`[{"text": %q},
	  {"text": "Implementing.\n", "tool_calls": [{"name": "update_plan_step", "arguments": {"step": "s1", "status": "completed"}}]},
	  {"text": "Done.\n"}]`, planText))
	const rounds = 6
	var deleted []string
	for round := 0; round < rounds; round++ {
		p := startServe(t, state, "--engine", "script", "--script", script)
		var list []sessionInfo
		if err := p.c.Call(ctx, "session/list", map[string]any{}, &list); err != nil {
			t.Fatalf("round %d: the server did not start: %v\n%s", round, err, p.stderr)
		}
		if len(list) != 0 {
			t.Fatalf("round %d: %d sessions listed after every one was deleted", round, len(list))
		}
		// A finished implementation, for /review.
		done, v := proposeIn(t, ctx, p, ws)
		if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": done.ID, "attempt": v.Attempt}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
			return e.Session == done.ID && e.Kind == "handoff" && strings.Contains(string(e.Data), "done")
		}); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, ctx, p.c, done.ID)
		// A pending card.
		card, cv := proposeIn(t, ctx, p, ws)

		var wg sync.WaitGroup
		fire := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
		call := func(method string, params any) { p.c.Call(ctx, method, params, nil) } // refusals are the race's
		del := func(id string) error {
			err := p.c.Call(ctx, "session/delete", map[string]string{"session": id}, nil)
			if err == nil || refusalCode(err) == "not_found" {
				return nil
			}
			return err
		}
		for i := 0; i < 4; i++ {
			fire(func() { call("session/submit", map[string]string{"session": done.ID, "text": "/review"}) })
			fire(func() {
				call("approval/update", map[string]any{"session": card.ID, "attempt": cv.Attempt, "change": handoff.Change{Axis: "mode", Cycle: true}})
			})
			fire(func() { call("approval/hide", map[string]string{"session": card.ID, "attempt": cv.Attempt}) })
			fire(func() { call("approval/show", map[string]string{"session": card.ID}) })
		}
		fire(func() {
			call("approval/edit", map[string]any{"session": card.ID, "attempt": cv.Attempt, "body": planText + "\nAlso check the tests.\n"})
		})
		fire(func() { call("approval/park", map[string]string{"session": card.ID, "attempt": cv.Attempt}) })
		fire(func() { call("approval/cancel", map[string]string{"session": card.ID, "attempt": cv.Attempt}) })
		fire(func() { del(done.ID) })
		fire(func() { del(card.ID) })
		wg.Wait()
		for _, id := range []string{done.ID, card.ID} {
			waitIdle(t, ctx, p.c, id)
			if err := del(id); err != nil {
				t.Fatalf("round %d: delete %s once the race is over: %v", round, id, err)
			}
		}
		deleted = append(deleted, done.ID, card.ID)
		p.stop()
		// What a start says of deletes it had to settle (store.FinishDeletes),
		// or of a database behind its session files.
		for _, bad := range []string{"interrupted delete", "could not all be removed", "behind", "has a directory again"} {
			if s := p.stderr.String(); strings.Contains(s, bad) {
				t.Fatalf("round %d: the server said %q:\n%s", round, bad, s)
			}
		}
		for _, id := range deleted {
			for _, dir := range []string{filepath.Join(state, "sessions", id), filepath.Join(state, "sessions", ".deleted-"+id)} {
				if _, err := os.Lstat(dir); err == nil {
					t.Fatalf("round %d: %s exists after the delete of %s", round, dir, id)
				}
			}
		}
	}
	// The last round's deletes meet a start too.
	p := startServe(t, state, "--engine", "script", "--script", script)
	var list []sessionInfo
	if err := p.c.Call(ctx, "session/list", map[string]any{}, &list); err != nil {
		t.Fatalf("the last start: %v\n%s", err, p.stderr)
	}
	if len(list) != 0 {
		t.Fatalf("%d sessions listed after every one was deleted", len(list))
	}
	p.stop()
}

// proposeIn is proposeAndWait for a server that ran turns before: it
// waits for the new session's own first turn.
func proposeIn(t *testing.T, ctx context.Context, p *proc, ws string) (sessionInfo, approvalView) {
	t.Helper()
	s := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan rename the greeting"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Session == s.ID && e.Kind == "turn_end" }); err != nil {
		t.Fatal(err)
	}
	v := getApproval(t, ctx, p.c, s.ID)
	if !v.Pending || v.Attempt == "" {
		t.Fatalf("approval after proposal: %+v", v)
	}
	return s, v
}

// waitIdle waits until session id runs no turn (or is gone).
func waitIdle(t *testing.T, ctx context.Context, c *rpc.Client, id string) {
	t.Helper()
	for {
		var info struct {
			Busy bool `json:"busy"`
		}
		if err := c.Call(ctx, "plan/status", map[string]string{"session": id}, &info); refusalCode(err) == "not_found" {
			return // deleted
		} else if err != nil {
			t.Fatal(err)
		}
		if !info.Busy {
			return
		}
		if _, err := c.WaitEvent(ctx, func(e rpc.Event) bool {
			return e.Session == id && e.Kind == "status" && strings.Contains(string(e.Data), `"busy":false`)
		}); err != nil {
			t.Fatal(err)
		}
	}
}
