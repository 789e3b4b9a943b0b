package handoff

import (
	"encoding/json"
	"fmt"
	"os"
	"unicode/utf8"
)

// Step is how far an accepted plan's handoff has durably progressed.
type Step string

// Handoff steps, in order. Acceptance commits StepRecorded (proposal
// accepted, Plan left, record written) in one transaction; each later step
// is committed before the next starts.
const (
	StepRecorded     Step = "recorded"      // context not prepared yet
	StepContextReady Step = "context_ready" // Current kept / Fresh or Summary segment installed
	StepForked       Step = "forked"        // Worktree: the fork holds its own record
	StepKickoff      Step = "kickoff"       // kickoff about to be sent
	// StepDispatched is committed in the transaction that stores the
	// kickoff prompt, before the request leaves: from here the kickoff is
	// never sent again; recovery continues the stored transcript. The
	// record is cleared when the implementation turn settles.
	StepDispatched Step = "dispatched"
)

// Artifact is a durable reference to an accepted plan: a session-relative
// path and the sha256 of the plan body.
type Artifact struct {
	Path string `json:"path"`
	Hash string `json:"hash"`
}

// Fork is the durable progress of a Worktree fork, recorded in this order.
type Fork struct {
	Point   int64  `json:"point,omitempty"`   // transcript index of the proposing reply
	Branch  string `json:"branch,omitempty"`  // reserved before any git mutation
	Dir     string `json:"dir,omitempty"`     // reserved before any git mutation
	Base    string `json:"base,omitempty"`    // commit the branch starts at, recorded with the reservation
	Owner   string `json:"owner,omitempty"`   // marks what this fork creates in git, so a retry removes only that
	Session string `json:"session,omitempty"` // the fork's id once it exists
}

// Record is a session's retry record: everything needed to resume an
// accepted plan's handoff exactly once.
type Record struct {
	Step      Step      `json:"step"`
	Selection Selection `json:"selection"`
	Artifact  Artifact  `json:"artifact"`
	Title     string    `json:"title"`
	Policy    Policy    `json:"policy"`
	GoalID    string    `json:"goal_id,omitempty"`
	Summary   string    `json:"summary,omitempty"` // cached Summary handoff, never regenerated
	Segment   int64     `json:"segment,omitempty"` // Fresh/Summary target context segment
	Fork      Fork      `json:"fork"`
	Reason    string    `json:"reason,omitempty"` // last failure, bounded
	Tries     int       `json:"tries"`
}

// MaxReason bounds a stored failure reason.
const MaxReason = 2000

// Dispatched is a copy of r at [StepDispatched], as the kickoff's commit
// stores it with the prompt: an earlier failure's reason is cleared.
func (r *Record) Dispatched() *Record {
	n := *r
	n.Step, n.Reason = StepDispatched, ""
	return &n
}

// SetReason stores err as a bounded failure reason.
func (r *Record) SetReason(err error) {
	if err == nil {
		r.Reason = ""
		return
	}
	s := err.Error()
	if len(s) > MaxReason {
		cut := MaxReason
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + fmt.Sprintf(" … [%d bytes cut]", len(s)-cut)
	}
	r.Reason = s
}

// Marshal encodes the record for storage.
func (r *Record) Marshal() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// UnmarshalRecord decodes a stored record, refusing a corrupt one with a
// clear error instead of guessing.
func UnmarshalRecord(s string) (*Record, error) {
	var r Record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("retry record is corrupt: %w", err)
	}
	switch r.Step {
	case StepRecorded, StepContextReady, StepForked, StepKickoff, StepDispatched:
	default:
		return nil, fmt.Errorf("retry record is corrupt: unknown step %q", r.Step)
	}
	if r.Artifact.Path == "" || r.Artifact.Hash == "" {
		return nil, fmt.Errorf("retry record is corrupt: no accepted artifact")
	}
	return &r, nil
}

// FailpointEnv names the environment variable holding a failpoint name.
const FailpointEnv = "PLANBRIDGE_FAILPOINT"

// FailpointExit is the exit status of a process stopped by a failpoint.
const FailpointExit = 86

// Failpoint makes the process exit right here when PLANBRIDGE_FAILPOINT
// names this point: tests use it to crash between durable steps.
func Failpoint(name string) {
	if os.Getenv(FailpointEnv) == name {
		fmt.Fprintf(os.Stderr, "planbridge: failpoint %s: exiting\n", name)
		os.Exit(FailpointExit)
	}
}

// Failpoints lists every failpoint of the handoff, in pipeline order.
var Failpoints = []string{
	"handoff.archived",   // accepted plan archived, proposal metadata not moved yet
	"handoff.committed",  // the acceptance commit is durable (it names the staged base), nothing after it ran
	"handoff.recorded",   // accepted, Plan left, retry record committed
	"handoff.summarized", // Summary: the summary is cached in the record
	"handoff.context",    // context prepared and committed
	"handoff.kickoff",    // about to send the kickoff request
	"handoff.dispatched", // kickoff prompt and dispatched record committed, request not sent
	"handoff.goal",       // Goal persisted and record cleared, kickoff not sent
	"goal.kickoff",       // the Goal's kickoff turn is about to be sent
	"goal.dispatched",    // the Goal's kickoff prompt committed (kickoff cleared), request not sent
}

// ParkFailpoints lists the failpoints of [Park] (a parked plan's start
// goes through "handoff.recorded").
var ParkFailpoints = []string{
	"park.archived", // approved plan archived for parking, nothing recorded yet
}

// ForkFailpoints lists the failpoints of the Worktree fork step, in order.
var ForkFailpoints = []string{
	"fork.point",    // fork point recorded
	"fork.reserved", // branch and directory reserved, no git mutation yet
	"fork.session",  // fork session exists and is recorded
	// inside the worktree's creation (package worktree)
	"worktree.staged",   // administrative directory staged, owner mark not written
	"worktree.admin",    // marked administrative directory in place, no checkout yet
	"worktree.checkout", // files written, no index or completion mark yet
	"fork.worktree",     // linked worktree created
	"fork.handed",       // the fork holds its own record; the source's is gone
}
