// Package review holds an implementation to its plan. Its functions read
// the workspace only through the narrow [Workspace], [Tree] and [os.Root]
// they are given, persist nothing, and write only when [Restore] is asked
// to. The [Tracker] is the runtime built on them, owned by a session and
// reached through its [Port]: the only part of the package with state and
// files of its own (see its layout), and the only one that opens a
// checkout itself (package worktree).
//
// Every file the Tracker writes lies below the session's directory (the
// parent of its work:// root and of its review directory) and is written
// with package atomicfile's …In writes anchored there: none creates that
// directory, so a write racing the session's delete fails and brings
// nothing back.
//
// The Tracker keeps the todo list and the tracked plan, committing every
// change through [Port.CommitTracking] before publishing it; a record it
// cannot write (the scope's, the tool log, the report, a record put back
// after a command) is never published as written but told through
// [Port.Unsaved] (a report asked for returns a [SaveError]); it stages the
// implementation's base ([StageBase]) before the commit that starts the
// implementation names it ([BaseCommitted] afterwards); it logs each tool
// call of a running implementation ([Tracker.LogTool]); it builds, stores
// and publishes the report ([Tracker.Report], once on its own when the
// implementation ends: [Tracker.ReportIfEnded]); it holds the declared
// scope ([Tracker.Allows] fails closed, and a scope file that cannot be
// read, or is gone from a staged base, is still held by [Tracker.Holding],
// allowing nothing; [Tracker.Extend] records what the
// person allowed) and watches the commands whose writes cannot be declared
// ([Tracker.Watch]: ask the person to extend the scope or restore, restore
// and [Port.Pause] where nobody can answer, the implementation's own
// records put back, a command a crash interrupted recorded as unsettled);
// it keeps the plan versions with the person's line comments
// ([Tracker.RecordVersion], [Tracker.Card], [Tracker.DiffVersions]) and
// caches the current proposal's pre-approval checks ([Tracker.Warnings],
// [CheckDir]). Errors a person sees carry a kind ([ErrNoReport],
// [ErrBadPath], [ErrNoVersion], [ErrNoPlan], [ErrNothingToResume]) the
// session maps to its stable codes.
//
// [Check] is the pre-approval check of a plan body against the workspace:
// cited file paths that neither exist nor are to be created, backticked
// identifiers found nowhere (a bounded whole-word search that skips .git,
// ignored paths, symbolic links, binary and oversized files), and missing
// sections of the Plan template. Its [Warning]s are shown on the approval
// card and offered to the model with feedback ([Hint]); they never block.
//
// [Unified] diffs two plan versions and [Carry] re-anchors the person's
// line comments from one version to the next by content (open, addressed,
// stale).
//
// [Build] makes the implementation report from the accepted plan, its
// tracked steps, the files changed since the base and the logged tool
// calls: per-step files and diffstat, files outside the plan, steps done
// with no change and steps not done, Validation commands matched against
// bash calls. [Base] is the state an implementation started from (HEAD
// and the content of the files dirty then), against which [Base.Changes]
// and [Base.Diff] compare. [TrackedPlan] is the accepted plan's progress
// (steps, [TrackedPlan.SetStep], what survives a compaction; [LoadPlan]
// brings it back, a running one paused by a restart; what `/plan status`
// says of it: [TrackedPlan.Progress], [TrackedPlan.Summary]) and
// [ValidateTodos] the agent's scratch list. [DeriveScope] and [Scope] are
// the declared scope the gate holds during the implementation;
// [Scope.Outside] is what of a command's changes lies outside it.
//
// [Take] and [Snapshot.Changes] observe what a command whose writes cannot
// be declared in advance (an unconfined shell command) changed: the paths
// a [Tree]'s status lists before and after, the paths two commits differ
// in when HEAD moved, and the repository's control files ([ControlFiles]).
// Only net effects are seen, within stated bounds ([MaxWatchedPaths],
// [MaxWatchedFile], [MaxWatchedTotal], [MaxCommitPaths]). [Restore] puts
// changes back as they were, never writing through a symbolic link.
// These and [Base] are the one place its functions touch files, through
// the [os.Root]s they are given.
//
// [Cite] is the model of what a plan names, shared by the checks: code
// spans and words outside fenced code blocks, paths recognised by a "/" or
// an allowlisted file extension.
package review
