package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// AgentConfig describes the agent profile: the confinement of a long-lived
// coding agent (a node program) that must not change anything but its own
// state. It is looser than the read-only shell profile of [Config] in
// what a node agent needs (reads of the whole file system, writes to its
// own directories, TCP to the model) and as strict in what matters for
// Plan: no write anywhere else.
type AgentConfig struct {
	// Writable are the directories the agent may write (its state or home
	// directory, its private tmp); each must exist. /dev/null is always
	// writable.
	Writable []string
	// ConnectPorts are the TCP ports the agent may connect to (the model
	// endpoint's). TCP bind is always denied. Enforced at Landlock ABI ≥ 4.
	ConnectPorts []uint16
	// Limits are the agent-sized limits; zero fields take
	// [DefaultAgentLimits].
	Limits AgentLimits
	// Launcher is the executable that calls [Main] first thing; empty
	// means the running executable.
	Launcher string
	// Describe, when set, names what Writable holds for [Agent.Summary]
	// ("writes: <Describe> and /dev/null only"), for a profile built only
	// to describe one whose directories do not exist yet.
	Describe string
}

// AgentLimits are the resource limits of a confined agent: no CPU or
// address-space cap (node reserves far more virtual memory than it uses,
// and the agent lives for the turns it serves), but its data segment,
// written file sizes, descriptors and processes are bounded.
type AgentLimits struct {
	// Data bounds each process's data segment (RLIMIT_DATA: the private
	// writable memory it actually maps), in bytes.
	Data uint64
	// FileSize bounds each file written, in bytes.
	FileSize uint64
	// OpenFiles bounds each process's descriptors.
	OpenFiles uint64
	// Processes bounds the processes and threads (RLIMIT_NPROC; not
	// applied to uid 0, see [Agent.Layers]).
	Processes uint64
}

// DefaultAgentLimits are the limits a zero [AgentLimits] field takes.
var DefaultAgentLimits = AgentLimits{Data: 8 << 30, FileSize: 1 << 30, OpenFiles: 8192, Processes: 1024}

func (l AgentLimits) withDefaults() AgentLimits {
	d := DefaultAgentLimits
	if l.Data == 0 {
		l.Data = d.Data
	}
	if l.FileSize == 0 {
		l.FileSize = d.FileSize
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = d.OpenFiles
	}
	if l.Processes == 0 {
		l.Processes = d.Processes
	}
	return l
}

// ErrNoAgentConfinement is returned by [NewAgent] when this machine has no
// Landlock: nothing would keep the agent from writing, so the agent must
// not be started as if it were confined.
var ErrNoAgentConfinement = errors.New("sandbox: no Landlock on this kernel: the agent cannot be confined to its own directories")

// Agent confines agent processes under one [AgentConfig].
type Agent struct {
	cfg    AgentConfig
	layers Layers
	launch string
}

// NewAgent returns the agent profile for cfg. It fails closed: without
// Landlock (the layer that holds the writes) it returns
// [ErrNoAgentConfinement].
func NewAgent(cfg AgentConfig) (*Agent, error) {
	var w []string
	for _, d := range cfg.Writable {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("sandbox: writable directory %q is not absolute", d)
		}
		r, err := filepath.EvalSymlinks(d)
		if err != nil {
			return nil, fmt.Errorf("sandbox: writable directory: %w", err)
		}
		if fi, err := os.Stat(r); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("sandbox: writable %q is not a directory", d)
		}
		if r == "/" {
			return nil, fmt.Errorf("sandbox: the root directory cannot be writable")
		}
		w = append(w, r)
	}
	cfg.Writable = w
	cfg.Limits = cfg.Limits.withDefaults()
	launch := cfg.Launcher
	if launch == "" {
		if !mainCalled.Load() {
			return nil, ErrNoLauncher
		}
		var err error
		if launch, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("sandbox: find the launcher: %w", err)
		}
	}
	l := Probe()
	if l.LandlockABI == 0 {
		return nil, ErrNoAgentConfinement
	}
	if err := probeAgentMounts(launch); err != nil {
		return nil, err
	}
	return &Agent{cfg: cfg, layers: l, launch: launch}, nil
}

// ErrNoAgentMounts is returned by [NewAgent] when the agent's private
// mount namespace cannot be made here (not root, and user namespaces
// disabled or denied their capabilities, as AppArmor does on some
// distributions): it keeps the agent from changing the metadata of files
// it owns (chmod, chown, utimes, xattrs; Landlock does not cover those),
// so the agent must not be started as if it were confined. It is an
// [ErrNoAgentConfinement] for errors.Is.
var ErrNoAgentMounts error = noMountsError{}

type noMountsError struct{}

func (noMountsError) Error() string {
	return "sandbox: no private mount namespace for this user (user namespaces disabled or denied): the agent's files would be read-only to Landlock only, which leaves chmod, utimes and xattrs open"
}

func (noMountsError) Is(target error) bool { return target == ErrNoAgentConfinement }

const profileMountProbe = "mount-probe"

var (
	mountProbeMu sync.Mutex
	mountProbed  = map[string]error{} // by launcher
)

// probeAgentMounts checks once per launcher, by starting it, that the
// launcher can make its read-only mount namespace here (as root it can).
func probeAgentMounts(launch string) error {
	if os.Geteuid() == 0 {
		return nil
	}
	mountProbeMu.Lock()
	defer mountProbeMu.Unlock()
	if err, ok := mountProbed[launch]; ok {
		return err
	}
	err := func() error {
		if !Probe().UserNS {
			return ErrNoAgentMounts
		}
		enc, err := spec{Profile: profileMountProbe, Argv: []string{"probe"}}.encode()
		if err != nil {
			return err
		}
		cmd := exec.Command(launch, launcherArg, enc)
		cmd.Args[0] = "planbridge-agent-mount-probe"
		cmd.Env = []string{}
		if err := agentNamespaces(cmd); err != nil {
			return err
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%w: %v %s", ErrNoAgentMounts, err, out)
		}
		return nil
	}()
	mountProbed[launch] = err
	return err
}

// Summary says which layers confine the agent on this machine, e.g.
// "landlock ABI 7 (writes: 2 dirs, tcp connect: 443), seccomp (socket:
// inet only), capabilities dropped, rlimits (processes: rlimit)".
func (a *Agent) Summary() string {
	l := a.layers
	w := "/dev/null only"
	switch n := len(a.cfg.Writable); {
	case a.cfg.Describe != "":
		w = a.cfg.Describe + " and /dev/null only"
	case n > 0:
		w = fmt.Sprintf("%d own dir(s) and /dev/null", n)
	}
	s := "private mount namespace (everything read-only but its own dirs: no chmod, chown, utimes or xattr elsewhere), " +
		"ipc namespace (no shared memory of others), own session (no terminal), "
	s += fmt.Sprintf("landlock ABI %d (reads: all, writes: %s", l.LandlockABI, w)
	if l.LandlockABI >= 4 {
		s += fmt.Sprintf(", tcp connect only to port(s) %v, no tcp bind", a.cfg.ConnectPorts)
	} else {
		s += ", TCP NOT RESTRICTED (ABI < 4)"
	}
	if l.LandlockABI >= 6 {
		s += ", signals and abstract unix sockets scoped"
	}
	s += ")"
	if l.Seccomp {
		fam := "tcp and udp over inet, inet6"
		if agentUnixAllowed(l.LandlockABI) {
			fam += ", unix (pathname connects limited by landlock)"
		}
		s += ", seccomp (socket: " + fam + " only; no listen, no TCP Fast Open; io_uring, keyctl, bpf, perf denied)"
	}
	procs := "rlimit"
	switch {
	case l.cgroupRoot != "":
		procs = fmt.Sprintf("pids cgroup, %d", a.cfg.Limits.Processes)
	case l.Root:
		procs = "not bounded as root"
	}
	return s + ", capabilities dropped, no_new_privs, rlimits (data, file size, files; processes: " + procs + ")"
}

// agentUnixAllowed: socket(AF_UNIX) is allowed only where Landlock
// restricts connecting to pathname unix sockets (ABI ≥ 9, resolve_unix);
// below, a connect to any socket on the file system (a container
// runtime's, a session bus) would be open, so seccomp denies the family.
func agentUnixAllowed(abi int) bool { return abi >= 9 }

// Wrap rewrites cmd (Path, Args, Env, Dir and SysProcAttr already set, not
// yet started) to run its program under the agent profile: the launcher
// confines itself and execs cmd's program with cmd's arguments. A
// launcher that cannot set a layer up exits [ExitSetup].
func (a *Agent) Wrap(cmd *exec.Cmd) error {
	if cmd.Process != nil {
		return fmt.Errorf("sandbox: the agent is already started")
	}
	if cmd.Err != nil {
		return cmd.Err
	}
	path := cmd.Path
	if !filepath.IsAbs(path) {
		p, err := exec.LookPath(path)
		if err != nil {
			return err
		}
		if path, err = filepath.Abs(p); err != nil {
			return err
		}
	}
	dir := cmd.Dir
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return err
		}
	}
	argv := append([]string{path}, cmd.Args[1:]...)
	ports := append([]uint16(nil), a.cfg.ConnectPorts...)
	sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
	if err := agentNamespaces(cmd); err != nil {
		return err
	}
	if err := noTerminal(cmd.SysProcAttr); err != nil {
		return err
	}
	sp := spec{Profile: profileAgent, Write: a.cfg.Writable, Ports: ports, Agent: a.cfg.Limits, Dir: dir,
		Landlock: true, ReadOnlyMounts: true, Argv: argv}
	// RLIMIT_NPROC bounds every user but uid 0; uid 0 gets a pids
	// cgroup where one can be made.
	if a.layers.cgroupRoot != "" && (cmd.SysProcAttr.Credential == nil || cmd.SysProcAttr.Credential.Uid == 0) {
		cg, err := newAgentCgroup(a.layers.cgroupRoot, a.cfg.Limits.Processes)
		if err != nil {
			return fmt.Errorf("sandbox: the agent's pids cgroup: %w", err)
		}
		sp.CgroupDir = cg
	}
	enc, err := sp.encode()
	if err != nil {
		return err
	}
	cmd.Path = a.launch
	cmd.Args = []string{"planbridge-agent-sandbox", launcherArg, enc}
	return nil
}

const profileAgent = "agent"

// agentNamespaces makes cmd start in a mount namespace of its own, where the
// launcher can make every mount read-only but the writable directories
// (see [readOnlyMounts]): Landlock confines writes to file contents and
// names, but changing a file's mode, owner, times or extended attributes
// is no Landlock right at all, and a read-only mount refuses every one of
// them. As root the new mount namespace needs nothing else (a program run
// as another user keeps CAP_SYS_ADMIN across the change, as an ambient
// capability the launcher drops with the rest); as any other user it
// comes with a user namespace that maps the user to itself, and
// CAP_SYS_ADMIN and CAP_SETPCAP in that namespace only, likewise ambient.
func agentNamespaces(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	if a.Cloneflags&(unix.CLONE_NEWUSER|unix.CLONE_NEWNS|unix.CLONE_NEWPID|unix.CLONE_NEWIPC) != 0 || len(a.UidMappings) > 0 || len(a.GidMappings) > 0 {
		return fmt.Errorf("sandbox: the agent command already asks for namespaces")
	}
	// And an IPC namespace: System V shared memory, semaphores and
	// message queues, and POSIX message queues, are no files Landlock
	// could guard; in the machine's namespace the agent could attach to
	// another process's shared memory (of its user) and write it.
	a.Cloneflags |= unix.CLONE_NEWNS | unix.CLONE_NEWIPC
	// CAP_SETPCAP too, so that the launcher can empty the bounding set.
	launcherCaps := []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	if os.Geteuid() == 0 {
		if a.Credential != nil && a.Credential.Uid != 0 {
			a.AmbientCaps = append(a.AmbientCaps, launcherCaps...)
		}
		return nil
	}
	if a.Credential != nil {
		return fmt.Errorf("sandbox: only root may run the agent as another user")
	}
	a.Cloneflags |= unix.CLONE_NEWUSER
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
	// The user is not uid 0 in its namespace, so exec would drop the
	// namespace's capabilities: keep CAP_SYS_ADMIN (in the namespace
	// only) for the launcher, which drops it after the mounts.
	a.AmbientCaps = append(a.AmbientCaps, launcherCaps...)
	return nil
}

// Agent cgroups are named planbridge-agent-PID-SEQ-new (PID the
// creating planbridge's) until the launcher has joined one and renamed it
// -run. Nothing waits for an agent to end, so each new one first removes
// the -run cgroups that are empty (rmdir refuses the others) and the -new
// ones whose creator is gone.
const agentCgroupPrefix = "planbridge-agent-"

// newAgentCgroup sweeps root of finished agent cgroups and makes a new one
// bounded to max processes and threads; it returns its directory.
func newAgentCgroup(root string, max uint64) (string, error) {
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() || !strings.HasPrefix(n, agentCgroupPrefix) {
			continue
		}
		switch {
		case strings.HasSuffix(n, "-run"):
			os.Remove(filepath.Join(root, n))
		case strings.HasSuffix(n, "-new"):
			var pid, seq int
			if _, err := fmt.Sscanf(n, agentCgroupPrefix+"%d-%d-new", &pid, &seq); err == nil && pid != os.Getpid() &&
				errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
				os.Remove(filepath.Join(root, n))
			}
		}
	}
	dir := filepath.Join(root, fmt.Sprintf("%s%d-%d-new", agentCgroupPrefix, os.Getpid(), cgroupSeq.Add(1)))
	if err := makeCgroup(dir, "pids.max", max); err != nil {
		return "", err
	}
	return dir, nil
}

// joinAgentCgroup runs in the launcher, before its capabilities go: it
// moves the launcher (and so the agent and all it starts) into dir and
// marks the cgroup as in use.
func joinAgentCgroup(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0"), 0); err != nil {
		return fmt.Errorf("join the pids cgroup: %w", err)
	}
	if strings.HasSuffix(dir, "-new") {
		if err := os.Rename(dir, strings.TrimSuffix(dir, "-new")+"-run"); err != nil {
			return fmt.Errorf("mark the pids cgroup: %w", err)
		}
	}
	return nil
}

// noTerminal makes the agent the leader of a session of its own, so it
// has no controlling terminal: planbridge started from a shell would
// otherwise hand it the person's terminal, where TIOCSTI pushes input to
// the shell that reads it (run unconfined); Landlock ABI ≥ 5 denies
// ioctls on devices the agent opens, but not on a terminal passed as one
// of its descriptors, and older ABIs not at all. A new session is a new
// process group too, whose id is the agent's pid, as Setpgid gives.
func noTerminal(a *syscall.SysProcAttr) error {
	if a.Setpgid && a.Pgid != 0 || a.Setctty || a.Foreground {
		return fmt.Errorf("sandbox: the agent cannot join a process group or take a terminal")
	}
	a.Setpgid, a.Setsid = false, true
	return nil
}

// readOnlyMounts runs in the launcher, in the mount namespace of
// [agentNamespaces] and before the capabilities go: nothing propagates to
// or from the outside, every mount becomes read-only, and each writable
// directory is bound onto itself writable. Devices (/dev/null) stay
// writable on a read-only mount; Landlock decides which.
func readOnlyMounts(writable []string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	for _, w := range writable {
		if err := unix.Mount(w, w, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", w, err)
		}
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("make every mount read-only: %w", err)
	}
	for _, w := range writable {
		if err := unix.MountSetattr(unix.AT_FDCWD, w, 0, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("make %s writable: %w", w, err)
		}
	}
	return nil
}

// confineAgentAndExec is the launcher's inner stage for the agent profile.
func confineAgentAndExec(sp spec) error {
	lim := sp.Agent.withDefaults()
	nproc := lim.Processes
	if os.Geteuid() != 0 && !freshUserNS() {
		nproc += uint64(countProcesses(os.Getuid()))
	}
	if !sp.ReadOnlyMounts {
		return fmt.Errorf("the agent profile needs its read-only mounts")
	}
	if sp.CgroupDir != "" {
		if err := joinAgentCgroup(sp.CgroupDir); err != nil {
			return err
		}
	}
	if err := readOnlyMounts(sp.Write); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return fmt.Errorf("landlock: not available: %v", err)
	}
	if err := restrictAgentLandlock(sp); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if err := installAgentSeccomp(agentUnixAllowed(abi)); err != nil && !errors.Is(err, errNoSeccomp) {
		return fmt.Errorf("seccomp: %w", err)
	}
	if err := os.Chdir(sp.Dir); err != nil {
		return err
	}
	for _, l := range []struct {
		res int
		v   uint64
	}{
		{unix.RLIMIT_DATA, lim.Data},
		{unix.RLIMIT_FSIZE, lim.FileSize},
		{unix.RLIMIT_CORE, 0},
		{unix.RLIMIT_NOFILE, lim.OpenFiles},
		{unix.RLIMIT_NPROC, nproc},
	} {
		rl := unix.Rlimit{Cur: l.v, Max: l.v}
		var old unix.Rlimit
		if err := unix.Getrlimit(l.res, &old); err == nil && old.Max < l.v {
			rl = unix.Rlimit{Cur: old.Max, Max: old.Max}
		}
		if err := unix.Setrlimit(l.res, &rl); err != nil {
			return fmt.Errorf("setrlimit %d: %w", l.res, err)
		}
	}
	// The agent gets its stdin, stdout and stderr and no other
	// descriptor: one planbridge inherited without close-on-exec (from
	// the shell or editor that started it) would reach the agent open,
	// past every rule Landlock and the mounts apply when a file is
	// opened.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("close the inherited descriptors: %w", err)
	}
	return fmt.Errorf("exec %s: %w", sp.Argv[0], unix.Exec(sp.Argv[0], sp.Argv, os.Environ()))
}

// restrictAgentLandlock: everything readable and executable, writes only
// to the writable directories and /dev/null, TCP connect only to the
// ports, no TCP bind, signals and abstract unix sockets scoped (and
// pathname unix sockets not reachable, ABI ≥ 9).
func restrictAgentLandlock(sp spec) error {
	rules := []landlock.Rule{landlock.RODirs("/"), landlock.RWFiles(os.DevNull)}
	if len(sp.Write) > 0 {
		rules = append(rules, landlock.RWDirs(sp.Write...))
	}
	for _, p := range sp.Ports {
		rules = append(rules, landlock.ConnectTCP(p))
	}
	// V9: its resolve_unix right is handled and granted nowhere. Only
	// this thread, which execs (see restrictLandlock).
	fd, flags, err := landlock.V9.BestEffort().NewRulesetFD(rules...)
	if err != nil || fd < 0 {
		return err
	}
	defer unix.Close(fd)
	return ll.LandlockRestrictSelf(fd, flags)
}

// agentDeniedSyscalls fail with EACCES in the agent profile, besides its
// socket rules: io_uring (a second door to the same operations), the
// keyrings, bpf, perf events and userfaultfd. Its filter stays a
// deny-list (see the package doc): a node agent's system calls are
// neither measured nor bounded like those of the read-only programs.
var agentDeniedSyscalls = []uint32{unix.SYS_IO_URING_SETUP, unix.SYS_KEYCTL, unix.SYS_ADD_KEY,
	unix.SYS_REQUEST_KEY, unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD}

// installAgentSeccomp: socket(2) only for TCP and UDP over AF_INET and
// AF_INET6 (and AF_UNIX when unix is set), no listen(2), no send with
// MSG_FASTOPEN, io_uring, keyrings, bpf, perf events and
// userfaultfd denied, as in the shell profile.
func installAgentSeccomp(unixOK bool) error {
	arch := seccompArch()
	if arch == 0 {
		return errNoSeccomp
	}
	const (
		ldAbs  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge    = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret    = unix.BPF_RET | unix.BPF_K
		denied = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
		allow  = unix.SECCOMP_RET_ALLOW
	)
	prog := []unix.SockFilter{
		{Code: ldAbs, K: 4}, // seccomp_data.arch
		{Code: jeq, K: arch, Jt: 1},
		{Code: ret, K: unix.SECCOMP_RET_KILL_PROCESS},
		{Code: ldAbs, K: 0},               // seccomp_data.nr
		{Code: jge, K: 0x40000000, Jf: 1}, // the x32 ABI
		{Code: ret, K: denied},
	}
	for _, nr := range agentDeniedSyscalls {
		prog = append(prog, unix.SockFilter{Code: jeq, K: nr, Jf: 1}, unix.SockFilter{Code: ret, K: denied})
	}
	// listen(2) on a socket never bound binds it to a free port itself,
	// out of Landlock's bind rule: the agent listened on every address.
	// It serves no one, so it listens on nothing.
	prog = append(prog, unix.SockFilter{Code: jeq, K: unix.SYS_LISTEN, Jf: 1}, unix.SockFilter{Code: ret, K: denied})
	// A send with MSG_FASTOPEN on a TCP socket connects it (TCP Fast
	// Open) without connect(2), and Landlock's connect rules never see
	// it: the agent reached every port that way. sendto and sendmmsg
	// carry the flags in args[3], sendmsg in args[2].
	const jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	prog = append(prog,
		/* 0 */ unix.SockFilter{Code: jeq, K: unix.SYS_SENDTO, Jt: 1},
		/* 1 */ unix.SockFilter{Code: jeq, K: unix.SYS_SENDMMSG, Jf: 4}, // → 6
		/* 2 */ unix.SockFilter{Code: ldAbs, K: 16 + 3*8},
		/* 3 */ unix.SockFilter{Code: jset, K: unix.MSG_FASTOPEN, Jf: 1},
		/* 4 */ unix.SockFilter{Code: ret, K: denied},
		/* 5 */ unix.SockFilter{Code: ret, K: allow},
		/* 6 */ unix.SockFilter{Code: jeq, K: unix.SYS_SENDMSG, Jf: 4}, // → 11, nr still loaded
		/* 7 */ unix.SockFilter{Code: ldAbs, K: 16 + 2*8},
		/* 8 */ unix.SockFilter{Code: jset, K: unix.MSG_FASTOPEN, Jf: 1},
		/* 9 */ unix.SockFilter{Code: ret, K: denied},
		/* 10 */ unix.SockFilter{Code: ret, K: allow},
	)
	// nr != socket: allow. Else load the low word of args[0] (the
	// family; seccomp_data.args at offset 16, little-endian on the
	// supported architectures). AF_UNIX when unixOK; AF_INET and
	// AF_INET6 only as TCP (SOCK_STREAM, protocol 0 or IPPROTO_TCP:
	// Landlock's connect rules hold for TCP alone, and an IPPROTO_MPTCP
	// stream would reach every port) or UDP (SOCK_DGRAM, 0 or
	// IPPROTO_UDP: DNS); no ICMP, SCTP or other protocols.
	prog = append(prog, unix.SockFilter{Code: jeq, K: unix.SYS_SOCKET, Jt: 1}, unix.SockFilter{Code: ret, K: allow},
		unix.SockFilter{Code: ldAbs, K: 16})
	if unixOK {
		prog = append(prog, unix.SockFilter{Code: jeq, K: unix.AF_UNIX, Jf: 1}, unix.SockFilter{Code: ret, K: allow})
	}
	const andK = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	prog = append(prog,
		/* 0 */ unix.SockFilter{Code: jeq, K: unix.AF_INET, Jt: 1},
		/* 1 */ unix.SockFilter{Code: jeq, K: unix.AF_INET6, Jf: 11}, // → 13 deny
		/* 2 */ unix.SockFilter{Code: ldAbs, K: 24}, // args[1], the type
		/* 3 */ unix.SockFilter{Code: andK, K: 0xf}, // without SOCK_NONBLOCK, SOCK_CLOEXEC
		/* 4 */ unix.SockFilter{Code: jeq, K: unix.SOCK_STREAM, Jf: 3}, // → 8
		/* 5 */ unix.SockFilter{Code: ldAbs, K: 32}, // args[2], the protocol
		/* 6 */ unix.SockFilter{Code: jeq, K: 0, Jt: 5}, // → 12 allow
		/* 7 */ unix.SockFilter{Code: jeq, K: unix.IPPROTO_TCP, Jt: 4, Jf: 5},
		/* 8 */ unix.SockFilter{Code: jeq, K: unix.SOCK_DGRAM, Jf: 4},
		/* 9 */ unix.SockFilter{Code: ldAbs, K: 32},
		/* 10 */ unix.SockFilter{Code: jeq, K: 0, Jt: 1},
		/* 11 */ unix.SockFilter{Code: jeq, K: unix.IPPROTO_UDP, Jt: 0, Jf: 1},
		/* 12 */ unix.SockFilter{Code: ret, K: allow},
		/* 13 */ unix.SockFilter{Code: ret, K: denied},
	)
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	return unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fp)), 0, 0)
}
