// Package turn executes one model turn of a session: a [Req] chosen by
// the session (a handoff's [Kickoff] and [Continuation] are built here),
// assembled from a snapshot of its posture ([Posture]: the Plan stamp,
// the reminder cadence, the title, the history, the model policy, the
// gate, the tools and the watcher), sent through
// [agent.Turn.Send] with the turn's ledger, its callbacks turned into
// session events (text through the proposal view, tool calls and
// results, refusals counted, a write outside the scope pausing the
// implementation), and settled. Compaction ([Runner.Compact]) and
// summaries ([Runner.Summarize]) are here too. Choosing and owning the
// turn (the queue, the root workflow, an interrupt) stays the session's.
//
// A [Runner] works over narrow ports the session implements: one [Host]
// (the posture snapshot under the aggregate's lock, the row's commit, the
// queue's head, the Goal hooks, the tracking binding, the model policy),
// the [Transcript], the [Events] log and the [Store]'s queue. It holds one
// piece of state, the number of the last turn started, guarded by the
// aggregate's lock ([Config.Lock]), which is also held for
// [Host.PostureLocked]: a turn's posture is one snapshot.
//
// Durability contract:
//   - A turn is stored as it happens (the current context segment is a
//     transcript): the prompt before it is sent (with a kickoff's
//     dispatch mark and a queued prompt's removal from the queue, in the
//     same transaction: a dispatched kickoff is never sent again; its
//     record is deleted with the settlement), announced only after that
//     commit, each assistant message (with its reasoning blocks) once
//     complete and before its tool calls run, each tool result before the
//     next model request. A call left without a result by a crash is answered
//     "interrupted" when the conversation is next sent.
//   - A commit that fails ends the turn ok:false with an error event and
//     nothing more sent. A turn's settlement (the row, a successful
//     turn's settle commit) is committed even after cancellation.
//   - A queued prompt whose commit failed (a full disk) is neither sent
//     nor dropped: Run returns [*PromptKept] and the prompt stays queued,
//     first. A queue entry whose turn never reached its prompt's commit
//     is removed ([Runner.DropQueued], as an interrupt's are); a removal
//     that fails is told as an error event.
//   - A transient model failure is retried once, going on from what the
//     turn produced (its prompt is never stored or sent twice), for a
//     follow-up bound to a Goal too; only a Goal's kickoff and
//     continuations are retried by the Goal ([Host.BookGoal]).
//   - What a turn changes in the session row changes in memory only with
//     its commit: the title (in the turn's first commit that succeeds),
//     the full reminder's delivery (in the settlement, once a model
//     response arrived: a cancelled dispatch leaves it armed; the turn's
//     own Plan episode, so one entered meanwhile stays armed) and the
//     refusal counters ([Host.CommitRow]; a count whose commit fails is
//     told as an error event).
//   - Before a turn whose context nears the model's window, the context
//     is compacted: a summary, with the tracked plan's carry, a pending
//     proposal and Plan's reminder reference, as a new segment committed
//     in one rotation.
package turn
