package bashclass

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// checkArgv applies the per-command policy to one argv and returns "" when
// it may run, or a reason naming the program and the offending option or
// operand. argv must not be empty. It runs twice for every command: on the
// literal words of the parsed program (by [Classify]) and on the fully
// expanded argv right before execution (by the [Runner]), so options
// produced by globs, brace expansion or parameters are caught too.
//
// Every allowed program's argv is parsed by a model of that program's own
// option parser (options.go and the tables beside it), and every option
// found must be on the program's allowlist: an option the program does not
// have, or has and the policy does not list, is refused, in every
// spelling. Operands are checked by their role (an output file is
// refused, a script is parsed).
func checkArgv(argv []string) string {
	return checkCommand(argv, 0)
}

// maxNesting bounds commands run by commands (find -exec, xargs).
const maxNesting = 4

// command is the policy for one program.
type command struct {
	// check parses the arguments (argv without the name) and returns a
	// reason to refuse, and whether option parsing had ended at the end of
	// args (words appended after them are operands).
	check func(args []string, depth int) (reason string, ended bool)
	// nest says how the program may be run by find -exec and xargs.
	nest nestMode
}

// nestMode says whether find -exec and xargs may run a program, which
// they do directly, without the runner's launch hardening.
type nestMode uint8

const (
	// nestNo: never run by find or xargs (builtins, git).
	nestNo nestMode = iota
	// nestDD: may run; words xargs appends must follow a "--" (inserted
	// at launch when options have not ended) since the parser permutes.
	nestDD
	// nestAny: every argument word is harmless, options or not.
	nestAny
	// nestFind: may run under find -exec, whose words are paths; not
	// under xargs, whose words could be operands with a special meaning
	// (gawk's /inet/… files after an awk program).
	nestFind
)

// gnuCheck adapts a getopt model to a command check.
func gnuCheck(m *gnuModel) func([]string, int) (string, bool) {
	return func(args []string, _ int) (string, bool) {
		p, reason := m.parse(args)
		if reason != "" {
			return reason, false
		}
		if r := checkFound(m.prog, p.opts); r != "" {
			return r, false
		}
		if m.operands != nil {
			if r := m.operands(&p); r != "" {
				return r, false
			}
		}
		return "", p.ended
	}
}

func noResponseFiles(prog string, check func([]string, int) (string, bool)) func([]string, int) (string, bool) {
	return func(args []string, depth int) (string, bool) {
		for _, a := range args {
			if strings.HasPrefix(a, "@") {
				return fmt.Sprintf("%s argument %q reads more arguments from a file", prog, a), false
			}
		}
		return check(args, depth)
	}
}

func anyArgs([]string, int) (string, bool) { return "", true }

// commands is the policy table: every program that may run, by name.
var commands = func() map[string]command {
	c := map[string]command{}
	for name, m := range gnuTools {
		c[name] = command{check: gnuCheck(m), nest: nestDD}
	}
	// binutils expands an @FILE word anywhere in argv into more
	// arguments read from FILE, which the policy would not see.
	c["strings"] = command{check: noResponseFiles("strings", c["strings"].check), nest: nestDD}
	c["egrep"] = command{check: gnuCheck(grepModel("egrep")), nest: nestDD}
	c["fgrep"] = command{check: gnuCheck(grepModel("fgrep")), nest: nestDD}
	c["date"] = command{check: gnuCheck(dateModel), nest: nestDD}
	c["which"] = command{check: gnuCheck(whichModel), nest: nestDD}
	for _, name := range []string{"echo", "true", "false", "expr"} {
		c[name] = command{check: anyArgs, nest: nestAny}
	}
	c["printf"] = command{check: checkPrintf, nest: nestAny}
	c["pwd"] = command{check: checkPwd}
	c["cd"] = command{check: checkCd}
	c["test"] = command{check: func(a []string, _ int) (string, bool) { return checkTest("test", a), false }}
	c["["] = command{check: func(a []string, _ int) (string, bool) { return checkTest("[", a), false }}
	// find and xargs are checked by name in checkWith (their checks refer
	// back to this table); they are not run by find or xargs.
	c["find"] = command{}
	c["xargs"] = command{}
	c["rg"] = command{check: checkRg, nest: nestDD}
	c["sed"] = command{check: checkSed, nest: nestDD}
	c["awk"] = command{check: checkAwk, nest: nestFind}
	c["xxd"] = command{check: checkXxd, nest: nestDD}
	c["tree"] = command{check: checkTree}
	c["jq"] = command{check: checkJq}
	c["git"] = command{check: func(a []string, _ int) (string, bool) {
		_, reason := parseGit(a)
		return reason, false
	}}
	return c
}()

var dateModel = func() *gnuModel {
	m := gnu("date", help+`
d date =
- debug .
f file =
I iso-8601 ?
- resolution .
R rfc-email,rfc-822,rfc-2822 .
- rfc-3339 =
r reference =
s set = !sets the clock
u utc,universal,uct .
`)
	m.operands = func(p *parsedArgs) string {
		if len(p.operands) > 1 {
			return "date takes at most one +FORMAT operand"
		}
		for _, op := range p.operands {
			if !strings.HasPrefix(op, "+") {
				return fmt.Sprintf("date operand %q would set the clock", op)
			}
		}
		return ""
	}
	return m
}()

// whichModel is debianutils' which: a shell script reading -a and -s.
var whichModel = gnu("which", "a - .\ns - .\n")

// shellBuiltins are refused wherever they appear: they change the shell's
// state or run other code.
var shellBuiltins = func() map[string]bool {
	m := map[string]bool{}
	for _, b := range strings.Fields(`eval source . exec command builtin enable trap
		alias unalias export declare typeset local readonly set shopt read mapfile
		readarray hash ulimit umask kill wait disown let unset type getopts shift
		exit return break continue pushd popd dirs fg bg jobs times caller compgen
		complete fc history logout suspend coproc time nameref`) {
		m[b] = true
	}
	return m
}()

// checkCommand checks one argv at nesting depth depth.
func checkCommand(argv []string, depth int) string {
	name, args := argv[0], argv[1:]
	if strings.Contains(name, "/") {
		return fmt.Sprintf("path-qualified command name %q is not allowed", name)
	}
	if shellBuiltins[name] {
		return fmt.Sprintf("builtin %q is not allowed", name)
	}
	c, ok := commands[name]
	if !ok {
		return fmt.Sprintf("%q is not a read-only command", name)
	}
	reason, _ := checkWith(name, c, args, depth)
	return reason
}

// checkWith runs the check of command c, named name.
func checkWith(name string, c command, args []string, depth int) (string, bool) {
	switch name {
	case "find":
		return checkFind(args, depth)
	case "xargs":
		return checkXargs(args, depth)
	}
	return c.check(args, depth)
}

// placeholder operands stand for words the policy cannot see: paths find
// substitutes for {} and words xargs reads from its input. Paths found by
// find start with a starting point, which never starts with '-'; xargs
// words are only ever placed after a "--".
const (
	foundPath  = "./found"
	foundPath2 = "./found2"
)

// checkNested checks a command that find -exec or xargs runs: the program
// must be one that may run without the runner's launch hardening, and its
// argv (with placeholders for the words find and xargs add) must pass.
// When appended is set, xargs adds words after argv: they must land where
// the program reads only operands.
func checkNested(by string, argv []string, depth int, appended bool) string {
	if depth > maxNesting {
		return fmt.Sprintf("%s: commands nested too deep", by)
	}
	name := argv[0]
	if strings.Contains(name, "{}") {
		return fmt.Sprintf("%s: a command name built from {} is not allowed", by)
	}
	if strings.Contains(name, "/") {
		return fmt.Sprintf("%s: path-qualified command name %q is not allowed", by, name)
	}
	c, ok := commands[name]
	if !ok || shellBuiltins[name] {
		return fmt.Sprintf("%s: %q is not a read-only command", by, name)
	}
	if c.nest == nestNo {
		return fmt.Sprintf("%s cannot run %s (it runs only directly, with the shell's hardening)", by, name)
	}
	args := argv[1:]
	reason, ended := checkWith(name, c, args, depth+1)
	if reason != "" {
		return reason
	}
	if c.nest == nestFind && appended {
		return fmt.Sprintf("%s cannot run %s (the words it reads could be special operands)", by, name)
	}
	if !appended || c.nest == nestAny {
		return ""
	}
	probe := slices.Clip(args)
	if !ended {
		probe = append(probe, "--")
	}
	probe = append(probe, foundPath, foundPath2)
	if reason, _ := checkWith(name, c, probe, depth+1); reason != "" {
		return fmt.Sprintf("%s %s: words read from input would not be plain operands: %s", by, name, reason)
	}
	return ""
}

// launchArgv returns the arguments (without the name) the runner executes
// for an allowed command: rg without configuration files, sed in its
// sandbox mode, and the commands find and xargs run rewritten the same way,
// with the "--" xargs's appended words need. git is launched by
// [gitCall.launchArgs] instead.
func launchArgv(name string, args []string) []string {
	switch name {
	case "rg":
		return append([]string{"--no-config"}, args...)
	case "sed":
		return append([]string{"--sandbox"}, args...)
	case "awk":
		if awkIsGawk() {
			return append([]string{"--sandbox"}, args...)
		}
	case "xargs":
		return launchXargs(args)
	case "find":
		return launchFind(args)
	}
	return args
}

// launchNested rewrites the argv of a command find or xargs runs.
func launchNested(argv []string, appended bool) []string {
	out := append([]string{argv[0]}, launchArgv(argv[0], argv[1:])...)
	if !appended {
		return out
	}
	c := commands[argv[0]]
	if c.nest != nestDD {
		return out
	}
	if _, ended := checkWith(argv[0], c, argv[1:], 0); !ended {
		out = append(out, "--")
	}
	return out
}

// awkIsGawk reports whether awk in the fixed PATH is gawk, which has a
// --sandbox mode (no system(), redirections or extensions) the runner
// adds as a second line of defence; mawk has none.
var awkIsGawk = sync.OnceValue(func() bool {
	p, err := lookPath("awk")
	if err != nil {
		return false
	}
	real, err := filepath.EvalSymlinks(p)
	return err == nil && strings.HasPrefix(filepath.Base(real), "gawk")
})

func checkPrintf(args []string, _ int) (string, bool) {
	// printf -v assigns a shell variable: an assignment in disguise.
	if len(args) > 0 && strings.HasPrefix(args[0], "-v") {
		return "printf -v assigns a variable", false
	}
	return "", true
}

func checkPwd(args []string, _ int) (string, bool) {
	for _, a := range args {
		if a != "-L" && a != "-P" {
			return fmt.Sprintf("pwd argument %q is not allowed", a), false
		}
	}
	return "", false
}

func checkCd(args []string, _ int) (string, bool) {
	operands := 0
	opts := true
	for _, a := range args {
		switch {
		case opts && a == "--":
			opts = false
		case opts && (a == "-L" || a == "-P"):
		case opts && len(a) > 1 && a[0] == '-':
			return fmt.Sprintf("cd option %s is not allowed", a), false
		default:
			operands++
		}
	}
	if operands > 1 {
		return "cd takes at most one directory", false
	}
	return "", false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func unaryTestOp(s string) bool {
	switch s {
	case "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-L", "-k", "-p", "-r", "-s", "-S",
		"-t", "-u", "-w", "-x", "-O", "-G", "-N", "-z", "-n":
		return true
	}
	return false
}

func binaryTestOp(s string) bool {
	switch s {
	case "=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef":
		return true
	}
	return false
}

// checkTest allows one unary file/string test or one binary comparison,
// optionally negated; combinations (-a, -o, parentheses) are refused.
func checkTest(name string, args []string) string {
	if name == "[" {
		if len(args) == 0 || args[len(args)-1] != "]" {
			return "[ without a closing ]"
		}
		args = args[:len(args)-1]
	}
	if len(args) > 1 && args[0] == "!" {
		args = args[1:]
	}
	switch len(args) {
	case 0, 1:
		return ""
	case 2:
		if !unaryTestOp(args[0]) {
			return fmt.Sprintf("%s operator %q is not allowed", name, args[0])
		}
	case 3:
		if !binaryTestOp(args[1]) {
			return fmt.Sprintf("%s operator %q is not allowed", name, args[1])
		}
	default:
		return fmt.Sprintf("%s with more than one condition is not allowed", name)
	}
	return ""
}
