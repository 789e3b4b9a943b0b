package review

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"planbridge/proposal"
)

// Warning kinds of [Check].
const (
	KindMissingFile    = "missing_file"
	KindUnknownIdent   = "unknown_identifier"
	KindMissingSection = "missing_section"
	KindSearchCapped   = "search_capped"
)

// A Warning is one finding of [Check]. It never blocks an acceptance.
type Warning struct {
	Kind    string `json:"kind"`
	Subject string `json:"subject,omitempty"` // the path, identifier or section concerned
	Line    int    `json:"line,omitempty"`    // 1-based line of the plan body citing it
	Message string `json:"message"`
}

// Limits bound the identifier search of [Check].
type Limits struct {
	Files    int           // files opened
	Bytes    int64         // bytes read in all
	FileSize int64         // files larger than this are not read
	Time     time.Duration // wall time of the walk
	Idents   int           // identifiers looked for (the first ones cited)
}

// DefaultLimits are the bounds used when a zero Limits is given.
var DefaultLimits = Limits{Files: 20_000, Bytes: 64 << 20, FileSize: 1 << 20, Time: 3 * time.Second, Idents: 64}

// Workspace is what [Check] reads: a file system rooted at the workspace
// (paths slash-separated, no "..") and an ignore predicate. ReadDir and Open
// must not follow symbolic links out of the tree; [Check] itself never
// descends into a symbolic link and reads only regular files.
type Workspace struct {
	FS fs.FS
	// Ignored reports whether a path (relative, no trailing slash) is to be
	// skipped; nil skips only .git.
	Ignored func(rel string, isDir bool) bool
	// Now is the clock for the time cap; nil is time.Now.
	Now func() time.Time
}

// RequiredSections are the "##" sections the Plan reminder's template asks
// for (see [proposal.Template]).
var RequiredSections = []string{"Summary", "Key Changes", "Regression Coverage", "Validation", "Assumptions"}

// Check compares a plan body with the workspace: every file path the plan
// cites exists or is to be created (cited on a line that says create, add,
// new, introduce or write, or lies under such a path); every backticked
// identifier is found as a whole word in some file of the workspace (bounded
// by lim; when a bound stops the search, identifiers not yet found are not
// reported and one [KindSearchCapped] warning says so); every section of
// [RequiredSections] is present. Warnings come in body order, sections last.
func Check(body string, ws Workspace, lim Limits) []Warning {
	if lim == (Limits{}) {
		lim = DefaultLimits
	}
	c := Cite(body)
	var out []Warning
	for _, p := range c.Paths {
		if c.created(p.Text) {
			continue
		}
		if exists(ws.FS, p.Text) || c.inNewDir(ws.FS, p.Text) {
			continue
		}
		out = append(out, Warning{Kind: KindMissingFile, Subject: p.Text, Line: p.Line,
			Message: fmt.Sprintf("line %d cites %s, which does not exist in the workspace and no step says it is created", p.Line, p.Text)})
	}
	var want []Cited
	for _, id := range c.Idents {
		if !c.created(id.Text) {
			want = append(want, id)
		}
	}
	if len(want) > lim.Idents {
		want = want[:lim.Idents]
	}
	if len(want) > 0 {
		names := make([]string, len(want))
		for i, id := range want {
			names[i] = identKey(id.Text)
		}
		found, capped := search(ws, names, lim)
		if capped != "" {
			out = append(out, Warning{Kind: KindSearchCapped, Message: "the identifier search stopped at " + capped + "; identifiers not found by then are not reported"})
		} else {
			for i, id := range want {
				if !found[names[i]] {
					out = append(out, Warning{Kind: KindUnknownIdent, Subject: id.Text, Line: id.Line,
						Message: fmt.Sprintf("line %d cites `%s`, which is found nowhere in the workspace and no step says it is added", id.Line, id.Text)})
				}
			}
		}
	}
	st := proposal.Parse(body)
	for _, name := range RequiredSections {
		if !hasSection(st, name) {
			out = append(out, Warning{Kind: KindMissingSection, Subject: name, Message: "the plan has no \"## " + name + "\" section, which the Plan template asks for"})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Line == 0) != (out[j].Line == 0) {
			return out[i].Line != 0
		}
		return out[i].Line < out[j].Line
	})
	return out
}

func hasSection(st proposal.Structure, name string) bool {
	for _, s := range st.Sections {
		if strings.Contains(strings.ToLower(s.Title), strings.ToLower(name)) {
			return true
		}
	}
	return false
}

// Hint is the text offered to the model with the person's feedback: the
// warnings, one a line, or "" when there are none.
func Hint(ws []Warning) string {
	if len(ws) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("planbridge checked the plan against the workspace before showing it; these findings are hints, not the person's words:")
	for _, w := range ws {
		b.WriteString("\n- ")
		b.WriteString(w.Message)
	}
	return b.String()
}

// exists reports whether rel names something in fsys, without following a
// symbolic link in its last component (the entry is looked up in its
// directory's listing).
func exists(fsys fs.FS, rel string) bool {
	if rel == "" || rel == "." {
		return true
	}
	if !fs.ValidPath(rel) {
		return false
	}
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	des, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return false
	}
	i := sort.Search(len(des), func(i int) bool { return des[i].Name() >= name })
	return i < len(des) && des[i].Name() == name
}

// errCapped stops the walk.
var errCapped = errors.New("capped")

// search looks for each name as a whole word in the regular files of ws.
// capped describes the bound that stopped it ("" when the walk finished).
func search(ws Workspace, names []string, lim Limits) (found map[string]bool, capped string) {
	found = map[string]bool{}
	now := ws.Now
	if now == nil {
		now = time.Now
	}
	ignored := ws.Ignored
	if ignored == nil {
		ignored = func(rel string, _ bool) bool { return rel == ".git" || strings.HasPrefix(rel, ".git/") }
	}
	deadline := now().Add(lim.Time)
	files, total := 0, int64(0)
	buf := make([]byte, 0, 64<<10)
	err := fs.WalkDir(ws.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && p != "." {
				return fs.SkipDir
			}
			return nil
		}
		if p == "." {
			return nil
		}
		if d.IsDir() {
			if ignored(p, true) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || ignored(p, false) {
			return nil
		}
		for _, name := range names {
			if d.Name() == name {
				found[name] = true // a file named like it (`Makefile`)
			}
		}
		if len(found) == len(names) {
			return fs.SkipAll
		}
		if now().After(deadline) {
			capped = fmt.Sprintf("the time limit of %s", lim.Time)
			return errCapped
		}
		if files >= lim.Files {
			capped = fmt.Sprintf("%d files", lim.Files)
			return errCapped
		}
		info, err := d.Info()
		if err != nil || info.Size() > lim.FileSize {
			return nil
		}
		if total+info.Size() > lim.Bytes {
			capped = fmt.Sprintf("%d bytes read", lim.Bytes)
			return errCapped
		}
		f, err := ws.FS.Open(p)
		if err != nil {
			return nil
		}
		files++
		buf = buf[:0]
		b := bytes.NewBuffer(buf)
		n, _ := io.Copy(b, io.LimitReader(f, lim.FileSize+1))
		f.Close()
		total += n
		data := b.Bytes()
		buf = data
		if n > lim.FileSize || bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
			return nil // grown past the cap, or binary
		}
		for _, name := range names {
			if !found[name] && containsWord(data, name) {
				found[name] = true
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errCapped) {
		capped = "an error: " + err.Error()
	}
	if len(found) == len(names) {
		capped = ""
	}
	return found, capped
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// containsWord reports whether w occurs in data not preceded or followed
// by a word character.
func containsWord(data []byte, w string) bool {
	wb := []byte(w)
	for off := 0; ; {
		i := bytes.Index(data[off:], wb)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(wb)
		if (i == 0 || !isWordByte(data[i-1])) && (end == len(data) || !isWordByte(data[end])) {
			return true
		}
		off = i + 1
	}
}

// identKey is the part of a cited identifier that is searched for: the
// last dotted component without a call suffix ("store.PutProposal()" →
// "PutProposal").
func identKey(id string) string {
	id = strings.TrimSuffix(id, "()")
	if i := strings.LastIndexByte(id, '.'); i >= 0 {
		id = id[i+1:]
	}
	return id
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(\(\))?$`)
