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
// A root turn sends [RootConversation]: the system prompt, the stored
// history, the prompt; in Plan the prompt ends with [PlanReminder]: the
// whole Plan contract on the first delivered reminder of an episode, a
// one-line reference afterwards (the cadence is the session's). [ShellConfinement]
// and [AgentConfinement] say what confines Plan's shell and a Plan agent
// process that runs its own tools, looking through engine wrappers;
// [Unconfined] recognises the "NO OS CONFINEMENT" they start with when
// nothing does.
//
// A child agent inherits its parent turn's gate, Plan stamp included; under
// Plan it gets its own short Plan note and refusal wording (investigate and
// report back), never the root agent's "end with a <proposed_plan> block".
//
// [EditedFiles] names the workspace files a completed built-in file tool
// call edited, from the arguments its Writes reads (a Worktree fork
// restores exactly those).
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
//     path, the git directory a linked worktree's .git file names, any
//     folder that is itself a git directory by git's own test — a .git
//     symlink's target, a nested repository's store, a bare repository —
//     and the folder core.hooksPath names, as git resolves it) and
//     planbridge's project configuration (.planbridge/**, skills folders)
//     always ask the person with a warning, in every permission mode, and
//     are refused where no person can answer ([Gate.Unattended],
//     [CodeProtectedPath]).
//   - With a declared scope ([Gate.Scope], an accepted plan's), a
//     workspace file outside it asks the person in every permission mode
//     ([Decision.OutsideScope]: allowing extends the scope) and is refused
//     where no person can answer ([CodeOutsideScope]); the path judged is
//     the one really written, symlinks followed.
//   - A call whose writes are not declared ([Watched]: bash run
//     unconfined) is observed by the turn's [Watcher] before and after it
//     runs; a watcher that cannot prepare refuses it ([CodeUnwatched]).
//
// A path is classified both as resolved and as spelled, so a link that
// lives in .git or work://plans/ is guarded there even when its target is
// an ordinary file.
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
// keeps the positions across restarts; a position the store cannot read or
// save fails the request, consuming nothing, instead of replaying the
// script from its start.
//
// A root turn is kept as it happens ([Turn.Send] over a [Ledger], the
// session's side): the prompt is committed before it is sent (with a
// kickoff's dispatch mark, in the same transaction), announced only after
// that commit, each assistant message and tool result is committed before
// the next model request, and a commit that fails ends the turn with
// nothing more sent. A transient failure is retried at most once, when
// asked, going on from what the turn produced: the prompt is never
// committed or sent twice. The crash points around the prompt's commit
// are the caller's to name ([SendOptions]); the ledger receives them.
//
// A stored conversation is made well-formed before it is sent
// ([CompleteToolCalls]): a tool call whose result a crash kept from being
// recorded is answered [InterruptedCall].
//
// # The acp engine
//
// [ACP] drives an Agent Client Protocol agent (Claude Code, Codex, Gemini
// CLI …, through the protocol client in planbridge/acp) and is a
// [TurnEngine]: the agent runs its own tool loop, so [Turn.Run] hands it
// the whole root turn. Its contract:
//
//   - Every permission request the agent makes passes [Gate.Decide] as a
//     tool whose [Meta] comes from the ACP tool kind (read, search and think
//     are read-only; edit is an edit; an execute request is judged as the
//     bash tool, by the shell classifier; anything else may do anything).
//     In Plan a mutation is refused and reported through [Sink.Blocked];
//     outside Plan [Turn.Ask] asks the person where the gate says Ask. It
//     answers allow_once, never allow_always (which would let the agent stop
//     asking).
//   - fs/read_text_file is served under the one read policy
//     ([Roots.OpenRead]); fs/write_text_file is a write_file call through
//     the gate (work:// notes only in Plan, protected paths asked). An
//     edit, delete or move the agent asks for names its files to the gate
//     ([Meta.Writes]) from its locations and raw input. A
//     missing file reads as empty (Gemini CLI cannot create files
//     otherwise). terminal/* is advertised and served as a bash call
//     through the gate: in Plan only a command the classifier finds
//     read-only runs, under the read-only runner and its OS sandbox;
//     outside Plan the permission mode decides (asking for a command that
//     is not read-only). The shell hands a command's output over when it
//     exits; a turn's terminals are killed when it ends.
//   - The agent always runs in its asking mode (default, or Codex's
//     read-only), never its own plan or auto-approving modes, so every
//     mutation reaches the gate, which applies Plan and the card's
//     permission mode itself; Plan and other turns use separate
//     agent processes so the Plan one can be confined
//     ([ACPConfig.Confine], [Confinement]): the gate holds what the agent
//     asks; only the OS confinement holds what it does unasked. A Confine
//     that fails for a Plan agent (no Landlock) fails the Plan turn; no
//     agent starts unconfined for it. planbridge's hook is [ConfineACP]:
//     the sandbox's agent profile, writes only to a private home and tmp
//     under the agent's state directory (seeded with copies of an
//     allowlist of the agents' configuration and credential files, never
//     through a link), TCP only to the model endpoints' ports; the person
//     may opt out explicitly ([ACPUnconfinedVar]), and
//     [ACPConfinementText] says so. [ACP.AgentConfinement] says what
//     confines the Plan agent (doctor, /plan status).
//   - The turn's text is the agent's message chunks; a plan-exit request's
//     plan is appended as a <proposed_plan> block. A turn that ends on a
//     refusal without a plan is told the refusals and prompted again, a
//     bounded number of times.
//   - The agent runs in its own process group, killed by [ACP.Close];
//     session/cancel is sent on interrupt, and the cancelled agent session
//     is dropped (closed with session/close where the agent can): the next
//     turn opens a fresh one on the same process, with the conversation as
//     context, since Claude Code answers a cancelled session's next prompt
//     with the leftover end of the cancelled one; an agent that dies fails the turn
//     with a clear error and is restarted at the next prompt, which then
//     carries the conversation so far.
package agent
