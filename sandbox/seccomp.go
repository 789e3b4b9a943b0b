package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The read-only profile's seccomp filter is an allowlist: the system calls
// that the programs Plan's shell may run were measured (strace -f of the
// allowed corpus, with bwrap and without, as root and as nobody; see
// TestSeccompCorpus) and only those pass, some only with the arguments a
// read-only program uses. Everything else fails; the errno is chosen per
// class (see the rule lists below), and a call not listed at all fails
// with EPERM.

var errNoSeccomp = errors.New("seccomp filters are not supported on this architecture")

// seccompArch is the audit architecture of this build, 0 if unsupported.
func seccompArch() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64
	}
	return 0
}

// BPF opcodes the filters use.
const (
	bpfLdAbs = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	bpfJset  = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	bpfRet   = unix.BPF_RET | unix.BPF_K
	bpfAndK  = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K

	retAllow = unix.SECCOMP_RET_ALLOW
)

// retErrno is the filter's return value that fails a call with e.
func retErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

// argLow is the offset in seccomp_data of the low 32 bits of argument i
// (the arguments start at 16, 8 bytes each, little-endian on both
// supported architectures). Every argument the filter checks is an int
// or unsigned int in the kernel (a pid, a command, flags the kernel
// truncates to 32 bits), so the low word is the whole value the kernel
// acts on.
func argLow(i int) uint32 { return 16 + 8*uint32(i) }

// scRule is how the read-only filter treats one system call: a block of
// BPF run when the call's number matches, every path of which returns.
type scRule struct {
	nr    uint32
	block []unix.SockFilter
}

// allow lets the calls through whatever their arguments.
func allow(nrs ...uint32) []scRule {
	var rs []scRule
	for _, nr := range nrs {
		rs = append(rs, scRule{nr, []unix.SockFilter{{Code: bpfRet, K: retAllow}}})
	}
	return rs
}

// fail makes the calls fail with e.
func fail(e unix.Errno, nrs ...uint32) []scRule {
	var rs []scRule
	for _, nr := range nrs {
		rs = append(rs, scRule{nr, []unix.SockFilter{{Code: bpfRet, K: retErrno(e)}}})
	}
	return rs
}

// argIn lets nr through when argument arg is one of vals; otherwise it
// fails with e.
func argIn(nr uint32, arg int, vals []uint32, e unix.Errno) scRule {
	b := []unix.SockFilter{{Code: bpfLdAbs, K: argLow(arg)}}
	for i, v := range vals {
		// Past the remaining comparisons and the failing return.
		b = append(b, unix.SockFilter{Code: bpfJeq, K: v, Jt: uint8(len(vals) - i)})
	}
	b = append(b, unix.SockFilter{Code: bpfRet, K: retErrno(e)}, unix.SockFilter{Code: bpfRet, K: retAllow})
	return scRule{nr, b}
}

// argMask lets nr through when argument arg has no bit outside mask;
// otherwise it fails with e.
func argMask(nr uint32, arg int, mask uint32, e unix.Errno) scRule {
	return scRule{nr, []unix.SockFilter{
		{Code: bpfLdAbs, K: argLow(arg)},
		{Code: bpfJset, K: ^mask, Jf: 1},
		{Code: bpfRet, K: retErrno(e)},
		{Code: bpfRet, K: retAllow},
	}}
}

// threadAndForkFlags are the clone flags of the C library's and the Go
// runtime's threads, fork, vfork and posix_spawn, and the exit signal in
// the low byte. No namespace (a new user namespace would give the program
// every capability inside it), no CLONE_PARENT (a child its parent, the
// sandbox's caller, never waits for), no CLONE_PTRACE or CLONE_UNTRACED,
// no CLONE_PIDFD (pidfd_open and the pidfd calls fail too), no CLONE_IO.
const threadAndForkFlags = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND |
	unix.CLONE_THREAD | unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID |
	unix.CLONE_CHILD_CLEARTID | unix.CLONE_CHILD_SETTID | unix.CLONE_VFORK | unix.CLONE_DETACHED | unix.CSIGNAL

// ioctlRequests are the ioctl requests read-only programs make: isatty
// and the terminal's size and foreground group (TCGETS, TCGETS2,
// TIOCGWINSZ, TIOCGPGRP), the bytes waiting (FIONREAD) and the
// descriptor's own flags (FIOCLEX, FIONCLEX, FIONBIO). Nothing that sets
// a terminal's state or pushes input into one (TIOCSTI, TIOCLINUX,
// TIOCSETD, TIOCSCTTY, TIOCCONS, TCSETS*, TIOCSWINSZ) and no file system
// ioctl, even if the sandbox ever kept a controlling terminal.
var ioctlRequests = []uint32{unix.TCGETS, unix.TCGETS2, unix.TIOCGWINSZ, unix.TIOCGPGRP, fionread,
	fioclex, fionclex, fionbio}

// The descriptor ioctls of asm-generic/ioctls.h, the same on amd64 and
// arm64 (golang.org/x/sys/unix does not name them).
const (
	fionread = 0x541b
	fionbio  = 0x5421
	fionclex = 0x5450
	fioclex  = 0x5451
)

// fcntlCommands: duplicating descriptors, their flags and a pipe's size.
// No locks (a read lock would hold off the person's writers until the
// timeout), no F_SETOWN/F_SETSIG (SIGIO sent to another process), no
// F_NOTIFY or leases (watching other processes' use of a file), no seals.
var fcntlCommands = []uint32{unix.F_DUPFD, unix.F_DUPFD_CLOEXEC, unix.F_GETFD, unix.F_SETFD, unix.F_GETFL,
	unix.F_SETFL, unix.F_GETPIPE_SZ}

// prctlOptions: naming the process and its anonymous mappings (the C
// library names them), reading its own state, and no_new_privs and
// seccomp, which only restrict further (file(1) sandboxes itself). No
// PR_SET_MM, PR_SET_PTRACER, PR_SET_DUMPABLE, PR_SET_SECUREBITS,
// PR_CAP_AMBIENT, PR_SET_CHILD_SUBREAPER or PR_SET_IO_FLUSHER.
var prctlOptions = []uint32{unix.PR_SET_NAME, unix.PR_GET_NAME, unix.PR_SET_VMA, unix.PR_GET_DUMPABLE,
	unix.PR_SET_PDEATHSIG, unix.PR_GET_PDEATHSIG, unix.PR_SET_NO_NEW_PRIVS, unix.PR_GET_NO_NEW_PRIVS,
	unix.PR_GET_SECCOMP, unix.PR_SET_SECCOMP, unix.PR_CAPBSET_READ, unix.PR_GET_KEEPCAPS,
	unix.PR_GET_SECUREBITS, unix.PR_GET_THP_DISABLE, unix.PR_GET_TIMERSLACK}

// madviseAdvice: hints about the process's own memory (the C library's
// and the Go runtime's allocators, thread stack guards). No MADV_REMOVE
// (punches a hole in a shared file mapping), MADV_MERGEABLE (KSM, a
// side channel between processes), MADV_PAGEOUT (evicts shared page
// cache), MADV_HWPOISON or MADV_SOFT_OFFLINE.
var madviseAdvice = []uint32{unix.MADV_NORMAL, unix.MADV_RANDOM, unix.MADV_SEQUENTIAL, unix.MADV_WILLNEED,
	unix.MADV_DONTNEED, unix.MADV_FREE, unix.MADV_DONTFORK, unix.MADV_DOFORK, unix.MADV_HUGEPAGE,
	unix.MADV_NOHUGEPAGE, unix.MADV_DONTDUMP, unix.MADV_DODUMP, unix.MADV_WIPEONFORK, unix.MADV_KEEPONFORK,
	unix.MADV_COLD, unix.MADV_POPULATE_READ, unix.MADV_POPULATE_WRITE, unix.MADV_DONTNEED_LOCKED,
	unix.MADV_COLLAPSE, unix.MADV_GUARD_INSTALL, unix.MADV_GUARD_REMOVE}

// fadviseAdvice: hints about how the program will read a file. No
// POSIX_FADV_DONTNEED, which drops the file's clean pages from the page
// cache for every process on the machine (as MADV_PAGEOUT would): a
// side channel (evict, then see whether another process brought the
// pages back) and a slowdown of others.
var fadviseAdvice = []uint32{unix.FADV_NORMAL, unix.FADV_RANDOM, unix.FADV_SEQUENTIAL, unix.FADV_WILLNEED,
	unix.FADV_NOREUSE}

// personalityValues: personality(0xffffffff), which only reads, and
// PER_LINUX (0), the only personality a program may set: no
// ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC or foreign execution domains.
var personalityValues = []uint32{0xffffffff, 0}

// readOnlyRules is the read-only profile's allowlist for this
// architecture, the most frequent calls first (the filter compares one
// number after another).
func readOnlyRules() []scRule {
	var rs []scRule
	add := func(r ...scRule) { rs = append(rs, r...) }

	// Files: read, seek, inspect, walk directories, resolve links. Which
	// files may be opened, read or executed is Landlock's and bwrap's
	// business; writes reach only descriptors already open (stdout, pipes)
	// and /dev/null, with a file size limit of 0.
	add(allow(unix.SYS_READ, unix.SYS_WRITE, unix.SYS_OPENAT, unix.SYS_NEWFSTATAT, unix.SYS_CLOSE,
		unix.SYS_FSTAT, unix.SYS_MMAP, unix.SYS_GETDENTS64, unix.SYS_LSEEK, unix.SYS_PREAD64,
		unix.SYS_STATX, unix.SYS_READV, unix.SYS_WRITEV, unix.SYS_PREADV, unix.SYS_PREADV2,
		unix.SYS_READLINKAT, unix.SYS_FACCESSAT, unix.SYS_FACCESSAT2, unix.SYS_GETCWD, unix.SYS_CHDIR,
		unix.SYS_FCHDIR, unix.SYS_STATFS, unix.SYS_FSTATFS, unix.SYS_READAHEAD, unix.SYS_FGETXATTR,
		unix.SYS_FLISTXATTR, unix.SYS_DUP, unix.SYS_DUP3, unix.SYS_CLOSE_RANGE, unix.SYS_PIPE2,
		unix.SYS_UMASK)...)
	// Extended attributes only of an open file: Landlock does not check
	// getxattr and listxattr by path (nor stat), so without bwrap they
	// would read the attributes of any file on the machine, outside the
	// read roots too (user.* attributes hold data: a download's origin
	// URL, tags, checksums). A file opened for reading passed Landlock; an
	// O_PATH descriptor gets EBADF. The path forms answer EOPNOTSUPP, as a
	// file system without attributes does (ls then shows no ACL mark).
	add(fail(unix.EOPNOTSUPP, unix.SYS_GETXATTR, unix.SYS_LGETXATTR, unix.SYS_LISTXATTR, unix.SYS_LLISTXATTR)...)
	add(argIn(unix.SYS_FADVISE64, 3, fadviseAdvice, unix.EPERM))
	// The architecture's own calls, among them amd64's legacy forms of
	// the above (access and stat are frequent there).
	add(archRules()...)
	add(argIn(unix.SYS_FCNTL, 1, fcntlCommands, unix.EPERM))
	add(argIn(unix.SYS_IOCTL, 1, ioctlRequests, unix.EPERM))

	// Memory of the process itself.
	add(allow(unix.SYS_MPROTECT, unix.SYS_MUNMAP, unix.SYS_BRK, unix.SYS_MREMAP, unix.SYS_MINCORE,
		unix.SYS_MEMBARRIER, unix.SYS_MAP_SHADOW_STACK)...)
	add(argIn(unix.SYS_MADVISE, 2, madviseAdvice, unix.EPERM))

	// Signals, threads and time. kill, tgkill and tkill reach only what
	// the kernel lets them: without capabilities the same user's
	// processes, and of those, with Landlock's signal scoping (ABI ≥ 6)
	// or bwrap's pid namespace, only the sandbox's own.
	add(allow(unix.SYS_RT_SIGACTION, unix.SYS_RT_SIGPROCMASK, unix.SYS_RT_SIGRETURN, unix.SYS_FUTEX,
		unix.SYS_SIGALTSTACK, unix.SYS_RT_SIGSUSPEND, unix.SYS_RT_SIGPENDING, unix.SYS_RT_SIGTIMEDWAIT,
		unix.SYS_RESTART_SYSCALL, unix.SYS_KILL, unix.SYS_TGKILL, unix.SYS_TKILL, unix.SYS_GETRANDOM,
		unix.SYS_CLOCK_GETTIME, unix.SYS_CLOCK_GETRES, unix.SYS_GETTIMEOFDAY, unix.SYS_CLOCK_NANOSLEEP,
		unix.SYS_NANOSLEEP, unix.SYS_SETITIMER, unix.SYS_GETITIMER, unix.SYS_PPOLL, unix.SYS_PSELECT6,
		unix.SYS_EPOLL_CREATE1, unix.SYS_EPOLL_CTL, unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2,
		unix.SYS_EVENTFD2, unix.SYS_SCHED_YIELD, unix.SYS_SET_ROBUST_LIST, unix.SYS_SET_TID_ADDRESS,
		unix.SYS_RSEQ)...)

	// Processes: start, run and wait for its own children; read its own
	// identity and limits.
	add(argMask(unix.SYS_CLONE, 0, threadAndForkFlags, unix.EPERM))
	add(allow(unix.SYS_EXECVE, unix.SYS_WAIT4, unix.SYS_WAITID, unix.SYS_EXIT, unix.SYS_EXIT_GROUP,
		unix.SYS_GETPID, unix.SYS_GETTID, unix.SYS_GETPPID, unix.SYS_GETUID, unix.SYS_GETEUID,
		unix.SYS_GETGID, unix.SYS_GETEGID, unix.SYS_GETGROUPS, unix.SYS_GETRESUID, unix.SYS_GETRESGID,
		unix.SYS_GETPGID, unix.SYS_GETSID, unix.SYS_CAPGET, unix.SYS_UNAME, unix.SYS_SYSINFO,
		unix.SYS_GETRUSAGE, unix.SYS_TIMES, unix.SYS_GETCPU, unix.SYS_GETRLIMIT, unix.SYS_SETRLIMIT,
		unix.SYS_GETPRIORITY, unix.SYS_IOPRIO_GET, unix.SYS_SCHED_GETAFFINITY, unix.SYS_SCHED_GETPARAM,
		unix.SYS_SCHED_GETSCHEDULER, unix.SYS_SCHED_GETATTR, unix.SYS_SCHED_GET_PRIORITY_MAX,
		unix.SYS_SCHED_GET_PRIORITY_MIN, unix.SYS_SCHED_RR_GET_INTERVAL, unix.SYS_SECCOMP)...)
	// Without bwrap the program shares the machine's pid namespace, and
	// Landlock does not cover these: another process's resource limits
	// (its parent, planbridge, with a file-size limit of 0 could no
	// longer write its database) or its scheduling. They act only on the
	// program itself (a pid of 0).
	for _, nr := range []uint32{unix.SYS_PRLIMIT64, unix.SYS_SCHED_SETAFFINITY, unix.SYS_SCHED_SETSCHEDULER,
		unix.SYS_SCHED_SETPARAM, unix.SYS_SCHED_SETATTR} {
		add(argIn(nr, 0, []uint32{0}, unix.EPERM))
	}
	add(argIn(unix.SYS_PRCTL, 0, prctlOptions, unix.EPERM))
	add(argIn(unix.SYS_PERSONALITY, 0, personalityValues, unix.EPERM))

	// What fails, and how. ENOSYS for what programs and the C library
	// fall back from, as on a kernel without the call: clone3, whose
	// flags sit in memory the filter cannot read (glibc then uses clone);
	// openat2 (openat); inotify (GNU tail -f polls once a second
	// instead, after a warning: a watch is placed by path, which Landlock
	// does not check, so a program could learn when files outside its
	// read roots are read or written); splice, tee, vmsplice,
	// copy_file_range and sendfile (read and write instead: moving
	// page-cache pages between descriptors is how Dirty Pipe wrote to
	// read-only files).
	add(fail(unix.ENOSYS, unix.SYS_CLONE3, unix.SYS_OPENAT2, unix.SYS_INOTIFY_INIT1, unix.SYS_INOTIFY_ADD_WATCH,
		unix.SYS_SPLICE, unix.SYS_TEE, unix.SYS_VMSPLICE, unix.SYS_COPY_FILE_RANGE, unix.SYS_SENDFILE)...)
	// EACCES, as Landlock answers the same requests, for changes to the
	// file system. Landlock refuses the writes, creations and removals
	// already; a file's mode, owner, times and extended attributes are no
	// Landlock right, and without bwrap's read-only mounts the owner of a
	// workspace file could change them.
	add(fail(unix.EACCES, unix.SYS_MKDIRAT, unix.SYS_UNLINKAT, unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2,
		unix.SYS_LINKAT, unix.SYS_SYMLINKAT, unix.SYS_MKNODAT, unix.SYS_FCHMOD, unix.SYS_FCHMODAT,
		unix.SYS_FCHMODAT2, unix.SYS_FCHOWN, unix.SYS_FCHOWNAT, unix.SYS_TRUNCATE, unix.SYS_FTRUNCATE,
		unix.SYS_FALLOCATE, unix.SYS_UTIMENSAT, unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR,
		unix.SYS_SETXATTRAT, unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR,
		unix.SYS_REMOVEXATTRAT)...)
	// EACCES, as before the allowlist, for the network and the kernel's
	// other doors to shared state: sockets of every family (pathname unix
	// sockets and UDP are beyond Landlock ABI 7), System V IPC and POSIX
	// message queues (without bwrap's IPC namespace another process's
	// shared memory, queues and semaphores; Landlock does not cover
	// them), io_uring (a second door to every operation), the keyrings,
	// bpf, perf events and userfaultfd.
	add(fail(unix.EACCES, unix.SYS_SOCKET, unix.SYS_SOCKETPAIR, unix.SYS_CONNECT, unix.SYS_BIND, unix.SYS_LISTEN,
		unix.SYS_ACCEPT, unix.SYS_ACCEPT4, unix.SYS_SENDTO, unix.SYS_RECVFROM, unix.SYS_SENDMSG, unix.SYS_RECVMSG,
		unix.SYS_SENDMMSG, unix.SYS_RECVMMSG, unix.SYS_GETSOCKOPT, unix.SYS_SETSOCKOPT, unix.SYS_GETSOCKNAME,
		unix.SYS_GETPEERNAME, unix.SYS_SHUTDOWN,
		unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMDT, unix.SYS_SHMCTL, unix.SYS_MSGGET, unix.SYS_MSGSND,
		unix.SYS_MSGRCV, unix.SYS_MSGCTL, unix.SYS_SEMGET, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP, unix.SYS_SEMCTL,
		unix.SYS_MQ_OPEN, unix.SYS_MQ_UNLINK, unix.SYS_MQ_TIMEDSEND, unix.SYS_MQ_TIMEDRECEIVE, unix.SYS_MQ_NOTIFY,
		unix.SYS_MQ_GETSETATTR,
		unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER, unix.SYS_KEYCTL,
		unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD)...)
	// Every other call fails with EPERM (seccompDefault): other processes
	// (ptrace, process_vm_readv/writev, kcmp, the pidfd calls,
	// process_madvise, setpriority, ioprio_set, rt_sigqueueinfo),
	// namespaces and mounts (unshare, setns, mount, pivot_root, chroot,
	// open_tree, fsopen …), identities (setuid and the rest, setgroups,
	// capset), a new session or process group (setsid, setpgid: out of
	// the process group the timeout kills), file handles
	// (name_to_handle_at, open_by_handle_at), anonymous files and
	// fileless execution (memfd_create, memfd_secret, execveat),
	// fanotify, locks (flock), timers and descriptors for events
	// (timerfd, signalfd), and the machine (reboot, swapon, modules,
	// kexec, acct, quotactl, the clock, sethostname, syslog).
	return rs
}

// seccompDefault is what a call the read-only filter does not list gets.
const seccompDefault = unix.EPERM

// readOnlyFilter is the read-only profile's BPF program: a foreign
// architecture kills the process (its numbers mean other calls), the
// x32 ABI of amd64 fails, then the rules, then seccompDefault.
func readOnlyFilter() ([]unix.SockFilter, error) {
	arch := seccompArch()
	if arch == 0 {
		return nil, errNoSeccomp
	}
	prog := []unix.SockFilter{
		{Code: bpfLdAbs, K: 4}, // seccomp_data.arch
		{Code: bpfJeq, K: arch, Jt: 1},
		{Code: bpfRet, K: unix.SECCOMP_RET_KILL_PROCESS},
		{Code: bpfLdAbs, K: 0},               // seccomp_data.nr
		{Code: bpfJge, K: 0x40000000, Jf: 1}, // the x32 ABI
		{Code: bpfRet, K: retErrno(seccompDefault)},
	}
	seen := map[uint32]bool{}
	for _, r := range readOnlyRules() {
		if seen[r.nr] {
			return nil, fmt.Errorf("system call %d has two rules", r.nr)
		}
		seen[r.nr] = true
		if len(r.block) > 255 {
			return nil, fmt.Errorf("the rule of system call %d is too long", r.nr)
		}
		// The number is in the accumulator until a matching block loads an
		// argument; every block returns on every path.
		prog = append(prog, unix.SockFilter{Code: bpfJeq, K: r.nr, Jf: uint8(len(r.block))})
		prog = append(prog, r.block...)
	}
	prog = append(prog, unix.SockFilter{Code: bpfRet, K: retErrno(seccompDefault)})
	if len(prog) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("the filter has %d instructions", len(prog))
	}
	return prog, nil
}

// seccompFilterBuilds reports whether this architecture has the
// read-only filter.
func seccompFilterBuilds() bool {
	_, err := readOnlyFilter()
	return err == nil
}

// seccompLine describes the filters for [Layers.Lines].
func seccompLine() string {
	n := 0
	for _, r := range readOnlyRules() {
		if len(r.block) > 1 || r.block[0].K == retAllow {
			n++ // allowed, perhaps only for some arguments
		}
	}
	return fmt.Sprintf("shell: an allowlist of %d system calls (some for some arguments only), every other call fails; "+
		"agent: sockets but TCP and UDP, listen, io_uring, keyctl, bpf, perf denied", n)
}

func installSeccomp() error {
	prog, err := readOnlyFilter()
	if err != nil {
		return err
	}
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	return unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fp)), 0, 0)
}
