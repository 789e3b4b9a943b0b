package handoff

import (
	"fmt"

	"planbridge/goal"
)

// CodeSessionInUse refuses deleting a session that still owns work
// ([CheckDelete]).
const CodeSessionInUse = "session_in_use"

// DeleteState is what [CheckDelete] knows of a session that would be
// deleted. A read that failed is kept as its error, returned where the
// decision reaches it, so a refusal earlier in the order still wins.
type DeleteState struct {
	// Busy, Starting and Queued are the session's own, read under its
	// lock in the critical section that claims it for the delete: a turn
	// or workflow running, a parked plan's start between its checks and
	// its hand-over, prompts waiting.
	Busy, Starting bool
	Queued         int
	// Source is the session handing its implementation over to this one,
	// its Worktree fork: from the fork session's creation until the
	// hand-over commits (the source's record names the fork).
	Source         string
	SourceErr      error  // reading the source's record failed
	Fork           string // the Worktree fork it handed over to, if that session still exists
	Record         bool   // an accepted plan's retry record exists
	RecordErr      error  // reading the retry record failed
	Implementation string // the tracked implementation's status while unfinished (running, paused), else ""
	Goal           *goal.Goal
	Shared         int   // share links still open
	SharedErr      error // counting them failed
}

// CheckDelete says why a session may not be deleted, or nil: first what
// runs in it (a turn or workflow, a parked plan's start: [CodeBusy]) and
// prompts waiting ([CodeSessionInUse]), read under the session's lock,
// which a delete holds from that check to its claim (the session may ask
// with those alone first); then work it still owns that deleting it
// would lose, in this order — the hand-over of an implementation to it
// (it is a Worktree fork its source is still handing over to), a live
// Worktree fork it handed over to, an accepted plan whose handoff is
// unfinished (a retry record), a tracked implementation running or
// paused, a Goal that is not complete, an open share link. Each is a
// [Refusal] with [CodeSessionInUse] naming what lifts it.
func CheckDelete(st DeleteState) error {
	inUse := func(format string, args ...any) error {
		return &Refusal{Code: CodeSessionInUse, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case st.Busy:
		return &Refusal{Code: CodeBusy, Message: "a turn is running in this session; wait for it or interrupt it, then delete"}
	case st.Starting:
		return &Refusal{Code: CodeBusy, Message: "a parked plan is being started in this session; wait for it, then delete"}
	case st.Queued > 0:
		return inUse("%d prompt(s) are queued in this session; run them (M-x planbridge-recover) or interrupt, then delete", st.Queued)
	case st.SourceErr != nil:
		return st.SourceErr
	case st.Source != "":
		return inUse("this Worktree fork is being handed its implementation by %s; wait for the hand-over, then delete", st.Source)
	case st.Fork != "":
		return inUse("this session handed its implementation to the Worktree fork %s; delete that first", st.Fork)
	case st.RecordErr != nil:
		return st.RecordErr
	case st.Record:
		return inUse("this session has an accepted plan whose implementation is unfinished; finish it (M-x planbridge-recover) first")
	case st.Implementation != "":
		return inUse("this session's plan implementation is %s; finish it first", st.Implementation)
	case st.Goal != nil && st.Goal.Status != goal.Complete:
		return inUse("this session's Goal is %s; clear it (/goal clear) first", st.Goal.Status)
	case st.SharedErr != nil:
		return st.SharedErr
	case st.Shared > 0:
		return inUse("this session is shared; stop sharing (M-x planbridge-share-stop) first")
	}
	return nil
}
