package proposal

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTrailerTitle bounds the title in a [Trailer], in runes.
const MaxTrailerTitle = 100

// TrailerKey is the git trailer key [Trailer] uses.
const TrailerKey = "Plan"

// Trailer returns the commit-message trailer line naming an accepted plan:
//
//	Plan: <title> (sha256:<first 12 hex digits of hash>)
//
// The title is made one safe line: every control or space character
// (newlines, tabs, ANSI escapes' ESC, U+2028, …) becomes a space, runs of
// spaces collapse, the ends are trimmed, and a title longer than
// [MaxTrailerTitle] runes is clipped with "…". An empty title is
// "untitled". ok is false, and the line empty, when hash is not at least
// 12 lowercase hex digits: a trailer never names a plan it cannot identify.
func Trailer(title, hash string) (line string, ok bool) {
	if len(hash) < 12 || strings.IndexFunc(hash, func(r rune) bool { return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') }) >= 0 {
		return "", false
	}
	return TrailerKey + ": " + trailerTitle(title) + " (sha256:" + hash[:12] + ")", true
}

func trailerTitle(title string) string {
	if !utf8.ValidString(title) {
		title = strings.ToValidUTF8(title, "\uFFFD")
	}
	fields := strings.FieldsFunc(title, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) ||
			unicode.Is(unicode.Cf, r)
	})
	t := strings.Join(fields, " ")
	if t == "" {
		return "untitled"
	}
	if utf8.RuneCountInString(t) > MaxTrailerTitle {
		r := []rune(t)
		t = strings.TrimSpace(string(r[:MaxTrailerTitle-1])) + "…"
	}
	return t
}
