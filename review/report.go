package review

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"planbridge/proposal"
)

// A StepState is one tracked step of the accepted plan as the report sees it.
type StepState struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	Status string `json:"status"` // pending, in_progress, completed, blocked, skipped
}

// A ToolEvent is one tool call of the implementation, in order.
type ToolEvent struct {
	Tool string `json:"tool"`
	// Paths are the workspace-relative files the call declared it writes.
	Paths []string `json:"paths,omitempty"`
	// Step is the id of the step in progress when it ran ("" none).
	Step string `json:"step,omitempty"`
	// Command and Exit are set for bash (Exit -1: no exit status).
	Command string `json:"command,omitempty"`
	Exit    int    `json:"exit"`
	OK      bool   `json:"ok"`
}

// A FileChange is one file the implementation changed: its content at
// the base (Before) and now (After); Existed/Exists say whether it was there.
type FileChange struct {
	Path    string
	Before  []byte
	After   []byte
	Existed bool
	Exists  bool
}

// Input is everything [Build] needs.
type Input struct {
	Title, Hash, Body string
	Base              string // the base commit ("" none)
	Steps             []StepState
	Changes           []FileChange
	Events            []ToolEvent
	ScopeExtensions   []string
	ScopeRestored     []Restoration
	ScopeUnsettled    []string
}

// A FileStat is one changed file in a [Report].
type FileStat struct {
	Path    string   `json:"path"`
	Status  string   `json:"status"` // added, modified, deleted
	Added   int      `json:"added"`
	Removed int      `json:"removed"`
	Steps   []string `json:"steps,omitempty"`
	Outside bool     `json:"outside_plan"`
}

// A StepReport is one step of a [Report].
type StepReport struct {
	StepState
	Files    []string `json:"files"`
	Added    int      `json:"added"`
	Removed  int      `json:"removed"`
	NoChange bool     `json:"no_change,omitempty"` // marked done, but no file it touched changed
}

// A ValidationRun is one command of the plan's Validation section.
type ValidationRun struct {
	Command string `json:"command"`
	Ran     bool   `json:"ran"`
	Exit    *int   `json:"exit,omitempty"` // of the last matching run; absent when it did not start
	Runs    int    `json:"runs"`
}

// A Report holds an implementation to its accepted plan.
type Report struct {
	Title           string          `json:"title"`
	Hash            string          `json:"hash"`
	Base            string          `json:"base,omitempty"`
	Steps           []StepReport    `json:"steps"`
	Files           []FileStat      `json:"files"`
	Outside         []string        `json:"outside_plan"`
	DoneNoChange    []string        `json:"done_no_change"`
	NotDone         []string        `json:"not_done"`
	Validation      []ValidationRun `json:"validation"`
	ScopeExtensions []string        `json:"scope_extensions"`
	ScopeRestored   []Restoration   `json:"scope_restored"`
	// ScopeUnsettled are commands stopped before their effects were held
	// to the scope (see [Scope.Unsettled]).
	ScopeUnsettled []string `json:"scope_unsettled"`
	Summary        string   `json:"summary"`
}

// Build makes the report: each changed file with its diffstat and the
// steps it belongs to (written by a tool call while the step was in
// progress, or named by the step's text); the files no step and no part
// of the plan names (outside the plan, whenever they were written); steps done with no change and
// steps not done; the Validation commands matched against the bash calls.
func Build(in Input) Report {
	r := Report{Title: in.Title, Hash: in.Hash, Base: in.Base, ScopeExtensions: append([]string{}, in.ScopeExtensions...),
		ScopeRestored: append([]Restoration{}, in.ScopeRestored...), ScopeUnsettled: append([]string{}, in.ScopeUnsettled...),
		Files: []FileStat{}, Outside: []string{}, DoneNoChange: []string{}, NotDone: []string{}, Validation: []ValidationRun{}}
	planPaths := Cite(in.Body).Names()
	stepOf := map[string]map[string]bool{} // path -> step ids
	for _, e := range in.Events {
		if e.Step == "" {
			continue
		}
		for _, p := range e.Paths {
			if stepOf[p] == nil {
				stepOf[p] = map[string]bool{}
			}
			stepOf[p][e.Step] = true
		}
	}
	stepCites := map[string][]string{}
	for _, st := range in.Steps {
		stepCites[st.ID] = Cite(st.Text).Names()
	}
	sort.Slice(in.Changes, func(i, j int) bool { return in.Changes[i].Path < in.Changes[j].Path })
	byStep := map[string][]*FileStat{}
	for _, c := range in.Changes {
		fs := FileStat{Path: c.Path, Status: "modified"}
		switch {
		case !c.Existed && c.Exists:
			fs.Status = "added"
		case c.Existed && !c.Exists:
			fs.Status = "deleted"
		}
		fs.Added, fs.Removed = diffStat(string(c.Before), string(c.After))
		for _, st := range in.Steps {
			if stepOf[c.Path][st.ID] || names(stepCites[st.ID], c.Path) {
				fs.Steps = append(fs.Steps, st.ID)
			}
		}
		// Outside the plan: named by no step and no other part of the plan,
		// even if written while a step was in progress.
		fs.Outside = !names(planPaths, c.Path)
		r.Files = append(r.Files, fs)
	}
	for i := range r.Files {
		f := &r.Files[i]
		for _, id := range f.Steps {
			byStep[id] = append(byStep[id], f)
		}
		if f.Outside {
			r.Outside = append(r.Outside, f.Path)
		}
	}
	done := 0
	for _, st := range in.Steps {
		sr := StepReport{StepState: st, Files: []string{}}
		for _, f := range byStep[st.ID] {
			sr.Files = append(sr.Files, f.Path)
			sr.Added += f.Added
			sr.Removed += f.Removed
		}
		switch st.Status {
		case "completed", "skipped":
			done++
			if st.Status == "completed" && len(sr.Files) == 0 {
				sr.NoChange = true
				r.DoneNoChange = append(r.DoneNoChange, st.ID)
			}
		default:
			r.NotDone = append(r.NotDone, st.ID)
		}
		r.Steps = append(r.Steps, sr)
	}
	for _, cmd := range ValidationCommands(in.Body) {
		v := ValidationRun{Command: cmd}
		for _, e := range in.Events {
			if e.Tool == "bash" && commandRuns(e.Command, cmd) {
				v.Ran, v.Runs = true, v.Runs+1
				v.Exit = nil // the command did not start: no exit status
				if e.Exit >= 0 {
					x := e.Exit
					v.Exit = &x
				}
			}
		}
		r.Validation = append(r.Validation, v)
	}
	if r.Steps == nil {
		r.Steps = []StepReport{}
	}
	r.Summary = fmt.Sprintf("%d/%d steps · %d %s · %d outside the plan", done, len(in.Steps), len(r.Files), plural(len(r.Files), "file", "files"), len(r.Outside))
	return r
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// names reports whether one of the cited paths names p: the same path, a
// directory holding it, or (for a cited bare file name) its base name.
func names(cited []string, p string) bool {
	for _, c := range cited {
		if c == p || strings.HasPrefix(p, c+"/") || !strings.Contains(c, "/") && path.Base(p) == c {
			return true
		}
	}
	return false
}

// diffStat counts the lines added and removed from a to b.
func diffStat(a, b string) (added, removed int) {
	for _, o := range script(splitLines(a), splitLines(b)) {
		switch o.kind {
		case '+':
			added++
		case '-':
			removed++
		}
	}
	return added, removed
}

var spaceRE = regexp.MustCompile(`\s+`)

func normCmd(s string) string { return strings.TrimSpace(spaceRE.ReplaceAllString(s, " ")) }

// commandRuns reports whether the bash command line ran cmd: equal after
// whitespace normalisation, or cmd is one of its simple commands (split
// at ;, &&, || and newlines).
func commandRuns(line, cmd string) bool {
	line, cmd = normCmd(line), normCmd(cmd)
	if cmd == "" {
		return false
	}
	if line == cmd {
		return true
	}
	for _, part := range regexp.MustCompile(`\s*(?:&&|\|\||;|\n)\s*`).Split(line, -1) {
		if normCmd(part) == cmd {
			return true
		}
	}
	return false
}

// ValidationCommands returns the commands of the plan's Validation section:
// each code span of a list item (or the item's text when it has none), and
// each line of a fenced code block.
func ValidationCommands(body string) []string {
	var sec string
	for _, s := range proposal.Parse(body).Sections {
		if strings.Contains(strings.ToLower(s.Title), "validation") {
			sec = s.Body
			break
		}
	}
	var out []string
	seen := map[string]bool{}
	add := func(c string) {
		c = normCmd(c)
		if c != "" && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	var fence string
	for _, line := range strings.Split(sec, "\n") {
		t := strings.TrimSpace(line)
		if f := fenceOf(t); f != "" {
			if fence == "" {
				fence = f
			} else if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if fence != "" {
			add(strings.TrimPrefix(t, "$ "))
			continue
		}
		item, ok := listItem(t)
		if !ok {
			continue
		}
		spans := codeSpanRE.FindAllStringSubmatch(item, -1)
		if len(spans) == 0 {
			add(item)
		}
		for _, m := range spans {
			add(m[1])
		}
	}
	return out
}

var listRE = regexp.MustCompile(`^(?:[-*+]|[0-9]+[.)])\s+(?:\[[ xX]\]\s+)?(.*)$`)

func listItem(t string) (string, bool) {
	m := listRE.FindStringSubmatch(t)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// Text renders the report for a terminal.
func (r Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Implementation report: %s\nPlan %s", r.Title, short(r.Hash))
	if r.Base != "" {
		fmt.Fprintf(&b, " · base %s", short(r.Base))
	}
	fmt.Fprintf(&b, "\n%s\n\nSteps\n", r.Summary)
	for _, st := range r.Steps {
		note := ""
		if st.NoChange {
			note = " (done, no change)"
		}
		fmt.Fprintf(&b, "  [%s] %s %s%s\n", st.Status, st.ID, st.Text, note)
		for _, f := range st.Files {
			fmt.Fprintf(&b, "      %s\n", f)
		}
	}
	b.WriteString("\nFiles\n")
	for _, f := range r.Files {
		mark := ""
		if f.Outside {
			mark = "  OUTSIDE THE PLAN"
		}
		fmt.Fprintf(&b, "  %-8s %s +%d -%d%s\n", f.Status, f.Path, f.Added, f.Removed, mark)
	}
	b.WriteString("\nValidation\n")
	for _, v := range r.Validation {
		switch {
		case v.Ran && v.Exit != nil:
			fmt.Fprintf(&b, "  ran (exit %d)  %s\n", *v.Exit, v.Command)
		case v.Ran:
			fmt.Fprintf(&b, "  ran (no exit status)  %s\n", v.Command)
		default:
			fmt.Fprintf(&b, "  not run      %s\n", v.Command)
		}
	}
	if len(r.ScopeExtensions) > 0 {
		fmt.Fprintf(&b, "\nScope extended to: %s\n", strings.Join(r.ScopeExtensions, ", "))
	}
	for _, c := range r.ScopeUnsettled {
		fmt.Fprintf(&b, "\nNOT HELD TO THE SCOPE (stopped before its effects were compared): `%s`\n", c)
	}
	for _, rs := range r.ScopeRestored {
		fmt.Fprintf(&b, "\nRestored outside the scope (%s) after `%s`: %s\n", rs.By, rs.Command, strings.Join(rs.Paths, ", "))
		if rs.Kept != "" {
			fmt.Fprintf(&b, "  what it left is kept in %s\n", rs.Kept)
		}
		for _, f := range rs.Failed {
			fmt.Fprintf(&b, "  not restored: %s\n", f)
		}
	}
	return b.String()
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
