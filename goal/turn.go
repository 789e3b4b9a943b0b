package goal

import "strings"

// A Turn is a model turn's binding to a Goal: the Goal it runs for (ID,
// with the objective it was scheduled under, so an edit since makes it
// stale) and what kind of Goal turn it is. The zero Turn is bound to no
// Goal.
type Turn struct {
	ID, Objective string
	Kickoff       bool // the Goal's kickoff prompt
	Continuation  bool // an automatic continuation
	Retried       bool // already retried once after a transient failure
	// Notes are the budget notes [State.Admit] handed this turn (its
	// prompt carries them), for [State.Unsent] to keep when it is not sent.
	Notes []string
}

// Bound reports whether t runs for a Goal.
func (t Turn) Bound() bool { return t.ID != "" }

// Admit decides a turn about to be sent while g (nil: none) is the
// session's Goal. A turn bound to a Goal that went stale is dropped unsent:
// drop says why ([Stale]). A turn bound to none that brings no
// implementation policy of its own (free: a person's prompt) becomes a
// turn of g while g is active, under g's policy. A Goal turn carries the
// budget notes not yet delivered to the model: suffix is what goes after
// its prompt ("" for none), and the caller forgets the notes it sent.
func Admit(g *Goal, t Turn, free bool, notes []string) (bound Turn, suffix, drop string) {
	if t.Bound() {
		if why := Stale(g, t.ID, t.Objective); why != "" {
			return t, "", why
		}
	} else if g != nil && g.Status == Active && free {
		t.ID, t.Objective = g.ID, g.Objective
	}
	if t.Bound() && len(notes) > 0 {
		suffix = "\n\n<goal_budget_note>" + strings.Join(notes, "\n") + "</goal_budget_note>"
	}
	return t, suffix, ""
}

// Booking is what settling a turn of a Goal leaves for the session to
// carry out ([Goal.Book]).
type Booking struct {
	// Notes are budget notes for the model, sent with the next Goal turn.
	Notes []string
	// Notice is for the person now: the budget is used up, so no Goal turn
	// follows to carry a note until the person raises it.
	Notice string
	// Requeue sends the same turn again, first in line and marked retried:
	// the one transient retry of a turn the Goal cannot regenerate (a
	// person's or a guest's prompt bound to it).
	Requeue bool
	// RetryNext marks the next kickoff or continuation, which the
	// continuation decision regenerates, as the one transient retry.
	RetryNext bool
	// KickoffDone: the kickoff turn succeeded, so its pending prompt is
	// done with.
	KickoffDone bool
}

// Book settles turn t of g at its end: the accounting and any requested
// end ([Goal.Settle]; the budget used up makes it budget-limited), the
// budget notes (for the model, or the person when no Goal turn follows),
// and a failure ([Goal.OnTurnFailure]: one retry of a transient failure,
// else the Goal pauses). err is the turn's error and transient whether it
// may succeed if retried.
func (g *Goal) Book(t Turn, u TurnUsage, err error, transient bool) Booking {
	var b Booking
	for _, n := range g.Settle(u) {
		if n.Percent >= 100 && g.Status == BudgetLimited {
			// By the time the person raises the budget "used up" would be
			// false: tell the person now.
			b.Notice = "Goal budget used up (" + g.Reason + "); the Goal is budget-limited. Raise it with /goal budget N (or none), then /goal resume."
			continue
		}
		b.Notes = append(b.Notes, n.Text)
	}
	switch {
	case err != nil:
		retry := g.OnTurnFailure(err, transient, t.Retried)
		if t.Kickoff || t.Continuation {
			b.RetryNext = retry // the continuation regenerates it
		} else {
			b.Requeue = retry
		}
	case t.Kickoff:
		b.KickoffDone = true
	}
	return b
}
