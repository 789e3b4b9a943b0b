package handoff

import (
	"fmt"
	"strings"
	"time"

	"planbridge/proposal"
)

// ParkedPlan is a parked plan as clients see it.
type ParkedPlan struct {
	ID        string    `json:"id"`
	Session   string    `json:"session"`
	Title     string    `json:"title"`
	Hash      string    `json:"hash"`
	Artifact  string    `json:"artifact"`
	Selection Selection `json:"selection"`
	Head      string    `json:"head,omitempty"`
	Branch    string    `json:"branch,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Started is set once the plan was started (it never starts twice).
	Started   bool       `json:"started"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	Location  string     `json:"location,omitempty"` // the Location it was started with
	Trailer   string     `json:"trailer,omitempty"`
}

// SetStarted marks p started at t (a zero t: not started), and names it
// in its commit trailer ([proposal.Trailer]).
func (p *ParkedPlan) SetStarted(t time.Time) {
	if !t.IsZero() {
		p.Started, p.StartedAt = true, &t
	}
	p.Trailer, _ = proposal.Trailer(p.Title, p.Hash)
}

// ParkedList is the `/plan parked` text listing ps, the plans of one
// session not yet started.
func ParkedList(ps []ParkedPlan) string {
	if len(ps) == 0 {
		return "No parked plans in this session."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d parked plan(s):", len(ps))
	for _, p := range ps {
		fmt.Fprintf(&b, "\n- %s %q (sha256:%s), %s, parked %s", p.ID, p.Title, p.Hash[:min(12, len(p.Hash))], p.Selection.Location, p.CreatedAt.Format(time.RFC3339))
	}
	return b.String()
}
