package main

import (
	"fmt"
	"io"
)

func runServe(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "planbridge serve: not built yet")
	return 2
}

func runDoctor(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "planbridge doctor: not built yet")
	return 2
}

func runDemo(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "planbridge demo: not built yet")
	return 2
}
