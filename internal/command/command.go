package command

import (
	"strings"
	"unicode/utf8"
)

// Kind is what submitted text is.
type Kind int

// The kinds of submitted text.
const (
	Prompt  Kind = iota // for the model
	Plan                // /plan [ARG]: the posture ([ParsePlan])
	Compact             // /compact: compact the context now
	Review              // /review: the implementation report
	Goal                // /goal [ARG]: a Goal action (goal.ParseCommand)
)

// String is the command's name without its slash ("" for a prompt), as
// a submit result names it.
func (k Kind) String() string {
	switch k {
	case Plan:
		return "plan"
	case Compact:
		return "compact"
	case Review:
		return "review"
	case Goal:
		return "goal"
	}
	return ""
}

// Command is one piece of submitted text, read.
type Command struct {
	Kind Kind
	// Arg is the command's argument, trimmed ("" for none and for a
	// prompt, which is the submitted text itself).
	Arg string
}

// Parse reads submitted text. The first token ends at a space, tab or
// line feed; the argument is the rest, trimmed.
func Parse(text string) Command {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") {
		return Command{}
	}
	name, rest, _ := strings.Cut(t, " ")
	if i := strings.IndexAny(name, "\t\n"); i >= 0 {
		name, rest = name[:i], t[i+1:]
	}
	rest = strings.TrimSpace(rest)
	switch name {
	case "/plan":
		return Command{Kind: Plan, Arg: rest}
	case "/goal":
		return Command{Kind: Goal, Arg: rest}
	case "/compact":
		if rest == "" {
			return Command{Kind: Compact}
		}
	case "/review":
		if rest == "" {
			return Command{Kind: Review}
		}
	}
	return Command{}
}

// PlanVerb is what the argument of `/plan` asks for.
type PlanVerb int

// The verbs of `/plan`.
const (
	PlanToggle PlanVerb = iota // no argument: Plan off if on, on if off
	PlanOn                     // on
	PlanOff                    // off, stop, cancel
	PlanShow                   // status: say the posture
	PlanParked                 // parked: list the parked plans
	PlanPrompt                 // anything else: enter Plan, then send it as a prompt
)

// ParsePlan reads the (trimmed) argument of `/plan`; for [PlanPrompt] the
// argument is the prompt.
func ParsePlan(arg string) PlanVerb {
	switch arg {
	case "":
		return PlanToggle
	case "on":
		return PlanOn
	case "off", "stop", "cancel":
		return PlanOff
	case "status":
		return PlanShow
	case "parked":
		return PlanParked
	}
	return PlanPrompt
}

// maxTitle bounds a [Title] in characters.
const maxTitle = 60

// Title is the title a session's first prompt gives it: the prompt's
// first line, trimmed, cut to 59 characters and an ellipsis when longer
// than 60. It never splits a UTF-8 character.
func Title(prompt string) string {
	t := strings.TrimSpace(prompt)
	if i := strings.IndexByte(t, '\n'); i >= 0 {
		t = t[:i]
	}
	if utf8.RuneCountInString(t) > maxTitle {
		r := []rune(t)
		t = string(r[:maxTitle-1]) + "…"
	}
	return t
}
