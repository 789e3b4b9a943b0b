package goal

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
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

// Refusals of [Act]; nothing changed.
var (
	ErrNoGoal      = errors.New("there is no Goal; start one with /goal OBJECTIVE")
	ErrNoObjective = errors.New("a Goal needs an objective")
	ErrInPlan      = errors.New("leave Plan before starting a Goal (or accept the plan with Execution = Goal)")
	ErrUnfinished  = errors.New("an unfinished Goal exists")
	ErrUnknownVerb = errors.New("unknown Goal action")
)

// UnfinishedHint says what lifts a refusal because a Goal is unfinished
// ([ErrUnfinished], or Plan refused while one is).
const UnfinishedHint = "a paused Goal still counts: resume it until it completes (/goal resume, after /goal budget if it ran out) or end it with /goal clear"

// ActContext is what [Act] needs to know about the session.
type ActContext struct {
	InPlan bool      // the session is in Plan
	Policy Policy    // a new Goal's policy (the session's model, effort, mode)
	Budget int64     // a new Goal's default budget (0: unlimited)
	Now    time.Time // a new Goal's creation time
}

// Acted is what an action did. Goal is the Goal after it (a new one for
// start, else the same one, changed in place). Schedule asks the session
// to decide its next turn (a resumed or new Goal may run); Steer, when
// set, is the person's steering to run first as a Goal turn. Kickoff is
// a new Goal's first prompt, or the replacement for an edited Goal's
// unsent kickoff (KickoffEdited). BudgetChanged tells the session its
// budget notes describe the old budget.
type Acted struct {
	Goal          *Goal
	Message       string
	Schedule      bool
	Steer         string
	Kickoff       string
	KickoffEdited bool
	BudgetChanged bool
}

// Act applies one Goal action other than clear (which the session does
// with its store) to g, the session's Goal (nil: none). A refusal changes
// nothing: [ErrNoGoal], [ErrNoObjective], [ErrInPlan], [ErrUnfinished]
// (wrapped with the Goal's summary), [ErrBadBudget], [ErrUnknownVerb] or
// the Goal's own refusal (resuming a complete Goal, say).
func Act(g *Goal, verb, rest string, c ActContext) (Acted, error) {
	if g == nil && verb != VerbStart && verb != VerbStatus {
		return Acted{}, ErrNoGoal
	}
	switch verb {
	case VerbStatus:
		return Acted{Goal: g, Message: g.Summary()}, nil
	case VerbPause:
		g.Pause(ReasonUser)
		return Acted{Goal: g, Message: "Goal paused."}, nil
	case VerbResume:
		if err := g.Resume(); err != nil {
			return Acted{}, err
		}
		return Acted{Goal: g, Message: "Goal resumed.", Schedule: true, Steer: rest}, nil
	case VerbBudget:
		n, err := ParseBudget(rest)
		if err != nil {
			return Acted{}, err
		}
		if err := g.SetBudget(n); err != nil {
			return Acted{}, err
		}
		return Acted{Goal: g, Message: "Goal budget set.", BudgetChanged: true}, nil
	case VerbEdit:
		if err := g.Edit(rest); err != nil {
			return Acted{}, err
		}
		// A held kickoff was written for the old objective: it is replaced,
		// never sent against the new one.
		return Acted{Goal: g, Message: "Goal objective changed.", Kickoff: KickoffPrompt(g.Objective, g.PlanRef), KickoffEdited: true}, nil
	case VerbStart:
		switch {
		case rest == "":
			return Acted{}, ErrNoObjective
		case c.InPlan:
			return Acted{}, ErrInPlan
		case g != nil && g.Status.Unfinished():
			return Acted{}, fmt.Errorf("%w (%s)", ErrUnfinished, g.Summary())
		}
		ng, err := New(NewID(), rest, c.Budget, "", c.Policy, c.Now)
		if err != nil {
			return Acted{}, err
		}
		return Acted{Goal: ng, Message: "Goal started.", Schedule: true, Kickoff: KickoffPrompt(ng.Objective, "")}, nil
	}
	return Acted{}, fmt.Errorf("%w %q", ErrUnknownVerb, verb)
}
