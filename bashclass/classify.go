package bashclass

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Bounds on the work Classify does for one command. Input beyond them is
// denied with a reason, never parsed further.
const (
	// MaxCommandLen is the longest command Classify parses, in bytes.
	MaxCommandLen = 64 << 10
	// maxDepth bounds the nesting of statements, lists and quoting.
	maxDepth = 64
	// maxBraceWords bounds the words one brace expansion may produce.
	maxBraceWords = 256
)

// parsers recycles Bash parsers: a parser is a large value and Parse
// resets it, so reuse saves most of the parse's garbage. No state is
// shared between parses.
var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// Verdict is the outcome of [Classify].
type Verdict struct {
	// Allow reports whether every construct and every simple command is
	// read-only under the policy.
	Allow bool
	// Reason names the offending part when Allow is false; it is empty
	// when Allow is true.
	Reason string
	// Segments lists the simple commands in source order. It is complete
	// when Allow is true; on a deny it holds the commands seen before the
	// offending part.
	Segments []Segment
}

// Segment is one simple command of a classified program.
type Segment struct {
	// Argv holds the command's words. Literal words (plain, quoted or
	// escaped text) are given unquoted; a word containing a parameter
	// expansion is given as its source text; a brace expansion is expanded.
	// Globs are kept as written. Argv is never empty.
	Argv []string
	// Start and End are byte offsets of the command in the classified
	// source: src[Start:End] is the command's text.
	Start, End int
}

// Classify decides whether src, a Bash command line, only reads, under the
// policy of the package documentation. It never panics and its work is
// bounded: unparseable text, NUL bytes, commands longer than
// [MaxCommandLen] bytes and excessive nesting are denied with a reason.
// Safe for concurrent use.
func Classify(src string) Verdict {
	_, v := parseAndClassify(src)
	return v
}

// parseAndClassify is Classify that also returns the parsed program, which
// the [Runner] executes. The file is nil when the verdict is a deny.
func parseAndClassify(src string) (*syntax.File, Verdict) {
	if reason := precheck(src); reason != "" {
		return nil, Verdict{Reason: reason}
	}
	p := parsers.Get().(*syntax.Parser)
	file, err := p.Parse(strings.NewReader(src), "")
	parsers.Put(p)
	if err != nil {
		return nil, Verdict{Reason: "cannot parse: " + err.Error()}
	}
	if len(file.Stmts) == 0 {
		return nil, Verdict{Reason: "empty command"}
	}
	c := checker{segs: make([]Segment, 0, 4)}
	if !c.stmts(file.Stmts, 0) {
		return nil, Verdict{Reason: c.reason, Segments: c.segs}
	}
	return file, Verdict{Allow: true, Segments: c.segs}
}

// precheck rejects input the parser should not see: over-long text, NUL
// bytes, and bracket nesting deep enough to make parsing costly.
func precheck(src string) string {
	if len(src) > MaxCommandLen {
		return "command too long"
	}
	if strings.IndexByte(src, 0) >= 0 {
		return "command contains a NUL byte"
	}
	depth := 0
	for i := 0; i < len(src); i++ {
		switch b := src[i]; b {
		case '\t', '\n':
		case 0x7f:
			return "command contains control character 0x7f"
		case '(', '{', '[', '`':
			depth++
			if depth > 4*maxDepth {
				return "nesting too deep"
			}
		case ')', '}', ']':
			if depth > 0 {
				depth--
			}
		default:
			if b < 0x20 {
				return fmt.Sprintf("command contains control character %#02x", b)
			}
		}
	}
	return ""
}

// checker walks a parsed program, stopping at the first refused part.
type checker struct {
	segs   []Segment
	reason string
}

func (c *checker) denyReason(reason string) bool {
	c.reason = reason
	return false
}

func (c *checker) deny(format string, args ...any) bool {
	c.reason = fmt.Sprintf(format, args...)
	return false
}

func (c *checker) stmts(list []*syntax.Stmt, depth int) bool {
	for _, s := range list {
		if !c.stmt(s, depth) {
			return false
		}
	}
	return true
}

func (c *checker) stmt(s *syntax.Stmt, depth int) bool {
	if depth > maxDepth {
		return c.deny("nesting too deep")
	}
	switch {
	case s.Background:
		return c.deny("background & is not allowed")
	case s.Coprocess, s.Disown:
		return c.deny("job control operators are not allowed")
	}
	for _, r := range s.Redirs {
		if !c.redirect(r, depth) {
			return false
		}
	}
	switch x := s.Cmd.(type) {
	case nil:
		return true
	case *syntax.CallExpr:
		return c.call(x, depth)
	case *syntax.BinaryCmd:
		switch x.Op {
		case syntax.AndStmt, syntax.OrStmt, syntax.Pipe, syntax.PipeAll:
		default:
			return c.deny("operator %q is not allowed", x.Op.String())
		}
		return c.stmt(x.X, depth+1) && c.stmt(x.Y, depth+1)
	case *syntax.Subshell:
		return c.stmts(x.Stmts, depth+1)
	case *syntax.Block:
		return c.stmts(x.Stmts, depth+1)
	case *syntax.IfClause:
		for ; x != nil; x = x.Else {
			if !c.stmts(x.Cond, depth+1) || !c.stmts(x.Then, depth+1) {
				return false
			}
		}
		return true
	case *syntax.WhileClause:
		return c.stmts(x.Cond, depth+1) && c.stmts(x.Do, depth+1)
	case *syntax.ForClause:
		if x.Select {
			return c.deny("select is not allowed")
		}
		it, ok := x.Loop.(*syntax.WordIter)
		if !ok {
			return c.deny("arithmetic for (( ... )) is not allowed")
		}
		if !it.InPos.IsValid() {
			return c.deny("for without \"in\" is not allowed")
		}
		if shellStateVar(it.Name.Value) {
			return c.deny("for loop variable %s would change shell state", it.Name.Value)
		}
		for _, w := range it.Items {
			if !c.word(w, depth+1) {
				return false
			}
		}
		return c.stmts(x.Do, depth+1)
	case *syntax.CaseClause:
		if !c.word(x.Word, depth+1) {
			return false
		}
		for _, item := range x.Items {
			for _, w := range item.Patterns {
				if !c.word(w, depth+1) {
					return false
				}
			}
			if !c.stmts(item.Stmts, depth+1) {
				return false
			}
		}
		return true
	case *syntax.FuncDecl:
		return c.deny("function definitions are not allowed")
	case *syntax.ArithmCmd:
		return c.deny("arithmetic command (( ... )) is not allowed")
	case *syntax.TestClause:
		return c.deny("[[ ... ]] is not allowed")
	case *syntax.DeclClause:
		return c.deny("builtin %q is not allowed", x.Variant.Value)
	case *syntax.LetClause:
		return c.deny("builtin \"let\" is not allowed")
	case *syntax.TimeClause:
		return c.deny("time is not allowed")
	case *syntax.CoprocClause:
		return c.deny("coproc is not allowed")
	default:
		return c.deny("construct %T is not allowed", x)
	}
}

func (c *checker) call(x *syntax.CallExpr, depth int) bool {
	if len(x.Assigns) > 0 {
		return c.deny("assignment %s=... is not allowed", assignName(x.Assigns[0]))
	}
	name, ok := literal(x.Args[0])
	if !ok {
		if !c.word(x.Args[0], depth+1) {
			return false
		}
		return c.deny("command name %s is not a literal", render(x.Args[0]))
	}
	if strings.Contains(name, "/") {
		return c.deny("path-qualified command name %q is not allowed", name)
	}
	argv := make([]string, 0, len(x.Args))
	argv = append(argv, name)
	for _, w := range x.Args[1:] {
		if !c.word(w, depth+1) {
			return false
		}
		var reason string
		if argv, reason = appendFields(argv, w); reason != "" {
			return c.denyReason(reason)
		}
	}
	c.segs = append(c.segs, Segment{Argv: argv, Start: int(x.Pos().Offset()), End: int(x.End().Offset())})
	if reason := checkArgv(argv); reason != "" {
		return c.denyReason(reason)
	}
	return true
}

func assignName(a *syntax.Assign) string {
	if a.Name != nil {
		return a.Name.Value
	}
	return "?"
}

// redirect allows only the redirections of the policy: output to /dev/null,
// fd duplications 2>&1 and >&2, and reading a file with <.
func (c *checker) redirect(r *syntax.Redirect, depth int) bool {
	n := ""
	if r.N != nil {
		n = r.N.Value
	}
	target := ""
	if r.Word != nil {
		target, _ = literal(r.Word)
	}
	switch r.Op {
	case syntax.RdrOut:
		if (n == "" || n == "1" || n == "2") && target == "/dev/null" {
			return true
		}
		return c.deny("redirection %q to a file is not allowed", n+r.Op.String())
	case syntax.RdrAll:
		if n == "" && target == "/dev/null" {
			return true
		}
		return c.deny("redirection %q to a file is not allowed", n+r.Op.String())
	case syntax.DplOut:
		if (n == "2" && target == "1") || ((n == "" || n == "1") && target == "2") {
			return true
		}
		return c.deny("redirection %q is not allowed", n+r.Op.String()+render(r.Word))
	case syntax.RdrIn:
		if n != "" && n != "0" {
			return c.deny("redirection %q is not allowed", n+r.Op.String())
		}
		return c.word(r.Word, depth+1)
	case syntax.Hdoc, syntax.DashHdoc:
		return c.deny("here-document %s is not allowed", r.Op.String())
	case syntax.WordHdoc:
		return c.deny("here-string <<< is not allowed")
	default:
		return c.deny("redirection %q is not allowed", n+r.Op.String())
	}
}

// word refuses every expansion but plain parameters: command, process and
// arithmetic substitution, parameter operators and extended globs.
func (c *checker) word(w *syntax.Word, depth int) bool {
	for _, p := range w.Parts {
		if !c.wordPart(p, depth) {
			return false
		}
	}
	return true
}

func (c *checker) wordPart(p syntax.WordPart, depth int) bool {
	switch x := p.(type) {
	case *syntax.Lit:
		return true
	case *syntax.SglQuoted:
		if x.Dollar {
			return c.deny("ANSI-C quoting $'...' is not allowed")
		}
		return true
	case *syntax.DblQuoted:
		if x.Dollar {
			return c.deny("locale quoting $\"...\" is not allowed")
		}
		for _, q := range x.Parts {
			if !c.wordPart(q, depth+1) {
				return false
			}
		}
		return true
	case *syntax.ParamExp:
		if !simpleParam(x) {
			return c.deny("parameter expansion with operators ${...} is not allowed")
		}
		return true
	case *syntax.CmdSubst:
		if x.Backquotes {
			return c.deny("command substitution `...` is not allowed")
		}
		return c.deny("command substitution $(...) is not allowed")
	case *syntax.ArithmExp:
		return c.deny("arithmetic expansion $((...)) is not allowed")
	case *syntax.ProcSubst:
		return c.deny("process substitution %s(...) is not allowed", x.Op.String()[:1])
	case *syntax.ExtGlob:
		return c.deny("extended glob %s(...) is not allowed", x.Op.String()[:1])
	default:
		return c.deny("word part %T is not allowed", x)
	}
}

// shellStateVar reports whether assigning name changes how the shell
// splits words, finds programs or resolves paths.
func shellStateVar(name string) bool {
	switch name {
	case "IFS", "PATH", "HOME", "CDPATH", "PWD", "OLDPWD", "GLOBIGNORE", "BASHOPTS", "SHELLOPTS",
		"PS4", "ENV", "BASH_ENV", "LANG", "TMPDIR", "OPTIND", "OPTARG":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// simpleParam reports whether p is $NAME or ${NAME} (NAME may be a special
// or positional parameter) with no operator.
func simpleParam(p *syntax.ParamExp) bool {
	if p.Param == nil || p.Flags != nil || p.Excl || p.Length || p.Width || p.IsSet ||
		p.Split != syntax.OptUnset || p.GlobSubst != syntax.OptUnset || p.RcExpand != syntax.OptUnset ||
		p.NestedParam != nil || p.Index != nil || len(p.Modifiers) > 0 ||
		p.Slice != nil || p.Repl != nil || p.Names != 0 || p.Exp != nil {
		return false
	}
	name := p.Param.Value
	if name == "" {
		return false
	}
	if len(name) == 1 && strings.ContainsRune("@*#?-$!0123456789_", rune(name[0])) {
		return true
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		if !(b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || i > 0 && b >= '0' && b <= '9') {
			return false
		}
	}
	return true
}

// literal returns the value of a word made only of literal text (plain,
// escaped, single- or double-quoted), and whether it is one. ANSI-C $'...'
// strings and parameters make a word non-literal.
func literal(w *syntax.Word) (string, bool) {
	if len(w.Parts) == 1 {
		switch x := w.Parts[0].(type) {
		case *syntax.Lit:
			if strings.IndexByte(x.Value, '\\') < 0 {
				return x.Value, true
			}
		case *syntax.SglQuoted:
			if !x.Dollar {
				return x.Value, true
			}
		case *syntax.DblQuoted:
			if len(x.Parts) == 1 && !x.Dollar {
				if l, ok := x.Parts[0].(*syntax.Lit); ok && strings.IndexByte(l.Value, '\\') < 0 {
					return l.Value, true
				}
			}
		}
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			unescape(&b, x.Value, false)
		case *syntax.SglQuoted:
			if x.Dollar {
				return "", false
			}
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			if x.Dollar {
				return "", false
			}
			for _, q := range x.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				unescape(&b, l.Value, true)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unescape writes s with shell backslash escapes removed, as Bash does
// outside quotes or, when dquote is set, inside double quotes.
func unescape(b *strings.Builder, s string, dquote bool) {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		next := s[i+1]
		switch {
		case next == '\n':
			i++
		case !dquote || strings.IndexByte("$`\"\\", next) >= 0:
			b.WriteByte(next)
			i++
		default:
			b.WriteByte('\\')
		}
	}
}

// render returns a canonical form of a word: literal text unescaped,
// quotes kept, parameters as $NAME or ${NAME}. It is used
// for words that are not literals, and is stable under print and re-parse.
func render(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		renderPart(&b, p, false)
	}
	return b.String()
}

func renderPart(b *strings.Builder, p syntax.WordPart, dquote bool) {
	switch x := p.(type) {
	case *syntax.Lit:
		unescape(b, x.Value, dquote)
	case *syntax.SglQuoted:
		if x.Dollar {
			b.WriteByte('$')
		}
		b.WriteByte('\'')
		b.WriteString(x.Value)
		b.WriteByte('\'')
	case *syntax.DblQuoted:
		if x.Dollar {
			b.WriteByte('$')
		}
		b.WriteByte('"')
		for _, q := range x.Parts {
			renderPart(b, q, true)
		}
		b.WriteByte('"')
	case *syntax.ParamExp:
		if x.Short {
			b.WriteString("$" + x.Param.Value)
		} else {
			b.WriteString("${" + x.Param.Value + "}")
		}
	default:
		b.WriteString("?")
	}
}

// appendFields appends to argv the words one checked word contributes
// before execution: the word, or the words of its brace expansion. It
// denies brace expansions producing more than maxBraceWords words.
func appendFields(argv []string, w *syntax.Word) ([]string, string) {
	if !hasBrace(w) {
		return append(argv, wordValue(w)), ""
	}
	return appendBraceFields(argv, w)
}

// appendBraceFields is appendFields for a word that may hold braces; it is
// separate so the common path does not allocate the expansion state.
func appendBraceFields(argv []string, w *syntax.Word) ([]string, string) {
	cp := *w
	cp.Parts = slices.Clone(w.Parts)
	if !syntax.SplitBraces(&cp) {
		return append(argv, wordValue(w)), ""
	}
	n := 0
	for bw, err := range expand.BracesSeq(nil, &cp) {
		if err != nil || n == maxBraceWords {
			return argv, fmt.Sprintf("brace expansion %s produces more than %d words", render(w), maxBraceWords)
		}
		argv = append(argv, wordValue(bw))
		n++
	}
	return argv, ""
}

func hasBrace(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.IndexByte(l.Value, '{') >= 0 {
			return true
		}
	}
	return false
}

// wordValue is the literal value of w when it has one, else its rendering.
func wordValue(w *syntax.Word) string {
	if s, ok := literal(w); ok {
		return s
	}
	return render(w)
}
