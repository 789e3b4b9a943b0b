package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/store"
	"planbridge/rpc"
)

// TestGoalCrashAtEveryFailpoint: crash at each failpoint of a Goal
// acceptance, restart, recover: never two Goals, never two kickoffs, never
// two turns at once.
func TestGoalCrashAtEveryFailpoint(t *testing.T) {
	for _, fp := range handoff.Failpoints {
		cx := "current"
		if fp == "handoff.summarized" {
			cx = "summary"
		}
		if fp == "handoff.kickoff" || fp == "handoff.dispatched" {
			continue // the Direct kickoff: a Goal's kickoff is goal.kickoff
		}
		t.Run(fp, func(t *testing.T) { goalCrash(t, fp, cx) })
	}
}

func goalCrash(t *testing.T, fp, cx string) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	script := writeScript(t, goalCompleteScript(cx == "summary"))
	p := startServeEnv(t, []string{handoff.FailpointEnv + "=" + fp}, state, "--engine", "script", "--script", script)
	s, v := proposeAndWait(t, ctx, p, ws)
	budget := int64(0)
	for _, ch := range []handoff.Change{{Axis: "execution", Value: "goal"}, {Axis: "budget", Budget: &budget},
		{Axis: "mode", Value: "full-auto"}, {Axis: "context", Value: cx}} {
		v = update(t, ctx, p.c, s.ID, v.Attempt, ch)
	}
	_ = p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil) // may die here
	if !waitExit(p, 20*time.Second) {
		t.Fatalf("did not stop at %s", fp)
	}
	// The killed process's events end at killedSeq: a turn it left open
	// never ends, and turn numbers carry on across the restart.
	killedSeq, err := p.opened(t).LastSeq(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	p2 := startServe(t, state, "--engine", "script", "--script", script)
	switch fp {
	case "handoff.archived":
		v := getApproval(t, ctx, p2.c, s.ID)
		if !v.Pending || v.Selection.Execution != "goal" {
			t.Fatalf("card after restart %+v", v)
		}
		if err := p2.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err != nil {
			t.Fatal(err)
		}
	case "handoff.goal", "goal.kickoff", "goal.dispatched":
		// The Goal is the recovery boundary: the record is gone, the Goal
		// came back paused; the one recovery path resumes it.
		if _, err := p2.opened(t).GetRetryRecord(ctx, s.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a retry record survived Goal construction: %v", err)
		}
		g := getGoal(t, ctx, p2.c, s.ID)
		if g.Goal == nil || g.Goal.Status != "paused" {
			t.Fatalf("goal after restart %+v", g.Goal)
		}
		var res struct{ Action string }
		if err := p2.c.Call(ctx, "handoff/recover", map[string]string{"session": s.ID}, &res); err != nil || res.Action != "goal" {
			t.Fatal(err, res)
		}
	default:
		if err := p2.c.Call(ctx, "handoff/retry", map[string]string{"session": s.ID}, nil); err != nil {
			t.Fatal(err)
		}
	}
	waitGoal(t, ctx, p2.c, s.ID, "complete")

	st, err := store.Open(ctx, state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, _ := st.CountGoals(ctx, s.ID); n != 1 {
		t.Errorf("%d Goals", n)
	}
	var opened struct {
		Events []rpc.Event `json:"events"`
	}
	if err := p2.c.Call(ctx, "session/open", map[string]any{"session": s.ID}, &opened); err != nil {
		t.Fatal(err)
	}
	kickoffs, open, lastTurn, restarted := 0, 0, 0.0, false
	for _, e := range opened.Events {
		var d map[string]any
		json.Unmarshal(e.Data, &d)
		switch e.Kind {
		case "user":
			if d["display"] == "Implement accepted plan as Goal" {
				kickoffs++
			}
		case "turn_start":
			turn, _ := d["turn"].(float64)
			if e.Seq > killedSeq && !restarted {
				restarted, open = true, 0 // a new process: a killed turn never ended
			}
			if turn <= lastTurn {
				t.Errorf("turn %v numbered after turn %v", turn, lastTurn)
			}
			lastTurn = turn
			if open > 0 {
				t.Errorf("turn %v started while another was running", turn)
			}
			open++
		case "turn_end":
			open--
		}
	}
	if kickoffs != 1 {
		t.Errorf("%d kickoffs", kickoffs)
	}
	_ = strings.Contains
	_ = context.Background
}
