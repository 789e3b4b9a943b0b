package main

import (
	"context"
	"os/exec"
	"planbridge/internal/agent"
)

// newShell returns the bash runner for the bash tool. Until the read-only
// runner lands there is none: bash is refused in Plan.
func newShell() agent.Shell { return nil }

func shellConfinement() string {
	if _, err := exec.LookPath("bwrap"); err != nil {
		return "read-only runner not built; bwrap not found"
	}
	return "read-only runner not built"
}

var _ = context.Background
