// Package interaction is the part of the Session aggregate that owns the
// interactions: the session's one proposal (the work://plans/current.md
// it points at and its stored row) and its one presentation as an
// approval card ([handoff.Approval]: the attempt, shown or hidden), with
// the card's last Worktree check and its timeout. A [Card] holds that
// state and every transition of it: publish (a proposal from the model
// or the person's edit), present (a fresh attempt), demote (a follow-up
// in Plan, leaving Plan), load (the resume rule), restore a draft, the
// selection edits, hide, cancel, feedback, the timeout and the interrupt,
// and the outcome record of every presentation that ends. The card's
// drawing is package handoff's ([handoff.NewCard]); [Card.View] puts it
// together with the review parts (warnings, versions, comments, scope).
//
// A Card has no lock of its own for its state: it is guarded by the
// aggregate's lock ([Config.Lock], the session's mu), because what it
// decides must be atomic with other session state — an acceptance
// closes the card ([Card.CheckLocked], [Card.CloseLocked]) in the
// critical section that snapshots the session row and starts tracking;
// the session's next-turn decision reads [Card.PendingLocked]; the
// session's summary reads both. Methods named …Locked expect that lock
// held; every other method takes it itself and must be called without
// it. Its own commits are serialised by a commit lock taken before the
// aggregate lock, so the proposal in memory follows the store's order.
// Every write of the session's rows or directory (the plan file, its
// version and line comments, the proposal row, an outcome) runs through
// [Config.Live], which refuses it once the session is deleted.
//
// Ports (narrow, declared here; the session implements them with one
// adapter): [Store] (the proposal row, outcome records, the edited-file
// list), [Host] (the posture and defaults read under the lock; emit,
// publish the views, enqueue the feedback turn, kick), [Tracker] (plan
// versions, line comments, pre-approval warnings, the card's scope).
//
// Contract:
//   - Nothing shown that is not stored: the proposal in memory changes
//     only after its row is committed (status and, when a card is
//     presented, the selection snapshot, in one row), so a commit that
//     fails changes nothing in memory. A person's action whose commit
//     fails (a cancel, feedback, an edit, a restore, a selection change)
//     returns the error and leaves the card as it was (reopened under
//     its attempt, the timeout started over).
//   - A close nobody decided on the card (a follow-up in Plan, leaving
//     Plan, the timeout, an interrupt) closes it even when the draft's
//     commit fails — the safe side: nothing can be accepted from a card
//     whose time is over — and the proposal stays what the store holds
//     (proposed); the person is told with an error event, never only a
//     log line.
//   - An action names the presentation it acts on (its attempt id); a
//     stale or missing one fails closed ([CodeStaleAttempt]) and changes
//     nothing. While a selection change commits, [Card.CheckLocked]
//     refuses ([handoff.CodeSettingsChanged]), so an acceptance never
//     commits a selection other than the one the store ends with.
//   - Resume rule ([Card.Load]): a stored proposal stays actionable only
//     if Plan is on, it was proposed and its artifact still matches its
//     hash; it is presented again under a new attempt (hidden state is
//     not kept); otherwise it is committed as a draft.
//   - Feedback is bounded (at most [Config.MaxFeedback] bytes, text and
//     comments, [CodePromptTooLarge]) and masked before it goes anywhere.
//     Its line comments are kept with the plan version after the draft is
//     committed; a failure to keep them is told (an error event), the
//     revision request carrying them all the same.
//   - The published proposal's body is stored with its hash and is what
//     every surface shows and acceptance archives; a plan file changed on
//     disk is flagged ([Card.Body]), never trusted.
//   - The plan file and the row agree: a publish stages the new text
//     ([PendingPlan]) and replaces work://plans/current.md only after
//     the row is committed; a failed commit leaves the plan file as the
//     row names it, a crash between the two is settled by the next
//     [Card.Load] (installed if the row holds it, dropped if not), and a
//     replacement failing after the commit is told and finished there.
//     The card's files are written below the session's directory and
//     never create it (package atomicfile's …In writes).
//   - Every presentation that ends has its outcome recorded (a failed
//     record is logged and told with an error event; the outcome is
//     also in the event log) and an
//     approval_closed event: accepted, parked (recorded by the session's
//     commits), feedback, cancelled (also leaving Plan), demoted,
//     interrupted (an interrupt, or the server closing with the card up —
//     the next start presents it again under a new attempt) or timed_out
//     ([Host.Timeout]; the proposal becomes a draft). A card replaced by
//     a new presentation (an edit, a new proposal) records none.
//
// It imports handoff, review, proposal, internal/event, internal/agent
// (the work:// scheme) and internal/store (its rows and atomic file
// writes), nothing of the session.
package interaction
