package review

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"planbridge/handoff"
	"planbridge/proposal"
)

// workScheme is the prefix of session artifact addresses (work://).
const workScheme = "work://"

// Todo list limits.
const (
	MaxTodos     = 40
	MaxTodoChars = 500
)

// Todo statuses.
const (
	TodoPending    = "pending"
	TodoInProgress = "in_progress"
	TodoCompleted  = "completed"
)

// TodoItem is one entry of the agent's scratch list.
type TodoItem struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	Status  string `json:"status"`
}

// ValidateTodos checks a whole todo list before anything is stored: at most
// [MaxTodos] items of at most [MaxTodoChars] characters, known statuses, at
// most one in progress. Missing ids are generated and duplicate ids
// reassigned. The input is not modified.
func ValidateTodos(items []TodoItem) ([]TodoItem, error) {
	if len(items) > MaxTodos {
		return nil, fmt.Errorf("todo_write rejected: %d items, at most %d allowed; the previous list is unchanged", len(items), MaxTodos)
	}
	out := make([]TodoItem, len(items))
	seen := map[string]bool{}
	inProgress := 0
	for i, it := range items {
		it.Content = strings.TrimSpace(it.Content)
		switch {
		case it.Content == "":
			return nil, fmt.Errorf("todo_write rejected: item %d is empty; the previous list is unchanged", i+1)
		case utf8.RuneCountInString(it.Content) > MaxTodoChars:
			return nil, fmt.Errorf("todo_write rejected: item %d has %d characters, at most %d allowed; the previous list is unchanged", i+1, utf8.RuneCountInString(it.Content), MaxTodoChars)
		}
		switch it.Status {
		case "":
			it.Status = TodoPending
		case TodoPending, TodoCompleted:
		case TodoInProgress:
			inProgress++
		default:
			return nil, fmt.Errorf("todo_write rejected: item %d has status %q (want pending, in_progress or completed); the previous list is unchanged", i+1, it.Status)
		}
		out[i] = it
	}
	if inProgress > 1 {
		return nil, fmt.Errorf("todo_write rejected: %d items are in_progress, at most one may be; the previous list is unchanged", inProgress)
	}
	for i := range out {
		id := strings.TrimSpace(out[i].ID)
		if id == "" || seen[id] {
			id = newTodoID(seen)
		}
		seen[id] = true
		out[i].ID = id
	}
	return out, nil
}

func newTodoID(seen map[string]bool) string {
	for {
		var b [4]byte
		rand.Read(b[:])
		id := "t-" + hex.EncodeToString(b[:])
		if !seen[id] {
			return id
		}
	}
}

// RenderTodos is the todo list as echoed to the model (never truncated).
func RenderTodos(items []TodoItem) string {
	if len(items) == 0 {
		return "Todo list cleared."
	}
	var b strings.Builder
	b.WriteString("Todo list:\n")
	for _, it := range items {
		mark := map[string]string{TodoPending: "[ ]", TodoInProgress: "[>]", TodoCompleted: "[x]"}[it.Status]
		fmt.Fprintf(&b, "%s %s (%s)\n", mark, it.Content, it.ID)
	}
	return b.String()
}

// Plan step statuses.
const (
	StepPending    = "pending"
	StepInProgress = "in_progress"
	StepCompleted  = "completed"
	StepBlocked    = "blocked"
	StepSkipped    = "skipped"
)

// PlanStep is one tracked step of an accepted plan.
type PlanStep struct {
	ID         string `json:"id"`
	Imperative string `json:"imperative"`
	Gerund     string `json:"gerund"`
	Status     string `json:"status"`
}

// Implementation statuses of an accepted plan.
const (
	ImplRunning = "running"
	ImplPaused  = "paused"
	ImplDone    = "done"
)

// TrackedPlan is an accepted plan being implemented.
type TrackedPlan struct {
	Title    string `json:"title"`
	Artifact string `json:"artifact"` // work:// address
	// Hash is the sha256 of the accepted body (empty in records written
	// before it was kept; [TrackedPlan.PlanHash] then recovers a prefix).
	Hash   string         `json:"hash,omitempty"`
	Status string         `json:"status"`
	Reason string         `json:"reason,omitempty"`
	Policy handoff.Policy `json:"policy"`
	Steps  []PlanStep     `json:"steps"`
	// Clipped reports that the plan had more steps than are tracked one by
	// one: the last step then stands for all the rest (see [StepsFromProposal]).
	Clipped bool `json:"clipped,omitempty"`
	// Base names the implementation's staged base (review/<Base>/), which
	// the commit starting the implementation makes current; "" when none
	// was recorded.
	Base string `json:"base,omitempty"`
}

// PlanHash is the accepted plan's sha256, or for a record that predates
// Hash the 16-digit prefix its archive name carries ("" if neither).
func (p *TrackedPlan) PlanHash() string {
	if p.Hash != "" {
		return p.Hash
	}
	const pre, suf = "plans/accepted-", ".md"
	a := strings.TrimPrefix(p.Artifact, workScheme)
	if strings.HasPrefix(a, pre) && strings.HasSuffix(a, suf) {
		return strings.TrimSuffix(strings.TrimPrefix(a, pre), suf)
	}
	return ""
}

// Trailer is the "Plan: <title> (sha256:<12 hex>)" commit-message line
// naming this plan ([proposal.Trailer]); "" when no hash is known.
func (p *TrackedPlan) Trailer() string {
	line, _ := proposal.Trailer(p.Title, p.PlanHash())
	return line
}

// Done counts finished (completed or skipped) steps.
func (p *TrackedPlan) Done() int {
	n := 0
	for _, s := range p.Steps {
		if s.Status == StepCompleted || s.Status == StepSkipped {
			n++
		}
	}
	return n
}

// Remaining lists the steps still to do, by their imperative form.
func (p *TrackedPlan) Remaining() []PlanStep {
	var out []PlanStep
	for _, s := range p.Steps {
		if s.Status != StepCompleted && s.Status != StepSkipped {
			out = append(out, s)
		}
	}
	return out
}

// Carry is what survives a compaction: the title, the count of finished
// steps and the steps still to do — not the finished steps' content.
func (p *TrackedPlan) Carry() string {
	var b strings.Builder
	fmt.Fprintf(&b, "An accepted plan is being implemented: %q (%s). %d of %d steps are finished; do not redo them.", p.Title, p.Artifact, p.Done(), len(p.Steps))
	if p.Clipped {
		fmt.Fprintf(&b, " The plan has more steps than are tracked one by one: the last step, %s, stands for all the rest; read them in the accepted plan.", p.Steps[len(p.Steps)-1].ID)
	}
	if rem := p.Remaining(); len(rem) > 0 {
		b.WriteString(" Steps still to do:\n")
		for _, s := range rem {
			fmt.Fprintf(&b, "- [%s] %s (%s)\n", s.ID, s.Imperative, s.Status)
		}
	}
	return b.String()
}

// StepsFromProposal turns a proposal's steps into tracked steps. A plan
// with more than [proposal.MaxSteps] steps keeps the first ones and, as its
// last step, one that stands for the rest ("Do the remaining N steps of the
// accepted plan"), so the plan never reads done while steps remain;
// clipped reports that.
func StepsFromProposal(body string) (steps []PlanStep, clipped bool) {
	all := proposal.Parse(body).Steps
	more := 0
	if len(all) > proposal.MaxSteps {
		more = proposal.ClippedSteps(all[len(all)-1].Text)
		all = all[:proposal.MaxSteps]
	}
	for i, st := range all {
		text := strings.TrimSpace(st.Text)
		if text == "" {
			continue
		}
		status := StepPending
		if st.Done {
			status = StepCompleted
		}
		steps = append(steps, PlanStep{ID: "s" + strconv.Itoa(i+1), Imperative: text, Gerund: Gerund(text), Status: status})
	}
	if more > 0 {
		n := strconv.Itoa(more)
		steps = append(steps, PlanStep{ID: "s" + strconv.Itoa(proposal.MaxSteps+1),
			Imperative: "Do the remaining " + n + " more steps of the accepted plan (the tracked list was clipped at " + strconv.Itoa(proposal.MaxSteps) + ")",
			Gerund:     "Doing the remaining " + n + " more steps of the accepted plan",
			Status:     StepPending})
	}
	return steps, more > 0
}

var irregularGerunds = map[string]string{
	"run": "running", "set": "setting", "get": "getting", "put": "putting", "stop": "stopping",
	"plan": "planning", "cut": "cutting", "drop": "dropping", "wrap": "wrapping", "ship": "shipping",
	"be": "being", "see": "seeing", "free": "freeing", "tie": "tying", "lie": "lying", "die": "dying",
}

// Gerund derives the display gerund of an imperative step ("Add X" →
// "Adding X"). Text not starting with a word is returned unchanged.
func Gerund(imperative string) string {
	word, rest, _ := strings.Cut(imperative, " ")
	if word == "" || !unicode.IsLetter([]rune(word)[0]) {
		return imperative
	}
	lower := strings.ToLower(strings.Trim(word, "*_`"))
	if lower == "" {
		return imperative
	}
	g, ok := irregularGerunds[lower]
	switch {
	case ok:
	case strings.HasSuffix(lower, "ing"):
		g = lower
	case strings.HasSuffix(lower, "ie"):
		g = lower[:len(lower)-2] + "ying"
	case strings.HasSuffix(lower, "e") && !strings.HasSuffix(lower, "ee") && len(lower) > 2:
		g = lower[:len(lower)-1] + "ing"
	default:
		g = lower + "ing"
	}
	if unicode.IsUpper([]rune(word)[0]) {
		r := []rune(g)
		r[0] = unicode.ToUpper(r[0])
		g = string(r)
	}
	if rest == "" {
		return g
	}
	return g + " " + rest
}

// SetStep sets one step's status (by id like "s2" or 1-based number);
// when no step remains the implementation is done.
func (p *TrackedPlan) SetStep(step, status string) error {
	switch status {
	case StepPending, StepInProgress, StepCompleted, StepBlocked, StepSkipped:
	default:
		return fmt.Errorf("status %q: want pending, in_progress, completed, blocked or skipped", status)
	}
	idx := -1
	for i, st := range p.Steps {
		if st.ID == step || strconv.Itoa(i+1) == step {
			idx = i
		}
	}
	if idx < 0 {
		return fmt.Errorf("no step %q (steps are s1..s%d)", step, len(p.Steps))
	}
	p.Steps[idx].Status = status
	if len(p.Remaining()) == 0 {
		p.Status = ImplDone
	}
	return nil
}

// InProgress is the id of the step in progress ("" none).
func (p *TrackedPlan) InProgress() string {
	id := ""
	for _, st := range p.Steps {
		if st.Status == StepInProgress {
			id = st.ID
		}
	}
	return id
}

// PlanRef identifies an accepted plan: its title, the sha256 of the
// accepted text, its archive and the commit-message trailer naming it.
type PlanRef struct {
	Title    string `json:"title"`
	Hash     string `json:"hash"`
	Artifact string `json:"artifact"`
	Status   string `json:"status"` // the implementation's: running, paused, done
	Trailer  string `json:"trailer,omitempty"`
}

// Ref is the plan's [PlanRef].
func (p *TrackedPlan) Ref() *PlanRef {
	return &PlanRef{Title: p.Title, Hash: p.PlanHash(), Artifact: p.Artifact, Status: p.Status, Trailer: p.Trailer()}
}
