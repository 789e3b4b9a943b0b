package turn

import (
	"planbridge/goal"
	"planbridge/handoff"
	"planbridge/internal/store"
	"planbridge/review"
)

// Req is one turn waiting to run: what the session queues and what
// [Runner.Run] executes.
type Req struct {
	Text    string // full prompt sent to the model
	Display string // what the view shows for it ("": Text)
	// Policy, when set, is an implementation-scoped model/effort/mode for
	// this turn only; the session's own settings are not touched.
	Policy *handoff.Policy
	// Settle, when set, adds to the commit that settles the turn if it
	// succeeds (e.g. clearing a retry record).
	Settle func(*store.TurnStep)
	// Dispatch, when set, adds to the commit that stores the prompt before
	// it is sent (a kickoff moving its retry record to dispatched).
	Dispatch   func(*store.TurnStep)
	Dispatched func() // called once Dispatch is committed
	// Goal binds the turn to a Goal (its kickoff, a continuation or a
	// follow-up while it is active) and marks its one retry.
	Goal  goal.Turn
	Guest bool // sent from a share link: no person answers for it
	// QueueID is the durable queue entry of a person's follow-up (0: none);
	// it is removed with the prompt's commit.
	QueueID int64
}

// Kickoff is the turn of a handoff's kickoff under the accepted policy:
// its record moves to dispatched in the transaction that stores the
// prompt (rec follows once that is durable), so the kickoff is never sent
// twice, and is deleted in the transaction that settles the turn.
func Kickoff(rec *handoff.Record, prompt, display string) Req {
	policy, next := rec.Policy, rec.Dispatched()
	return Req{Text: prompt, Display: display, Policy: &policy,
		Dispatch:   func(st *store.TurnStep) { st.Record = next.Marshal() },
		Dispatched: func() { rec.Step = handoff.StepDispatched },
		Settle:     settleRecord}
}

// Continuation is the turn that continues a dispatched implementation
// from its stored transcript under the accepted policy, telling the model
// it was interrupted, with what remains of plan (nil: no tracked plan);
// the record is deleted in the transaction that settles it.
func Continuation(rec *handoff.Record, plan *review.TrackedPlan) Req {
	carry := ""
	if plan != nil {
		carry = plan.Carry()
	}
	policy := rec.Policy
	return Req{Text: handoff.InterruptedPrompt(carry), Display: handoff.InterruptedDisplay, Policy: &policy, Settle: settleRecord}
}

// settleRecord deletes the handoff's record with a settled turn.
func settleRecord(st *store.TurnStep) { st.DeleteRecord = true }
