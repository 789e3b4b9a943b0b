package event

import (
	"context"
	"errors"
)

// NewTurnEnd is the end of turn with err (nil: it settled), and failure,
// the [Error] the person is told of first (nil for a turn that settled
// and for an interrupted one, a [context.Canceled] err, whose Error is
// "interrupted": the person hears of an interruption by a [Notice]).
func NewTurnEnd(turn int64, err error) (end TurnEnd, failure *Error) {
	end = TurnEnd{Turn: turn, OK: err == nil}
	switch {
	case err == nil:
	case errors.Is(err, context.Canceled):
		end.Error = "interrupted"
	default:
		end.Error = err.Error()
		failure = &Error{Message: end.Error}
	}
	return end, failure
}
