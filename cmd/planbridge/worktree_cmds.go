package main

import (
	"fmt"
	"io"
)

// Placeholder until the worktree subcommands land.
func runStatus(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "planbridge status: not built yet")
	return 2
}

func runWorktree(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "planbridge worktree: not built yet")
	return 2
}
