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
// [Cite] is the model of what a plan names, shared by the checks: code
// spans and words outside fenced code blocks, paths recognised by a "/" or
// an allowlisted file extension.
package review
