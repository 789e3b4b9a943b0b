package proposal

import (
	"bytes"
	"html"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// RenderHTML renders a proposal body to an HTML fragment that is safe to put
// in a page: goldmark with GFM, raw HTML omitted, and link, image and autolink
// URLs with a javascript:, vbscript:, data: or file: scheme dropped. The body
// is clipped to MaxBodyChars; when clipped, a final paragraph of class
// "proposal-clipped" holds the marker.
func RenderHTML(body string) string {
	src, marker := clipBody(normalizeNewlines(body))
	var b bytes.Buffer
	if err := markdown.Convert([]byte(src), &b); err != nil {
		// goldmark's HTML renderer only fails when the writer does; a
		// bytes.Buffer does not. Fall back to escaped text all the same.
		b.Reset()
		b.WriteString("<pre>" + html.EscapeString(src) + "</pre>\n")
	}
	if marker != "" {
		b.WriteString(`<p class="proposal-clipped">` + html.EscapeString(marker) + "</p>\n")
	}
	return b.String()
}

// RenderText renders a proposal body for a text buffer (Emacs): the Markdown
// source with line endings normalised, control characters other than tab and
// line feed removed (so no terminal escape reaches the buffer), clipped to
// MaxBodyChars with the marker on its own paragraph.
func RenderText(body string) string {
	src, marker := clipBody(stripControls(normalizeNewlines(body)))
	if marker != "" {
		src = strings.TrimRight(src, "\n") + "\n\n" + marker
	}
	return src
}

func stripControls(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// urlSanitizer empties the destination of links and images whose URL has a
// scheme that can run code or smuggle content (javascript:, vbscript:, data:,
// file:), and turns such autolinks into plain text. goldmark already drops
// most of these from href; this also covers data: images and keeps the rule in
// one place.
type urlSanitizer struct{}

func (urlSanitizer) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	source := reader.Source()
	var autolinks []*ast.AutoLink
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link:
			if dangerousURL(n.Destination) {
				n.Destination = nil
			}
		case *ast.Image:
			if dangerousURL(n.Destination) {
				n.Destination = nil
			}
		case *ast.AutoLink:
			if dangerousURL(n.URL(source)) {
				autolinks = append(autolinks, n)
			}
		}
		return ast.WalkContinue, nil
	})
	for _, n := range autolinks {
		n.Parent().ReplaceChild(n.Parent(), n, ast.NewString(n.Label(source)))
	}
}

// dangerousURL reports whether url has a scheme we refuse. goldmark resolves
// entities and backslash escapes only when rendering, so they are resolved
// here first; browsers ignore ASCII whitespace and control characters inside a
// scheme ("java\tscript:"), so they are skipped, as are backslashes, and case
// is ignored. Over-matching only costs a harmless empty href.
func dangerousURL(url []byte) bool {
	var scheme []byte
	colon := false
	for _, c := range []byte(html.UnescapeString(string(url))) {
		if c <= 0x20 || c == 0x7f || c == '\\' {
			continue
		}
		if c == ':' {
			colon = true
			break
		}
		if len(scheme) > 16 {
			return false
		}
		scheme = append(scheme, c|0x20)
	}
	switch string(scheme) {
	case "javascript", "vbscript", "data", "file":
		return colon
	}
	return false
}
