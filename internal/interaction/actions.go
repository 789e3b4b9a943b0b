package interaction

import (
	"context"
	"fmt"
	"os"
	"strings"

	"planbridge/handoff"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/proposal"
)

// The person's actions on the card. Each names the presentation it acts
// on (its attempt): a stale or missing one changes nothing ([ErrStale]).
// One that commits and fails returns the error with the card as it was.

// UpdateSelection applies one card edit and commits it. While it
// commits, a decision on the card is refused ([Card.CheckLocked]); a
// failed commit keeps the selection the store holds.
func (c *Card) UpdateSelection(ctx context.Context, attempt string, ch handoff.Change) (View, error) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	c.cfg.Lock.Lock()
	if err := c.checkLocked(attempt); err != nil {
		c.cfg.Lock.Unlock()
		return View{}, err
	}
	models, _, _ := c.cfg.Host.CardLocked()
	sel, err := c.SelectionLocked().Apply(ch, models)
	if err != nil {
		c.cfg.Lock.Unlock()
		return View{}, &handoff.Refusal{Code: CodeInvalidSelection, Message: err.Error()}
	}
	p := *c.prop
	p.Selection = sel.Stored()
	c.editing = true
	c.armLocked() // the person is deciding: the timeout starts over
	c.cfg.Lock.Unlock()
	err = c.putRow(ctx, p)
	c.cfg.Lock.Lock()
	c.editing = false
	if err == nil {
		c.prop = &p
	}
	c.cfg.Lock.Unlock()
	if err != nil {
		return View{}, err
	}
	c.refreshWorktree(ctx)
	c.cfg.Host.Changed()
	return c.View(), nil
}

// SetHidden hides or re-shows the card; it stays pending either way.
func (c *Card) SetHidden(attempt string, hidden bool) (View, error) {
	c.cfg.Lock.Lock()
	if err := c.checkLocked(attempt); err != nil {
		c.cfg.Lock.Unlock()
		return View{}, err
	}
	c.approval.Hidden = hidden
	c.cfg.Lock.Unlock()
	c.cfg.Host.Changed() // shown or hidden
	return c.View(), nil
}

// take checks attempt and closes its card in one critical section (a
// decision racing it is refused as stale), returning the closed attempt
// and the proposal; commitMu is held.
func (c *Card) take(attempt string) (string, store.Proposal, error) {
	c.cfg.Lock.Lock()
	defer c.cfg.Lock.Unlock()
	if err := c.checkLocked(attempt); err != nil {
		return "", store.Proposal{}, err
	}
	return c.CloseLocked(), *c.prop, nil
}

// reopen puts back the card take closed, after a commit that failed.
func (c *Card) reopen(attempt string) {
	c.cfg.Lock.Lock()
	c.ReopenLocked(attempt)
	c.cfg.Lock.Unlock()
	c.cfg.Host.Changed()
}

// Cancel demotes the proposal to a draft and discards the selection; the
// card closes as cancelled.
func (c *Card) Cancel(ctx context.Context, attempt string) error {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	a, p, err := c.take(attempt)
	if err != nil {
		return err
	}
	p.Status, p.Selection = Draft, ""
	if err := c.put(ctx, p); err != nil {
		c.reopen(a)
		return err
	}
	c.closedWith(ctx, a, handoff.OutcomeCancelled, &p)
	c.cfg.Host.Changed()
	c.cfg.Host.Kick()
	return nil
}

// Feedback sends the person's revision request to the model inside a
// delimited envelope (a queued turn); the proposal becomes a draft, its
// rejections counted, its line comments kept on its version. Plan stays
// on; the selection survives. Feedback over [Config.MaxFeedback] bytes
// or empty is refused before anything changes.
func (c *Card) Feedback(ctx context.Context, attempt, text string, comments []handoff.LineComment) error {
	if n := handoff.FeedbackSize(text, comments); c.cfg.MaxFeedback > 0 && n > c.cfg.MaxFeedback {
		return refusal(CodePromptTooLarge, "the feedback is %d bytes; the limit is %d (1 MiB)", n, c.cfg.MaxFeedback)
	}
	text, comments = handoff.MaskFeedback(text, comments, c.cfg.Mask)
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	c.cfg.Lock.Lock()
	if err := c.checkLocked(attempt); err != nil {
		c.cfg.Lock.Unlock()
		return err
	}
	body := c.prop.Body
	if body == "" && len(comments) > 0 {
		b, _ := os.ReadFile(c.path(c.prop.Path))
		body = string(b)
	}
	feedback := handoff.FeedbackText(text, body, comments)
	if strings.TrimSpace(feedback) == "" {
		c.cfg.Lock.Unlock()
		return refusal(CodeInvalidParams, "feedback is empty")
	}
	a := c.CloseLocked()
	p := *c.prop
	c.cfg.Lock.Unlock()
	p.Status = Draft
	p.Rejections++
	if err := c.put(ctx, p); err != nil {
		c.reopen(a)
		return err
	}
	if len(comments) > 0 {
		if err := c.cfg.Live(func() error { return c.cfg.Tracker.SaveComments(p.Hash, comments) }); err != nil {
			// The feedback stands (its turn carries the comments); only
			// the next version's card will not show them.
			c.cfg.Logger.Error("save plan comments", "session", c.cfg.Session, "err", err)
			c.cfg.Host.Emit(event.Error{Message: "could not keep the line comments with the plan version: " + err.Error() + "; the revision request carries them"})
		}
	}
	c.closedWith(ctx, a, handoff.OutcomeFeedback, &p)
	prompt, display := handoff.FeedbackTurn(p.Title, feedback, p.Rejections, c.cfg.Tracker.ChecksHint(p.Hash))
	c.cfg.Host.Enqueue(prompt, display)
	return nil
}

// Edit replaces the proposal with the person's edited text, which is
// what will be accepted (recorded as person-edited); a new presentation
// starts. The card it was edited on closes in the critical section that
// checks its attempt, so no decision on it races the edit; a failure
// (the file, the version, the row) reopens it.
func (c *Card) Edit(ctx context.Context, attempt, body string) (View, error) {
	body = strings.TrimSpace(strings.ReplaceAll(body, "\r\n", "\n"))
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	c.cfg.Lock.Lock()
	if err := c.checkLocked(attempt); err != nil {
		c.cfg.Lock.Unlock()
		return View{}, err
	}
	if body == "" {
		c.cfg.Lock.Unlock()
		return View{}, refusal(CodeInvalidParams, "the edited plan is empty")
	}
	a := c.CloseLocked()
	c.cfg.Lock.Unlock()
	if err := c.publish(ctx, proposal.Parse(body).Title, body, true); err != nil {
		c.reopen(a)
		return View{}, err
	}
	return c.View(), nil
}

// --- Closes nobody decided on the card, and outcomes ---------------------------

// TimeOut closes the card of attempt as timed_out if it is still the
// current one: the proposal becomes a draft (its selection kept) and
// nothing runs. A stale attempt (the card was decided, or presented
// again) changes nothing, and so does a missing one (it never means
// "whichever card is up").
func (c *Card) TimeOut(attempt string) {
	if attempt == "" || c.cfg.Host.Closed() {
		return
	}
	closed, err := c.end(context.Background(), attempt, handoff.OutcomeTimedOut, true)
	if !closed {
		return
	}
	msg := "The approval card timed out; nothing runs. The plan is kept as a draft."
	if err != nil {
		msg = "The approval card timed out; nothing runs."
	}
	c.cfg.Host.Emit(event.Notice{Message: msg})
	c.cfg.Host.Changed()
	c.cfg.Host.Kick()
}

// Interrupt closes a pending card as interrupted. With demote the
// proposal becomes a draft (an interrupt); without (the server is
// shutting down) it stays proposed, so the next start presents it again
// under a new attempt, as resuming does.
func (c *Card) Interrupt(ctx context.Context, demote bool) {
	if closed, _ := c.end(ctx, "", handoff.OutcomeInterrupted, demote); closed && demote {
		c.cfg.Host.Changed()
	}
}

// end closes the pending card (attempt's, or with "" whichever is up) as
// outcome, for a reason nobody decided on the card: with demote its
// proposal becomes a draft. The card closes even when that commit fails
// (told as an error event; the proposal stays as stored). It reports
// whether a card closed, and the failed commit.
func (c *Card) end(ctx context.Context, attempt, outcome string, demote bool) (closed bool, err error) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	c.cfg.Lock.Lock()
	if !c.approval.Pending() || c.prop == nil || attempt != "" && c.checkLocked(attempt) != nil {
		c.cfg.Lock.Unlock()
		return false, nil
	}
	a := c.CloseLocked()
	p := *c.prop
	c.cfg.Lock.Unlock()
	if demote {
		p.Status = Draft
		err = c.put(ctx, p)
	}
	c.closedWith(ctx, a, outcome, &p)
	if err != nil {
		c.draftFailed(outcome, err)
	}
	return true, err
}

// RecordOutcome stores how attempt ended ("" records nothing). A failure
// is logged and told (an error event through the host): the outcome is
// also in the event log, but the person knows the record is missing.
func (c *Card) RecordOutcome(ctx context.Context, attempt, outcome, title, hash string) {
	if attempt == "" {
		return
	}
	o := store.ApprovalOutcome{SessionID: c.cfg.Session, Attempt: attempt, Outcome: outcome, Title: title, Hash: hash}
	if err := c.cfg.Live(func() error { return c.cfg.Store.PutApprovalOutcome(context.WithoutCancel(ctx), o) }); err != nil {
		c.cfg.Logger.Error("record approval outcome", "session", c.cfg.Session, "attempt", attempt, "err", err)
		c.cfg.Host.Emit(event.Error{Message: fmt.Sprintf("could not record how approval %s ended (%s): %v", attempt, outcome, err)})
	}
}

// closedWith records and announces that attempt ended with outcome.
func (c *Card) closedWith(ctx context.Context, attempt, outcome string, p *store.Proposal) {
	if attempt == "" {
		return
	}
	title, hash := "", ""
	if p != nil {
		title, hash = p.Title, p.Hash
	}
	c.RecordOutcome(ctx, attempt, outcome, title, hash)
	c.cfg.Host.Emit(event.ApprovalClosed{Attempt: attempt, Reason: outcome})
}

// Outcomes lists how the session's presentations ended, oldest first.
func (c *Card) Outcomes(ctx context.Context) ([]handoff.Outcome, error) {
	rows, err := c.cfg.Store.ApprovalOutcomes(ctx, c.cfg.Session)
	if err != nil {
		return nil, err
	}
	out := make([]handoff.Outcome, len(rows))
	for i, r := range rows {
		out[i] = handoff.Outcome{Attempt: r.Attempt, Outcome: r.Outcome, Title: r.Title, Hash: r.Hash, At: r.At}
	}
	return out, nil
}
