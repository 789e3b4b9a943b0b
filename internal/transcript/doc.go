// Package transcript is a session's conversation as the model continues
// it: the messages of the current context segment and the indices of the
// whole log. A [Transcript] is loaded from the store ([Load]) and changes
// only through commits, over three ports: the store's named operations
// ([Store]; *store.Store is one), the session row each commit writes
// ([Config.Row]) and the redactor ([Redactor]).
//
// Contract (safe for concurrent use):
//
//   - Only what is committed joins the conversation: [Transcript.Append]
//     commits its messages with the session row (and what the caller adds:
//     a retry record moving, a queued input leaving, a Goal row) in one
//     [store.Store.CommitTurnStep] transaction, and only then appends them in
//     memory and takes their indices. A failed commit changes nothing.
//     A step that also changes the session row ([Transcript.AppendRow])
//     hands that change to the session ([Config.Apply]) only after its
//     commit, under the row lock.
//   - Indices are taken and committed in one piece: commits are serialised,
//     so indices increase by one per message across segments and are never
//     reused; [Load] continues after the highest stored one.
//   - [Transcript.Rotate] starts a new segment whose first message is the
//     material given (a summary, a Fresh context), committed with the
//     session row on that segment and an optional retry record in one
//     [store.Store.CommitSegment]; only then is it the current context, and
//     [Config.OnSegment] is told under the same serialisation, so the
//     session row's copy follows before any later commit reads it.
//   - Appended rows are masked: content and tool calls pass the redactor
//     before they are written (memory keeps what the model produced, which
//     it has seen). Reasoning blocks and a rotated segment's material are
//     stored as given.
//   - [Load] keeps a message whose stored tool calls or reasoning do not
//     parse (logged; the reasoning dropped): damage never loses the turn.
//
// Policy is not here: when to compact ([agent.ContextSize] against the
// model's window) and what a summary holds are the agent's and handoff's.
// It imports internal/agent (the message type) and internal/store (its
// rows) and nothing of the session.
package transcript
