package session

import (
	"bytes"
	"encoding/json"
	"strings"
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

// TestCardJSON: the card and a parked plan reach clients with the keys
// (and in the order) they had before their parts moved into package
// handoff.
func TestCardJSON(t *testing.T) {
	for _, c := range []struct {
		v    any
		keys string
	}{
		{ApprovalView{}, "pending hidden selection title body text hash path edited models skills blockers warnings revisions scope"},
		{ParkedView{}, "id session title hash artifact selection created_at started"},
	} {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		var keys []string
		depth := 0
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			switch tok := tok.(type) {
			case json.Delim:
				if tok == '{' || tok == '[' {
					depth++
				} else {
					depth--
				}
			case string:
				if depth == 1 && dec.More() {
					keys = append(keys, tok)
					// skip the value
					var v json.RawMessage
					if err := dec.Decode(&v); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if got := strings.Join(keys, " "); got != c.keys {
			t.Errorf("%T keys %q, want %q", c.v, got, c.keys)
		}
	}
}
