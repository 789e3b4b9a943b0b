package bashclass

import (
	"fmt"
	"slices"
	"strings"
)

// gitCall is a git argv split at the subcommand.
type gitCall struct {
	globals []string // allowed global options as given: --no-pager, -P, -C DIR
	sub     string
	args    []string
}

// gitHardening is prepended to every git invocation the runner launches.
// Each -c neutralises a configuration key that names a helper program.
var gitHardening = []string{
	"--no-pager", "--no-optional-locks",
	"-c", "core.fsmonitor=false",
	"-c", "core.untrackedCache=false",
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.pager=cat",
	"-c", "diff.external=",
	"-c", "log.showSignature=false",
	"-c", "gpg.program=false",
	"-c", "gpg.ssh.program=false",
	"-c", "gpg.x509.program=false",
	"-c", "core.alternateRefsCommand=",
}

// gitEnv is added to the scrubbed environment of every git invocation.
var gitEnv = []string{
	"GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "GIT_NO_LAZY_FETCH=1",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_PAGER=cat",
}

// gitDenyAnywhere are long options refused for every subcommand, in any
// prefix spelling; gitSafeLong are real options that are prefixes of them.
var (
	gitDenyAnywhere = []string{"output", "ext-diff", "textconv", "upload-pack", "receive-pack",
		"recurse-submodules", "exec", "open-files-in-pager"}
	gitSafeLong = []string{"text"}
)

// parseGit checks a git argv (without "git") against the policy and splits
// it. The reason is "" when the call is allowed.
func parseGit(args []string) (gitCall, string) {
	var c gitCall
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--no-pager" || a == "-P":
			c.globals = append(c.globals, a)
		case a == "-C":
			if i+1 == len(args) {
				return c, "git -C needs a directory"
			}
			c.globals = append(c.globals, a, args[i+1])
			i++
		case strings.HasPrefix(a, "-"):
			opt, _, _ := strings.Cut(a, "=")
			switch {
			case opt == "-c" || strings.HasPrefix(opt, "-c") && !strings.HasPrefix(opt, "--") || opt == "--config-env":
				return c, fmt.Sprintf("git option %s sets configuration (helpers could run)", opt)
			default:
				return c, fmt.Sprintf("git global option %s is not allowed", opt)
			}
		default:
			c.sub, c.args = a, args[i+1:]
			return c, checkGitSub(c.sub, c.args)
		}
	}
	return c, "git needs a subcommand"
}

// checkGitSub applies the per-subcommand limits. Words after "--" are
// operands and not checked.
func checkGitSub(sub string, args []string) string {
	opts := args
	if i := slices.Index(args, "--"); i >= 0 {
		opts = args[:i]
	}
	for _, a := range opts {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, _, _ := strings.Cut(a[2:], "=")
		if d := deniedLong(name, gitDenyAnywhere, gitSafeLong); d != "" {
			return fmt.Sprintf("git %s option %s writes files or runs helpers", sub, longSpelling(name, d))
		}
	}
	switch sub {
	case "status", "rev-parse", "ls-files", "ls-tree", "merge-base", "blame",
		"rev-list", "show-ref", "name-rev", "count-objects":
		return ""
	case "describe":
		// --dirty and --broken refresh the index, which rewrites it.
		return gitDenyLong(sub, opts, []string{"dirty", "broken"}, nil, "refreshes (writes) the index")
	case "diff":
		return gitDenyLong(sub, opts, []string{"no-index"}, nil, "is not allowed")
	case "log", "show":
		if r := gitDenyLong(sub, opts, []string{"show-signature"}, nil, "runs gpg"); r != "" {
			return r
		}
		if r := gitDenyLong(sub, opts, []string{"no-index"}, nil, "is not allowed"); r != "" {
			return r
		}
		for _, a := range opts {
			if strings.Contains(a, "%G") {
				return fmt.Sprintf("git %s signature format %q runs gpg", sub, a)
			}
		}
		return ""
	case "cat-file":
		for _, a := range opts {
			if !strings.HasPrefix(a, "--") {
				continue
			}
			name, _, _ := strings.Cut(a[2:], "=")
			if strings.HasPrefix(name, "batch") || strings.HasPrefix("batch", name) {
				return fmt.Sprintf("git cat-file option %s is not allowed", a)
			}
		}
		return gitDenyLong(sub, opts, []string{"filters"}, nil, "runs filters")
	case "for-each-ref":
		if r := gitNoSignature(sub, opts); r != "" {
			return r
		}
		return gitDenyLong(sub, opts, []string{"stdin"}, nil, "is not allowed")
	case "branch":
		return gitListing(sub, opts, len(opts) < len(args), "lavri", "")
	case "tag":
		return gitListing(sub, opts, len(opts) < len(args), "li", "n")
	case "grep":
		for _, a := range opts {
			if len(a) < 2 || a[0] != '-' || a[1] == '-' {
				continue
			}
			for j := 1; j < len(a); j++ {
				if a[j] == 'O' {
					return fmt.Sprintf("git grep option -O (in %q) opens a pager", a)
				}
				if strings.IndexByte("efABCm", a[j]) >= 0 {
					break
				}
			}
		}
		return ""
	case "shortlog":
		for _, a := range opts {
			if !strings.HasPrefix(a, "-") {
				return ""
			}
		}
		return "git shortlog needs a revision (without one it reads standard input)"
	case "worktree":
		if len(args) == 0 || args[0] != "list" {
			return "git worktree is allowed only as git worktree list"
		}
		for _, a := range args[1:] {
			switch {
			case a == "--porcelain", a == "-v", a == "--verbose", a == "-z", strings.HasPrefix(a, "--expire="):
			default:
				return fmt.Sprintf("git worktree list argument %q is not allowed", a)
			}
		}
		return ""
	case "remote":
		if len(args) == 0 || len(args) == 1 && (args[0] == "-v" || args[0] == "--verbose") {
			return ""
		}
		return "git remote is allowed only as git remote or git remote -v"
	case "config":
		return checkGitConfig(args)
	}
	return fmt.Sprintf("git %s is not a read-only git command", sub)
}

func gitDenyLong(sub string, opts, deny, safe []string, why string) string {
	for _, a := range opts {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, _, _ := strings.Cut(a[2:], "=")
		if d := deniedLong(name, deny, safe); d != "" {
			return fmt.Sprintf("git %s option %s %s", sub, longSpelling(name, d), why)
		}
	}
	return ""
}

func gitNoSignature(sub string, opts []string) string {
	for _, a := range opts {
		if strings.Contains(a, "signature") {
			return fmt.Sprintf("git %s argument %q uses signatures (runs gpg)", sub, a)
		}
	}
	return ""
}

// gitListing allows only the listing forms of git branch and git tag: a
// whitelist of options, and operands (patterns) only in list mode, since
// an operand otherwise names a branch or tag to create.
func gitListing(sub string, opts []string, hadDashDash bool, shorts, valShorts string) string {
	if r := gitNoSignature(sub, opts); r != "" {
		return r
	}
	list := false
	operands := 0
	for i := 0; i < len(opts); i++ {
		a := opts[i]
		switch {
		case strings.HasPrefix(a, "--"):
			name, _, hasVal := strings.Cut(a[2:], "=")
			switch name {
			case "list", "contains", "no-contains", "merged", "no-merged", "points-at":
				list = true
			case "all", "remotes", "verbose", "show-current", "color", "no-color", "column",
				"no-column", "ignore-case", "abbrev", "no-abbrev", "omit-empty", "sort", "format":
				if sub == "tag" && (name == "all" || name == "remotes" || name == "verbose" || name == "show-current" || name == "abbrev" || name == "no-abbrev") {
					return fmt.Sprintf("git tag option %s is not a listing option", a)
				}
			default:
				return fmt.Sprintf("git %s option %s is not a listing option", sub, a)
			}
			switch name {
			case "contains", "no-contains", "merged", "no-merged", "points-at", "sort", "format":
				if !hasVal && i+1 < len(opts) && !strings.HasPrefix(opts[i+1], "-") {
					i++
				}
			}
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				ch := a[j]
				if strings.IndexByte(valShorts, ch) >= 0 {
					if !isDigits(a[j+1:]) && j+1 < len(a) {
						return fmt.Sprintf("git %s option %s is not a listing option", sub, a)
					}
					list = true
					break
				}
				if strings.IndexByte(shorts, ch) < 0 {
					if sub == "tag" && ch == 'v' {
						return "git tag -v verifies signatures (runs gpg)"
					}
					return fmt.Sprintf("git %s option -%c is not a listing option", sub, ch)
				}
				if ch == 'l' {
					list = true
				}
			}
		default:
			operands++
		}
	}
	if hadDashDash {
		operands++
	}
	if operands > 0 && !list {
		return fmt.Sprintf("git %s with a name creates a %s; only listing forms are allowed", sub, sub)
	}
	return ""
}

// checkGitConfig allows only reading forms: --get, --get-all,
// --get-regexp and --list, with modifiers that select or format.
func checkGitConfig(args []string) string {
	mode := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, hasVal := strings.Cut(a, "=")
		switch name {
		case "--get", "--get-all", "--get-regexp", "--list", "-l":
			mode = true
		case "--show-origin", "--show-scope", "-z", "--null", "--name-only", "--local", "--global",
			"--system", "--worktree", "--includes", "--no-includes", "--bool", "--int",
			"--bool-or-int", "--path", "--expiry-date", "--fixed-value":
		case "--file", "-f", "--blob", "--type", "--default":
			if !hasVal {
				i++
			}
		default:
			return fmt.Sprintf("git config option %s is not allowed (only --get, --get-all, --get-regexp, --list)", a)
		}
	}
	if !mode {
		return "git config is allowed only with --get, --get-all, --get-regexp or --list"
	}
	return ""
}

// launchArgs returns the argv (without "git") the runner executes for an
// allowed call: the hardening prefix, the user's global options, the
// subcommand, extra safety flags for commands that diff, then the args.
func (c gitCall) launchArgs() []string {
	out := make([]string, 0, len(gitHardening)+len(c.globals)+len(c.args)+3)
	out = append(out, gitHardening...)
	out = append(out, c.globals...)
	out = append(out, c.sub)
	switch c.sub {
	case "diff", "log", "show":
		out = append(out, "--no-ext-diff", "--no-textconv")
	case "blame":
		out = append(out, "--no-textconv")
	}
	return append(out, c.args...)
}

// needsHelperCheck reports whether the subcommand may run clean/smudge
// filters or recurse into submodules when the repository has them.
func (c gitCall) needsHelperCheck() bool {
	switch c.sub {
	case "status", "diff", "blame":
		return true
	}
	return false
}
