// Package eventlog is a session's event log: the stateful half of the
// event catalogue (package event holds the kinds and stays stateless). A
// [Log] numbers, commits and then publishes each event of one session,
// over four ports: the store's append and page operations ([Store];
// *store.Store is one), the publisher (a func), the redactor ([Redactor];
// *redact.Set is one) and a logger.
//
// Contract (safe for concurrent use):
//
//   - Write-ahead: an event is committed under its sequence number before
//     the publisher sees it. Numbers increase by one per committed event
//     and are never reused: [Open] continues after the highest committed
//     number, and a commit that fails takes no number.
//   - A commit that fails is logged and published anyway as a
//     notification the log does not hold: kind "error", seq 0, data an
//     [event.Error] with Durable false naming the kind and the store's
//     error. So the person still learns of it.
//   - Secrets never reach the store or the publisher: every event's data
//     passes the redactor first; data that masking would leave invalid
//     JSON is withheld, replaced by {"error": "event withheld: it
//     contained a secret"}. (Streamed text is masked upstream, as it
//     streams; [Log.Text] stores what it is given.)
//   - Streamed text is group-committed: deltas given to [Log.Text] gather
//     for at most [Config.Coalesce] ([TextCoalesce] by default) and are
//     committed as one [event.Text]. Order is kept: text gathered before
//     any other event (emitted, a view, a page read, [Log.Flush]) is
//     committed and published before it.
//   - Derived views ([event.Status] and the approval card, kind
//     [event.KindApproval]) are published only through [Log.View], and
//     only when their data differs from the last one of that kind
//     committed ([Log.EndView] forgets it: the next view is published even
//     if equal). [Log.Emit] refuses both kinds, so no call site publishes
//     a view by hand; deriving a view stays with its owner (the session).
//   - [Log.Page] reads the committed log after a sequence number (text
//     still gathering is committed first), in order, as every surface gets
//     it.
//
// [Listeners] is the publisher many logs share (a process's sessions):
// every event to every listener subscribed, in each log's order.
//
// It imports internal/event (the catalogue) and internal/store (its row
// type) and nothing of the session.
package eventlog
