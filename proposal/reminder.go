package proposal

// Template is the skeleton of a proposal that the full Plan reminder shows,
// tags included.
const Template = openTag + `
# Concrete Plan Title
## Summary
## Key Changes
## Regression Coverage
## Validation
## Assumptions
` + closeTag

const reminderFull = `Plan mode is on. In this mode you study the task and agree on a plan with the person; you do not carry it out.

- Inspect and discuss only. Do not change the repository or anything outside it.
- Bash runs only commands classified as read-only (reading files, searching, listing, git inspection); anything else is refused.
- ApplyPatch is accepted only for paths under work:// (your scratch area, e.g. work://plans/notes.md).
- You may delegate independent investigations, or a critique of a draft plan you include in the task, to child agents with the agent tool; they keep these same limits.
- If the person asks you to implement, fix or change something, take that as a request to write or revise the plan, not to do the work.
- Explore first: read the relevant code, tests and history before you propose anything, and ask when a decision is really the person's to make.
- End your response with exactly one plan block. The opening tag <proposed_plan> must end its line, and the closing tag </proposed_plan> must be alone on its own line. Never put the block in a code fence.
- A later block replaces an earlier one; send the whole plan each time, not a diff.

Use this template, with a concrete title and real content under each heading:

` + Template

const reminderRef = "Plan mode is still on: inspect and discuss only, and finish with exactly one <proposed_plan> block, following the Plan contract and template given earlier."

// ReminderFull returns the first reminder of a Plan episode: the whole
// contract (inspect, do not implement; read-only Bash; ApplyPatch only under
// work://; implementation requests mean "revise the plan"; explore first; end
// with exactly one correctly tagged block) followed by [Template]. The text is
// constant.
func ReminderFull() string { return reminderFull }

// ReminderRef returns the one-line reminder for later turns of a Plan episode
// (and after compaction), which refers back to [ReminderFull]. The text is
// constant and holds no line feed.
func ReminderRef() string { return reminderRef }
