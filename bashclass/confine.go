package bashclass

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// bwrapArgs are the bwrap options external programs run under: the whole
// filesystem read-only, fresh /dev and /proc, no network, and the sandbox
// dies with its parent. /dev/shm is a private tmpfs, discarded with the
// sandbox, that serves as TMPDIR for tools that spool (tac, sort). The
// program and its arguments follow.
func bwrapArgs(dir string) []string {
	return []string{"--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc",
		"--unshare-net", "--die-with-parent", "--chdir", dir, "--"}
}

// sandboxTmp is TMPDIR inside the bwrap sandbox.
const sandboxTmp = "TMPDIR=/dev/shm"

// probeBwrap finds bwrap in the fixed PATH and checks that it can start a
// program here (it cannot in some containers). It returns bwrap's path, or
// "" and why confinement is unavailable.
func probeBwrap() (path, why string) {
	path, err := lookPath("bwrap")
	if err != nil {
		return "", "bwrap not found"
	}
	truePath, err := lookPath("true")
	if err != nil {
		return "", "cannot test bwrap: true not found"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, append(bwrapArgs("/"), truePath)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Sprintf("bwrap does not work here: %s", msg)
	}
	return path, ""
}

// Confinement describes how a [Runner] confines external programs on this
// machine: "bwrap" when bwrap is installed and works, otherwise
// "none (REASON)". It runs bwrap once to find out; the static and dynamic
// checks apply either way.
func Confinement() string {
	if _, why := probeBwrap(); why != "" {
		return "none (" + why + ")"
	}
	return "bwrap"
}
