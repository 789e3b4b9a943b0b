// Package handoffport is the session's side of the handoff step machines
// (package handoff): a [Ports] implements their ports over the parts of
// one Session aggregate it is handed — the card ([Card]), the
// implementation's tracking ([Tracking]), the Goal runner ([Goal]), the
// turn runner ([Turns]), the transcript ([Transcript]) and the [Store] —
// and one narrow [Host], the aggregate itself (its lock's facts, its
// commit sequence, its events and views, its root workflow, opening
// another session for a fork, the model check, the failpoint). The
// session keeps one adapter of the Host and calls the step machines
// through it: [Ports.Accept] ([handoff.Accept]), [Ports.Park]
// ([handoff.Park]), [StartParked] ([handoff.StartParked]), the pipeline
// ([Ports.Env], [handoff.Run], with its Worktree step [handoff.ForkStep]
// and its Goal step, the Goal runner's), [Ports.Recover]
// ([handoff.Recover]); [Ports.DeleteState] reads the stored facts
// [handoff.CheckDelete] decides a delete on; [ListParked] and
// [ParkedText] are the parked plans as clients see them ([ParkedView]),
// [Ports.SavePlan] writes the accepted plan into the project. It imports
// neither the session nor rpc.
//
// Only an acceptance ([Ports.Accept]) and a parked plan's start
// ([StartParked]) start an implementation, and both go through the same
// durable handoff: one commit ([store.Store.CommitAcceptance]) names the
// staged base, tracks the plan, leaves Plan and writes the retry record.
// A park ([Ports.Park]) archives an approved plan with its whole
// selection and the workspace HEAD and starts nothing; a parked plan
// starts at most once ([CodeAlreadyStarted]), and the start reports a
// HEAD that moved since approval.
//
// Each port method that commits is one named store operation run
// through [Host.Commit], the session's one commit sequence: refused with
// nothing written once the session is deleted, prepared under the
// aggregate's lock, committed outside it, and followed in memory (its
// Done) only when the commit succeeded, else undone (its Undo). Writes
// into the session's directory (the archive, a staged base) run through
// [Host.WhileLive], refused the same way.
//
// Locking: a Ports has no lock of its own. Its one piece of state, the
// claim of a parked plan's start ([Start.Claim], [Ports.StartingLocked]),
// is guarded by the aggregate's lock ([Config.Lock]), which is also held
// for the decisions that must be atomic with the session's state:
//   - an acceptance's or a park's commit checks the attempt and the
//     selection, closes the card (reopened if the commit fails) and, for
//     an acceptance, installs the tracked plan and snapshots the row, in
//     the one critical section of its prepare;
//   - a parked plan's start claims the session with [handoff.StartBlocker]
//     of its fork link, busy, the claim and the card in one critical
//     section, and its commit refuses (busy) a session that became busy
//     or presented a card meanwhile, in its prepare;
//   - a card's presentation (attempt, proposal, selection) is read in one;
//     the fork blockers ([Host.ForkStateLocked]), a fork's and a
//     hand-over's row snapshot, the segment a Fresh context installs, and
//     the recovery's facts (the Goal's restart state and the queue) each
//     in one.
//
// Methods of the ports (and of [Host] not named …Locked) are called
// without that lock; [Host] and part methods named …Locked are called
// with it held. The lock order is the session's: its row lock (inside
// [Host.Commit] and [Host.WhileLive]) and the Goal's write lock before
// the aggregate's lock; the tracker's own lock a leaf.
//
// Errors: the refusals the ports make themselves are [handoff.Refusal]s
// with stable codes ([CodeNotFound], [CodeBusy], [CodeNoProposal],
// [CodeAlreadyStarted], handoff's own), which the session hands on as
// its errors with the same code and words.
package handoffport
