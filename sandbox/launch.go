package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// launcherArg is os.Args[1] of the launcher: the running executable
// started again to confine itself and exec the program.
const launcherArg = "__planbridge-sandbox-launcher"

// launcherInside is where bwrap binds the launcher in the sandbox.
const launcherInside = "/.planbridge-sandbox-launcher"

// noHome is HOME in a sandbox without bwrap: a directory that does not
// exist.
const noHome = "/nonexistent/planbridge-sandbox-home"

// ExitSetup is the exit status of a launcher that could not set up the
// sandbox; the program did not run. Its stderr says why.
const ExitSetup = 125

// fixedPath is where the launcher looks up a program given by name.
const fixedPath = "/usr/local/bin:/usr/bin:/bin"

var mainCalled atomic.Bool

// Main must be called first thing in main (and in TestMain of a test
// binary that starts sandboxed programs). In an ordinary start it returns
// at once; started as the launcher, it confines the process and execs the
// program, and never returns.
func Main() {
	mainCalled.Store(true)
	if len(os.Args) < 3 || os.Args[1] != launcherArg {
		return
	}
	// Capabilities and seccomp are per thread: set them up and exec from
	// one thread.
	runtime.LockOSThread()
	err := launch(os.Args[2])
	fmt.Fprintf(os.Stderr, "planbridge sandbox: %v\n", err)
	os.Exit(ExitSetup)
}

// spec is what the launcher is told, JSON-encoded in os.Args[2].
type spec struct {
	Read      []string `json:"read"`
	Hidden    []string `json:"hidden,omitempty"`
	Limits    Limits   `json:"limits"`
	Dir       string   `json:"dir"`
	Landlock  bool     `json:"landlock,omitempty"`
	CgroupFDs []int    `json:"cgroup_fds,omitempty"` // write "0" to each to join the pids and memory cgroups
	InBwrap   bool     `json:"bwrap,omitempty"`      // started by bwrap: HOME is an empty tmpfs
	Argv      []string `json:"argv"`

	// The agent profile (Profile "agent", see [AgentConfig]).
	Profile string      `json:"profile,omitempty"`
	Write   []string    `json:"write,omitempty"`
	Ports   []uint16    `json:"ports,omitempty"`
	Agent   AgentLimits `json:"agent_limits,omitempty"`
	// ReadOnlyMounts: the launcher starts in a mount namespace of its own
	// and makes every mount but the Write directories read-only.
	ReadOnlyMounts bool `json:"ro_mounts,omitempty"`
	// CgroupDir is the agent's pids cgroup, which the launcher joins
	// (root only, where a pids hierarchy is writable).
	CgroupDir string `json:"cgroup_dir,omitempty"`
}

func (s spec) encode() (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}

// launch confines this process as sp says and execs the program; it
// returns only on failure.
func launch(arg string) error {
	var sp spec
	if err := json.Unmarshal([]byte(arg), &sp); err != nil || len(sp.Argv) == 0 {
		return fmt.Errorf("bad launcher arguments")
	}
	for _, fd := range sp.CgroupFDs {
		// Join the pids and memory cgroups through the descriptors the
		// parent opened (the cgroup file system is not mounted inside
		// bwrap).
		f := os.NewFile(uintptr(fd), "cgroup.procs")
		_, err := f.Write([]byte("0"))
		f.Close()
		if err != nil {
			return fmt.Errorf("join the sandbox's cgroup: %w", err)
		}
	}
	if sp.Profile == profileAgent {
		return confineAgentAndExec(sp)
	}
	if sp.Profile == profileMountProbe {
		if err := readOnlyMounts(nil); err != nil {
			return err
		}
		os.Exit(0)
	}
	return confineAndExec(sp)
}

// systemDirs are readable by every sandboxed program: programs, libraries
// and their data. /etc is not among them: only the files below.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// systemEtc are the /etc entries commands need: the dynamic loader's cache
// and configuration, user and group names (ls -l, id; no passwords live in
// passwd), name-service switch, time zone, locale aliases, the
// alternatives links (awk is /etc/alternatives/awk), file(1)'s local magic
// and git's system configuration (git fails when it exists but cannot be
// read). Nothing that holds a secret.
var systemEtc = []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/nsswitch.conf",
	"/etc/passwd", "/etc/group", "/etc/localtime", "/etc/timezone", "/etc/locale.alias", "/etc/alternatives",
	"/etc/magic", "/etc/magic.mime", "/etc/gitconfig", "/etc/gitattributes"}

// systemDev are the device files programs may read; /dev/null is also
// writable. No /dev/shm, no terminals, no /dev/fd.
var systemDev = []string{"/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"}

// bwrapEtc are the systemEtc entries bound into bwrap's root: the others
// are optional for the programs (git fails only on a configuration file
// that exists and cannot be read, as it may under Landlock alone), and
// every bind costs start-up time.
var bwrapEtc = []string{"/etc/ld.so.cache", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/localtime", "/etc/alternatives"}

// bwrapArgs are bwrap's options for sp; the launcher command follows.
func bwrapArgs(sp spec, launcher string) []string {
	a := []string{"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", t, d)
			}
		default:
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, f := range bwrapEtc {
		a = append(a, "--ro-bind-try", f, f)
	}
	// No /proc: the sandbox may not read any process's state, its own
	// included (the same as under Landlock alone), and the pid namespace
	// hides the others anyway. A handful of devices instead of --dev: no
	// /dev/shm, no pts.
	if raceBuild {
		a = append(a, "--proc", "/proc")
	}
	a = append(a, "--dev-bind", os.DevNull, os.DevNull)
	for _, d := range systemDev {
		// A device needs --dev-bind (a plain bind is mounted nodev);
		// Landlock keeps these read-only.
		a = append(a, "--dev-bind-try", d, d)
	}
	a = append(a, "--size", "1048576", "--tmpfs", "/tmp")
	if home := os.Getenv("HOME"); filepath.IsAbs(home) && home != "/" && !underSystem(home) {
		a = append(a, "--size", "1048576", "--tmpfs", filepath.Clean(home))
	}
	// Parents before children: a hidden directory inside a root is
	// covered after the root is bound, and a root inside a hidden
	// directory is bound again on top of the cover.
	type mount struct {
		path   string
		hidden bool
	}
	var ms []mount
	for _, r := range sp.Read {
		ms = append(ms, mount{r, false})
	}
	for _, h := range sp.Hidden {
		ms = append(ms, mount{h, true})
	}
	sort.SliceStable(ms, func(i, j int) bool { return len(ms[i].path) < len(ms[j].path) })
	for _, m := range ms {
		fi, err := os.Stat(m.path)
		switch {
		case err != nil:
		case !m.hidden:
			a = append(a, "--ro-bind", m.path, m.path)
		case fi.IsDir():
			a = append(a, "--size", "4096", "--tmpfs", m.path)
		default:
			a = append(a, "--ro-bind", os.DevNull, m.path)
		}
	}
	a = append(a, "--ro-bind", launcher, launcherInside, "--remount-ro", "/", "--chdir", sp.Dir, "--")
	return a
}

func underSystem(p string) bool {
	for _, d := range append(systemDirs, "/etc", "/proc", "/sys", "/dev") {
		if beneath(p, d) {
			return true
		}
	}
	return false
}

// confineAndExec is the inner stage: limits, capabilities, Landlock and
// seccomp, then exec.
func confineAndExec(sp spec) error {
	// Count before Landlock hides /proc.
	nproc := sp.Limits.withDefaults().Processes
	if os.Geteuid() != 0 && !freshUserNS() {
		// RLIMIT_NPROC counts every process of the real uid: leave room
		// for those already running.
		nproc += uint64(countProcesses(os.Getuid()))
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if sp.Landlock {
		if err := restrictLandlock(sp); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	if err := installSeccomp(); err != nil && !errors.Is(err, errNoSeccomp) {
		return fmt.Errorf("seccomp: %w", err)
	}
	if err := os.Chdir(sp.Dir); err != nil {
		return err
	}
	env := os.Environ()
	if !sp.InBwrap {
		// Without bwrap's empty tmpfs the real home is there but
		// unreadable, and git fails on a configuration file it cannot
		// read: point HOME at nothing.
		env = append(env, "HOME="+noHome)
	}
	path := sp.Argv[0]
	if !strings.Contains(path, "/") {
		found := ""
		for _, d := range filepath.SplitList(fixedPath) {
			p := filepath.Join(d, path)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				found = p
				break
			}
		}
		if found == "" {
			return fmt.Errorf("%s: not found in %s", path, fixedPath)
		}
		path = found
	}
	// Limits last: under the address-space limit the Go runtime of the
	// launcher itself could no longer grow.
	if err := setLimits(sp.Limits, nproc); err != nil {
		return err
	}
	// No descriptor but stdin, stdout and stderr (the cgroup's is used
	// above): one inherited without close-on-exec would be open past
	// every rule that applies when a file is opened.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("close the inherited descriptors: %w", err)
	}
	return fmt.Errorf("exec %s: %w", sp.Argv[0], syscall.Exec(path, sp.Argv, env))
}

func setLimits(lim Limits, nproc uint64) error {
	l := lim.withDefaults()
	for _, lim := range []struct {
		res int
		v   uint64
	}{
		{unix.RLIMIT_AS, l.AddressSpace},
		{unix.RLIMIT_CPU, l.CPUSeconds},
		{unix.RLIMIT_FSIZE, 0},
		{unix.RLIMIT_CORE, 0},
		{unix.RLIMIT_NOFILE, l.OpenFiles},
		{unix.RLIMIT_NPROC, nproc},
		{unix.RLIMIT_MEMLOCK, 0},
		{unix.RLIMIT_MSGQUEUE, 0},
	} {
		rl := unix.Rlimit{Cur: lim.v, Max: lim.v}
		if lim.res == unix.RLIMIT_CPU {
			rl.Max++ // SIGXCPU (which says why) a second before SIGKILL
		}
		var old unix.Rlimit
		if err := unix.Getrlimit(lim.res, &old); err == nil && old.Max < lim.v {
			rl = unix.Rlimit{Cur: old.Max, Max: old.Max}
		}
		if err := unix.Setrlimit(lim.res, &rl); err != nil {
			return fmt.Errorf("setrlimit %d: %w", lim.res, err)
		}
	}
	return nil
}

// freshUserNS reports whether this process is in a user namespace other
// than the initial one (bwrap made one): there RLIMIT_NPROC counts only
// the namespace's processes.
func freshUserNS() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return !(len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295")
}

// countProcesses counts the processes whose real uid is uid.
func countProcesses(uid int) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	want := strconv.Itoa(uid)
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
				if f[1] == want {
					n++
				}
				break
			}
		}
	}
	return n
}

// dropCapabilities empties every capability set and, where this process
// may, the bounding set and the securebits that would give uid 0 its
// capabilities back on exec.
func dropCapabilities() error {
	for c := 0; c <= 63; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); errors.Is(err, unix.EINVAL) {
			break // past the last capability
		}
	}
	unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	const secbits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5 // NOROOT, NO_SETUID_FIXUP, KEEP_CAPS, each locked
	unix.Prctl(unix.PR_SET_SECUREBITS, secbits&^(1<<4), 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("check capabilities: %w", err)
	}
	if data[0].Effective|data[0].Permitted|data[1].Effective|data[1].Permitted != 0 {
		return fmt.Errorf("capabilities remain after dropping them")
	}
	return nil
}

func restrictLandlock(sp spec) error {
	var dirs, files []string
	add := func(p string) {
		fi, err := os.Stat(p)
		switch {
		case err != nil:
		case fi.IsDir():
			dirs = append(dirs, p)
		default:
			files = append(files, p)
		}
	}
	for _, p := range systemDirs {
		add(p)
	}
	for _, p := range append(systemEtc, systemDev...) {
		add(p)
	}
	for _, r := range sp.Read {
		for _, p := range carve(r, sp.Hidden) {
			add(p)
		}
	}
	rules := []landlock.Rule{landlock.RWFiles(os.DevNull)}
	if len(dirs) > 0 {
		rules = append(rules, landlock.RODirs(dirs...))
	}
	if len(files) > 0 {
		rules = append(rules, landlock.ROFiles(files...))
	}
	// Restrict only this thread (the one that execs; no_new_privs is set
	// on it already): the all-threads path of go-landlock needs /proc,
	// which the sandbox does not have.
	fd, flags, err := landlock.V7.BestEffort().NewRulesetFD(rules...)
	if err != nil || fd < 0 {
		return err
	}
	defer unix.Close(fd)
	return ll.LandlockRestrictSelf(fd, flags)
}

// carve returns the paths whose subtrees make up root without the hidden
// paths beneath it: Landlock can only grant subtrees, so a root holding a
// hidden path is granted entry by entry along the way down to it. Entries
// are listed when the sandbox starts, so later ones are covered by the
// next command.
func carve(root string, hidden []string) []string {
	var inside []string
	for _, h := range hidden {
		if h == root {
			return nil
		}
		// A hidden path above root does not matter: the more specific
		// root wins, as in the read policy.
		if beneath(h, root) {
			inside = append(inside, h)
		}
	}
	if len(inside) == 0 {
		return []string{root}
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.Type()&os.ModeSymlink != 0 {
			// Granting a link would grant its target; a link to
			// elsewhere in a root works through that root's rule.
			continue
		}
		out = append(out, carve(filepath.Join(root, e.Name()), inside)...)
	}
	return out
}
