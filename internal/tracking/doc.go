// Package tracking is the part of the Session aggregate that holds an
// implementation to its accepted plan at run time: one session's
// [review.Tracker] (policy and runtime in package review) with the
// tracker's port implemented over the session, and what the session does
// with it. A [Tracking] owns the tracker's state (the todo list, the
// tracked plan, the implementation's records in the session's review
// directory, [ReviewDir]); the session holds one and reaches it through
// narrow ports it implements: a [Host] (events, roots, the tool
// registry, the person's asker, the Goal's pause and the running turn)
// and a [Store] (the tracking row, the edited files). It imports neither
// the session nor rpc; package trackbind binds its tracker to the agent
// ([Tracking.Binding], [Tracking.Tools]).
//
// What it does: the card carries the pre-approval checks of the proposal
// ([review.Check]), offered to the model with feedback; every proposal is
// kept as work://plans/vN.md with the person's line comments, carried to
// the next version; the base (HEAD and the content of dirty files) and
// the scope are staged in the review directory, outside work://, before
// the commit that starts the implementation names it
// ([review.TrackedPlan.Base]) — at acceptance (Here) and at the start of
// a parked plan ([Tracking.StageBase]), at a Worktree fork's hand-over
// (the fork's checkout, [Tracking.ForFork]) — so no crash leaves an
// implementation without its base; tool calls are logged there; the
// report is built when the implementation ends ([Tracking.ReportIfEnded])
// or on demand, and stored; the gate holds the scope ([agent.Gate.Scope])
// while the implementation is not done, and an unattended write outside
// it pauses the implementation and its Goal ([Tracking.PauseForScope]).
// Bash commands, whose writes cannot be declared, are observed
// ([agent.Watcher], [review.Tracker.Watch]): what one changed outside the
// scope asks the person to extend the scope or restore it, and where no
// person can answer it is restored and the implementation pauses.
//
// Locking: the tracker's own lock is a leaf (no port method is called
// under it). [Tracking.StartLocked] and [Tracking.UndoLocked] run with the
// aggregate's lock held — an acceptance installs the plan in the critical
// section that closes its card and snapshots the row, and undoes both
// there when its commit fails — and never call the Host; every other
// method may call the Host, whose methods take the aggregate's lock
// themselves, and so must not be called with it held.
//
// Contract:
//   - The implementation's status (running, paused) is committed
//     ([Store.PutTracking]) before it is announced: a start, resume or
//     continuation whose commit fails announces nothing and runs nothing
//     ([Tracking.Resume] is then an error, nothing queued); a pause for the
//     scope whose commit fails (the implementation's or its Goal's) still
//     stops the turn and stays in memory (the safe side), and is announced
//     as an error, never as a pause.
//   - A base that cannot be staged fails the step that names it, before
//     anything is committed: an acceptance or a parked plan's start is
//     refused with [CodeBaseFailed] (the card or the parked plan stays as
//     it was); a Worktree hand-over fails (and is retried whole), so a
//     fork never runs with a plan whose scope cannot be held.
//   - A record the person depends on that cannot be written is never
//     reported as written, and is told with an error event naming it
//     ("Could not save …"): the scope's record of an extension or a
//     restoration (the model is told too: an extension not recorded asks
//     again), the tool log (once per failing streak), the report built
//     when the implementation ends (tried again at the next turn's end; a
//     report asked for is not announced and its error is returned), the
//     pointer offline readers follow to the current report, an
//     implementation record a command changed and that could not be put
//     back, the record of a command a stopped process left unsettled,
//     and an edited file a Worktree fork would carry.
//   - The tracker's errors a person sees carry stable codes ([Coded]:
//     [CodeNoReport], [CodeInvalidParams], [CodeNoProposal];
//     [CodeInvalidScope], [CodeNothingToRetry], [CodeBaseFailed]) as a
//     [handoff.Refusal].
package tracking
