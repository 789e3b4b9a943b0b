package command

import (
	"testing"

	"planbridge/review"
)

func TestStatus(t *testing.T) {
	hash := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tracked := &review.TrackedPlan{Title: "Fix it", Hash: hash, Status: review.ImplRunning,
		Steps: []review.PlanStep{{ID: "s1", Status: review.StepCompleted}, {ID: "s2", Status: review.StepPending}}}
	const base = "Plan on · mode ask · proposal proposed (\"T\") · 2 blocked call(s) · 1 other refused call(s)"
	for _, tc := range []struct {
		name    string
		st      PlanStatus
		tracked *review.TrackedPlan
		want    string
	}{
		{"off, nothing yet", PlanStatus{Mode: "edits", ProposalStatus: "none"}, nil,
			"Plan off · mode edits · proposal none · 0 blocked call(s) · 0 other refused call(s)"},
		{"proposal title quoted", PlanStatus{Plan: true, Mode: "ask", ProposalStatus: "proposed", ProposalTitle: "T", BlockedTotal: 2, RefusedTotal: 1}, nil, base},
		{"last approval", PlanStatus{Plan: true, Mode: "ask", ProposalStatus: "proposed", ProposalTitle: "T", BlockedTotal: 2, RefusedTotal: 1, LastApproval: "feedback"}, nil,
			base + " · last approval feedback"},
		{"implementation", PlanStatus{Mode: "ask", ProposalStatus: "accepted", LastApproval: "accepted"}, tracked,
			`Plan off · mode ask · proposal accepted · 0 blocked call(s) · 0 other refused call(s) · last approval accepted · implementation running, 1/2 steps done · accepted plan "Fix it" (sha256:0123456789ab)`},
		{"confined shell is not in the text", PlanStatus{Plan: true, Mode: "ask", ProposalStatus: "proposed", ProposalTitle: "T", BlockedTotal: 2, RefusedTotal: 1, Confinement: "landlock + bwrap"}, nil, base},
		{"unconfined shell in Plan", PlanStatus{Plan: true, Mode: "ask", ProposalStatus: "proposed", ProposalTitle: "T", BlockedTotal: 2, RefusedTotal: 1, Confinement: "NO OS CONFINEMENT: no landlock"}, nil,
			base + " · shell: NO OS CONFINEMENT: no landlock"},
		{"unconfined shell outside Plan is not", PlanStatus{Mode: "ask", ProposalStatus: "none", Confinement: "NO OS CONFINEMENT: no landlock", AgentConfinement: "hook"}, nil,
			"Plan off · mode ask · proposal none · 0 blocked call(s) · 0 other refused call(s)"},
		{"agent in Plan, after the shell", PlanStatus{Plan: true, Mode: "ask", ProposalStatus: "proposed", ProposalTitle: "T", BlockedTotal: 2, RefusedTotal: 1, Confinement: "NO OS CONFINEMENT: x", AgentConfinement: "hook"}, nil,
			base + " · shell: NO OS CONFINEMENT: x · agent: hook"},
	} {
		got := Status(tc.st, tc.tracked)
		if got.Text != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got.Text, tc.want)
		}
		if (got.Steps != nil) != (tc.tracked != nil) || (got.AcceptedPlan != nil) != (tc.tracked != nil) {
			t.Errorf("%s: steps %v, accepted plan %v", tc.name, got.Steps, got.AcceptedPlan)
		}
		if tc.tracked != nil && (*got.Steps != *tc.tracked.Progress() || *got.AcceptedPlan != *tc.tracked.Ref()) {
			t.Errorf("%s: %+v %+v", tc.name, got.Steps, got.AcceptedPlan)
		}
		if got.Confinement != tc.st.Confinement || got.AgentConfinement != tc.st.AgentConfinement || got.LastApproval != tc.st.LastApproval {
			t.Errorf("%s: fields changed: %+v", tc.name, got)
		}
	}
}
