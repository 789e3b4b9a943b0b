package review

import (
	"path"
	"slices"
	"strings"

	"planbridge/proposal"
)

// A Scope is the set of workspace paths an implementation declared it
// changes: files and directories (a directory covers everything under it).
// The zero Scope declares nothing and allows every path.
type Scope struct {
	Paths      []string `json:"paths"`
	Extensions []string `json:"extensions,omitempty"` // granted by the person during the implementation
	// Restored are the writes outside the scope that were put back.
	Restored []Restoration `json:"restored,omitempty"`
	// Unsettled are the commands the process stopped during (a crash, a
	// kill) before what they changed was compared with the scope: their
	// effects were neither asked about nor restored.
	Unsettled []string `json:"unsettled,omitempty"`
}

// A Restoration is one command's writes outside the scope, put back as
// they were before it ran.
type Restoration struct {
	Command string   `json:"command"`
	Paths   []string `json:"paths"`            // restored
	Failed  []string `json:"failed,omitempty"` // "path: why" for each one that could not be
	// By is "person" (the person chose to restore), "no answer" (the
	// question was interrupted or timed out) or "unattended" (no person
	// could answer: restored, and the implementation paused).
	By string `json:"by"`
	// Kept is where what the command had left in the restored paths is
	// kept (a directory of the session's state, by the same paths).
	Kept string `json:"kept,omitempty"`
}

// DeriveScope is the scope an accepted plan declares: the paths named in
// its Key Changes (or Steps, Implementation) sections, else in its whole
// body when it has no such section.
func DeriveScope(body string) []string {
	src := ""
	for _, s := range proposal.Parse(body).Sections {
		t := strings.ToLower(s.Title)
		if strings.Contains(t, "key changes") || strings.Contains(t, "steps") || strings.Contains(t, "implementation") {
			src += s.Body + "\n"
		}
	}
	if src == "" {
		src = body
	}
	return Cite(src).Names()
}

// CleanScope normalises paths a person typed for a scope: each must be a
// workspace-relative path (no "..", not absolute); empty entries are
// dropped. ok is false, with the offending entry, when one is not.
func CleanScope(paths []string) (out []string, bad string, ok bool) {
	out = []string{}
	for _, p := range paths {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		c, good := normPath(p)
		if !good {
			return nil, p, false
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, "", true
}

// Declared reports whether the scope names anything.
func (s Scope) Declared() bool { return len(s.Paths) > 0 }

// Allows reports whether rel (workspace-relative, slash-separated) is in
// the scope: equal to one of its paths or extensions, or under one. An
// undeclared scope allows everything.
func (s Scope) Allows(rel string) bool {
	if !s.Declared() {
		return true
	}
	rel = path.Clean(rel)
	for _, list := range [][]string{s.Paths, s.Extensions} {
		for _, p := range list {
			if p == rel || strings.HasPrefix(rel, p+"/") {
				return true
			}
		}
	}
	return false
}

// Outside returns the changes a command made outside the scope, and their
// paths: control files always, paths outside the workspace (root-relative
// paths not under prefix, the workspace within the checkout), and paths
// the scope does not allow.
func (s Scope) Outside(changes []Change, prefix string) (outside []Change, paths []string) {
	for _, c := range changes {
		rel, inWS := strings.CutPrefix(c.Path, prefix)
		if strings.HasPrefix(c.Path, ControlPrefix) || !inWS || !s.Allows(rel) {
			outside = append(outside, c)
			paths = append(paths, c.Path)
		}
	}
	return outside, paths
}

// Extend adds the root-relative paths (under prefix) to the extensions.
func (s *Scope) Extend(paths []string, prefix string) {
	for _, p := range paths {
		rel := strings.TrimPrefix(p, prefix)
		if !slices.Contains(s.Extensions, rel) {
			s.Extensions = append(s.Extensions, rel)
		}
	}
}
