package goal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func activeGoal(t *testing.T, budget int64) *Goal {
	t.Helper()
	g, err := New("g-1", "ship it", budget, "", Policy{Model: "m"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestAdmit(t *testing.T) {
	paused := func(t *testing.T) *Goal { g := activeGoal(t, 0); g.Pause("by hand"); return g }
	edited := func(t *testing.T) *Goal { g := activeGoal(t, 0); g.Objective = "ship it twice"; return g }
	own := Turn{ID: "g-1", Objective: "ship it", Continuation: true}
	for _, tc := range []struct {
		name       string
		goal       func(*testing.T) *Goal // nil: no Goal
		turn       Turn
		free       bool
		notes      []string
		wantBound  bool
		wantSuffix string
		wantDrop   string
	}{
		{"a Goal turn of the active Goal runs", activeGoal0, own, false, nil, true, "", ""},
		{"cleared since it was scheduled", nil, own, false, nil, true, "", "the Goal was cleared"},
		{"replaced", func(t *testing.T) *Goal { g := activeGoal(t, 0); g.ID = "g-2"; return g }, own, false, nil, true, "", "the Goal was replaced"},
		{"paused", paused, own, false, nil, true, "", "the Goal is paused"},
		{"edited", edited, own, false, nil, true, "", "the Goal was edited"},
		{"a person's prompt joins the active Goal", activeGoal0, Turn{}, true, nil, true, "", ""},
		{"a prompt with its own policy stays its own", activeGoal0, Turn{}, false, []string{"50%"}, false, "", ""},
		{"a prompt while the Goal is paused stays its own", paused, Turn{}, true, []string{"50%"}, false, "", ""},
		{"no Goal", nil, Turn{}, true, nil, false, "", ""},
		{"notes ride with a Goal turn", activeGoal0, own, false, []string{"50% used", "80% used"}, true,
			"\n\n<goal_budget_note>50% used\n80% used</goal_budget_note>", ""},
		{"and with a prompt that joined it", activeGoal0, Turn{}, true, []string{"50% used"}, true,
			"\n\n<goal_budget_note>50% used</goal_budget_note>", ""},
		{"a dropped turn takes no notes", paused, own, false, []string{"50% used"}, true, "", "the Goal is paused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g *Goal
			if tc.goal != nil {
				g = tc.goal(t)
			}
			bound, suffix, drop := Admit(g, tc.turn, tc.free, tc.notes)
			if bound.Bound() != tc.wantBound || suffix != tc.wantSuffix || drop != tc.wantDrop {
				t.Fatalf("Admit = %+v %q %q, want bound %v %q %q", bound, suffix, drop, tc.wantBound, tc.wantSuffix, tc.wantDrop)
			}
			if bound.Bound() && !tc.turn.Bound() && (bound.ID != g.ID || bound.Objective != g.Objective || bound.Kickoff || bound.Continuation) {
				t.Errorf("a joined prompt is bound as %+v", bound)
			}
		})
	}
}

func activeGoal0(t *testing.T) *Goal { return activeGoal(t, 0) }

func TestBook(t *testing.T) {
	transient := fmt.Errorf("stream cut")
	kickoff := Turn{ID: "g-1", Objective: "ship it", Kickoff: true}
	cont := Turn{ID: "g-1", Objective: "ship it", Continuation: true}
	person := Turn{ID: "g-1", Objective: "ship it"}
	for _, tc := range []struct {
		name       string
		budget     int64
		turn       Turn
		used       int64
		err        error
		transient  bool
		want       Booking
		wantStatus Status
	}{
		{"kickoff done", 0, kickoff, 10, nil, false, Booking{KickoffDone: true}, Active},
		{"continuation done", 0, cont, 10, nil, false, Booking{}, Active},
		{"transient kickoff failure: the next kickoff is the retry", 0, kickoff, 0, transient, true, Booking{RetryNext: true}, Active},
		{"transient continuation failure", 0, cont, 0, transient, true, Booking{RetryNext: true}, Active},
		{"a person's turn is sent again", 0, person, 0, transient, true, Booking{Requeue: true}, Active},
		{"only once", 0, Turn{ID: "g-1", Objective: "ship it", Kickoff: true, Retried: true}, 0, transient, true, Booking{}, Paused},
		{"a permanent failure pauses", 0, person, 0, errors.New("401"), false, Booking{}, Paused},
		{"an interrupt pauses, never retried", 0, kickoff, 0, fmt.Errorf("x: %w", context.Canceled), true, Booking{}, Paused},
		{"half the budget: a note for the model", 100, cont, 50, nil, false, Booking{Notes: []string{"<50>"}}, Active},
		{"used up: the person is told", 100, cont, 100, nil, false, Booking{Notice: "Goal budget used up"}, BudgetLimited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := activeGoal(t, tc.budget)
			got := g.Book(tc.turn, TurnUsage{InputTokens: tc.used}, tc.err, tc.transient)
			if got.KickoffDone != tc.want.KickoffDone || got.RetryNext != tc.want.RetryNext || got.Requeue != tc.want.Requeue {
				t.Errorf("Book = %+v, want %+v", got, tc.want)
			}
			if len(got.Notes) != len(tc.want.Notes) || (len(got.Notes) > 0 && !strings.Contains(got.Notes[0], "50")) {
				t.Errorf("notes %q, want %d about 50%%", got.Notes, len(tc.want.Notes))
			}
			if !strings.HasPrefix(got.Notice, tc.want.Notice) || (tc.want.Notice == "") != (got.Notice == "") {
				t.Errorf("notice %q, want one starting %q", got.Notice, tc.want.Notice)
			}
			if g.Status != tc.wantStatus || g.Turns != 1 || g.TokensUsed != tc.used {
				t.Errorf("goal %s after %d turns and %d tokens, want %s, 1, %d", g.Status, g.Turns, g.TokensUsed, tc.wantStatus, tc.used)
			}
		})
	}
}

// TestKickoffAcrossCrash: what a restart finds after a crash at each of a
// Goal kickoff's crash points, and what runs next. Before the prompt's
// commit ("goal.kickoff") the kickoff is still pending, so resuming sends
// it (for the first time); after it ("goal.dispatched") the commit that
// stored the prompt cleared it, so resuming continues the Goal and never
// sends the kickoff again. The fake "session" holds the committed state;
// the commit is the session's (internal/agent's Turn.Send orders it
// against the crash points, TestSendFailpoints).
func TestKickoffAcrossCrash(t *testing.T) {
	for _, tc := range []struct {
		crashAt string
		want    Action
		sent    int // kickoff prompts sent over both processes
	}{
		{"goal.kickoff", Kickoff, 1},
		{"goal.dispatched", Continue, 0},
		{"", Continue, 1}, // no crash: the kickoff settled, the Goal goes on
	} {
		t.Run(tc.crashAt, func(t *testing.T) {
			committed := struct {
				g       Goal
				kickoff string
			}{g: *activeGoal(t, 0), kickoff: "implement the plan"}
			sent := 0
			// The first process: the decision, then the kickoff's steps.
			g := committed.g
			if d := Decide(&g, Situation{KickoffPending: committed.kickoff != ""}); d.Action != Kickoff {
				t.Fatalf("first decision %s, want kickoff", d.Action)
			}
			func() {
				if tc.crashAt == "goal.kickoff" {
					return // crash: nothing of the turn was committed
				}
				committed.kickoff = "" // the prompt's commit clears it
				if tc.crashAt == "goal.dispatched" {
					return // crash: committed, not sent
				}
				sent++
				b := g.Book(Turn{ID: g.ID, Objective: g.Objective, Kickoff: true}, TurnUsage{InputTokens: 5}, nil, false)
				if !b.KickoffDone {
					t.Fatal("the settled kickoff is not done")
				}
				committed.g = g
			}()
			// Restart: the Goal comes back paused; the person (or the one
			// recovery path) resumes it.
			back := committed.g
			if tc.crashAt != "" {
				back.RestorePaused()
				if back.Status != Paused || back.Reason != ReasonRestart {
					t.Fatalf("after a restart the Goal is %s (%s)", back.Status, back.Reason)
				}
				if err := back.Resume(); err != nil {
					t.Fatal(err)
				}
			}
			d := Decide(&back, Situation{KickoffPending: committed.kickoff != ""})
			if d.Action != tc.want {
				t.Fatalf("after the restart %s, want %s", d.Action, tc.want)
			}
			if d.Action == Kickoff {
				sent++
			}
			if sent != tc.sent {
				t.Errorf("kickoff sent %d times, want %d", sent, tc.sent)
			}
		})
	}
}
