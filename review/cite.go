package review

import (
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// A Cited is a path or identifier a plan names, with the 1-based line of
// the body where it first appears.
type Cited struct {
	Text string `json:"text"`
	Line int    `json:"line"`
}

// Citations are what a plan body names, outside fenced code blocks.
type Citations struct {
	// Paths: backticked spans holding a "/" or ending in a known file
	// extension, and plain words that end in a known extension or in "/".
	// Normalised: no "./" prefix, no trailing "/", "/..." or ":LINE".
	Paths []Cited
	// Idents: other backticked spans that are identifiers (Go-style dotted
	// names, optionally with "()"), at least 3 characters long.
	Idents []Cited
	// Created holds the paths and identifiers cited on a line that says
	// they are made (create, add, new, introduce, write, rename, generate).
	Created map[string]bool
}

// created reports whether x is to be created: cited on a creating line, or
// under a directory that is.
func (c Citations) created(x string) bool {
	if c.Created[x] {
		return true
	}
	for p := range c.Created {
		if strings.HasPrefix(x, p+"/") {
			return true
		}
	}
	return false
}

// inNewDir reports whether x lies in a directory that does not exist yet
// but holds a path to be created ("Create internal/new/a.go" implies
// internal/new/a_test.go is new too).
func (c Citations) inNewDir(fsys fs.FS, x string) bool {
	dir := path.Dir(x)
	if dir == "." || exists(fsys, dir) {
		return false
	}
	for p := range c.Created {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// Names returns every path cited, in order, without duplicates.
func (c Citations) Names() []string {
	out := make([]string, 0, len(c.Paths))
	for _, p := range c.Paths {
		out = append(out, p.Text)
	}
	return out
}

var (
	codeSpanRE = regexp.MustCompile("`([^`\n]+)`")
	wordRE     = regexp.MustCompile(`[A-Za-z0-9_./-]+`)
	createRE   = regexp.MustCompile(`(?i)\b(create[sd]?|creating|add|adds|added|adding|new|introduces?|introducing|writes?|writing|renames?|renaming|generates?|generating)\b`)
	lineSufRE  = regexp.MustCompile(`(:[0-9]+)+$`)
)

// knownExt is the allowlist of file extensions that make a word a path.
var knownExt = map[string]bool{}

func init() {
	for e := range strings.FieldsSeq("go el md txt json yaml yml toml py js mjs ts tsx jsx sh bash zsh c h cc cpp hpp rs java kt rb html htm css scss sql mod sum cfg ini xml csv lock proto mk conf org rst tex lua php swift scala cs ex exs erl hs ml vue svelte zig gradle properties awk sed patch diff") {
		knownExt[e] = true
	}
}

// Cite lists what body names. Lines inside fenced code blocks are left out:
// they are commands and examples, not citations.
func Cite(body string) Citations {
	c := Citations{Created: map[string]bool{}}
	seenP, seenI := map[string]bool{}, map[string]bool{}
	var fence string
	for i, line := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n") {
		t := strings.TrimLeft(line, " \t")
		if f := fenceOf(t); f != "" {
			switch {
			case fence == "":
				fence = f
				continue
			case strings.HasPrefix(f, fence[:1]) && len(f) >= len(fence) && strings.TrimSpace(strings.TrimLeft(t, fence[:1])) == "":
				fence = ""
				continue
			}
		}
		if fence != "" {
			continue
		}
		creating := createRE.MatchString(codeSpanRE.ReplaceAllString(line, ""))
		add := func(list *[]Cited, seen map[string]bool, x string) {
			if creating {
				c.Created[x] = true
			}
			if !seen[x] {
				seen[x] = true
				*list = append(*list, Cited{Text: x, Line: i + 1})
			}
		}
		for _, m := range codeSpanRE.FindAllStringSubmatch(line, -1) {
			span := strings.TrimSpace(m[1])
			if strings.ContainsAny(span, " \t") {
				continue // a command or a phrase
			}
			if p, ok := spanPath(span); ok {
				add(&c.Paths, seenP, p)
			} else if identRE.MatchString(span) && len(strings.TrimSuffix(span, "()")) >= 3 {
				add(&c.Idents, seenI, span)
			}
		}
		for _, w := range wordRE.FindAllString(codeSpanRE.ReplaceAllString(line, " "), -1) {
			if p, ok := wordPath(w); ok {
				add(&c.Paths, seenP, p)
			}
		}
	}
	return c
}

func fenceOf(t string) string {
	for _, ch := range []string{"`", "~"} {
		n := 0
		for n < len(t) && t[n] == ch[0] {
			n++
		}
		if n >= 3 {
			return t[:n]
		}
	}
	return ""
}

// normPath cleans a cited path; ok is false when it is not a workspace path.
func normPath(p string) (string, bool) {
	if strings.Contains(p, "://") || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "-") {
		return "", false
	}
	p = lineSufRE.ReplaceAllString(p, "")
	p = strings.TrimSuffix(p, "/...")
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	p = strings.TrimRight(p, "/")
	if p == "" || p == "." {
		return "", false
	}
	clean := path.Clean(p)
	if clean != p || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", false
	}
	return clean, true
}

func hasKnownExt(p string) bool {
	base := path.Base(p)
	i := strings.LastIndexByte(base, '.')
	return i > 0 && knownExt[strings.ToLower(base[i+1:])]
}

func spanPath(span string) (string, bool) {
	if !strings.Contains(span, "/") && !hasKnownExt(span) {
		return "", false
	}
	if !strings.ContainsAny(span, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		return "", false
	}
	return normPath(span)
}

func wordPath(w string) (string, bool) {
	w = strings.TrimRight(w, ".")
	dir := strings.HasSuffix(w, "/") && strings.Count(w, "/") >= 1 && len(strings.Trim(w, "/.")) > 0
	if !dir && !hasKnownExt(w) {
		return "", false
	}
	return normPath(w)
}
