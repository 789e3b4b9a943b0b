package command

import (
	"fmt"

	"planbridge/internal/agent"
	"planbridge/review"
)

// PlanStatus is the reply to `/plan status` (and to plan/status): the
// posture, the proposal, the refusal counts, the implementation's
// progress and provenance, how the last approval card ended, what
// confines Plan, and Text, the line a person reads ([Status] writes it).
type PlanStatus struct {
	Plan           bool                 `json:"plan"`
	Mode           string               `json:"mode"`
	ProposalStatus string               `json:"proposal_status"`
	ProposalTitle  string               `json:"proposal_title"`
	BlockedTotal   int64                `json:"blocked_total"` // Plan refusals
	RefusedTotal   int64                `json:"refused_total"` // other refusals
	Steps          *review.StepProgress `json:"steps,omitempty"`
	// AcceptedPlan is the provenance of the implementation (nil if none).
	AcceptedPlan *review.PlanRef `json:"accepted_plan,omitempty"`
	// LastApproval is how the last approval card ended (an outcome such
	// as "accepted"; "" before any).
	LastApproval string `json:"last_approval,omitempty"`
	// Confinement describes the OS layers under Plan's shell; it starts
	// with "NO OS CONFINEMENT" when none confines file access here.
	Confinement string `json:"confinement,omitempty"`
	// AgentConfinement describes the OS layers under a Plan agent process
	// that runs its own tools (the acp engine); empty for other engines.
	// It starts with "NO OS CONFINEMENT" when none can confine it.
	AgentConfinement string `json:"agent_confinement,omitempty"`
	Text             string `json:"text"`
}

// Status completes st, whose other fields the session filled, with the
// tracked implementation (nil: none) and Text: the posture, the mode, the
// proposal (and its title), the refusal counts, then, where there is
// one, the last approval's outcome and the implementation's
// [review.TrackedPlan.Summary]; in Plan also an unconfined shell's
// description ([agent.Unconfined]) and the Plan agent's confinement.
func Status(st PlanStatus, tracked *review.TrackedPlan) PlanStatus {
	posture := "off"
	if st.Plan {
		posture = "on"
	}
	prop := st.ProposalStatus
	if st.ProposalTitle != "" {
		prop += fmt.Sprintf(" (%q)", st.ProposalTitle)
	}
	st.Text = fmt.Sprintf("Plan %s · mode %s · proposal %s · %d blocked call(s) · %d other refused call(s)", posture, st.Mode, prop, st.BlockedTotal, st.RefusedTotal)
	if st.LastApproval != "" {
		st.Text += " · last approval " + st.LastApproval
	}
	if tracked != nil {
		st.Steps, st.AcceptedPlan = tracked.Progress(), tracked.Ref()
		st.Text += " · " + tracked.Summary()
	}
	if st.Plan && agent.Unconfined(st.Confinement) {
		st.Text += " · shell: " + st.Confinement
	}
	if st.Plan && st.AgentConfinement != "" {
		st.Text += " · agent: " + st.AgentConfinement
	}
	return st
}
