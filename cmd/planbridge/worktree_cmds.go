package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"

	"planbridge/worktree"
)

// parseInterleaved parses flags that may come before or after positional
// arguments and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// runStatus implements "planbridge status [--porcelain] [DIR]": the entries
// of `git status --porcelain --untracked-files=all --no-renames` for the
// checkout containing DIR (default "."), in git's order and byte for byte as git prints them, computed by
// [worktree.Repo.Status] without running any repository helper. Without
// --porcelain a branch line comes first and a clean checkout says so. Exit
// status 0 on success, 1 when the status cannot be computed, 2 on usage
// errors.
func runStatus(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("status", stderr)
	porcelain := fs.Bool("porcelain", false, "print only the XY PATH lines, like git status --porcelain")
	pos, code, ok := parseFlags(fs, args, true, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageError(fs, stderr, "at most one DIR")
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := worktree.Open(dir)
	if err != nil {
		fmt.Fprintln(stderr, "planbridge status:", err)
		return 1
	}
	defer r.Close()
	entries, err := r.Status(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "planbridge status:", err)
		return 1
	}
	if !*porcelain {
		branch, hash, err := r.Head()
		switch {
		case err != nil:
			fmt.Fprintln(stderr, "planbridge status:", err)
			return 1
		case branch != "" && hash == "":
			fmt.Fprintf(stdout, "On branch %s (no commits yet)\n", branch)
		case branch != "":
			fmt.Fprintf(stdout, "On branch %s\n", branch)
		default:
			fmt.Fprintf(stdout, "HEAD detached at %.7s\n", hash)
		}
		if len(entries) == 0 {
			fmt.Fprintln(stdout, "nothing to commit, working tree clean")
			return 0
		}
	}
	for _, e := range entries {
		fmt.Fprintln(stdout, e.Porcelain())
	}
	return 0
}

// runWorktree implements "planbridge worktree add --branch B [--path P]
// [REPO]": like `git worktree add -b B P HEAD` in the checkout containing
// REPO (default "."), through [worktree.AddWorktree], so no hook or filter
// runs. P defaults to .worktrees/<last component of B> under the checkout's
// root; a relative P is relative to the current directory, as with git. It
// prints the new worktree's path. Exit status 0 on success, 1 when git
// state refuses or the fork fails (the message names what is in the way), 2 on
// usage errors.
func runWorktree(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("worktree add", stderr)
	branch := fs.String("branch", "", "name of the new branch (required)")
	dest := fs.String("path", "", "worktree directory (default .worktrees/<branch leaf> under the repository root)")
	if len(args) == 0 || (args[0] != "add" && args[0] != "-h" && args[0] != "-help" && args[0] != "--help") {
		return usageError(fs, stderr, "the only action is add")
	}
	if args[0] == "add" {
		args = args[1:]
	}
	pos, code, ok := parseFlags(fs, args, true, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageError(fs, stderr, "at most one REPO")
	}
	if *branch == "" {
		return usageError(fs, stderr, "--branch is required")
	}
	repo := "."
	if len(pos) == 1 {
		repo = pos[0]
	}
	if err := worktree.ValidBranchName(*branch); err != nil {
		fmt.Fprintln(stderr, "planbridge worktree add:", err)
		return 2
	}
	p := *dest
	if p == "" {
		r, err := worktree.Open(repo)
		if err != nil {
			fmt.Fprintln(stderr, "planbridge worktree add:", err)
			return 1
		}
		r.Close()
		p = worktree.DefaultPath(r.Root, *branch)
	} else {
		abs, err := filepath.Abs(p)
		if err != nil {
			fmt.Fprintln(stderr, "planbridge worktree add:", err)
			return 1
		}
		p = abs
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	added, err := worktree.AddWorktree(ctx, repo, p, *branch)
	if err != nil {
		fmt.Fprintln(stderr, "planbridge worktree add:", err)
		if errors.Is(err, worktree.ErrInvalidBranchName) {
			return 2
		}
		return 1
	}
	if *dest == "" {
		// The default place, .worktrees/: keep it out of `git status`.
		if _, err := worktree.ExcludeForks(repo); err != nil {
			fmt.Fprintln(stderr, "planbridge worktree add: warning:", err)
		}
	}
	fmt.Fprintln(stdout, added.Path)
	return 0
}
