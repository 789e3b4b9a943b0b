package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	Main()
	if p := os.Getenv("SANDBOX_TEST_AGENT_PARENT"); p != "" {
		os.Exit(agentParent(p))
	}
	if p := os.Getenv("SANDBOX_TEST_RO_PARENT"); p != "" {
		os.Exit(readOnlyParent(p))
	}
	if os.Getenv("SANDBOX_TEST_HELPER") == "shm" {
		os.Exit(shmHelper(os.Getenv("SANDBOX_TEST_ADDR")))
	}
	if os.Getenv("SANDBOX_TEST_HELPER") == "tty" {
		os.Exit(ttyHelper())
	}
	if os.Getenv("SANDBOX_TEST_HELPER") == "xattr" {
		os.Exit(xattrHelper(os.Getenv("SANDBOX_TEST_ADDR")))
	}
	if os.Getenv("SANDBOX_TEST_HELPER") == "stdio" {
		os.Exit(stdioHelper())
	}
	if os.Getenv("SANDBOX_TEST_HELPER") == "syscalls" {
		os.Exit(syscallHelper())
	}
	if h := os.Getenv("SANDBOX_TEST_HELPER"); h == "memory" || h == "memchild" {
		os.Exit(memoryHelper(h))
	}
	if os.Getenv("SANDBOX_TEST_HELPER") == "sockets" {
		os.Exit(socketsHelper(os.Getenv("SANDBOX_TEST_ADDR")))
	}
	if h := os.Getenv("SANDBOX_TEST_HELPER"); h != "" {
		os.Exit(helper(h, os.Getenv("SANDBOX_TEST_ADDR")))
	}
	os.Exit(m.Run())
}

// helper runs inside the sandbox as the attacking program: it tries to
// connect to addr and prints "connected" when it could.
func helper(kind, addr string) int {
	conn, err := net.DialTimeout(kind, addr, 2*time.Second)
	if err != nil {
		fmt.Println("refused:", err)
		return 1
	}
	conn.Write([]byte("hello from the sandbox\n"))
	conn.Close()
	fmt.Println("connected")
	return 0
}

// worldDir returns a new directory every user can enter, owned by uid.
func worldDir(t *testing.T, uid int) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	os.Chmod(d, 0o755)
	return d
}

// fixture is the world outside and inside one sandbox.
type fixture struct {
	ws, home, state, bin string
	uid                  int
	secret               string
}

func newFixture(t *testing.T, uid int) *fixture {
	t.Helper()
	f := &fixture{ws: worldDir(t, uid), home: worldDir(t, 0), state: worldDir(t, 0), bin: worldDir(t, 0), uid: uid,
		secret: "TOPSECRET-" + fmt.Sprint(time.Now().UnixNano())}
	os.MkdirAll(filepath.Join(f.home, ".ssh"), 0o755)
	// World-readable on purpose: only the sandbox stands in the way.
	os.WriteFile(filepath.Join(f.home, ".ssh", "id_ed25519"), []byte(f.secret+"\n"), 0o644)
	os.WriteFile(filepath.Join(f.state, "state.db"), []byte(f.secret+"\n"), 0o644)
	os.WriteFile(filepath.Join(f.ws, "notes.txt"), []byte("alpha\nbeta\n"), 0o644)
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = f.ws
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "first commit")
	exec.Command("chown", "-R", fmt.Sprintf("%d:%d", uid, uid), f.ws).Run()
	// A copy of the test binary that every user may run, as the helper.
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.bin, "helper"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) sandbox(t *testing.T, noBwrap bool, lim Limits) *Sandbox {
	t.Helper()
	sb, err := New(Config{ReadRoots: []string{f.ws, f.bin}, NoBwrap: noBwrap, Launcher: filepath.Join(f.bin, "helper"),
		Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// run runs argv in the sandbox as f.uid and returns its combined output
// and exit status.
func (f *fixture) run(t *testing.T, sb *Sandbox, env []string, argv ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env = append([]string{"PATH=" + fixedPath, "HOME=" + f.home}, env...)
	cmd, err := sb.Command(ctx, f.ws, argv, env)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if f.uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(f.uid), Gid: uint32(f.uid)}
	}
	err = Run(cmd)
	if ctx.Err() != nil {
		t.Fatalf("%q did not end within a minute: %s", argv, out.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%q: %v", argv, err)
	}
	return out.String(), code
}

func TestProbe(t *testing.T) {
	l := Probe()
	t.Logf("layers: %s", l.Summary())
	if l.LandlockABI < 4 {
		t.Errorf("Landlock ABI %d; these machines have 7", l.LandlockABI)
	}
	if l.Bwrap == "" {
		t.Errorf("bwrap unusable: %s", l.BwrapWhy)
	}
	if !l.Seccomp {
		t.Errorf("seccomp unavailable")
	}
}

// TestContained attacks the sandbox from inside, as root and as uid
// 65534, with every layer and with Landlock, seccomp and limits alone
// (no bwrap): every attack must fail and ordinary reading must work.
func TestContained(t *testing.T) {
	for _, uid := range []int{0, 65534} {
		for _, noBwrap := range []bool{false, true} {
			t.Run(fmt.Sprintf("uid=%d/bwrap=%v", uid, !noBwrap), func(t *testing.T) {
				testContained(t, uid, noBwrap)
			})
		}
	}
}

func testContained(t *testing.T, uid int, noBwrap bool) {
	f := newFixture(t, uid)
	sb := f.sandbox(t, noBwrap, Limits{})
	small := f.sandbox(t, noBwrap, Limits{Processes: 64, AddressSpace: 256 << 20})
	sh := func(script string) (string, int) { return f.run(t, sb, nil, "sh", "-c", script) }

	// Reading in the workspace works.
	if out, code := sh("cat notes.txt && git log --format=%s && rg -n beta notes.txt && ls && head -c 5 /dev/zero | wc -c && echo x > /dev/null"); code != 0 ||
		!strings.Contains(out, "alpha\nbeta\n") || !strings.Contains(out, "first commit") || !strings.Contains(out, "2:beta") || !strings.HasSuffix(out, "\n5\n") {
		t.Errorf("reading the workspace: exit %d\n%s", code, out)
	}

	// A hidden directory inside the workspace (the state directory), with
	// a root inside it (work://).
	state := filepath.Join(f.ws, ".state")
	work := filepath.Join(state, "sessions", "s1", "work")
	os.MkdirAll(work, 0o755)
	os.WriteFile(filepath.Join(state, "state.db"), []byte(f.secret), 0o644)
	os.WriteFile(filepath.Join(work, "plan.md"), []byte("the plan\n"), 0o644)
	exec.Command("chown", "-R", fmt.Sprintf("%d:%d", uid, uid), state).Run()
	hid, err := New(Config{ReadRoots: []string{f.ws, work, f.bin}, Hidden: []string{state}, NoBwrap: noBwrap, Launcher: filepath.Join(f.bin, "helper")})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := f.run(t, hid, nil, "sh", "-c", "cat .state/state.db; ls -a .state; cat notes.txt "+work+"/plan.md"); strings.Contains(out, f.secret) ||
		strings.Contains(out, "state.db\n") || !strings.Contains(out, "alpha\nbeta\nthe plan\n") {
		t.Errorf("hidden state directory:\n%s", out)
	}
	os.RemoveAll(state)

	// Writes: the workspace, /tmp, /dev/shm, $HOME.
	for _, target := range []string{filepath.Join(f.ws, "new"), filepath.Join(f.ws, "notes.txt"), "/tmp/fill", "/dev/shm/fill", filepath.Join(f.home, "x")} {
		out, code := sh("dd if=/dev/zero of=" + target + " bs=1M count=64 && echo WROTE")
		if code == 0 || strings.Contains(out, "WROTE") {
			t.Errorf("writing %s: exit %d\n%s", target, code, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "notes.txt")); string(b) != "alpha\nbeta\n" {
		t.Errorf("notes.txt changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "new")); err == nil {
		t.Errorf("a file was created in the workspace")
	}
	for _, m := range []string{"mount -o remount,rw /", "mount -o remount,rw,bind " + f.ws, "mount -t tmpfs none " + f.ws} {
		if out, code := sh(m + " && touch " + f.ws + "/mounted && echo MOUNTED"); code == 0 || strings.Contains(out, "MOUNTED") {
			t.Errorf("%s: exit %d\n%s", m, code, out)
		}
	}
	if _, err := os.Stat(filepath.Join(f.ws, "mounted")); err == nil {
		t.Errorf("a remount let the sandbox write")
	}

	// Secrets outside the workspace.
	for _, p := range []string{filepath.Join(f.home, ".ssh", "id_ed25519"), filepath.Join(f.state, "state.db")} {
		if out, _ := sh("cat " + p + "; ls " + filepath.Dir(p)); strings.Contains(out, f.secret) || strings.Contains(out, filepath.Base(p)+"\n") {
			t.Errorf("read %s:\n%s", p, out)
		}
	}

	// Another process: its environment, and killing it.
	victim := exec.Command("sleep", "120")
	victim.Env = []string{"VICTIM_SECRET=" + f.secret}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer victim.Process.Kill()
	pid := fmt.Sprint(victim.Process.Pid)
	if out, _ := sh("cat /proc/" + pid + "/environ; cat /proc/1/environ; kill -9 " + pid + "; kill -9 -1"); strings.Contains(out, f.secret) {
		t.Errorf("read the victim's environment:\n%s", out)
	}
	if err := victim.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the sandbox killed an outside process: %v", err)
	}

	// Sockets outside: a pathname and an abstract unix socket, TCP on
	// loopback.
	sockDir := worldDir(t, 0)
	for _, l := range []struct{ kind, addr string }{
		{"unix", filepath.Join(sockDir, "s.sock")},
		{"unix", "@planbridge-sandbox-test-" + fmt.Sprint(os.Getpid())},
		{"tcp", "127.0.0.1:0"},
	} {
		ln, err := net.Listen(l.kind, l.addr)
		if err != nil {
			t.Fatal(err)
		}
		if l.kind == "unix" && !strings.HasPrefix(l.addr, "@") {
			os.Chmod(l.addr, 0o777)
		}
		got := make(chan string, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				got <- ""
				return
			}
			b, _ := io.ReadAll(c)
			c.Close()
			got <- string(b)
		}()
		out, _ := f.run(t, sb, []string{"SANDBOX_TEST_HELPER=" + l.kind, "SANDBOX_TEST_ADDR=" + ln.Addr().String()}, filepath.Join(f.bin, "helper"))
		ln.Close()
		if line := <-got; line != "" || !strings.Contains(out, "refused") {
			t.Errorf("%s %s: the sandbox reached it (%q):\n%s", l.kind, ln.Addr(), line, out)
		}
	}

	// Namespaces: a new user namespace hands the program every capability
	// inside it and the kernel's namespace code as attack surface.
	if out, code := sh("unshare -U true && echo USERNS; unshare -Ur true && echo USERNS; unshare -n true && echo NETNS"); strings.Contains(out, "NS\n") {
		t.Errorf("created a namespace: exit %d\n%s", code, out)
	}

	// Resources: processes, memory, CPU-bound work ends with the limits.
	sh = func(script string) (string, int) { return f.run(t, small, nil, "sh", "-c", script) }
	out, _ := sh(`i=0; while [ $i -lt 5000 ]; do sleep 30 & i=$((i+1)); done; echo started $i`)
	if strings.Contains(out, "started 5000") {
		t.Errorf("started 5000 background processes:\n%.300s", out)
	}
	if out, code := sh("sort /dev/zero"); code == 0 || !strings.Contains(out, "memory") {
		t.Errorf("sort /dev/zero: exit %d\n%.300s", code, out)
	}
	cpu, err := New(Config{ReadRoots: []string{f.ws}, NoBwrap: noBwrap, Launcher: filepath.Join(f.bin, "helper"), Limits: Limits{CPUSeconds: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if out, code := f.run(t, cpu, nil, "sh", "-c", "while :; do :; done"); code != 128+int(syscall.SIGXCPU) && code != 128+int(syscall.SIGKILL) && code != -1 {
		t.Errorf("a CPU spinner under a 1 s limit: exit %d\n%s", code, out)
	}
	if out, code := sh("head -c 100000000 /dev/zero | tac | wc -c"); strings.Contains(out, "100000000") {
		t.Errorf("tac spooled 100 MB: exit %d\n%.300s", code, out)
	}
}

// TestReadOnlySharedMemory: the read-only sandbox cannot write into a
// System V shared memory segment of another process (mode 0666, so any
// user could attach) nor create IPC objects that outlive it, with every
// layer and without bwrap (whose IPC namespace is then missing), as root
// and as nobody.
func TestReadOnlySharedMemory(t *testing.T) {
	for _, uid := range []int{0, 65534} {
		for _, noBwrap := range []bool{false, true} {
			t.Run(fmt.Sprintf("uid=%d/bwrap=%v", uid, !noBwrap), func(t *testing.T) {
				f := newFixture(t, uid)
				key := 0x5eee0000 + os.Getpid()%0xfff + uid
				if noBwrap {
					key += 0x1000
				}
				id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o666)
				if err != nil {
					t.Fatal(err)
				}
				defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
				mem, err := unix.SysvShmAttach(id, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer unix.SysvShmDetach(mem)
				copy(mem, "original")
				out, _ := f.run(t, f.sandbox(t, noBwrap, Limits{}), []string{"SANDBOX_TEST_HELPER=shm", "SANDBOX_TEST_ADDR=" + strconv.Itoa(key)}, filepath.Join(f.bin, "helper"))
				if strings.Contains(out, "written") || string(mem[:8]) != "original" {
					t.Errorf("another process's shared memory: %q, memory %q", out, mem[:8])
				}
				out, _ = f.run(t, f.sandbox(t, noBwrap, Limits{}), nil, "ipcmk", "-M", "4096")
				if strings.Contains(out, "id:") {
					t.Errorf("ipcmk created a segment: %q", out)
					if _, rest, ok := strings.Cut(out, "id: "); ok {
						if n, err := strconv.Atoi(strings.TrimSpace(rest)); err == nil {
							unix.SysvShmCtl(n, unix.IPC_RMID, nil)
						}
					}
				}
				// Another process's POSIX message queue (mode 0666): the
				// program must neither open it nor send to it.
				name := fmt.Sprintf("/planbridge-test-%d-%d-%v", os.Getpid(), uid, noBwrap)
				lib := "import ctypes, os; l = ctypes.CDLL('librt.so.1', use_errno=True); "
				if out, err := exec.Command("python3", "-c", lib+"os.umask(0); print(l.mq_open(b'"+name+"', 0o100|0o2, 0o666, None))").CombinedOutput(); err != nil || strings.HasPrefix(string(out), "-1") {
					t.Fatalf("creating a message queue: %v %s", err, out)
				}
				defer exec.Command("python3", "-c", lib+"l.mq_unlink(b'"+name+"')").Run()
				out, _ = f.run(t, f.sandbox(t, noBwrap, Limits{}), nil, "python3", "-c",
					lib+"q = l.mq_open(b'"+name+"', 0o1); print('sent' if q >= 0 and l.mq_send(q, b'PWNED', 5, 0) == 0 else 'refused', os.strerror(ctypes.get_errno()))")
				if !strings.HasPrefix(out, "refused") {
					t.Errorf("another process's POSIX message queue: %q", out)
				}
			})
		}
	}
}

// readOnlyParentSpec is what readOnlyParent runs: argv in a read-only
// sandbox over roots, its output on the parent's stdout and stderr.
type readOnlyParentSpec struct {
	Roots    []string
	NoBwrap  bool
	Launcher string
	Argv     []string
	Dir      string
	Env      []string
}

// readOnlyParent plays planbridge started from a terminal: it runs one
// sandboxed command with its own stderr (the terminal) passed on.
func readOnlyParent(spec string) int {
	var sp readOnlyParentSpec
	if err := json.Unmarshal([]byte(spec), &sp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sb, err := New(Config{ReadRoots: sp.Roots, NoBwrap: sp.NoBwrap, Launcher: sp.Launcher})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cmd, err := sb.Command(context.Background(), sp.Dir, sp.Argv, sp.Env)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := Run(cmd); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestReadOnlyNoTerminal: a sandboxed command started by a planbridge
// that runs in a terminal cannot push input to that terminal with TIOCSTI
// on the descriptor it inherits (the person's shell would read and run
// it, unconfined): it is in a session of its own, with bwrap and without,
// as root and as nobody.
func TestReadOnlyNoTerminal(t *testing.T) {
	for _, uid := range []int{0, 65534} {
		for _, noBwrap := range []bool{false, true} {
			t.Run(fmt.Sprintf("uid=%d/bwrap=%v", uid, !noBwrap), func(t *testing.T) {
				f := newFixture(t, uid)
				m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
					t.Fatal(err)
				}
				n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
				if err != nil {
					t.Fatal(err)
				}
				pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer pts.Close()
				os.Chown(pts.Name(), uid, uid)
				go io.Copy(io.Discard, m)
				b, _ := json.Marshal(readOnlyParentSpec{Roots: []string{f.ws, f.bin}, NoBwrap: noBwrap, Launcher: filepath.Join(f.bin, "helper"),
					Argv: []string{filepath.Join(f.bin, "helper")}, Dir: f.ws, Env: []string{"PATH=" + fixedPath, "SANDBOX_TEST_HELPER=tty"}})
				cmd := exec.Command("setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(uid), "--clear-groups", filepath.Join(f.bin, "helper"))
				cmd.Env = []string{"SANDBOX_TEST_RO_PARENT=" + string(b)}
				cmd.Stdin, cmd.Stderr = pts, pts
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
				out, err := cmd.Output()
				if got := strings.TrimSpace(string(out)); err != nil || !strings.HasSuffix(got, "tiocsti:EPERM") {
					t.Errorf("the sandboxed command and the terminal: %v\n got %q\nwant tiocsti:EPERM", err, got)
				}
			})
		}
	}
}

// TestReadOnlyOtherProcessesLimits: the sandboxed command cannot change
// the resource limits of its parent (planbridge, the same user), which
// would stop it writing its database (a file-size limit of 0) or starve
// it; with bwrap and without, as root.
func TestReadOnlyOtherProcessesLimits(t *testing.T) {
	for _, noBwrap := range []bool{false, true} {
		t.Run(fmt.Sprintf("bwrap=%v", !noBwrap), func(t *testing.T) {
			f := newFixture(t, 0)
			var before unix.Rlimit
			unix.Getrlimit(unix.RLIMIT_CORE, &before)
			defer unix.Setrlimit(unix.RLIMIT_CORE, &before)
			out, _ := f.run(t, f.sandbox(t, noBwrap, Limits{}), nil, "sh", "-c", "prlimit --pid $PPID --core=0:0 && echo changed; ulimit -c 0 && echo own")
			var after unix.Rlimit
			unix.Getrlimit(unix.RLIMIT_CORE, &after)
			if after != before || strings.Contains(out, "changed") || !strings.Contains(out, "own") {
				t.Errorf("the parent's core limit %v -> %v: %q", before, after, out)
			}
		})
	}
}
