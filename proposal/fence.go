package proposal

import "strings"

// fenceRole says what part a line plays in a fenced code block.
type fenceRole uint8

const (
	notFence     fenceRole = iota // the line is outside any fenced code block
	fenceOpen                     // the line opens a fenced code block
	fenceContent                  // the line is content of an open fenced code block
	fenceClose                    // the line closes the open fenced code block
)

// fence tracks CommonMark fenced code blocks one line at a time, the way
// goldmark's fenced code block parser sees them at the top level of a
// document: an opening fence is at least three backticks or tildes indented
// by at most three columns (a tab advances to the next multiple of four); a
// backtick fence's info string holds no backtick; the closing fence uses the
// same character, is at least as long, is indented by at most three columns
// and is followed only by spaces and tabs; an unclosed fence runs to the end.
//
// It does not model containers (block quotes, list items whose content is
// indented by four or more columns) or HTML blocks: a fence opened inside them
// is not seen as one. TestFenceMatchesGoldmark cross-checks the tracker
// against goldmark's AST on a corpus of top-level documents.
//
// The zero value is outside any fence.
type fence struct {
	char byte // fence character of the open block; 0 when none is open
	n    int  // length of the opening fence
}

// inside reports whether a fenced code block is open.
func (f *fence) inside() bool { return f.char != 0 }

// step consumes one line (without its line feed) and returns its role.
func (f *fence) step(line string) fenceRole {
	if f.char != 0 {
		if closesFence(line, f.char, f.n) {
			f.char = 0
			return fenceClose
		}
		return fenceContent
	}
	if c, n, ok := opensFence(line); ok {
		f.char, f.n = c, n
		return fenceOpen
	}
	return notFence
}

// fenceIndent returns the byte offset of the first byte after the leading
// spaces and tabs of line, and whether their width is below four columns.
func fenceIndent(line string) (pos int, ok bool) {
	w := 0
	for pos < len(line) {
		switch line[pos] {
		case ' ':
			w++
		case '\t':
			w += 4 - w%4
		default:
			return pos, w < 4
		}
		pos++
	}
	return pos, w < 4
}

func opensFence(line string) (char byte, n int, ok bool) {
	pos, ok := fenceIndent(line)
	if !ok || pos >= len(line) || (line[pos] != '`' && line[pos] != '~') {
		return 0, 0, false
	}
	char = line[pos]
	i := pos
	for i < len(line) && line[i] == char {
		i++
	}
	n = i - pos
	if n < 3 {
		return 0, 0, false
	}
	if char == '`' && strings.IndexByte(line[i:], '`') >= 0 {
		return 0, 0, false
	}
	return char, n, true
}

func closesFence(line string, char byte, n int) bool {
	pos, ok := fenceIndent(line)
	if !ok {
		return false
	}
	i := pos
	for i < len(line) && line[i] == char {
		i++
	}
	return i-pos >= n && isBlank(line[i:])
}

// isBlank reports whether s holds only spaces and tabs.
func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' {
			return false
		}
	}
	return true
}
