package goalrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
)

type step struct{ verb, rest string }

// TestAct: each person's action, refused, committed, or with its commit
// failing (a disk full from that commit on). A refusal and a failed
// commit change nothing — in memory, in the store, in the event log, in
// the queue; a committed action leaves memory equal to the store and
// announces it once, then kicks or queues what it scheduled.
func TestAct(t *testing.T) {
	started := []step{{goal.VerbStart, "tidy the repository"}}
	paused := append(started, step{goal.VerbPause, ""})
	for _, tc := range []struct {
		name      string
		setup     []step
		plan      bool
		verb      string
		rest      string
		fail      bool
		code      string      // a refusal's code
		status    goal.Status // after a success
		kicks     int
		steered   bool
		cleared   bool
		msg       string
		committed bool
		check     func(t *testing.T, g *goal.Goal, pending bool, stored string)
	}{
		{name: "start", verb: goal.VerbStart, rest: "tidy the repository", status: goal.Active, kicks: 1, msg: "Goal started.", committed: true,
			check: func(t *testing.T, g *goal.Goal, pending bool, kickoff string) {
				if g.Policy != (goal.Policy{Model: "m", Effort: "low", Mode: "edits"}) || g.Budget != 1000 || !pending || !strings.Contains(kickoff, "tidy the repository") {
					t.Errorf("started %+v (kickoff %q, pending %v): want the session's mode, the default budget, the kickoff pending", g, kickoff, pending)
				}
			}},
		{name: "start in Plan", plan: true, verb: goal.VerbStart, rest: "tidy", code: CodeInvalid},
		{name: "start without an objective", verb: goal.VerbStart, code: CodeInvalid},
		{name: "start beside an unfinished Goal", setup: paused, verb: goal.VerbStart, rest: "another", code: CodeUnfinished},
		{name: "start, commit fails", verb: goal.VerbStart, rest: "tidy the repository", fail: true},
		{name: "pause", setup: started, verb: goal.VerbPause, status: goal.Paused, committed: true, msg: "Goal paused."},
		{name: "pause, commit fails", setup: started, verb: goal.VerbPause, fail: true},
		{name: "pause without a Goal", verb: goal.VerbPause, code: CodeInvalid},
		{name: "resume", setup: paused, verb: goal.VerbResume, status: goal.Active, kicks: 1, committed: true, msg: "Goal resumed."},
		{name: "resume with steering", setup: paused, verb: goal.VerbResume, rest: "start with the tests", status: goal.Active, steered: true, committed: true},
		{name: "resume, commit fails", setup: paused, verb: goal.VerbResume, fail: true},
		{name: "resume an active Goal", setup: started, verb: goal.VerbResume, code: CodeInvalid},
		{name: "budget", setup: started, verb: goal.VerbBudget, rest: "5000", status: goal.Active, committed: true,
			check: func(t *testing.T, g *goal.Goal, _ bool, _ string) {
				if g.Budget != 5000 {
					t.Errorf("budget %d, want 5000", g.Budget)
				}
			}},
		{name: "budget, commit fails", setup: started, verb: goal.VerbBudget, rest: "5000", fail: true},
		{name: "budget that is no number", setup: started, verb: goal.VerbBudget, rest: "lots", code: CodeInvalid},
		{name: "edit replaces the pending kickoff", setup: started, verb: goal.VerbEdit, rest: "tidy the tests", status: goal.Active, committed: true,
			check: func(t *testing.T, g *goal.Goal, pending bool, kickoff string) {
				if g.Objective != "tidy the tests" || !pending || !strings.Contains(kickoff, "tidy the tests") {
					t.Errorf("edited %q, kickoff %q", g.Objective, kickoff)
				}
			}},
		{name: "edit, commit fails", setup: started, verb: goal.VerbEdit, rest: "tidy the tests", fail: true},
		{name: "status commits nothing", setup: started, verb: goal.VerbStatus, status: goal.Active},
		{name: "clear", setup: started, verb: goal.VerbClear, cleared: true, committed: true, msg: "Goal cleared."},
		{name: "clear, commit fails", setup: started, verb: goal.VerbClear, fail: true},
		{name: "clear without a Goal", verb: goal.VerbClear, code: CodeInvalid},
		{name: "unknown verb", setup: started, verb: "bogus", code: CodeInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t)
			for _, s := range tc.setup {
				g.act(t, s.verb, s.rest)
			}
			g.host.plan = tc.plan
			if tc.fail {
				g.st.failFromNext()
			}
			before, pendingBefore := g.memory()
			rowsBefore, curBefore := g.st.snapshot()
			kindsBefore, kicksBefore := len(g.host.kinds()), g.host.kicks
			msg, err := g.r.Act(context.Background(), tc.verb, tc.rest, Defaults{Budget: 1000, Model: "m", Effort: "low"})
			after, pending := g.memory()
			rows, cur := g.st.snapshot()
			unchanged := func() {
				t.Helper()
				if !sameGoal(before, after) || pending != pendingBefore {
					t.Errorf("memory changed: %+v (pending %v), was %+v (pending %v)", after, pending, before, pendingBefore)
				}
				if !reflect.DeepEqual(rows, rowsBefore) || cur != curBefore {
					t.Errorf("the store changed: %v", rows)
				}
				if n := len(g.host.kinds()); n != kindsBefore || g.host.kicks != kicksBefore || len(g.host.enqueued) != 0 {
					t.Errorf("announced %v, kicked %d, queued %d", g.host.kinds()[kindsBefore:], g.host.kicks-kicksBefore, len(g.host.enqueued))
				}
			}
			switch {
			case tc.code != "":
				if c := refusalCode(err); c != tc.code {
					t.Fatalf("err %v (code %q), want code %q", err, c, tc.code)
				}
				if tc.code == CodeUnfinished && !strings.Contains(err.Error(), goal.UnfinishedHint) {
					t.Errorf("%q does not say what lifts it", err)
				}
				unchanged()
				return
			case tc.fail:
				if !errors.Is(err, syscall.ENOSPC) || refusalCode(err) != "" {
					t.Fatalf("err %v, want the commit's ENOSPC", err)
				}
				unchanged()
				return
			case err != nil:
				t.Fatal(err)
			}
			if tc.msg != "" && msg != tc.msg {
				t.Errorf("message %q, want %q", msg, tc.msg)
			}
			if !tc.committed {
				unchanged()
				if msg != before.Summary() {
					t.Errorf("status %q, want %q", msg, before.Summary())
				}
				return
			}
			stored, kickoff := g.st.stored(t)
			if tc.cleared {
				if after != nil || stored != nil || !rows[before.ID].Cleared {
					t.Errorf("after clear: memory %+v, stored %+v", after, stored)
				}
			} else {
				if !sameGoal(after, stored) || pending != (kickoff != "") {
					t.Errorf("memory %+v (pending %v) is not the store's %+v (kickoff %q)", after, pending, stored, kickoff)
				}
				if after.Status != tc.status {
					t.Errorf("status %v, want %v", after.Status, tc.status)
				}
			}
			if k := g.host.kinds()[kindsBefore:]; !reflect.DeepEqual(k, []string{"goal"}) {
				t.Errorf("announced %v, want one goal event", k)
			}
			if g.host.kicks-kicksBefore != tc.kicks {
				t.Errorf("%d kicks, want %d", g.host.kicks-kicksBefore, tc.kicks)
			}
			if tc.steered {
				if len(g.host.enqueued) != 1 {
					t.Fatalf("queued %d turns, want the steering", len(g.host.enqueued))
				}
				q := g.host.enqueued[0]
				if q.Text != tc.rest || q.Goal.ID != after.ID || q.Goal.Objective != after.Objective || q.Policy == nil || q.Policy.Mode != "edits" {
					t.Errorf("queued %+v", q)
				}
			} else if len(g.host.enqueued) != 0 {
				t.Errorf("queued %+v", g.host.enqueued)
			}
			if tc.check != nil {
				tc.check(t, after, pending, kickoff)
			}
		})
	}
}

// TestUpdateGoalTool: the model's update_goal. Its end is recorded only
// once stored; a commit that fails puts the Goal back and tells the model
// the end was not recorded, so the booking can never settle an end the
// store does not hold.
func TestUpdateGoalTool(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		fail       bool
		wantErr    string
		recorded   bool
	}{
		{name: "complete", args: `{"status":"complete","summary":"done"}`, recorded: true},
		{name: "blocked", args: `{"status":"blocked","summary":"needs a key"}`, recorded: true},
		{name: "commit fails", args: `{"status":"complete"}`, fail: true, wantErr: "the end was not recorded"},
		{name: "blocked without a summary", args: `{"status":"blocked"}`, wantErr: "summary"},
		{name: "not JSON", args: `{"status":`, wantErr: "invalid arguments"},
		{name: "unknown status", args: `{"status":"abandoned"}`, wantErr: "abandoned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t)
			g.act(t, goal.VerbStart, "tidy")
			tools := g.r.Tools()
			if len(tools) != 1 || tools[0].Spec.Name != goal.UpdateTool.Name || !tools[0].Meta.SessionOnly {
				t.Fatalf("tools %+v", tools)
			}
			if tc.fail {
				g.st.failFromNext()
			}
			rowsBefore, _ := g.st.snapshot()
			commits := g.st.commits
			reply, err := tools[0].Run(context.Background(), &agent.Env{}, json.RawMessage(tc.args))
			mem, _ := g.memory()
			stored, _ := g.st.stored(t)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if tc.fail && !errors.Is(err, syscall.ENOSPC) {
					t.Errorf("err %v does not carry the commit's cause", err)
				}
				if rows, _ := g.st.snapshot(); mem.EndRequested != nil || !reflect.DeepEqual(rows, rowsBefore) {
					t.Errorf("a refused end changed the Goal: memory %+v", mem.EndRequested)
				}
				if !tc.fail && g.st.commits != commits {
					t.Errorf("a refused end was committed")
				}
				return
			}
			if err != nil || !strings.HasPrefix(reply, "Recorded") {
				t.Fatalf("reply %q, %v", reply, err)
			}
			if mem.EndRequested == nil || !sameGoal(mem, stored) || mem.Status != goal.Active {
				t.Errorf("memory %+v, stored %+v: want the end requested in both, the Goal still active", mem, stored)
			}
		})
	}
	t.Run("offered only while active", func(t *testing.T) {
		g := newRig(t)
		if tools := g.r.Tools(); tools != nil {
			t.Errorf("tools with no Goal: %v", tools)
		}
		g.act(t, goal.VerbStart, "tidy")
		g.act(t, goal.VerbPause, "")
		if tools := g.r.Tools(); tools != nil {
			t.Errorf("tools of a paused Goal: %v", tools)
		}
	})
}

// TestBook: a finished Goal turn's booking, stored and announced; one
// whose commit fails stops the Goal and tells the person.
func TestBook(t *testing.T) {
	transient := fmt.Errorf("upstream: %w", agent.ErrTransient)
	for _, tc := range []struct {
		name     string
		budget   string // "" keeps the default
		end      string // update_goal's arguments during the turn
		followUp bool   // a person's prompt bound to the Goal, not its kickoff
		stale    bool   // the Goal was replaced before the booking
		usage    int
		err      error
		fail     bool
		retry    bool
		status   goal.Status
		kinds    []string
		errText  string
	}{
		{name: "kickoff done", usage: 100, status: goal.Active, kinds: []string{"goal"}},
		{name: "kickoff done, commit fails", usage: 100, fail: true, status: goal.Paused, kinds: []string{"error", "goal"}, errText: "so the Goal is paused"},
		{name: "ended, commit fails", usage: 100, end: `{"status":"complete"}`, fail: true, status: goal.Complete, kinds: []string{"error", "goal"}, errText: "stays as this turn left it"},
		{name: "ended", usage: 100, end: `{"status":"complete","summary":"all tidy"}`, status: goal.Complete, kinds: []string{"goal"}},
		{name: "budget used up", budget: "100", usage: 150, status: goal.BudgetLimited, kinds: []string{"goal", "notice"}},
		{name: "a follow-up's transient failure is retried", followUp: true, err: transient, retry: true, status: goal.Active, kinds: []string{"goal"}},
		{name: "a kickoff's transient failure is regenerated", err: transient, status: goal.Active, kinds: []string{"goal"}},
		{name: "a failure pauses", err: errors.New("bad request"), status: goal.Paused, kinds: []string{"goal"}},
		{name: "stale", stale: true, usage: 100, status: goal.Active},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t)
			g.act(t, goal.VerbStart, "tidy")
			if tc.budget != "" {
				g.act(t, goal.VerbBudget, tc.budget)
			}
			g.lock.Lock()
			turn := g.r.TurnLocked(true)
			g.lock.Unlock()
			if tc.followUp {
				turn.Goal.Kickoff = false
			}
			if tc.end != "" {
				if _, err := g.r.Tools()[0].Run(context.Background(), &agent.Env{}, json.RawMessage(tc.end)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.stale {
				g.act(t, goal.VerbClear, "")
				g.act(t, goal.VerbStart, "another")
			}
			before, _ := g.memory()
			storedBefore, _ := g.st.stored(t)
			if tc.fail {
				g.st.failFromNext()
			}
			commits, kinds := g.st.commits, len(g.host.kinds())
			retry := g.r.Book(context.Background(), turn.Goal, agent.Usage{InputTokens: tc.usage}, 0, tc.err)
			after, pending := g.memory()
			stored, _ := g.st.stored(t)
			if retry != tc.retry {
				t.Errorf("retry %v, want %v", retry, tc.retry)
			}
			if got := g.host.kinds()[kinds:]; !reflect.DeepEqual(got, tc.kinds) && (len(got) > 0 || len(tc.kinds) > 0) {
				t.Errorf("announced %v, want %v", got, tc.kinds)
			}
			if after.Status != tc.status {
				t.Errorf("status %v (%s), want %v", after.Status, after.Reason, tc.status)
			}
			switch {
			case tc.stale:
				if g.st.commits != commits || !sameGoal(after, before) {
					t.Errorf("a stale booking changed the Goal: %+v", after)
				}
			case tc.fail:
				if !sameGoal(stored, storedBefore) {
					t.Errorf("the store changed: %+v", stored)
				}
				e, _ := g.host.lastEvent("error").(event.Error)
				if !strings.Contains(e.Message, tc.errText) || !strings.Contains(e.Message, "no space left") {
					t.Errorf("told %q, want %q", e.Message, tc.errText)
				}
				if tc.status == goal.Paused && !strings.Contains(after.Reason, "could not be saved") {
					t.Errorf("reason %q", after.Reason)
				}
			default:
				if !sameGoal(after, stored) {
					t.Errorf("memory %+v is not the store's %+v", after, stored)
				}
				if tc.err == nil && after.TokensUsed != int64(tc.usage) || after.Turns != 1 {
					t.Errorf("booked %d tokens, %d turns", after.TokensUsed, after.Turns)
				}
				if tc.err == nil && !tc.followUp && pending {
					t.Error("the kickoff is still pending after it succeeded")
				}
			}
		})
	}
}

// TestUpdateGoal: the Goal step of a plan handoff. What decide returns is
// committed (CommitGoalStart) under both locks, and a commit that fails,
// or an error from decide, puts the Goal back — also when decide changed
// it in place.
func TestUpdateGoal(t *testing.T) {
	planned := func(t *testing.T) *goal.Goal {
		g, err := goal.New("g-plan", "implement the plan", 0, "work://plans/accepted-1.md#abc", goal.Policy{Mode: "auto"}, newRig(t).now)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	decideErr := errors.New("conflict")
	for _, tc := range []struct {
		name    string
		setup   bool // a paused Goal exists (changed in place by decide)
		decide  func(t *testing.T, cur *goal.Goal) (*goal.Goal, string, error)
		fail    bool
		wantErr error
		started bool
	}{
		{name: "a new Goal", decide: func(t *testing.T, cur *goal.Goal) (*goal.Goal, string, error) {
			return planned(t), "kickoff prompt", nil
		}, started: true},
		{name: "a new Goal, commit fails", fail: true, wantErr: syscall.ENOSPC, decide: func(t *testing.T, cur *goal.Goal) (*goal.Goal, string, error) {
			return planned(t), "kickoff prompt", nil
		}},
		{name: "reactivated in place", setup: true, decide: func(t *testing.T, cur *goal.Goal) (*goal.Goal, string, error) {
			return cur, "", cur.Resume()
		}, started: true},
		{name: "reactivated in place, commit fails", setup: true, fail: true, wantErr: syscall.ENOSPC, decide: func(t *testing.T, cur *goal.Goal) (*goal.Goal, string, error) {
			return cur, "", cur.Resume()
		}},
		{name: "decide refuses after changing it", setup: true, wantErr: decideErr, decide: func(t *testing.T, cur *goal.Goal) (*goal.Goal, string, error) {
			cur.Objective = "changed"
			return nil, "", decideErr
		}},
		{name: "nothing to start", decide: func(t *testing.T, cur *goal.Goal) (*goal.Goal, string, error) { return nil, "", nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t)
			if tc.setup {
				g.act(t, goal.VerbStart, "tidy")
				g.act(t, goal.VerbPause, "")
			}
			if tc.fail {
				g.st.failFromNext()
			}
			g.st.onCommit = func() {
				if g.lock.TryLock() {
					g.lock.Unlock()
					t.Error("the Goal start was committed without the aggregate's lock")
				}
				if g.r.writeMu.TryLock() {
					g.r.writeMu.Unlock()
					t.Error("the Goal start was committed without the Goal's write lock")
				}
			}
			before, pendingBefore := g.memory()
			rowsBefore, _ := g.st.snapshot()
			kinds := len(g.host.kinds())
			err := g.r.UpdateGoal(context.Background(), func(cur *goal.Goal) (*goal.Goal, string, error) { return tc.decide(t, cur) })
			after, pending := g.memory()
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if !tc.started {
				rows, _ := g.st.snapshot()
				if !sameGoal(after, before) || pending != pendingBefore || !reflect.DeepEqual(rows, rowsBefore) || len(g.host.kinds()) != kinds {
					t.Errorf("changed: memory %+v, events %v", after, g.host.kinds()[kinds:])
				}
				return
			}
			stored, kickoff := g.st.stored(t)
			if !sameGoal(after, stored) || after.Status != goal.Active || pending != (kickoff != "") || g.st.ops[len(g.st.ops)-1] != "start" {
				t.Errorf("memory %+v is not the started Goal %+v (ops %v)", after, stored, g.st.ops)
			}
			if k := g.host.kinds()[kinds:]; !reflect.DeepEqual(k, []string{"goal"}) {
				t.Errorf("announced %v", k)
			}
		})
	}
}

// TestLoad: the stored Goal comes back; an active one after a restart
// comes back paused and stored so (a failed commit fails the load); a
// corrupt record is ignored.
func TestLoad(t *testing.T) {
	active := newRig(t)
	active.act(t, goal.VerbStart, "tidy")
	activeRow, _ := active.st.CurrentGoal(context.Background(), "s")
	for _, tc := range []struct {
		name      string
		row       *store.GoalRow
		restarted bool
		fail      bool
		wantErr   bool
		status    goal.Status
		none      bool
		commits   int
	}{
		{name: "none", none: true},
		{name: "same process", row: &activeRow, status: goal.Active},
		{name: "after a restart", row: &activeRow, restarted: true, status: goal.Paused, commits: 1},
		{name: "after a restart, commit fails", row: &activeRow, restarted: true, fail: true, wantErr: true},
		{name: "corrupt", row: &store.GoalRow{ID: "g-bad", SessionID: "s", Data: "{not json"}, restarted: true, none: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newFakeStore()
			if tc.row != nil {
				st.rows[tc.row.ID], st.current = *tc.row, tc.row.ID
			}
			if tc.fail {
				st.failFrom = 1
			}
			g := newRig(t)
			r, err := Load(context.Background(), Config{Session: "s", Store: st, Host: g.host, Lock: g.lock, Logger: quiet}, tc.restarted)
			if tc.wantErr != (err != nil) {
				t.Fatalf("err %v", err)
			}
			if err != nil {
				return
			}
			mem := r.Goal()
			if tc.none {
				if mem != nil {
					t.Fatalf("loaded %+v", mem)
				}
				return
			}
			if mem.Status != tc.status || len(st.ops) != tc.commits {
				t.Fatalf("loaded %v, %d commits", mem.Status, len(st.ops))
			}
			if stored, _ := st.stored(t); !sameGoal(mem, stored) {
				t.Errorf("memory %+v is not the store's %+v", mem, stored)
			}
			if tc.restarted && mem.Reason != goal.ReasonRestart {
				t.Errorf("reason %q", mem.Reason)
			}
			if got := StoredSummary(context.Background(), st, "s"); !strings.HasPrefix(got, "Goal paused") {
				t.Errorf("stored summary %q, want the Goal as a restart shows it", got)
			}
		})
	}
	if got := StoredSummary(context.Background(), newFakeStore(), "s"); got != "" {
		t.Errorf("summary of none %q", got)
	}
	// A listing shows an active Goal as paused, as opening it would.
	if got := StoredSummary(context.Background(), active.st, "s"); !strings.HasPrefix(got, "Goal paused") {
		t.Errorf("stored summary of an active Goal %q", got)
	}
}

// TestKickoffDispatch: the kickoff turn marks its kickoff sent in the
// prompt's transaction (Dispatch) and in memory only once that committed
// (Dispatched); a Goal replaced meanwhile is not touched.
func TestKickoffDispatch(t *testing.T) {
	g := newRig(t)
	g.act(t, goal.VerbStart, "tidy")
	g.lock.Lock()
	turn := g.r.TurnLocked(true)
	g.lock.Unlock()
	mem, _ := g.memory()
	if !turn.Goal.Kickoff || turn.Goal.ID != mem.ID || !goal.IsObjectiveKickoff(turn.Text) || turn.Display != "Work toward Goal: tidy" || turn.Policy.Mode != "edits" {
		t.Fatalf("kickoff turn %+v", turn)
	}
	var ts store.TurnStep
	turn.Dispatch(&ts)
	if ts.Goal == nil || ts.Goal.ID != mem.ID || ts.Goal.Kickoff != "" {
		t.Fatalf("the prompt's commit carries %+v, want the Goal with no kickoff", ts.Goal)
	}
	if _, pending := g.memory(); !pending {
		t.Fatal("the kickoff was marked sent before its commit")
	}
	turn.Dispatched()
	if _, pending := g.memory(); pending {
		t.Fatal("the kickoff is still pending after its commit")
	}

	// The Goal replaced between the choice and the commit.
	g.act(t, goal.VerbClear, "")
	g.act(t, goal.VerbStart, "first")
	g.lock.Lock()
	old := g.r.TurnLocked(true)
	g.lock.Unlock()
	g.act(t, goal.VerbClear, "")
	g.act(t, goal.VerbStart, "second")
	ts = store.TurnStep{}
	old.Dispatch(&ts)
	old.Dispatched()
	if _, pending := g.memory(); ts.Goal != nil || !pending {
		t.Errorf("a stale kickoff touched the new Goal: row %+v, pending %v", ts.Goal, pending)
	}

	g.lock.Lock()
	cont := g.r.TurnLocked(false)
	g.lock.Unlock()
	if cont.Goal.Continuation != true || cont.Text != goal.ContinuePrompt || cont.Dispatch != nil {
		t.Errorf("continuation %+v", cont)
	}
}

// TestPauses: a pause no caller waits on (goal.Decide's) and one for the
// scope; a commit that fails keeps the pause in memory (the safe side)
// and says so.
func TestPauses(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("decided, commit fails %v", fail), func(t *testing.T) {
			g := newRig(t)
			g.act(t, goal.VerbStart, "tidy")
			if fail {
				g.st.failFromNext()
			}
			n := len(g.host.kinds())
			g.lock.Lock()
			g.r.DecidedPauseLocked(goal.ReasonPlanChanged)
			g.lock.Unlock()
			want := []string{"goal"}
			if fail {
				want = []string{"error", "goal"}
			}
			g.host.waitEvents(t, n+len(want))
			if k := g.host.kinds()[n:]; !reflect.DeepEqual(k, want) {
				t.Errorf("announced %v, want %v", k, want)
			}
			mem, _ := g.memory()
			stored, _ := g.st.stored(t)
			if mem.Status != goal.Paused || mem.Reason != goal.ReasonPlanChanged {
				t.Errorf("memory %v %q", mem.Status, mem.Reason)
			}
			if fail != (stored.Status == goal.Active) {
				t.Errorf("stored %v", stored.Status)
			}
		})
		t.Run(fmt.Sprintf("for the scope, commit fails %v", fail), func(t *testing.T) {
			g := newRig(t)
			g.act(t, goal.VerbStart, "tidy")
			if fail {
				g.st.failFromNext()
			}
			n := len(g.host.kinds())
			err := g.r.Pause(context.Background(), "outside the declared scope: x")
			if fail != errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("err %v", err)
			}
			if k := g.host.kinds()[n:]; !reflect.DeepEqual(k, []string{"goal"}) {
				t.Errorf("announced %v", k)
			}
			if mem, _ := g.memory(); mem.Status != goal.Paused {
				t.Errorf("memory %v", mem.Status)
			}
		})
	}
}

// TestAdmitAndSituation: a person's prompt joins the active Goal under
// its policy; a turn that brings its own policy does not; a stale Goal
// turn is dropped; budget notes go out once, with the next Goal turn; the
// situation tells goal.Decide whether the Goal's plan still holds.
func TestAdmitAndSituation(t *testing.T) {
	g := newRig(t)
	g.act(t, goal.VerbStart, "tidy")
	g.act(t, goal.VerbBudget, "1000")
	mem, _ := g.memory()

	var bound goal.Turn
	var pol *handoff.Policy
	text := "a follow-up"
	if drop := g.r.Admit(&bound, &pol, &text); drop != "" || bound.ID != mem.ID || pol == nil || pol.Mode != "edits" || text != "a follow-up" {
		t.Fatalf("admitted %+v %+v %q (drop %q)", bound, pol, text, drop)
	}
	own := &handoff.Policy{Mode: "ask"}
	var free goal.Turn
	if drop := g.r.Admit(&free, &own, &text); drop != "" || free.Bound() || own.Mode != "ask" {
		t.Errorf("a turn with its own policy was bound: %+v %+v", free, own)
	}
	// 60% of the budget: a note for the model, delivered with the next Goal turn only.
	g.r.Book(context.Background(), bound, agent.Usage{InputTokens: 600}, 0, nil)
	for i, want := range []bool{true, false} {
		next, p, txt := bound, (*handoff.Policy)(nil), "continue"
		if drop := g.r.Admit(&next, &p, &txt); drop != "" || strings.Contains(txt, "goal_budget_note") != want {
			t.Errorf("Goal turn %d: prompt %q (drop %q), want a note %v", i, txt, drop, want)
		}
	}
	g.act(t, goal.VerbEdit, "tidy more")
	stale, p, txt := bound, (*handoff.Policy)(nil), "continue"
	if drop := g.r.Admit(&stale, &p, &txt); drop == "" || txt != "continue" {
		t.Errorf("a turn of the old objective was admitted: %q", txt)
	}

	// A Goal implementing a plan: the situation checks its hash.
	h := newRig(t)
	if err := h.r.UpdateGoal(context.Background(), func(*goal.Goal) (*goal.Goal, string, error) {
		pg, err := goal.New("g-p", "implement", 0, "work://plans/accepted-1.md#abc", goal.Policy{}, h.now)
		return pg, "kickoff", err
	}); err != nil {
		t.Fatal(err)
	}
	for _, hash := range []string{"abc", "changed"} {
		h.host.artifacts["plans/accepted-1.md"] = hash
		h.lock.Lock()
		sit := h.r.SituationLocked(goal.Situation{QueuedReady: 2})
		busy := h.r.SituationLocked(goal.Situation{Busy: true})
		h.lock.Unlock()
		if sit.PlanRefMatches != (hash == "abc") || !sit.KickoffPending || sit.QueuedReady != 2 || busy.PlanRefMatches {
			t.Errorf("hash %s: situation %+v, busy %+v", hash, sit, busy)
		}
	}
	h.lock.Lock()
	paused, pending := h.r.RecoveryLocked()
	refusal := h.r.PlanRefusalLocked()
	h.lock.Unlock()
	if paused || !pending || refusalCode(refusal) != CodeUnfinished {
		t.Errorf("recovery %v %v, Plan refusal %v", paused, pending, refusal)
	}
}

// TestUnsent: a Goal turn that ended before its prompt was stored pauses
// the Goal (its kickoff still pending) so it is not chosen again in a
// loop; a cancelled turn, a person's turn, a stale one change nothing.
func TestUnsent(t *testing.T) {
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		err      error
		followUp bool
		stale    bool
		fail     bool
		paused   bool
		kinds    []string
	}{
		{name: "prompt commit failed", err: errDiskFull, paused: true, kinds: []string{"goal"}},
		{name: "prompt commit failed, the pause's too", err: errDiskFull, fail: true, paused: true, kinds: []string{"error", "goal"}},
		{name: "no engine", err: errors.New("no model engine is configured"), paused: true, kinds: []string{"goal"}},
		{name: "interrupted", err: fmt.Errorf("send: %w", context.Canceled)},
		{name: "the turn's context is done", ctx: cancelled, err: errDiskFull},
		{name: "no error", err: nil},
		{name: "a person's turn bound to the Goal", followUp: true, err: errDiskFull},
		{name: "stale", stale: true, err: errDiskFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t)
			g.act(t, goal.VerbStart, "tidy")
			g.lock.Lock()
			turn := g.r.TurnLocked(true)
			g.lock.Unlock()
			if tc.followUp {
				turn.Goal.Kickoff = false
			}
			if tc.stale {
				g.act(t, goal.VerbClear, "")
				g.act(t, goal.VerbStart, "another")
			}
			if tc.fail {
				g.st.failFromNext()
			}
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			n, commits := len(g.host.kinds()), g.st.commits
			g.r.Unsent(ctx, turn.Goal, tc.err)
			mem, pending := g.memory()
			if got := g.host.kinds()[n:]; !reflect.DeepEqual(got, tc.kinds) && (len(got) > 0 || len(tc.kinds) > 0) {
				t.Errorf("announced %v, want %v", got, tc.kinds)
			}
			if !pending {
				t.Error("the kickoff is no longer pending")
			}
			if !tc.paused {
				if mem.Status != goal.Active || g.st.commits != commits {
					t.Errorf("changed: %v, %d commits", mem.Status, g.st.commits-commits)
				}
				return
			}
			if mem.Status != goal.Paused || !strings.Contains(mem.Reason, "could not be sent: "+tc.err.Error()) {
				t.Errorf("memory %v %q", mem.Status, mem.Reason)
			}
			if stored, _ := g.st.stored(t); tc.fail != (stored.Status == goal.Active) {
				t.Errorf("stored %v", stored.Status)
			}
		})
	}
}
