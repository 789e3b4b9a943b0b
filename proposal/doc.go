// Package proposal extracts <proposed_plan> blocks from assistant text, in one
// piece or streamed, diagnoses malformed ones, and gives a proposal's
// structure and safe renderings. It never persists anything.
//
// # Delimiter rules
//
// [Extract] and [Scanner] apply the same rules, line by line:
//
//   - CRLF and lone CR become LF before anything else.
//   - An opening tag line ends with exactly "<proposed_plan>" (case-sensitive,
//     no attributes), followed only by spaces and tabs. Before the tag there
//     may be indentation or glued prose ("Done.<proposed_plan>"); the prose
//     stays visible.
//   - A closing tag line is exactly "</proposed_plan>", possibly indented,
//     possibly followed by spaces and tabs.
//   - A second opening tag line before a closing one restarts the block.
//   - Tag lines inside a fenced code block that begins outside a block are
//     examples and are ignored. Inside a block, a fenced code block cannot end
//     it, even if it holds a closing tag line; fences there are recognised on
//     the dedented lines.
//   - The body is dedented by the opening tag line's indentation (up to that
//     many leading spaces or tabs are removed from each line), and leading and
//     trailing blank lines are dropped. A blank body is no proposal.
//   - The last complete nonblank block is the proposal; [Proposal.Hash] is the
//     sha256 of its body.
//
// Fences are tracked by a line-oriented CommonMark fence tracker that matches
// goldmark's fenced code blocks at the top level of a document (a test
// cross-checks it against goldmark's AST). It does not model block quotes,
// list items indented by four or more columns, or HTML blocks: a fence opened
// inside one of those is not taken for a fence. This keeps streaming linear:
// no chunk triggers a re-parse of the text so far.
//
// # Diagnostics
//
// When no proposal comes out but a tag line stands outside code fences,
// [Result.Diagnostics] holds one [KindWarning] naming the reason (unterminated
// block, blank body, opening tag not ending its line, attributes on the tag,
// wrong case, closing tag not alone on its line, closing tag without opening
// tag) and asking for the whole plan again. Inline mentions of the tag never
// warn. When the only tag lines are inside code fences, it holds a [KindHint]
// instead.
//
// # Structure and rendering
//
// [Parse], [RenderHTML] and [RenderText] use goldmark with GFM and bound
// model-authored content for display ([MaxSteps], [MaxStepChars],
// [MaxBodyChars]), clipping with a visible marker instead of failing.
// [ReminderFull] and [ReminderRef] are the Plan reminder texts. [View] is
// what a person sees of a streamed Plan response: the text with its
// blocks hidden from the opening tag on, equal in the end to
// [Result.Visible] whatever the chunking (a nil View, for a response
// outside Plan, hides nothing). [Trailer] is
// the "Plan: <title> (sha256:<12 hex>)" commit trailer naming an accepted plan.
package proposal
