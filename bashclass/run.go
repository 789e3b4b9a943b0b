package bashclass

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"

	"planbridge/sandbox"
)

// Run classifies src and, when it is allowed, executes the same parsed
// program in r.Dir with stdin from /dev/null. A refusal is not an error: it
// is reported in the Result. The error is non-nil when ctx is cancelled
// (ctx.Err()), when the timeout fires (wrapping [ErrTimeout]) or when the
// interpreter fails; the Result then still holds the output so far. When
// Run returns, every program it started has been killed and reaped and no
// goroutine it started is left: in-process work (globs, reads) checks the
// context and a glob budget ([MaxGlobEntries]).
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
	x := &executor{env: scrubEnv(os.Environ(), r.Env)}
	if x.policy, err = sandbox.NewReadPolicy(r.readRoots(dir), r.Hidden); err != nil {
		return Result{}, err
	}
	if !r.noConfine {
		if x.sb, err = sandbox.New(sandbox.Config{ReadRoots: x.policy.Roots(), Hidden: x.policy.Hidden(), Limits: r.Limits}); err != nil {
			return Result{}, err
		}
	}

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

	ir, err := interp.New(
		interp.Dir(dir),
		interp.Env(expand.ListEnviron(x.env...)),
		interp.StdIO(devnull, out, out),
		interp.CallHandler(x.call),
		interp.ExecHandlers(x.middleware),
		interp.OpenHandler(x.open),
		interp.ReadDirHandler2(x.readDir),
		interp.StatHandler(x.stat),
		interp.AccessHandler(x.access),
	)
	if err != nil {
		return Result{}, err
	}
	// Every handler honours runCtx (external programs are killed, reads
	// and globs stop), so waiting here is bounded and nothing the
	// interpreter started outlives Run.
	runErr := ir.Run(runCtx, file)

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
	env    []string
	policy *sandbox.ReadPolicy
	sb     *sandbox.Sandbox // nil only in tests of the policy alone
	globs  atomic.Int64     // directory entries read for globs

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
	if x.refusal() != "" {
		return nil, errRefused // an in-process read or glob was refused
	}
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
	default:
		argv = launchArgv(name, argv)
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

// command builds the process for path argv in dir: under the sandbox (its
// own process group and confinement, the whole tree killed when ctx is
// done), or, in tests of the policy alone, directly in its own process
// group. Finish it with [waitStatus].
func (x *executor) command(ctx context.Context, dir, path string, argv, env []string) *exec.Cmd {
	if x.sb != nil {
		// The launcher finds the name in the same fixed PATH, so the
		// program sees its usual argv[0].
		cmd, err := x.sb.Command(ctx, dir, append([]string{filepath.Base(path)}, argv...), env)
		if err != nil {
			// Fail closed: Start reports err and nothing runs.
			cmd = &exec.Cmd{Path: path, Args: append([]string{path}, argv...), Err: err}
		}
		return cmd
	}
	cmd := exec.CommandContext(ctx, path, argv...)
	cmd.Args[0] = filepath.Base(path)
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
	err := sandbox.Run(cmd)
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
		if ee.ExitCode() == sandbox.ExitSetup {
			return interp.ExitStatus(ExitRefused) // the sandbox could not be set up; stderr says why
		}
		return interp.ExitStatus(ee.ExitCode())
	default:
		fmt.Fprintln(cmd.Stderr, err)
		return interp.ExitStatus(127)
	}
}

// open lets redirections write only /dev/null and read what the read
// policy allows (symlinks resolved, the open itself confined beneath the
// root); anything else stops the program with a refusal.
func (x *executor) open(ctx context.Context, path string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	if path == os.DevNull {
		return os.OpenFile(path, flag, perm)
	}
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_TRUNC) != 0 {
		return nil, x.refuse(fmt.Sprintf("opening %q for writing is not allowed", path))
	}
	f, err := x.policy.Open(interp.HandlerCtx(ctx).Dir, path)
	if errors.Is(err, sandbox.ErrOutsideRoots) {
		return nil, x.refuse(fmt.Sprintf("reading %q is not allowed: %s", path, readPolicyText))
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// readPolicyText explains a refused read.
const readPolicyText = "only the workspace, work:// and configured read roots may be read (never /proc, /sys or /dev)"

// MaxGlobEntries bounds the directory entries one Run may read to expand
// globs; past it the program is refused.
const MaxGlobEntries = 200_000

// readDir lists directories for globs: inside the read policy only,
// within the glob budget, and not after the run was stopped.
func (x *executor) readDir(ctx context.Context, path string) ([]fs.DirEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := x.policy.Open(interp.HandlerCtx(ctx).Dir, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var all []fs.DirEntry
	for {
		ents, err := f.ReadDir(1024)
		all = append(all, ents...)
		if x.globs.Add(int64(len(ents))) > MaxGlobEntries {
			return nil, x.refuse(fmt.Sprintf("glob expansion read more than %d directory entries", MaxGlobEntries))
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err != nil || len(ents) == 0 {
			break
		}
	}
	slices.SortFunc(all, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return all, nil
}

// stat serves cd, test and globs: inside the read policy only.
func (x *executor) stat(ctx context.Context, path string, follow bool) (fs.FileInfo, error) {
	return x.policy.Stat(interp.HandlerCtx(ctx).Dir, path, follow)
}

// access serves test -r/-w/-x: inside the read policy only, and nothing
// is writable.
func (x *executor) access(ctx context.Context, path string, mode interp.AccessMode) error {
	real, err := x.policy.Resolve(interp.HandlerCtx(ctx).Dir, path)
	if err != nil {
		return err
	}
	if mode&interp.AccessWrite != 0 && real != os.DevNull {
		return &fs.PathError{Op: "access", Path: path, Err: syscall.EROFS}
	}
	return unix.Access(real, uint32(mode))
}
