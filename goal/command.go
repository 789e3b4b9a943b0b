package goal

import (
	"errors"
	"strconv"
	"strings"
)

// Verbs of a Goal action, as a typed `/goal` command names them.
const (
	VerbStatus = "status"
	VerbStart  = "start"
	VerbPause  = "pause"
	VerbResume = "resume"
	VerbBudget = "budget"
	VerbEdit   = "edit"
	VerbClear  = "clear"
)

// ParseCommand splits the argument of a typed `/goal` command into its
// verb and the rest: "" is status; "pause", "resume [steering]", "budget
// N|none", "edit OBJECTIVE" and "clear" are those verbs; anything else is
// the objective of a new Goal (start). Matching is on the exact first
// word, so an objective that merely mentions a verb starts a Goal.
func ParseCommand(arg string) (verb, rest string) {
	arg = strings.TrimSpace(arg)
	first, tail, _ := strings.Cut(arg, " ")
	switch first {
	case "":
		return VerbStatus, ""
	case VerbPause, VerbResume, VerbBudget, VerbEdit, VerbClear:
		return first, strings.TrimSpace(tail)
	}
	return VerbStart, arg
}

// ErrBadBudget is [ParseBudget]'s refusal.
var ErrBadBudget = errors.New("budget must be a positive token count or none")

// ParseBudget reads a budget as a person types it: "none" (0, unlimited)
// or a positive token count, with optional thousands commas ("250,000").
func ParseBudget(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "none" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	if err != nil || n <= 0 {
		return 0, ErrBadBudget
	}
	return n, nil
}

// kickoffPrefix starts every kickoff [KickoffPrompt] writes.
const kickoffPrefix = "Work toward this Goal until it is done: "

// KickoffPrompt is the first prompt of a Goal started with an objective,
// or of one whose objective was edited before its plan kickoff was sent
// (planRef then names the accepted plan it came from).
func KickoffPrompt(objective, planRef string) string {
	k := kickoffPrefix + objective + "\n"
	if planRef != "" {
		k += "It started from the accepted plan " + planRef + "; the objective above replaces it where they differ.\n"
	}
	return k + "When it is complete call update_goal with status complete (or blocked with a summary if you cannot continue)."
}

// IsObjectiveKickoff reports whether prompt was written by [KickoffPrompt]
// (rather than being an accepted plan's kickoff).
func IsObjectiveKickoff(prompt string) bool { return strings.HasPrefix(prompt, kickoffPrefix) }

// Stale says why a turn scheduled for Goal id with objective, the Goal now
// being g (nil: none), must be dropped without sending ("" if it may
// run): the Goal was cleared, replaced, is no longer active, or was
// edited since the turn was scheduled.
func Stale(g *Goal, id, objective string) string {
	switch {
	case g == nil:
		return "the Goal was cleared"
	case g.ID != id:
		return "the Goal was replaced"
	case g.Status != Active:
		return "the Goal is " + g.Status.String()
	case g.Objective != objective:
		return "the Goal was edited"
	}
	return ""
}
