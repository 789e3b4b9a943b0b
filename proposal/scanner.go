package proposal

import (
	"strings"
)

// A Scanner extracts a proposal from a response that arrives in pieces, and
// tells which text may be shown meanwhile. Feed it with [Scanner.Write] and
// finish with [Scanner.Close]; the [Result] is exactly what [Extract] returns
// for the concatenation of everything written.
//
// Work is linear in the total input: each byte is looked at a bounded number
// of times, whatever the chunking. A Scanner is not safe for concurrent use.
type Scanner struct {
	// The current line, not yet ended by a line feed. Only text that arrived
	// in an earlier Write than its line feed is copied here; complete lines
	// inside one delta are examined in place.
	line     []byte
	emitted  int  // bytes of line already returned as visible
	nonSpace int  // offset of the first byte in line that is not a space or tab; -1 if none
	trail    int  // offset where line's trailing spaces and tabs start
	skipLF   bool // the last byte written was a CR, so a leading LF is its partner

	outer fence // fences that begin outside a proposal: their tags are examples

	// The open block, if any.
	inBlock  bool
	indent   int             // width in bytes of the opening tag line's indentation
	inner    fence           // fences inside the block: they cannot end it
	body     strings.Builder // dedented body lines, leading blank lines dropped
	bodyEnd  int             // length of body up to its last nonblank line
	badClose bool            // a closing tag not alone on its line was seen in the block

	best  string // body of the last complete nonblank block
	found bool

	visible strings.Builder // everything returned as visible so far

	// Diagnostic facts.
	standalone bool // a tag line outside fences was seen
	fenced     bool // a tag line inside a fence that began outside a block was seen
	seen       [numReasons]bool

	closed bool
	result Result
}

// NewScanner returns a Scanner at the start of a response.
func NewScanner() *Scanner {
	return &Scanner{nonSpace: -1}
}

// Write consumes the next piece of the response and returns the text that
// has become visible because of it: the response with every proposal block
// hidden from its opening tag line on (prose glued before the tag stays
// visible). Line endings are normalised to LF.
//
// Text on the unfinished last line is held back only as far as it might yet
// turn into a hidden tag line: leading spaces and tabs, and a tail that could
// grow into "<proposed_plan>" plus trailing blanks. The concatenation of all
// strings Write returns is always a prefix of the final [Result.Visible]; the
// rest, if any, is the text held back at the end, which [Scanner.Close]
// releases into Result.Visible.
//
// Write after Close does nothing and returns "".
func (s *Scanner) Write(delta string) (visible string) {
	if s.closed || delta == "" {
		return ""
	}
	start := s.visible.Len()
	if s.skipLF && delta[0] == '\n' {
		delta = delta[1:]
	}
	s.skipLF = false
	if strings.IndexByte(delta, '\r') >= 0 {
		s.skipLF = delta[len(delta)-1] == '\r'
		delta = normalizeNewlines(delta)
	}
	for delta != "" {
		i := strings.IndexByte(delta, '\n')
		if i < 0 {
			s.appendPartial(delta)
			break
		}
		if len(s.line) == 0 {
			s.endLine(delta[:i], true)
		} else {
			s.line = append(s.line, delta[:i]...)
			s.endLine(string(s.line), true)
		}
		s.resetLine()
		delta = delta[i+1:]
	}
	return s.visible.String()[start:]
}

// Close ends the response and returns the extraction result, identical to
// [Extract] of everything written. Calling Close again returns the same
// result.
func (s *Scanner) Close() Result {
	if s.closed {
		return s.result
	}
	if len(s.line) > 0 {
		s.endLine(string(s.line), false)
		s.resetLine()
	}
	s.closed = true
	s.result = s.finish()
	return s.result
}

func (s *Scanner) resetLine() {
	s.line = s.line[:0]
	s.emitted = 0
	s.nonSpace = -1
	s.trail = 0
}

// appendPartial adds text without a line feed to the current line and
// releases whatever of it can no longer be hidden.
func (s *Scanner) appendPartial(part string) {
	base := len(s.line)
	s.line = append(s.line, part...)
	if s.nonSpace < 0 {
		if i := indexNonBlank(part); i >= 0 {
			s.nonSpace = base + i
		}
	}
	if i := lastIndexNonBlank(part); i >= 0 {
		s.trail = base + i + 1
	}
	if s.inBlock {
		return
	}
	n := len(s.line)
	hold := n
	if s.outer.inside() {
		// Everything in an example fence is shown, tags included.
	} else if s.nonSpace < 0 {
		hold = 0
	} else {
		if s.trail < n {
			if hasSuffixBytes(s.line[:s.trail], openTag) {
				hold = s.trail - len(openTag)
			}
		} else if i := lastIndexByteFrom(s.line, '<', n-len(openTag)); i >= 0 && strings.HasPrefix(openTag, string(s.line[i:])) {
			hold = i
		}
		if hold <= s.nonSpace {
			hold = 0 // only indentation before a possible tag: the whole line may hide
		}
	}
	if hold > s.emitted {
		s.visible.Write(s.line[s.emitted:hold])
		s.emitted = hold
	}
}

// endLine handles one complete line; nl says whether a line feed ended it.
// Bytes line[:s.emitted] have already been released as visible.
func (s *Scanner) endLine(line string, nl bool) {
	if s.inBlock {
		s.blockLine(line)
		return
	}
	show := func(upto int, withNL bool) {
		s.visible.WriteString(line[s.emitted:upto])
		if withNL {
			s.visible.WriteByte('\n')
		}
	}
	if role := s.outer.step(line); role != notFence {
		if k, _ := classify(line); k.standalone() {
			s.fenced = true
		}
		show(len(line), nl)
		return
	}
	k, at := classify(line)
	if k.standalone() {
		s.standalone = true
	}
	switch k {
	case openLine:
		prose := !isBlank(line[:at])
		if prose {
			show(at, nl)
		}
		s.openBlock(line)
		return
	case closeLine:
		s.seen[reasonStray] = true
	case openTrailing:
		s.seen[reasonOpenNotEnding] = true
	case openAttr:
		s.seen[reasonOpenAttr] = true
	case openCase, closeCase:
		s.seen[reasonCase] = true
	case closeTrailing:
		s.seen[reasonCloseNotAlone] = true
	}
	show(len(line), nl)
}

// openBlock starts (or restarts) a block at an opening tag line.
func (s *Scanner) openBlock(line string) {
	s.inBlock = true
	s.indent = len(line) - len(strings.TrimLeft(line, " \t"))
	s.inner = fence{}
	s.body.Reset()
	s.bodyEnd = 0
	s.badClose = false
}

// blockLine handles a complete line inside an open block.
func (s *Scanner) blockLine(line string) {
	d := dedent(line, s.indent)
	if s.inner.step(d) != notFence {
		s.addBody(d)
		return
	}
	k, _ := classify(line)
	if k != plainLine {
		s.standalone = true
	}
	switch k {
	case openLine:
		s.openBlock(line)
		return
	case closeLine:
		s.closeBlock()
		return
	case closeTrailing, closeGlued, closeCase:
		s.badClose = true
	case openTrailing:
		s.seen[reasonOpenNotEnding] = true
	case openAttr:
		s.seen[reasonOpenAttr] = true
	case openCase:
		s.seen[reasonCase] = true
	}
	s.addBody(d)
}

// addBody appends a dedented body line, dropping leading blank lines and
// remembering where the last nonblank line ends.
func (s *Scanner) addBody(d string) {
	blank := isBlank(d)
	if blank && s.body.Len() == 0 {
		return
	}
	if s.body.Len() > 0 {
		s.body.WriteByte('\n')
	}
	s.body.WriteString(d)
	if !blank {
		s.bodyEnd = s.body.Len()
	}
}

func (s *Scanner) closeBlock() {
	s.inBlock = false
	s.inner = fence{}
	if s.bodyEnd == 0 {
		s.seen[reasonBlank] = true
		return
	}
	s.best, s.found = s.body.String()[:s.bodyEnd], true
	s.body.Reset()
	s.bodyEnd = 0
}

func (s *Scanner) finish() Result {
	r := Result{Visible: s.visible.String()}
	if s.found {
		r.Proposal = newProposal(s.best)
		return r
	}
	switch {
	case s.standalone:
		why := s.reason()
		r.Diagnostics = []Diagnostic{{Kind: KindWarning, Message: why.String() + resendAdvice}}
	case s.fenced:
		r.Diagnostics = []Diagnostic{{Kind: KindHint, Message: fencedHint}}
	}
	return r
}

// reason picks the one cause to report when tag lines were seen but no
// proposal came out, most specific first.
func (s *Scanner) reason() reason {
	if s.inBlock {
		if s.badClose {
			return reasonCloseNotAlone
		}
		return reasonUnterminated
	}
	for _, r := range [...]reason{reasonOpenNotEnding, reasonOpenAttr, reasonCase, reasonCloseNotAlone, reasonBlank, reasonStray} {
		if s.seen[r] {
			return r
		}
	}
	return reasonUnterminated // not reached: a standalone tag line sets one of the above
}

// dedent removes up to n leading spaces or tabs from line.
func dedent(line string, n int) string {
	i := 0
	for i < n && i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	return line[i:]
}

// normalizeNewlines turns CRLF and lone CR into LF.
func normalizeNewlines(s string) string {
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

func indexNonBlank(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' {
			return i
		}
	}
	return -1
}

func lastIndexNonBlank(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != ' ' && s[i] != '\t' {
			return i
		}
	}
	return -1
}

func hasSuffixBytes(b []byte, suffix string) bool {
	return len(b) >= len(suffix) && string(b[len(b)-len(suffix):]) == suffix
}

// lastIndexByteFrom returns the last index of c in b at or after from.
func lastIndexByteFrom(b []byte, c byte, from int) int {
	from = max(from, 0)
	for i := len(b) - 1; i >= from; i-- {
		if b[i] == c {
			return i
		}
	}
	return -1
}
