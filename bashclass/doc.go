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
// disable helper programs, refuse git status/diff/blame where a filter
// driver or submodule would run helpers, and confine external programs with
// bwrap when it works here ([Confinement]).
package bashclass
