package event

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestNewTurnEnd(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		want    TurnEnd
		failure string // "" for none
	}{
		{"settled", nil, TurnEnd{Turn: 3, OK: true}, ""},
		{"failed", errors.New("could not save the turn: disk full"), TurnEnd{Turn: 3, Error: "could not save the turn: disk full"}, "could not save the turn: disk full"},
		{"interrupted", context.Canceled, TurnEnd{Turn: 3, Error: "interrupted"}, ""},
		{"interrupted, wrapped", fmt.Errorf("stream: %w", context.Canceled), TurnEnd{Turn: 3, Error: "interrupted"}, ""},
		{"deadline is a failure", context.DeadlineExceeded, TurnEnd{Turn: 3, Error: "context deadline exceeded"}, "context deadline exceeded"},
	} {
		end, failure := NewTurnEnd(3, tc.err)
		if end != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, end, tc.want)
		}
		if (failure != nil) != (tc.failure != "") || failure != nil && (failure.Message != tc.failure || failure.Durable != nil) {
			t.Errorf("%s: failure %+v, want %q", tc.name, failure, tc.failure)
		}
	}
}
