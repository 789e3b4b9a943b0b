package handoff

import (
	"encoding/json"
	"fmt"
	"strings"

	"planbridge/worktree"
)

// Location is where the implementation runs.
type Location string

// Context is what conversation the implementation starts from.
type Context string

// Execution is how many turns the implementation takes.
type Execution string

// Axis values.
const (
	Here     Location  = "here"
	Worktree Location  = "worktree"
	Current  Context   = "current"
	Fresh    Context   = "fresh"
	Summary  Context   = "summary"
	Direct   Execution = "direct"
	Goal     Execution = "goal"
)

var (
	locations  = []Location{Here, Worktree}
	contexts   = []Context{Current, Fresh, Summary}
	executions = []Execution{Direct, Goal}
	modes      = []string{"ask", "edits", "full-auto"}
)

// Selection is the approval card's settings. It is persisted with the
// proposal and survives feedback and revised proposals.
type Selection struct {
	Location     Location  `json:"location"`
	Context      Context   `json:"context"`
	Execution    Execution `json:"execution"`
	Budget       int64     `json:"budget"` // Goal token budget; 0 = unlimited
	Mode         string    `json:"mode"`
	Model        string    `json:"model"`
	Effort       string    `json:"effort"`
	Skills       []string  `json:"skills"` // canonical SKILL.md paths
	Instructions string    `json:"instructions"`
	// Branch is the Worktree fork's new branch: the person's choice on
	// the card (axis branch) or at acceptance; "" means the default
	// derived from the plan's title ([Selection.BranchFor]).
	Branch string `json:"branch,omitempty"`
}

// BranchFor is the branch a Worktree acceptance of the plan titled title
// uses when it names none: the selection's, else [DefaultBranch].
func (s Selection) BranchFor(title string) string {
	if s.Branch != "" {
		return s.Branch
	}
	return DefaultBranch(title)
}

// DefaultBranch derives a branch name from a plan title: its lower-case
// ASCII words joined by dashes, under plan/, the words cut to 40
// characters: "Add a --name flag" gives "plan/add-a-name-flag". A title
// without such words gives "".
func DefaultBranch(title string) string {
	words := strings.FieldsFunc(strings.ToLower(title), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	slug := strings.Join(words, "-")
	if slug == "" {
		return ""
	}
	if len(slug) > 40 {
		slug = slug[:40]
	}
	return "plan/" + strings.TrimRight(slug, "-")
}

// SameSettings reports whether s and o choose the same, ignoring Branch
// (an acceptance may name its own): what a card's decision checks
// against the settings it validated or was expected to show.
func (s Selection) SameSettings(o Selection) bool {
	s.Branch, o.Branch = "", ""
	x, _ := json.Marshal(s)
	y, _ := json.Marshal(o)
	return string(x) == string(y)
}

// Policy is the implementation-scoped model/effort/mode. It is never
// promoted to the session's defaults.
type Policy struct {
	Model  string `json:"model"`
	Effort string `json:"effort"`
	Mode   string `json:"mode"`
}

// Policy returns the implementation policy the selection describes.
func (s Selection) Policy() Policy { return Policy{Model: s.Model, Effort: s.Effort, Mode: s.Mode} }

// Model is one implementation model the card can choose, with the efforts
// it accepts (empty: it takes no effort setting).
type Model struct {
	Name    string   `json:"name"`
	Efforts []string `json:"efforts,omitempty"`
}

// Defaults returns the selection a first proposal starts with: Here,
// Current, Direct, the session's mode and budget default, and the model
// snapshot of the plan-implementation workload.
func Defaults(sessionMode string, budget int64, impl Policy) Selection {
	mode := sessionMode
	if impl.Mode != "" {
		mode = impl.Mode
	}
	return Selection{Location: Here, Context: Current, Execution: Direct, Budget: budget,
		Mode: mode, Model: impl.Model, Effort: impl.Effort}
}

// Validate checks every axis. It does not check the branch (see
// [worktree.ValidBranchName]) or blockers.
func (s Selection) Validate() error {
	if !contains(locations, s.Location) {
		return fmt.Errorf("location %q: want here or worktree", s.Location)
	}
	if !contains(contexts, s.Context) {
		return fmt.Errorf("context %q: want current, fresh or summary", s.Context)
	}
	if !contains(executions, s.Execution) {
		return fmt.Errorf("execution %q: want direct or goal", s.Execution)
	}
	if !contains(modes, s.Mode) {
		return fmt.Errorf("mode %q: want ask, edits or full-auto", s.Mode)
	}
	if s.Budget < 0 {
		return fmt.Errorf("budget must be a positive token count or unlimited")
	}
	if len(s.Instructions) > 64<<10 {
		return fmt.Errorf("instructions are longer than 64 KiB")
	}
	return nil
}

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func next[T comparable](xs []T, x T) T {
	for i, y := range xs {
		if y == x {
			return xs[(i+1)%len(xs)]
		}
	}
	return xs[0]
}

// Change is one edit of the selection, as the card's keys make them.
type Change struct {
	Axis  string `json:"axis"`  // location, context, execution, budget, mode, model, effort, skills, instructions, branch
	Value string `json:"value"` // "" with cycle=true for the cycling axes
	Cycle bool   `json:"cycle"`
	// Budget for axis budget (0 = unlimited).
	Budget *int64 `json:"budget,omitempty"`
	// Skills for axis skills (full replacement).
	Skills []string `json:"skills,omitempty"`
}

// Apply returns the selection with c applied. models is the catalog used to
// reset effort when the chosen model cannot take it.
func (s Selection) Apply(c Change, models []Model) (Selection, error) {
	switch c.Axis {
	case "location":
		s.Location = pick(locations, s.Location, Location(c.Value), c.Cycle)
	case "context":
		s.Context = pick(contexts, s.Context, Context(c.Value), c.Cycle)
	case "execution":
		s.Execution = pick(executions, s.Execution, Execution(c.Value), c.Cycle)
	case "mode":
		s.Mode = pick(modes, s.Mode, c.Value, c.Cycle)
	case "budget":
		if s.Execution != Goal {
			return s, fmt.Errorf("budget applies to Goal execution only")
		}
		if c.Budget == nil || *c.Budget < 0 {
			return s, fmt.Errorf("budget must be a positive token count, or 0 for unlimited")
		}
		s.Budget = *c.Budget
	case "model":
		if c.Value == "" {
			return s, fmt.Errorf("model name is empty")
		}
		if len(models) > 0 && findModel(models, c.Value) == nil {
			return s, fmt.Errorf("unknown model %q", c.Value)
		}
		s.Model = c.Value
		if m := findModel(models, s.Model); m != nil && s.Effort != "" && !contains(m.Efforts, s.Effort) {
			s.Effort = "" // the model cannot take it: back to its default
		}
	case "effort":
		if m := findModel(models, s.Model); m != nil && c.Value != "" && !contains(m.Efforts, c.Value) {
			return s, fmt.Errorf("model %q does not take effort %q", s.Model, c.Value)
		}
		s.Effort = c.Value
	case "skills":
		s.Skills = append([]string(nil), c.Skills...)
	case "instructions":
		s.Instructions = strings.TrimRight(c.Value, " \t\n")
	case "branch":
		// "" goes back to the title's default. An existing branch is not
		// refused here: the card shows it as a blocker, acceptance refuses.
		s.Branch = strings.TrimSpace(c.Value)
		if s.Branch != "" {
			if err := worktree.ValidBranchName(s.Branch); err != nil {
				return s, fmt.Errorf("branch %q: %v", s.Branch, err)
			}
		}
	default:
		return s, fmt.Errorf("unknown axis %q", c.Axis)
	}
	return s, s.Validate()
}

func pick[T comparable](xs []T, cur, val T, cycle bool) T {
	if cycle {
		return next(xs, cur)
	}
	return val
}

func findModel(models []Model, name string) *Model {
	for i := range models {
		if models[i].Name == name {
			return &models[i]
		}
	}
	return nil
}
