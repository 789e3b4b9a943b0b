package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// newFlags returns the flag set of subcommand name; errors go to stderr.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // parseFlags prints help and usage itself
	return fs
}

// parseFlags parses args into fs as every subcommand does: -h or --help
// prints the subcommand's help on stdout (exit 0); a bad flag prints the
// error and the usage on stderr (exit 2). With interleaved, flags may also
// follow positional arguments ("--" ends them). It returns the positional
// arguments; ok is false when the caller must return code.
func parseFlags(fs *flag.FlagSet, args []string, interleaved bool, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	var err error
	if interleaved {
		pos, err = parseInterleaved(fs, args)
	} else if err = fs.Parse(args); err == nil {
		pos = fs.Args()
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(stdout, lookup(topName(fs)), fs)
		return nil, 0, false
	case err != nil:
		printUsage(stderr, lookup(topName(fs)), fs)
		return nil, 2, false
	}
	return pos, 0, true
}

// topName is the subcommand a flag set belongs to ("worktree add" → "worktree").
func topName(fs *flag.FlagSet) string {
	name, _, _ := strings.Cut(fs.Name(), " ")
	return name
}

// usageError reports a usage mistake: the message, then the usage, on
// stderr. It returns exit status 2.
func usageError(fs *flag.FlagSet, stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "planbridge %s: %s\n", topName(fs), msg)
	printUsage(stderr, lookup(topName(fs)), fs)
	return 2
}

// printUsage prints the synopsis and flags of sc.
func printUsage(w io.Writer, sc *subcommand, fs *flag.FlagSet) {
	if sc == nil {
		usage(w)
		return
	}
	fmt.Fprintln(w, strings.TrimSpace("usage: planbridge "+sc.name+" "+sc.synopsis))
	printDefaults(w, fs)
}

// printHelp prints the synopsis, description and flags of sc.
func printHelp(w io.Writer, sc *subcommand, fs *flag.FlagSet) {
	if sc == nil {
		usage(w)
		return
	}
	fmt.Fprintf(w, "%s\n\n%s\n", strings.TrimSpace("usage: planbridge "+sc.name+" "+sc.synopsis), sc.description)
	if fs == nil {
		// "planbridge help NAME": ask the subcommand for its flags.
		var flags strings.Builder
		sc.run([]string{"-h"}, strings.NewReader(""), &flags, io.Discard)
		if _, rest, ok := strings.Cut(flags.String(), "\nflags:\n"); ok {
			fmt.Fprint(w, "\nflags:\n"+rest)
		}
		return
	}
	printDefaults(w, fs)
}

func printDefaults(w io.Writer, fs *flag.FlagSet) {
	if fs == nil {
		return
	}
	has := false
	fs.VisitAll(func(*flag.Flag) { has = true })
	if !has {
		return
	}
	fmt.Fprint(w, "\nflags:\n")
	out := fs.Output()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(out)
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
