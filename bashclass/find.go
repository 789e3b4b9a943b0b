package bashclass

import (
	"fmt"
	"strings"
)

// find's model follows GNU findutils 4.9: leading options (-H -L -P -D
// LIST -OLEVEL, ended by "--"), then starting points (every word up to the
// first that looks like an expression: "-x…", "(", "!", or a lone ")" or
// ","), then the expression, where each primary takes a fixed number of
// following words whatever they are (find . -name -delete matches files
// named "-delete").

// findPrimaries maps each primary find has to the number of words it
// takes, and the policy: "" allowed, or a reason to refuse. -exec and
// -execdir are parsed separately.
var findPrimaries = func() map[string]findPrimary {
	m := map[string]findPrimary{}
	add := func(n int, deny string, names string) {
		for _, p := range strings.Fields(names) {
			m[p] = findPrimary{args: n, deny: deny}
		}
	}
	add(0, "", `-true -false -print -print0 -ls -prune -quit -empty -readable -writable
		-executable -nouser -nogroup -depth -d -mount -xdev -noleaf -follow -daystart
		-ignore_readdir_race -noignore_readdir_race -warn -nowarn -not -a -and -o -or
		-help --help -version --version -nowarn`)
	add(1, "", `-name -iname -path -ipath -wholename -iwholename -regex -iregex -regextype
		-type -xtype -size -mtime -mmin -atime -amin -ctime -cmin -newer -anewer -cnewer
		-perm -user -group -uid -gid -links -inum -samefile -lname -ilname -used -fstype
		-maxdepth -mindepth -printf -context`)
	for _, x := range "aBcmt" {
		for _, y := range "aBcmt" {
			m["-newer"+string(x)+string(y)] = findPrimary{args: 1}
		}
	}
	add(0, "deletes files", "-delete")
	add(0, "asks on the terminal before running a command", "-ok -okdir")
	add(1, "writes a file", "-fls -fprint -fprint0")
	add(2, "writes a file", "-fprintf")
	// Starting points read from a file may start with '-', and so be
	// options to an -exec command where {} stands for them.
	add(1, "reads starting points from a file", "-files0-from")
	return m
}()

type findPrimary struct {
	args int
	deny string
}

// findLooksLikeExpression is find's own test for the end of the starting
// points.
func findLooksLikeExpression(a string) bool {
	switch {
	case a == "":
		return false
	case a[0] == '-':
		return len(a) > 1
	case a == ")" || a == ",":
		return true
	case a == "!" || a == "(":
		return true
	}
	return false
}

// findExec is one -exec/-execdir clause: the command and how it ends.
type findExec struct {
	start, end int // args[start:end] is the command; args[end] is ";" or "+"
	plus       bool
}

// parseFind splits a find argv and checks it. It returns the -exec
// clauses found.
func parseFind(args []string, depth int) ([]findExec, string) {
	i := 0
	// Leading options.
lead:
	for i < len(args) {
		switch a := args[i]; {
		case a == "-H" || a == "-L" || a == "-P":
			i++
		case a == "-D":
			if i+1 == len(args) {
				return nil, "find option -D needs a value"
			}
			i += 2
		case strings.HasPrefix(a, "-O") && isDigits(a[2:]):
			i++
		case a == "--":
			i++
			break lead
		default:
			break lead
		}
	}
	// Starting points.
	for i < len(args) && !findLooksLikeExpression(args[i]) {
		i++
	}
	var execs []findExec
	for i < len(args) {
		a := args[i]
		switch a {
		case "(", ")", "!", ",":
			i++
			continue
		case "-exec", "-execdir":
			e, reason := parseFindExec(args, i+1, a)
			if reason != "" {
				return nil, reason
			}
			if reason := checkFindExec(a, args[e.start:e.end], e.plus, depth); reason != "" {
				return nil, reason
			}
			execs = append(execs, e)
			i = e.end + 1
			continue
		}
		p, ok := findPrimaries[a]
		if !ok {
			if len(a) > 0 && a[0] == '-' {
				return nil, fmt.Sprintf("find primary %s is unknown to find", a)
			}
			return nil, fmt.Sprintf("find operand %q is not part of an expression (paths must precede it)", a)
		}
		if p.deny != "" {
			return nil, fmt.Sprintf("find primary %s %s", a, p.deny)
		}
		if i+p.args >= len(args) {
			return nil, fmt.Sprintf("find primary %s needs %d argument(s)", a, p.args)
		}
		i += 1 + p.args
	}
	return execs, ""
}

// parseFindExec finds the end of an -exec clause starting at args[from]:
// ";" or a "+" right after "{}".
func parseFindExec(args []string, from int, primary string) (findExec, string) {
	for j := from; j < len(args); j++ {
		switch {
		case args[j] == ";":
			if j == from {
				return findExec{}, fmt.Sprintf("find %s needs a command", primary)
			}
			return findExec{start: from, end: j}, ""
		case args[j] == "+" && j > from && args[j-1] == "{}":
			if j-1 == from {
				return findExec{}, fmt.Sprintf("find %s needs a command", primary)
			}
			return findExec{start: from, end: j, plus: true}, ""
		}
	}
	return findExec{}, fmt.Sprintf("find %s without a terminating ; or {} +", primary)
}

// checkFindExec checks the command of an -exec clause with the paths find
// substitutes: each {} of a ";" clause is one path; the final {} of a "+"
// clause is one or more paths (two are checked, so a second operand with
// a role such as uniq's output file is seen), and {} may not appear
// elsewhere in it, as find requires.
func checkFindExec(primary string, cmd []string, plus bool, depth int) string {
	by := "find " + primary
	argv := make([]string, 0, len(cmd)+1)
	if plus {
		for _, w := range cmd[:len(cmd)-1] {
			if strings.Contains(w, "{}") {
				return fmt.Sprintf("%s: {} may appear only once, at the end, with +", by)
			}
		}
		if strings.Contains(cmd[0], "{}") || len(cmd) < 2 {
			return fmt.Sprintf("%s: a command name built from {} is not allowed", by)
		}
		argv = append(argv, cmd[:len(cmd)-1]...)
		argv = append(argv, foundPath, foundPath2)
	} else {
		if strings.Contains(cmd[0], "{}") {
			return fmt.Sprintf("%s: a command name built from {} is not allowed", by)
		}
		for _, w := range cmd {
			argv = append(argv, strings.ReplaceAll(w, "{}", foundPath))
		}
	}
	return checkNested(by, argv, depth, false)
}

func checkFind(args []string, depth int) (string, bool) {
	_, reason := parseFind(args, depth)
	return reason, false
}

// launchFind rewrites the commands of -exec clauses as the runner would
// launch them (rg --no-config, sed --sandbox).
func launchFind(args []string) []string {
	execs, reason := parseFind(args, 0)
	if reason != "" || len(execs) == 0 {
		return args
	}
	out := make([]string, 0, len(args)+2*len(execs))
	prev := 0
	for _, e := range execs {
		out = append(out, args[prev:e.start]...)
		out = append(out, launchNested(args[e.start:e.end], false)...)
		prev = e.end
	}
	return append(out, args[prev:]...)
}

// xargsModel is GNU xargs 4.9: getopt_long with "+" (options stop at the
// command), then the command and its initial arguments.
var xargsModel = stopAtOperand(gnu("xargs", help+`
0 null .
a arg-file = !reads the command's arguments from a file
d delimiter =
E - =
e eof ?
I - = !builds commands from input lines
i replace ? !builds commands from input lines
L - =
l max-lines ?
n max-args =
o open-tty . !gives the command the terminal
P max-procs =
p interactive . !asks on the terminal
- process-slot-var = !sets environment variables
r no-run-if-empty .
s max-chars =
- show-limits .
t verbose .
x exit .
`))

// splitXargs returns the index in args where the command starts (len(args)
// when there is none, and xargs runs echo), after checking xargs's own
// options.
func splitXargs(args []string) (int, string) {
	p, reason := xargsModel.parse(args)
	if reason != "" {
		return 0, reason
	}
	if r := checkFound("xargs", p.opts); r != "" {
		return 0, r
	}
	return len(args) - len(p.operands), ""
}

// checkXargs allows xargs when the command it runs is allowed with the
// words it reads appended as operands (see [checkNested]).
func checkXargs(args []string, depth int) (string, bool) {
	at, reason := splitXargs(args)
	if reason != "" {
		return reason, false
	}
	if at == len(args) {
		return "", false // runs echo
	}
	return checkNested("xargs", args[at:], depth, true), false
}

func launchXargs(args []string) []string {
	at, reason := splitXargs(args)
	if reason != "" || at == len(args) {
		return args
	}
	out := append([]string{}, args[:at]...)
	return append(out, launchNested(args[at:], true)...)
}
