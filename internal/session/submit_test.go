package session

import (
	"context"
	"strings"
	"testing"
	"time"

	"planbridge/internal/store"
)

// TestSubmitCommands: what Submit makes of each kind of text, in process:
// the posture it leaves, whether a model request was sent, the command it
// reports and the notice it gives. Prose about planning is a prompt.
func TestSubmitCommands(t *testing.T) {
	for _, tc := range []struct {
		name     string
		planOn   bool // the posture before
		text     string
		command  string
		plan     bool // the posture after
		requests int
		notice   string // a notice that must be given ("" none checked)
	}{
		{"toggle on", false, "/plan", "plan", true, 0, ""},
		{"toggle off", true, "/plan", "plan", false, 0, ""},
		{"on", false, "/plan on", "plan", true, 0, ""},
		{"on is idempotent", true, "/plan on", "plan", true, 0, ""},
		{"off", true, "/plan off", "plan", false, 0, ""},
		{"stop", true, "/plan stop", "plan", false, 0, ""},
		{"cancel", true, "/plan cancel", "plan", false, 0, ""},
		{"status", false, "/plan status", "plan", false, 0, "Plan off · mode "},
		{"status in Plan", true, "/plan\tstatus", "plan", true, 0, "Plan on · mode "},
		{"parked", false, "/plan parked", "plan", false, 0, ""},
		{"a Plan prompt", false, "/plan fix the bug", "plan", true, 1, ""},
		{"prose is a prompt", false, "plan the release", "", false, 1, ""},
		{"a longer slash word is a prompt", false, "/planning ahead", "", false, 1, ""},
		{"compact with an argument is a prompt", false, "/compact this please", "", false, 1, ""},
		{"review with an argument is a prompt", false, "/review the diff", "", false, 1, ""},
		{"goal status", false, "/goal", "goal", false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, err := store.Open(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			eng := &replyEngine{}
			m := NewManager(Config{Store: st, Engine: eng})
			defer m.Close()
			s, err := m.Create(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if tc.planOn {
				if err := s.EnterPlan(ctx); err != nil {
					t.Fatal(err)
				}
			}
			res, err := s.Submit(ctx, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if res.Command != tc.command || s.Info().Plan != tc.plan || eng.count() != tc.requests {
				t.Errorf("command %q, Plan %v, %d requests; want %q, %v, %d", res.Command, s.Info().Plan, eng.count(), tc.command, tc.plan, tc.requests)
			}
			row, err := st.GetSession(ctx, s.ID())
			if err != nil || row.Plan != tc.plan {
				t.Errorf("the stored posture is %v (%v), want %v", row.Plan, err, tc.plan)
			}
			if tc.notice != "" {
				evs, err := s.Events(ctx, 0)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, e := range evs {
					found = found || e.Kind == "notice" && strings.Contains(string(e.Data), tc.notice)
				}
				if !found {
					t.Errorf("no notice containing %q", tc.notice)
				}
			}
		})
	}
}
