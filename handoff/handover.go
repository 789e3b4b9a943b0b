package handoff

import (
	"fmt"
	"os"
	"path/filepath"

	"planbridge/internal/atomicfile"
)

// CurrentPlan is the work:// path (session-relative) of a session's
// actionable proposal.
const CurrentPlan = "plans/current.md"

// InstallPlan gives a Worktree fork's work directory (forkWork) the plan
// files of the source's (srcWork), as the hand-over needs them before
// its commit: the accepted archive (artifact, session-relative) byte for
// byte and read-only, which must exist, and the current plan file
// ([CurrentPlan], 0644) if the source has a readable one. Each file is written once
// and atomically: an identical one (a retried hand-over) is reused, a
// different one refused, so the fork never implements another plan.
// The fork's session directory (forkWork's parent) must exist and is
// never created: a fork session deleted meanwhile fails the install.
func InstallPlan(srcWork, forkWork, artifact string) error {
	for _, f := range []struct {
		rel      string
		perm     os.FileMode
		optional bool
	}{{artifact, 0o444, false}, {CurrentPlan, 0o644, true}} {
		b, err := os.ReadFile(filepath.Join(srcWork, filepath.FromSlash(f.rel)))
		if err != nil {
			if f.optional {
				continue // the source has no current plan file to give
			}
			return err
		}
		if _, err := atomicfile.WriteOnceIn(filepath.Dir(filepath.Clean(forkWork)), filepath.Join(forkWork, filepath.FromSlash(f.rel)), b, f.perm); err != nil {
			return fmt.Errorf("install the accepted plan in the fork: %w", err)
		}
	}
	return nil
}
