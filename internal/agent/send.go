package agent

import (
	"context"
	"errors"
)

// A Ledger keeps a root turn as it happens (the session, in production):
// [Turn.Send] commits the prompt and each completed message through it, so
// after a crash the conversation holds exactly what was sent and what
// came back.
type Ledger interface {
	// Prompt commits the turn's prompt before it is sent, with whatever
	// the caller's turn carries in that transaction (a kickoff's mark
	// that it was dispatched, a queue entry leaving). An error sends
	// nothing.
	Prompt(ctx context.Context, m Message) error
	// Step commits one completed message of the turn (see [Turn.Record]).
	Step(ctx context.Context, m Message) error
	// Announce shows the prompt and the turn's start: called once, right
	// after the prompt's commit (so no surface sees the prompt before the
	// conversation holds it), also when that commit failed: the turn then
	// ends at once with the commit's error.
	Announce()
	// Dispatched is called once the prompt's commit is durable, before the
	// first model request leaves.
	Dispatched()
	// Retrying tells the person that a transient failure is retried once.
	Retrying(cause error)
	// Failpoint is called at the crash points [SendOptions] names.
	Failpoint(name string)
}

// SendOptions are a root turn's options for [Turn.Send].
type SendOptions struct {
	// RetryTransient retries the turn once after a transient model failure
	// ([ErrTransient]) that was not a cancellation, going on from what the
	// failed attempt produced (already committed, step by step): the
	// prompt is never committed or sent twice.
	RetryTransient bool
	// BeforePrompt and Dispatched name the failpoints just before the
	// prompt's commit and just after it ("" for none).
	BeforePrompt, Dispatched string
}

// Send runs t as a root turn kept in l. The last of t.Messages is the new
// prompt; t.Record is replaced by l.Step. In order: the BeforePrompt
// failpoint, the prompt's commit, the announcement, and (only if the
// commit succeeded) [Ledger.Dispatched], the Dispatched failpoint, the
// turn, and at most one retry. It returns what the turn (both attempts)
// produced, whether it was retried, and its error; a failed prompt commit
// is that error, with nothing sent.
func (t *Turn) Send(ctx context.Context, l Ledger, o SendOptions) (res TurnResult, retried bool, err error) {
	if len(t.Messages) == 0 {
		return res, false, errors.New("a turn needs a prompt")
	}
	t.Record = l.Step
	if o.BeforePrompt != "" {
		l.Failpoint(o.BeforePrompt)
	}
	perr := l.Prompt(ctx, t.Messages[len(t.Messages)-1])
	l.Announce()
	if perr != nil {
		return res, false, perr
	}
	l.Dispatched()
	if o.Dispatched != "" {
		l.Failpoint(o.Dispatched)
	}
	base := *t // before it runs: a retry starts from the same settings
	res, err = t.Run(ctx)
	if !o.RetryTransient || !errors.Is(err, ErrTransient) || ctx.Err() != nil {
		return res, false, err
	}
	l.Retrying(err)
	first := res
	base.Messages = append(append([]Message(nil), base.Messages...), first.Messages...)
	res, err = base.Run(ctx)
	res.Messages = append(first.Messages, res.Messages...)
	res.Usage.InputTokens += first.Usage.InputTokens
	res.Usage.OutputTokens += first.Usage.OutputTokens
	res.Requests += first.Requests
	return res, true, err
}
