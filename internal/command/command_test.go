package command

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		text string
		want Command
	}{
		{"", Command{}},
		{"plan this change", Command{}},
		{"please /plan", Command{}},
		{"/planning the work", Command{}},
		{"/plans", Command{}},
		{"/unknown thing", Command{}},
		{"/", Command{}},
		{"/plan", Command{Plan, ""}},
		{"  /plan  ", Command{Plan, ""}},
		{"/plan on", Command{Plan, "on"}},
		{"/plan   fix the   bug  ", Command{Plan, "fix the   bug"}},
		{"/plan\tfix it", Command{Plan, "fix it"}},
		{"/plan\nfix it\nand more", Command{Plan, "fix it\nand more"}},
		{"/plan\tstatus extra words", Command{Plan, "status extra words"}},
		{"/PLAN on", Command{}},
		{"/goal", Command{Goal, ""}},
		{"/goal pause", Command{Goal, "pause"}},
		{"/goal ship the release", Command{Goal, "ship the release"}},
		{"/compact", Command{Compact, ""}},
		{"/compact now please", Command{}},
		{"/review", Command{Review, ""}},
		{"/review the diff", Command{}},
		{"/review\n", Command{Review, ""}},
	} {
		if got := Parse(tc.text); got != tc.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.text, got, tc.want)
		}
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{Prompt: "", Plan: "plan", Compact: "compact", Review: "review", Goal: "goal", Kind(99): ""} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

func TestParsePlan(t *testing.T) {
	for arg, want := range map[string]PlanVerb{
		"": PlanToggle, "on": PlanOn, "off": PlanOff, "stop": PlanOff, "cancel": PlanOff,
		"status": PlanShow, "parked": PlanParked,
		"On": PlanPrompt, "status please": PlanPrompt, "fix the bug": PlanPrompt, "offline mode": PlanPrompt,
	} {
		if got := ParsePlan(arg); got != want {
			t.Errorf("ParsePlan(%q) = %d, want %d", arg, got, want)
		}
	}
}

func TestTitle(t *testing.T) {
	long := strings.Repeat("é", 61)
	for _, tc := range []struct{ prompt, want string }{
		{"", ""},
		{"  Fix the bug  ", "Fix the bug"},
		{"First line\nsecond line", "First line"},
		{"\n\n  Indented first\nrest", "Indented first"},
		{strings.Repeat("a", 60), strings.Repeat("a", 60)},
		{strings.Repeat("a", 61), strings.Repeat("a", 59) + "…"},
		{long, strings.Repeat("é", 59) + "…"},
		{"日本語のタイトル", "日本語のタイトル"},
	} {
		got := Title(tc.prompt)
		if got != tc.want {
			t.Errorf("Title(%q) = %q, want %q", tc.prompt, got, tc.want)
		}
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > 60 {
			t.Errorf("Title(%q) = %q: not valid or too long", tc.prompt, got)
		}
	}
}
