// Package agent runs model turns: the [Engine] interface and its engines
// (script replay, OpenAI-compatible Chat Completions, and Anthropic's
// Messages API), the tool registry with declared metadata, the dispatch gate
// every tool call passes, and the tool executors. It knows nothing about
// JSON-RPC; the model engines are its only HTTP clients.
//
// The [Anthropic] engine is a small client, not the official Go SDK: one
// streamed POST and seven event types do not justify a generated client of
// the whole API with its own dependencies, retry loop and error types, and a
// small client keeps the same contract as [OpenAI] (one event-stream reader,
// [ErrTransient] for what may succeed on retry, cancellation through ctx).
// It retries 429 and 529 itself, honouring retry-after, and only while
// nothing has streamed. Thinking blocks ([ThinkingBlock]) travel on
// [Message.Thinking] so a tool loop can send them back with their
// signatures; they are never assistant text. [Usage] counts cached prompt
// tokens as input and reports the cache writes and reads beside them.
//
// A child agent inherits its parent turn's gate, Plan stamp included; under
// Plan it gets its own short Plan note and refusal wording (investigate and
// report back), never the root agent's "end with a <proposed_plan> block".
package agent
