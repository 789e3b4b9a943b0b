// Command planbridge is the Plan-mode backend for the planbridge Emacs
// package. With no subcommand it serves JSON-RPC on stdio.
package main

import (
	"fmt"
	"io"
	"os"
)

// version is the release version; overridden with -ldflags at release time.
var version = "0.1.0-dev"

// subcommands maps a subcommand name to its entry point. Each entry point
// parses its own flags and returns the process exit status.
var subcommands = map[string]func(args []string, stdin io.Reader, stdout, stderr io.Writer) int{
	"serve":    runServe,
	"version":  runVersion,
	"doctor":   runDoctor,
	"demo":     runDemo,
	"classify": runClassify,
	"sh":       runSh,
	"extract":  runExtract,
	"status":   runStatus,
	"worktree": runWorktree,
}

func main() {
	args := os.Args[1:]
	name := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	if name == "help" {
		usage(os.Stdout)
		return
	}
	run, ok := subcommands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "planbridge: unknown subcommand %q\n", name)
		usage(os.Stderr)
		os.Exit(2)
	}
	os.Exit(run(args, os.Stdin, os.Stdout, os.Stderr))
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: planbridge [SUBCOMMAND] [FLAGS]

subcommands:
  serve      serve JSON-RPC on stdio (default)
  demo       run a scripted Plan session end to end in a temporary repository
  doctor     report state dir, database, git, bwrap and engine configuration
  classify   classify a shell command as read-only or not
  sh         run a command through the Plan read-only runner
  extract    extract a <proposed_plan> from a response on stdin
  status     print the status of a git checkout (like git status --porcelain)
  worktree   create a linked git worktree (worktree add --branch B [--path P] [REPO])
  version    print the version
`)
}

func runVersion(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintf(stdout, "planbridge %s\n", version)
	return 0
}
