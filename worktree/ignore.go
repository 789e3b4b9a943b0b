package worktree

import (
	"bytes"
	"os"
	"strings"
	"syscall"
)

// ignorePattern is one line of a .gitignore-style file, parsed as git's
// parse_path_pattern does.
type ignorePattern struct {
	pat       string // without '!', trailing '/' and (for path patterns) leading '/'
	negative  bool   // "!pat": re-include
	mustBeDir bool   // "pat/": matches directories only
	noDir     bool   // no '/' in pat: matched against the basename
	literal   bool   // no wildcard: plain comparison
}

// ignoreList is the patterns of one file, relative to base ("" or "dir/").
// Lists chain through parent: a lookup tries the deepest list first, and in
// each list the last matching pattern wins, which is git's precedence
// (deeper .gitignore, then shallower, then info/exclude, then
// core.excludesFile).
type ignoreList struct {
	parent   *ignoreList
	base     string
	patterns []ignorePattern
}

// parseIgnore parses the content of an ignore file.
func parseIgnore(data []byte) []ignorePattern {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var out []ignorePattern
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		s := trimTrailingSpaces(string(line))
		var p ignorePattern
		if strings.HasPrefix(s, "!") {
			p.negative = true
			s = s[1:]
		}
		if strings.HasSuffix(s, "/") {
			p.mustBeDir = true
			s = s[:len(s)-1]
		}
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			p.noDir = true
		} else {
			s = strings.TrimPrefix(s, "/")
		}
		p.pat = s
		p.literal = !strings.ContainsAny(s, "*?[\\")
		out = append(out, p)
	}
	return out
}

// trimTrailingSpaces drops unescaped trailing spaces, like git.
func trimTrailingSpaces(s string) string {
	end := len(s)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if end == len(s) {
				end = i
			}
		case '\\':
			i++
			end = len(s)
		default:
			end = len(s)
		}
	}
	if end > len(s) {
		end = len(s)
	}
	return s[:end]
}

// readIgnoreFile reads and parses an ignore file; a missing or unreadable
// file has no patterns. In-tree files are opened without following a
// symbolic link, as git does.
func readIgnoreFile(name string, noFollow bool) []ignorePattern {
	flags := os.O_RDONLY
	if noFollow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(name, flags, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil
	}
	return parseIgnore(buf.Bytes())
}

// excluded reports whether path (relative to the root, no trailing slash)
// is ignored. isDir says whether it is a directory (not a symlink to one).
func (l *ignoreList) excluded(path string, isDir bool) bool {
	base := path[strings.LastIndexByte(path, '/')+1:]
	for ; l != nil; l = l.parent {
		for i := len(l.patterns) - 1; i >= 0; i-- {
			p := &l.patterns[i]
			if p.mustBeDir && !isDir {
				continue
			}
			if p.matches(path, base, l.base) {
				return !p.negative
			}
		}
	}
	return false
}

func (p *ignorePattern) matches(path, basename, base string) bool {
	if p.noDir {
		if p.literal {
			return basename == p.pat
		}
		return wildmatch(p.pat, basename, false)
	}
	rel, ok := strings.CutPrefix(path, base)
	if !ok {
		return false
	}
	if p.literal {
		return rel == p.pat
	}
	return wildmatch(p.pat, rel, true)
}

// Results of dowild, as in git's wildmatch.c.
const (
	wmMatch = iota
	wmNoMatch
	wmAbortAll
	wmAbortToStarStar
)

// wildmatch matches text against a git glob pattern. With pathname set,
// '*' and '?' do not match '/' and "**" spans directories (WM_PATHNAME).
func wildmatch(pattern, text string, pathname bool) bool {
	return dowild(pattern, 0, text, 0, pathname) == wmMatch
}

func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

func isGlobSpecial(c byte) bool { return c == '*' || c == '?' || c == '[' || c == '\\' }

// dowild is a transliteration of git's wildmatch.c (without WM_CASEFOLD);
// pattern and text are indexed by p and t, and a read past the end yields 0
// like the C string terminator.
func dowild(pattern string, p int, text string, t int, pathname bool) int {
	for ; at(pattern, p) != 0; t, p = t+1, p+1 {
		pch := pattern[p]
		tch := at(text, t)
		if tch == 0 && pch != '*' {
			return wmAbortAll
		}
		switch pch {
		case '\\':
			p++
			pch = at(pattern, p)
			if tch != pch {
				return wmNoMatch
			}
			continue
		case '?':
			if pathname && tch == '/' {
				return wmNoMatch
			}
			continue
		case '*':
			var matchSlash bool
			p++
			if at(pattern, p) == '*' {
				prev := p - 2
				for p++; at(pattern, p) == '*'; p++ {
				}
				if (prev < 0 || pattern[prev] == '/') &&
					(at(pattern, p) == 0 || at(pattern, p) == '/' ||
						(at(pattern, p) == '\\' && at(pattern, p+1) == '/')) {
					if at(pattern, p) == '/' && dowild(pattern, p+1, text, t, pathname) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				} else {
					matchSlash = false
				}
			} else {
				matchSlash = !pathname
			}
			if at(pattern, p) == 0 {
				if !matchSlash && strings.IndexByte(text[t:], '/') >= 0 {
					return wmNoMatch
				}
				return wmMatch
			} else if !matchSlash && at(pattern, p) == '/' {
				slash := strings.IndexByte(text[t:], '/')
				if slash < 0 {
					return wmNoMatch
				}
				t += slash
				// the slash is consumed by the loop's increment
				continue
			}
			for {
				if tch == 0 {
					break
				}
				if c := at(pattern, p); !isGlobSpecial(c) {
					for {
						tch = at(text, t)
						if tch == 0 || (!matchSlash && tch == '/') || tch == c {
							break
						}
						t++
					}
					if tch != c {
						return wmNoMatch
					}
				}
				if m := dowild(pattern, p, text, t, pathname); m != wmNoMatch {
					if !matchSlash || m != wmAbortToStarStar {
						return m
					}
				} else if !matchSlash && tch == '/' {
					return wmAbortToStarStar
				}
				t++
				tch = at(text, t)
			}
			return wmAbortAll
		case '[':
			p++
			pch = at(pattern, p)
			if pch == '^' {
				pch = '!'
			}
			negated := pch == '!'
			if negated {
				p++
				pch = at(pattern, p)
			}
			var prev byte
			matched := false
			for {
				if pch == 0 {
					return wmAbortAll
				}
				if pch == '\\' {
					p++
					pch = at(pattern, p)
					if pch == 0 {
						return wmAbortAll
					}
					if tch == pch {
						matched = true
					}
				} else if pch == '-' && prev != 0 && at(pattern, p+1) != 0 && at(pattern, p+1) != ']' {
					p++
					pch = at(pattern, p)
					if pch == '\\' {
						p++
						pch = at(pattern, p)
						if pch == 0 {
							return wmAbortAll
						}
					}
					if tch <= pch && tch >= prev {
						matched = true
					}
					pch = 0 // so that prev becomes 0
				} else if pch == '[' && at(pattern, p+1) == ':' {
					p += 2
					s := p
					for at(pattern, p) != 0 && at(pattern, p) != ']' {
						p++
					}
					pch = at(pattern, p)
					if pch == 0 {
						return wmAbortAll
					}
					i := p - s - 1
					if i < 0 || pattern[p-1] != ':' {
						// no ":]": a plain '[' in the set
						p = s - 2
						pch = '['
						if tch == pch {
							matched = true
						}
					} else {
						ok, valid := charClass(pattern[s:s+i], tch)
						if !valid {
							return wmAbortAll
						}
						if ok {
							matched = true
						}
						pch = 0
					}
				} else if tch == pch {
					matched = true
				}
				prev = pch
				p++
				pch = at(pattern, p)
				if pch == ']' {
					break
				}
			}
			if matched == negated || (pathname && tch == '/') {
				return wmNoMatch
			}
			continue
		default:
			if tch != pch {
				return wmNoMatch
			}
			continue
		}
	}
	if t < len(text) {
		return wmNoMatch
	}
	return wmMatch
}

// charClass evaluates a POSIX class name ("alpha", ...) on an ASCII byte;
// valid is false for an unknown class.
func charClass(name string, c byte) (ok, valid bool) {
	isUpper := c >= 'A' && c <= 'Z'
	isLower := c >= 'a' && c <= 'z'
	isDigit := c >= '0' && c <= '9'
	isSpace := c == ' ' || c == '\t' || c == '\n' || c == '\r'
	isPrint := c >= 0x20 && c < 0x7f
	switch name {
	case "alnum":
		return isUpper || isLower || isDigit, true
	case "alpha":
		return isUpper || isLower, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return isDigit, true
	case "graph":
		return isPrint && c != ' ', true
	case "lower":
		return isLower, true
	case "print":
		return isPrint, true
	case "punct":
		return isPrint && c != ' ' && !isUpper && !isLower && !isDigit, true
	case "space":
		return isSpace, true
	case "upper":
		return isUpper, true
	case "xdigit":
		return isDigit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'), true
	}
	return false, false
}
