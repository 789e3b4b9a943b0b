package agent

import (
	"os/exec"
	"strings"
	"testing"

	"planbridge/internal/redact"
	"planbridge/proposal"
)

func TestPlanReminder(t *testing.T) {
	for _, tc := range []struct {
		full      bool
		has       []string
		lines     int // minimum number of lines
		singleRow bool
	}{
		{full: true, has: []string{proposal.ReminderFull(), proposal.Template, NotesDir, "work://plans/ holds the published plan"}, lines: 10},
		{full: false, has: []string{proposal.ReminderRef(), NotesDir, "work://plans/ holds the published plan"}, singleRow: true},
	} {
		r := PlanReminder(tc.full)
		if !strings.HasPrefix(r, "<plan_mode_reminder>") || !strings.HasSuffix(r, "</plan_mode_reminder>") {
			t.Errorf("full=%v: not wrapped in its tags: %q", tc.full, r)
		}
		for _, h := range tc.has {
			if !strings.Contains(r, h) {
				t.Errorf("full=%v: lacks %q", tc.full, h)
			}
		}
		if n := strings.Count(r, "\n"); tc.singleRow && n != 0 || !tc.singleRow && n < tc.lines {
			t.Errorf("full=%v: %d line feeds", tc.full, n)
		}
		if strings.Contains(r, proposal.Template) != tc.full {
			t.Errorf("full=%v: the template is there: %v", tc.full, !tc.full)
		}
	}
}

type confinedShell struct {
	BashShell
	desc string
}

func (c confinedShell) Confinement() string { return c.desc }

type plainShell struct{ Shell }

func TestConfinementLookups(t *testing.T) {
	noHook, err := NewACP(ACPConfig{Command: []string{"agent"}})
	if err != nil {
		t.Fatal(err)
	}
	hook, _ := NewACP(ACPConfig{Command: []string{"agent"}, Confine: func(*exec.Cmd, Confinement) error { return nil }, Confined: "landlock + bwrap"})
	set := &redact.Set{}
	set.Add("sk-test-0123456789abcdef")
	script := &Script{}
	for _, tc := range []struct {
		name string
		eng  Engine
		want string
	}{
		{"nil", nil, ""},
		{"script", script, ""},
		{"redacted script", Redacting(script, set), ""},
		{"acp without hook", noHook, "NO OS CONFINEMENT of the Plan agent process: only the gate holds Plan (for what the agent asks or does through the client's methods)"},
		{"acp with hook", hook, "landlock + bwrap"},
		{"redacted acp", Redacting(hook, set), "landlock + bwrap"},
		{"twice wrapped acp", Redacting(Redacting(noHook, set), set), noHook.AgentConfinement()},
	} {
		if got := AgentConfinement(tc.eng); got != tc.want {
			t.Errorf("%s: AgentConfinement = %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name       string
		sh         Shell
		want       string
		ok, unconf bool
	}{
		{"nil", nil, "", false, false},
		{"no description", plainShell{BashShell{}}, "", false, false},
		{"confined", confinedShell{desc: "landlock"}, "landlock", true, false},
		{"unconfined", confinedShell{desc: "NO OS CONFINEMENT: bwrap missing"}, "NO OS CONFINEMENT: bwrap missing", true, true},
		{"bash", BashShell{}, BashShell{}.Confinement(), true, Unconfined(BashShell{}.Confinement())},
	} {
		got, ok := ShellConfinement(tc.sh)
		if got != tc.want || ok != tc.ok || Unconfined(got) != tc.unconf {
			t.Errorf("%s: ShellConfinement = %q, %v (unconfined %v)", tc.name, got, ok, Unconfined(got))
		}
	}

}

func TestRootConversation(t *testing.T) {
	history := []Message{{Role: RoleUser, Content: "earlier"}, {Role: RoleAssistant, Content: "answer"}}
	keep := append([]Message(nil), history...)
	for _, tc := range []struct {
		name       string
		plan, full bool
		last       string
	}{
		{"outside Plan: the text as it is", false, true, "fix it"},
		{"Plan, first reminder", true, true, "fix it\n\n" + PlanReminder(true)},
		{"Plan, later reminder", true, false, "fix it\n\n" + PlanReminder(false)},
	} {
		msgs := RootConversation("/ws", history[:len(history):len(history)], "fix it", tc.plan, tc.full)
		if len(msgs) != 4 || msgs[0].Role != RoleSystem || msgs[0].Content != RootPrompt("/ws") {
			t.Fatalf("%s: %+v", tc.name, msgs)
		}
		if msgs[1].Content != "earlier" || msgs[2].Content != "answer" {
			t.Errorf("%s: history %+v", tc.name, msgs[1:3])
		}
		if msgs[3].Role != RoleUser || msgs[3].Content != tc.last {
			t.Errorf("%s: prompt %+v", tc.name, msgs[3])
		}
		for i := range keep {
			if history[i].Content != keep[i].Content {
				t.Errorf("%s: history changed", tc.name)
			}
		}
	}
	if msgs := RootConversation("/ws", nil, "hi", false, false); len(msgs) != 2 || msgs[1].Content != "hi" {
		t.Errorf("no history: %+v", msgs)
	}
}
