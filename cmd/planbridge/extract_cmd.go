package main

import (
	"fmt"
	"io"
)

// Placeholder until the proposal subcommand lands.
func runExtract(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "planbridge extract: not built yet")
	return 2
}
