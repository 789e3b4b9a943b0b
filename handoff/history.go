package handoff

import (
	"fmt"
	"strings"

	"planbridge/proposal"
	"planbridge/worktree"
)

// HistoryMessage is one message of the conversation a summary is made
// from. Role is "system", "user", "assistant" or "tool".
type HistoryMessage struct {
	Role    string
	Name    string // a tool result's tool
	Content string
	Calls   []HistoryCall // an assistant message's tool calls
}

// HistoryCall is a tool call as the summary input shows it.
type HistoryCall struct {
	Name      string
	Arguments string
}

// maxToolResult bounds a tool result in the summary input.
const maxToolResult = 2000

// RenderHistory renders the conversation for a summary request: each
// message under its role, every proposal block in assistant text replaced
// by [OmittedPlan] (the accepted plan travels separately, verbatim), a
// tool result cut to 2,000 bytes, tool calls listed by name and arguments.
func RenderHistory(msgs []HistoryMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		content := m.Content
		if m.Role == "assistant" {
			if res := proposal.Extract(content); res.Proposal != nil {
				content = strings.TrimRight(res.Visible, "\n") + "\n" + OmittedPlan
			}
		}
		if m.Role == "tool" && len(content) > maxToolResult {
			content = content[:maxToolResult] + " …"
		}
		fmt.Fprintf(&b, "[%s", m.Role)
		if m.Name != "" {
			fmt.Fprintf(&b, " %s", m.Name)
		}
		b.WriteString("]\n")
		b.WriteString(content)
		for _, c := range m.Calls {
			fmt.Fprintf(&b, "\n(calls %s %s)", c.Name, c.Arguments)
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

// FreshMaterial is the first message of a Fresh context for workspace
// ([FreshSetup]) with its HEAD commit and branch, or "not a git
// repository".
func FreshMaterial(workspace string) string {
	head := "not a git repository"
	if branch, hash, err := worktree.HeadOf(workspace); err == nil {
		head = fmt.Sprintf("%s on branch %s", hash, branch)
	}
	return FreshSetup(workspace, head)
}

// CompactPrompt is the system prompt of a compaction request.
const CompactPrompt = `You compact a coding agent's conversation so it can continue in a fresh context.
Summarize: the person's goal, decisions made, concrete findings (files, commands, results),
the current state, and what comes next. Be concrete and brief; do not restate plans that are
supplied separately.`

// Compaction is what a compacted context starts from besides the model's
// summary: what must not be lost rides along verbatim.
type Compaction struct {
	// Carry is the implementation in progress (its title, finished count
	// and remaining steps); "" if none.
	Carry string
	// Proposal and ProposalPath are the title and work:// address of the
	// proposal awaiting approval; "" if none.
	Proposal, ProposalPath string
	// Reminder is the Plan reminder reference, in Plan; "" otherwise.
	Reminder string
}

// CompactMaterial is the first message of a compacted context: the
// model's summary (trimmed) and then, verbatim, the implementation in
// progress, the pending proposal's address and, in Plan, the reminder.
func CompactMaterial(summary string, c Compaction) string {
	var b strings.Builder
	b.WriteString("Summary of the conversation so far (the context was compacted):\n\n")
	b.WriteString(strings.TrimSpace(summary))
	if c.Carry != "" {
		b.WriteString("\n\n")
		b.WriteString(c.Carry)
	}
	if c.ProposalPath != "" {
		fmt.Fprintf(&b, "\n\nThe current proposal %q is saved at %s.", c.Proposal, c.ProposalPath)
	}
	if c.Reminder != "" {
		b.WriteString("\n\n")
		b.WriteString(c.Reminder)
	}
	return b.String()
}
