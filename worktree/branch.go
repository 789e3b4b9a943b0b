package worktree

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidBranchName is wrapped by every error [ValidBranchName] returns.
var ErrInvalidBranchName = errors.New("invalid branch name")

// ValidBranchName reports whether name may be used as a new branch name,
// applying exactly the rules of `git check-ref-format --branch` run inside a
// repository: the name must not start with '-' or be "HEAD", and
// refs/heads/NAME must be a valid refname: no
// control characters, DEL, space, '~', '^', ':', '?', '*', '[' or '\\'; no
// "..", no "@{"; no empty component (leading, trailing or doubled '/'); no
// component starting with '.' or ending with ".lock"; no trailing '.'.
// Like git (2.39), a lone "@" is accepted: the refname rule against "@" only
// concerns the whole refname, which here is refs/heads/@.
//
// The returned error wraps [ErrInvalidBranchName] and says which rule failed.
func ValidBranchName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidBranchName, name, why)
	}
	switch {
	case name == "":
		return bad("empty")
	case name[0] == '-':
		return bad("starts with '-'")
	case name == "HEAD":
		return bad("is HEAD")
	}
	var last byte
	compStart := 0
	for i := 0; i <= len(name); i++ {
		var c byte = '/'
		if i < len(name) {
			c = name[i]
		}
		if c == '/' {
			comp := name[compStart:i]
			switch {
			case comp == "":
				return bad("empty path component")
			case comp[0] == '.':
				return bad("component starts with '.'")
			case strings.HasSuffix(comp, ".lock"):
				return bad("component ends with \".lock\"")
			}
			compStart = i + 1
			last = 0
			continue
		}
		switch {
		case c < 0x20 || c == 0x7f:
			return bad("contains a control character")
		case strings.IndexByte(" ~^:?*[\\", c) >= 0:
			return bad(fmt.Sprintf("contains %q", c))
		case c == '.' && last == '.':
			return bad("contains \"..\"")
		case c == '{' && last == '@':
			return bad("contains \"@{\"")
		}
		last = c
	}
	if name[len(name)-1] == '.' {
		return bad("ends with '.'")
	}
	return nil
}
