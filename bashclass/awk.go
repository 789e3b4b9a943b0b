package bashclass

import (
	"fmt"
	"strings"
)

// awk is gawk here (mawk where gawk is not installed); both stop option
// parsing at the program text. The policy allows only -F, -v and "--",
// exactly one inline program, and programs in the subset that reads input
// and prints to standard output (see [checkAwkProgram]).
var awkModel = func() *gnuModel {
	m := stopAtOperand(gnu("awk", `
F field-separator =
v assign =
f file = !loads a program file
e source = !loads program text
E exec = !loads a program file
i include = !loads a library
l load = !loads an extension
o pretty-print ? !writes a file
p profile ? !writes a file
d dump-variables ? !writes a file
D debug ? !starts the debugger
W - = !passes an implementation option
b characters-as-bytes .
c traditional .
C copyright .
g gen-pot .
h usage,help .
L lint ?
M bignum .
n non-decimal-data .
N use-lc-numeric .
O optimize .
P posix .
r re-interval .
s no-optimize .
S sandbox .
t lint-old .
V version .
Y - .
Z locale =
`))
	// gawk's other options exist only in gawk, and mawk refuses them:
	// only -F and -v are allowed, in either implementation.
	for _, o := range []byte("bcCghLMnNOPrsStVYZ") {
		m.idx.shortOpt(o).deny = "is not allowed"
	}
	setCheck(m.idx, "v", checkAwkAssign)
	return m
}()

func checkAwk(args []string, _ int) (string, bool) {
	p, reason := awkModel.parse(args)
	if reason != "" {
		return reason, false
	}
	if r := checkFound("awk", p.opts); r != "" {
		return r, false
	}
	if len(p.operands) == 0 {
		return "awk needs one inline program", false
	}
	if r := checkAwkProgram(p.operands[0]); r != "" {
		return r, false
	}
	for _, op := range p.operands[1:] {
		if gawkSpecialFile(op) {
			return fmt.Sprintf("awk operand %q is a gawk network special file", op), false
		}
		if name, _, ok := strings.Cut(op, "="); ok && isAwkName(name) {
			if r := checkAwkAssign(op); r != "" {
				return "awk operand " + r, false
			}
		}
	}
	return "", true
}

// gawkSpecialFile reports whether gawk opens name as a network
// connection (/inet/tcp/…, /inet4/…, /inet6/…) rather than a file.
func gawkSpecialFile(name string) bool {
	for _, p := range []string{"/inet/", "/inet4/", "/inet6/"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// checkAwkAssign vets NAME=VALUE from -v or an operand: an assignment
// sets a variable to text, which is harmless in the allowed subset, but
// not the variables that steer gawk itself.
func checkAwkAssign(v string) string {
	name, _, ok := strings.Cut(v, "=")
	if !ok || !isAwkName(name) {
		return fmt.Sprintf("%q is not a NAME=VALUE assignment", v)
	}
	if awkRefused[name] != "" {
		return fmt.Sprintf("assignment to %s is not allowed", name)
	}
	return ""
}

func isAwkName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// awkRefused are the names a program may not use: they run commands,
// read other input or flush and close streams, steer gawk's sorting,
// symbol table and function table (which indirect calls go through), or
// change which files are read. ENVIRON stays readable (the environment is
// scrubbed) and writable: it only reaches child processes, and the allowed
// subset starts none.
var awkRefused = map[string]string{
	"system":   "runs a shell command",
	"getline":  "reads other input (files or commands)",
	"close":    "closes streams",
	"fflush":   "flushes streams",
	"PROCINFO": "steers gawk internals",
	"SYMTAB":   "gives indirect access to variables",
	"FUNCTAB":  "gives indirect access to functions",
	"ARGV":     "changes the input files (gawk reads /inet/... as network connections)",
	"ARGC":     "changes the input files",
}

// awkBracket skips the bracket expression of a regular expression that
// starts at src[i] ('['): an optional ^, a leading ] taken literally,
// classes [:x:], [.x.] and [=x=], backslash escapes, up to the closing ]
// whose index it returns. A '/' or a newline inside is refused: awks
// disagree on whether it ends the regular expression.
func awkBracket(src string, i int) (int, string) {
	j := i + 1
	if j < len(src) && src[j] == '^' {
		j++
	}
	if j < len(src) && src[j] == ']' {
		j++
	}
	for ; j < len(src); j++ {
		switch c := src[j]; {
		case c == '\\':
			j++
		case c == '/' || c == '\n':
			return 0, "awk program has '/' or a newline inside a bracket of a regular expression"
		case c == ']':
			return j, ""
		case c == '[' && j+1 < len(src) && strings.IndexByte(":.=", src[j+1]) >= 0:
			end := strings.Index(src[j+2:], string(src[j+1])+"]")
			if end < 0 {
				return 0, "awk program has an unterminated bracket class"
			}
			j += 2 + end + 1
		}
	}
	return 0, "awk program has an unterminated bracket expression"
}

// awkKeywords are the words after which a '/' starts a regular
// expression rather than a division.
var awkKeywords = map[string]bool{
	"BEGIN": true, "END": true, "BEGINFILE": true, "ENDFILE": true, "function": true, "func": true,
	"if": true, "else": true, "while": true, "for": true, "do": true, "break": true, "continue": true,
	"next": true, "nextfile": true, "exit": true, "return": true, "delete": true, "in": true,
	"print": true, "printf": true, "switch": true, "case": true, "default": true,
}

// awkControl are the keywords whose parenthesised condition is followed
// by a statement.
var awkControl = map[string]bool{"if": true, "while": true, "for": true, "switch": true}

// maxAwkProgram bounds the program length the lexer reads.
const maxAwkProgram = 16 << 10

// checkAwkProgram tokenizes an awk program (strings, regular expression
// literals told from division by the preceding token, comments, line
// continuations) and allows it when it has no '@' (gawk's indirect calls,
// @include, @load, @namespace), none of the names in [awkRefused], no
// pipe ('|' or '|&') and no output redirection: '>' or '>>' in a print or
// printf statement outside parentheses. Comparisons elsewhere are fine.
// What it cannot tell apart for certain (a '/' after ++ or --, a '/'
// inside a bracket of a regular expression) it refuses.
func checkAwkProgram(src string) string {
	if len(src) > maxAwkProgram {
		return "awk program too long"
	}
	const (
		tOperand = iota // ends an operand: a '/' next is division
		tOther          // operator, keyword, start: a '/' next is a regex
		tIncDec         // ++ or --: ambiguous before '/'
		tCont           // , { && || ? : do else: a newline next continues
	)
	prev := tOther
	inPrint := false
	printParens := 0
	parens := 0
	// A statement follows the ')' closing the condition of if, while,
	// for and switch, so a '/' there starts a regular expression (gawk's
	// grammar), while after any other ')' it divides. control records,
	// for each open '(', whether it opened such a condition; lastWord is
	// the word just before the current token (blanks, newlines, comments
	// and continuations do not count).
	var control []bool
	lastWord := ""
	for i := 0; i < len(src); {
		c := src[i]
		before := lastWord
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '#' && c != '\\' {
			lastWord = ""
		}
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			i += 2
			continue
		case c == '\\' && i+2 < len(src) && src[i+1] == '\r' && src[i+2] == '\n':
			i += 3
			continue
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case c == '\n':
			if inPrint && prev != tCont {
				inPrint = false
			}
			if prev != tCont {
				prev = tOther
			}
			i++
			continue
		case c == '@':
			return "awk program uses @ (indirect calls, @include, @load)"
		case c == '"':
			j := i + 1
			for ; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '\\' {
					j++
				}
				if j < len(src) && src[j] == '\n' {
					return "awk program has a newline in a string"
				}
			}
			if j >= len(src) {
				return "awk program has an unterminated string"
			}
			i = j + 1
			prev = tOperand
			continue
		case c == '/' && prev == tIncDec:
			return "awk program has a '/' after ++ or -- (division or regex is ambiguous)"
		case c == '/' && prev != tOperand:
			j := i + 1
		regex:
			for ; j < len(src); j++ {
				switch src[j] {
				case '\\':
					j++
				case '\n':
					return "awk program has a newline in a regular expression"
				case '[':
					k, r := awkBracket(src, j)
					if r != "" {
						return r
					}
					j = k
				case '/':
					break regex
				}
			}
			if j >= len(src) {
				return "awk program has an unterminated regular expression"
			}
			i = j + 1
			prev = tOperand
			continue
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			word := src[i:j]
			i = j
			lastWord = word
			if why := awkRefused[word]; why != "" {
				return fmt.Sprintf("awk program uses %s, which %s", word, why)
			}
			switch {
			case word == "print" || word == "printf":
				inPrint, printParens = true, parens
				prev = tOther
			case word == "do" || word == "else":
				prev = tCont
			case awkKeywords[word]:
				prev = tOther
			default:
				prev = tOperand
			}
			continue
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.' || src[j] == 'e' || src[j] == 'E' ||
				src[j] == 'x' || src[j] == 'X' || src[j] >= 'a' && src[j] <= 'f' || src[j] >= 'A' && src[j] <= 'F' ||
				(src[j] == '+' || src[j] == '-') && j > i && (src[j-1] == 'e' || src[j-1] == 'E')) {
				j++
			}
			i = j
			prev = tOperand
			continue
		}
		// Operators and punctuation.
		two := ""
		if i+1 < len(src) {
			two = src[i : i+2]
		}
		switch {
		case two == "|&":
			return "awk program uses |& (a coprocess)"
		case two == "||" || two == "&&":
			i += 2
			prev = tCont
			continue
		case c == '|':
			return "awk program uses | (a pipe to or from a command)"
		case two == ">>":
			return "awk program uses >> (output redirection)"
		case two == ">=":
			i += 2
			prev = tOther
			continue
		case c == '>':
			if inPrint && parens == printParens {
				return "awk program uses > after print (output redirection)"
			}
			i++
			prev = tOther
			continue
		case two == "++" || two == "--":
			i += 2
			prev = tIncDec
			continue
		}
		switch c {
		case '(':
			parens++
			control = append(control, awkControl[before])
			prev = tOther
		case ')':
			parens--
			if parens < 0 {
				return "awk program has an unmatched )"
			}
			prev = tOperand
			if control[len(control)-1] {
				prev = tOther
			}
			control = control[:len(control)-1]
		case ']':
			prev = tOperand
		case '$':
			prev = tOther
		case ';':
			if parens == printParens {
				inPrint = false
			}
			prev = tOther
		case '{':
			inPrint = false
			prev = tCont
		case '}':
			inPrint = false
			prev = tOther
		case ',', '?', ':':
			prev = tCont
		case '[', '=', '+', '-', '*', '/', '%', '^', '!', '<', '~', '&':
			prev = tOther
		default:
			return fmt.Sprintf("awk program has an unexpected character %q", c)
		}
		i++
	}
	return ""
}
