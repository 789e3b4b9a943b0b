package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// runBPF runs a classic BPF seccomp program over one seccomp_data (the
// opcodes the filters use) and returns its verdict.
func runBPF(t *testing.T, prog []unix.SockFilter, arch, nr uint32, args [6]uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case bpfLdAbs:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case bpfAndK:
			acc &= in.K
		case bpfRet:
			return in.K
		case bpfJeq, bpfJge, bpfJset:
			var c bool
			switch in.Code {
			case bpfJeq:
				c = acc == in.K
			case bpfJge:
				c = acc >= in.K
			default:
				c = acc&in.K != 0
			}
			if c {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		default:
			t.Fatalf("instruction %d: opcode %#x", pc, in.Code)
		}
	}
	t.Fatalf("the program ran off its end")
	return 0
}

// TestReadOnlyFilterVerdicts checks the read-only filter's verdict for
// calls of every class, with the arguments it checks, by running the BPF
// program itself.
func TestReadOnlyFilterVerdicts(t *testing.T) {
	prog, err := readOnlyFilter()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d instructions, %d rules", len(prog), len(readOnlyRules()))
	arch := seccompArch()
	allowV, eperm, eacces, enosys := uint32(retAllow), retErrno(unix.EPERM), retErrno(unix.EACCES), retErrno(unix.ENOSYS)
	const thread = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD |
		unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID
	for _, c := range []struct {
		name string
		nr   uint32
		args [6]uint64
		want uint32
	}{
		{"read", unix.SYS_READ, [6]uint64{}, allowV},
		{"openat", unix.SYS_OPENAT, [6]uint64{}, allowV},
		{"execve", unix.SYS_EXECVE, [6]uint64{}, allowV},
		{"clone thread", unix.SYS_CLONE, [6]uint64{thread}, allowV},
		{"clone fork", unix.SYS_CLONE, [6]uint64{unix.CLONE_CHILD_CLEARTID | unix.CLONE_CHILD_SETTID | uint64(unix.SIGCHLD)}, allowV},
		{"clone vfork", unix.SYS_CLONE, [6]uint64{unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD)}, allowV},
		{"clone newuser", unix.SYS_CLONE, [6]uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, eperm},
		{"clone newns", unix.SYS_CLONE, [6]uint64{unix.CLONE_NEWNS | thread}, eperm},
		{"clone parent", unix.SYS_CLONE, [6]uint64{unix.CLONE_PARENT | uint64(unix.SIGCHLD)}, eperm},
		{"clone pidfd", unix.SYS_CLONE, [6]uint64{unix.CLONE_PIDFD | uint64(unix.SIGCHLD)}, eperm},
		{"clone3", unix.SYS_CLONE3, [6]uint64{}, enosys},
		{"unshare", unix.SYS_UNSHARE, [6]uint64{0}, eperm},
		{"setns", unix.SYS_SETNS, [6]uint64{}, eperm},
		{"ioctl TCGETS", unix.SYS_IOCTL, [6]uint64{1, unix.TCGETS}, allowV},
		{"ioctl TIOCGWINSZ", unix.SYS_IOCTL, [6]uint64{1, unix.TIOCGWINSZ}, allowV},
		{"ioctl FIONREAD", unix.SYS_IOCTL, [6]uint64{0, fionread}, allowV},
		{"ioctl TIOCSTI", unix.SYS_IOCTL, [6]uint64{0, unix.TIOCSTI}, eperm},
		// The kernel reads the request as an unsigned int: high bits
		// change nothing.
		{"ioctl TIOCSTI high bits", unix.SYS_IOCTL, [6]uint64{0, 1<<32 | unix.TIOCSTI}, eperm},
		{"ioctl TCGETS high bits", unix.SYS_IOCTL, [6]uint64{0, 1<<32 | unix.TCGETS}, allowV},
		{"ioctl TIOCLINUX", unix.SYS_IOCTL, [6]uint64{0, unix.TIOCLINUX}, eperm},
		{"ioctl TIOCSETD", unix.SYS_IOCTL, [6]uint64{0, unix.TIOCSETD}, eperm},
		{"ioctl TIOCSCTTY", unix.SYS_IOCTL, [6]uint64{0, unix.TIOCSCTTY}, eperm},
		{"ioctl TCSETS", unix.SYS_IOCTL, [6]uint64{0, unix.TCSETS}, eperm},
		{"ioctl TIOCSWINSZ", unix.SYS_IOCTL, [6]uint64{0, unix.TIOCSWINSZ}, eperm},
		{"ioctl FS_IOC_SETFLAGS", unix.SYS_IOCTL, [6]uint64{3, unix.FS_IOC_SETFLAGS}, eperm},
		{"fcntl F_DUPFD_CLOEXEC", unix.SYS_FCNTL, [6]uint64{0, unix.F_DUPFD_CLOEXEC}, allowV},
		{"fcntl F_SETFL", unix.SYS_FCNTL, [6]uint64{0, unix.F_SETFL}, allowV},
		{"fcntl F_SETOWN", unix.SYS_FCNTL, [6]uint64{0, unix.F_SETOWN}, eperm},
		{"fcntl F_SETLKW", unix.SYS_FCNTL, [6]uint64{0, unix.F_SETLKW}, eperm},
		{"fcntl F_NOTIFY", unix.SYS_FCNTL, [6]uint64{0, unix.F_NOTIFY}, eperm},
		{"fcntl F_SETLEASE", unix.SYS_FCNTL, [6]uint64{0, unix.F_SETLEASE}, eperm},
		{"prctl PR_SET_NAME", unix.SYS_PRCTL, [6]uint64{unix.PR_SET_NAME}, allowV},
		{"prctl PR_SET_SECCOMP", unix.SYS_PRCTL, [6]uint64{unix.PR_SET_SECCOMP}, allowV},
		{"prctl PR_SET_MM", unix.SYS_PRCTL, [6]uint64{unix.PR_SET_MM}, eperm},
		{"prctl PR_SET_PTRACER", unix.SYS_PRCTL, [6]uint64{unix.PR_SET_PTRACER}, eperm},
		{"prctl PR_SET_DUMPABLE", unix.SYS_PRCTL, [6]uint64{unix.PR_SET_DUMPABLE}, eperm},
		{"madvise DONTNEED", unix.SYS_MADVISE, [6]uint64{0, 0, unix.MADV_DONTNEED}, allowV},
		{"madvise REMOVE", unix.SYS_MADVISE, [6]uint64{0, 0, unix.MADV_REMOVE}, eperm},
		{"madvise MERGEABLE", unix.SYS_MADVISE, [6]uint64{0, 0, unix.MADV_MERGEABLE}, eperm},
		{"madvise PAGEOUT", unix.SYS_MADVISE, [6]uint64{0, 0, unix.MADV_PAGEOUT}, eperm},
		{"personality query", unix.SYS_PERSONALITY, [6]uint64{0xffffffff}, allowV},
		{"personality ADDR_NO_RANDOMIZE", unix.SYS_PERSONALITY, [6]uint64{addrNoRandomize}, eperm},
		{"prlimit self", unix.SYS_PRLIMIT64, [6]uint64{0, unix.RLIMIT_CORE}, allowV},
		{"prlimit other", unix.SYS_PRLIMIT64, [6]uint64{1, unix.RLIMIT_CORE}, eperm},
		{"sched_setaffinity other", unix.SYS_SCHED_SETAFFINITY, [6]uint64{1}, eperm},
		{"setpriority", unix.SYS_SETPRIORITY, [6]uint64{}, eperm},
		{"ioprio_set", unix.SYS_IOPRIO_SET, [6]uint64{}, eperm},
		{"kill", unix.SYS_KILL, [6]uint64{0, 0}, allowV},
		{"rt_sigqueueinfo", unix.SYS_RT_SIGQUEUEINFO, [6]uint64{}, eperm},
		{"setsid", unix.SYS_SETSID, [6]uint64{}, eperm},
		{"setpgid", unix.SYS_SETPGID, [6]uint64{}, eperm},
		{"socket", unix.SYS_SOCKET, [6]uint64{unix.AF_UNIX}, eacces},
		{"shmget", unix.SYS_SHMGET, [6]uint64{}, eacces},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, [6]uint64{}, eacces},
		{"fchmodat", unix.SYS_FCHMODAT, [6]uint64{}, eacces},
		{"utimensat", unix.SYS_UTIMENSAT, [6]uint64{}, eacces},
		{"splice", unix.SYS_SPLICE, [6]uint64{}, enosys},
		{"inotify_init1", unix.SYS_INOTIFY_INIT1, [6]uint64{}, enosys},
		{"memfd_create", unix.SYS_MEMFD_CREATE, [6]uint64{}, eperm},
		{"ptrace", unix.SYS_PTRACE, [6]uint64{}, eperm},
		{"mount", unix.SYS_MOUNT, [6]uint64{}, eperm},
		{"not a call", 1000, [6]uint64{}, eperm},
		{"x32 read", 0x40000000, [6]uint64{}, eperm},
	} {
		if got := runBPF(t, prog, arch, c.nr, c.args); got != c.want {
			t.Errorf("%s: verdict %#x, want %#x", c.name, got, c.want)
		}
	}
	// A foreign architecture (the 32-bit ABI of the same machine) is
	// killed: its numbers mean other calls.
	if got := runBPF(t, prog, unix.AUDIT_ARCH_I386, unix.SYS_READ, [6]uint64{}); got != unix.SECCOMP_RET_KILL_PROCESS {
		t.Errorf("a foreign architecture: verdict %#x", got)
	}
}

// corpus returns the commands of testdata/readonly-corpus.txt.
func corpus(t testing.TB) []string {
	b, err := os.ReadFile("testdata/readonly-corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	return cmds
}

// corpusScript is a shell script that runs every corpus command as Plan's
// runner launches it (git, rg, sed and gawk with their safety options;
// the awk programs again with mawk), each after a marker line.
func corpusScript(cmds []string) string {
	var b strings.Builder
	b.WriteString(`GIT_CONFIG_NOSYSTEM=1 GIT_OPTIONAL_LOCKS=0 GIT_TERMINAL_PROMPT=0 GIT_NO_LAZY_FETCH=1 GIT_PAGER=cat
export GIT_CONFIG_NOSYSTEM GIT_OPTIONAL_LOCKS GIT_TERMINAL_PROMPT GIT_NO_LAZY_FETCH GIT_PAGER
git() { case $1 in diff|log|show) s=$1; shift; set -- "$s" --no-ext-diff --no-textconv "$@";; esac; command git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.untrackedCache=false -c core.hooksPath=/dev/null -c core.pager=cat -c diff.external= -c log.showSignature=false -c gpg.program=false "$@"; }
rg() { command rg --no-config "$@"; }
sed() { command sed --sandbox "$@"; }
awk() { command gawk --sandbox "$@"; }
`)
	n := 0
	emit := func(c string) {
		n++
		fmt.Fprintf(&b, "echo '### %d %s'\n%s\necho \"### exit $?\"\n", n, strings.ReplaceAll(c, "'", ""), c)
	}
	for _, c := range cmds {
		emit(c)
		if strings.HasPrefix(c, "awk ") {
			emit("command mawk " + strings.TrimPrefix(c, "awk "))
		}
	}
	return b.String()
}

// corpusFixture adds to f's workspace the files the corpus reads and a
// second commit and a tag.
func corpusFixture(t *testing.T, f *fixture) {
	t.Helper()
	os.MkdirAll(filepath.Join(f.ws, "sub", "deep"), 0o755)
	for name, s := range map[string]string{"other.txt": "alpha\nBETA\n", "d.json": `{"a":1,"b":[1,2]}` + "\n",
		"sub/deep/t.txt": "x y z\n1 2 3\n"} {
		os.WriteFile(filepath.Join(f.ws, name), []byte(s), 0o644)
	}
	os.WriteFile(filepath.Join(f.ws, "notes.txt"), []byte("alpha\nbeta\ngamma\nbeta\n"), 0o644)
	for _, args := range [][]string{{"add", "."}, {"commit", "-q", "-m", "second"}, {"tag", "v1"}} {
		cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
		cmd.Dir = f.ws
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
			"GIT_AUTHOR_DATE=2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2020-01-01T00:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	exec.Command("chown", "-R", fmt.Sprintf("%d:%d", f.uid, f.uid), f.ws).Run()
}

// unsandboxed runs argv in dir as uid without the sandbox, with the
// environment the sandbox gives it, and returns its combined output.
func unsandboxed(t *testing.T, uid int, dir, home string, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + fixedPath, "HOME=" + home}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("%q unsandboxed: %v\n%s", argv, err, out.String())
	}
	return out.String()
}

// differs are the corpus commands that exit 1: they report a difference.
var differs = map[string]bool{"false": true, "diff notes.txt other.txt": true, "diff -u notes.txt other.txt": true,
	"cmp notes.txt other.txt": true}

// TestReadOnlyCorpus runs the corpus of allowed commands in the
// read-only sandbox, with bwrap and without, as root and as nobody: each
// must work and print what it prints unsandboxed (the real programs are
// the oracle), so the allowlist lets every one of them do its work.
func TestReadOnlyCorpus(t *testing.T) {
	script := corpusScript(corpus(t))
	for _, uid := range []int{0, 65534} {
		for _, noBwrap := range []bool{false, true} {
			t.Run(fmt.Sprintf("uid=%d/bwrap=%v", uid, !noBwrap), func(t *testing.T) {
				f := newFixture(t, uid)
				corpusFixture(t, f)
				want := unsandboxed(t, uid, f.ws, noHome, "sh", "-c", script)
				// The oracle itself: every command worked (exit 0), but
				// those that report a difference.
				cmd := ""
				for _, l := range strings.Split(want, "\n") {
					if rest, ok := strings.CutPrefix(l, "### exit "); ok {
						if rest != "0" && !differs[cmd] {
							t.Errorf("%q exits %s unsandboxed", cmd, rest)
						}
					} else if rest, ok := strings.CutPrefix(l, "### "); ok {
						_, cmd, _ = strings.Cut(rest, " ")
					}
				}
				got, code := f.run(t, f.sandbox(t, noBwrap, Limits{}), nil, "sh", "-c", script)
				if code != 0 {
					t.Errorf("exit %d", code)
				}
				if got == want {
					return
				}
				g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
				for i := 0; i < len(g) || i < len(w); i++ {
					var gl, wl string
					if i < len(g) {
						gl = g[i]
					}
					if i < len(w) {
						wl = w[i]
					}
					if gl != wl {
						from := max(0, i-5)
						t.Fatalf("line %d differs:\nsandboxed:   %q\nunsandboxed: %q\ncontext (unsandboxed):\n%s", i+1, gl, wl,
							strings.Join(w[from:min(len(w), i+3)], "\n"))
					}
				}
			})
		}
	}
}

// syscallHelper runs inside the sandbox as the attacker: it makes one
// call of each class the read-only filter refuses, with arguments that
// would do something (or fail differently) if the call got through, and
// prints name=ERRNO (ok when it succeeded) for each. The working
// directory is the workspace, holding notes.txt.
func syscallHelper() int {
	ppid := uintptr(os.Getppid())
	str := func(s string) uintptr {
		b := append([]byte(s), 0)
		return uintptr(unsafe.Pointer(&b[0]))
	}
	buf := make([]byte, 4096)
	p := uintptr(unsafe.Pointer(&buf[0]))
	// A struct sembuf waiting for nothing: IPC_NOWAIT in sem_flg, should a
	// semop get through.
	sem := []uint16{0, 0, unix.IPC_NOWAIT}
	sp := uintptr(unsafe.Pointer(&sem[0]))
	ws, err := os.Open("notes.txt")
	if err != nil {
		fmt.Println("open:", err)
		return 2
	}
	fd := ws.Fd()
	mem, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		fmt.Println("mmap:", err)
		return 2
	}
	m := uintptr(unsafe.Pointer(&mem[0]))
	var pipe [2]int
	unix.Pipe2(pipe[:], unix.O_CLOEXEC)
	atfd := unix.AT_FDCWD
	at := uintptr(atfd)
	neg := ^uintptr(0) // -1
	uid, gid := uintptr(os.Getuid()), uintptr(os.Getgid())
	calls := []struct {
		name string
		nr   uintptr
		a    [6]uintptr
	}{
		// System V IPC and POSIX message queues.
		{"shmget", unix.SYS_SHMGET, [6]uintptr{unix.IPC_PRIVATE, 4096, unix.IPC_CREAT | 0o600}},
		{"shmat", unix.SYS_SHMAT, [6]uintptr{0, 0, 0}},
		{"shmdt", unix.SYS_SHMDT, [6]uintptr{m}},
		{"shmctl", unix.SYS_SHMCTL, [6]uintptr{0, unix.IPC_STAT, p}},
		{"msgget", unix.SYS_MSGGET, [6]uintptr{unix.IPC_PRIVATE, unix.IPC_CREAT | 0o600}},
		{"msgsnd", unix.SYS_MSGSND, [6]uintptr{0, p, 8, 0}},
		{"msgrcv", unix.SYS_MSGRCV, [6]uintptr{0, p, 8, 0, unix.IPC_NOWAIT}},
		{"msgctl", unix.SYS_MSGCTL, [6]uintptr{0, unix.IPC_STAT, p}},
		{"semget", unix.SYS_SEMGET, [6]uintptr{unix.IPC_PRIVATE, 1, unix.IPC_CREAT | 0o600}},
		{"semop", unix.SYS_SEMOP, [6]uintptr{0, sp, 1}},
		{"semtimedop", unix.SYS_SEMTIMEDOP, [6]uintptr{0, sp, 1, 0}},
		{"semctl", unix.SYS_SEMCTL, [6]uintptr{0, 0, unix.IPC_STAT, p}},
		{"mq_open", unix.SYS_MQ_OPEN, [6]uintptr{str("planbridge-attack"), unix.O_RDWR | unix.O_CREAT, 0o600, 0}},
		{"mq_unlink", unix.SYS_MQ_UNLINK, [6]uintptr{str("planbridge-attack")}},
		{"mq_timedsend", unix.SYS_MQ_TIMEDSEND, [6]uintptr{neg, p, 1, 0, 0}},
		{"mq_timedreceive", unix.SYS_MQ_TIMEDRECEIVE, [6]uintptr{neg, p, 1, 0, 0}},
		{"mq_notify", unix.SYS_MQ_NOTIFY, [6]uintptr{neg, 0}},
		{"mq_getsetattr", unix.SYS_MQ_GETSETATTR, [6]uintptr{neg, 0, p}},
		// Sockets of every family.
		{"socket-unix", unix.SYS_SOCKET, [6]uintptr{unix.AF_UNIX, unix.SOCK_STREAM, 0}},
		{"socket-inet", unix.SYS_SOCKET, [6]uintptr{unix.AF_INET, unix.SOCK_DGRAM, 0}},
		{"socket-inet6", unix.SYS_SOCKET, [6]uintptr{unix.AF_INET6, unix.SOCK_STREAM, 0}},
		{"socket-netlink", unix.SYS_SOCKET, [6]uintptr{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}},
		{"socket-packet", unix.SYS_SOCKET, [6]uintptr{unix.AF_PACKET, unix.SOCK_RAW, 0}},
		{"socket-vsock", unix.SYS_SOCKET, [6]uintptr{unix.AF_VSOCK, unix.SOCK_STREAM, 0}},
		{"socketpair", unix.SYS_SOCKETPAIR, [6]uintptr{unix.AF_UNIX, unix.SOCK_STREAM, 0, p}},
		// Other processes: the parent, planbridge.
		{"ptrace", unix.SYS_PTRACE, [6]uintptr{unix.PTRACE_ATTACH, ppid}},
		{"process_vm_readv", unix.SYS_PROCESS_VM_READV, [6]uintptr{ppid, p, 1, p, 1, 0}},
		{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV, [6]uintptr{ppid, p, 1, p, 1, 0}},
		{"kcmp", unix.SYS_KCMP, [6]uintptr{uintptr(os.Getpid()), ppid, 0, 0, 0}}, // KCMP_FILE,
		{"pidfd_open", unix.SYS_PIDFD_OPEN, [6]uintptr{ppid, 0}},
		{"pidfd_getfd", unix.SYS_PIDFD_GETFD, [6]uintptr{neg, 0, 0}},
		{"pidfd_send_signal", unix.SYS_PIDFD_SEND_SIGNAL, [6]uintptr{neg, 0, 0, 0}},
		{"process_madvise", unix.SYS_PROCESS_MADVISE, [6]uintptr{neg, p, 1, unix.MADV_COLD, 0}},
		{"rt_sigqueueinfo", unix.SYS_RT_SIGQUEUEINFO, [6]uintptr{ppid, 0, p}},
		{"prlimit-parent", unix.SYS_PRLIMIT64, [6]uintptr{ppid, unix.RLIMIT_CORE, 0, p}},
		{"sched_setaffinity-parent", unix.SYS_SCHED_SETAFFINITY, [6]uintptr{ppid, 8, p}},
		{"setpriority", unix.SYS_SETPRIORITY, [6]uintptr{unix.PRIO_PROCESS, 0, 19}},
		{"ioprio_set", unix.SYS_IOPRIO_SET, [6]uintptr{1, 0, 0}},
		// Mounts and namespaces.
		{"mount", unix.SYS_MOUNT, [6]uintptr{str("none"), str("/tmp"), str("tmpfs"), 0, 0}},
		{"umount2", unix.SYS_UMOUNT2, [6]uintptr{str("/"), unix.MNT_DETACH}},
		{"pivot_root", unix.SYS_PIVOT_ROOT, [6]uintptr{str("/"), str("/")}},
		{"open_tree", unix.SYS_OPEN_TREE, [6]uintptr{at, str("/"), 0}},
		{"move_mount", unix.SYS_MOVE_MOUNT, [6]uintptr{neg, str(""), at, str("/tmp"), 0}},
		{"fsopen", unix.SYS_FSOPEN, [6]uintptr{str("tmpfs"), 0}},
		{"fsconfig", unix.SYS_FSCONFIG, [6]uintptr{neg, 0, 0, 0, 0}},
		{"fsmount", unix.SYS_FSMOUNT, [6]uintptr{neg, 0, 0}},
		{"fspick", unix.SYS_FSPICK, [6]uintptr{at, str("/"), 0}},
		{"mount_setattr", unix.SYS_MOUNT_SETATTR, [6]uintptr{at, str("/"), 0, p, 32}},
		{"chroot", unix.SYS_CHROOT, [6]uintptr{str(".")}},
		{"unshare-user", unix.SYS_UNSHARE, [6]uintptr{unix.CLONE_NEWUSER}},
		{"unshare-files", unix.SYS_UNSHARE, [6]uintptr{unix.CLONE_FILES}},
		{"setns", unix.SYS_SETNS, [6]uintptr{neg, 0}},
		{"clone3", unix.SYS_CLONE3, [6]uintptr{p, 88}},
		// Keyrings, bpf, perf, userfaultfd, io_uring.
		{"keyctl", unix.SYS_KEYCTL, [6]uintptr{unix.KEYCTL_GET_KEYRING_ID, neg - 2, 0}}, // KEY_SPEC_SESSION_KEYRING
		{"add_key", unix.SYS_ADD_KEY, [6]uintptr{str("user"), str("planbridge"), p, 1, neg - 1}},
		{"request_key", unix.SYS_REQUEST_KEY, [6]uintptr{str("user"), str("planbridge"), 0, 0}},
		{"bpf", unix.SYS_BPF, [6]uintptr{unix.BPF_MAP_CREATE, p, 64}},
		{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, [6]uintptr{p, 0, neg, neg, 0}},
		{"userfaultfd", unix.SYS_USERFAULTFD, [6]uintptr{unix.O_CLOEXEC}},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, [6]uintptr{1, p}},
		{"io_uring_enter", unix.SYS_IO_URING_ENTER, [6]uintptr{neg, 0, 0, 0, 0, 0}},
		{"io_uring_register", unix.SYS_IO_URING_REGISTER, [6]uintptr{neg, 0, 0, 0}},
		// Anonymous files, fileless execution, file handles.
		{"memfd_create", unix.SYS_MEMFD_CREATE, [6]uintptr{str("x"), 0}},
		{"memfd_secret", unix.SYS_MEMFD_SECRET, [6]uintptr{0}},
		{"execveat", unix.SYS_EXECVEAT, [6]uintptr{neg, str(""), 0, 0, unix.AT_EMPTY_PATH}},
		{"name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT, [6]uintptr{at, str("notes.txt"), p, p + 2048, 0}},
		{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, [6]uintptr{at, p, 0}},
		// Terminals: pushing input, the console, line disciplines.
		{"ioctl-TIOCSTI", unix.SYS_IOCTL, [6]uintptr{1, unix.TIOCSTI, p}},
		{"ioctl-TIOCLINUX", unix.SYS_IOCTL, [6]uintptr{1, unix.TIOCLINUX, p}},
		{"ioctl-TIOCSETD", unix.SYS_IOCTL, [6]uintptr{1, unix.TIOCSETD, p}},
		{"ioctl-TIOCSCTTY", unix.SYS_IOCTL, [6]uintptr{1, unix.TIOCSCTTY, 0}},
		{"ioctl-TIOCCONS", unix.SYS_IOCTL, [6]uintptr{1, unix.TIOCCONS, 0}},
		// Identities, sessions, the machine.
		{"setuid", unix.SYS_SETUID, [6]uintptr{uid}},
		{"setgid", unix.SYS_SETGID, [6]uintptr{gid}},
		{"setresuid", unix.SYS_SETRESUID, [6]uintptr{neg, neg, neg}},
		{"setgroups", unix.SYS_SETGROUPS, [6]uintptr{0, 0}},
		{"capset", unix.SYS_CAPSET, [6]uintptr{p, p + 64}},
		{"setsid", unix.SYS_SETSID, [6]uintptr{}},
		{"setpgid", unix.SYS_SETPGID, [6]uintptr{0, 0}},
		{"reboot", unix.SYS_REBOOT, [6]uintptr{unix.LINUX_REBOOT_MAGIC1, unix.LINUX_REBOOT_MAGIC2, unix.LINUX_REBOOT_CMD_CAD_OFF, 0}},
		{"swapon", unix.SYS_SWAPON, [6]uintptr{str("notes.txt"), 0}},
		{"init_module", unix.SYS_INIT_MODULE, [6]uintptr{p, 16, str("")}},
		{"finit_module", unix.SYS_FINIT_MODULE, [6]uintptr{fd, str(""), 0}},
		{"delete_module", unix.SYS_DELETE_MODULE, [6]uintptr{str("planbridge"), 0}},
		{"kexec_load", unix.SYS_KEXEC_LOAD, [6]uintptr{0, 0, 0, 0}},
		{"acct", unix.SYS_ACCT, [6]uintptr{0}},
		{"quotactl", unix.SYS_QUOTACTL, [6]uintptr{0x800007, str("/"), 0, p}}, // Q_SYNC|USRQUOTA
		{"syslog", unix.SYS_SYSLOG, [6]uintptr{10, 0, 0}},                     // SYSLOG_ACTION_SIZE_BUFFER
		{"adjtimex", unix.SYS_ADJTIMEX, [6]uintptr{p}},
		{"sethostname", unix.SYS_SETHOSTNAME, [6]uintptr{str("x"), 1}},
		{"personality", unix.SYS_PERSONALITY, [6]uintptr{addrNoRandomize}},
		{"prctl-PR_SET_MM", unix.SYS_PRCTL, [6]uintptr{unix.PR_SET_MM, unix.PR_SET_MM_START_BRK, m, 0, 0}},
		{"prctl-PR_SET_DUMPABLE", unix.SYS_PRCTL, [6]uintptr{unix.PR_SET_DUMPABLE, 1, 0, 0, 0}},
		{"prctl-PR_SET_PTRACER", unix.SYS_PRCTL, [6]uintptr{unix.PR_SET_PTRACER, neg, 0, 0, 0}},
		// Descriptors: signals to others, locks, notifications.
		{"fcntl-F_SETOWN", unix.SYS_FCNTL, [6]uintptr{fd, unix.F_SETOWN, ppid}},
		{"fcntl-F_SETLK", unix.SYS_FCNTL, [6]uintptr{fd, unix.F_SETLK, p}},
		{"fcntl-F_NOTIFY", unix.SYS_FCNTL, [6]uintptr{fd, unix.F_NOTIFY, 1}}, // DN_ACCESS,
		{"fcntl-F_SETLEASE", unix.SYS_FCNTL, [6]uintptr{fd, unix.F_SETLEASE, unix.F_RDLCK}},
		{"flock", unix.SYS_FLOCK, [6]uintptr{fd, unix.LOCK_SH | unix.LOCK_NB}},
		{"madvise-REMOVE", unix.SYS_MADVISE, [6]uintptr{m, 4096, unix.MADV_REMOVE}},
		{"madvise-MERGEABLE", unix.SYS_MADVISE, [6]uintptr{m, 4096, unix.MADV_MERGEABLE}},
		{"fanotify_init", unix.SYS_FANOTIFY_INIT, [6]uintptr{0, 0}},
		{"inotify_init1", unix.SYS_INOTIFY_INIT1, [6]uintptr{0}},
		{"inotify_add_watch", unix.SYS_INOTIFY_ADD_WATCH, [6]uintptr{neg, str("notes.txt"), unix.IN_ACCESS}},
		{"timerfd_create", unix.SYS_TIMERFD_CREATE, [6]uintptr{unix.CLOCK_MONOTONIC, 0}},
		// Page-cache plumbing between descriptors.
		{"splice", unix.SYS_SPLICE, [6]uintptr{fd, 0, uintptr(pipe[1]), 0, 4, unix.SPLICE_F_NONBLOCK}},
		{"tee", unix.SYS_TEE, [6]uintptr{uintptr(pipe[0]), uintptr(pipe[1]), 4, unix.SPLICE_F_NONBLOCK}},
		{"vmsplice", unix.SYS_VMSPLICE, [6]uintptr{uintptr(pipe[1]), p, 0, unix.SPLICE_F_NONBLOCK}},
		{"copy_file_range", unix.SYS_COPY_FILE_RANGE, [6]uintptr{fd, 0, uintptr(pipe[1]), 0, 4, 0}},
		{"sendfile", unix.SYS_SENDFILE, [6]uintptr{uintptr(pipe[1]), fd, 0, 4}},
		{"openat2", unix.SYS_OPENAT2, [6]uintptr{at, str("notes.txt"), p, 24}},
		// The workspace file's metadata, which Landlock does not guard,
		// and changes Landlock refuses as well.
		{"fchmodat", unix.SYS_FCHMODAT, [6]uintptr{at, str("notes.txt"), 0o600}},
		{"fchmod", unix.SYS_FCHMOD, [6]uintptr{fd, 0o600}},
		{"fchownat", unix.SYS_FCHOWNAT, [6]uintptr{at, str("notes.txt"), uid, gid, 0}},
		{"fchown", unix.SYS_FCHOWN, [6]uintptr{fd, uid, gid}},
		{"utimensat", unix.SYS_UTIMENSAT, [6]uintptr{at, str("notes.txt"), 0, 0}},
		{"setxattr", unix.SYS_SETXATTR, [6]uintptr{str("notes.txt"), str("user.planbridge"), str("x"), 1, 0}},
		{"fsetxattr", unix.SYS_FSETXATTR, [6]uintptr{fd, str("user.planbridge"), str("x"), 1, 0}},
		{"removexattr", unix.SYS_REMOVEXATTR, [6]uintptr{str("notes.txt"), str("user.planbridge")}},
		{"mkdirat", unix.SYS_MKDIRAT, [6]uintptr{at, str("newdir"), 0o755}},
		{"unlinkat", unix.SYS_UNLINKAT, [6]uintptr{at, str("notes.txt"), 0}},
		{"renameat2", unix.SYS_RENAMEAT2, [6]uintptr{at, str("notes.txt"), at, str("moved"), 0}},
		{"linkat", unix.SYS_LINKAT, [6]uintptr{at, str("notes.txt"), at, str("linked"), 0}},
		{"symlinkat", unix.SYS_SYMLINKAT, [6]uintptr{str("notes.txt"), at, str("symlinked")}},
		{"mknodat", unix.SYS_MKNODAT, [6]uintptr{at, str("fifo"), unix.S_IFIFO | 0o600, 0}},
		{"truncate", unix.SYS_TRUNCATE, [6]uintptr{str("notes.txt"), 0}},
		{"ftruncate", unix.SYS_FTRUNCATE, [6]uintptr{fd, 0}},
		{"fallocate", unix.SYS_FALLOCATE, [6]uintptr{fd, 0, 0, 4096}},
		// Not a call at all, and the x32 ABI.
		{"nr-1000", 1000, [6]uintptr{}},
	}
	if x32 := x32Read(); x32 != 0 {
		calls = append(calls, struct {
			name string
			nr   uintptr
			a    [6]uintptr
		}{"x32-read", x32, [6]uintptr{fd, p, 1}})
	}
	for _, c := range calls {
		_, _, e := unix.Syscall6(c.nr, c.a[0], c.a[1], c.a[2], c.a[3], c.a[4], c.a[5])
		w := "ok"
		if e != 0 {
			w = unix.ErrnoName(e)
		}
		fmt.Printf("%s=%s\n", c.name, w)
	}
	// A child in a new user namespace (clone, not clone3: the Go runtime
	// uses clone here), and an ordinary one.
	for _, fl := range []struct {
		name  string
		flags uintptr
	}{{"clone-newuser", unix.CLONE_NEWUSER}, {"clone-plain", 0}} {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: fl.flags}
		w := "ok"
		if err := cmd.Run(); err != nil {
			w = err.Error()
			if e, ok := err.(*os.PathError); ok {
				if en, ok := e.Err.(syscall.Errno); ok {
					w = unix.ErrnoName(en)
				}
			}
		}
		fmt.Printf("%s=%s\n", fl.name, w)
	}
	// What read-only programs do still works.
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(pipe[0]), unix.TCGETS, p)
	fmt.Printf("ioctl-TCGETS=%s\n", unix.ErrnoName(e))
	var rl unix.Rlimit
	fmt.Printf("prlimit-self=%v\n", unix.Prlimit(0, unix.RLIMIT_NOFILE, nil, &rl) == nil)
	return 0
}

// TestReadOnlySyscallsRefused runs the attacker in the read-only sandbox,
// with bwrap and without, as root and as nobody: every call outside the
// allowlist fails with the errno of its class, the workspace file's mode,
// owner and times are unchanged (chmod and touch of real programs too),
// and the allowed calls still work.
func TestReadOnlySyscallsRefused(t *testing.T) {
	want := map[string]string{
		"clone-newuser": "EPERM", "clone-plain": "ok", "ioctl-TCGETS": "ENOTTY", "prlimit-self": "true",
		"nr-1000": "EPERM", "x32-read": "EPERM",
	}
	for _, n := range strings.Fields(`shmget shmat shmdt shmctl msgget msgsnd msgrcv msgctl semget semop
		semtimedop semctl mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr socket-unix
		socket-inet socket-inet6 socket-netlink socket-packet socket-vsock socketpair keyctl add_key request_key
		bpf perf_event_open userfaultfd io_uring_setup io_uring_enter io_uring_register fchmodat fchmod fchownat
		fchown utimensat setxattr fsetxattr removexattr mkdirat unlinkat renameat2 linkat symlinkat mknodat
		truncate ftruncate fallocate`) {
		want[n] = "EACCES"
	}
	for _, n := range strings.Fields(`clone3 inotify_init1 inotify_add_watch splice tee vmsplice
		copy_file_range sendfile openat2`) {
		want[n] = "ENOSYS"
	}
	for _, n := range strings.Fields(`ptrace process_vm_readv process_vm_writev kcmp pidfd_open pidfd_getfd
		pidfd_send_signal process_madvise rt_sigqueueinfo prlimit-parent sched_setaffinity-parent setpriority
		ioprio_set mount umount2 pivot_root open_tree move_mount fsopen fsconfig fsmount fspick mount_setattr
		chroot unshare-user unshare-files setns memfd_create memfd_secret execveat name_to_handle_at
		open_by_handle_at ioctl-TIOCSTI ioctl-TIOCLINUX ioctl-TIOCSETD ioctl-TIOCSCTTY ioctl-TIOCCONS setuid
		setgid setresuid setgroups capset setsid setpgid reboot swapon init_module finit_module delete_module
		kexec_load acct quotactl syslog adjtimex sethostname personality prctl-PR_SET_MM prctl-PR_SET_DUMPABLE
		prctl-PR_SET_PTRACER fcntl-F_SETOWN fcntl-F_SETLK fcntl-F_NOTIFY fcntl-F_SETLEASE flock madvise-REMOVE
		madvise-MERGEABLE fanotify_init timerfd_create`) {
		want[n] = "EPERM"
	}
	if x32Read() == 0 {
		delete(want, "x32-read")
	}
	for _, uid := range []int{0, 65534} {
		for _, noBwrap := range []bool{false, true} {
			t.Run(fmt.Sprintf("uid=%d/bwrap=%v", uid, !noBwrap), func(t *testing.T) {
				f := newFixture(t, uid)
				notes := filepath.Join(f.ws, "notes.txt")
				old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
				os.Chtimes(notes, old, old)
				before, err := os.Stat(notes)
				if err != nil {
					t.Fatal(err)
				}
				sb := f.sandbox(t, noBwrap, Limits{})
				out, code := f.run(t, sb, []string{"SANDBOX_TEST_HELPER=syscalls"}, filepath.Join(f.bin, "helper"))
				if code != 0 {
					t.Fatalf("the attacker: exit %d\n%s", code, out)
				}
				got := map[string]string{}
				for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
					if k, v, ok := strings.Cut(l, "="); ok {
						got[k] = v
					}
				}
				for k, w := range want {
					if got[k] != w {
						t.Errorf("%s: %q, want %s", k, got[k], w)
					}
				}
				for k := range got {
					if _, ok := want[k]; !ok {
						t.Errorf("%s: not in the expected table", k)
					}
				}
				// Real programs: chmod, touch, chown to the owner itself.
				out, _ = f.run(t, sb, nil, "sh", "-c", fmt.Sprintf("chmod 600 notes.txt; touch -m -d 2020-01-01 notes.txt; chown %d notes.txt; mkfifo fifo; ls", uid))
				after, err := os.Stat(notes)
				if err != nil {
					t.Fatal(err)
				}
				if after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
					t.Errorf("notes.txt changed: %v %v -> %v %v\n%s", before.Mode(), before.ModTime(), after.Mode(), after.ModTime(), out)
				}
				for _, n := range []string{"newdir", "moved", "linked", "symlinked", "fifo"} {
					if _, err := os.Lstat(filepath.Join(f.ws, n)); err == nil {
						t.Errorf("%s was created", n)
					}
				}
			})
		}
	}
}

// addrNoRandomize is ADDR_NO_RANDOMIZE of linux/personality.h.
const addrNoRandomize = 0x0040000
