package goal

import "fmt"

// Action is what the session should do next for its Goal.
type Action int

const (
	// Wait: dispatch nothing now; decide again when the situation changes.
	// The zero value, so an unset Decision never dispatches.
	Wait Action = iota
	// Continue: dispatch a continuation turn with [ContinuePrompt].
	Continue
	// RunQueued: dispatch the next ready queued follow-up, as its own Goal
	// turn, before any continuation.
	RunQueued
	// Pause: pause the Goal with the Decision's reason (via [Goal.Pause])
	// and dispatch nothing; then decide again (queued input may now run
	// as an ordinary turn).
	Pause
	// Kickoff: dispatch the Goal's pending kickoff prompt, first in line.
	Kickoff
)

var actionNames = [...]string{Wait: "wait", Continue: "continue", RunQueued: "run-queued", Pause: "pause", Kickoff: "kickoff"}

func (a Action) String() string {
	if a < Wait || a > Kickoff {
		return fmt.Sprintf("Action(%d)", int(a))
	}
	return actionNames[a]
}

// Situation is the session's state when it asks [Decide].
type Situation struct {
	Busy               bool // a request (turn, summary, kickoff) is running
	InteractionPending bool // a permission prompt or question awaits the person
	QueuedReady        int  // queued follow-ups ready to run
	KickoffPending     bool // the Goal's kickoff prompt has not been sent yet
	// PlanRefMatches reports whether the Goal's PlanRef still names the
	// accepted plan, content hash included. Ignored for a Goal without a
	// PlanRef, which has no plan to drift from.
	PlanRefMatches bool
}

// Decision is the outcome of [Decide]; Reason explains it for logs and, for
// [Pause], becomes the Goal's reason.
type Decision struct {
	Action Action
	Reason string
}

// Decide chooses what the session runs next, with or without a Goal; it is
// the one place that orders queued follow-ups against Goal turns. In order:
// a request running or an interaction pending → Wait; no active Goal → the
// next queued follow-up (RunQueued, an ordinary turn) or Wait; the plan
// reference no longer matching → Pause ("accepted plan changed"), before
// anything is dispatched; a pending kickoff → Kickoff (the kickoff goes
// first, so follow-ups queued behind an acceptance run after it); a ready
// queued follow-up → RunQueued (each its own Goal turn, before any
// continuation); budget exhausted → Wait (settlement marks the Goal
// budget-limited); otherwise Continue. Decide does not modify g; the caller
// applies a Pause and then asks again.
func Decide(g *Goal, s Situation) Decision {
	switch {
	case s.Busy:
		return Decision{Wait, "a request is running"}
	case s.InteractionPending:
		return Decision{Wait, "an interaction is pending"}
	case g == nil || g.Status != Active:
		if s.QueuedReady > 0 {
			return Decision{RunQueued, "a queued follow-up is ready"}
		}
		if g == nil {
			return Decision{Wait, "no goal"}
		}
		return Decision{Wait, "goal is " + g.Status.String()}
	case g.PlanRef != "" && !s.PlanRefMatches:
		return Decision{Pause, ReasonPlanChanged}
	case s.KickoffPending:
		return Decision{Kickoff, "the kickoff is pending"}
	case s.QueuedReady > 0:
		return Decision{RunQueued, "a queued follow-up is ready"}
	case g.exhausted():
		return Decision{Wait, "token budget exhausted"}
	default:
		return Decision{Continue, "goal active"}
	}
}
