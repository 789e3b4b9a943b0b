package handoff

import (
	"errors"
	"fmt"
	"strings"

	"planbridge/worktree"
)

// Refusal is a check's "no" before anything moved: a stable code the
// client branches on and the words the person reads (the session hands
// both on unchanged).
type Refusal struct {
	Code    string
	Message string
}

func (r *Refusal) Error() string { return r.Message }

// Refusal codes.
const (
	CodeForkBlocked      = "fork_blocked"
	CodeInvalidBranch    = "invalid_branch"
	CodeInvalidSelection = "invalid_selection"
	CodeGoalUnfinished   = "goal_unfinished"
	CodeBusy             = "busy"
	CodeSessionEnded     = "session_ended"
	CodeSettingsChanged  = "settings_changed"
)

// ErrSettingsChanged refuses an acceptance or a park whose card settings
// moved under it, or are not the ones its caller expected.
var ErrSettingsChanged = &Refusal{Code: CodeSettingsChanged, Message: "the approval settings changed during acceptance; review them and accept again"}

// RunPort is what [CheckRun] and [CheckFork] read of the session whose
// plan would start. Every method reads; none changes anything.
type RunPort interface {
	// ForkBlockers is [ForkBlockers] of the session now.
	ForkBlockers() []string
	// RepoRoot is the root of the git checkout holding the workspace.
	RepoRoot() (string, error)
	// UnfinishedGoal reports whether the session has an unfinished Goal,
	// and its one-line summary.
	UnfinishedGoal() (bool, string)
	// CheckModel refuses a model that is not available.
	CheckModel(name string) error
}

// CheckFork refuses a Worktree fork on branch that cannot start now, in
// this order: an invalid branch name ([CodeInvalidBranch]), the session's
// fork blockers, a workspace that is no git checkout, a branch or fork
// directory that exists ([BranchBlocker]); all [CodeForkBlocked] but the
// first.
func CheckFork(p RunPort, branch string) error {
	if err := worktree.ValidBranchName(branch); err != nil {
		return &Refusal{Code: CodeInvalidBranch, Message: fmt.Sprintf("branch %q: %v", branch, err)}
	}
	if blockers := p.ForkBlockers(); len(blockers) > 0 {
		return &Refusal{Code: CodeForkBlocked, Message: "cannot fork: " + strings.Join(blockers, "; ")}
	}
	root, err := p.RepoRoot()
	if err != nil {
		return &Refusal{Code: CodeForkBlocked, Message: "cannot fork: " + NotGitBlocker + ": " + err.Error()}
	}
	if why := BranchBlocker(root, branch); why != "" {
		return &Refusal{Code: CodeForkBlocked, Message: "cannot fork: " + why}
	}
	return nil
}

// CheckRun refuses an implementation of sel that cannot start now, the
// same for an acceptance and a parked plan's start (doing names which,
// "accepting" or "starting"): for a Worktree [CheckFork] of sel.Branch,
// for Goal execution an unfinished Goal ([CodeGoalUnfinished]), then an
// unavailable model ([CodeInvalidSelection]). A nil error means it may
// start; nothing is reserved.
func CheckRun(p RunPort, sel Selection, doing string) error {
	if sel.Location == Worktree {
		if err := CheckFork(p, sel.Branch); err != nil {
			return err
		}
	}
	if sel.Execution == Goal {
		if unfinished, sum := p.UnfinishedGoal(); unfinished {
			return &Refusal{Code: CodeGoalUnfinished, Message: "an unfinished Goal exists (" + sum + "); finish or clear it before " + doing + " with Goal"}
		}
	}
	if err := p.CheckModel(sel.Model); err != nil {
		return &Refusal{Code: CodeInvalidSelection, Message: err.Error()}
	}
	return nil
}

// StartState is what of a session can refuse the start of a parked plan
// whatever its selection.
type StartState struct {
	ForkedTo string // the Worktree fork the session continued in
	Busy     bool   // a turn or workflow runs
	Starting bool   // another start holds the session from its checks to its hand-over
	Pending  bool   // an approval card is pending
}

// StartBlocker refuses a start in st (nil: none), in this order: the
// session continued in its fork ([CodeSessionEnded]), it is busy, another
// start holds it, a card is pending ([CodeBusy] each). A start that passes
// claims the session (Starting) in the same critical section, so of two
// at once one is told the session is busy starting.
func StartBlocker(st StartState) error {
	switch {
	case st.ForkedTo != "":
		return &Refusal{Code: CodeSessionEnded, Message: "this planning session continued in its Worktree fork " + st.ForkedTo}
	case st.Busy:
		return &Refusal{Code: CodeBusy, Message: "the session is busy; wait for the running turn or interrupt it"}
	case st.Starting:
		return &Refusal{Code: CodeBusy, Message: "the session is busy starting an accepted plan; wait for it"}
	case st.Pending:
		return &Refusal{Code: CodeBusy, Message: "an approval card is pending in this session; decide it first"}
	}
	return nil
}

// ErrRecordWaiting refuses the start of a parked plan while an accepted
// plan of the session waits for its recovery.
var ErrRecordWaiting = &Refusal{Code: CodeBusy, Message: "an accepted plan of this session waits for a retry; retry or finish it first"}

// AsRefusal reports whether err is a [Refusal], and which.
func AsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	ok := errors.As(err, &r)
	return r, ok
}
