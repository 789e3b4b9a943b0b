package bashclass

import (
	"fmt"
	"strings"
)

// checkArgv applies the per-command policy to one argv and returns "" when
// it may run, or a reason naming the offending part. argv must not be
// empty. It runs twice for every command: on the literal words of the
// parsed program (by [Classify]) and on the fully expanded argv right
// before execution (by the [Runner]), so options produced by globs, brace
// expansion or parameters are caught too.
//
// Options are checked in every spelling the programs accept: clustered
// short flags (-uo), attached values (-oFILE), --opt=value and unambiguous
// prefixes of long options (--out for --output). Where the checker cannot
// tell an option's value from an option it treats the word as an option,
// so an uncertain parse denies rather than allows.
func checkArgv(argv []string) string {
	name, args := argv[0], argv[1:]
	if strings.Contains(name, "/") {
		return fmt.Sprintf("path-qualified command name %q is not allowed", name)
	}
	switch name {
	case "cat", "cut", "echo", "expr", "false", "true", "grep", "egrep", "fgrep",
		"head", "tail", "id", "ls", "nl", "paste", "pwd", "rev", "seq", "stat",
		"uname", "wc", "which", "whoami", "basename", "dirname", "comm", "join",
		"fold", "fmt", "column", "od", "hexdump", "strings", "md5sum", "sha1sum",
		"sha256sum", "sha512sum", "cksum", "nproc", "tac",
		"du", "df", "diff", "cmp", "readlink", "realpath", "jq":
		return ""
	case "printf":
		// printf -v assigns a shell variable: an assignment in disguise.
		if len(args) > 0 && strings.HasPrefix(args[0], "-v") {
			return "printf -v assigns a variable"
		}
		return ""
	case "cd":
		return checkCd(args)
	case "find":
		return checkFind(args)
	case "rg":
		return rgRule.check(args)
	case "sed":
		return checkSed(args)
	case "awk":
		return checkAwk(args)
	case "sort":
		return sortRule.check(args)
	case "uniq":
		return checkUniq(args)
	case "base64":
		return base64Rule.check(args)
	case "xxd":
		return checkXxd(args)
	case "tree":
		return treeRule.check(args)
	case "file":
		return fileRule.check(args)
	case "date":
		return checkDate(args)
	case "test", "[":
		return checkTest(name, args)
	case "git":
		_, reason := parseGit(args)
		return reason
	case "eval", "source", ".", "exec", "command", "builtin", "enable", "trap",
		"alias", "unalias", "export", "declare", "typeset", "local", "readonly",
		"set", "shopt", "read", "mapfile", "readarray", "hash", "ulimit", "umask",
		"kill", "wait", "disown", "let", "unset", "type", "getopts", "shift",
		"exit", "return", "break", "continue", "pushd", "popd", "dirs", "fg", "bg",
		"jobs", "times", "caller", "compgen", "complete", "fc", "history", "logout",
		"suspend", "coproc", "time", "nameref":
		return fmt.Sprintf("builtin %q is not allowed", name)
	}
	return fmt.Sprintf("%q is not a read-only command", name)
}

// optRule describes the refused options of one command for a generic
// getopt-style scan.
type optRule struct {
	cmd string
	// denyShort lists short option letters refused anywhere in a cluster.
	denyShort string
	// valShort lists short options whose value is the rest of the cluster;
	// letters after them are not options.
	valShort string
	// denyLong lists long options refused in any prefix spelling.
	denyLong []string
	// safeLong lists real long options that are prefixes of a denyLong
	// entry and so must match exactly to be allowed.
	safeLong []string
	// why completes "cmd option X ...".
	why string
}

var (
	rgRule = optRule{cmd: "rg", denyShort: "z", valShort: "ABCEMTdefgjmrt",
		denyLong: []string{"pre", "hostname-bin", "search-zip"}, why: "runs helper programs"}
	sortRule = optRule{cmd: "sort", denyShort: "oT", valShort: "kSt",
		denyLong: []string{"output", "compress-program", "temporary-directory"}, why: "writes files or runs a program"}
	base64Rule = optRule{cmd: "base64", denyShort: "o", valShort: "w",
		denyLong: []string{"output"}, why: "writes a file"}
	// tree takes option values from the next word without ending the
	// cluster, so every letter of a cluster is an option.
	treeRule = optRule{cmd: "tree", denyShort: "oR",
		denyLong: []string{"output"}, why: "writes files"}
	fileRule = optRule{cmd: "file", denyShort: "C", valShort: "eFfmP",
		denyLong: []string{"compile"}, why: "writes a compiled magic file"}
)

// check returns a reason when args hold a refused option, "" otherwise.
// Scanning stops at "--".
func (o *optRule) check(args []string) string {
	for _, a := range args {
		if a == "--" {
			return ""
		}
		if reason := o.checkWord(a); reason != "" {
			return reason
		}
	}
	return ""
}

func (o *optRule) checkWord(a string) string {
	if strings.HasPrefix(a, "--") {
		name, _, _ := strings.Cut(a[2:], "=")
		if d := deniedLong(name, o.denyLong, o.safeLong); d != "" {
			return fmt.Sprintf("%s option %s %s", o.cmd, longSpelling(name, d), o.why)
		}
		return ""
	}
	if len(a) < 2 || a[0] != '-' {
		return ""
	}
	for j := 1; j < len(a); j++ {
		if strings.IndexByte(o.denyShort, a[j]) >= 0 {
			if len(a) == 2 {
				return fmt.Sprintf("%s option -%c %s", o.cmd, a[j], o.why)
			}
			return fmt.Sprintf("%s option -%c (in %q) %s", o.cmd, a[j], a, o.why)
		}
		if strings.IndexByte(o.valShort, a[j]) >= 0 {
			break
		}
	}
	return ""
}

// deniedLong returns the denied long option that name (without dashes or
// value) spells, exactly or as an abbreviation, or "".
func deniedLong(name string, deny, safe []string) string {
	if name == "" {
		return ""
	}
	for _, s := range safe {
		if name == s {
			return ""
		}
	}
	for _, d := range deny {
		if strings.HasPrefix(d, name) {
			return d
		}
	}
	return ""
}

func longSpelling(name, full string) string {
	if name == full {
		return "--" + full
	}
	return fmt.Sprintf("--%s (prefix of --%s)", name, full)
}

func checkCd(args []string) string {
	operands := 0
	opts := true
	for _, a := range args {
		switch {
		case opts && a == "--":
			opts = false
		case opts && (a == "-L" || a == "-P"):
		case opts && len(a) > 1 && a[0] == '-':
			return fmt.Sprintf("cd option %s is not allowed", a)
		default:
			operands++
		}
	}
	if operands > 1 {
		return "cd takes at most one directory"
	}
	return ""
}

// findDenied are the find primaries that write files or run programs.
func findDenied(primary string) bool {
	switch primary {
	case "delete", "exec", "execdir", "ok", "okdir", "fls", "fprint", "fprint0", "fprintf":
		return true
	}
	return false
}

func checkFind(args []string) string {
	for _, a := range args {
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		if findDenied(strings.TrimLeft(a, "-")) {
			return fmt.Sprintf("find option %s writes or executes", a)
		}
	}
	return ""
}

// checkSed allows exactly "sed -n Np" and "sed -n N,Mp", then files.
func checkSed(args []string) string {
	if len(args) < 2 || args[0] != "-n" || !isPrintRange(args[1]) {
		return "sed is allowed only as sed -n Np or sed -n N,Mp [FILE...]"
	}
	for _, a := range args[2:] {
		if len(a) > 1 && a[0] == '-' {
			return fmt.Sprintf("sed operand %q would be read as an option", a)
		}
	}
	return ""
}

func isPrintRange(s string) bool {
	body, ok := strings.CutSuffix(s, "p")
	if !ok {
		return false
	}
	n, m, hasM := strings.Cut(body, ",")
	return isDigits(n) && (!hasM || isDigits(m))
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

// checkAwk allows -F and -v options, then exactly one inline program that
// neither runs commands, reads other files, nor writes.
func checkAwk(args []string) string {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		switch {
		case a == "-F" || a == "-v":
			i++ // the value is the next word
		case strings.HasPrefix(a, "-F") || strings.HasPrefix(a, "-v"):
		default:
			return fmt.Sprintf("awk option %s is not allowed", a)
		}
	}
	if i >= len(args) {
		return "awk needs one inline program"
	}
	prog := args[i]
	for _, bad := range []string{"system", "getline", "close", "|", ">", "@include", "@load"} {
		if strings.Contains(prog, bad) {
			return fmt.Sprintf("awk program uses %q", bad)
		}
	}
	return ""
}

// checkUniq allows at most one operand: uniq writes to a second one.
func checkUniq(args []string) string {
	operands := 0
	opts := true
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case opts && a == "--":
			opts = false
		case opts && strings.HasPrefix(a, "--"):
			name, _, hasVal := strings.Cut(a[2:], "=")
			switch name {
			case "skip-fields", "skip-chars", "check-chars":
				if !hasVal {
					i++
				}
			}
		case opts && len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				if strings.IndexByte("fsw", a[j]) >= 0 {
					if j == len(a)-1 {
						i++
					}
					break
				}
			}
		default:
			operands++
		}
	}
	if operands > 1 {
		return "uniq with a second operand writes it as the output file"
	}
	return ""
}

// checkXxd refuses reverse mode (any option word starting -r, xxd matches
// by prefix) and a second operand, which xxd writes.
func checkXxd(args []string) string {
	operands := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			operands += len(args) - i - 1
			break
		}
		if len(a) < 2 || a[0] != '-' {
			operands++
			continue
		}
		p := a
		if strings.HasPrefix(p, "--") {
			p = p[1:]
		}
		if strings.HasPrefix(p, "-r") {
			return fmt.Sprintf("xxd option %s (reverse) writes binary output", a)
		}
		switch p {
		case "-c", "-cols", "-g", "-groupsize", "-l", "-len", "-o", "-s", "-seek", "-n", "-name", "-R":
			i++
		}
	}
	if operands > 1 {
		return "xxd with a second operand writes it as the output file"
	}
	return ""
}

// checkDate refuses setting the clock: -s, --set and any operand that is
// not a +FORMAT.
func checkDate(args []string) string {
	opts := true
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case opts && a == "--":
			opts = false
			continue
		case opts && strings.HasPrefix(a, "--"):
			name, _, hasVal := strings.Cut(a[2:], "=")
			if d := deniedLong(name, []string{"set"}, nil); d != "" {
				return fmt.Sprintf("date option %s sets the clock", longSpelling(name, d))
			}
			switch name {
			case "date", "file", "reference", "rfc-3339":
				if !hasVal {
					i++
				}
			}
			continue
		case opts && len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				c := a[j]
				if c == 's' {
					return fmt.Sprintf("date option -s (in %q) sets the clock", a)
				}
				if strings.IndexByte("dfrI", c) >= 0 {
					if j == len(a)-1 && c != 'I' {
						i++
					}
					break
				}
			}
			continue
		}
		if !strings.HasPrefix(a, "+") {
			return fmt.Sprintf("date operand %q would set the clock", a)
		}
	}
	return ""
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
