package session

import (
	"testing"

	"planbridge/handoff"
)

// TestHandoffCodes: the refusals of package handoff reach clients with
// the session's codes, which clients branch on.
func TestHandoffCodes(t *testing.T) {
	for _, c := range []struct{ session, handoff string }{
		{CodeBusy, handoff.CodeBusy},
		{CodeGoalUnfinished, handoff.CodeGoalUnfinished},
		{CodeInvalidSelect, handoff.CodeInvalidSelection},
		{CodeForkBlocked, handoff.CodeForkBlocked},
		{CodeInvalidBranch, handoff.CodeInvalidBranch},
		{CodeSessionEnded, handoff.CodeSessionEnded},
	} {
		if c.session != c.handoff {
			t.Errorf("session code %q, handoff code %q", c.session, c.handoff)
		}
	}
	err := refused(handoff.ErrRecordWaiting)
	if e, ok := err.(*Error); !ok || e.Code != CodeBusy || e.Message != handoff.ErrRecordWaiting.Message {
		t.Errorf("refused: %#v", err)
	}
}
