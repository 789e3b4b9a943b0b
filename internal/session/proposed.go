package session

// ProposalText is a proposal as every surface shows it and acceptance
// archives it.
type ProposalText struct{ Title, Body, Hash string }

// Proposed is the session's proposal while it is actionable (proposed),
// with its published body (ok false: there is none). It reads; it changes
// nothing and presents no card.
func (s *Session) Proposed() (p ProposalText, ok bool, err error) {
	s.mu.Lock()
	prop := s.prop
	s.mu.Unlock()
	if prop == nil || prop.Status != ProposalProposed {
		return ProposalText{}, false, nil
	}
	body, _, err := s.proposalBody(*prop)
	if err != nil {
		return ProposalText{}, false, err
	}
	return ProposalText{Title: prop.Title, Body: body, Hash: prop.Hash}, true, nil
}
