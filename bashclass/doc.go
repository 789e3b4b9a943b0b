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
//   - Commands: an allow-list of read-only programs, some with refused
//     options (find -delete/-exec…, sort -o, rg --pre, xxd -r, …) checked
//     in every spelling, and git with a whitelist of global options and
//     read-only subcommands.
//
// [Classify] gives the static verdict. [Runner] executes: its handlers
// re-apply the argv policy to the expanded argv of every command (so a glob
// that expands to an option is refused at execution), let redirections
// write only /dev/null, scrub the environment, launch git with options that
// disable helper programs, and refuse git status/diff/blame where a filter
// driver or submodule would run helpers.
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
