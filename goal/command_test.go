package goal

import (
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
