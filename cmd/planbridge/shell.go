package main

import (
	"planbridge/bashclass"
	"planbridge/internal/agent"
)

// newShell returns the bash runner for the bash tool.
func newShell() agent.Shell { return agent.BashShell{} }

// shellConfinement says how read-only commands are confined on this machine.
func shellConfinement() string { return "read-only runner; confinement: " + bashclass.Confinement() }
