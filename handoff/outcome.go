package handoff

import "time"

// How an approval presentation ended: recorded durably for each attempt
// (the first outcome wins) and reported as the approval_closed event's
// reason. Only accepted starts anything; parked archives and records.
const (
	OutcomeAccepted    = "accepted"
	OutcomeParked      = "parked"
	OutcomeFeedback    = "feedback"
	OutcomeCancelled   = "cancelled"   // approval/cancel, or leaving Plan
	OutcomeDemoted     = "demoted"     // a follow-up in Plan, a newer proposal
	OutcomeInterrupted = "interrupted" // session/interrupt, or the server shut down
	OutcomeTimedOut    = "timed_out"   // the approval timeout expired
)

// Outcome is one recorded approval outcome: the attempt, how it ended
// (an Outcome* constant), the proposal's title and hash, and when.
type Outcome struct {
	Attempt string    `json:"attempt"`
	Outcome string    `json:"outcome"`
	Title   string    `json:"title"`
	Hash    string    `json:"hash"`
	At      time.Time `json:"at"`
}
