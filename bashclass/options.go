package bashclass

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// This file holds the option-parser models the per-program policy is built
// on. Each model parses an argv exactly as the program's own parser does
// and reports every option it finds, in the spelling the program resolves
// it to; the policy then allows an option only when its table entry does
// (allowlist), and checks operands by role.

// argKind says whether an option takes a value.
type argKind uint8

const (
	argNone     argKind = iota // a flag
	argRequired                // value stuck (-oV, --opt=V) or the next word, whatever it is
	argOptional                // value only stuck (-oV, --opt=V)
	argStuck                   // long option whose value must follow '=' (git's --format=)
	argLastDef                 // git's LASTARG_DEFAULT: next word unless last
)

// optSpec is one option of a program: its short letter and long names,
// whether it takes a value, and the policy for it.
type optSpec struct {
	short byte     // 0 when the option has no short form
	longs []string // long names without dashes; aliases of one option
	arg   argKind
	// deny, when set, refuses the option with this reason.
	deny string
	// check, when set, vets the option's value ("" when allowed).
	check func(value string) string
}

// name is the spelling used in reasons: the first long name, else the letter.
func (o *optSpec) name() string {
	if len(o.longs) > 0 {
		return "--" + o.longs[0]
	}
	return "-" + string(o.short)
}

// optTable parses a table written as text, one option a line:
//
//	SHORT LONGS ARG [!REASON]
//
// SHORT is a letter or "-", LONGS comma-separated long names or "-", ARG
// "." (none), "=" (required), "?" (optional), ":" (stuck only, git) or
// "L" (last-argument default, git). "!REASON" refuses the option; lines
// without it are allowed. Blank lines and lines starting with '#' are
// skipped. The tables are constants of this package, so a malformed line
// is a programming error and panics when the package is initialised.
func optTable(spec string) []*optSpec {
	var out []*optSpec
	for _, line := range strings.Split(spec, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		deny := ""
		if i := strings.IndexByte(line, '!'); i >= 0 {
			line, deny = strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			panic("bashclass: bad option table line: " + line)
		}
		o := &optSpec{deny: deny}
		if f[0] != "-" {
			if len(f[0]) != 1 {
				panic("bashclass: bad short option: " + line)
			}
			o.short = f[0][0]
		}
		if f[1] != "-" {
			o.longs = strings.Split(f[1], ",")
		}
		switch f[2] {
		case ".":
			o.arg = argNone
		case "=":
			o.arg = argRequired
		case "?":
			o.arg = argOptional
		case ":":
			o.arg = argStuck
		case "L":
			o.arg = argLastDef
		default:
			panic("bashclass: bad argument kind: " + line)
		}
		out = append(out, o)
	}
	return out
}

// optIndex finds options by short letter and long name.
type optIndex struct {
	short [128]*optSpec
	long  map[string]*optSpec
	names []string // sorted long names, for abbreviation lookup
}

func newOptIndex(opts []*optSpec) *optIndex {
	x := &optIndex{long: map[string]*optSpec{}}
	for _, o := range opts {
		if o.short != 0 {
			if x.short[o.short] != nil {
				panic(fmt.Sprintf("bashclass: duplicate short option -%c", o.short))
			}
			x.short[o.short] = o
		}
		for _, l := range o.longs {
			if x.long[l] != nil {
				panic("bashclass: duplicate long option --" + l)
			}
			x.long[l] = o
			x.names = append(x.names, l)
		}
	}
	sort.Strings(x.names)
	return x
}

// shortOpt returns the option for letter c, or nil.
func (x *optIndex) shortOpt(c byte) *optSpec {
	if c >= 128 {
		return nil
	}
	return x.short[c]
}

// resolveLong returns the option a long name (without dashes) means: an
// exact name, or with abbrev an unambiguous prefix as getopt_long resolves
// it (prefixes of several names of one option are not ambiguous).
func (x *optIndex) resolveLong(name string, abbrev bool) (*optSpec, string) {
	if o := x.long[name]; o != nil {
		return o, ""
	}
	if !abbrev || name == "" {
		return nil, "unknown"
	}
	i := sort.SearchStrings(x.names, name)
	var found *optSpec
	for ; i < len(x.names) && strings.HasPrefix(x.names[i], name); i++ {
		o := x.long[x.names[i]]
		if found != nil && found != o {
			return nil, "ambiguous"
		}
		found = o
	}
	if found == nil {
		return nil, "unknown"
	}
	return found, ""
}

// foundOpt is one option occurrence found in an argv.
type foundOpt struct {
	spec     *optSpec
	value    string
	hasValue bool
	word     string // the word it was found in, for reasons
	typed    string // the option as typed: "-o", or "--out" for --output
}

// parsedArgs is an argv split by a parser model.
type parsedArgs struct {
	opts     []foundOpt
	operands []string
	// ended reports that option parsing had stopped at the end of argv
	// ("--" seen, or a parser that stops at its first operand saw one), so
	// words appended to argv are operands.
	ended bool
	// beforeEnd counts the operands before the word that ended the
	// options ("--" or "--end-of-options"); it is set by git's parser.
	beforeEnd int
}

// gnuModel is a program parsed with GNU getopt_long: options and operands
// may be mixed (permutation) unless stopAtOperand (a leading '+' in the
// optstring, or POSIXLY_CORRECT, which the runner never passes); long
// options may be abbreviated to an unambiguous prefix of the real full
// list; a required value is the rest of the word or the next word, even
// "--" or one starting with '-'; an optional value is only ever stuck;
// "--" ends the options.
type gnuModel struct {
	prog string
	idx  *optIndex
	// stopAtOperand: parsing stops at the first operand.
	stopAtOperand bool
	// numericFirst: a first argument -NUM means -n NUM (head, tail).
	numericFirst bool
	// negativeOperand: a word -DIGIT… or -.… is an operand and ends the
	// options (seq).
	negativeOperand bool
	// digitOpts: -NUM is an option (grep's context lines, git grep).
	digitOpts bool
	// operands checks the operands by role; nil allows any.
	operands func(p *parsedArgs) string
}

func gnu(prog string, table string) *gnuModel {
	return &gnuModel{prog: prog, idx: newOptIndex(optTable(table))}
}

// parse splits args as getopt_long would. The reason is "" on success and
// otherwise names the program and the word it could not parse.
func (m *gnuModel) parse(args []string) (parsedArgs, string) {
	var p parsedArgs
	for i := 0; i < len(args); i++ {
		a := args[i]
		if p.ended {
			p.operands = append(p.operands, a)
			continue
		}
		switch {
		case a == "--":
			p.ended = true
		case len(a) < 2 || a[0] != '-':
			p.operands = append(p.operands, a)
			if m.stopAtOperand {
				p.ended = true
			}
		case i == 0 && m.numericFirst && isDigits(a[1:]):
			p.opts = append(p.opts, foundOpt{spec: m.idx.shortOpt('n'), value: a[1:], hasValue: true, word: a, typed: a})
		case m.negativeOperand && (a[1] == '.' || a[1] >= '0' && a[1] <= '9'):
			p.operands = append(p.operands, args[i:]...)
			p.ended = true
			return p, ""
		case m.digitOpts && a[1] >= '0' && a[1] <= '9' && isDigits(a[1:]):
			// -NUM: a context count; nothing else in the word.
		case a[1] == '-':
			name, value, hasValue := strings.Cut(a[2:], "=")
			o, why := m.idx.resolveLong(name, true)
			if o == nil {
				return p, fmt.Sprintf("%s option --%s is %s", m.prog, name, whyText(why, m.prog))
			}
			f := foundOpt{spec: o, word: a, value: value, hasValue: hasValue, typed: "--" + name}
			switch o.arg {
			case argNone:
				if hasValue {
					return p, fmt.Sprintf("%s option %s takes no value", m.prog, o.name())
				}
			case argRequired:
				if !hasValue {
					if i+1 == len(args) {
						return p, fmt.Sprintf("%s option %s needs a value", m.prog, o.name())
					}
					i++
					f.value, f.hasValue = args[i], true
				}
			}
			p.opts = append(p.opts, f)
		default:
			for j := 1; j < len(a); j++ {
				o := m.idx.shortOpt(a[j])
				if o == nil {
					return p, fmt.Sprintf("%s option -%s is unknown to %s", m.prog, printable(a[j]), m.prog)
				}
				f := foundOpt{spec: o, word: a, typed: "-" + string(a[j])}
				if o.arg == argNone {
					p.opts = append(p.opts, f)
					continue
				}
				if j+1 < len(a) {
					f.value, f.hasValue = a[j+1:], true
				} else if o.arg == argRequired {
					if i+1 == len(args) {
						return p, fmt.Sprintf("%s option -%c needs a value", m.prog, a[j])
					}
					i++
					f.value, f.hasValue = args[i], true
				}
				p.opts = append(p.opts, f)
				break
			}
		}
	}
	return p, ""
}

func whyText(why, prog string) string {
	if why == "ambiguous" {
		return "an ambiguous abbreviation"
	}
	return "unknown to " + prog
}

func printable(c byte) string {
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("\\x%02x", c)
	}
	return string(c)
}

// check parses args and applies the allowlist and the operand roles.
func (m *gnuModel) check(args []string) string {
	p, reason := m.parse(args)
	if reason != "" {
		return reason
	}
	if r := checkFound(m.prog, p.opts); r != "" {
		return r
	}
	if m.operands != nil {
		return m.operands(&p)
	}
	return ""
}

// checkFound applies the table's policy to the options found.
func checkFound(prog string, opts []foundOpt) string {
	for _, f := range opts {
		if f.spec.deny != "" {
			return fmt.Sprintf("%s option %s %s", prog, spelling(f), f.spec.deny)
		}
		if f.spec.check != nil && f.hasValue {
			if r := f.spec.check(f.value); r != "" {
				return fmt.Sprintf("%s option %s: %s", prog, spelling(f), r)
			}
		}
	}
	return ""
}

// spelling names an option as it was written: -o, -o (in "-uo"), --output
// or --out (prefix of --output).
func spelling(f foundOpt) string {
	t := f.typed
	if t == "" {
		return f.spec.name()
	}
	if !strings.HasPrefix(t, "--") {
		w := f.word
		if f.hasValue && strings.HasSuffix(w, f.value) {
			w = w[:len(w)-len(f.value)]
		}
		if w != t {
			return fmt.Sprintf("%s (in %q)", t, f.word)
		}
		return t
	}
	if slices.Contains(f.spec.longs, t[2:]) {
		return t
	}
	return fmt.Sprintf("%s (prefix of %s)", t, f.spec.name())
}

// maxOperands returns an operand check allowing at most n operands, with
// why naming what a further one would be.
func maxOperands(prog string, n int, why string) func(p *parsedArgs) string {
	return func(p *parsedArgs) string {
		if len(p.operands) > n {
			return fmt.Sprintf("%s with a %s operand %s", prog, ordinal(n+1), why)
		}
		return ""
	}
}

func ordinal(n int) string {
	switch n {
	case 1:
		return "first"
	case 2:
		return "second"
	case 3:
		return "third"
	}
	return fmt.Sprintf("%dth", n)
}

// set withOpt attaches a value check to the option named by its first
// long name or letter; it returns m for chaining in table declarations.
func (m *gnuModel) withCheck(name string, check func(string) string) *gnuModel {
	setCheck(m.idx, name, check)
	return m
}

func setCheck(x *optIndex, name string, check func(string) string) {
	var o *optSpec
	if len(name) == 1 {
		o = x.shortOpt(name[0])
	} else {
		o = x.long[name]
	}
	if o == nil {
		panic("bashclass: no option " + name)
	}
	o.check = check
}
