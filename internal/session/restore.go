package session

import "context"

// RestoreDraft presents the draft proposal again as a card (a new
// attempt), undoing a cancel or a demotion ([interaction.Card.RestoreDraft]:
// the draft's hash, a matching artifact and Plan on).
func (s *Session) RestoreDraft(ctx context.Context, hash string) (ApprovalView, error) {
	v, err := s.card.RestoreDraft(ctx, hash)
	return v, refused(err)
}
