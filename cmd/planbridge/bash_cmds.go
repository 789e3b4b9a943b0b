package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"planbridge/bashclass"
	"planbridge/internal/store"
	"planbridge/sandbox"
)

// runClassify implements "planbridge classify COMMAND" and
// "planbridge classify --jsonl". The single form prints "allow" or
// "deny: REASON" and exits 0 or 1; COMMAND "-" reads the command from
// stdin, and no COMMAND is a usage error (2). The --jsonl form reads one JSON string per line and writes
// one {"command","verdict","reason"} object per line, exiting 0 unless the
// input is malformed (2).
func runClassify(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("classify", stderr)
	jsonl := fs.Bool("jsonl", false, "read JSON-encoded commands, one per line, and write one JSON verdict per line")
	pos, code, ok := parseFlags(fs, args, false, stdout, stderr)
	if !ok {
		return code
	}
	if *jsonl {
		if len(pos) > 0 {
			return usageError(fs, stderr, "--jsonl takes no COMMAND")
		}
		return classifyJSONL(stdin, stdout, stderr)
	}
	var src string
	switch {
	case len(pos) == 0:
		return usageError(fs, stderr, "no COMMAND given (use \"-\" to read it from stdin)")
	case len(pos) > 1:
		return usageError(fs, stderr, "pass the command as one argument (quote it)")
	case pos[0] == "-":
		b, err := io.ReadAll(io.LimitReader(stdin, bashclass.MaxCommandLen+1))
		if err != nil {
			fmt.Fprintln(stderr, "planbridge classify:", err)
			return 2
		}
		src = string(b)
	default:
		src = pos[0]
	}
	v := bashclass.Classify(src)
	if !v.Allow {
		fmt.Fprintln(stdout, "deny:", v.Reason)
		return 1
	}
	fmt.Fprintln(stdout, "allow")
	return 0
}

// classifyLine is one output line of "classify --jsonl".
type classifyLine struct {
	Command string `json:"command"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
}

func classifyJSONL(stdin io.Reader, stdout, stderr io.Writer) int {
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 8*bashclass.MaxCommandLen)
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var cmd string
		if err := json.Unmarshal(line, &cmd); err != nil {
			fmt.Fprintf(stderr, "planbridge classify: line %d: not a JSON string: %v\n", n, err)
			return 2
		}
		out := classifyLine{Command: cmd, Verdict: "allow"}
		if v := bashclass.Classify(cmd); !v.Allow {
			out.Verdict, out.Reason = "deny", v.Reason
		}
		if err := enc.Encode(out); err != nil {
			fmt.Fprintln(stderr, "planbridge classify:", err)
			return 2
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(stderr, "planbridge classify:", err)
		return 2
	}
	return 0
}

// runSh implements "planbridge sh [-C DIR] COMMAND": it runs COMMAND
// through the Plan read-only runner, prints its output and exits with its
// status, or with 126 and the reason on stderr when the policy refuses it.
func runSh(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("sh", stderr)
	dir := fs.String("C", "", "run in `DIR` instead of the current directory")
	timeout := fs.Duration("timeout", bashclass.DefaultTimeout, "stop the command after this long")
	var readRoots rootList
	fs.Var(&readRoots, "read-root", "a directory outside DIR that the command may also read (repeatable)")
	pos, code, ok := parseFlags(fs, args, false, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "pass the command as one argument (quote it)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r := &bashclass.Runner{Dir: *dir, Timeout: *timeout, ReadRoots: readRoots,
		Hidden: []string{absOr(store.DefaultDir(os.Getenv))}}
	res, err := r.Run(ctx, fs.Arg(0))
	stdout.Write(res.Output)
	if res.Refused {
		fmt.Fprintln(stderr, "planbridge sh: refused:", res.Reason)
		return bashclass.ExitRefused
	}
	if err != nil {
		fmt.Fprintln(stderr, "planbridge sh:", err)
		if errors.Is(err, bashclass.ErrTimeout) {
			return res.ExitCode
		}
		return 1
	}
	return res.ExitCode
}

// runSandbox implements "planbridge sandbox [-C DIR] [--read-root DIR]...
// -- CMD [ARGS...]": it runs any program, without the classifier, under
// exactly the OS confinement of Plan's shell (reads only DIR, the read
// roots and the system's program directories; no writes, network, other
// processes or new privileges; resource limits), with this process's
// stdin, its output through pipes and the shell's scrubbed environment.
// It exits with the program's status (128+N for signal N), 125 when the
// sandbox could not be set up, 2 on usage errors.
func runSandbox(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("sandbox", stderr)
	dir := fs.String("C", "", "run in and confine reads to `DIR` (default the current directory)")
	var readRoots rootList
	fs.Var(&readRoots, "read-root", "a directory outside DIR that the program may also read (repeatable)")
	pos, code, ok := parseFlags(fs, args, false, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return usageError(fs, stderr, "name the command to run (after --)")
	}
	ws := *dir
	if ws == "" {
		ws = "."
	}
	ws, err := filepath.Abs(ws)
	if err != nil {
		fmt.Fprintln(stderr, "planbridge sandbox:", err)
		return 2
	}
	sb, err := sandbox.New(sandbox.Config{ReadRoots: append([]string{ws}, readRoots...),
		Hidden: []string{absOr(store.DefaultDir(os.Getenv))}})
	if err != nil {
		fmt.Fprintln(stderr, "planbridge sandbox:", err)
		return sandbox.ExitSetup
	}
	if l := sb.Layers(); l.None() {
		fmt.Fprintln(stderr, "planbridge sandbox: warning:", l.Summary())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cmd, err := sb.Command(ctx, ws, pos, bashclass.CommandEnv(os.Environ(), nil))
	if err != nil {
		fmt.Fprintln(stderr, "planbridge sandbox:", err)
		return sandbox.ExitSetup
	}
	// Output goes through pipes: the program may not write files (file
	// size limit 0), and this process's stdout may be one.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, struct{ io.Writer }{stdout}, struct{ io.Writer }{stderr}
	err = sandbox.Run(cmd)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()) // as a shell reports it
		}
		return ee.ExitCode()
	}
	fmt.Fprintln(stderr, "planbridge sandbox:", err)
	return sandbox.ExitSetup
}
