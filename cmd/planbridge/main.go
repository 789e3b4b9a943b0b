// Command planbridge is the Plan-mode backend for the planbridge Emacs
// package. With no subcommand it serves JSON-RPC on stdio.
package main

import (
	"fmt"
	"io"
	"os"

	"planbridge/sandbox"
)

// version is the release version; overridden with -ldflags at release time.
var version = "0.1.0-dev"

// subcommand is one entry of the command line: its name, its synopsis
// (after "planbridge NAME"), a one-line summary for the top-level help, a
// description for its own --help, and its entry point, which parses its own
// flags (see [parseFlags]) and returns the process exit status.
type subcommand struct {
	name, synopsis, summary, description string
	run                                  func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// subcommands returns the command table, in the order the help lists it.
// To add a subcommand, add an entry here. (A function, not a variable: the
// entry points look the table up for their help.)
func subcommands() []subcommand {
	return []subcommand{
		{"serve", "[FLAGS]", "serve JSON-RPC on stdio (the default; what Emacs runs)",
			"Serve JSON-RPC 2.0 with Content-Length framing on stdin/stdout, as the planbridge Emacs package\n" +
				"expects. Logs go to stderr or --log, never stdout. It takes flags only.", runServe},
		{"demo", "[--keep]", "run a scripted Plan session end to end in a temporary repository",
			"Replay a scripted conversation (no model is contacted) against a temporary git repository:\n" +
				"plan, propose, accept, implement. The temporary directory is removed unless --keep.", runDemo},
		{"doctor", "[FLAGS]", "report state dir, database, git, sandbox layers and engine configuration",
			"Check what planbridge needs and print one line per check. It reads the state directory and\n" +
				"database if they exist and never creates them. Exit status 1 if a check fails.", runDoctor},
		{"classify", "COMMAND | classify - | classify --jsonl", "classify a shell command as read-only or not",
			"Print \"allow\" (exit 0) or \"deny: REASON\" (exit 1) for COMMAND, as Plan's Bash policy decides.\n" +
				"\"-\" reads the command from stdin; --jsonl reads one JSON string per line and writes one\n" +
				"{command, verdict, reason} object per line.", runClassify},
		{"sh", "[-C DIR] [-timeout D] [--read-root DIR]... COMMAND", "run a command through the Plan read-only runner",
			"Run COMMAND through the hardened read-only runner Plan uses. Exit status is the command's,\n" +
				"or 126 with the reason on stderr when the policy refuses it. Programs run under the OS sandbox\n" +
				"(see sandbox); reads are confined to DIR and the --read-root directories.", runSh},
		{"sandbox", "[-C DIR] [--read-root DIR]... -- CMD [ARGS...]", "run any command under Plan's OS confinement",
			"Run CMD, without the classifier, under exactly the OS confinement of Plan's shell: reads only\n" +
				"DIR (default \".\"), the --read-root directories and the system's program directories; no\n" +
				"writes but /dev/null, no network, no other processes, no capabilities; resource limits. Exit\n" +
				"status is CMD's, 125 when the sandbox could not be set up. planbridge doctor lists the layers.", runSandbox},
		{"extract", "< RESPONSE", "extract a <proposed_plan> from a response on stdin",
			"Read one assistant response on stdin and print the extracted proposal, its diagnostics and\n" +
				"the visible text as one JSON document.", runExtract},
		{"status", "[--porcelain] [DIR]", "print the status of a git checkout (like git status --porcelain)",
			"Print the status of the git checkout containing DIR (default \".\"), computed without running\n" +
				"git. With --porcelain the output is byte-identical to\n" +
				"  git status --porcelain --untracked-files=all --no-renames\n" +
				"(a rename shows as a deletion and an addition).", runStatus},
		{"worktree", "add --branch B [--path P] [REPO]", "create a linked git worktree on a new branch",
			"Create a linked worktree on a new branch B from HEAD, like git worktree add -b B P HEAD, without\n" +
				"running any hook or filter. P defaults to .worktrees/<last component of B>.", runWorktree},
		{"relay", "[--listen ADDR] [--tls-cert FILE --tls-key FILE]", "run a content-blind relay for share links",
			"Relay share links between a planbridge that connects out and browsers, forwarding frames sealed\n" +
				"end to end (docs/relay.md). It holds no plaintext, no keys and nothing across a restart.", runRelay},
		{"plan", "[--engine E] [--script F] [--json] [-C DIR] [--state-dir D] PROMPT", "run one headless Plan turn and print its proposal (for CI)",
			"Run one Plan turn on PROMPT in DIR (default \".\") with no Emacs attached: the same gate, read-only\n" +
				"shell and sandbox as serve, a private temporary state directory unless --state-dir, permission asks\n" +
				"denied. Print the proposal's Markdown (or, with --json, {proposed, title, body, hash, diagnostics,\n" +
				"warnings, ...}). Nothing can be accepted or implemented in this mode. Exit status 0 with a\n" +
				"proposal, 3 when the turn ended without one, 1 on errors.", runPlan},
		{"plan-trailer", "[--state-dir D] [-C DIR] [SESSION]", "print the Plan: commit trailer of an accepted plan",
			"Print \"Plan: <title> (sha256:<first 12 hex digits>)\" naming the accepted plan of SESSION, or of\n" +
				"the most recently updated session whose workspace holds DIR (default \".\"), for a commit\n" +
				"message. It reads the state and changes nothing. Exit status 1 when there is no accepted plan.", runPlanTrailer},
		{"report", "[--json] [SESSION]", "print the implementation report of a session",
			"Print the stored implementation report of SESSION (default: the session whose report was built\n" +
				"last): per step its status and files, the files changed outside the plan, and the plan's\n" +
				"Validation commands with whether they ran. It reads the state directory only.", runReport},
		{"version", "", "print the version", "Print the version of planbridge.", runVersion},
	}
}

func lookup(name string) *subcommand {
	for _, sc := range subcommands() {
		if sc.name == name {
			return &sc
		}
	}
	return nil
}

func main() {
	// Started as the sandbox launcher, this confines itself and execs the
	// sandboxed program; it never returns then.
	sandbox.Main()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, isTerminal(os.Stdin)))
}

// run dispatches a command line. A bare "planbridge" whose stdin is a
// terminal explains itself instead of waiting for JSON-RPC frames nobody
// will type; with stdin a pipe (Emacs) it serves.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, tty bool) int {
	if len(args) == 0 {
		if tty {
			fmt.Fprint(stderr, bareTerminalNote)
			return 2
		}
		return runServe(nil, stdin, stdout, stderr)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && args[0] == "help" {
			if sc := lookup(args[1]); sc != nil {
				printHelp(stdout, sc, nil)
				return 0
			}
		}
		usage(stdout)
		return 0
	case "-version", "--version":
		return runVersion(nil, stdin, stdout, stderr)
	}
	name := args[0]
	if name[0] == '-' {
		// Flags without a subcommand are serve's.
		return runServe(args, stdin, stdout, stderr)
	}
	sc := lookup(name)
	if sc == nil {
		fmt.Fprintf(stderr, "planbridge: unknown subcommand %q\n\n", name)
		usage(stderr)
		return 2
	}
	return sc.run(args[1:], stdin, stdout, stderr)
}

const bareTerminalNote = `planbridge is a JSON-RPC server for the planbridge Emacs package: it speaks
JSON-RPC 2.0 with Content-Length framing on stdin/stdout, so typing at it does nothing useful.

  From Emacs:     M-x planbridge (the package starts "planbridge serve" itself)
  Try it:         planbridge demo
  Check set-up:   planbridge doctor
  All commands:   planbridge --help
  Serve anyway:   planbridge serve
`

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: planbridge [SUBCOMMAND] [FLAGS]\n\nPlan mode for a coding agent, as a JSON-RPC backend for Emacs.\n\nsubcommands:\n")
	for _, sc := range subcommands() {
		fmt.Fprintf(w, "  %-12s  %s\n", sc.name, sc.summary)
	}
	fmt.Fprint(w, "\nRun \"planbridge SUBCOMMAND --help\" for its flags. --version prints the version.\n")
}

func runVersion(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("version", stderr)
	if _, code, ok := parseFlags(fs, args, false, stdout, stderr); !ok {
		return code
	} else if fs.NArg() > 0 {
		return usageError(fs, stderr, "version takes no arguments")
	}
	fmt.Fprintf(stdout, "planbridge %s\n", version)
	return 0
}
