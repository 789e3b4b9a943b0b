// Package event is the catalogue of a session's events: one struct per
// kind ([Data]), the form they take in the log and on every surface
// ([Event]: Emacs's session/event notification, a share page's stream),
// and what may be done to a log without changing what it shows
// ([CoalesceText]). It holds no state, persists nothing and publishes
// nothing: a session's log (package internal/eventlog) numbers, commits
// and publishes each event (write-ahead); rpc and internal/share forward
// them and read the few they act on ([Forked]) through the same structs.
//
// The kinds (docs/protocol.md lists their data on the wire):
//
//   - A turn: [User] (its prompt, once durable), [TurnStart], [Text]
//     (streamed assistant text, the hidden proposal block removed),
//     [ToolCall], [ToolResult], [Blocked] (the gate refused a call),
//     [TurnEnd]; the person is told of an interruption by [Notice] and of
//     a failure by [Error] (every turn_end with ok false follows one,
//     except an interrupted turn: [NewTurnEnd] makes the pair).
//   - The session's posture: [Status] (derived, published only when it
//     changed; the session's one mutation path is its only source), and
//     the approval card (kind "approval", the session's view, published
//     the same way).
//   - Planning and handoff: [Proposal], [Diagnostic], [ApprovalClosed],
//     [Handoff], [ParkedStarted] and kind "parked", [Forked], [Summary],
//     [Compacted].
//   - The implementation held to its plan: [Todo], [Steps], [Report],
//     [Scope]; and the Goal: [Goal].
//   - [Queued] (input waits) and [Notice] (a message for the person).
//
// Invariants every constructor and struct here keeps:
//   - A kind's data is its struct's JSON: a kind never changes shape by
//     surface, and a consumer reads it back into the same struct
//     (docs/protocol.md lists the members; catalogue_test.go holds the
//     two to each other).
//   - [ToolCall.Arguments] is always a JSON value ({} for none or for
//     arguments the model sent invalid); [ToolResult.Output] is the call's
//     output clipped to [MaxViewOutput] bytes at a rune boundary, with a
//     note of what the model alone got ([NewToolResult]).
//   - [Text] events may be merged ([CoalesceText]): consecutive deltas
//     joined keep the seq of the run's last one, so seqs stay increasing,
//     with gaps.
//   - [Error.Durable] is set (false) only on the notification of an event
//     whose own commit failed: it carries seq 0 and is not in the log.
package event
