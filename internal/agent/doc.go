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
//
// Write-side path policy: a file tool declares the paths a call writes
// ([Meta.Writes]); the gate classifies each one on its resolved path
// ([Roots.ClassifyWrite]) — never by tool name:
//
//   - work:// outside plans/ is the model's scratch area (keep notes under
//     [NotesDir]): the only writes allowed in Plan.
//   - work://plans/ holds the published plan, which belongs to the session:
//     refused in every mode ([CodePublishedPlan]).
//   - Repository control files (.git/** in any letter case or spelling git
//     accepts on some file system, through "..", symlinks or an absolute
//     path, and the git directory a linked worktree's .git file names) and
//     planbridge's project configuration (.planbridge/**, skills folders)
//     always ask the person with a warning, in every permission mode, and
//     are refused where no person can answer ([Gate.Unattended],
//     [CodeProtectedPath]).
//
// Executors check again on the path they really write and refuse a
// protected path unless the person confirmed that call, so the gate's
// earlier look cannot be outrun. apply_patch is all or nothing: every hunk
// is validated and every file staged before the first is moved into place,
// a failure restores the originals, a path named twice is refused, and
// deleting a symlink removes the link. [Redacting] wraps an engine so no
// configured secret leaves it.
//
// Read-side path policy: every read — read_file, list_dir, grep and Plan's
// shell — obeys one read policy ([Roots.ResolveRead], [Roots.OpenRead],
// [sandbox.ReadPolicy]): the workspace, work:// and the configured read
// roots, with symlinks resolved and never /proc, /sys or /dev.
//
// The [Script] engine's replay position belongs to a session, as a
// conversation does ([SessionEngine]): every session starts the script from
// its first step, a fork from its parent's position, and a [CursorStore]
// keeps the positions across restarts.
package agent
