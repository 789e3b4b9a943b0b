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
	verb    string // the verb of stash, reflog, worktree, submodule; "" otherwise
	args    []string
	// helperCheck: the call may hash work-tree files (clean filters) or
	// enter submodules, so the runner checks the repository first.
	helperCheck bool
	// implyHead: shortlog without a revision, which would read stdin.
	implyHead bool
}

// gitHardening is prepended to every git invocation the runner launches.
// Each -c neutralises a configuration key that names a helper program or
// makes git run one; git passes them on to the git processes it starts
// (stash list runs log; submodule status runs git in each submodule).
var gitHardening = []string{
	"--no-pager", "--no-optional-locks",
	"-c", "core.fsmonitor=false",
	"-c", "core.untrackedCache=false",
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.pager=cat",
	"-c", "diff.external=",
	"-c", "diff.submodule=short",
	"-c", "status.submoduleSummary=false",
	"-c", "submodule.recurse=false",
	"-c", "log.showSignature=false",
	"-c", "log.diffMerges=separate", // -m and --diff-merges=on use it; remerge writes objects
	"-c", "gpg.program=false",
	"-c", "gpg.ssh.program=false",
	"-c", "gpg.x509.program=false",
	"-c", "core.alternateRefsCommand=",
	"-c", "protocol.allow=never",
	"-c", "credential.helper=",
	"-c", "core.sshCommand=false",
}

// gitEnv is added to the scrubbed environment of every git invocation.
var gitEnv = []string{
	"GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "GIT_NO_LAZY_FETCH=1",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_PAGER=cat",
}

// gitSub is the model of one read-only subcommand: its allowed options
// (a table as for [optTable]; git resolves no abbreviation the policy
// accepts: only exact names are), whether -NUM is an option, a check of
// the parsed result, and what the launch adds.
type gitSub struct {
	idx    *optIndex
	digits bool
	post   func(c *gitCall, p *parsedArgs) string
	// launch is added right after the subcommand (and verb) at launch.
	launch []string
	// paths: the words after "--" are pathspecs, read as nothing else.
	// Elsewhere (commits, patterns, keys, which some subcommands hand to
	// another parser: blame's "-- <path> <rev>", describe --contains to
	// name-rev) an operand starting with '-' is refused.
	paths bool
}

// gitCommon are refused for every subcommand, so that the reason says why.
const gitCommon = `
- help . !runs git help (a man viewer or a browser)
- output = !writes a file
- ext-diff . !runs an external diff program
- textconv . !runs textconv helpers
- recurse-submodules ? !runs git in submodules
- no-index . !compares files outside the repository
- open-files-in-pager ? !opens a pager
- exec = !runs a program
- upload-pack = !runs a program
- receive-pack = !runs a program
- show-signature . !runs gpg
`

// gitDiffOpts are the diff options of diff, log, show and stash list.
const gitDiffOpts = `
p patch .
u - .
s no-patch .
U unified ?
- raw .
- patch-with-raw .
- patch-with-stat .
- stat ?
- compact-summary .
- numstat .
- shortstat .
- dirstat ?
- summary .
- name-only .
- name-status .
- no-renames .
M find-renames ?
C find-copies ?
B break-rewrites ?
D irreversible-delete .
- find-copies-harder .
l - =
w ignore-all-space .
b ignore-space-change .
- ignore-space-at-eol .
- ignore-cr-at-eol .
- ignore-blank-lines .
I ignore-matching-lines =
W function-context .
- color ?
- no-color .
- color-moved ?
- no-color-moved .
- color-moved-ws =
- word-diff ?
- word-diff-regex =
- color-words ?
R - .
- relative ?
- no-relative .
a text .
- minimal .
- patience .
- histogram .
- anchored =
- diff-algorithm =
- exit-code .
- quiet .
- no-ext-diff .
- no-textconv .
- check .
- full-index .
- binary .
- abbrev ?
- no-abbrev .
z - .
- diff-filter =
S - =
G - =
- pickaxe-all .
- pickaxe-regex .
O - =
- find-object =
- src-prefix =
- dst-prefix =
- no-prefix .
- line-prefix =
- ignore-submodules ?
- submodule ? !runs git in submodules (with diff)
- inter-hunk-context =
- stat-width =
- stat-name-width =
- stat-count =
- ws-error-highlight =
- indent-heuristic .
- no-indent-heuristic .
`

// gitRevOpts are the revision-walk and log-formatting options of log,
// show, shortlog, rev-list, stash list and reflog.
const gitRevOpts = `
- skip =
- since,after,since-as-filter =
- until,before =
- author =
- grep =
- grep-reflog =
i regexp-ignore-case .
E extended-regexp .
F fixed-strings .
P perl-regexp .
- all-match .
- invert-grep .
- basic-regexp .
- merges .
- no-merges .
- min-parents : 
- max-parents :
- first-parent .
- all .
- branches ?
- tags ?
- remotes ?
- glob :
- exclude :
- not .
- reflog .
- alternate-refs . !runs core.alternateRefsCommand
- ignore-missing .
- bisect .
- cherry-pick .
- cherry-mark .
- cherry .
- left-only .
- right-only .
- left-right .
- boundary .
- ancestry-path ?
- simplify-by-decoration .
- full-history .
- dense .
- sparse .
- simplify-merges .
- show-pulls .
- topo-order .
- date-order .
- author-date-order .
- reverse .
- no-walk ?
- do-walk .
g walk-reflogs .
- pretty ?
- format :
- oneline .
- abbrev-commit .
- no-abbrev-commit .
- encoding =
- expand-tabs ?
- no-expand-tabs .
- notes ?
- no-notes .
- show-notes ?
- standard-notes .
- no-standard-notes .
- date =
- relative-date .
- parents .
- children .
- graph .
- show-linear-break ?
- follow .
- no-follow .
- log-size .
m - .
- cc .
- diff-merges =
- no-diff-merges .
- combined-all-paths .
t - .
- remerge-diff . !re-merges in a temporary object directory it writes in .git/objects
- full-diff .
`

var gitSubs = map[string]*gitSub{
	"status": {paths: true, idx: gitIndex(`
s short .
b branch .
- no-branch .
- show-stash .
- porcelain ?
- long .
v verbose . !shows a diff with textconv helpers
u untracked-files ?
- ignored ?
- ignore-submodules ?
z - .
- column ?
- no-column .
- ahead-behind .
- no-ahead-behind .
- renames .
- no-renames .
- find-renames ?
`), post: helperCheck},
	"diff": {paths: true, idx: gitIndex(gitDiffOpts + `
- cached,staged .
`), post: helperCheck, launch: []string{"--no-ext-diff", "--no-textconv"}},
	"log":      {paths: true, idx: withPretty(gitIndex(gitDiffOpts + gitRevOpts + gitCountOpts + gitLogOnly)), digits: true, launch: []string{"--no-ext-diff", "--no-textconv"}},
	"show":     {paths: true, idx: withPretty(gitIndex(gitDiffOpts + gitRevOpts + gitCountOpts + gitLogOnly)), digits: true, launch: []string{"--no-ext-diff", "--no-textconv"}},
	"shortlog": {paths: true, idx: withPretty(gitIndex(gitRevOpts + shortlogOpts)), digits: true, post: shortlogHead},
	"rev-list": {paths: true, idx: withPretty(gitIndex(gitRevOpts + gitCountOpts + `
- count .
- timestamp .
- objects .
- objects-edge .
- header .
- quiet .
- disk-usage ?
- stdin . !reads revisions from standard input
- abbrev ?
- no-abbrev .
`)), digits: true},
	"rev-parse": {paths: true, idx: gitIndex(`
- show-toplevel .
- show-prefix .
- show-cdup .
- show-superproject-working-tree .
- show-ref-format .
- abbrev-ref ?
- short ?
- verify .
q quiet .
- git-dir .
- absolute-git-dir .
- git-common-dir .
- git-path =
- is-inside-work-tree .
- is-inside-git-dir .
- is-bare-repository .
- is-shallow-repository .
- symbolic .
- symbolic-full-name .
- all .
- branches ?
- tags ?
- remotes ?
- glob :
- revs-only .
- no-revs .
- flags .
- no-flags .
- sq .
- local-env-vars .
- show-object-format ?
- since :
- after :
- until :
- before :
- default =
`)},
	"ls-files": {paths: true, idx: gitIndex(`
c cached .
d deleted .
m modified .
o others .
i ignored .
s stage .
u unmerged .
k killed .
- directory .
- no-empty-directory .
- eol .
- deduplicate .
z - .
t - .
v - .
f - .
x exclude =
X exclude-from =
- exclude-per-directory =
- exclude-standard .
- error-unmatch .
- with-tree =
- full-name .
- abbrev ?
- debug .
- sparse .
- format =
`), post: lsFilesCheck},
	"ls-tree": {paths: true, idx: gitIndex(`
d - .
r - .
t - .
l long .
z - .
- name-only,name-status .
- object-only .
- full-name .
- full-tree .
- abbrev ?
- format =
`)},
	"cat-file": {idx: gitIndex(`
t - .
s - .
e - .
p - .
- allow-unknown-type .
- use-mailmap,mailmap .
- batch ? !reads object names from standard input
- batch-check ? !reads object names from standard input
- batch-command ? !reads commands from standard input
- batch-all-objects .
- filters . !runs clean/smudge filters
- path = !selects a path for filters or textconv
`)},
	"merge-base": {idx: gitIndex(`
a all .
- octopus .
- independent .
- is-ancestor .
- fork-point .
`)},
	"for-each-ref": {idx: gitIndex(`
- count =
- sort = 
- format =
s shell .
p perl .
- python .
- tcl .
- points-at =
- merged L
- no-merged L
- contains L
- no-contains L
- ignore-case .
- stdin . !reads patterns from standard input
`), post: refFormats},
	"branch": {idx: gitIndex(`
a all .
r remotes .
v verbose .
l list .
- show-current .
- contains L
- no-contains L
- merged L
- no-merged L
- points-at =
- sort =
- format =
- color ?
- no-color .
- column ?
- no-column .
i ignore-case .
- abbrev ?
- no-abbrev .
q quiet .
`), post: listingOnly},
	"tag": {idx: gitIndex(`
l list .
n - ?
- contains L
- no-contains L
- merged L
- no-merged L
- points-at =
- sort =
- format =
- color ?
- column ?
- no-column .
i ignore-case .
v verify . !runs gpg
`), post: listingOnly},
	"blame": {idx: gitIndex(`
L - =
l - .
t - .
s - .
e show-email .
w - .
M - ?
C - ?
p porcelain .
- line-porcelain .
- incremental .
- root .
- show-stats .
f show-name .
n show-number .
c - .
- date =
- abbrev ?
b - .
- first-parent .
- reverse .
- no-textconv .
- minimal .
- color-lines .
- color-by-age .
- progress . !is not allowed
- contents = !reads a file through filters
S - = !reads revisions from a file
- ignore-rev =
- ignore-revs-file =
`), post: blameCheck, launch: []string{"--no-textconv"}},
	"grep": {paths: true, idx: gitIndex(`
- cached .
- untracked .
- exclude-standard .
- no-exclude-standard .
a text .
- no-textconv .
i ignore-case .
I - .
- max-depth =
r recursive .
- no-recursive .
w word-regexp .
v invert-match .
h - .
H - .
- full-name .
E extended-regexp .
G basic-regexp .
F fixed-strings .
P perl-regexp .
n line-number .
- column .
l files-with-matches,name-only .
L files-without-match .
z null .
o only-matching .
c count .
- color ?
- no-color .
- break .
- heading .
p show-function .
A after-context =
B before-context =
C context =
W function-context .
m max-count =
- threads =
f - =
e - =
- and .
- or .
- not .
q quiet .
- all-match .
O - ? !opens a pager
`), digits: true, launch: []string{"--no-textconv"}},
	"describe": {idx: gitIndex(`
- all .
- tags .
- contains .
- abbrev ?
- candidates =
- exact-match .
- debug .
- long .
- match =
- exclude =
- always .
- first-parent .
- dirty ? !refreshes (writes) the index
- broken ? !refreshes (writes) the index
`)},
	"show-ref": {idx: gitIndex(`
- head .
- heads .
- tags .
d dereference .
s hash ?
- abbrev ?
- verify .
q quiet .
- exclude-existing ? !reads standard input
`)},
	"name-rev": {idx: gitIndex(`
- name-only .
- tags .
- refs =
- exclude =
- all .
- undefined .
- always .
- stdin . !reads standard input
- annotate-stdin . !reads standard input
`)},
	"count-objects": {idx: gitIndex(`
v verbose .
H human-readable .
`)},
	"config": {idx: gitIndex(`
- get .
- get-all .
- get-regexp .
- get-urlmatch .
l list .
- show-origin .
- show-scope .
z null .
- name-only .
- local .
- global .
- system .
- worktree .
f file =
- blob =
- includes .
- no-includes .
- type =
- no-type .
- bool .
- int .
- bool-or-int .
- path .
- expiry-date .
- default =
- fixed-value .
- add . !sets configuration
- replace-all . !sets configuration
- unset . !sets configuration
- unset-all . !sets configuration
- rename-section . !sets configuration
- remove-section . !sets configuration
e edit . !runs an editor
- get-color . !is not allowed
- get-colorbool . !is not allowed
`), post: configRead},
	// Subcommands with a verb: the verb is checked in parseGit.
	"stash":  {paths: true, idx: withPretty(gitIndex(gitDiffOpts + gitRevOpts + gitCountOpts + gitLogOnly)), digits: true, launch: []string{"--no-ext-diff", "--no-textconv"}},
	"reflog": {paths: true, idx: withPretty(gitIndex(gitDiffOpts + gitRevOpts + gitCountOpts + gitLogOnly)), digits: true, launch: []string{"--no-ext-diff", "--no-textconv"}},
	"worktree": {idx: gitIndex(`
- porcelain .
v verbose .
z - .
- expire =
`), post: noOperands},
	"submodule": {idx: gitIndex(`
q quiet .
- cached .
- recursive . !runs git in nested submodules
`)},
	"remote": {idx: gitIndex(`
v verbose .
`), post: noOperands},
}

// gitCountOpts are the revision options shortlog spells differently.
const gitCountOpts = `
n max-count =
- committer =
c - .
`

// gitLogOnly are the options of log, show, stash list and reflog that
// rev-list lacks.
const gitLogOnly = `
L - =
- decorate ?
- no-decorate .
- decorate-refs =
- decorate-refs-exclude =
- clear-decorations .
- source .
- use-mailmap,mailmap .
- no-use-mailmap,no-mailmap .
`

const shortlogOpts = `
n numbered .
c committer .
s summary .
e email .
w - ?
- group =
`

// withPretty attaches the %G check to --pretty and --format.
func withPretty(x *optIndex) *optIndex {
	for _, name := range []string{"pretty", "format"} {
		if o := x.long[name]; o != nil {
			o.check = checkPrettyFormat
		}
	}
	if o := x.long["diff-merges"]; o != nil {
		o.check = checkDiffMerges
	}
	return x
}

// diffMergesFormats are the --diff-merges values (git's diff-merges.c)
// that only print: "remerge" and "r" re-merge each merge in a temporary
// object directory that git creates in .git/objects, a write. "on" and
// "m" take log.diffMerges, which gitHardening sets to separate.
var diffMergesFormats = map[string]bool{
	"off": true, "none": true, "1": true, "first-parent": true, "separate": true,
	"c": true, "combined": true, "cc": true, "dense-combined": true, "m": true, "on": true,
}

func checkDiffMerges(v string) string {
	switch {
	case v == "r" || v == "remerge":
		return fmt.Sprintf("%q re-merges in a temporary object directory it writes in .git/objects", v)
	case !diffMergesFormats[v]:
		return fmt.Sprintf("%q is not a --diff-merges format", v)
	}
	return ""
}

func gitIndex(table string) *optIndex {
	return newOptIndex(optTable(gitCommon + table))
}

func helperCheck(c *gitCall, _ *parsedArgs) string { c.helperCheck = true; return "" }

// blameCheck: git blame reads "-- <path> <rev>", handing the word after
// the path to the revision parser, which takes it as an option when it
// starts with '-' (git blame -- f --output=x writes x). Such operands are
// refused. blame also hashes the work-tree file (clean filters).
func blameCheck(c *gitCall, p *parsedArgs) string {
	for _, op := range p.operands {
		if strings.HasPrefix(op, "-") {
			return fmt.Sprintf("git blame operand %q would be read as an option", op)
		}
	}
	c.helperCheck = true
	return ""
}

func noOperands(c *gitCall, p *parsedArgs) string {
	if len(p.operands) > 0 {
		return fmt.Sprintf("git %s %s takes no operand (%q)", c.sub, c.verb, p.operands[0])
	}
	return ""
}

// lsFilesCheck: -m and -d compare work-tree files with the index, which
// may run clean filters.
func lsFilesCheck(c *gitCall, p *parsedArgs) string {
	for _, f := range p.opts {
		if f.spec.short == 'm' || f.spec.short == 'd' {
			c.helperCheck = true
		}
	}
	return ""
}

func shortlogHead(c *gitCall, p *parsedArgs) string {
	revs := len(p.operands)
	if p.ended {
		revs = p.beforeEnd
	}
	c.implyHead = revs == 0
	return ""
}

// listingOnly allows operands (patterns) of branch and tag only in list
// mode: otherwise an operand names a branch or tag to create.
func listingOnly(c *gitCall, p *parsedArgs) string {
	list := false
	for _, f := range p.opts {
		switch {
		case f.spec.short == 'l' || f.spec.short == 'n' && c.sub == "tag":
			list = true
		case len(f.spec.longs) > 0:
			switch f.spec.longs[0] {
			case "contains", "no-contains", "merged", "no-merged", "points-at":
				list = true
			}
		}
		if f.spec.longs != nil && (f.spec.longs[0] == "sort" || f.spec.longs[0] == "format") {
			if r := checkRefFormat(f.value); r != "" {
				return fmt.Sprintf("git %s option %s: %s", c.sub, f.spec.name(), r)
			}
		}
	}
	if len(p.operands) > 0 && !list {
		return fmt.Sprintf("git %s with a name creates a %s; only listing forms are allowed", c.sub, c.sub)
	}
	return ""
}

func refFormats(c *gitCall, p *parsedArgs) string {
	for _, f := range p.opts {
		if f.spec.longs != nil && (f.spec.longs[0] == "sort" || f.spec.longs[0] == "format") {
			if r := checkRefFormat(f.value); r != "" {
				return fmt.Sprintf("git %s option %s: %s", c.sub, f.spec.name(), r)
			}
		}
	}
	return ""
}

// checkRefFormat refuses ref-filter atoms that verify signatures: the
// %(signature…) atoms, and a --sort key of that name.
func checkRefFormat(v string) string {
	for rest := v; ; {
		i := strings.Index(rest, "%(")
		if i < 0 {
			break
		}
		rest = rest[i+2:]
		if strings.HasPrefix(strings.TrimPrefix(rest, "*"), "signature") {
			return "the %(signature) atom runs gpg"
		}
	}
	if strings.HasPrefix(strings.TrimLeft(v, "-*"), "signature") {
		return "sorting by signature runs gpg"
	}
	return ""
}

// checkPrettyFormat refuses the %G placeholders (signature checks, which
// run gpg), with or without a %+ %- or "% " modifier, of a --format or
// --pretty=format: value.
func checkPrettyFormat(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] != '%' || i+1 == len(v) {
			continue
		}
		if v[i+1] == '%' {
			i++
			continue
		}
		j := i + 1
		if strings.IndexByte("+- ", v[j]) >= 0 && j+1 < len(v) {
			j++ // %+x, %-x and % x put a newline or space before x
		}
		if v[j] == 'G' {
			return fmt.Sprintf("signature placeholder %%G in %q runs gpg", v)
		}
	}
	return ""
}

// configRead allows git config only in a reading mode.
func configRead(c *gitCall, p *parsedArgs) string {
	for _, f := range p.opts {
		switch {
		case f.spec.short == 'l':
			return ""
		case len(f.spec.longs) > 0 && strings.HasPrefix(f.spec.longs[0], "get"):
			return ""
		}
	}
	return "git config is allowed only with --get, --get-all, --get-regexp, --get-urlmatch or --list"
}

// parseGit checks a git argv (without "git") against the policy and splits
// it. The reason is "" when the call is allowed.
//
// Global options: --no-pager, -P and -C DIR only. Subcommands: those of
// [gitSubs], each parsed as git's parse-options and revision parser do: a
// short option's value is the rest of the word or the next word, a long
// option's value follows '=' or is the next word (":" options only
// '='), optional values only stuck, "--" and "--end-of-options" end the
// options, -NUM where the subcommand reads it. Only exact long names are
// accepted (git would resolve some abbreviations; the policy refuses
// them), and a separate value that starts with '-' is refused (git's
// parsers disagree on whether "--" can be one), so every word is either an
// option on the allowlist, its value, or an operand.
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
			if args[i+1] == "" {
				return c, "git -C needs a non-empty directory"
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
			return c, c.check()
		}
	}
	return c, "git needs a subcommand"
}

func (c *gitCall) check() string {
	s, ok := gitSubs[c.sub]
	if !ok {
		if c.sub == "help" {
			return "git help is not allowed (it runs a man viewer or a browser)"
		}
		return fmt.Sprintf("git %s is not a read-only git command", c.sub)
	}
	args := c.args
	switch c.sub {
	case "stash":
		if len(args) == 0 || args[0] != "list" {
			return "git stash is allowed only as git stash list"
		}
		c.verb, args = "list", args[1:]
	case "worktree":
		if len(args) == 0 || args[0] != "list" {
			return "git worktree is allowed only as git worktree list"
		}
		c.verb, args = "list", args[1:]
	case "reflog":
		c.verb = "show"
		if len(args) > 0 {
			switch args[0] {
			case "show":
				args = args[1:]
			case "expire", "delete", "exists", "drop", "write", "list":
				return fmt.Sprintf("git reflog %s is not allowed (only git reflog [show])", args[0])
			}
		}
	case "submodule":
		// git submodule [--quiet] [status] [--cached] [--] [path…]
		for len(args) > 0 && (args[0] == "-q" || args[0] == "--quiet") {
			args = args[1:]
		}
		c.verb = "status"
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			if args[0] != "status" {
				return fmt.Sprintf("git submodule %s is not allowed (only git submodule status)", args[0])
			}
			args = args[1:]
		}
	case "remote":
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			return fmt.Sprintf("git remote %s is not allowed (only git remote and git remote -v)", args[0])
		}
	}
	c.args = args
	p, reason := parseGitArgs(c.sub, s, args)
	if reason != "" {
		return reason
	}
	if r := checkFound("git "+c.sub, p.opts); r != "" {
		return r
	}
	if !s.paths {
		for _, op := range p.operands {
			if strings.HasPrefix(op, "-") && op != "-" {
				return fmt.Sprintf("git %s operand %q would be read as an option", c.sub, op)
			}
		}
	}
	if s.post != nil {
		return s.post(c, &p)
	}
	return ""
}

func parseGitArgs(sub string, s *gitSub, args []string) (parsedArgs, string) {
	var p parsedArgs
	prog := "git " + sub
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
				return "", fmt.Sprintf("%s option %s: a separate value starting with '-' (%q) is ambiguous; write it stuck", prog, o.name(), v)
			}
			i++
			return v, ""
		}
		switch {
		case a == "--" || a == "--end-of-options":
			p.ended = true
			p.beforeEnd = len(p.operands)
			if a == "--end-of-options" {
				p.beforeEnd = -1 // what follows are revisions
			}
		case len(a) < 2 || a[0] != '-':
			p.operands = append(p.operands, a)
		case s.digits && isDigits(a[1:]):
		case a[1] == '-':
			name, value, hasValue := strings.Cut(a[2:], "=")
			o := s.idx.long[name]
			if o == nil {
				if full, why := s.idx.resolveLong(name, true); full != nil {
					return p, fmt.Sprintf("%s option --%s is an abbreviation of %s; spell git options in full", prog, name, full.name())
				} else if why == "ambiguous" {
					return p, fmt.Sprintf("%s option --%s is an ambiguous abbreviation", prog, name)
				}
				return p, fmt.Sprintf("%s option --%s is not allowed", prog, name)
			}
			f := foundOpt{spec: o, word: a, value: value, hasValue: hasValue, typed: "--" + name}
			switch o.arg {
			case argNone:
				if hasValue {
					return p, fmt.Sprintf("%s option %s takes no value", prog, o.name())
				}
			case argRequired:
				if !hasValue {
					v, r := next(o)
					if r != "" {
						return p, r
					}
					f.value, f.hasValue = v, true
				}
			case argStuck:
				if !hasValue {
					return p, fmt.Sprintf("%s option %s needs =VALUE", prog, o.name())
				}
			case argLastDef:
				if !hasValue && i+1 < len(args) {
					v, r := next(o)
					if r != "" {
						return p, r
					}
					f.value, f.hasValue = v, true
				}
			}
			p.opts = append(p.opts, f)
		default:
			for j := 1; j < len(a); j++ {
				o := s.idx.shortOpt(a[j])
				if o == nil {
					return p, fmt.Sprintf("%s option -%s is not allowed", prog, printable(a[j]))
				}
				f := foundOpt{spec: o, word: a, typed: "-" + string(a[j])}
				if o.arg == argNone {
					p.opts = append(p.opts, f)
					continue
				}
				if j+1 < len(a) {
					f.value, f.hasValue = a[j+1:], true
				} else if o.arg == argRequired {
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

// launchArgs returns the argv (without "git") the runner executes for an
// allowed call: the hardening prefix, the user's global options, the
// subcommand and its verb, the safety options of commands that diff, then
// the args (with HEAD for a shortlog without a revision).
func (c gitCall) launchArgs() []string {
	out := make([]string, 0, len(gitHardening)+len(c.globals)+len(c.args)+5)
	out = append(out, gitHardening...)
	out = append(out, c.globals...)
	out = append(out, c.sub)
	args := c.args
	if c.verb != "" {
		out = append(out, c.verb)
	}
	if s := gitSubs[c.sub]; s != nil {
		out = append(out, s.launch...)
	}
	if c.implyHead {
		if i := slices.Index(args, "--"); i >= 0 {
			out = append(out, args[:i]...)
			out = append(out, "HEAD")
			return append(out, args[i:]...)
		}
		out = append(out, args...)
		return append(out, "HEAD")
	}
	return append(out, args...)
}

// needsHelperCheck reports whether the call may run clean/smudge filters
// or recurse into submodules when the repository has them.
func (c gitCall) needsHelperCheck() bool { return c.helperCheck }
