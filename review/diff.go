package review

import (
	"fmt"
	"strings"

	"planbridge/handoff"
)

// maxDiffCells bounds the line-matching table of [Unified] and [Carry]:
// beyond it the part between the common prefix and suffix is taken as one
// replaced block (still a correct diff, only a coarser one).
const maxDiffCells = 4_000_000

// op is one line of an edit script: ' ' kept, '-' removed, '+' added.
type op struct {
	kind byte
	a, b int // line index in a (kept, removed) and in b (kept, added)
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// script returns a shortest edit script from a to b (longest common
// subsequence), removals before additions within a changed block.
func script(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []op
	for i := range pre {
		ops = append(ops, op{' ', i, i})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	n, m := len(ma), len(mb)
	if n*m > maxDiffCells {
		for i := range n {
			ops = append(ops, op{'-', pre + i, pre})
		}
		for j := range m {
			ops = append(ops, op{'+', pre + n, pre + j})
		}
	} else {
		// lcs[i][j] = LCS length of ma[i:] and mb[j:].
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		var adds []op
		flush := func() { ops = append(ops, adds...); adds = adds[:0] }
		for i < n || j < m {
			switch {
			case i < n && j < m && ma[i] == mb[j]:
				flush()
				ops = append(ops, op{' ', pre + i, pre + j})
				i++
				j++
			case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
				adds = append(adds, op{'+', pre + i, pre + j})
				j++
			default:
				ops = append(ops, op{'-', pre + i, pre + j})
				i++
			}
		}
		flush()
	}
	for k := range suf {
		ops = append(ops, op{' ', len(a) - suf + k, len(b) - suf + k})
	}
	return ops
}

// Unified returns a unified diff of a and b (line-based, context lines of
// context) with the given file names, "" when they are equal. It ends with
// a newline; a last line without one is not marked.
func Unified(aName, bName, a, b string, context int) string {
	al, bl := splitLines(a), splitLines(b)
	ops := script(al, bl)
	var out strings.Builder
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		// A hunk: from context lines before the change to context lines
		// after the last change that is within 2*context of the next.
		start := max(0, k-context)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(len(ops), end+context)
				break
			}
			end = run
		}
		if out.Len() == 0 {
			fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
		}
		var body strings.Builder
		na, nb := 0, 0
		sa, sb := 0, 0 // lines of a and b before the hunk
		for _, o := range ops[:start] {
			if o.kind != '+' {
				sa++
			}
			if o.kind != '-' {
				sb++
			}
		}
		for _, o := range ops[start:end] {
			switch o.kind {
			case ' ':
				body.WriteString(" " + al[o.a] + "\n")
				na++
				nb++
			case '-':
				body.WriteString("-" + al[o.a] + "\n")
				na++
			case '+':
				body.WriteString("+" + bl[o.b] + "\n")
				nb++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(sa, na), hunkRange(sb, nb))
		out.WriteString(body.String())
		k = end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// Comment statuses of [Carry].
const (
	CommentOpen      = "open"      // the line is unchanged
	CommentAddressed = "addressed" // the line was changed
	CommentStale     = "stale"     // the line is gone
)

// A Comment is a person's remark on a 1-based line of one plan version:
// the line comment a revision request carries ([handoff.LineComment]).
type Comment = handoff.LineComment

// A Carried comment is a [Comment] re-anchored on the next version.
type Carried struct {
	Comment
	Quote  string `json:"quote"`              // the commented line as it was
	Status string `json:"status"`             // open, addressed or stale
	Line   int    `json:"new_line,omitempty"` // its line in the next version (0 when stale)
}

// Carry re-anchors comments made on prev onto next by content: a comment
// whose line survives unchanged (kept by the diff, or found verbatim
// elsewhere when moved) is open at its new line; one whose line was
// replaced is addressed, anchored at the replacement; one whose line was
// removed with nothing in its place is stale. A comment on no line of prev
// is stale.
func Carry(prev, next string, comments []Comment) []Carried {
	al, bl := splitLines(prev), splitLines(next)
	ops := script(al, bl)
	kept := map[int]int{}     // line of prev -> line of next, for kept lines
	replaced := map[int]int{} // removed line of prev -> first added line of its block (-1 none)
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			kept[ops[k].a] = ops[k].b
			k++
			continue
		}
		end := k
		firstAdd := -1
		for end < len(ops) && ops[end].kind != ' ' {
			if ops[end].kind == '+' && firstAdd < 0 {
				firstAdd = ops[end].b
			}
			end++
		}
		for _, o := range ops[k:end] {
			if o.kind == '-' {
				replaced[o.a] = firstAdd
			}
		}
		k = end
	}
	out := make([]Carried, 0, len(comments))
	for _, c := range comments {
		cc := Carried{Comment: c, Status: CommentStale}
		i := c.Line - 1
		if i < 0 || i >= len(al) {
			out = append(out, cc)
			continue
		}
		cc.Quote = al[i]
		if j, ok := kept[i]; ok {
			cc.Status, cc.Line = CommentOpen, j+1
		} else if j := findLine(bl, al[i], kept); j >= 0 && strings.TrimSpace(al[i]) != "" {
			cc.Status, cc.Line = CommentOpen, j+1 // moved
		} else if j := replaced[i]; j >= 0 {
			cc.Status, cc.Line = CommentAddressed, j+1
		}
		out = append(out, cc)
	}
	return out
}

// findLine returns the first line of b equal to s that is not the target
// of a kept line, or -1.
func findLine(b []string, s string, kept map[int]int) int {
	taken := map[int]bool{}
	for _, j := range kept {
		taken[j] = true
	}
	for j, l := range b {
		if l == s && !taken[j] {
			return j
		}
	}
	return -1
}
