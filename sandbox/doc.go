// Package sandbox confines a command to reading: it runs any program so
// that it cannot write (except to /dev/null), cannot read outside a set of
// read roots and the system's program directories, cannot reach the
// network or other processes, and cannot exhaust the machine. It is the OS
// layer under Plan's read-only shell, usable and testable on its own
// (`planbridge sandbox -- CMD`), and it imports no project package.
//
// # Layers
//
// A [Sandbox] starts the program through a small launcher: the current
// executable re-executed with a marker argument, which [Main] (called first
// thing in main, and in TestMain of test binaries that run sandboxed
// commands) recognises. With bwrap the chain is bwrap → launcher (bound
// into the sandbox) → program; without it, launcher → program. The
// launcher joins the pids cgroup through a descriptor its parent opened,
// then, on one OS thread, sets no_new_privs, drops capabilities, applies
// Landlock and seccomp, sets the limits, closes every descriptor but
// stdin, stdout and stderr (one inherited without close-on-exec would be
// open past every rule applied at open) and execs. A launcher that cannot
// set a layer up exits [ExitSetup] and the program never runs. Start and
// finish a process with [Start] and [Wait] (or [Run]), which remove the
// cgroup. The layers, each applied when this machine has it and reported
// by [Probe] either way:
//
//   - bwrap (bubblewrap), when installed and working: every namespace
//     unshared (user, pid, ipc, net, uts, cgroup), --cap-drop ALL,
//     --new-session, --die-with-parent, a read-only tmpfs root holding only
//     the system directories, a few /etc files and the read roots (bound
//     read-only), no /proc, a /dev of null, zero, full and the random
//     devices only (no /dev/shm, no terminals), 1 MiB tmpfs on /tmp and
//     $HOME, and the hidden paths covered by empty tmpfs. Outside sockets,
//     other projects and the state directory are simply absent.
//   - Landlock, at the ABI the kernel has (detected at run time): reads
//     only beneath the read roots and the system set; writes only to
//     /dev/null; TCP bind and connect denied (ABI ≥ 4); signals and
//     abstract unix sockets scoped to the sandbox (ABI ≥ 6). /proc, /sys
//     and the rest of /dev are not readable.
//   - seccomp: an allowlist (seccomp.go), not a deny-list: only the
//     system calls that the programs Plan's shell allows were measured to
//     make (strace -f of the corpus in testdata/readonly-corpus.txt, with
//     bwrap and without, as root and as nobody) pass: the loader and C
//     library start-up, file reads, directory walks and the stat family,
//     the process's own memory and signals, pipes, fork/vfork/exec/wait
//     of its own children, time and random numbers. Some pass only with
//     the arguments read-only programs use: clone only with the flags of
//     threads, fork and vfork (no namespace, CLONE_PARENT or pidfd);
//     ioctl only for isatty, the window size, the foreground group and
//     FIONREAD/FIOCLEX/FIONCLEX/FIONBIO (never TIOCSTI, TIOCLINUX,
//     TIOCSETD or anything that sets a terminal, even if the session of
//     its own regressed); fcntl without locks, F_SETOWN, F_NOTIFY or
//     leases; prctl for names, no_new_privs, seccomp and reads of its own
//     state; madvise without MADV_REMOVE, MADV_MERGEABLE or
//     MADV_PAGEOUT, fadvise without POSIX_FADV_DONTNEED (both evict
//     shared page cache); extended attributes only through an open
//     descriptor (Landlock does not check getxattr or listxattr by path:
//     the path forms answer EOPNOTSUPP); personality only to query or PER_LINUX; prlimit and
//     the scheduler setters only on the program itself (a pid of 0: its
//     parent's limits or priority are reachable without bwrap's pid
//     namespace). kill and tgkill pass, bounded by the kernel (no
//     capabilities; Landlock's signal scoping or bwrap's pid namespace).
//     Every other call fails: ENOSYS where programs and the C library
//     fall back (clone3, whose flags the filter cannot read; openat2;
//     inotify, whose watches Landlock does not check and from which GNU
//     tail -f falls back to polling, with a warning; splice, tee,
//     vmsplice, copy_file_range and sendfile, read and write instead);
//     EACCES, as Landlock answers, for changes to the file system — a
//     file's mode, owner, times and extended attributes are no Landlock
//     right, and without bwrap's read-only mounts a workspace file's
//     owner could change them — and, as before the allowlist, for
//     sockets of every family (pathname unix sockets and UDP are beyond
//     Landlock ABI 7), System V IPC and POSIX message queues (without
//     bwrap's IPC namespace, another process's shared memory), io_uring,
//     keyrings, bpf, perf events and userfaultfd; EPERM for every call
//     not listed (other processes: ptrace, process_vm_*, kcmp, pidfds;
//     namespaces and mounts; identities; setsid and setpgid, which would
//     leave the process group the timeout kills; file handles;
//     memfd_create and execveat; fanotify; locks; the machine). A
//     foreign architecture is killed and amd64's x32 ABI refused.
//   - capabilities: the bounding, ambient, effective, permitted and
//     inheritable sets are emptied, SECBIT_NOROOT is locked and
//     no_new_privs is set, so uid 0 inside is powerless (no remount, no
//     kill of foreign processes, no setuid gain).
//   - resource limits: address space, CPU time, file size 0, no core
//     dumps, open files, and a process count. RLIMIT_NPROC does not apply
//     to the real uid 0, so as root the count is enforced by a pids cgroup
//     (created per command when a pids hierarchy is writable, removed
//     afterwards); in a fresh user namespace (bwrap as non-root) the
//     rlimit counts only the sandbox's processes. The memory all the
//     sandbox's processes use together is bounded by a memory cgroup
//     ([Limits.Memory], 2 GiB by default; swap bounded with it where the
//     kernel offers it), created per command when a memory hierarchy is
//     writable (as root: v1's memory hierarchy, or v2's, where the pids
//     cgroup carries both limits), removed afterwards; [Layers.Memory]
//     says whether there is one. Those a killed planbridge left are
//     removed at the next [Probe] (only empty ones whose creator is gone).
//
// A Stdin, Stdout or Stderr that is an *os.File (a terminal, a pipe, a
// file) reaches the program as a new open file description of the same
// object ([Start] reopens it through /proc/self/fd, or passes it through
// a pipe when it cannot): file status flags live in the description, and
// one shared with the caller would let the program make the person's
// terminal non-blocking (fcntl F_SETFL, ioctl FIONBIO, on it or a dup).
//
// The timeout kills the whole tree: the launcher and everything it starts
// run in a session (and process group) of their own, so without a
// controlling terminal (TIOCSTI on an inherited terminal descriptor is
// refused, with bwrap or without), bwrap's pid namespace dies with its
// first process, and the pids cgroup is emptied before it is removed.
//
// Measured cost of a start (BenchmarkSandboxTrue): bwrap's namespaces and
// mounts dominate; without bwrap the launcher costs a few milliseconds,
// most of it the Go initialisation of the re-executed binary. The filter
// compares the most frequent calls first; a du over /usr/share/doc
// (BenchmarkSandboxDuNoBwrap against BenchmarkBareDu) ran no slower than
// under the deny-list it replaced.
//
// # Read policy
//
// [ReadPolicy] is the one read policy that both the sandbox rules and
// in-process opens (the shell's redirections, globs and cd, the read_file
// and grep tools) obey: a path is readable when, with every symlink
// resolved, it lies beneath a read root and not beneath a hidden path, and
// never under /proc, /sys or /dev (except /dev/null). [ReadPolicy.Open]
// re-checks the resolution race-free with openat2(RESOLVE_BENEATH).
//
// # Agent profile
//
// [NewAgent] and [Agent.Wrap] confine a long-lived agent process (a node
// coding agent) instead of a read-only command: through the same launcher
// (Profile "agent" in its spec), without bwrap, it first makes every mount
// read-only but the writable directories, in a mount namespace of its own
// (as root a plain CLONE_NEWNS; as any other user with a user namespace
// mapping the user to itself, which [NewAgent] tries once by starting the
// launcher, failing with [ErrNoAgentMounts] where user namespaces are
// disabled or denied their capabilities): changing a file's mode, owner, times or
// extended attributes is no Landlock right, and a read-only mount refuses
// them all (chmod +x of a tracked file, a setuid bit on a file the user
// owns, a .git made world-writable). The same clone makes an IPC
// namespace, so no
// System V or POSIX IPC object of another process (shared memory it could
// write) is reachable. It runs in a session of its own, so
// it has no controlling terminal (TIOCSTI would push input to the shell
// of the terminal planbridge was started from). Then it sets no_new_privs,
// drops capabilities, applies Landlock (V9 best effort: the whole file
// system readable and executable; writes only beneath the given writable
// directories and to /dev/null; TCP connect only to the given ports and
// no TCP bind at ABI ≥ 4; signals and abstract unix sockets scoped at
// ABI ≥ 6; pathname unix sockets unreachable at ABI ≥ 9), a seccomp filter
// (still a deny-list: a node agent's system calls are neither measured nor
// bounded like those of the read-only programs, and an allowlist for it is
// not part of this profile yet) that allows socket(2) only for TCP and UDP over AF_INET and AF_INET6
// (Landlock's port rules hold for TCP alone: an IPPROTO_MPTCP stream, or
// SCTP, would reach any port; no ICMP either) and no send with
// MSG_FASTOPEN (TCP Fast Open connects without connect(2), unseen by
// Landlock) and no listen(2) (which binds an unbound socket to a free
// port, unseen by Landlock's bind rule), AF_UNIX too at ABI ≥ 9,
// where Landlock covers unix connects, and denies io_uring,
// keyrings, bpf, perf events and userfaultfd, and agent-sized limits
// (RLIMIT_DATA 8 GiB, file size 1 GiB, 8192 files, processes by
// RLIMIT_NPROC, which does not bound uid 0: an agent run as uid 0 joins a
// pids cgroup of its own where a pids hierarchy is writable, removed when
// the next agent starts; no CPU or address-space cap).
// Without Landlock [NewAgent] fails ([ErrNoAgentConfinement]) rather than
// start an agent that looks confined. planbridge runs every Plan turn's
// ACP agent under this profile, with its own directory (a private home
// and tmp) as the one writable directory and the model endpoints' ports;
// [Agent.Summary] is what doctor and /plan status show. /proc stays visible (no pid
// namespace: Claude Code as its first process often failed to stop its
// commands on cancel); other processes' entries that need ptrace access
// (environ, mem) are refused by Landlock's ptrace scoping. A process the
// agent starts in a session of its own outlives a kill of its process
// group (still confined). UDP is not restricted (any port).
//
// # Not covered
//
// Without bwrap, Landlock does not check the stat family, readlink,
// chdir or O_PATH opens: a program learns whether any path on the
// machine exists, its size, owner, mode and times (when a file outside
// the read roots was last written), and the targets of symlinks, though
// never a byte of a file's contents; only bwrap's mount namespace hides
// those paths. Where no memory cgroup can be made (not root, no writable
// memory hierarchy), memory is bounded per process only (the
// address-space limit): the process count times that limit can exceed
// the machine's memory; [Layers.Memory] says so.
// Without bwrap and Landlock (old kernels, containers without user
// namespaces) only the capabilities, seccomp and resource limits remain;
// [Probe] says so and callers must show it. Landlock cannot hide a path
// beneath a read root (only bwrap's tmpfs can). As root without a writable
// pids cgroup the process count is not bounded (the CPU limit and the
// timeout still are); [Layers.Processes] says so.
package sandbox
