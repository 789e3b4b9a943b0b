package session

import (
	"context"
)

// RestoreDraft presents the draft proposal again as a card (a new
// attempt), undoing a cancel or a demotion. hash must be the draft's
// recorded hash and the artifact must still match it, so what comes back
// is exactly the plan the person last saw; Plan must be on, as for any
// proposal. The selection starts from the defaults when the cancel
// discarded it.
func (s *Session) RestoreDraft(ctx context.Context, hash string) (ApprovalView, error) {
	s.mu.Lock()
	if s.prop == nil || s.prop.Status != ProposalDraft {
		s.mu.Unlock()
		return ApprovalView{}, errorf(CodeNoProposal, "there is no draft plan to restore")
	}
	if hash == "" || hash != s.prop.Hash {
		s.mu.Unlock()
		return ApprovalView{}, errorf(CodeStaleAttempt, "the draft plan changed since it was shown; it was not restored")
	}
	if !s.row.Plan {
		s.mu.Unlock()
		return ApprovalView{}, errorf(CodeNoProposal, "Plan is off: enter Plan to restore the draft plan")
	}
	p := *s.prop
	s.mu.Unlock()
	if _, err := s.readArtifact(p.Path, p.Hash); err != nil {
		return ApprovalView{}, errorf(CodeStaleAttempt, "the draft plan cannot be restored: %v", err)
	}
	p.Status = ProposalProposed
	if err := s.putProposal(ctx, p); err != nil {
		return ApprovalView{}, err
	}
	s.presentApproval(ctx)
	return s.Approval(), nil
}
