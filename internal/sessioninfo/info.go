package sessioninfo

import (
	"context"
	"time"

	"planbridge/handoff"
	"planbridge/internal/event"
	"planbridge/internal/goalrun"
	"planbridge/internal/interaction"
	"planbridge/internal/store"
	"planbridge/internal/tracking"
	"planbridge/review"
)

// Info is the client-facing summary of a session.
type Info struct {
	ID             string `json:"id"`
	Workspace      string `json:"workspace"`
	Title          string `json:"title"`
	Plan           bool   `json:"plan"`
	Mode           string `json:"mode"`
	Busy           bool   `json:"busy"`
	Queued         int    `json:"queued"`
	ProposalStatus string `json:"proposal_status"`
	ProposalTitle  string `json:"proposal_title,omitempty"`
	Approval       string `json:"approval"` // "", "shown" or "hidden"
	Goal           string `json:"goal,omitempty"`
	ParentID       string `json:"parent_id,omitempty"`
	ForkedTo       string `json:"forked_to,omitempty"`
	BlockedTotal   int64  `json:"blocked_total"` // Plan refusals
	RefusedTotal   int64  `json:"refused_total"` // other refusals
	LastSeq        int64  `json:"last_seq"`
	// AcceptedPlan names the plan this session implements (or implemented):
	// the provenance that travels with the work. Nil before any acceptance.
	AcceptedPlan *review.PlanRef `json:"accepted_plan,omitempty"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
}

// FromRow is the summary the session row r holds (busy as given), with
// no proposal ("none").
func FromRow(r store.Session, busy bool) Info {
	return Info{ID: r.ID, Workspace: r.Workspace, Title: r.Title, Plan: r.Plan, Mode: r.Mode, Busy: busy, ProposalStatus: "none",
		ParentID: r.ParentID, ForkedTo: r.ForkedTo, BlockedTotal: r.BlockedTotal, RefusedTotal: r.RefusedTotal, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// Status is the status event of in.
func (in Info) Status() event.Status {
	return event.Status{Plan: in.Plan, Mode: in.Mode, Busy: in.Busy, Queued: in.Queued, Title: in.Title,
		ProposalStatus: in.ProposalStatus, ProposalTitle: in.ProposalTitle, Approval: in.Approval, BlockedTotal: in.BlockedTotal,
		RefusedTotal: in.RefusedTotal, Goal: in.Goal, ForkedTo: in.ForkedTo}
}

// Store is what [Stored] reads: the rows of the session's parts.
type Store interface {
	goalrun.Store
	tracking.Store
	Dir() string
	GetProposal(ctx context.Context, session string) (store.Proposal, error)
	LastSeq(ctx context.Context, session string) (int64, error)
	SetAside(id string) (dir string, ok bool)
}

// Stored is the summary of session r, not loaded in this process: what
// opening it would show, read without changing anything (see the
// package doc).
func Stored(ctx context.Context, st Store, r store.Session) Info {
	in := FromRow(r, false)
	if p, err := st.GetProposal(ctx, r.ID); err == nil {
		in.ProposalStatus, in.ProposalTitle = p.Status, p.Title
		if p.Status == interaction.Proposed && !setAside(st, r.ID) { // set aside: as stored, unjudged
			work := store.WorkDir(st.Dir(), r.ID)
			_, err := handoff.ReadArtifact(work, p.Path, p.Hash)
			if err != nil && p.Path == handoff.CurrentPlan {
				// A publish killed between its commit and the plan file's
				// replacement: opening installs the staged file
				// ([interaction.PendingPlan]) when it is the row's text.
				_, err = handoff.ReadArtifact(work, interaction.PendingPlan, p.Hash)
			}
			if r.Plan && err == nil {
				in.Approval = "shown" // resume re-presents it
			} else {
				in.ProposalStatus = interaction.Draft
			}
		}
	}
	in.Goal = goalrun.StoredSummary(ctx, st, r.ID)
	if seq, err := st.LastSeq(ctx, r.ID); err == nil {
		in.LastSeq = seq
	}
	in.AcceptedPlan = tracking.StoredPlan(ctx, st, r.ID)
	return in
}

func setAside(st Store, id string) bool {
	_, ok := st.SetAside(id)
	return ok
}
