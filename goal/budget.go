package goal

import (
	"fmt"
	"time"
)

// TurnUsage is what one Goal turn cost, measured at its settlement:
// provider-reported input and output tokens and wall time. Child agents and
// summaries are not Goal turns and are not settled.
type TurnUsage struct {
	InputTokens  int64
	OutputTokens int64
	Wall         time.Duration
}

// Note is a budget note due to the model, sent with the next Goal turn.
type Note struct {
	Percent int // threshold crossed: 50, 80 or 100
	Text    string
}

// noteThresholds are the budget percentages that earn a note, ascending.
var noteThresholds = [...]int{50, 80, 100}

// Settle books one finished Goal turn: it first applies the end the model
// requested in it ([Goal.RequestEnd]), then adds u's tokens (negative values
// count as 0) and wall time, and one turn. If the Goal is still active and
// the tokens used have reached the budget it becomes [BudgetLimited]; work
// already in flight is never aborted, settlement only stops further
// continuations. A turn that settles after the Goal was paused, blocked or
// completed is still booked.
//
// It returns the budget note due, if any: at most one, for the highest
// threshold (50, 80, 100 %) reached and not sent before. When one turn
// crosses several thresholds only the highest is due, since it supersedes
// the others, and the lower ones count as sent. Each threshold is thus
// sent at most once (until [Goal.SetBudget] re-arms it). The caller must
// deliver the returned note: it is already recorded in [Goal.NotesSent].
// A 100 % note returned as the Goal becomes budget-limited has no Goal turn
// to ride on (none follows until the budget is raised, and by then it
// would be false), so callers show it to the person instead; likewise
// notes still undelivered when [Goal.SetBudget] changes the budget are stale.
// A Goal without a budget gets no notes.
func (g *Goal) Settle(u TurnUsage) []Note {
	g.applyEnd()
	g.TokensUsed += max(u.InputTokens, 0) + max(u.OutputTokens, 0)
	g.TimeUsed += max(u.Wall, 0)
	g.Turns++

	if g.Status == Active && g.exhausted() {
		g.Status = BudgetLimited
		g.Reason = g.budgetReason()
	}

	reached := g.thresholdReached()
	if reached <= g.NotesSent {
		return nil
	}
	g.NotesSent = reached
	return []Note{{Percent: reached, Text: g.noteText(reached)}}
}

// exhausted reports whether a budget is set and the tokens used reached it.
func (g *Goal) exhausted() bool {
	return g.Budget > 0 && g.TokensUsed >= g.Budget
}

// thresholdReached is the highest note threshold the tokens used have
// reached, or 0 (always 0 without a budget). Integer arithmetic, so 50 %
// means exactly half, with no rounding.
func (g *Goal) thresholdReached() int {
	if g.Budget <= 0 {
		return 0
	}
	reached := 0
	for _, t := range noteThresholds {
		if g.TokensUsed*100 >= int64(t)*g.Budget {
			reached = t
		}
	}
	return reached
}

func (g *Goal) budgetReason() string {
	return fmt.Sprintf("token budget reached: %s of %s tokens used", group(g.TokensUsed), group(g.Budget))
}

func (g *Goal) noteText(percent int) string {
	used := fmt.Sprintf("%s of %s tokens", group(g.TokensUsed), group(g.Budget))
	switch {
	case percent >= 100:
		return "Goal budget note: the token budget is used up (" + used + "). No further continuation turns will be sent; finish the current step and summarize progress and what remains."
	case percent >= 80:
		return fmt.Sprintf("Goal budget note: %d%% of the token budget is used (%s). Prioritize what completes the objective and wrap up.", percent, used)
	default:
		return fmt.Sprintf("Goal budget note: %d%% of the token budget is used (%s). Plan the remaining work to fit.", percent, used)
	}
}
