package session

import "planbridge/internal/interaction"

// ProposalText is a proposal as every surface shows it and acceptance
// archives it.
type ProposalText = interaction.Text

// Proposed is the session's proposal while it is actionable (proposed),
// with its published body (ok false: there is none). It reads; it changes
// nothing and presents no card.
func (s *Session) Proposed() (p ProposalText, ok bool, err error) { return s.card.Proposed() }
