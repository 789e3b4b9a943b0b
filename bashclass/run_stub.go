//go:build !bashclass_interp

package bashclass

import (
	"context"
	"errors"
)

// ErrNoInterpreter is returned by [Runner.Run] in builds without the
// interpreter (mvdan.cc/sh/v3/interp needs golang.org/x/term in go.sum;
// build with -tags bashclass_interp once it is there).
var ErrNoInterpreter = errors.New("bashclass: runner built without mvdan.cc/sh/v3/interp")

// Run classifies src; in this build it cannot execute, so an allowed
// command returns [ErrNoInterpreter]. A denied one is reported as refused.
func (r *Runner) Run(ctx context.Context, src string) (Result, error) {
	if v := Classify(src); !v.Allow {
		return Result{ExitCode: ExitRefused, Refused: true, Reason: v.Reason}, nil
	}
	return Result{}, ErrNoInterpreter
}
