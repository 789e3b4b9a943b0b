package proposal

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Display caps for model-authored content. Longer content is clipped with a
// visible marker, never rejected.
const (
	MaxSteps     = 64     // steps in a [Structure]
	MaxStepChars = 2_000  // characters (runes) in a step's text, and in a title
	MaxBodyChars = 20_000 // characters (runes) of a body that is parsed or rendered
)

// A Structure is the shape of a proposal body, for display.
type Structure struct {
	// Title is the text of the first level-1 heading, else the first
	// nonblank line (trimmed). Clipped to MaxStepChars.
	Title string
	// Sections are the parts introduced by top-level "##" headings, in order.
	Sections []Section
	// Steps are the plan's steps; see [Parse] for which lists count.
	// When more than MaxSteps were found, the first MaxSteps are kept and one
	// more entry, the clip marker, ends the slice.
	Steps []Step
	// Clipped reports that the body, a step or the step list was clipped.
	Clipped bool
}

// A Section is the part of a body under one "##" heading.
type Section struct {
	Title string // plain text of the heading
	Body  string // Markdown source up to the next "##" heading, blank lines around it trimmed
}

// A Step is one item of a step list.
type Step struct {
	Text string // plain text of the item without its nested lists, clipped to MaxStepChars
	Done bool   // a checked GFM task-list box
}

// stepSections are the section titles (lowercase substrings) whose lists are
// preferred as the plan's steps.
var stepSections = []string{"key changes", "steps", "implementation"}

// markdown is the one goldmark configuration used for structure and HTML:
// GFM (tables, task lists, strikethrough, linkify), raw HTML omitted (no
// html.WithUnsafe), dangerous link and image URLs neutralised. A goldmark
// Markdown is safe for concurrent use.
var markdown = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithASTTransformers(
		util.Prioritized(urlSanitizer{}, 1000),
	)),
)

// Parse gives the structure of a proposal body using goldmark with GFM.
//
// The body is normalised and clipped to MaxBodyChars first (the marker
// becomes the last paragraph). Steps come from the top-level lists of the
// first "##" section whose title contains "Key Changes", "Steps" or
// "Implementation" (case-insensitive) and holds a list; when there is none,
// from every top-level list of the body. Each top-level item is one step;
// nested items are details of their parent step and are not steps.
func Parse(body string) Structure {
	src, clipped := clipBody(normalizeNewlines(body))
	if clipped != "" {
		src += "\n\n" + clipped
	}
	source := []byte(src)
	doc := markdown.Parser().Parse(text.NewReader(source))

	var st Structure
	st.Clipped = clipped != ""

	type span struct {
		title      string
		start, end int // byte range of the section body in source
		lists      []*ast.List
	}
	var sections []span
	var allLists []*ast.List
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *ast.Heading:
			if n.Level == 1 && st.Title == "" {
				st.Title = plainText(n, source)
			}
			if n.Level == 2 {
				if len(sections) > 0 {
					sections[len(sections)-1].end = lineStart(source, n.Pos())
				}
				start := len(source)
				if next := n.NextSibling(); next != nil {
					start = lineStart(source, next.Pos())
				}
				sections = append(sections, span{title: plainText(n, source), start: start, end: len(source)})
			}
		case *ast.List:
			allLists = append(allLists, n)
			if len(sections) > 0 {
				sections[len(sections)-1].lists = append(sections[len(sections)-1].lists, n)
			}
		}
	}
	if st.Title == "" {
		for l := range strings.SplitSeq(src, "\n") {
			if t := strings.TrimSpace(l); t != "" {
				st.Title = t
				break
			}
		}
	}
	if t, more := clipRunes(st.Title, MaxStepChars); more > 0 {
		st.Title = t + " " + clipMarker(more, "characters")
		st.Clipped = true
	}

	stepLists := allLists
	for _, sec := range sections {
		st.Sections = append(st.Sections, Section{Title: sec.title, Body: trimBlankLines(src[sec.start:max(sec.start, sec.end)])})
	}
	for _, sec := range sections {
		if len(sec.lists) > 0 && titleNamesSteps(sec.title) {
			stepLists = sec.lists
			break
		}
	}
	total := 0
	for _, l := range stepLists {
		for it := l.FirstChild(); it != nil; it = it.NextSibling() {
			total++
			if len(st.Steps) >= MaxSteps {
				continue
			}
			st.Steps = append(st.Steps, newStep(it, source, &st.Clipped))
		}
	}
	if total > MaxSteps {
		st.Steps = append(st.Steps, Step{Text: clipMarker(total-MaxSteps, "steps")})
		st.Clipped = true
	}
	return st
}

func titleNamesSteps(title string) bool {
	t := strings.ToLower(title)
	for _, name := range stepSections {
		if strings.Contains(t, name) {
			return true
		}
	}
	return false
}

func newStep(item ast.Node, source []byte, clipped *bool) Step {
	var st Step
	var parts []string
	for c := item.FirstChild(); c != nil; c = c.NextSibling() {
		if c.Kind() == ast.KindList {
			continue
		}
		if box, ok := c.FirstChild().(*east.TaskCheckBox); ok && c == item.FirstChild() {
			st.Done = box.IsChecked
		}
		if t := strings.TrimSpace(plainText(c, source)); t != "" {
			parts = append(parts, t)
		}
	}
	st.Text = strings.Join(parts, " ")
	if t, more := clipRunes(st.Text, MaxStepChars); more > 0 {
		st.Text = t + " " + clipMarker(more, "characters")
		*clipped = true
	}
	return st
}

// plainText returns the text of n's inline content: code spans and link
// labels included, raw HTML left out, line breaks as spaces. For a code block
// it returns the code.
func plainText(n ast.Node, source []byte) string {
	var b strings.Builder
	if n.Kind() == ast.KindHTMLBlock {
		return ""
	}
	if n.Type() == ast.TypeBlock && !n.HasChildren() {
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			b.Write(seg.Value(source))
		}
		return strings.TrimSpace(b.String())
	}
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(source))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.AutoLink:
			b.Write(c.Label(source))
		case *ast.RawHTML:
			return ast.WalkSkipChildren, nil
		case *ast.Paragraph, *ast.TextBlock:
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
		}
		return ast.WalkContinue, nil
	})
	return strings.TrimSpace(b.String())
}

// lineStart returns the offset of the start of the line holding pos.
func lineStart(source []byte, pos int) int {
	if pos < 0 || pos > len(source) {
		return len(source)
	}
	for pos > 0 && source[pos-1] != '\n' {
		pos--
	}
	return pos
}

// trimBlankLines drops leading and trailing lines that hold only spaces and tabs.
func trimBlankLines(s string) string {
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 || !isBlank(s[:i]) {
			break
		}
		s = s[i+1:]
	}
	for {
		i := strings.LastIndexByte(s, '\n')
		if !isBlank(s[i+1:]) {
			break
		}
		if i < 0 {
			return ""
		}
		s = s[:i]
	}
	return s
}

// clipBody cuts body to MaxBodyChars runes. It returns the kept text and the
// clip marker to show after it, or "" when nothing was cut.
func clipBody(body string) (kept, marker string) {
	kept, more := clipRunes(body, MaxBodyChars)
	if more == 0 {
		return body, ""
	}
	return kept, clipMarker(more, "characters")
}

// clipRunes returns the first max runes of s and how many runes follow them.
func clipRunes(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	i, n := 0, 0
	for i < len(s) && n < max {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	if i == len(s) {
		return s, 0
	}
	return s[:i], utf8.RuneCountInString(s[i:])
}

// clipMarker is the visible note that replaces clipped content.
func clipMarker(n int, what string) string {
	return fmt.Sprintf("… [clipped: %d more %s]", n, what)
}

// ClippedSteps returns N for the clip marker that ends a [Structure]'s
// Steps when the list was clipped ("… [clipped: N more steps]"), else 0.
func ClippedSteps(text string) int {
	var n int
	if _, err := fmt.Sscanf(text, "… [clipped: %d more steps]", &n); err != nil || n < 0 {
		return 0
	}
	return n
}
