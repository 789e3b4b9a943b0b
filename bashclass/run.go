package bashclass

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
)

// Run classifies src and, when it is allowed, executes the same parsed
// program in r.Dir with stdin from /dev/null. A refusal is not an error: it
// is reported in the Result. The error is non-nil when ctx is cancelled
// (ctx.Err()), when the timeout fires (wrapping [ErrTimeout]) or when the
// interpreter fails; the Result then still holds the output so far. Run
// returns at most about two seconds after the timeout even if in-process
// work (a glob over a huge tree) has not noticed it yet; that work is then
// abandoned to finish in the background.
func (r *Runner) Run(ctx context.Context, src string) (Result, error) {
	file, v := parseAndClassify(src)
	if !v.Allow {
		return Result{ExitCode: ExitRefused, Refused: true, Reason: v.Reason}, nil
	}
	timeout := orDefault(r.Timeout, DefaultTimeout)
	maxOut := orDefault(r.MaxOutput, DefaultMaxOutput)
	dir := r.Dir
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return Result{}, err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Result{}, err
	}
	r.probeOnce.Do(func() {
		if !r.noConfine {
			r.bwrapPath, _ = probeBwrap()
		}
	})

	tctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	defer cancelTimeout()
	runCtx, stop := context.WithCancel(tctx)
	defer stop()

	out := &cappedBuffer{max: maxOut, onFull: stop}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return Result{}, err
	}
	defer devnull.Close()

	x := &executor{env: scrubEnv(os.Environ(), r.Env), bwrap: r.bwrapPath}
	ir, err := interp.New(
		interp.Dir(dir),
		interp.Env(expand.ListEnviron(x.env...)),
		interp.StdIO(devnull, out, out),
		interp.CallHandler(x.call),
		interp.ExecHandlers(x.middleware),
		interp.OpenHandler(x.open),
	)
	if err != nil {
		return Result{}, err
	}
	done := make(chan error, 1)
	go func() { done <- ir.Run(runCtx, file) }()
	var runErr error
	select {
	case runErr = <-done:
	case <-runCtx.Done():
		// External programs are killed by now; in-process work notices the
		// cancellation between commands. Do not wait without bound for a
		// pathological in-process expansion.
		select {
		case runErr = <-done:
		case <-time.After(2 * time.Second):
			runErr = runCtx.Err()
		}
	}

	res := Result{}
	res.Output, res.Truncated = out.result()
	if reason := x.refusal(); reason != "" {
		res.Refused, res.Reason, res.ExitCode = true, reason, ExitRefused
		return res, nil
	}
	var status interp.ExitStatus
	if errors.As(runErr, &status) {
		res.ExitCode = int(status)
	} else if runErr != nil {
		res.ExitCode = 1
	}
	switch {
	case ctx.Err() != nil:
		return res, ctx.Err()
	case res.Truncated:
		if runErr != nil && !isExit(runErr) {
			res.ExitCode = 141 // as if the reader had closed the pipe
		}
		return res, nil
	case tctx.Err() != nil:
		res.ExitCode = ExitTimeout
		res.Output = append(res.Output, fmt.Sprintf("%s[timed out after %s]\n", sep(res.Output), timeout)...)
		return res, fmt.Errorf("%w after %s", ErrTimeout, timeout)
	case runErr != nil && !isExit(runErr):
		return res, runErr
	}
	return res, nil
}

func isExit(err error) bool {
	var status interp.ExitStatus
	return errors.As(err, &status)
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// executor holds the per-Run state the interpreter handlers share.
// Pipelines run handlers concurrently; mu guards refused.
type executor struct {
	env   []string
	bwrap string

	mu      sync.Mutex
	refused string // first refusal reason
}

func (x *executor) refuse(reason string) error {
	x.mu.Lock()
	if x.refused == "" {
		x.refused = reason
	}
	x.mu.Unlock()
	return errRefused
}

func (x *executor) refusal() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.refused
}

// call re-checks every simple command, builtins included, on its expanded
// argv.
func (x *executor) call(ctx context.Context, args []string) ([]string, error) {
	if reason := checkArgv(args); reason != "" {
		return nil, x.refuse(reason)
	}
	return args, nil
}

// middleware is the only exec handler: it re-checks the argv and runs the
// program itself, never falling through to the interpreter's default.
func (x *executor) middleware(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(ctx context.Context, args []string) error {
		if reason := checkArgv(args); reason != "" {
			return x.refuse(reason)
		}
		return x.exec(ctx, args)
	}
}

func (x *executor) exec(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	name, argv, env := args[0], args[1:], x.env
	switch name {
	case "git":
		call, reason := parseGit(argv)
		if reason != "" {
			return x.refuse(reason)
		}
		env = append(slices.Clip(env), gitEnv...)
		if call.needsHelperCheck() {
			if reason := x.gitHelpers(ctx, hc.Dir, env, call); reason != "" {
				return x.refuse(reason)
			}
		}
		argv = call.launchArgs()
	case "rg":
		argv = append([]string{"--no-config"}, argv...)
	}
	path, err := lookPath(name)
	if err != nil {
		fmt.Fprintf(hc.Stderr, "%s: command not found\n", name)
		return interp.ExitStatus(127)
	}
	cmd := x.command(ctx, hc.Dir, path, argv, env)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = hc.Stdin, hc.Stdout, hc.Stderr
	return waitStatus(ctx, cmd)
}

// command builds the process for path argv in dir: in its own process
// group, killed as a group when ctx is done, and inside bwrap when enabled.
func (x *executor) command(ctx context.Context, dir, path string, argv, env []string) *exec.Cmd {
	var cmd *exec.Cmd
	if x.bwrap != "" {
		// bwrap resolves the bare name in the same fixed PATH, so the
		// program sees its usual argv[0].
		full := append(bwrapArgs(dir), filepath.Base(path))
		cmd = exec.CommandContext(ctx, x.bwrap, append(full, argv...)...)
		env = append(slices.Clip(env), sandboxTmp)
	} else {
		cmd = exec.CommandContext(ctx, path, argv...)
		cmd.Args[0] = filepath.Base(path)
	}
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = time.Second
	return cmd
}

// waitStatus runs cmd and maps its end to the interpreter's conventions.
func waitStatus(ctx context.Context, cmd *exec.Cmd) error {
	err := cmd.Start()
	if err == nil {
		err = cmd.Wait()
	}
	var ee *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		return nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return interp.ExitStatus(128 + int(ws.Signal()))
		}
		return interp.ExitStatus(ee.ExitCode())
	default:
		fmt.Fprintln(cmd.Stderr, err)
		return interp.ExitStatus(127)
	}
}

// open lets redirections read any file and write only /dev/null.
func (x *executor) open(ctx context.Context, path string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	if path == os.DevNull {
		return os.OpenFile(path, flag, perm)
	}
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_TRUNC) != 0 {
		return nil, x.refuse(fmt.Sprintf("opening %q for writing is not allowed", path))
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(interp.HandlerCtx(ctx).Dir, path)
	}
	// O_NONBLOCK keeps a FIFO without writers from blocking the open.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.SetNonblock(int(f.Fd()), false); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
