package review

import "testing"

func TestPlanSummary(t *testing.T) {
	hash := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	steps := func(st ...string) []PlanStep {
		out := make([]PlanStep, len(st))
		for i, s := range st {
			out[i] = PlanStep{ID: "s" + string(rune('1'+i)), Status: s}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		p    TrackedPlan
		want string
		prog StepProgress
	}{
		{"running", TrackedPlan{Title: "Fix it", Hash: hash, Status: ImplRunning, Steps: steps(StepCompleted, StepInProgress, StepPending)},
			`implementation running, 1/3 steps done · accepted plan "Fix it" (sha256:0123456789ab)`, StepProgress{1, 3, ImplRunning}},
		{"skipped counts as done", TrackedPlan{Title: "T", Hash: hash, Status: ImplDone, Steps: steps(StepSkipped, StepCompleted)},
			`implementation done, 2/2 steps done · accepted plan "T" (sha256:0123456789ab)`, StepProgress{2, 2, ImplDone}},
		{"no hash", TrackedPlan{Title: "T", Status: ImplPaused, Steps: steps(StepPending)},
			`implementation paused, 0/1 steps done`, StepProgress{0, 1, ImplPaused}},
		{"hash from an old archive name", TrackedPlan{Title: "Old", Artifact: "work://plans/accepted-0123456789abcdef.md", Status: ImplRunning},
			`implementation running, 0/0 steps done · accepted plan "Old" (sha256:0123456789ab)`, StepProgress{0, 0, ImplRunning}},
		{"short prefix is not shown", TrackedPlan{Title: "Old", Artifact: "work://plans/accepted-0123.md", Status: ImplRunning},
			`implementation running, 0/0 steps done`, StepProgress{0, 0, ImplRunning}},
		{"clipped", TrackedPlan{Title: "Big", Hash: hash, Status: ImplRunning, Clipped: true, Steps: steps(StepCompleted, StepPending, StepPending)},
			`implementation running, 1/3 steps done · accepted plan "Big" (sha256:0123456789ab) (the plan was clipped: step s3 stands for the steps beyond 2)`, StepProgress{1, 3, ImplRunning}},
		{"clipped without steps does not panic", TrackedPlan{Title: "Odd", Status: ImplRunning, Clipped: true},
			`implementation running, 0/0 steps done`, StepProgress{0, 0, ImplRunning}},
	} {
		if got := tc.p.Summary(); got != tc.want {
			t.Errorf("%s: Summary\n got %s\nwant %s", tc.name, got, tc.want)
		}
		if got := *tc.p.Progress(); got != tc.prog {
			t.Errorf("%s: Progress = %+v, want %+v", tc.name, got, tc.prog)
		}
	}
}
