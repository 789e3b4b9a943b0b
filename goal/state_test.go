package goal

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func stored(t *testing.T, g *Goal) string {
	t.Helper()
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStateLoad(t *testing.T) {
	paused := activeGoal(t, 0)
	paused.Pause(ReasonUser)
	ended := activeGoal(t, 0)
	if err := ended.RequestEnd("complete", "done"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		data      string
		restarted bool
		wantErr   bool
		changed   bool
		status    Status
		reason    string
	}{
		{name: "corrupt", data: "{not json", wantErr: true},
		{name: "active, same process", data: stored(t, activeGoal(t, 0)), status: Active},
		{name: "active after a restart comes back paused", data: stored(t, activeGoal(t, 0)), restarted: true, changed: true, status: Paused, reason: ReasonRestart},
		{name: "paused after a restart keeps its reason", data: stored(t, paused), restarted: true, status: Paused, reason: ReasonUser},
		{name: "an end requested before the crash is applied", data: stored(t, ended), restarted: true, changed: true, status: Complete, reason: "done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, changed, err := Load(tc.data, "kick", tc.restarted)
			if tc.wantErr {
				if err == nil || st.Goal != nil || changed {
					t.Fatalf("Load = %+v, %v, %v; want an error and no State", st, changed, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.changed || st.Goal.Status != tc.status || st.Goal.Reason != tc.reason || st.Kickoff != "kick" {
				t.Fatalf("Load = %v %q (kickoff %q), changed %v; want %v %q, changed %v", st.Goal.Status, st.Goal.Reason, st.Kickoff, changed, tc.status, tc.reason, tc.changed)
			}
		})
	}
}

func TestStateRecordAndView(t *testing.T) {
	var none State
	if _, ok := none.Record(time.Now()); ok {
		t.Fatal("Record of no Goal is ok")
	}
	if g, pending := none.View(); g != nil || pending {
		t.Fatalf("View of no Goal = %v, %v", g, pending)
	}
	if _, err := none.Cleared(); !errors.Is(err, ErrNoGoal) {
		t.Fatalf("Cleared of no Goal = %v, want ErrNoGoal", err)
	}
	g := activeGoal(t, 0)
	created := g.UpdatedAt
	st := State{Goal: g, Kickoff: "kick"}
	now := created.Add(time.Hour)
	r, ok := st.Record(now)
	if !ok || r.ID != g.ID || r.Kickoff != "kick" || !g.UpdatedAt.Equal(now) {
		t.Fatalf("Record = %+v, %v (UpdatedAt %v)", r, ok, g.UpdatedAt)
	}
	back, _, err := Load(r.Data, r.Kickoff, false)
	if err != nil || back.Goal.ID != g.ID || !back.Goal.UpdatedAt.Equal(now) || back.Kickoff != "kick" {
		t.Fatalf("Load(Record) = %+v, %v", back, err)
	}
	v, pending := st.View()
	if !pending || v == g || !reflect.DeepEqual(*v, *g) {
		t.Fatalf("View = %p %v, want a copy of %p with the kickoff pending", v, pending, g)
	}
	v.Objective = "changed in the copy"
	if g.Objective == v.Objective {
		t.Fatal("View shares the Goal")
	}
	c, err := st.Cleared()
	if err != nil || c.Kickoff != "" || c.ID != g.ID || st.Goal != g {
		t.Fatalf("Cleared = %+v, %v; the State must stay as it was", c, err)
	}
}

func TestStateNext(t *testing.T) {
	planGoal := func(t *testing.T) *Goal {
		g, err := New("g-1", "Implement the plan", 0, "work://plans/accepted-1.md#abc", Policy{}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	for _, tc := range []struct {
		name         string
		goal         func(*testing.T) *Goal
		kickoff      string
		retry        bool
		isKickoff    bool
		wantPrompt   string
		wantDisplay  string
		wantRetried  bool
		continuation bool
	}{
		{name: "objective kickoff", goal: func(t *testing.T) *Goal { return activeGoal(t, 0) }, kickoff: KickoffPrompt("ship it", ""), isKickoff: true,
			wantPrompt: KickoffPrompt("ship it", ""), wantDisplay: "Work toward Goal: ship it"},
		{name: "plan kickoff is the handoff's to name", goal: planGoal, kickoff: "the plan's kickoff", isKickoff: true,
			wantPrompt: "the plan's kickoff", wantDisplay: ""},
		{name: "plan Goal edited before its kickoff", goal: planGoal, kickoff: KickoffPrompt("new", "work://plans/accepted-1.md#abc"), isKickoff: true,
			wantPrompt: KickoffPrompt("new", "work://plans/accepted-1.md#abc"), wantDisplay: "Work toward Goal: Implement the plan"},
		{name: "continuation", goal: func(t *testing.T) *Goal { return activeGoal(t, 0) }, continuation: true,
			wantPrompt: ContinuePrompt, wantDisplay: "Continue Goal"},
		{name: "the retry mark is consumed", goal: func(t *testing.T) *Goal { return activeGoal(t, 0) }, retry: true, continuation: true,
			wantPrompt: ContinuePrompt, wantDisplay: "Continue Goal", wantRetried: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.goal(t)
			st := State{Goal: g, Kickoff: tc.kickoff, retry: tc.retry}
			turn, prompt, display := st.Next(tc.isKickoff)
			want := Turn{ID: g.ID, Objective: g.Objective, Kickoff: tc.isKickoff, Continuation: tc.continuation, Retried: tc.wantRetried}
			if !reflect.DeepEqual(turn, want) || prompt != tc.wantPrompt || display != tc.wantDisplay {
				t.Fatalf("Next = %+v %q %q; want %+v %q %q", turn, prompt, display, want, tc.wantPrompt, tc.wantDisplay)
			}
			if st.retry || st.Kickoff != tc.kickoff {
				t.Fatalf("after Next: retry %v kickoff %q; want the mark consumed and the kickoff kept until booked", st.retry, st.Kickoff)
			}
		})
	}
}

func TestStateAdmitDeliversNotesOnce(t *testing.T) {
	g := activeGoal(t, 0)
	st := State{Goal: g, notes: []string{"half the budget is used"}}
	if _, _, drop := st.Admit(Turn{ID: "g-other", Objective: "x", Continuation: true}, false); drop == "" || len(st.notes) != 1 {
		t.Fatalf("a stale turn: drop %q, notes %v; want dropped with the notes kept", drop, st.notes)
	}
	bound, suffix, drop := st.Admit(Turn{}, true)
	if drop != "" || bound.ID != g.ID || !strings.Contains(suffix, "half the budget is used") || st.notes != nil {
		t.Fatalf("a person's prompt: %+v %q %q, notes %v; want bound with the notes, then forgotten", bound, suffix, drop, st.notes)
	}
	if _, suffix, _ := st.Admit(Turn{ID: g.ID, Objective: g.Objective, Continuation: true}, false); suffix != "" {
		t.Fatalf("the notes were delivered twice: %q", suffix)
	}
	if bound, _, _ := st.Admit(Turn{}, false); bound.Bound() {
		t.Fatal("a turn with its own policy was bound to the Goal")
	}
}

func TestStateBook(t *testing.T) {
	transient := errors.New("connection reset")
	for _, tc := range []struct {
		name        string
		turn        func(g *Goal) Turn
		use         int64
		budget      int64
		err         error
		transient   bool
		ok          bool
		wantKickoff string
		wantRetry   bool
		wantRequeue bool
		wantNotes   int
		wantStatus  Status
	}{
		{name: "a turn of a replaced Goal changes nothing", turn: func(*Goal) Turn { return Turn{ID: "g-old", Kickoff: true} },
			wantKickoff: "kick", wantStatus: Active},
		{name: "the kickoff done", turn: func(g *Goal) Turn { return Turn{ID: g.ID, Objective: g.Objective, Kickoff: true} },
			ok: true, wantStatus: Active},
		{name: "a failed kickoff keeps its prompt and marks the retry", turn: func(g *Goal) Turn { return Turn{ID: g.ID, Objective: g.Objective, Kickoff: true} },
			err: transient, transient: true, ok: true, wantKickoff: "kick", wantRetry: true, wantStatus: Active},
		{name: "a person's turn is requeued, not marked", turn: func(g *Goal) Turn { return Turn{ID: g.ID, Objective: g.Objective} },
			err: transient, transient: true, ok: true, wantKickoff: "kick", wantRequeue: true, wantStatus: Active},
		{name: "a failed retry pauses", turn: func(g *Goal) Turn { return Turn{ID: g.ID, Objective: g.Objective, Continuation: true, Retried: true} },
			err: transient, transient: true, ok: true, wantKickoff: "kick", wantStatus: Paused},
		{name: "a budget note is kept for the next Goal turn", turn: func(g *Goal) Turn { return Turn{ID: g.ID, Objective: g.Objective, Continuation: true} },
			budget: 100, use: 60, ok: true, wantKickoff: "kick", wantNotes: 1, wantStatus: Active},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := activeGoal(t, tc.budget)
			st := State{Goal: g, Kickoff: "kick"}
			b, ok := st.Book(tc.turn(g), TurnUsage{InputTokens: tc.use}, tc.err, tc.transient)
			if ok != tc.ok || st.Kickoff != tc.wantKickoff || st.retry != tc.wantRetry || b.Requeue != tc.wantRequeue ||
				len(st.notes) != tc.wantNotes || g.Status != tc.wantStatus {
				t.Fatalf("Book = %+v, %v; State kickoff %q retry %v notes %v status %v", b, ok, st.Kickoff, st.retry, st.notes, g.Status)
			}
			if !ok && (g.Turns != 0 || g.TokensUsed != 0) {
				t.Fatalf("a turn of another Goal was booked: %+v", g)
			}
		})
	}
}

func TestStateAct(t *testing.T) {
	ctx := ActContext{Policy: Policy{Model: "m", Mode: "ask"}, Budget: 500, Now: time.Now()}
	for _, tc := range []struct {
		name        string
		goal        bool
		kickoff     string
		verb, rest  string
		ctx         ActContext
		wantErr     error
		wantKickoff string // the State's after the action
		wantNotes   bool   // the old notes are kept
		newGoal     bool
	}{
		{name: "start with none", verb: VerbStart, rest: "tidy", ctx: ctx, wantKickoff: KickoffPrompt("tidy", ""), newGoal: true},
		{name: "start in Plan is refused", verb: VerbStart, rest: "tidy", ctx: ActContext{InPlan: true}, wantErr: ErrInPlan},
		{name: "start over an unfinished Goal is refused", goal: true, kickoff: "kick", verb: VerbStart, rest: "tidy", ctx: ctx,
			wantErr: ErrUnfinished, wantKickoff: "kick", wantNotes: true},
		{name: "edit replaces a pending kickoff", goal: true, kickoff: "kick", verb: VerbEdit, rest: "ship it twice", ctx: ctx,
			wantKickoff: KickoffPrompt("ship it twice", ""), wantNotes: true},
		{name: "edit after the kickoff was sent adds none", goal: true, verb: VerbEdit, rest: "ship it twice", ctx: ctx, wantNotes: true},
		{name: "budget forgets the notes", goal: true, kickoff: "kick", verb: VerbBudget, rest: "1,000", ctx: ctx, wantKickoff: "kick"},
		{name: "a bad budget changes nothing", goal: true, kickoff: "kick", verb: VerbBudget, rest: "lots", ctx: ctx,
			wantErr: ErrBadBudget, wantKickoff: "kick", wantNotes: true},
		{name: "pause keeps the rest", goal: true, kickoff: "kick", verb: VerbPause, ctx: ctx, wantKickoff: "kick", wantNotes: true},
		{name: "no Goal", verb: VerbPause, ctx: ctx, wantErr: ErrNoGoal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st State
			var old *Goal
			if tc.goal {
				old = activeGoal(t, 0)
				st = State{Goal: old, Kickoff: tc.kickoff, notes: []string{"note"}, retry: true}
			}
			a, err := st.Act(tc.verb, tc.rest, tc.ctx)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Act err = %v, want %v", err, tc.wantErr)
			}
			if st.Kickoff != tc.wantKickoff || (len(st.notes) == 1) != tc.wantNotes {
				t.Fatalf("after %s: kickoff %q notes %v; want %q, notes kept %v", tc.verb, st.Kickoff, st.notes, tc.wantKickoff, tc.wantNotes)
			}
			if tc.newGoal {
				if st.Goal == nil || st.Goal != a.Goal || st.Goal.Budget != 500 || st.Goal.Policy != tc.ctx.Policy || st.retry || !a.Schedule {
					t.Fatalf("start: State %+v, Acted %+v", st, a)
				}
			} else if st.Goal != old {
				t.Fatalf("the Goal was replaced by %s", tc.verb)
			}
		})
	}
}

func TestStateRequestEnd(t *testing.T) {
	for _, tc := range []struct {
		name    string
		goal    bool
		args    string
		wantErr string
		reply   string
	}{
		{name: "arguments that do not decode", goal: true, args: `{"status":`, wantErr: "update_goal: invalid arguments"},
		{name: "no Goal", args: `{"status":"complete"}`, wantErr: "there is no active Goal"},
		{name: "an unknown status", goal: true, args: `{"status":"abandoned"}`, wantErr: "abandoned"},
		{name: "complete", goal: true, args: `{"status":" complete "}`,
			reply: "Recorded: the Goal becomes complete when this turn ends; finish your reply without further tool calls."},
		{name: "blocked with its summary", goal: true, args: `{"status":"blocked","summary":"no network"}`,
			reply: "Recorded: the Goal becomes blocked when this turn ends; finish your reply without further tool calls."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st State
			if tc.goal {
				st.Goal = activeGoal(t, 0)
			}
			reply, err := st.RequestEnd(json.RawMessage(tc.args))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || reply != "" {
					t.Fatalf("RequestEnd = %q, %v; want an error with %q", reply, err, tc.wantErr)
				}
				if st.Goal != nil && st.Goal.EndRequested != nil {
					t.Fatal("a refused request was recorded")
				}
				return
			}
			if err != nil || reply != tc.reply || st.Goal.EndRequested == nil || st.Goal.Status != Active {
				t.Fatalf("RequestEnd = %q, %v (end %+v, status %v)", reply, err, st.Goal.EndRequested, st.Goal.Status)
			}
		})
	}
	var spec map[string]any
	if err := json.Unmarshal(UpdateTool.Parameters, &spec); err != nil || UpdateTool.Name != "update_goal" {
		t.Fatalf("UpdateTool = %+v (%v)", UpdateTool, err)
	}
}

func TestStateDispatched(t *testing.T) {
	g := activeGoal(t, 0)
	st := State{Goal: g, Kickoff: "kick"}
	before := g.UpdatedAt
	if _, ok := st.Dispatched("g-other", time.Now()); ok {
		t.Fatal("a record for a Goal that is no longer the State's")
	}
	now := before.Add(time.Minute)
	r, ok := st.Dispatched(g.ID, now)
	if !ok || r.ID != g.ID || r.Kickoff != "" || st.Kickoff != "kick" || !g.UpdatedAt.Equal(before) {
		t.Fatalf("Dispatched = %+v, %v; State kickoff %q, UpdatedAt %v: the record has no kickoff, the State is untouched", r, ok, st.Kickoff, g.UpdatedAt)
	}
	back, _, err := Load(r.Data, r.Kickoff, false)
	if err != nil || !back.Goal.UpdatedAt.Equal(now) {
		t.Fatalf("Load(Dispatched) = %+v, %v", back.Goal, err)
	}
	st.KickoffSent("g-other")
	if st.Kickoff != "kick" {
		t.Fatal("another Goal's dispatch forgot this kickoff")
	}
	st.KickoffSent(g.ID)
	if st.Kickoff != "" {
		t.Fatal("the kickoff is still pending once sent")
	}
}

// TestStateUnsentKeepsNotes: the budget notes handed to a turn whose
// prompt was never stored come back, ahead of any noted since, and the
// next turn of the same Goal carries them; a turn of another Goal takes
// nothing back.
func TestStateUnsentKeepsNotes(t *testing.T) {
	g := &Goal{ID: "g-1", Objective: "ship", Status: Active}
	st := State{Goal: g, notes: []string{"half the budget is used"}}
	bound, suffix, drop := st.Admit(Turn{ID: g.ID, Objective: g.Objective, Continuation: true}, false)
	if drop != "" || suffix == "" || st.notes != nil {
		t.Fatalf("admit: %q %q, notes %v", suffix, drop, st.notes)
	}
	st.notes = []string{"three quarters are used"}
	st.Unsent(Turn{ID: "g-other", Notes: bound.Notes})
	if len(st.notes) != 1 {
		t.Fatalf("a turn of another Goal gave notes back: %v", st.notes)
	}
	st.Unsent(bound)
	if len(st.notes) != 2 || st.notes[0] != "half the budget is used" {
		t.Fatalf("after the unsent turn the notes are %v; want the handed one back first", st.notes)
	}
	_, suffix, _ = st.Admit(Turn{ID: g.ID, Objective: g.Objective, Continuation: true}, false)
	if !strings.Contains(suffix, "half the budget is used") || !strings.Contains(suffix, "three quarters are used") {
		t.Fatalf("the next turn carries %q; want both notes", suffix)
	}
}
