package session

import (
	"context"
	"time"

	"planbridge/handoff"
	"planbridge/internal/handoffport"
)

// CodeAlreadyStarted refuses a second start of a parked plan.
const CodeAlreadyStarted = handoffport.CodeAlreadyStarted

// Outcomes lists how the session's approval presentations ended, oldest first.
func (s *Session) Outcomes(ctx context.Context) ([]handoff.Outcome, error) {
	return s.card.Outcomes(ctx)
}

// --- Approval timeout -------------------------------------------------------

// SetApprovalTimeout sets how long an approval card may stay undecided
// (0, the default, never times out). It applies to cards presented from now.
func (m *Manager) SetApprovalTimeout(d time.Duration) { m.approvalTimeout.Set(d) }

// --- Approve and park ---------------------------------------------------------

// ParkedView is a parked plan as clients see it ([handoffport.ParkedView]).
type ParkedView = handoffport.ParkedView

// Park approves the current proposal with the card's whole selection and
// starts nothing: the plan is archived immutably (the same archive an
// acceptance writes), recorded as parked with the selection and the
// workspace HEAD, and the card closes as parked. The proposal's status
// becomes parked; Plan stays as it is. Start it later with
// [Manager.StartParked].
func (s *Session) Park(ctx context.Context, attempt string) (ParkedView, error) {
	return s.ParkExpecting(ctx, attempt, nil)
}

// ParkExpecting is [Session.Park] that also refuses, atomically with the
// attempt check, unless the selection is *expect (nil: any): a browser page
// thus parks exactly the settings it showed. It is [handoff.Park] over
// this session.
func (s *Session) ParkExpecting(ctx context.Context, attempt string, expect *handoff.Selection) (ParkedView, error) {
	v, err := s.hand.Park(ctx, attempt, expect)
	return v, refused(err)
}

// Parked lists parked plans not yet started: those of session, or of
// every session when session is empty; with all, started ones too.
func (m *Manager) Parked(ctx context.Context, session string, all bool) ([]ParkedView, error) {
	return handoffport.ListParked(ctx, m.st, session, all)
}

// StartResult tells the client what starting a parked plan did.
type StartResult = handoff.StartResult

// StartParked starts parked plan id, Here or in a Worktree (location ""
// keeps the parked selection's; branch names the Worktree's branch),
// through the same durable handoff as an acceptance: one transaction marks
// it started (so it starts at most once), marks the session's proposal
// accepted, leaves Plan and writes the retry record; then the handoff
// runs ([handoffport.StartParked]). The archive is reused, never rewritten.
func (m *Manager) StartParked(ctx context.Context, id string, location handoff.Location, branch string) (StartResult, error) {
	res, err := handoffport.StartParked(ctx, m.st, func(ctx context.Context, session string) (*handoffport.Ports, error) {
		s, err := m.Get(ctx, session)
		if err != nil {
			return nil, err
		}
		return s.hand, nil
	}, id, location, branch)
	return res, refused(err)
}

// parkedText is the `/plan parked` notice ([handoff.ParkedList]).
func (m *Manager) parkedText(ctx context.Context, session string) string {
	return handoffport.ParkedText(ctx, m.st, session)
}
