package turn

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/review"
)

// TestRun runs one turn per case over fakes and checks what was committed
// (in which operations, with what), what was sent, what the person saw and
// what the session was told, for each way a turn can end: settled, a
// prompt, step or settlement commit that fails, a cancelled dispatch, a
// kickoff dispatched in its prompt's transaction, a stale or retried Goal
// turn, compaction first.
func TestRun(t *testing.T) {
	settle := func(st *store.TurnStep) { st.DeleteRecord = true }
	failAll := func(string, int) error { return errDisk }
	for _, c := range []struct {
		name     string
		row      store.Session
		req      Req
		replies  []string
		fail     func(op string, n int) error
		cancel   string // "before": ctx cancelled before Run; "stream": while the model streams
		noEngine bool
		drop     string
		retry    bool
		models   handoff.ModelConfig
		carry    string // a tracked plan's title ("": none)
		planDone bool   // that plan is done: a compaction does not carry it

		err        string // "" for nil; else a substring of the error
		kept       bool   // a *PromptKept
		tried      string // commit operations attempted, in order
		kinds      string // event kinds, text deltas joined
		requests   int
		title      string // the session row's title afterwards (in memory)
		template   bool   // the full reminder's delivery recorded in memory
		settled    bool   // a committed step carries the settlement
		dropped    []int64
		failpoints []string
		goalBooked int
		requeued   int
		unsent     int // the turn ended with its prompt not stored
	}{
		{name: "settled", req: Req{Text: "hello world", QueueID: 7, Settle: settle},
			tried: "prompt turn turn", kinds: "user turn_start text turn_end", requests: 1, title: "hello world", settled: true},
		{name: "titled before", row: store.Session{Title: "kept"}, req: Req{Text: "hello world"},
			tried: "prompt turn turn", kinds: "user turn_start text turn_end", requests: 1, title: "kept"},
		{name: "queued prompt commit fails", req: Req{Text: "hello world", QueueID: 7, Settle: settle}, fail: failFrom(store.OpPrompt, 0),
			err: "no space", kept: true, tried: "prompt turn", kinds: "user turn_start error turn_end", title: "hello world", unsent: 1},
		{name: "prompt and settlement commits fail", req: Req{Text: "hello world", QueueID: 7}, fail: failAll,
			err: "no space", kept: true, tried: "prompt turn", kinds: "user turn_start error turn_end", unsent: 1},
		{name: "unqueued prompt commit fails", req: Req{Text: "hello world"}, fail: failFrom(store.OpPrompt, 0),
			err: "no space", tried: "prompt turn", kinds: "user turn_start error turn_end", title: "hello world", unsent: 1},
		{name: "step commit fails", req: Req{Text: "hello world", Settle: settle}, fail: failFrom(store.OpTurn, 0),
			err: "no space", tried: "prompt turn turn", kinds: "user turn_start text error turn_end", requests: 1, title: "hello world"},
		{name: "settlement commit fails", row: store.Session{Plan: true, PlanEpisode: 1}, req: Req{Text: "hello world", Settle: settle},
			fail: failFrom(store.OpTurn, 1), err: "could not save the turn: ", tried: "prompt turn turn",
			kinds: "user turn_start text error turn_end", requests: 1, title: "hello world"},
		{name: "full reminder delivered", row: store.Session{Plan: true, PlanEpisode: 1}, req: Req{Text: "hello world"},
			tried: "prompt turn turn", kinds: "user turn_start text turn_end", requests: 1, title: "hello world", template: true},
		{name: "cancelled dispatch", row: store.Session{Plan: true, PlanEpisode: 1},
			req:     Req{Text: "hello world", QueueID: 7, Settle: settle, Dispatch: func(st *store.TurnStep) { st.Record = "dispatched" }, Dispatched: func() {}},
			replies: []string{"block"}, cancel: "stream", err: "context canceled", tried: "dispatch turn", kinds: "user turn_start turn_end",
			requests: 1, title: "hello world", failpoints: []string{"handoff.dispatched"}},
		{name: "cancelled before the prompt", req: Req{Text: "hello world", QueueID: 3}, cancel: "before",
			err: "context canceled", tried: "prompt turn", kinds: "user turn_start turn_end", title: "hello world", dropped: []int64{3}, unsent: 1},
		{name: "goal kickoff dispatched with its prompt", req: Req{Text: "go", Goal: goal.Turn{ID: "g1", Kickoff: true},
			Dispatch: func(st *store.TurnStep) { st.Record = "dispatched" }, Dispatched: func() {}},
			tried: "dispatch turn turn", kinds: "user turn_start text turn_end", requests: 1, title: "go",
			failpoints: []string{"goal.kickoff", "goal.dispatched"}, goalBooked: 1},
		{name: "kickoff whose dispatch commit fails", req: Req{Text: "go", Goal: goal.Turn{ID: "g1", Kickoff: true},
			Dispatch: func(st *store.TurnStep) { st.Record = "dispatched" }, Dispatched: func() {}}, fail: failFrom(store.OpDispatch, 0),
			err: "no space", tried: "dispatch turn", kinds: "user turn_start error turn_end", title: "go", failpoints: []string{"goal.kickoff"}, unsent: 1},
		{name: "stale goal turn", req: Req{Text: "go", QueueID: 5, Goal: goal.Turn{ID: "g1", Continuation: true}}, drop: "the Goal was cleared",
			tried: "", kinds: "notice", dropped: []int64{5}},
		{name: "goal turn retried by the goal", req: Req{Text: "go", Goal: goal.Turn{ID: "g1", Continuation: true}}, replies: []string{"transient"},
			retry: true, err: "transient", tried: "prompt turn", kinds: "user turn_start error turn_end", requests: 1, title: "go",
			goalBooked: 1, requeued: 1},
		{name: "person's turn retried once", req: Req{Text: "hello world"}, replies: []string{"transient", "done"},
			tried: "prompt turn turn", kinds: "user turn_start notice text turn_end", requests: 2, title: "hello world"},
		{name: "no engine", req: Req{Text: "hello world", Settle: settle}, noEngine: true, err: "no model engine is configured",
			tried: "turn", kinds: "user turn_start error turn_end", title: "hello world", unsent: 1},
		{name: "unknown model", req: Req{Text: "hello world"}, models: handoff.ModelConfig{Default: handoff.Policy{Model: "m9"}, Models: []handoff.Model{{Name: "m1"}}},
			err: `model "m9" is not available`, tried: "turn", kinds: "user turn_start error turn_end", title: "hello world", unsent: 1},
		{name: "compaction of a plan done", req: Req{Text: "hello world"}, models: handoff.ModelConfig{ContextWindow: 1}, carry: "DONE-PLAN", planDone: true,
			replies: []string{"the summary", "done"}, tried: "segment prompt turn turn", kinds: "notice compacted user turn_start text turn_end",
			requests: 2, title: "hello world"},
		{name: "compaction first", req: Req{Text: "hello world"}, models: handoff.ModelConfig{ContextWindow: 1}, carry: "CARRIED-PLAN",
			replies: []string{"the summary", "done"}, tried: "segment prompt turn turn", kinds: "notice compacted user turn_start text turn_end",
			requests: 2, title: "hello world"},
		{name: "compaction fails", req: Req{Text: "hello world"}, models: handoff.ModelConfig{ContextWindow: 1},
			replies: []string{"the summary", "done"}, fail: failFrom("segment", 0), tried: "segment prompt turn turn",
			kinds: "notice error user turn_start text turn_end", requests: 2, title: "hello world"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, c.row)
			g.tr.fail, g.eng.replies = c.fail, c.replies
			g.host.drop, g.host.retry, g.host.models = c.drop, c.retry, c.models
			if c.carry != "" {
				g.host.plan = &review.TrackedPlan{Title: c.carry, Status: map[bool]string{true: review.ImplDone, false: review.ImplRunning}[c.planDone],
					Steps: []review.PlanStep{{ID: "s1", Imperative: "Do it", Status: "pending"}}}
			}
			if c.noEngine {
				g.host.engine = nil
			}
			dispatched := false
			if c.req.Dispatched != nil {
				c.req.Dispatched = func() { dispatched = true }
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			switch c.cancel {
			case "before":
				cancel()
			case "stream":
				g.eng.onBlock = cancel
			}
			err := g.r.Run(ctx, c.req)
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("Run: %v, want %q", err, c.err)
			}
			var kept *PromptKept
			if errors.As(err, &kept) != c.kept {
				t.Errorf("kept %v, want %v", kept != nil, c.kept)
			}
			if got := strings.Join(g.tr.tried, " "); got != c.tried {
				t.Errorf("commits tried %q, want %q", got, c.tried)
			}
			if got := g.events.kinds(); got != c.kinds {
				t.Errorf("events %q, want %q (errors %q)", got, c.kinds, g.events.errors())
			}
			if got := len(g.eng.requests()); got != c.requests {
				t.Errorf("%d model requests, want %d", got, c.requests)
			}
			row := g.host.snapshot()
			if row.Title != c.title {
				t.Errorf("title %q in memory, want %q", row.Title, c.title)
			}
			if got := row.TemplateEpisode == row.PlanEpisode && row.PlanEpisode > 0; got != c.template {
				t.Errorf("template delivered %v, want %v", got, c.template)
			}
			// The row in memory is what the last committed step wrote.
			if n := len(g.tr.steps); n > 0 {
				last := g.tr.steps[n-1].step.Session
				if last.Title != row.Title || last.TemplateEpisode != row.TemplateEpisode {
					t.Errorf("memory %q/%d differs from the last commit %q/%d", row.Title, row.TemplateEpisode, last.Title, last.TemplateEpisode)
				}
			}
			settledIn := slices.IndexFunc(g.tr.steps, func(s committed) bool { return s.step.DeleteRecord })
			if (settledIn >= 0) != c.settled {
				t.Errorf("settled %v, want %v", settledIn >= 0, c.settled)
			}
			if !slices.Equal(g.st.dropped, c.dropped) {
				t.Errorf("dropped %v, want %v", g.st.dropped, c.dropped)
			}
			if !slices.Equal(g.host.failpoints, c.failpoints) {
				t.Errorf("failpoints %v, want %v", g.host.failpoints, c.failpoints)
			}
			if len(g.host.booked) != c.goalBooked || len(g.host.requeued) != c.requeued || len(g.host.unsent) != c.unsent {
				t.Errorf("goal booked %d requeued %d unsent %d, want %d %d %d", len(g.host.booked), len(g.host.requeued), len(g.host.unsent),
					c.goalBooked, c.requeued, c.unsent)
			}
			for _, q := range g.host.requeued {
				if !q.Goal.Retried {
					t.Errorf("requeued %+v without its retry mark", q.Goal)
				}
			}
			// The prompt's commit carries the dispatch and the queue entry.
			if len(g.tr.steps) > 0 && (g.tr.steps[0].op == store.OpPrompt || g.tr.steps[0].op == store.OpDispatch) {
				p := g.tr.steps[0].step
				if p.Dequeue != c.req.QueueID {
					t.Errorf("prompt's commit dequeues %d, want %d", p.Dequeue, c.req.QueueID)
				}
				if (p.Record == "dispatched") != (c.req.Dispatch != nil) {
					t.Errorf("prompt's commit record %q", p.Record)
				}
			}
			// Dispatched is told exactly when the dispatch committed.
			if want := c.req.Dispatched != nil && len(g.tr.steps) > 0 && g.tr.steps[0].op == store.OpDispatch; dispatched != want {
				t.Errorf("dispatched %v, want %v", dispatched, want)
			}
			end, ok := g.events.turnEnd()
			if c.drop == "" && (!ok || end.Turn != 5 || end.OK != (c.err == "")) {
				t.Errorf("turn end %+v (%v), want turn 5 ok %v", end, ok, c.err == "")
			}
			if c.drop == "" && g.host.reports != 1 {
				t.Errorf("%d report checks, want 1", g.host.reports)
			}
			if c.carry != "" && (len(g.tr.rotated) != 1 || strings.Contains(g.tr.rotated[0], c.carry) == c.planDone || !strings.Contains(g.tr.rotated[0], "the summary")) {
				t.Errorf("compacted to %q", g.tr.rotated)
			}
		})
	}
}

// TestTurnNumbersContinue: turns are numbered after the log's last one,
// one by one.
func TestTurnNumbersContinue(t *testing.T) {
	g := newRig(t, store.Session{})
	for i := 0; i < 2; i++ {
		if err := g.r.Run(context.Background(), Req{Text: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	var turns []int64
	for _, d := range g.events.evs {
		if s, ok := d.(event.TurnStart); ok {
			turns = append(turns, s.Turn)
		}
	}
	if !slices.Equal(turns, []int64{5, 6}) {
		t.Errorf("turns %v, want [5 6]", turns)
	}
}

// TestBlocked: a refusal is counted in the row only with its commit
// (Plan refusals apart from the rest); a count whose commit fails leaves
// the row as it was and is told as an error event; a write outside the
// scope pauses the implementation.
func TestBlocked(t *testing.T) {
	for _, c := range []struct {
		name             string
		plan             bool
		code             string
		fail             error
		blocked, refused int64
		errors, paused   int
	}{
		{"plan refusal", true, agent.CodePlanBlocked, nil, 1, 0, 0, 0},
		{"other refusal in plan", true, agent.CodeProtectedPath, nil, 0, 1, 0, 0},
		{"outside plan", false, agent.CodePlanBlocked, nil, 0, 1, 0, 0},
		{"outside the scope", false, agent.CodeOutsideScope, nil, 0, 1, 0, 1},
		{"count commit fails", true, agent.CodePlanBlocked, errDisk, 0, 0, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, store.Session{})
			g.host.rowFail = c.fail
			k := &sink{r: g.r, plan: c.plan}
			k.Blocked(agent.ToolCall{ID: "c1", Name: "write_file"}, c.code, "why")
			row := g.host.snapshot()
			if row.BlockedTotal != c.blocked || row.RefusedTotal != c.refused {
				t.Errorf("blocked %d refused %d, want %d %d", row.BlockedTotal, row.RefusedTotal, c.blocked, c.refused)
			}
			if errs := g.events.errors(); len(errs) != c.errors || c.errors > 0 && !strings.Contains(errs[0], "no space") {
				t.Errorf("errors %q, want %d", errs, c.errors)
			}
			if !strings.Contains(g.events.kinds(), "blocked") || len(g.host.paused) != c.paused {
				t.Errorf("events %q paused %v", g.events.kinds(), g.host.paused)
			}
		})
	}
}

// TestDropQueuedFailureIsTold: a queue entry whose removal fails stays in
// the store, where the next start would run it again: the person is told.
func TestDropQueuedFailureIsTold(t *testing.T) {
	g := newRig(t, store.Session{})
	g.st.dropErr = errDisk
	g.host.drop = "the Goal was cleared"
	if err := g.r.Run(context.Background(), Req{Text: "go", QueueID: 9}); err != nil {
		t.Fatal(err)
	}
	if errs := g.events.errors(); len(errs) != 1 || !strings.Contains(errs[0], "could not be removed from the stored queue") {
		t.Errorf("errors %q", errs)
	}
}

// TestAskerExtendsTheScope: a call the person allowed extends the scope;
// a denied one does not; no asker, no question.
func TestAskerExtendsTheScope(t *testing.T) {
	g := newRig(t, store.Session{})
	if g.r.asker() != nil {
		t.Fatal("an asker without the host's")
	}
	g.host.asker = func(ctx context.Context, call agent.ToolCall, reason string) (bool, error) {
		return call.ID == "yes", nil
	}
	ask := g.r.asker()
	for _, id := range []string{"yes", "no"} {
		if _, err := ask(context.Background(), agent.ToolCall{ID: id}, ""); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(g.host.extended, []string{"yes"}) {
		t.Errorf("extended %v", g.host.extended)
	}
}

// TestSummarize: a summary goes to the summarization workload's model,
// after a notice; without an engine or with an unknown model nothing is
// sent.
func TestSummarize(t *testing.T) {
	for _, c := range []struct {
		name     string
		models   handoff.ModelConfig
		noEngine bool
		err      string
		requests int
	}{
		{"sent", handoff.ModelConfig{Workloads: map[string]handoff.Policy{handoff.WorkloadSummarization: {Model: "small"}}}, false, "", 1},
		{"no engine", handoff.ModelConfig{}, true, "no model engine is configured", 0},
		{"unknown model", handoff.ModelConfig{Default: handoff.Policy{Model: "m9"}, Models: []handoff.Model{{Name: "m1"}}}, false, "not available", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, store.Session{})
			g.host.models = c.models
			if c.noEngine {
				g.host.engine = nil
			}
			got, err := g.r.Summarize(context.Background(), "Summarizing...", "SYSTEM", "INPUT")
			if c.err == "" && (err != nil || got != "done") || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("Summarize %q, %v", got, err)
			}
			reqs := g.eng.requests()
			if len(reqs) != c.requests {
				t.Fatalf("%d requests", len(reqs))
			}
			if c.requests > 0 && (reqs[0].Model != "small" || reqs[0].Messages[0].Content != "SYSTEM" || reqs[0].Messages[1].Content != "INPUT" || g.events.kinds() != "notice") {
				t.Errorf("request %+v events %q", reqs[0], g.events.kinds())
			}
		})
	}
}

// TestToolResult: a completed call's edits are recorded (a failed call
// records nothing) and its result is shown, after its call.
func TestToolResult(t *testing.T) {
	g := newRig(t, store.Session{})
	k := &sink{r: g.r}
	for _, c := range []struct {
		id string
		ok bool
	}{{"w1", true}, {"w2", false}} {
		call := agent.ToolCall{ID: c.id, Name: "write_file", Arguments: []byte(`{"path":"notes.txt","content":"x"}`)}
		k.ToolCall(call)
		k.ToolResult(call, c.ok, "out")
	}
	if !slices.Equal(g.host.edited, []string{"w1"}) || g.events.kinds() != "tool_call tool_result tool_call tool_result" {
		t.Errorf("edited %v events %q", g.host.edited, g.events.kinds())
	}
}

// TestHandoffTurns: a kickoff moves its record to dispatched in its
// prompt's transaction (the record in memory follows only once that is
// durable) and deletes it in the settlement; a continuation says the
// implementation was interrupted and deletes the record when it settles.
// Both run under the accepted policy.
func TestHandoffTurns(t *testing.T) {
	for _, c := range []struct {
		name       string
		kickoff    bool
		fail       func(string, int) error
		err        string
		tried      string
		dispatched bool // the record in memory at dispatched
		deleted    bool // a committed step deletes the record
	}{
		{name: "kickoff", kickoff: true, tried: "dispatch turn turn", dispatched: true, deleted: true},
		{name: "kickoff whose dispatch fails", kickoff: true, fail: failFrom(store.OpDispatch, 0), err: "no space", tried: "dispatch turn"},
		{name: "kickoff whose settlement fails", kickoff: true, fail: failFrom(store.OpTurn, 1), err: "could not save the turn", tried: "dispatch turn turn", dispatched: true},
		{name: "continuation", tried: "prompt turn turn", deleted: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, store.Session{})
			g.tr.fail = c.fail
			rec := &handoff.Record{Step: handoff.StepKickoff, Policy: handoff.Policy{Model: "impl", Mode: "edits"}}
			want := rec.Dispatched().Marshal()
			req := Continuation(rec, &review.TrackedPlan{Title: "CARRIED", Steps: []review.PlanStep{{ID: "s1", Imperative: "Do it", Status: "pending"}}})
			if c.kickoff {
				req = Kickoff(rec, "PROMPT", "Implement the plan")
			}
			err := g.r.Run(context.Background(), req)
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("Run: %v, want %q", err, c.err)
			}
			if got := strings.Join(g.tr.tried, " "); got != c.tried {
				t.Errorf("commits tried %q, want %q", got, c.tried)
			}
			if (rec.Step == handoff.StepDispatched) != c.dispatched {
				t.Errorf("record in memory at %s", rec.Step)
			}
			if c.kickoff && len(g.tr.steps) > 0 && g.tr.steps[0].op == store.OpDispatch && g.tr.steps[0].step.Record != want {
				t.Errorf("the prompt's commit writes record %q, want %q", g.tr.steps[0].step.Record, want)
			}
			deleted := slices.ContainsFunc(g.tr.steps, func(s committed) bool { return s.step.DeleteRecord })
			if deleted != c.deleted {
				t.Errorf("record deleted %v, want %v", deleted, c.deleted)
			}
			for _, r := range g.eng.requests() {
				last := r.Messages[len(r.Messages)-1].Content
				if r.Model != "impl" || c.kickoff && !strings.Contains(last, "PROMPT") ||
					!c.kickoff && (!strings.Contains(last, "was interrupted") || !strings.Contains(last, "CARRIED")) {
					t.Errorf("request model %q, prompt %q", r.Model, last)
				}
			}
		})
	}
}
