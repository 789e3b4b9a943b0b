package main

import (
	"fmt"
	"io"
)

// Placeholder until the bashclass subcommands land.
func runClassify(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "planbridge classify: not built yet")
	return 2
}

func runSh(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "planbridge sh: not built yet")
	return 2
}
