package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"planbridge/bashclass"
	"planbridge/internal/agent"
)

// newShell returns the bash runner for the bash tool.
func newShell() agent.Shell { return agent.BashShell{} }

// shellConfinement says how read-only commands are confined on this machine.
func shellConfinement() string { return bashclass.Confinement() }

// absOr returns p made absolute, or p when that fails.
func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// rootList is a repeatable flag of absolute directories (--read-root).
type rootList []string

func (l *rootList) String() string { return strings.Join(*l, string(filepath.ListSeparator)) }

func (l *rootList) Set(v string) error {
	if !filepath.IsAbs(v) {
		return fmt.Errorf("%q is not an absolute path", v)
	}
	*l = append(*l, filepath.Clean(v))
	return nil
}

// fromEnv adds the absolute entries of a colon-separated list.
func (l *rootList) fromEnv(v string) {
	for _, p := range filepath.SplitList(v) {
		if filepath.IsAbs(p) {
			*l = append(*l, filepath.Clean(p))
		}
	}
}
