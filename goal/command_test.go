package goal

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseCommand(t *testing.T) {
	for _, c := range []struct{ in, verb, rest string }{
		{"", VerbStatus, ""},
		{"   ", VerbStatus, ""},
		{"pause", VerbPause, ""},
		{"resume  look at the tests first ", VerbResume, "look at the tests first"},
		{"budget 250,000", VerbBudget, "250,000"},
		{"edit make it faster", VerbEdit, "make it faster"},
		{"clear", VerbClear, ""},
		{"pause the build when it fails", VerbPause, "the build when it fails"},
		{"pauses are bad", VerbStart, "pauses are bad"},
		{"status", VerbStart, "status"},
		{" rename the greeting ", VerbStart, "rename the greeting"},
	} {
		if v, r := ParseCommand(c.in); v != c.verb || r != c.rest {
			t.Errorf("ParseCommand(%q) = %q %q, want %q %q", c.in, v, r, c.verb, c.rest)
		}
	}
}

func TestParseBudget(t *testing.T) {
	for in, want := range map[string]int64{"none": 0, "1": 1, "250,000": 250000, " 42 ": 42} {
		if n, err := ParseBudget(in); err != nil || n != want {
			t.Errorf("ParseBudget(%q) = %d %v, want %d", in, n, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-5", "ten", "1e6", "99999999999999999999", "None"} {
		if _, err := ParseBudget(bad); err != ErrBadBudget {
			t.Errorf("ParseBudget(%q): %v", bad, err)
		}
	}
}

func TestKickoffPromptAndStale(t *testing.T) {
	k := KickoffPrompt("rename it", "work://plans/a.md#h")
	if !IsObjectiveKickoff(k) || !strings.Contains(k, "rename it") || !strings.Contains(k, "work://plans/a.md#h") || !strings.Contains(k, "update_goal") {
		t.Errorf("kickoff %q", k)
	}
	if IsObjectiveKickoff("Implement accepted plan") {
		t.Error("a plan kickoff taken for an objective's")
	}
	g, err := New("g1", "rename it", 0, "", Policy{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if why := Stale(g, "g1", "rename it"); why != "" {
		t.Errorf("a current turn is stale: %s", why)
	}
	for want, args := range map[string][3]any{
		"the Goal was cleared":  {(*Goal)(nil), "g1", "rename it"},
		"the Goal was replaced": {g, "g0", "rename it"},
		"the Goal was edited":   {g, "g1", "something else"},
	} {
		if why := Stale(args[0].(*Goal), args[1].(string), args[2].(string)); why != want {
			t.Errorf("Stale: %q, want %q", why, want)
		}
	}
	g.Pause(ReasonUser)
	if why := Stale(g, "g1", "rename it"); why != "the Goal is paused" {
		t.Errorf("paused: %q", why)
	}
}

// TestAct: each action on each kind of Goal: what it changes, what it
// asks the session to do, and that a refusal changes nothing.
func TestAct(t *testing.T) {
	now := time.Now()
	c := ActContext{Policy: Policy{Model: "m", Mode: "edits"}, Budget: 1000, Now: now}
	active := func() *Goal {
		g, err := New("g-1", "rename it", 0, "work://plans/a.md#h", Policy{}, now)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	done := func() *Goal {
		g := active()
		if err := g.Update("complete", "ok"); err != nil {
			t.Fatal(err)
		}
		return g
	}
	for _, tc := range []struct {
		name    string
		g       *Goal
		verb    string
		rest    string
		ctx     ActContext
		wantErr error
		check   func(t *testing.T, before, g *Goal, a Acted)
	}{
		{"status without a Goal", nil, VerbStatus, "", c, nil, func(t *testing.T, _, _ *Goal, a Acted) {
			if a.Message != "No goal" || a.Schedule {
				t.Errorf("%+v", a)
			}
		}},
		{"pause without a Goal", nil, VerbPause, "", c, ErrNoGoal, nil},
		{"pause", active(), VerbPause, "", c, nil, func(t *testing.T, _, g *Goal, a Acted) {
			if g.Status != Paused || g.Reason != ReasonUser || a.Schedule {
				t.Errorf("%+v %+v", g, a)
			}
		}},
		{"resume with steering", func() *Goal { g := active(); g.Pause(ReasonUser); return g }(), VerbResume, "tests first", c, nil, func(t *testing.T, _, g *Goal, a Acted) {
			if g.Status != Active || !a.Schedule || a.Steer != "tests first" {
				t.Errorf("%+v %+v", g, a)
			}
		}},
		{"resume a complete Goal", done(), VerbResume, "", c, nil, nil},
		{"budget", active(), VerbBudget, "5,000", c, nil, func(t *testing.T, _, g *Goal, a Acted) {
			if g.Budget != 5000 || !a.BudgetChanged {
				t.Errorf("%+v %+v", g, a)
			}
		}},
		{"bad budget", active(), VerbBudget, "lots", c, ErrBadBudget, nil},
		{"edit", active(), VerbEdit, "rename it better", c, nil, func(t *testing.T, _, g *Goal, a Acted) {
			if g.Objective != "rename it better" || !a.KickoffEdited || !strings.Contains(a.Kickoff, "rename it better") || !strings.Contains(a.Kickoff, "work://plans/a.md#h") {
				t.Errorf("%+v %+v", g, a)
			}
		}},
		{"start", nil, VerbStart, "tidy up", c, nil, func(t *testing.T, _, _ *Goal, a Acted) {
			g := a.Goal
			if g == nil || g.Objective != "tidy up" || g.Budget != 1000 || g.Policy != c.Policy || !a.Schedule || !IsObjectiveKickoff(a.Kickoff) {
				t.Errorf("%+v %+v", g, a)
			}
		}},
		{"start after a finished Goal", done(), VerbStart, "next", c, nil, func(t *testing.T, before, _ *Goal, a Acted) {
			if a.Goal == before || a.Goal.ID == before.ID {
				t.Error("the finished Goal was reused")
			}
		}},
		{"start over an unfinished Goal", active(), VerbStart, "another", c, ErrUnfinished, nil},
		{"start in Plan", nil, VerbStart, "x", ActContext{InPlan: true}, ErrInPlan, nil},
		{"start without an objective", nil, VerbStart, "", c, ErrNoObjective, nil},
		{"unknown", active(), "explode", "", c, ErrUnknownVerb, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before Goal
			if tc.g != nil {
				before = *tc.g
			}
			a, err := Act(tc.g, tc.verb, tc.rest, tc.ctx)
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if tc.check == nil {
				if err == nil && tc.wantErr == nil {
					// A Goal refusal of its own (resuming a complete Goal).
					t.Fatalf("no refusal: %+v", a)
				}
				if tc.g != nil && *tc.g != before {
					t.Errorf("a refusal changed the Goal: %+v", *tc.g)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, tc.g, tc.g, a)
			if tc.g != nil && tc.verb != VerbStart && a.Goal != tc.g {
				t.Error("the action replaced the Goal")
			}
		})
	}
}
