package session

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"planbridge/goal"
	"planbridge/internal/agent"
	"planbridge/internal/store"
)

// countingEngine records every request; it ends the Goal at its first
// request (update_goal complete) and answers the tool result with text.
type countingEngine struct {
	mu   sync.Mutex
	reqs []agent.Request
}

func (e *countingEngine) Name() string { return "counting" }
func (e *countingEngine) Stream(ctx context.Context, req agent.Request, onText func(string)) (agent.Response, error) {
	e.mu.Lock()
	e.reqs = append(e.reqs, req)
	e.mu.Unlock()
	if last := req.Messages[len(req.Messages)-1]; last.Role == agent.RoleTool {
		return agent.Response{Text: "done"}, nil
	}
	return agent.Response{ToolCalls: []agent.ToolCall{{ID: "end", Name: "update_goal", Arguments: json.RawMessage(`{"status":"complete"}`)}}}, nil
}

func (e *countingEngine) requests() []agent.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]agent.Request(nil), e.reqs...)
}

// TestGoalKickoffFailpoints crashes a Goal's kickoff in process at each of
// its crash points (the turn's goroutine stops there for good, as the
// process would; nothing after it runs), then "restarts" a second manager
// over the same database and recovers through the one recovery path.
// Before the prompt's commit ("goal.kickoff") nothing of the turn is
// stored and the recovery sends the kickoff; after it ("goal.dispatched")
// the kickoff is stored, its pending mark cleared in the same commit, and
// the recovery continues the Goal, told it was interrupted, never sending
// the kickoff again. Either way the first process sent nothing, the
// kickoff is in the conversation once and the Goal completes.
func TestGoalKickoffFailpoints(t *testing.T) {
	const objective = "tidy the repository"
	for _, tc := range []struct {
		point       string
		recoverLast string // the last user message the recovery's first request carries
	}{
		{"goal.kickoff", goal.KickoffPrompt(objective, "")},
		{"goal.dispatched", "interrupted"},
	} {
		t.Run(tc.point, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, err := store.Open(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()

			first := &countingEngine{}
			m1 := NewManager(Config{Store: st, Engine: first})
			crashed := make(chan struct{})
			var seen []string
			m1.failpoint = func(name string) {
				seen = append(seen, name)
				if name == tc.point {
					close(crashed)
					runtime.Goexit() // the process stops here
				}
			}
			s1, err := m1.Create(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s1.GoalCommand(ctx, objective); err != nil {
				t.Fatal(err)
			}
			select {
			case <-crashed:
			case <-ctx.Done():
				t.Fatalf("never reached %s (failpoints seen: %v)", tc.point, seen)
			}
			if n := len(first.requests()); n != 0 {
				t.Fatalf("the crashed process sent %d requests", n)
			}
			kickoffs := func() int {
				msgs, err := st.Messages(ctx, s1.ID())
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, m := range msgs {
					if m.Role == agent.RoleUser && strings.Contains(m.Content, objective) && goal.IsObjectiveKickoff(m.Content) {
						n++
					}
				}
				return n
			}
			row, err := st.CurrentGoal(ctx, s1.ID())
			if err != nil {
				t.Fatal(err)
			}
			wantStored := map[bool]int{true: 1}[tc.point == "goal.dispatched"]
			if got := kickoffs(); got != wantStored || (row.Kickoff == "") != (wantStored == 1) {
				t.Fatalf("at %s: kickoff stored %d times (want %d), pending mark %q", tc.point, got, wantStored, row.Kickoff)
			}

			// Restart: a second manager over the same database.
			second := &countingEngine{}
			m2 := NewManager(Config{Store: st, Engine: second})
			defer m2.Close()
			s2, err := m2.Get(ctx, s1.ID())
			if err != nil {
				t.Fatal(err)
			}
			if g := s2.Goal(); g == nil || g.Status != goal.Paused || g.Reason != goal.ReasonRestart {
				t.Fatalf("after the restart the Goal is %+v, want paused by restart", g)
			}
			res, err := s2.Recover(ctx)
			if err != nil || res.Action != "goal" {
				t.Fatalf("recover: %+v %v", res, err)
			}
			waitFor(t, ctx, func() bool { g := s2.Goal(); return g != nil && g.Status == goal.Complete })
			if err := s2.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			reqs := second.requests()
			if len(reqs) == 0 {
				t.Fatal("the recovery sent nothing")
			}
			if last := lastUser(reqs[0].Messages); !strings.Contains(last, tc.recoverLast) {
				t.Errorf("the recovery's first request ends with %.80q, want it to carry %.80q", last, tc.recoverLast)
			}
			if got := kickoffs(); got != 1 {
				t.Errorf("the kickoff is stored %d times over both processes, want 1", got)
			}
			for i, r := range reqs {
				n := 0
				for _, m := range r.Messages {
					if m.Role == agent.RoleUser && goal.IsObjectiveKickoff(m.Content) {
						n++
					}
				}
				if n != 1 {
					t.Errorf("request %d carries the kickoff %d times, want 1", i+1, n)
				}
			}
		})
	}
}
