package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"planbridge/bashclass"
)

// BashShell is the [Shell] behind the bash tool: classification and the
// read-only runner come from [bashclass]; unrestricted runs (outside Plan,
// once the gate or the person allowed them) use bash itself.
type BashShell struct {
	Timeout   time.Duration // default bashclass.DefaultTimeout
	MaxOutput int           // default bashclass.DefaultMaxOutput
}

// Classify implements [Shell].
func (b BashShell) Classify(src string) (bool, string) {
	v := bashclass.Classify(src)
	return v.Allow, v.Reason
}

// RunReadOnly implements [Shell]: the same parsed program the classifier
// allowed, executed by the hardened runner under the OS sandbox, reading
// only the workspace, work:// and the configured read roots.
func (b BashShell) RunReadOnly(ctx context.Context, roots Roots, src string) (string, int, bool, string, error) {
	r := bashclass.Runner{Dir: roots.Workspace, ReadRoots: roots.ReadPolicyRoots()[1:], Hidden: roots.Hidden, Timeout: b.Timeout, MaxOutput: b.MaxOutput}
	res, err := r.Run(ctx, src)
	if err != nil {
		return "", 0, false, "", err
	}
	return string(res.Output), res.ExitCode, res.Refused, res.Reason, nil
}

// Confinement describes the OS layers that confine the read-only runner
// here; it starts with "NO OS CONFINEMENT" when none confines file access.
func (b BashShell) Confinement() string { return bashclass.Confinement() }

// Run implements [Shell] for commands the gate let through outside Plan.
func (b BashShell) Run(ctx context.Context, dir, src string) (string, int, error) {
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = bashclass.DefaultTimeout
	}
	max := b.MaxOutput
	if max <= 0 {
		max = bashclass.DefaultMaxOutput
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command("bash", "-c", src)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the whole group, children too
		<-done
		err = fmt.Errorf("command stopped: %w", ctx.Err())
	}
	s := out.String()
	if len(s) > max {
		s = s[:max] + fmt.Sprintf("\n[output truncated at %d bytes]", max)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return s, ee.ExitCode(), nil
	}
	if err != nil {
		return s, -1, err
	}
	return s, 0, nil
}
