package agent

import (
	"fmt"
	"strconv"
	"strings"
)

// FilePatch is one file's part of a unified diff.
type FilePatch struct {
	OldPath, NewPath string // "" for /dev/null
	Hunks            []Hunk
}

// Target is the path the patch writes (or deletes).
func (f FilePatch) Target() string {
	if f.NewPath != "" {
		return f.NewPath
	}
	return f.OldPath
}

// Hunk is one @@ section.
type Hunk struct {
	OldStart int
	Lines    []string // each starts with ' ', '-' or '+'
	// NoNewlineOld/New record "\ No newline at end of file" markers.
	NoNewlineOld, NoNewlineNew bool
}

// ParsePatch parses a unified diff as `git apply` takes it: optional
// `diff --git` headers, `---`/`+++` lines with a/ b/ prefixes or /dev/null,
// and @@ hunks. It returns at least one file or an error.
func ParsePatch(patch string) ([]FilePatch, error) {
	lines := strings.Split(strings.ReplaceAll(patch, "\r\n", "\n"), "\n")
	var files []FilePatch
	var cur *FilePatch
	var hunk *Hunk
	oldLeft, newLeft := 0, 0
	for i := 0; i < len(lines); i++ {
		ln := lines[i]
		if hunk != nil && (oldLeft > 0 || newLeft > 0) {
			if ln == "" && i == len(lines)-1 {
				break
			}
			switch {
			case strings.HasPrefix(ln, " ") || ln == "":
				if ln == "" {
					ln = " "
				}
				oldLeft--
				newLeft--
			case strings.HasPrefix(ln, "-"):
				oldLeft--
			case strings.HasPrefix(ln, "+"):
				newLeft--
			default:
				return nil, fmt.Errorf("patch line %d: unexpected %q inside a hunk", i+1, ln)
			}
			hunk.Lines = append(hunk.Lines, ln)
			if oldLeft < 0 || newLeft < 0 {
				return nil, fmt.Errorf("patch line %d: hunk longer than its header says", i+1)
			}
			continue
		}
		switch {
		case strings.HasPrefix(ln, `\ `):
			if hunk != nil && len(hunk.Lines) > 0 {
				switch hunk.Lines[len(hunk.Lines)-1][0] {
				case '-':
					hunk.NoNewlineOld = true
				case '+':
					hunk.NoNewlineNew = true
				default:
					hunk.NoNewlineOld, hunk.NoNewlineNew = true, true
				}
			}
		case strings.HasPrefix(ln, "--- "):
			if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "+++ ") {
				return nil, fmt.Errorf("patch line %d: '---' without a following '+++'", i+1)
			}
			files = append(files, FilePatch{OldPath: patchPath(ln[4:]), NewPath: patchPath(lines[i+1][4:])})
			cur, hunk = &files[len(files)-1], nil
			i++
		case strings.HasPrefix(ln, "@@ "):
			if cur == nil {
				return nil, fmt.Errorf("patch line %d: hunk before any file header", i+1)
			}
			os, ol, nl, err := parseHunkHeader(ln)
			if err != nil {
				return nil, fmt.Errorf("patch line %d: %w", i+1, err)
			}
			cur.Hunks = append(cur.Hunks, Hunk{OldStart: os})
			hunk = &cur.Hunks[len(cur.Hunks)-1]
			oldLeft, newLeft = ol, nl
		default:
			// diff --git, index, mode lines and prose between files are ignored.
		}
	}
	if hunk != nil && (oldLeft > 0 || newLeft > 0) {
		return nil, fmt.Errorf("patch ends inside a hunk")
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no file headers (---/+++) found in patch")
	}
	for _, f := range files {
		if f.Target() == "" {
			return nil, fmt.Errorf("patch has a file with neither old nor new path")
		}
		if len(f.Hunks) == 0 && f.OldPath != "" && f.NewPath != "" {
			return nil, fmt.Errorf("%s: no hunks", f.Target())
		}
	}
	return files, nil
}

func patchPath(s string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if s == "/dev/null" {
		return ""
	}
	if strings.HasPrefix(s, "a/") || strings.HasPrefix(s, "b/") {
		s = s[2:]
	}
	return s
}

func parseHunkHeader(ln string) (oldStart, oldLen, newLen int, err error) {
	end := strings.Index(ln[3:], " @@")
	if end < 0 {
		return 0, 0, 0, fmt.Errorf("malformed hunk header %q", ln)
	}
	parts := strings.Fields(ln[3 : 3+end])
	if len(parts) != 2 || parts[0][0] != '-' || parts[1][0] != '+' {
		return 0, 0, 0, fmt.Errorf("malformed hunk header %q", ln)
	}
	rng := func(s string) (int, int, error) {
		a, b, ok := strings.Cut(s, ",")
		start, err := strconv.Atoi(a)
		if err != nil {
			return 0, 0, err
		}
		n := 1
		if ok {
			if n, err = strconv.Atoi(b); err != nil {
				return 0, 0, err
			}
		}
		return start, n, nil
	}
	oldStart, oldLen, err = rng(parts[0][1:])
	if err != nil {
		return 0, 0, 0, fmt.Errorf("malformed hunk header %q", ln)
	}
	_, newLen, err = rng(parts[1][1:])
	if err != nil {
		return 0, 0, 0, fmt.Errorf("malformed hunk header %q", ln)
	}
	return oldStart, oldLen, newLen, nil
}

// Apply applies one file's hunks to old content. Hunks must match exactly at
// their stated line or at the nearest offset; otherwise Apply fails and
// nothing is returned.
func (f FilePatch) Apply(old string) (string, error) {
	lines := splitKeep(old)
	oldNoEOL := old != "" && !strings.HasSuffix(old, "\n")
	var out []string
	pos := 0
	newNoEOL := oldNoEOL
	for hi, h := range f.Hunks {
		var want, repl []string
		for _, l := range h.Lines {
			switch l[0] {
			case ' ':
				want, repl = append(want, l[1:]), append(repl, l[1:])
			case '-':
				want = append(want, l[1:])
			case '+':
				repl = append(repl, l[1:])
			}
		}
		start := h.OldStart - 1
		if len(want) == 0 {
			start = h.OldStart // pure insertion after line OldStart
			if h.OldStart == 0 {
				start = 0
			}
		}
		at := findLines(lines, want, start, pos)
		if at < 0 {
			return "", fmt.Errorf("%s: hunk %d does not apply", f.Target(), hi+1)
		}
		out = append(out, lines[pos:at]...)
		out = append(out, repl...)
		pos = at + len(want)
		if pos == len(lines) {
			newNoEOL = h.NoNewlineNew
		}
	}
	out = append(out, lines[pos:]...)
	if len(out) == 0 {
		return "", nil
	}
	s := strings.Join(out, "\n")
	if !newNoEOL {
		s += "\n"
	}
	return s, nil
}

func splitKeep(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// findLines finds want in lines at or after min, preferring start, then the
// nearest offsets.
func findLines(lines, want []string, start, min int) int {
	match := func(at int) bool {
		if at < min || at+len(want) > len(lines) {
			return false
		}
		for i, w := range want {
			if lines[at+i] != w {
				return false
			}
		}
		return true
	}
	for d := 0; d <= len(lines); d++ {
		if match(start + d) {
			return start + d
		}
		if d > 0 && match(start-d) {
			return start - d
		}
	}
	return -1
}
