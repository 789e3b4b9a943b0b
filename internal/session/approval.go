package session

import (
	"context"

	"planbridge/handoff"
	"planbridge/internal/interaction"
)

// More stable error codes.
const (
	CodeStaleAttempt   = interaction.CodeStaleAttempt
	CodeNoProposal     = interaction.CodeNoProposal
	CodeNothingToRetry = "nothing_to_retry"
	CodeInvalidSelect  = handoff.CodeInvalidSelection
	CodeUnavailable    = "unavailable"
)

// ApprovalView is what a client needs to draw the approval card
// ([interaction.View]: the card of package handoff and the review parts).
type ApprovalView = interaction.View

// OpenApproval is [Session.Approval] for a client opening the card: the
// Worktree checks (uncommitted changes, the branch) run again first, so
// a branch created since the card was shown is named as a blocker.
func (s *Session) OpenApproval(ctx context.Context) ApprovalView { return s.card.Open(ctx) }

// Approval returns the current card (Pending false when there is none).
func (s *Session) Approval() ApprovalView { return s.card.View() }

// UpdateSelection applies one card edit ([interaction.Card.UpdateSelection]).
func (s *Session) UpdateSelection(ctx context.Context, attempt string, c handoff.Change) (ApprovalView, error) {
	v, err := s.card.UpdateSelection(ctx, attempt, c)
	return v, refused(err)
}

// SetHidden hides or re-shows the card; it stays pending either way.
func (s *Session) SetHidden(attempt string, hidden bool) (ApprovalView, error) {
	v, err := s.card.SetHidden(attempt, hidden)
	return v, refused(err)
}

// CancelApproval demotes the proposal to a draft and discards the selection.
func (s *Session) CancelApproval(ctx context.Context, attempt string) error {
	return refused(s.card.Cancel(ctx, attempt))
}

// Comment is a remark anchored to a line of the proposal.
type Comment = handoff.LineComment

// Feedback sends the person's revision request to the model inside a
// delimited envelope ([interaction.Card.Feedback]). Plan stays on; the
// selection survives.
func (s *Session) Feedback(ctx context.Context, attempt, text string, comments []Comment) error {
	return refused(s.card.Feedback(ctx, attempt, text, comments))
}

// EditProposal replaces the proposal with the person's edited text, which is
// what will be accepted (recorded as person-edited). A new presentation
// starts.
func (s *Session) EditProposal(ctx context.Context, attempt, body string) (ApprovalView, error) {
	v, err := s.card.Edit(ctx, attempt, body)
	return v, refused(err)
}

// AcceptResult tells the client what acceptance started.
type AcceptResult = handoff.AcceptResult

// Accept accepts the current proposal with the card's selection: validate,
// archive immutably, then (one transaction) mark accepted, leave Plan and
// write the retry record; then the handoff runs in the background.
func (s *Session) Accept(ctx context.Context, attempt, branch string) (AcceptResult, error) {
	return s.AcceptExpecting(ctx, attempt, branch, "")
}

// AcceptExpecting is [Session.Accept] that also refuses, atomically with
// the attempt check, unless the selection's Location is expect ("" = any):
// a browser link can thus never accept a Location it may not choose. It
// is [handoff.Accept] over this session.
func (s *Session) AcceptExpecting(ctx context.Context, attempt, branch string, expect handoff.Location) (AcceptResult, error) {
	res, err := s.hand.Accept(ctx, attempt, branch, expect)
	return res, refused(err)
}

// CodeSaveFailed reports that the accepted plan could not be saved into
// the project; the message names the workspace-relative path only.
const CodeSaveFailed = handoff.CodeSaveFailed

// SavePlanToProject copies the last accepted plan into the workspace
// ([handoff.SaveToProject]) and returns its workspace-relative path. A
// failure is a [CodeSaveFailed] error naming no absolute path.
func (s *Session) SavePlanToProject(ctx context.Context, date string) (string, error) {
	rel, err := s.hand.SavePlan(ctx, date)
	return rel, refused(err)
}
