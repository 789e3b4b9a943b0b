package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Limits are the resource limits of every sandboxed process. Zero fields
// take the defaults of [DefaultLimits]; the file size limit is always 0.
type Limits struct {
	// AddressSpace bounds each process's virtual memory, in bytes.
	AddressSpace uint64
	// Processes bounds the processes and threads of one sandbox.
	Processes uint64
	// CPUSeconds bounds each process's CPU time.
	CPUSeconds uint64
	// OpenFiles bounds each process's descriptors.
	OpenFiles uint64
	// Memory bounds the memory the processes of one sandbox use together,
	// in bytes, where a memory cgroup can be made ([Layers.Memory]).
	Memory uint64
}

// DefaultLimits are the limits a zero [Limits] field takes.
var DefaultLimits = Limits{AddressSpace: 2 << 30, Processes: 256, CPUSeconds: 60, OpenFiles: 1024, Memory: 2 << 30}

func (l Limits) withDefaults() Limits {
	if l.AddressSpace == 0 {
		l.AddressSpace = DefaultLimits.AddressSpace
	}
	if l.Processes == 0 {
		l.Processes = DefaultLimits.Processes
	}
	if l.CPUSeconds == 0 {
		l.CPUSeconds = DefaultLimits.CPUSeconds
	}
	if l.Memory == 0 {
		l.Memory = DefaultLimits.Memory
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = DefaultLimits.OpenFiles
	}
	return l
}

// Config describes one sandbox.
type Config struct {
	// ReadRoots are the directories (or files) the program may read, the
	// workspace first. Symlinks are resolved; missing ones are dropped.
	ReadRoots []string
	// Hidden are paths beneath a read root that must not be read (the
	// state directory when it lies in the workspace): refused by the read
	// policy and covered by an empty tmpfs under bwrap.
	Hidden []string
	// Limits are the resource limits; zero fields take the defaults.
	Limits Limits
	// NoBwrap skips bwrap even where it works (tests use it to show the
	// other layers hold alone).
	NoBwrap bool
	// Launcher is the executable that calls [Main] first thing; empty
	// means the running executable.
	Launcher string
}

// Sandbox starts programs under one [Config]. Safe for concurrent use.
type Sandbox struct {
	cfg    Config
	policy *ReadPolicy
	layers Layers
	launch string
}

// ErrNoLauncher is returned by [New] when the running program did not call
// [Main] and no Launcher was configured: starting it again with the marker
// would run the program itself, not the launcher.
var ErrNoLauncher = errors.New("sandbox: the launcher is not installed (call sandbox.Main first thing in main)")

// New returns a sandbox for cfg, probing the machine's layers once per
// process.
func New(cfg Config) (*Sandbox, error) {
	pol, err := NewReadPolicy(cfg.ReadRoots, cfg.Hidden)
	if err != nil {
		return nil, err
	}
	cfg.Limits = cfg.Limits.withDefaults()
	launch := cfg.Launcher
	if launch == "" {
		if !mainCalled.Load() {
			return nil, ErrNoLauncher
		}
		if launch, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("sandbox: find the launcher: %w", err)
		}
	}
	l := Probe()
	if cfg.NoBwrap {
		l.Bwrap, l.BwrapWhy = "", "disabled"
	}
	return &Sandbox{cfg: cfg, policy: pol, layers: l, launch: launch}, nil
}

// Policy returns the read policy the sandbox enforces.
func (s *Sandbox) Policy() *ReadPolicy { return s.policy }

// Layers returns the layers this sandbox applies.
func (s *Sandbox) Layers() Layers { return s.layers }

// live maps a started-by-[Sandbox.Command] process to its cgroup, for
// [Wait]; mu guards it.
var (
	mu   sync.Mutex
	live = map[*exec.Cmd]liveCmd{}
)

// liveCmd is what a started process leaves outside it.
type liveCmd struct {
	cgs   []*cgroup  // its pids cgroup and its memory cgroup (v1), where made
	files []*os.File // the parent's copies of the launcher's descriptors
}

func release1(cgs []*cgroup, files []*os.File) {
	for _, f := range files {
		f.Close()
	}
	for _, cg := range cgs {
		cg.destroy()
	}
}

// Command returns the process that runs argv (argv[0] an absolute path, or
// a name looked up in the fixed PATH inside the sandbox) in dir with env.
// It runs in its own process group; when ctx is done the whole tree is
// killed. Set Stdin, Stdout and Stderr, then Start it and finish it with
// [Wait] (or call [Run]), which also removes what the sandbox created
// outside the process (its cgroup).
func (s *Sandbox) Command(ctx context.Context, dir string, argv, env []string) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("sandbox: no program")
	}
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("sandbox: directory %q is not absolute", dir)
	}
	sp := spec{Read: s.policy.roots, Hidden: s.policy.hidden, Limits: s.cfg.Limits, Dir: dir,
		Landlock: s.layers.LandlockABI > 0, Argv: argv}
	var (
		cg    *cgroup // the pids cgroup, killed on cancel
		cgs   []*cgroup
		extra []*os.File
	)
	// join adds c to the cgroups the launcher joins (through a descriptor
	// the parent opens: the cgroup file system is not mounted in bwrap).
	join := func(c *cgroup) bool {
		f, err := os.OpenFile(filepath.Join(c.dir, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			c.destroy()
			return false
		}
		cgs, extra = append(cgs, c), append(extra, f)
		sp.CgroupFDs = append(sp.CgroupFDs, 2+len(extra))
		return true
	}
	if s.layers.cgroupRoot != "" {
		if c, err := newCgroup(s.layers.cgroupRoot, s.cfg.Limits.Processes); err == nil {
			if s.layers.memRoot == s.layers.cgroupRoot {
				// One cgroup holds both limits (v2).
				os.WriteFile(filepath.Join(c.dir, s.layers.memFile), []byte(fmt.Sprint(s.cfg.Limits.Memory)), 0)
				noSwap(c.dir, s.cfg.Limits.Memory)
			}
			if join(c) {
				cg = c
			}
		}
	}
	if s.layers.memRoot != "" && s.layers.memRoot != s.layers.cgroupRoot {
		if c, err := newMemoryCgroup(s.layers.memRoot, s.layers.memFile, s.cfg.Limits.Memory); err == nil {
			join(c)
		}
	}
	var cmd *exec.Cmd
	if s.layers.Bwrap != "" {
		sp.InBwrap = true
		enc, err := sp.encode()
		if err != nil {
			release1(cgs, extra)
			return nil, err
		}
		args := append(bwrapArgs(sp, s.launch), launcherInside, launcherArg, enc)
		cmd = exec.CommandContext(ctx, s.layers.Bwrap, args...)
		cmd.Args[0] = "bwrap"
	} else {
		enc, err := sp.encode()
		if err != nil {
			release1(cgs, extra)
			return nil, err
		}
		cmd = exec.CommandContext(ctx, s.launch, launcherArg, enc)
		cmd.Args[0] = "planbridge-sandbox"
	}
	cmd.ExtraFiles = extra
	cmd.Dir = dir
	cmd.Env = env
	// A session of its own (and so a process group of its own, killed
	// whole on cancel): no controlling terminal, so TIOCSTI on a terminal
	// it inherits as a descriptor (planbridge run from a shell) cannot push
	// input to that shell, which would run it unconfined. bwrap's
	// --new-session does the same, but without bwrap nothing else would.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cg.kill()
		return nil
	}
	cmd.WaitDelay = time.Second
	if len(cgs) > 0 {
		mu.Lock()
		live[cmd] = liveCmd{cgs, extra}
		mu.Unlock()
	}
	return cmd, nil
}

// Wait waits for cmd; for a process of [Sandbox.Command] it then kills
// what is left of its tree and removes its cgroup.
func Wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	release(cmd)
	return err
}

// Start starts cmd; on failure its cgroup is removed. A Stdin, Stdout or
// Stderr that is an *os.File reaches the program as a file description
// of its own (see [privateStdio]).
func Start(cmd *exec.Cmd) error {
	opened := privateStdio(cmd)
	err := cmd.Start()
	for _, f := range opened {
		f.Close() // the program has its copies
	}
	if err != nil {
		release(cmd)
		return err
	}
	return nil
}

// privateStdio replaces each of cmd's Stdin, Stdout and Stderr that is an
// *os.File (a terminal, a pipe, a file) by a new open file description of
// the same object: file status flags (O_NONBLOCK, O_APPEND, O_ASYNC) live
// in the description, and a description shared with the caller, its shell
// or its editor would let the program change theirs (fcntl F_SETFL and
// ioctl FIONBIO, which read-only programs need on their own pipes and
// which the filter cannot tell apart from a dup of an inherited
// descriptor: a terminal left non-blocking makes the person's shell read
// EAGAIN). The object is reopened through /proc/self/fd (a file at the
// same offset, not advanced for the caller); what cannot be reopened (a
// socket) is passed through a pipe instead. It returns the files it
// opened, for the caller to close once the program started.
func privateStdio(cmd *exec.Cmd) []*os.File {
	var opened []*os.File
	reopened := map[*os.File]*os.File{}
	private := func(f *os.File) *os.File {
		if nf, ok := reopened[f]; ok {
			return nf
		}
		nf := reopenFile(f)
		if nf != nil {
			opened = append(opened, nf)
		}
		reopened[f] = nf
		return nf
	}
	if f, ok := cmd.Stdin.(*os.File); ok && f != nil {
		if nf := private(f); nf != nil {
			cmd.Stdin = nf
		} else {
			cmd.Stdin = struct{ io.Reader }{f}
		}
	}
	for _, w := range []*io.Writer{&cmd.Stdout, &cmd.Stderr} {
		if f, ok := (*w).(*os.File); ok && f != nil {
			if nf := private(f); nf != nil {
				*w = nf
			} else {
				*w = struct{ io.Writer }{f}
			}
		}
	}
	return opened
}

// reopenFile opens a new description of what f is open on, with f's
// access mode and O_APPEND, at f's offset; nil when it cannot.
func reopenFile(f *os.File) *os.File {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var nfd = -1
	rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil {
			return
		}
		// O_NONBLOCK: a pipe without a writer does not block the open
		// (cleared below); O_NOCTTY: a terminal never becomes this
		// process's controlling one.
		n, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd),
			fl&(unix.O_ACCMODE|unix.O_APPEND)|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		var st1, st2 unix.Stat_t
		if unix.Fstat(int(fd), &st1) != nil || unix.Fstat(n, &st2) != nil || st1.Dev != st2.Dev || st1.Ino != st2.Ino {
			unix.Close(n)
			return
		}
		if _, err := unix.FcntlInt(uintptr(n), unix.F_SETFL, fl&unix.O_APPEND); err != nil {
			unix.Close(n)
			return
		}
		if st1.Mode&unix.S_IFMT == unix.S_IFREG {
			if off, err := unix.Seek(int(fd), 0, io.SeekCurrent); err == nil {
				unix.Seek(n, off, io.SeekStart)
			}
		}
		nfd = n
	})
	if nfd < 0 {
		return nil
	}
	return os.NewFile(uintptr(nfd), f.Name())
}

// Run is [Start] then [Wait].
func Run(cmd *exec.Cmd) error {
	if err := Start(cmd); err != nil {
		return err
	}
	return Wait(cmd)
}

func release(cmd *exec.Cmd) {
	mu.Lock()
	l := live[cmd]
	delete(live, cmd)
	mu.Unlock()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	release1(l.cgs, l.files)
}

// Layers reports which confinement layers work on this machine.
type Layers struct {
	// LandlockABI is the kernel's Landlock ABI version, 0 when absent.
	LandlockABI int
	// Bwrap is the path of a working bwrap, "" when unusable (BwrapWhy).
	Bwrap, BwrapWhy string
	// UserNS reports that unprivileged user namespaces can be created.
	UserNS bool
	// Seccomp reports that a seccomp filter can be installed: the
	// read-only profile's allowlist builds for this architecture and the
	// kernel has seccomp filters.
	Seccomp bool
	// Root reports that this process runs as uid 0.
	Root bool
	// Processes says how the process count is bounded.
	Processes string

	// Memory says how the memory of the sandbox's processes is bounded.
	Memory string

	cgroupRoot string // pids hierarchy directory to create cgroups in
	memRoot    string // memory hierarchy directory to create cgroups in ("" none)
	memFile    string // its limit's file
}

// None reports that no OS layer confines file access: no Landlock and no
// bwrap (capabilities, seccomp and limits may still apply).
func (l Layers) None() bool { return l.LandlockABI == 0 && l.Bwrap == "" }

// Summary is a one-line description, e.g.
// "landlock ABI 7, bwrap, seccomp, rlimits (processes: pids cgroup)", or
// one starting with "NO OS CONFINEMENT" when [Layers.None].
func (l Layers) Summary() string {
	var parts []string
	if l.LandlockABI > 0 {
		parts = append(parts, fmt.Sprintf("landlock ABI %d", l.LandlockABI))
	}
	if l.Bwrap != "" {
		parts = append(parts, "bwrap")
	}
	if l.Seccomp {
		parts = append(parts, "seccomp")
	}
	parts = append(parts, "rlimits (processes: "+l.Processes+")")
	if l.Memory != "" {
		parts = append(parts, "memory: "+l.Memory)
	}
	s := strings.Join(parts, ", ")
	if l.None() {
		return "NO OS CONFINEMENT of file access (no Landlock, no bwrap: " + l.BwrapWhy + "); only " + s
	}
	return s
}

// Lines describes each layer as (name, state, active) for a report.
func (l Layers) Lines() [][3]string {
	on := func(b bool) string {
		if b {
			return "active"
		}
		return "missing"
	}
	ll := fmt.Sprintf("ABI %d", l.LandlockABI)
	if l.LandlockABI == 0 {
		ll = "not supported by this kernel"
	}
	bw := l.Bwrap
	if bw == "" {
		bw = l.BwrapWhy
	}
	userns := "unprivileged user namespaces available"
	if !l.UserNS {
		userns = "unprivileged user namespaces unavailable"
	}
	return [][3]string{
		{"landlock", ll, on(l.LandlockABI > 0)},
		{"bwrap", bw, on(l.Bwrap != "")},
		{"userns", userns, on(l.UserNS)},
		{"seccomp", seccompLine(), on(l.Seccomp)},
		{"rlimits", "address space, cpu, file size 0, processes: " + l.Processes, "active"},
	}
}

var (
	probeOnce sync.Once
	probed    Layers
)

// Probe reports the layers that work here. It runs bwrap once per process
// and caches the answer.
func Probe() Layers {
	probeOnce.Do(func() { probed = probe() })
	return probed
}
