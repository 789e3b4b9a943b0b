package review

import "fmt"

// StepProgress summarises an accepted plan's implementation.
type StepProgress struct {
	Done   int    `json:"done"`
	Total  int    `json:"total"`
	Status string `json:"status"`
}

// Progress is p's [StepProgress].
func (p *TrackedPlan) Progress() *StepProgress {
	return &StepProgress{Done: p.Done(), Total: len(p.Steps), Status: p.Status}
}

// Summary is what `/plan status` says of the implementation: its status
// and steps done, the accepted plan's title and the first 12 digits of its
// hash (when it has one), and for a clipped plan which step stands for
// the steps beyond the tracked ones. It is one line.
func (p *TrackedPlan) Summary() string {
	s := fmt.Sprintf("implementation %s, %d/%d steps done", p.Status, p.Done(), len(p.Steps))
	if h := p.PlanHash(); len(h) >= 12 {
		s += fmt.Sprintf(" · accepted plan %q (sha256:%s)", p.Title, h[:12])
	}
	if p.Clipped && len(p.Steps) > 0 {
		s += fmt.Sprintf(" (the plan was clipped: step %s stands for the steps beyond %d)", p.Steps[len(p.Steps)-1].ID, len(p.Steps)-1)
	}
	return s
}
