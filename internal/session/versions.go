package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"planbridge/internal/agent"
	"planbridge/internal/store"
	"planbridge/proposal"
	"planbridge/review"
)

// A PlanVersion is one published revision of the session's plan, kept
// immutably as work://plans/vN.md (the model cannot write under plans/).
type PlanVersion struct {
	N    int    `json:"n"`
	Hash string `json:"hash"`
	Path string `json:"path"`
}

var versionRE = regexp.MustCompile(`^v([1-9][0-9]{0,5})\.md$`)

func versionRel(n int) string { return fmt.Sprintf("%s/v%d.md", agent.PlansDir, n) }

func commentsRel(n int) string { return fmt.Sprintf("%s/v%d.comments.json", agent.PlansDir, n) }

// planVersions lists the published versions in order. A file whose body
// no longer parses as a version (unreadable) is left out.
func (s *Session) planVersions() []PlanVersion {
	des, err := os.ReadDir(s.workPath(agent.PlansDir))
	if err != nil {
		return nil
	}
	var out []PlanVersion
	for _, de := range des {
		m := versionRE.FindStringSubmatch(de.Name())
		if m == nil || !de.Type().IsRegular() {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		b, err := os.ReadFile(s.workPath(versionRel(n)))
		if err != nil {
			continue
		}
		out = append(out, PlanVersion{N: n, Hash: proposal.HashBody(strings.TrimSuffix(string(b), "\n")), Path: agent.WorkScheme + versionRel(n)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N < out[j].N })
	return out
}

// recordVersion keeps body as the next version unless the latest version
// already holds it. Written once, read-only, before the proposal row moves:
// a crash in between leaves a version that the same proposal reuses.
func (s *Session) recordVersion(hash, body string) error {
	vs := s.planVersions()
	if len(vs) > 0 && vs[len(vs)-1].Hash == hash {
		return nil
	}
	n := 1
	if len(vs) > 0 {
		n = vs[len(vs)-1].N + 1
	}
	_, err := store.WriteFileOnce(s.workPath(versionRel(n)), artifactData(body), 0o444)
	return err
}

// versionOf returns the latest version holding hash, or a zero version.
func versionOf(vs []PlanVersion, hash string) PlanVersion {
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].Hash == hash {
			return vs[i]
		}
	}
	return PlanVersion{}
}

func (s *Session) versionBody(n int) (string, error) {
	b, err := os.ReadFile(s.workPath(versionRel(n)))
	if err != nil {
		return "", fmt.Errorf("read %s%s: %w", agent.WorkScheme, versionRel(n), err)
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// saveComments records the person's line comments on version n (replacing
// earlier ones on that version).
func (s *Session) saveComments(n int, comments []Comment) error {
	if n == 0 || len(comments) == 0 {
		return nil
	}
	cs := make([]review.Comment, len(comments))
	for i, c := range comments {
		cs[i] = review.Comment{Line: c.Line, Text: strings.TrimSpace(c.Text)}
	}
	b, _ := json.Marshal(cs)
	return store.WriteFileAtomic(s.workPath(commentsRel(n)), b, 0o444)
}

func (s *Session) loadComments(n int) ([]review.Comment, error) {
	b, err := os.ReadFile(s.workPath(commentsRel(n)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cs []review.Comment
	if err := json.Unmarshal(b, &cs); err != nil {
		return nil, fmt.Errorf("%s%s is corrupt: %w", agent.WorkScheme, commentsRel(n), err)
	}
	return cs, nil
}

// versionCard fills the version fields of the card for the proposal with
// this hash and body: its version, how many revisions came before, and the
// previous version's comments carried onto it.
func (s *Session) versionCard(v *ApprovalView, hash, body string) {
	vs := s.planVersions()
	cur := versionOf(vs, hash)
	if cur.N == 0 {
		return
	}
	v.Version, v.Revisions, v.VersionPath = cur.N, cur.N-1, cur.Path
	if cur.N < 2 {
		return
	}
	prev, err := s.versionBody(cur.N - 1)
	if err != nil {
		return
	}
	cs, err := s.loadComments(cur.N - 1)
	if err != nil {
		v.Notice = joinNotice(v.Notice, err.Error())
		return
	}
	if len(cs) > 0 {
		v.Comments = review.Carry(prev, body, cs)
	}
}

// VersionDiff is a unified diff between two versions of the plan.
type VersionDiff struct {
	From int    `json:"from"`
	To   int    `json:"to"`
	Diff string `json:"diff"`
}

// DiffVersions diffs version from against version to; to 0 is the current
// proposal's version and from 0 the one before it.
func (s *Session) DiffVersions(from, to int) (VersionDiff, error) {
	s.mu.Lock()
	hash := ""
	if s.prop != nil {
		hash = s.prop.Hash
	}
	s.mu.Unlock()
	if to == 0 {
		to = versionOf(s.planVersions(), hash).N
	}
	if from == 0 {
		from = to - 1
	}
	if to < 1 || from < 1 || from == to {
		return VersionDiff{}, errorf(CodeNoProposal, "there is no earlier plan version to compare with (from v%d to v%d)", from, to)
	}
	a, err := s.versionBody(from)
	if err != nil {
		return VersionDiff{}, errorf(CodeNoProposal, "plan version %d does not exist", from)
	}
	b, err := s.versionBody(to)
	if err != nil {
		return VersionDiff{}, errorf(CodeNoProposal, "plan version %d does not exist", to)
	}
	return VersionDiff{From: from, To: to, Diff: review.Unified(agent.WorkScheme+versionRel(from), agent.WorkScheme+versionRel(to), a+"\n", b+"\n", 3)}, nil
}
