package handoff

import "strings"

// ParsePlanRef is the accepted plan a Goal's plan reference names
// ([PlanRef]: work://<path>#<sha256>): ok is false for a reference with no
// hash, and for "" (a Goal started without a plan). A reference without
// the work:// prefix is read as a bare path, as stored Goals have been.
func ParsePlanRef(ref string) (a Artifact, ok bool) {
	path, hash, ok := strings.Cut(strings.TrimPrefix(ref, "work://"), "#")
	if !ok {
		return Artifact{}, false
	}
	return Artifact{Path: path, Hash: hash}, true
}
