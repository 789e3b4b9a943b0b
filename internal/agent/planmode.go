package agent

import (
	"strings"

	"planbridge/proposal"
)

// planNotes tells the root model where its own files go in Plan.
const planNotes = "Keep your own notes under " + NotesDir + " (apply_patch and write_file may change them); " +
	WorkScheme + PlansDir + "/ holds the published plan, which belongs to the session: revise it by proposing again."

// PlanReminder is what a root Plan turn's prompt ends with, inside
// <plan_mode_reminder> tags: with full, the whole contract
// ([proposal.ReminderFull], template included) on its own lines, for the
// first delivered reminder of a Plan episode; otherwise the one-line
// reference ([proposal.ReminderRef]). Both say where the model's notes go
// ([NotesDir]) and that the published plan under work://plans/ is the
// session's. The cadence (which turn gets which) is the caller's.
func PlanReminder(full bool) string {
	if full {
		return "<plan_mode_reminder>\n" + proposal.ReminderFull() + "\n" + planNotes + "\n</plan_mode_reminder>"
	}
	return "<plan_mode_reminder>" + proposal.ReminderRef() + " " + planNotes + "</plan_mode_reminder>"
}

// AgentConfinement says what confines the Plan agent process of an
// engine that runs its own tools ([ACP.AgentConfinement]), looking
// through wrappers that have an Unwrap() Engine method ([Redacting]); ""
// for an engine whose tools run here, under the gate and the shell's
// confinement ([ShellConfinement]).
func AgentConfinement(eng Engine) string {
	for eng != nil {
		if c, ok := eng.(interface{ AgentConfinement() string }); ok {
			return c.AgentConfinement()
		}
		u, ok := eng.(interface{ Unwrap() Engine })
		if !ok {
			return ""
		}
		eng = u.Unwrap()
	}
	return ""
}

// ShellConfinement says what confines sh's read-only runner (for
// [BashShell], [bashclass.Confinement]; it starts with "NO OS
// CONFINEMENT" when nothing confines file access); ok is false for a
// shell that cannot say.
func ShellConfinement(sh Shell) (desc string, ok bool) {
	c, ok := sh.(interface{ Confinement() string })
	if !ok {
		return "", false
	}
	return c.Confinement(), true
}

// Unconfined reports whether a confinement description
// ([ShellConfinement], [AgentConfinement]) says nothing confines.
func Unconfined(desc string) bool { return strings.HasPrefix(desc, "NO OS CONFINEMENT") }

// RootConversation is what a root turn over workspace sends: its system
// prompt ([RootPrompt]), history (well-formed: [CompleteToolCalls]) and
// the new prompt text last, which in Plan ends with the [PlanReminder]
// (full or not) after a blank line. history is not modified.
func RootConversation(workspace string, history []Message, text string, plan, fullReminder bool) []Message {
	if plan {
		text += "\n\n" + PlanReminder(fullReminder)
	}
	msgs := make([]Message, 0, len(history)+2)
	msgs = append(append(append(msgs, Message{Role: RoleSystem, Content: RootPrompt(workspace)}), history...), Message{Role: RoleUser, Content: text})
	return msgs
}
