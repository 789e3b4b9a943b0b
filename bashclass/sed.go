package bashclass

import (
	"fmt"
	"strings"
)

// sedModel is GNU sed 4.9's command line (getopt_long "bsnrzuEe:f:l:i::V:"
// in spirit; -V is not a real option here).
var sedModel = gnu("sed", help+`
n quiet,silent .
- debug .
e expression =
f file = !reads the script from a file
- follow-symlinks .
i in-place ? !edits files in place
l line-length =
- posix .
E regexp-extended .
r - .
s separate .
- sandbox .
u unbuffered .
z null-data,zero-terminated .
b binary .
`)

// checkSed allows sed when its script, from -e options or the first
// operand, parses to commands that only print to standard output (see
// [checkSedScript]). The runner also launches sed with --sandbox, which
// makes sed itself refuse e, r and w.
func checkSed(args []string, _ int) (string, bool) {
	p, reason := sedModel.parse(args)
	if reason != "" {
		return reason, false
	}
	if r := checkFound("sed", p.opts); r != "" {
		return r, false
	}
	var scripts []string
	for _, f := range p.opts {
		if f.spec.short == 'e' {
			scripts = append(scripts, f.value)
		}
	}
	if len(scripts) == 0 {
		if len(p.operands) == 0 {
			return "sed needs a script", false
		}
		scripts = append(scripts, p.operands[0])
	}
	// sed joins -e scripts with newlines.
	if r := checkSedScript(strings.Join(scripts, "\n")); r != "" {
		return r, false
	}
	return "", p.ended
}

// maxSedScript bounds the script length the parser reads.
const maxSedScript = 16 << 10

// checkSedScript parses a sed script as GNU sed does and allows it when
// every command is one of: { } ! = a i c b t T : d D g G h H l n N p P q
// Q x y z F and s without the e and w flags, each with any address. It
// refuses e, r, R, w, W, s///e, s///w, anything it does not recognise,
// and scripts it cannot parse.
func checkSedScript(s string) string {
	if len(s) > maxSedScript {
		return "sed script too long"
	}
	p := sedParser{s: s}
	return p.script()
}

type sedParser struct {
	s     string
	i     int
	depth int
}

func (p *sedParser) eof() bool  { return p.i >= len(p.s) }
func (p *sedParser) peek() byte { return p.s[p.i] }

func (p *sedParser) skipSpace() {
	for !p.eof() && (p.peek() == ' ' || p.peek() == '\t') {
		p.i++
	}
}

func (p *sedParser) script() string {
	if strings.HasPrefix(p.s, "#n\n") || p.s == "#n" {
		p.i = 2
	}
	for {
		// Separators between commands.
		for !p.eof() && strings.IndexByte(" \t\n;", p.peek()) >= 0 {
			p.i++
		}
		if p.eof() {
			if p.depth != 0 {
				return "sed script has an unmatched {"
			}
			return ""
		}
		if r := p.command(); r != "" {
			return r
		}
	}
}

// address parses an optional address or address range.
func (p *sedParser) address() (bool, string) {
	got, r := p.addr1()
	if r != "" || !got {
		return got, r
	}
	p.skipSpace()
	if !p.eof() && p.peek() == ',' {
		p.i++
		p.skipSpace()
		if !p.eof() && (p.peek() == '+' || p.peek() == '~') {
			p.i++
			if !p.digits() {
				return true, "sed address +N/~N needs a number"
			}
			return true, ""
		}
		got2, r := p.addr1()
		if r != "" {
			return true, r
		}
		if !got2 {
			return true, "sed address range without an end"
		}
	}
	return true, ""
}

func (p *sedParser) digits() bool {
	start := p.i
	for !p.eof() && p.peek() >= '0' && p.peek() <= '9' {
		p.i++
	}
	return p.i > start
}

func (p *sedParser) addr1() (bool, string) {
	if p.eof() {
		return false, ""
	}
	switch c := p.peek(); {
	case c >= '0' && c <= '9':
		p.digits()
		if !p.eof() && p.peek() == '~' {
			p.i++
			if !p.digits() {
				return true, "sed address first~step needs a step"
			}
		}
		return true, ""
	case c == '$':
		p.i++
		return true, ""
	case c == '/' || c == '\\':
		if c == '\\' {
			p.i++
			if p.eof() || p.peek() == '\n' || p.peek() == '\\' {
				return true, "sed address \\c needs a delimiter"
			}
		}
		delim := p.peek()
		p.i++
		if r := p.regex(delim); r != "" {
			return true, r
		}
		for !p.eof() && (p.peek() == 'I' || p.peek() == 'M') {
			p.i++
		}
		return true, ""
	}
	return false, ""
}

// regex skips a regular expression up to an unescaped delim outside a
// bracket expression, as GNU sed does for addresses and s (y's lists have
// no brackets: plain is set); a newline inside is an error.
func (p *sedParser) regex(delim byte) string { return p.delimited(delim, false) }

func (p *sedParser) delimited(delim byte, plain bool) string {
	for !p.eof() {
		c := p.peek()
		switch {
		case c == '\\':
			p.i += 2
			continue
		case c == '[' && !plain:
			if r := p.bracket(); r != "" {
				return r
			}
			continue
		case c == delim:
			p.i++
			return ""
		case c == '\n' && delim != '\n':
			return "sed: unterminated address regex or s command"
		}
		p.i++
	}
	return "sed: unterminated address regex or s command"
}

// bracket skips a bracket expression: an optional ^, a leading ] taken
// literally, classes [:x:], [.x.] and [=x=], up to the closing ].
func (p *sedParser) bracket() string {
	p.i++ // [
	if !p.eof() && p.peek() == '^' {
		p.i++
	}
	if !p.eof() && p.peek() == ']' {
		p.i++
	}
	for !p.eof() {
		c := p.peek()
		switch {
		case c == '\n':
			return "sed: unterminated bracket expression"
		case c == ']':
			p.i++
			return ""
		case c == '[' && p.i+1 < len(p.s) && strings.IndexByte(":.=", p.s[p.i+1]) >= 0:
			end := strings.Index(p.s[p.i+2:], string(p.s[p.i+1])+"]")
			if end < 0 {
				return "sed: unterminated bracket expression"
			}
			p.i += 2 + end + 2
			continue
		}
		p.i++
	}
	return "sed: unterminated bracket expression"
}

// toLineEnd skips text up to the end of line (a, i, c text; labels).
func (p *sedParser) toLineEnd() {
	for !p.eof() && p.peek() != '\n' {
		if p.peek() == '\\' {
			p.i++
		}
		p.i++
	}
}

// label skips a label, which GNU sed ends at whitespace, ';' or a
// newline; another command may follow after whitespace alone.
func (p *sedParser) label() {
	p.skipSpace()
	for !p.eof() && strings.IndexByte(" \t\n;", p.peek()) < 0 {
		p.i++
	}
}

// end checks what follows a command: spaces, then ; newline } # or the
// end.
func (p *sedParser) end(cmd byte) string {
	p.skipSpace()
	if p.eof() {
		return ""
	}
	switch p.peek() {
	case ';', '\n':
		p.i++
		return ""
	case '}', '#':
		return ""
	}
	return fmt.Sprintf("sed: unexpected %q after command %c", p.peek(), cmd)
}

func (p *sedParser) command() string {
	if _, r := p.address(); r != "" {
		return r
	}
	p.skipSpace()
	for !p.eof() && p.peek() == '!' {
		p.i++
		p.skipSpace()
	}
	if p.eof() {
		return "sed: missing command"
	}
	c := p.peek()
	p.i++
	switch c {
	case '#':
		// A comment ends at the newline, backslash or not.
		for !p.eof() && p.peek() != '\n' {
			p.i++
		}
		return ""
	case '{':
		p.depth++
		if p.depth > maxDepth {
			return "sed script nested too deep"
		}
		return ""
	case '}':
		if p.depth == 0 {
			return "sed script has an unexpected }"
		}
		p.depth--
		return p.end(c)
	case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		return p.end(c)
	case 'l', 'q', 'Q', 'L':
		if c == 'L' {
			return "sed command L is not supported"
		}
		p.skipSpace()
		p.digits()
		return p.end(c)
	case 'a', 'i', 'c':
		// GNU one-liner "a text" or "a\" newline text; both run to the end
		// of the line, with backslash-newline continuing it.
		p.toLineEnd()
		return ""
	case ':':
		p.label()
		return ""
	case 'b', 't', 'T':
		p.label()
		return ""
	case 's':
		return p.substitute()
	case 'y':
		if p.eof() || p.peek() == '\n' || p.peek() == '\\' {
			return "sed y needs a delimiter"
		}
		d := p.peek()
		p.i++
		if r := p.delimited(d, true); r != "" {
			return r
		}
		if r := p.delimited(d, true); r != "" {
			return r
		}
		return p.end(c)
	case 'e':
		return "sed command e runs a shell command"
	case 'r', 'R':
		return fmt.Sprintf("sed command %c reads a file into the output", c)
	case 'w', 'W':
		return fmt.Sprintf("sed command %c writes a file", c)
	case 'v':
		p.label()
		return ""
	}
	return fmt.Sprintf("sed command %q is not allowed", c)
}

func (p *sedParser) substitute() string {
	if p.eof() || p.peek() == '\n' || p.peek() == '\\' {
		return "sed s needs a delimiter"
	}
	d := p.peek()
	p.i++
	if r := p.regex(d); r != "" {
		return r
	}
	// The replacement: backslash escapes and newlines (after a backslash)
	// allowed.
	for {
		if p.eof() {
			return "sed: unterminated s command"
		}
		c := p.peek()
		if c == '\\' {
			p.i += 2
			continue
		}
		p.i++
		if c == d {
			break
		}
		if c == '\n' {
			return "sed: unterminated s command"
		}
	}
	for !p.eof() {
		switch c := p.peek(); {
		case c == 'g' || c == 'p' || c == 'i' || c == 'I' || c == 'm' || c == 'M' || c >= '0' && c <= '9':
			p.i++
		case c == 'e':
			return "sed s///e runs the result as a shell command"
		case c == 'w':
			return "sed s///w writes a file"
		default:
			return p.end('s')
		}
	}
	return ""
}
