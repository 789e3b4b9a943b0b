package bashclass

import (
	"fmt"
	"strings"
)

// Models of the programs with hand-rolled or non-getopt parsers: rg
// (clap), xxd, tree and jq.

// rgOpts is ripgrep 13's option table (clap 2): long names match exactly
// (no abbreviations), a value is stuck (--glob=G, -gG) or the next word,
// short flags cluster, options and operands mix, "--" ends the options.
var rgOpts = newOptIndex(optTable(`
A after-context =
- auto-hybrid-regex .
- no-auto-hybrid-regex .
B before-context =
- binary .
- no-binary .
- block-buffered .
- no-block-buffered .
b byte-offset .
s case-sensitive .
- color =
- colors =
- column .
- no-column .
C context =
- context-separator =
- no-context-separator .
c count .
- count-matches .
- crlf .
- no-crlf .
- debug .
- trace .
- dfa-size-limit =
E encoding =
- no-encoding .
- field-context-separator =
- field-match-separator =
f file =
- files .
l files-with-matches .
- files-without-match .
F fixed-strings .
- no-fixed-strings .
L follow .
- no-follow .
g glob =
- glob-case-insensitive .
- no-glob-case-insensitive .
h help .
- heading .
- no-heading .
. hidden .
- no-hidden .
- iglob =
i ignore-case .
- ignore-file =
- ignore-file-case-insensitive .
- no-ignore-file-case-insensitive .
- include-zero .
v invert-match .
- json .
- no-json .
- line-buffered .
- no-line-buffered .
n line-number .
x line-regexp .
M max-columns =
- max-columns-preview .
- no-max-columns-preview .
m max-count =
- max-depth,maxdepth =
- max-filesize =
- mmap .
- no-mmap .
U multiline .
- no-multiline .
- multiline-dotall .
- no-multiline-dotall .
- no-config .
I no-filename .
- no-ignore .
- ignore .
- no-ignore-dot .
- no-ignore-exclude .
- no-ignore-files .
- no-ignore-global .
- no-ignore-messages .
- no-ignore-parent .
- no-ignore-vcs .
N no-line-number .
- no-messages .
- messages .
- no-pcre2-unicode .
- pcre2-unicode .
- no-require-git .
- no-unicode .
- unicode .
0 null .
- null-data .
- one-file-system .
- no-one-file-system .
o only-matching .
- passthru,passthrough .
- path-separator =
P pcre2 .
- no-pcre2 .
- pcre2-version .
- pre = !runs a program on every file
- no-pre .
- pre-glob =
p pretty .
q quiet .
- regex-size-limit =
e regexp =
r replace =
z search-zip . !runs decompression programs
- no-search-zip .
S smart-case .
- sort =
- sortr =
- sort-files .
- no-sort-files .
- stats .
- no-stats .
a text .
- no-text .
j threads =
- trim .
- no-trim .
t type =
- type-add =
- type-clear =
- type-list .
T type-not =
u unrestricted .
V version .
- vimgrep .
H with-filename .
w word-regexp .
`))

// parseClap splits args as clap 2 does for prog, refusing, to stay on
// the safe side of clap's hyphen-value rules, a separate value that starts
// with '-' and a stuck short value that starts with '='.
func parseClap(prog string, x *optIndex, args []string) (parsedArgs, string) {
	var p parsedArgs
	for i := 0; i < len(args); i++ {
		a := args[i]
		if p.ended {
			p.operands = append(p.operands, a)
			continue
		}
		next := func(o *optSpec) (string, string) {
			if i+1 == len(args) {
				return "", fmt.Sprintf("%s option %s needs a value", prog, o.name())
			}
			v := args[i+1]
			if strings.HasPrefix(v, "-") {
				return "", fmt.Sprintf("%s option %s: value %q starting with '-' is ambiguous; write %s=%s", prog, o.name(), v, o.name(), v)
			}
			i++
			return v, ""
		}
		switch {
		case a == "--":
			p.ended = true
		case len(a) < 2 || a[0] != '-':
			p.operands = append(p.operands, a)
		case a[1] == '-':
			name, value, hasValue := strings.Cut(a[2:], "=")
			o := x.long[name]
			if o == nil {
				return p, fmt.Sprintf("%s option --%s is unknown to %s", prog, name, prog)
			}
			f := foundOpt{spec: o, word: a, value: value, hasValue: hasValue, typed: "--" + name}
			if o.arg == argNone && hasValue {
				return p, fmt.Sprintf("%s option %s takes no value", prog, o.name())
			}
			if o.arg != argNone && !hasValue {
				v, r := next(o)
				if r != "" {
					return p, r
				}
				f.value, f.hasValue = v, true
			}
			p.opts = append(p.opts, f)
		default:
			for j := 1; j < len(a); j++ {
				o := x.shortOpt(a[j])
				if o == nil {
					return p, fmt.Sprintf("%s option -%s is unknown to %s", prog, printable(a[j]), prog)
				}
				f := foundOpt{spec: o, word: a, typed: "-" + string(a[j])}
				if o.arg == argNone {
					p.opts = append(p.opts, f)
					continue
				}
				if j+1 < len(a) {
					if a[j+1] == '=' {
						return p, fmt.Sprintf("%s option -%c: a value starting with '=' is ambiguous", prog, a[j])
					}
					f.value, f.hasValue = a[j+1:], true
				} else {
					v, r := next(o)
					if r != "" {
						return p, r
					}
					f.value, f.hasValue = v, true
				}
				p.opts = append(p.opts, f)
				break
			}
		}
	}
	return p, ""
}

func checkRg(args []string, _ int) (string, bool) {
	p, reason := parseClap("rg", rgOpts, args)
	if reason != "" {
		return reason, false
	}
	return checkFound("rg", p.opts), p.ended
}

// xxd (vim 9's xxd.c) matches each option word by its first two
// characters ("-c", "-cols" and "-c8" are all -c; "--c" is "-c" too) and
// stops at the first word that is not an option: later words are the
// input and the output file, whatever they look like. The policy accepts
// only the exact spellings below, so a word xxd would read loosely is
// refused.
var (
	xxdFlags = map[string]bool{
		"-a": true, "-autoskip": true, "-b": true, "-bits": true, "-C": true, "-capitalize": true,
		"-d": true, "-e": true, "-E": true, "-EBCDIC": true, "-i": true, "-include": true,
		"-p": true, "-ps": true, "-postscript": true, "-plain": true, "-u": true, "-h": true, "-help": true, "-v": true, "-version": true,
	}
	// xxdValues are the value-taking letters and the rest of their long
	// spellings (-c, -cols).
	xxdValues = map[string]string{
		"c": "ols", "g": "roupsize", "l": "en", "o": "ffset", "s": "eek", "n": "ame", "R": "",
	}
)

func checkXxd(args []string, _ int) (string, bool) {
	i := 0
	ended := false
	for ; i < len(args); i++ {
		a := args[i]
		w := a
		if strings.HasPrefix(w, "--") && len(w) > 2 {
			w = w[1:]
		}
		if a == "--" {
			i++
			ended = true
			break
		}
		if len(w) < 2 || w[0] != '-' {
			ended = true
			break
		}
		if strings.HasPrefix(w, "-r") {
			return fmt.Sprintf("xxd option %s (reverse) writes binary output", a), false
		}
		if xxdFlags[w] {
			continue
		}
		letter := w[1:2]
		long, ok := xxdValues[letter]
		if !ok {
			return fmt.Sprintf("xxd option %s is not allowed", a), false
		}
		rest := w[2:]
		switch {
		case rest == "" || long != "" && rest == long:
			if i+1 == len(args) {
				return fmt.Sprintf("xxd option %s needs a value", a), false
			}
			i++
		case letter == "s" && (isDigits(rest) || len(rest) > 1 && (rest[0] == '+' || rest[0] == '-') && isDigits(rest[1:])):
		case letter != "n" && letter != "R" && isDigits(rest):
		default:
			return fmt.Sprintf("xxd option %s is not allowed (xxd reads only its first two characters)", a), false
		}
	}
	if n := len(args) - i; n > 1 {
		return "xxd with a second operand writes it as the output file", false
	}
	return "", ended
}

// tree (tree 2.x) reads every word starting with '-' as options until
// "--", long options exactly; in a cluster of short options each
// value-taking letter takes the next word in turn (-LP 2 pat).
var (
	treeShort = map[byte]string{ // letter: "" flag, "=" takes the next word, else refusal
		'a': "", 'd': "", 'l': "", 'f': "", 'x': "", 'i': "", 'q': "", 'N': "", 'Q': "",
		'p': "", 'u': "", 'g': "", 's': "", 'h': "", 'D': "", 'F': "", 'v': "", 't': "",
		'c': "", 'U': "", 'r': "", 'n': "", 'C': "", 'A': "", 'S': "", 'J': "", 'X': "",
		'L': "=", 'P': "=", 'I': "=",
		'o': "!writes the listing to a file", 'R': "!writes 00Tree.html files", 'H': "!writes HTML (with -R, files)",
		'T': "!sets the HTML title", 'e': "",
	}
	treeLong = map[string]string{
		"help": "", "version": "", "inodes": "", "device": "", "noreport": "", "nolinks": "",
		"dirsfirst": "", "filesfirst": "", "si": "", "du": "", "prune": "", "matchdirs": "",
		"ignore-case": "", "gitignore": "", "metafirst": "", "info": "",
		"charset": "=", "filelimit": "=", "timefmt": "=", "sort": "=",
		"fromfile": "!reads the listing from a file", "infofile": "!reads an info file",
		"hintro": "!reads an HTML file", "houtro": "!reads an HTML file", "nolinks-html": "!is for HTML output",
		"output": "!writes a file",
	}
)

func checkTree(args []string, _ int) (string, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return "", true
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		if a[1] == '-' {
			name, _, hasValue := strings.Cut(a[2:], "=")
			kind, ok := treeLong[name]
			switch {
			case !ok:
				return fmt.Sprintf("tree option --%s is unknown to tree", name), false
			case strings.HasPrefix(kind, "!"):
				return fmt.Sprintf("tree option --%s %s", name, kind[1:]), false
			case kind == "=" && !hasValue:
				if i+1 == len(args) {
					return fmt.Sprintf("tree option --%s needs a value", name), false
				}
				i++
			case kind == "" && hasValue:
				return fmt.Sprintf("tree option --%s takes no value", name), false
			}
			continue
		}
		n := i
		for j := 1; j < len(a); j++ {
			kind, ok := treeShort[a[j]]
			switch {
			case !ok:
				return fmt.Sprintf("tree option -%s is unknown to tree", printable(a[j])), false
			case strings.HasPrefix(kind, "!"):
				return fmt.Sprintf("tree option -%c %s", a[j], kind[1:]), false
			case kind == "=":
				n++
				if n >= len(args) {
					return fmt.Sprintf("tree option -%c needs a value", a[j]), false
				}
			}
		}
		i = n
	}
	return "", false
}

// jq 1.6 reads every word starting with '-' before "--" as options: long
// names exactly, short flags clustered (every letter must be one), -L
// with a stuck or separate directory, and --arg/--argjson/--slurpfile/
// --rawfile with two words, --indent with one. Programs cannot write
// files or run commands.
var (
	jqShort = "nrjaSscCMeshfR"
	jqLong  = map[string]int{
		"seq": 0, "stream": 0, "slurp": 0, "raw-input": 0, "null-input": 0, "compact-output": 0,
		"color-output": 0, "monochrome-output": 0, "ascii-output": 0, "unbuffered": 0,
		"sort-keys": 0, "raw-output": 0, "join-output": 0, "from-file": 0, "exit-status": 0,
		"args": 0, "jsonargs": 0, "tab": 0, "help": 0, "version": 0,
		"indent": 1, "arg": 2, "argjson": 2, "slurpfile": 2, "rawfile": 2,
	}
)

func checkJq(args []string, _ int) (string, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return "", true
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		if a[1] == '-' {
			n, ok := jqLong[a[2:]]
			if !ok {
				return fmt.Sprintf("jq option %s is not allowed", a), false
			}
			if i+n >= len(args) {
				return fmt.Sprintf("jq option %s needs %d value(s)", a, n), false
			}
			i += n
			continue
		}
		if a[1] == 'L' {
			if len(a) == 2 {
				i++
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			if strings.IndexByte(jqShort, a[j]) < 0 {
				return fmt.Sprintf("jq option -%s is not allowed", printable(a[j])), false
			}
		}
	}
	return "", false
}
