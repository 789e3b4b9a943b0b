package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

func probe() Layers {
	l := Layers{Root: os.Geteuid() == 0}
	if v, err := ll.LandlockGetABIVersion(); err == nil {
		l.LandlockABI = v
	}
	l.Bwrap, l.BwrapWhy = probeBwrap()
	l.UserNS = userNamespaces()
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err == nil && seccompFilterBuilds() {
		l.Seccomp = true
	}
	l.cgroupRoot = pidsCgroupRoot()
	l.memRoot, l.memFile = memoryCgroupRoot()
	sweepCgroups(l.cgroupRoot)
	sweepCgroups(l.memRoot)
	if l.memRoot != "" {
		l.Memory = "memory cgroup"
	} else {
		l.Memory = "per process only (no memory cgroup is writable)"
	}
	switch {
	case l.cgroupRoot != "":
		l.Processes = "pids cgroup"
	case l.Root:
		l.Processes = "NOT bounded (uid 0 is exempt from RLIMIT_NPROC and no pids cgroup is writable)"
	case l.Bwrap != "":
		l.Processes = "RLIMIT_NPROC in a fresh user namespace"
	default:
		l.Processes = "RLIMIT_NPROC above the user's running processes"
	}
	return l
}

// userNamespaces reports whether unprivileged user namespaces are enabled.
func userNamespaces() bool {
	for _, f := range []string{"/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if strings.TrimSpace(string(b)) == "0" {
			return false
		}
	}
	return true
}

// probeBwrap finds bwrap in the fixed PATH and checks that it starts a
// program here with the options the sandbox uses (it cannot in some
// containers). It returns bwrap's path, or "" and why it is unusable.
func probeBwrap() (path, why string) {
	for _, d := range filepath.SplitList(fixedPath) {
		if fi, err := os.Stat(filepath.Join(d, "bwrap")); err == nil && fi.Mode().IsRegular() {
			path = filepath.Join(d, "bwrap")
			break
		}
	}
	if path == "" {
		return "", "bwrap not found"
	}
	truePath := ""
	for _, p := range []string{"/usr/bin/true", "/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			truePath = p
			break
		}
	}
	if truePath == "" {
		return "", "cannot test bwrap: true not found"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out bytes.Buffer
	args := bwrapArgs(spec{Dir: "/"}, truePath)
	args = append(args, launcherInside)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if msg == "" {
			msg = err.Error()
		}
		return "", "bwrap does not work here: " + msg
	}
	return path, ""
}

// pidsCgroupRoot returns this process's cgroup directory in a pids
// hierarchy (v1 or v2) where a child cgroup with pids.max can be created,
// or "".
func pidsCgroupRoot() string {
	for _, c := range cgroupCandidates("pids") {
		cg, err := newCgroup(c, 1)
		if err == nil {
			cg.destroy()
			return c
		}
	}
	return ""
}

// memoryCgroupRoot returns this process's cgroup directory in a memory
// hierarchy where a child cgroup with a memory limit can be created, and
// the limit's file (memory.max in v2, memory.limit_in_bytes in v1), or
// "". Where it is the pids directory (v2: a process is in one cgroup of
// it only) the limit goes into the pids cgroup itself.
func memoryCgroupRoot() (root, file string) {
	for _, c := range cgroupCandidates("memory") {
		for _, f := range []string{"memory.max", "memory.limit_in_bytes"} {
			cg, err := newMemoryCgroup(c, f, 64<<20)
			if err == nil {
				cg.destroy()
				return c, f
			}
		}
	}
	return "", ""
}

// newMemoryCgroup creates a cgroup below root whose processes together
// use at most max bytes of memory (file is the limit's file).
func newMemoryCgroup(root, file string, max uint64) (*cgroup, error) {
	dir := filepath.Join(root, fmt.Sprintf("planbridge-sandbox-mem-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := makeCgroup(dir, file, max); err != nil {
		return nil, err
	}
	noSwap(dir, max)
	return &cgroup{dir: dir}, nil
}

// sweepCgroups removes from root the read-only sandboxes' cgroups a
// planbridge that is gone left (killed while a command ran): those named
// for a creator pid that is not this process and no longer exists. A
// cgroup still holding a process is never removed (rmdir refuses it),
// and one of a live planbridge is left alone even while empty (its
// launcher may not have joined it yet). Run once, at [Probe].
func sweepCgroups(root string) {
	if root == "" {
		return
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		var pid, seq int
		n := strings.TrimPrefix(e.Name(), "planbridge-sandbox-mem-")
		if n == e.Name() {
			n = strings.TrimPrefix(n, "planbridge-sandbox-")
		}
		if !e.IsDir() || n == e.Name() {
			continue
		}
		if _, err := fmt.Sscanf(n, "%d-%d", &pid, &seq); err == nil && pid > 0 && pid != os.Getpid() &&
			errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
			os.Remove(filepath.Join(root, e.Name()))
		}
	}
}

// noSwap keeps a memory cgroup's processes from swapping past its limit,
// where the kernel offers it (best effort: without swap there is none).
func noSwap(dir string, max uint64) {
	os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), []byte(fmt.Sprint(max)), 0) // v1
	os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0)                         // v2
}

// cgroupCandidates are this process's cgroup directories in the v1
// hierarchy of controller and in the v2 one.
func cgroupCandidates(controller string) []string {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	var v1, v2 string
	sc := bufio.NewScanner(bytes.NewReader(mounts))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// id parent major:minor root mountpoint opts ... - fstype source superopts
		for i, w := range f {
			if w != "-" || i+3 > len(f)-1 {
				continue
			}
			switch fstype, super := f[i+1], f[i+3]; {
			case fstype == "cgroup" && hasOpt(super, controller) && f[3] == "/":
				v1 = f[4]
			case fstype == "cgroup2" && f[3] == "/":
				v2 = f[4]
			}
		}
	}
	var candidates []string
	for _, line := range strings.Split(string(own), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case v1 != "" && hasOpt(parts[1], controller):
			candidates = append(candidates, filepath.Join(v1, parts[2]))
		case v2 != "" && parts[0] == "0" && parts[1] == "":
			candidates = append(candidates, filepath.Join(v2, parts[2]))
		}
	}
	return candidates
}

func hasOpt(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// cgroup is one sandbox's pids cgroup. A nil *cgroup does nothing.
type cgroup struct{ dir string }

var cgroupSeq atomic.Int64

func newCgroup(root string, max uint64) (*cgroup, error) {
	dir := filepath.Join(root, fmt.Sprintf("planbridge-sandbox-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := makeCgroup(dir, "pids.max", max); err != nil {
		return nil, err
	}
	return &cgroup{dir: dir}, nil
}

// makeCgroup creates the cgroup dir with its limit file set to max (at
// most max processes in pids.max, bytes in a memory limit); on failure
// nothing is left.
func makeCgroup(dir, limit string, max uint64) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, limit), []byte(fmt.Sprint(max)), 0); err != nil {
		os.Remove(dir)
		return err
	}
	return nil
}

// kill sends SIGKILL to every process in the cgroup.
func (c *cgroup) kill() {
	if c == nil {
		return
	}
	b, _ := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	for _, f := range strings.Fields(string(b)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil && pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// destroy kills what is left and removes the cgroup, waiting briefly for
// the killed processes to be gone.
func (c *cgroup) destroy() {
	if c == nil {
		return
	}
	for i := 0; i < 400; i++ {
		c.kill()
		err := os.Remove(c.dir)
		if err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
