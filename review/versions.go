package review

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"planbridge/internal/atomicfile"
	"planbridge/proposal"
)

// A PlanVersion is one published revision of the session's plan, kept
// immutably as work://plans/vN.md (the model cannot write under plans/).
type PlanVersion struct {
	N    int    `json:"n"`
	Hash string `json:"hash"`
	Path string `json:"path"`
}

var versionRE = regexp.MustCompile(`^v([1-9][0-9]{0,5})\.md$`)

func (t *Tracker) versionRel(n int) string { return fmt.Sprintf("%s/v%d.md", t.cfg.Plans, n) }

func (t *Tracker) commentsRel(n int) string {
	return fmt.Sprintf("%s/v%d.comments.json", t.cfg.Plans, n)
}

func (t *Tracker) workPath(rel string) string { return filepath.Join(t.cfg.Work, rel) }

// workAnchor and recordAnchor are the session's directory (the parent of
// the work:// root and of the review directory), which every write of the
// Tracker lies below and none creates (package atomicfile's …In writes):
// once the session is deleted, a write fails and brings nothing back.
func (t *Tracker) workAnchor() string   { return filepath.Dir(filepath.Clean(t.cfg.Work)) }
func (t *Tracker) recordAnchor() string { return filepath.Dir(filepath.Clean(t.cfg.Dir)) }

// Versions lists the published versions in order. A file that cannot be
// read is left out.
func (t *Tracker) Versions() []PlanVersion {
	des, err := os.ReadDir(t.workPath(t.cfg.Plans))
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
		body, err := t.versionBody(n)
		if err != nil {
			continue
		}
		out = append(out, PlanVersion{N: n, Hash: proposal.HashBody(body), Path: workScheme + t.versionRel(n)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N < out[j].N })
	return out
}

// RecordVersion keeps body (whose hash is hash) as the next version unless
// the latest version already holds it. Written once, read-only, before the
// proposal row moves: a crash in between leaves a version that the same
// proposal reuses.
func (t *Tracker) RecordVersion(hash, body string) error {
	vs := t.Versions()
	if len(vs) > 0 && vs[len(vs)-1].Hash == hash {
		return nil
	}
	n := 1
	if len(vs) > 0 {
		n = vs[len(vs)-1].N + 1
	}
	_, err := atomicfile.WriteOnceIn(t.workAnchor(), t.workPath(t.versionRel(n)), []byte(body+"\n"), 0o444)
	return err
}

// VersionOf returns the latest version holding hash, or a zero version.
func VersionOf(vs []PlanVersion, hash string) PlanVersion {
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].Hash == hash {
			return vs[i]
		}
	}
	return PlanVersion{}
}

func (t *Tracker) versionBody(n int) (string, error) {
	b, err := os.ReadFile(t.workPath(t.versionRel(n)))
	if err != nil {
		return "", fmt.Errorf("read %s%s: %w", workScheme, t.versionRel(n), err)
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// SaveComments records the person's line comments on the latest version
// holding hash (replacing earlier ones on that version; their text
// trimmed). No version, or no comments, records nothing.
func (t *Tracker) SaveComments(hash string, comments []Comment) error {
	n := VersionOf(t.Versions(), hash).N
	if n == 0 || len(comments) == 0 {
		return nil
	}
	cs := make([]Comment, len(comments))
	for i, c := range comments {
		cs[i] = Comment{Line: c.Line, Text: strings.TrimSpace(c.Text)}
	}
	b, _ := json.Marshal(cs)
	return atomicfile.WriteFileIn(t.workAnchor(), t.workPath(t.commentsRel(n)), b, 0o444)
}

func (t *Tracker) loadComments(n int) ([]Comment, error) {
	b, err := os.ReadFile(t.workPath(t.commentsRel(n)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cs []Comment
	if err := json.Unmarshal(b, &cs); err != nil {
		return nil, fmt.Errorf("%s%s is corrupt: %w", workScheme, t.commentsRel(n), err)
	}
	return cs, nil
}

// A VersionCard is what the approval card shows of a proposal's version:
// its number and address, how many revisions came before it, and the
// previous version's comments carried onto it ([Carry]). Notice is set
// when those comments could not be read.
type VersionCard struct {
	Version   int
	Revisions int
	Path      string
	Comments  []Carried
	Notice    string
}

// Card is the [VersionCard] of the proposal with this hash and body (zero
// when no version holds it).
func (t *Tracker) Card(hash, body string) VersionCard {
	cur := VersionOf(t.Versions(), hash)
	if cur.N == 0 {
		return VersionCard{}
	}
	v := VersionCard{Version: cur.N, Revisions: cur.N - 1, Path: cur.Path}
	if cur.N < 2 {
		return v
	}
	prev, err := t.versionBody(cur.N - 1)
	if err != nil {
		return v
	}
	cs, err := t.loadComments(cur.N - 1)
	if err != nil {
		v.Notice = err.Error()
		return v
	}
	if len(cs) > 0 {
		v.Comments = Carry(prev, body, cs)
	}
	return v
}

// VersionDiff is a unified diff between two versions of the plan.
type VersionDiff struct {
	From int    `json:"from"`
	To   int    `json:"to"`
	Diff string `json:"diff"`
}

// ErrNoVersion: a version asked for does not exist, or there is none
// earlier to compare with. Errors that wrap it carry the person's message.
var ErrNoVersion = errors.New("no such plan version")

// DiffVersions diffs version from against version to; to 0 is the
// version of the proposal with hash cur, and from 0 the one before it.
func (t *Tracker) DiffVersions(cur string, from, to int) (VersionDiff, error) {
	if to == 0 {
		to = VersionOf(t.Versions(), cur).N
	}
	if from == 0 {
		from = to - 1
	}
	if to < 1 || from < 1 || from == to {
		return VersionDiff{}, kindErrorf(ErrNoVersion, "there is no earlier plan version to compare with (from v%d to v%d)", from, to)
	}
	a, err := t.versionBody(from)
	if err != nil {
		return VersionDiff{}, kindErrorf(ErrNoVersion, "plan version %d does not exist", from)
	}
	b, err := t.versionBody(to)
	if err != nil {
		return VersionDiff{}, kindErrorf(ErrNoVersion, "plan version %d does not exist", to)
	}
	return VersionDiff{From: from, To: to, Diff: Unified(workScheme+t.versionRel(from), workScheme+t.versionRel(to), a+"\n", b+"\n", 3)}, nil
}
