package bashclass

import "planbridge/sandbox"

// Confinement describes the OS layers a [Runner] confines external
// programs with on this machine (see [sandbox.Probe]), e.g.
// "landlock ABI 7, bwrap, seccomp, rlimits (processes: pids cgroup)". It
// starts with "NO OS CONFINEMENT" when neither Landlock nor bwrap works
// here; the static and dynamic checks apply either way.
func Confinement() string { return sandbox.Probe().Summary() }
