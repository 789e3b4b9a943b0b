// Package review holds an implementation to its plan. It is pure: it reads
// the workspace only through the narrow [Workspace] it is given and never
// persists anything.
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
// bash calls. [DeriveScope] and [Scope] are the declared scope the gate
// holds during the implementation.
//
// [Cite] is the model of what a plan names, shared by the checks: code
// spans and words outside fenced code blocks, paths recognised by a "/" or
// an allowlisted file extension.
package review
