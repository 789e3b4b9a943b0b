package bashclass

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"planbridge/sandbox"
)

// Defaults for [Runner] fields left zero.
const (
	DefaultTimeout   = 30 * time.Second
	DefaultMaxOutput = 1 << 20
)

// ExitRefused is the exit code of a command the policy refused, before or
// during execution (as a shell reports a command it cannot execute).
const ExitRefused = 126

// ExitTimeout is the exit code reported when the timeout stopped a command.
const ExitTimeout = 124

// ErrTimeout is returned, wrapped, by [Runner.Run] when the command was
// stopped by the runner's timeout. The partial [Result] is still returned.
var ErrTimeout = errors.New("bashclass: command timed out")

// errRefused halts the interpreter when a command is refused at execution;
// the reason is recorded in the run state.
var errRefused = errors.New("bashclass: refused at execution")

// fixedPath is the only PATH commands are looked up in and run with.
const fixedPath = "/usr/local/bin:/usr/bin:/bin"

// Runner runs commands that [Classify] allows, without letting them write.
//
// It executes the parsed program in-process with mvdan.cc/sh/v3/interp.
// Before every simple command runs, builtin or external, the argv policy is
// applied again to the fully expanded argv; a refusal stops the program
// with [Result.Refused] set. Redirections write only /dev/null and read,
// like globs, cd and test, only what the read policy allows (Dir and
// ReadRoots). External programs get a fixed PATH and a scrubbed
// environment and run under the OS sandbox of [sandbox.Sandbox] (see
// [Confinement]), the whole tree killed on timeout; git runs with
// helper-disabling options, rg with --no-config.
//
// A Runner must not be copied after first use. Run is safe for concurrent
// use.
type Runner struct {
	// Dir is the working directory; empty means the process's.
	Dir string
	// Timeout bounds one Run; zero means [DefaultTimeout].
	Timeout time.Duration
	// MaxOutput bounds the bytes of output kept; zero means
	// [DefaultMaxOutput]. When it is exceeded the command is stopped.
	MaxOutput int
	// Env holds extra NAME=value entries for commands. They pass the same
	// scrub as the inherited environment, and cannot set PATH.
	Env []string

	// ReadRoots are directories beyond Dir that commands and in-process
	// opens may read: work:// and the read roots a person configured.
	ReadRoots []string
	// Hidden are paths beneath a read root that must not be read.
	Hidden []string
	// Limits are the sandbox's resource limits; zero fields take
	// [sandbox.DefaultLimits].
	Limits sandbox.Limits

	// noConfine runs programs without the sandbox; tests use it to show
	// the policy holds alone. Nothing else can turn the sandbox off.
	noConfine bool
}

// readRoots is what Run may read: the working directory and ReadRoots.
func (r *Runner) readRoots(dir string) []string {
	return append([]string{dir}, r.ReadRoots...)
}

// Result is the outcome of one [Runner.Run].
type Result struct {
	// Output is stdout and stderr interleaved in the order written, at
	// most MaxOutput bytes, followed by a marker line when truncated
	// ("[output truncated at N bytes]") or timed out ("[timed out after D]").
	Output []byte
	// ExitCode is the program's exit status: [ExitRefused] when refused,
	// [ExitTimeout] when timed out.
	ExitCode int
	// Truncated reports that output exceeded MaxOutput and the command was
	// stopped.
	Truncated bool
	// Refused reports that the policy refused the command, statically
	// (nothing ran) or at execution (commands before it may have run).
	Refused bool
	// Reason names what was refused when Refused is set.
	Reason string
}

// lookPath finds name in the fixed PATH.
func lookPath(name string) (string, error) {
	for _, d := range filepath.SplitList(fixedPath) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in %s", name, fixedPath)
}

// CommandEnv returns the environment the runner gives programs: the fixed
// PATH and the few variables of base and extra that name no helper,
// loader hook or secret (see spec/bash.md).
func CommandEnv(base, extra []string) []string { return scrubEnv(base, extra) }

// scrubEnv returns the environment commands run with: the fixed PATH,
// HOME, USER, LOGNAME, TZ, LANG and LC_* from base, and the extra entries
// that pass [scrubbed].
func scrubEnv(base, extra []string) []string {
	env := []string{"PATH=" + fixedPath}
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "HOME", name == "USER", name == "LOGNAME", name == "TZ", name == "LANG",
			strings.HasPrefix(name, "LC_"):
			env = append(env, kv)
		}
	}
	for _, kv := range extra {
		name, _, ok := strings.Cut(kv, "=")
		if ok && !scrubbed(name) {
			env = append(env, kv)
		}
	}
	return env
}

// scrubbed reports whether an environment variable must not reach
// commands: it names helper programs, loader or interpreter hooks, git
// settings, or shell state the interpreter would honour.
func scrubbed(name string) bool {
	switch name {
	case "PATH", "PAGER", "BASH_ENV", "ENV", "SSH_ASKPASS", "RIPGREP_CONFIG_PATH", "IFS",
		"CDPATH", "GLOBIGNORE", "BASHOPTS", "SHELLOPTS", "PS4", "PWD", "OLDPWD", "EDITOR", "VISUAL":
		return true
	}
	for _, p := range []string{"GIT_", "LESS", "LD_", "BASH_FUNC_", "PYTHON"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// cappedBuffer keeps the first max bytes written and calls onFull once
// when more arrive. Writes never fail, so writers are not disturbed.
// Safe for concurrent use; mu guards the fields below it.
type cappedBuffer struct {
	max    int
	onFull func()

	mu   sync.Mutex
	buf  bytes.Buffer
	full bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.full {
		return len(p), nil
	}
	if room := c.max - c.buf.Len(); len(p) > room {
		c.buf.Write(p[:room])
		c.full = true
		c.onFull()
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

// result returns a copy of the output, with the truncation marker line
// appended when the cap was hit.
func (c *cappedBuffer) result() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := bytes.Clone(c.buf.Bytes())
	if c.full {
		out = append(out, fmt.Sprintf("%s[output truncated at %d bytes]\n", sep(out), c.max)...)
	}
	return out, c.full
}

// sep returns "\n" when b is non-empty and does not end in a newline.
func sep(b []byte) string {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return "\n"
	}
	return ""
}
