package bashclass

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// probeWord is the word a probe puts after an option: an option no
// program has, so the program reports it as unknown unless the option
// before it took it as its value.
const probeWord = "--bogus-probe-zz"

// probeRejected reports whether a program's output says it parsed
// probeWord as an (unknown) option, in the words of glibc's getopt, clap,
// git's parse-options and git's revision parser.
func probeRejected(out string) bool {
	for _, p := range []string{
		"unrecognized option '" + probeWord + "'",
		"unrecognized option `" + probeWord + "'",
		"Found argument '" + probeWord + "' which wasn't expected",
		"unknown option `" + probeWord[2:] + "'",
		"unknown option `" + probeWord + "'",
		"unknown option '" + probeWord[2:] + "'",
		"unrecognized argument: " + probeWord,
		"invalid option -- '-'",
		"invalid option: " + probeWord,
		"usage: git rev-list",
		"usage: git diff",
	} {
		if strings.Contains(out, p) {
			return true
		}
	}
	return false
}

// runProbe runs argv in dir with stdin from /dev/null and returns its
// combined output.
func runProbe(t *testing.T, dir string, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(scrubEnv(os.Environ(), nil), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_PAGER=cat", "LC_ALL=C")
	out, _ := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("probe %q did not finish", argv)
	}
	return string(out)
}

// probeSpellings returns the spellings of an option a probe tries.
func probeSpellings(o *optSpec) []string {
	var out []string
	if o.short != 0 {
		out = append(out, "-"+string(o.short))
	}
	for _, l := range o.longs {
		out = append(out, "--"+l)
	}
	return out
}

// probeSkip are options a probe cannot judge: they end the program before
// it looks further (help, version) or read the terminal.
func probeSkip(o *optSpec) bool {
	for _, l := range o.longs {
		switch l {
		case "help", "version", "usage", "pcre2-version", "type-list", "show-limits", "copyright",
			"follow", "combined-all-paths", "no-walk", "do-walk", "graph":
			return true
		}
	}
	// -NUM options take the digits as their value.
	return o.short >= '0' && o.short <= '9'
}

// TestOptionProbe is the oracle of the option tables: for every allowed
// option of every getopt, clap and git model, the real program is run with
// the option followed by an unknown option word. A value-taking option
// must swallow that word as its value (the program does not report it);
// a flag or an optional-value option must leave it to be reported as
// unknown. A mismatch would let a word the model reads as a value be an
// option to the program, or the reverse.
func TestOptionProbe(t *testing.T) {
	dir := t.TempDir()
	probed := 0
	check := func(prog string, argvPrefix []string, o *optSpec) {
		if o.deny != "" || probeSkip(o) {
			return
		}
		takes := o.arg == argRequired || o.arg == argLastDef
		if o.arg == argStuck {
			return
		}
		for _, sp := range probeSpellings(o) {
			argv := append(slices.Clone(argvPrefix), sp, probeWord)
			if takes && argvPrefix[0] == "rg" {
				// clap never takes a word starting with '-' as a value (the
				// model refuses one anyway): the probe is the option alone.
				argv = append(slices.Clone(argvPrefix), "pattern", sp)
				out := runProbe(t, dir, argv...)
				probed++
				if !strings.Contains(out, "requires a value but none was supplied") {
					t.Errorf("%s: the model expects %s to take a value, but %q says:\n%s", prog, sp, argv, firstLines(out, 3))
				}
				continue
			}
			out := runProbe(t, dir, argv...)
			if strings.Contains(out, "Copyright") {
				continue // printed its version and stopped
			}
			probed++
			if strings.Contains(out, "unrecognized option '"+sp+"'") || strings.Contains(out, "invalid option -- '"+strings.TrimPrefix(sp, "-")+"'") ||
				strings.Contains(out, "Found argument '"+sp+"'") {
				t.Errorf("%s: the model lists %s, which the program does not have: %s", prog, sp, firstLines(out, 2))
				continue
			}
			if rejected := probeRejected(out); rejected == takes {
				kind := "a flag (or an optional value)"
				if takes {
					kind = "to take a value"
				}
				t.Errorf("%s: the model expects %s %s, but %q says:\n%s", prog, sp, kind, argv, firstLines(out, 3))
			}
		}
	}
	names := make([]string, 0, len(gnuTools))
	for name := range gnuTools {
		names = append(names, name)
	}
	sort.Strings(names)
	models := map[string]*gnuModel{"date": dateModel, "sed": sedModel, "xargs": xargsModel}
	for name, m := range models {
		gnuTools[name] = m
		names = append(names, name)
	}
	defer func() {
		for name := range models {
			delete(gnuTools, name)
		}
	}()
	for _, name := range names {
		m := gnuTools[name]
		for _, o := range uniqueSpecs(m.idx) {
			check(name, []string{name}, o)
		}
	}
	for _, o := range uniqueSpecs(awkModel.idx) {
		check("gawk", []string{"gawk"}, o)
	}
	for _, o := range uniqueSpecs(rgOpts) {
		check("rg", []string{"rg", "--no-config"}, o)
	}
	t.Logf("probed %d option spellings of %d getopt/clap programs", probed, len(names)+2)

	// git: in a repository with a commit, each subcommand and verb.
	repo := makeRepo(t, "")
	gitT(t, repo, "stash", "-q") // so that stash list runs log
	gitProbed := 0
	for sub, s := range gitSubs {
		switch sub {
		case "rev-parse", "submodule":
			continue // rev-parse echoes unknown options; submodule is a shell script
		}
		prefix := []string{"git", sub}
		switch sub {
		case "stash", "worktree":
			prefix = append(prefix, "list")
		case "rev-list":
			prefix = append(prefix, "HEAD")
		case "reflog":
			prefix = append(prefix, "show")
		case "config":
			prefix = append(prefix, "--get")
		}
		before := probed
		for _, o := range uniqueSpecs(s.idx) {
			checkIn := func() {
				if o.deny != "" || probeSkip(o) || o.arg == argStuck {
					return
				}
				takes := o.arg == argRequired || o.arg == argLastDef
				for _, sp := range probeSpellings(o) {
					argv := append(slices.Clone(prefix), sp, probeWord)
					out := runProbe(t, repo, argv...)
					if strings.Contains(out, "walk-reflogs") || strings.Contains(out, "cannot walk reflogs") {
						continue // the option does not combine with the reflog walk
					}
					probed++
					if strings.Contains(out, "unknown option `"+strings.TrimLeft(sp, "-")+"'") || strings.Contains(out, "unrecognized argument: "+sp) ||
						strings.Contains(out, "invalid option: "+sp) {
						t.Errorf("git %s: the model lists %s, which git does not have: %s", sub, sp, firstLines(out, 2))
						continue
					}
					if rejected := probeRejected(out); rejected == takes {
						t.Errorf("git %s: the model expects %s to take a value: %v, but %q says:\n%s", sub, sp, takes, argv, firstLines(out, 3))
					}
				}
			}
			checkIn()
		}
		gitProbed += probed - before
	}
	t.Logf("probed %d git option spellings", gitProbed)
}

// TestAbbreviationProbe checks the long-option lists of the getopt models
// against the real programs: for every long option, the shortest prefix
// the model resolves to it alone must be accepted by the program as an
// unambiguous abbreviation (were the list missing a real option, the
// program would call the prefix ambiguous or read it as another option).
func TestAbbreviationProbe(t *testing.T) {
	dir := t.TempDir()
	checked := 0
	models := map[string]*gnuModel{"date": dateModel, "sed": sedModel, "xargs": xargsModel, "gawk": awkModel}
	for name, m := range gnuTools {
		models[name] = m
	}
	for prog, m := range models {
		for _, full := range m.idx.names {
			o := m.idx.long[full]
			if o.deny != "" || probeSkip(o) || strings.HasPrefix(full, "-") {
				continue
			}
			for n := 1; n < len(full); n++ {
				got, why := m.idx.resolveLong(full[:n], true)
				if why != "" || got != o {
					continue
				}
				prefix := "--" + full[:n]
				argv := []string{prog, prefix}
				if o.arg == argRequired {
					argv = append(argv, "1")
				}
				argv = append(argv, probeWord)
				out := runProbe(t, dir, argv...)
				checked++
				if strings.Contains(out, "is ambiguous") || strings.Contains(out, "unrecognized option '"+prefix+"'") {
					t.Errorf("%s: the model resolves %s to --%s, but %q says:\n%s", prog, prefix, full, argv, firstLines(out, 2))
				}
				break
			}
		}
	}
	t.Logf("checked the shortest unambiguous prefix of %d long options", checked)
}

func uniqueSpecs(x *optIndex) []*optSpec {
	seen := map[*optSpec]bool{}
	var out []*optSpec
	for _, o := range x.short {
		if o != nil && !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	for _, name := range x.names {
		if o := x.long[name]; !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return out
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// TestLaunchArgv checks the rewriting of the commands the runner
// launches: rg without configuration, sed in sandbox mode, and the
// commands find and xargs run, with the "--" xargs's words need.
func TestLaunchArgv(t *testing.T) {
	tests := []struct {
		argv []string
		want []string
	}{
		{[]string{"rg", "x"}, []string{"--no-config", "x"}},
		{[]string{"sed", "-n", "1p"}, []string{"--sandbox", "-n", "1p"}},
		{[]string{"cat", "x"}, []string{"x"}},
		{[]string{"xargs", "wc", "-l"}, []string{"wc", "-l", "--"}},
		{[]string{"xargs", "-0", "grep", "-e", "x", "--"}, []string{"-0", "grep", "-e", "x", "--"}},
		{[]string{"find", ".", "-exec", "awk", "{print}", "{}", "+"}, []string{".", "-exec", "awk", "--sandbox", "{print}", "{}", "+"}},
		{[]string{"awk", "{print}"}, []string{"--sandbox", "{print}"}},
		{[]string{"xargs", "echo"}, []string{"echo"}},
		{[]string{"xargs", "sed", "s/a/b/"}, []string{"sed", "--sandbox", "s/a/b/", "--"}},
		{[]string{"xargs", "rg", "-n", "x"}, []string{"rg", "--no-config", "-n", "x", "--"}},
		{[]string{"xargs"}, []string{}},
		{[]string{"find", ".", "-exec", "sed", "-n", "1p", "{}", "+"}, []string{".", "-exec", "sed", "--sandbox", "-n", "1p", "{}", "+"}},
		{[]string{"find", ".", "-name", "x", "-exec", "rg", "y", "{}", ";", "-exec", "cat", "{}", ";"},
			[]string{".", "-name", "x", "-exec", "rg", "--no-config", "y", "{}", ";", "-exec", "cat", "{}", ";"}},
	}
	for _, tt := range tests {
		if r := checkArgv(tt.argv); r != "" {
			t.Errorf("checkArgv(%q) = %q", tt.argv, r)
			continue
		}
		got := launchArgv(tt.argv[0], tt.argv[1:])
		if !slices.Equal(got, tt.want) {
			t.Errorf("launchArgv(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}

// TestGitLaunch checks what the runner executes for git calls.
func TestGitLaunch(t *testing.T) {
	tests := []struct {
		args []string
		want []string // after the hardening prefix
	}{
		{[]string{"log", "-p"}, []string{"log", "--no-ext-diff", "--no-textconv", "-p"}},
		{[]string{"-C", "sub", "show"}, []string{"-C", "sub", "show", "--no-ext-diff", "--no-textconv"}},
		{[]string{"shortlog", "-sn"}, []string{"shortlog", "-sn", "HEAD"}},
		{[]string{"shortlog", "-sn", "--", "x"}, []string{"shortlog", "-sn", "HEAD", "--", "x"}},
		{[]string{"shortlog", "main"}, []string{"shortlog", "main"}},
		{[]string{"stash", "list"}, []string{"stash", "list", "--no-ext-diff", "--no-textconv"}},
		{[]string{"reflog"}, []string{"reflog", "show", "--no-ext-diff", "--no-textconv"}},
		{[]string{"reflog", "show", "-3"}, []string{"reflog", "show", "--no-ext-diff", "--no-textconv", "-3"}},
		{[]string{"submodule"}, []string{"submodule", "status"}},
		{[]string{"submodule", "status", "--cached"}, []string{"submodule", "status", "--cached"}},
		{[]string{"blame", "x"}, []string{"blame", "--no-textconv", "x"}},
		{[]string{"worktree", "list"}, []string{"worktree", "list"}},
	}
	for _, tt := range tests {
		c, reason := parseGit(tt.args)
		if reason != "" {
			t.Errorf("parseGit(%q): %s", tt.args, reason)
			continue
		}
		got := c.launchArgs()
		if !slices.Equal(got[:len(gitHardening)], gitHardening) || !slices.Equal(got[len(gitHardening):], tt.want) {
			t.Errorf("launchArgs(%q) = %q, want hardening + %q", tt.args, got[len(gitHardening):], tt.want)
		}
	}
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"status"}, true}, {[]string{"diff", "--cached"}, true}, {[]string{"blame", "x"}, true},
		{[]string{"ls-files", "-m"}, true}, {[]string{"ls-files", "-cd"}, true}, {[]string{"ls-files", "-s"}, false},
		{[]string{"log", "-p"}, false}, {[]string{"submodule", "status"}, false},
	} {
		c, reason := parseGit(tt.args)
		if reason != "" || c.needsHelperCheck() != tt.want {
			t.Errorf("parseGit(%q): needsHelperCheck = %v (%s), want %v", tt.args, c.needsHelperCheck(), reason, tt.want)
		}
	}
}

// writeScriptFile is a helper for oracle tests that need a file.
func writeScriptFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	writeFile(t, p, content, 0o644)
	return p
}
