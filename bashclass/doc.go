// Package bashclass decides whether a shell command only reads, and runs
// commands it allows without letting them write: it parses with
// mvdan.cc/sh/v3/syntax, classifies every construct and simple command
// against a fixed read-only policy, and executes the same parsed program with
// mvdan.cc/sh/v3/interp, re-checking every expanded argv before it runs.
//
// The policy is the one of spec/bash.md, in short:
//
//   - Structure: simple commands joined by ; newline && || | |&, negation,
//     subshells, groups, if, for … in, while/until and case. Words may hold
//     quotes, $NAME, ${NAME}, ~, globs and brace expansion. Command, process
//     and arithmetic substitution, parameter operators, [[ ]], functions,
//     background jobs, coproc, time, assignments and the state-changing
//     builtins are refused. Command names must be literal and unqualified.
//   - Redirections: >/dev/null, 2>/dev/null, &>/dev/null, 2>&1, >&2 and
//     < FILE only.
//   - Commands: a table of read-only programs ([checkArgv]). Each program's
//     argv is parsed by a model of that program's own option parser,
//     declared as data with one table per tool family: GNU getopt_long
//     (tools.go: permutation or stop at the first operand as the program
//     does, abbreviations resolved against the program's full long-option
//     list, ambiguity refused, a required value taking the next word even
//     if it is "--"), git's parse-options and revision parser (git.go: one
//     table per subcommand), clap for rg, and the hand-rolled parsers of
//     xxd, tree and jq (hand.go), find's expression grammar (find.go).
//     Every option found must be on the program's allowlist — an option
//     the program lacks, or has and the table does not allow, is refused
//     in every spelling — and operands are checked by role: an output
//     operand (uniq's second, xxd's second) is refused, sed scripts
//     (sed.go) and awk programs (awk.go) are parsed and allowed only in
//     the subset that prints to standard output, date operands must be
//     +FORMAT.
//   - find -exec/-execdir and xargs run a command only when that command
//     is itself allowed with the paths or words they add: find's {} paths
//     begin with a starting point (never '-'); xargs's words go after a
//     "--" the launch inserts where the command's parser honours it, and
//     commands whose operands could still mean something else (awk, find,
//     xargs, git, builtins) are not run by xargs.
//
// The table's option kinds are checked against the installed programs by
// TestOptionProbe, the awk and sed subsets against gawk --sandbox, mawk and
// sed --sandbox (TestAwkOracle, TestSedOracle). Anything a model does not
// understand is refused with a reason naming the program and the word.
//
// [Classify] gives the static verdict. [Runner] executes: its handlers
// re-apply the argv policy to the expanded argv of every command (so a glob
// that expands to an option is refused at execution), let redirections
// write only /dev/null, scrub the environment, and launch programs with
// their own safety switches (launchArgv: rg --no-config, sed --sandbox,
// gawk --sandbox, recursively for find and xargs); git runs with options
// that disable helper programs (pagers, fsmonitor, external diff,
// textconv, diff.submodule=short, gpg, protocols), and status, diff,
// blame and ls-files -m/-d are refused where a filter driver or submodule
// would run helpers.
//
// Execution and confinement: every external program runs under the OS
// sandbox of package [planbridge/sandbox] (Landlock, bwrap, seccomp, no
// capabilities, resource limits and a pids cgroup as root), always, root
// or not; a layer this machine lacks is skipped and [Confinement] says so.
// The interpreter's own reads — redirections (< FILE), globs, cd, test —
// obey the same [sandbox.ReadPolicy] as the sandbox: the working
// directory, [Runner.ReadRoots] (work:// and configured roots), symlinks
// resolved step by step and the open confined beneath its root, never
// /proc, /sys, /dev (but /dev/null) or the process's own descriptors; a
// refused read stops the program with a reason. Glob expansion is bounded
// by [MaxGlobEntries] and by the context; when [Runner.Run] returns, every
// process it started has been killed and reaped and no goroutine it
// started is left.
package bashclass
