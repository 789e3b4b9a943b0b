package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBlockedCountsOnlyPlanRefusals: blocked_total (plan_mode_blocked_total
// in doctor) counts Plan refusals only; an unknown tool outside Plan is
// counted apart, in /plan status and doctor alike.
func TestBlockedCountsOnlyPlanRefusals(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"main.go": "package main\n"})
	state := t.TempDir()
	p := startServe(t, state, "--engine", "script", "--script", writeScript(t, `[
	 {"tool_calls": [{"name": "frobnicate", "arguments": {}}]},
	 {"text": "No such tool.\n"},
	 {"tool_calls": [{"name": "write_file", "arguments": {"path": "main.go", "content": "x"}}]},
	 {"text": "Refused in Plan.\n"}]`))
	s := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "do something"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 1)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan change main.go"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 2)
	var st struct {
		BlockedTotal int64 `json:"blocked_total"`
		RefusedTotal int64 `json:"refused_total"`
		Text         string
	}
	if err := p.c.Call(ctx, "plan/status", map[string]string{"session": s.ID}, &st); err != nil {
		t.Fatal(err)
	}
	if st.BlockedTotal != 1 || st.RefusedTotal != 1 || !strings.Contains(st.Text, "1 blocked call(s)") || !strings.Contains(st.Text, "1 other refused call(s)") {
		t.Fatalf("plan/status %+v", st)
	}
	p.stop()
	out, _ := exec.Command(binary, "doctor", "--state-dir", state).Output()
	if !strings.Contains(string(out), "plan_mode_blocked_total 1 ") || !strings.Contains(string(out), "other_refused_total 1 ") {
		t.Fatalf("doctor:\n%s", out)
	}
}
