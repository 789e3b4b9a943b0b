package handoff

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"planbridge/proposal"
)

// ArtifactData is how a plan body is stored as a work:// file (the
// current plan, a version, an accepted archive): with one trailing line
// feed, which [ReadArtifact] takes off again.
func ArtifactData(body string) []byte { return []byte(body + "\n") }

// ReadArtifact reads the plan file rel (session-relative) under the
// session's work:// directory work and checks it against hash
// ([proposal.HashBody]). The error names work://rel: unreadable, or
// changed outside planbridge.
func ReadArtifact(work, rel, hash string) (string, error) {
	b, err := os.ReadFile(filepath.Join(work, filepath.FromSlash(rel)))
	if err != nil {
		return "", fmt.Errorf("read work://%s: %w", rel, err)
	}
	body := strings.TrimSuffix(string(b), "\n")
	if proposal.HashBody(body) != hash {
		return "", fmt.Errorf("work://%s does not match its recorded hash: it was changed outside planbridge", rel)
	}
	return body, nil
}

// ProposalBody is the text of a proposal that every surface shows and
// acceptance archives: its stored body when that has the recorded hash,
// whatever the plan file rel now holds (differs reports that the file no
// longer matches); for a proposal stored before bodies were (stored ""),
// or one whose stored body does not match, the file, checked against the
// hash ([ReadArtifact]).
func ProposalBody(work, rel, hash, stored string) (body string, differs bool, err error) {
	if stored != "" && proposal.HashBody(stored) == hash {
		_, ferr := ReadArtifact(work, rel, hash)
		return stored, ferr != nil, nil
	}
	body, err = ReadArtifact(work, rel, hash)
	return body, false, err
}
