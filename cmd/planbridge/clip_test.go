package main

import (
	"fmt"
	"planbridge/rpc"
	"strings"
	"testing"
)

// TestTrackedPlanKeepsClipMarker: a plan with more steps than the tracked
// list holds keeps the clip marker as its last step, says it was clipped,
// and does not read done when the first 64 are.
func TestTrackedPlanKeepsClipMarker(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"main.go": "package main\n"})
	var b strings.Builder
	b.WriteString("Plan ready.\n<proposed_plan>\n# Many steps\n\n## Steps\n")
	for i := 1; i <= 70; i++ {
		fmt.Fprintf(&b, "- Do thing %d\n", i)
	}
	b.WriteString("</proposed_plan>\n")
	var first64 []string
	for i := 1; i <= 64; i++ {
		first64 = append(first64, fmt.Sprintf("s%d", i))
	}
	script := writeScript(t, fmt.Sprintf(`[{"text": %q},
	 {"text": "Working.\n", "tool_calls": %s},
	 {"text": "Rest done.\n", "tool_calls": %s},
	 {"text": "All done.\n"}]`, b.String(), stepCalls("completed", first64...), stepCalls("completed", "s65")))
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", script)
	s, _ := proposeAndWait(t, ctx, p, ws)
	var status struct{ Text string }
	acceptFullAuto(t, ctx, p.c, s.ID)
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "tool_result" && strings.Contains(string(e.Data), "64 of 65 steps")
	}); err != nil {
		t.Fatalf("after 64 steps: %v", err)
	}
	var tr struct {
		Plan *struct {
			Status  string `json:"status"`
			Clipped bool   `json:"clipped"`
			Steps   []struct {
				ID, Imperative, Status string
			} `json:"steps"`
		} `json:"plan"`
	}
	waitTurnEnd(t, ctx, p.c, 2)
	if err := p.c.Call(ctx, "session/tracking", map[string]string{"session": s.ID}, &tr); err != nil {
		t.Fatal(err)
	}
	if tr.Plan == nil || len(tr.Plan.Steps) != 65 || !tr.Plan.Clipped {
		t.Fatalf("tracked plan %+v", tr.Plan)
	}
	last := tr.Plan.Steps[64]
	if last.ID != "s65" || last.Status != "completed" || !strings.Contains(last.Imperative, "6 more") {
		t.Fatalf("clip step %+v", last)
	}
	if err := p.c.Call(ctx, "plan/status", map[string]string{"session": s.ID}, &status); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(status.Text, "clipped") {
		t.Errorf("/plan status does not say the plan was clipped: %q", status.Text)
	}
}
