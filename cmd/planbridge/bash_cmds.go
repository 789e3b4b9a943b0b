package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"planbridge/bashclass"
)

// runClassify implements "planbridge classify [COMMAND]" and
// "planbridge classify --jsonl". The single form prints "allow" or
// "deny: REASON" and exits 0 or 1; with no COMMAND it reads the command
// from stdin. The --jsonl form reads one JSON string per line and writes
// one {"command","verdict","reason"} object per line, exiting 0 unless the
// input is malformed (2).
func runClassify(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("classify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonl := fs.Bool("jsonl", false, "read JSON-encoded commands, one per line, and write one JSON verdict per line")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: planbridge classify [COMMAND] | planbridge classify --jsonl < commands.jsonl")
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *jsonl {
		if fs.NArg() > 0 {
			fs.Usage()
			return 2
		}
		return classifyJSONL(stdin, stdout, stderr)
	}
	var src string
	switch fs.NArg() {
	case 0:
		b, err := io.ReadAll(io.LimitReader(stdin, bashclass.MaxCommandLen+1))
		if err != nil {
			fmt.Fprintln(stderr, "planbridge classify:", err)
			return 2
		}
		src = string(b)
	case 1:
		src = fs.Arg(0)
	default:
		fmt.Fprintln(stderr, "planbridge classify: pass the command as one argument (quote it)")
		return 2
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
	fs := flag.NewFlagSet("sh", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("C", "", "run in `DIR` instead of the current directory")
	timeout := fs.Duration("timeout", bashclass.DefaultTimeout, "stop the command after this long")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: planbridge sh [-C DIR] [-timeout D] COMMAND")
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r := &bashclass.Runner{Dir: *dir, Timeout: *timeout}
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
