package proposal

import "strings"

const (
	openTag  = "<proposed_plan>"
	closeTag = "</proposed_plan>"
)

// lineKind classifies a line by the proposal tags it holds.
type lineKind uint8

const (
	plainLine     lineKind = iota // no tag, or only an inline mention
	openLine                      // ends with the opening tag: a valid opening tag line
	closeLine                     // the closing tag alone: a valid closing tag line
	openTrailing                  // starts with the opening tag, then more text
	openAttr                      // an opening tag with attributes, e.g. <proposed_plan id=1>
	openCase                      // the opening tag in the wrong case, alone on its line
	closeTrailing                 // starts with the closing tag, then more text
	closeGlued                    // text, then the closing tag at the end of the line
	closeCase                     // the closing tag in the wrong case, alone on its line
)

// standalone reports whether k is a tag line (valid or malformed) rather than
// an inline mention. closeGlued is left out: "use <a> and </proposed_plan>" is
// a mention, and only inside an open block is it taken for a botched close.
func (k lineKind) standalone() bool {
	return k != plainLine && k != closeGlued
}

// classify returns the kind of line (without its line feed) and, for
// openLine, the byte offset where the opening tag starts; the bytes before it
// are the line's indentation or glued prose.
func classify(line string) (k lineKind, tagAt int) {
	r := strings.TrimRight(line, " \t")
	t := strings.TrimLeft(r, " \t")
	if len(t) < len(openTag) || strings.IndexByte(t, '<') < 0 {
		return plainLine, 0
	}
	switch {
	case strings.HasSuffix(r, openTag):
		return openLine, len(r) - len(openTag)
	case t == closeTag:
		return closeLine, 0
	case strings.HasPrefix(t, openTag):
		return openTrailing, 0
	case strings.HasPrefix(t, closeTag):
		return closeTrailing, 0
	case strings.HasSuffix(t, closeTag):
		return closeGlued, 0
	case hasAttrTag(t):
		return openAttr, 0
	case strings.EqualFold(t, openTag):
		return openCase, 0
	case strings.EqualFold(t, closeTag):
		return closeCase, 0
	}
	return plainLine, 0
}

// hasAttrTag reports whether t (trimmed) starts or ends with an opening tag
// carrying attributes or stray characters, like "<proposed_plan id=1>" or
// "<proposed_plan />".
func hasAttrTag(t string) bool {
	const name = "<proposed_plan"
	attrAfter := func(i int) bool {
		j := i + len(name)
		return j < len(t) && (t[j] == ' ' || t[j] == '\t' || t[j] == '/')
	}
	if strings.HasPrefix(t, name) && attrAfter(0) && strings.IndexByte(t, '>') > 0 {
		return true
	}
	if t[len(t)-1] == '>' {
		i := strings.LastIndex(t, name)
		return i >= 0 && attrAfter(i) && strings.IndexByte(t[i+1:], '<') < 0
	}
	return false
}
