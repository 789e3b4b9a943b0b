package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// agentProbe is the node program the agent-profile test runs confined: it
// tries each escape and prints one line per attempt.
const agentProbe = `
const fs = require('fs'), net = require('net'), os = require('os'), cp = require('child_process');
const [ws, state, okPort, badPort] = process.argv.slice(1);
const out = [];
const tryw = (name, p) => { try { fs.writeFileSync(p, 'x\n'); out.push(name + ':written'); } catch (e) { out.push(name + ':' + e.code); } };
tryw('ws', ws + '/pwned.txt');
tryw('state', state + '/ok.txt');
tryw('tmp', os.tmpdir() + '/ok-tmp.txt');
try { fs.mkdirSync(ws + '/d'); out.push('mkdir:made'); } catch (e) { out.push('mkdir:' + e.code); }
try { fs.unlinkSync(ws + '/notes.txt'); out.push('unlink:removed'); } catch (e) { out.push('unlink:' + e.code); }
try { fs.renameSync(ws + '/notes.txt', state + '/stolen'); out.push('rename:moved'); } catch (e) { out.push('rename:' + e.code); }
try { out.push('read:' + JSON.stringify(fs.readFileSync(ws + '/notes.txt', 'utf8'))); } catch (e) { out.push('read:' + e.code); }
const sh = cp.spawnSync('/bin/sh', ['-c', 'echo hi > ' + ws + '/sh.txt; echo $?'], { encoding: 'utf8' });
out.push('sh:' + sh.stdout.trim());
// Metadata is no Landlock right: mode (git records the x bit; a setuid
// bit on a file the user owns), times, and the same on .git.
const meta = (name, f) => { try { f(); out.push(name + ':changed'); } catch (e) { out.push(name + ':' + e.code); } };
meta('chmod', () => fs.chmodSync(ws + '/notes.txt', 0o4777));
meta('chmodgit', () => fs.chmodSync(ws + '/.git', 0o777));
meta('utimes', () => fs.utimesSync(ws + '/notes.txt', 1, 1));
meta('chmodown', () => { fs.chmodSync(state + '/ok.txt', 0o640); fs.utimesSync(state + '/ok.txt', 2, 2); });
const conn = (name, port, host) => new Promise(r => {
  const s = net.connect({ port: +port, host: host || '127.0.0.1' });
  s.on('connect', () => { out.push(name + ':connected'); s.end(); r(); });
  s.on('error', e => { out.push(name + ':' + e.code); r(); });
});
const bind = () => new Promise(r => {
  const srv = net.createServer();
  srv.on('error', e => { out.push('bind:' + e.code); r(); });
  srv.listen(0, '127.0.0.1', () => { out.push('bind:listening'); srv.close(); r(); });
});
const unix = () => new Promise(r => {
  const s = net.connect({ path: state + '/no.sock' });
  s.on('connect', () => { out.push('unix:connected'); s.end(); r(); });
  s.on('error', e => { out.push('unix:' + e.code); r(); });
});
(async () => {
  await conn('okport', okPort);
  await conn('badport', badPort);
  await bind();
  await unix();
  console.log(out.join(' '));
})();
`

// TestAgentProfile: node under the agent profile, as root and as nobody,
// can write only its own directories, connect only to the allowed port,
// bind nothing and open no unix socket, and change no file's mode or
// times outside its own directories; the workspace stays identical, to
// the modes and modification times. As nobody both ways: started by root
// (a Credential) and started by a planbridge that itself runs as nobody
// (the user namespace path).
func TestAgentProfile(t *testing.T) {
	for _, c := range []struct {
		name   string
		uid    int
		parent bool
	}{{"0", 0, false}, {"65534", 65534, false}, {"65534-parent", 65534, true}} {
		t.Run(c.name, func(t *testing.T) { testAgentProfile(t, c.uid, c.parent) })
	}
}

// agentParentSpec is what a test tells the agentParent helper.
type agentParentSpec struct {
	Writable []string
	Ports    []uint16
	Argv     []string
	Dir      string
	Env      []string
	Launcher string
}

// agentParent is the test binary run as an unprivileged planbridge: it
// confines the command of spec (JSON) under the agent profile, runs it
// with this process's stdout and stderr and exits with its status.
func agentParent(spec string) int {
	var sp agentParentSpec
	if err := json.Unmarshal([]byte(spec), &sp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ag, err := NewAgent(AgentConfig{Writable: sp.Writable, ConnectPorts: sp.Ports, Launcher: sp.Launcher})
	if err != nil {
		fmt.Fprintln(os.Stderr, err, errors.Is(err, ErrNoAgentConfinement))
		return 2
	}
	cmd := exec.Command(sp.Argv[0], sp.Argv[1:]...)
	cmd.Dir, cmd.Env = sp.Dir, sp.Env
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := ag.Wrap(cmd); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func testAgentProfile(t *testing.T, uid int, parent bool) {
	if Probe().LandlockABI < 4 {
		t.Fatalf("this test needs Landlock ABI ≥ 4 (the kernel has %d)", Probe().LandlockABI)
	}
	f := newFixture(t, uid)
	state := worldDir(t, uid)
	tmp := filepath.Join(state, "tmp")
	os.Mkdir(tmp, 0o700)
	os.Chown(state, uid, uid)
	os.Chown(tmp, uid, uid)
	// Two listeners: the model's port and another.
	okL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer okL.Close()
	badL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer badL.Close()
	for _, l := range []net.Listener{okL, badL} {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	okPort := okL.Addr().(*net.TCPAddr).Port
	badPort := badL.Addr().(*net.TCPAddr).Port
	// A unix socket in the agent's own state directory: even there
	// connecting is refused below ABI 9 (seccomp denies the family).
	ul, err := net.Listen("unix", filepath.Join(state, "no.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	os.Chmod(filepath.Join(state, "no.sock"), 0o777)

	ag, err := NewAgent(AgentConfig{Writable: []string{state}, ConnectPorts: []uint16{uint16(okPort)},
		Launcher: filepath.Join(f.bin, "helper")})
	if err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, f.ws)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	argv := []string{node, "-e", agentProbe, "--", f.ws, state, strconv.Itoa(okPort), strconv.Itoa(badPort)}
	env := []string{"PATH=" + fixedPath, "HOME=" + state, "TMPDIR=" + tmp}
	var cmd *exec.Cmd
	if parent {
		b, _ := json.Marshal(agentParentSpec{Writable: []string{state}, Ports: []uint16{uint16(okPort)}, Argv: argv, Dir: f.ws, Env: env})
		cmd = exec.CommandContext(ctx, "setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(uid), "--clear-groups",
			filepath.Join(f.bin, "helper"))
		cmd.Env = []string{"SANDBOX_TEST_AGENT_PARENT=" + string(b)}
	} else {
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = f.ws
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if uid != 0 {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
		}
		if err := ag.Wrap(cmd); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("confined node: %v\n%s", err, out.String())
	}
	got := strings.TrimSpace(out.String())
	want := `ws:EROFS state:written tmp:written mkdir:EROFS unlink:EROFS rename:EXDEV read:"alpha\nbeta\n" sh:2 ` +
		`chmod:EROFS chmodgit:EROFS utimes:EROFS chmodown:changed okport:connected badport:EACCES bind:EACCES unix:EACCES`
	if got != want {
		t.Errorf("confined node as uid %d:\n got %s\nwant %s", uid, got, want)
	}
	if after := treeOf(t, f.ws); after != before {
		t.Errorf("the workspace changed:\nbefore %s\nafter  %s", before, after)
	}
	if b, err := os.ReadFile(filepath.Join(state, "ok.txt")); string(b) != "x\n" {
		t.Errorf("state write: %q %v", b, err)
	}
	if !strings.Contains(ag.Summary(), fmt.Sprintf("tcp connect only to port(s) [%d]", okPort)) {
		t.Errorf("summary %q", ag.Summary())
	}
}

// treeOf lists every path under root with its mode, size, modification
// time and a hash of its content.
func treeOf(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d", strings.TrimPrefix(p, root), fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			c, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %x", sha256.Sum256(c))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestAgentProfileRefusesBadConfig: a relative or missing writable
// directory, or the root, is refused before anything starts.
func TestAgentProfileRefusesBadConfig(t *testing.T) {
	for _, w := range []string{"rel/dir", "/nonexistent/planbridge-agent", "/", "/etc/passwd"} {
		if _, err := NewAgent(AgentConfig{Writable: []string{w}, Launcher: "/bin/true"}); err == nil {
			t.Errorf("NewAgent accepted writable %q", w)
		}
	}
}

// socketsHelper runs under the agent profile: it tries a TCP connect to
// the allowed port addr and every other kind of inet socket, printing one
// word per attempt (the errno, or what it could do).
func socketsHelper(addr string) int {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	try := func(name string, typ, proto int, conn bool) {
		fd, err := unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			fmt.Printf("%s:%v ", name, unix.ErrnoName(err.(unix.Errno)))
			return
		}
		defer unix.Close(fd)
		if !conn {
			fmt.Printf("%s:socket ", name)
			return
		}
		if err := unix.Connect(fd, sa); err != nil {
			fmt.Printf("%s:%v ", name, unix.ErrnoName(err.(unix.Errno)))
			return
		}
		fmt.Printf("%s:connected ", name)
	}
	try("tcp", unix.SOCK_STREAM, 0, true)
	try("tcpproto", unix.SOCK_STREAM, unix.IPPROTO_TCP, true)
	try("udp", unix.SOCK_DGRAM, 0, false)
	try("udpproto", unix.SOCK_DGRAM, unix.IPPROTO_UDP, false)
	try("mptcp", unix.SOCK_STREAM, unix.IPPROTO_MPTCP, true)
	try("sctp", unix.SOCK_STREAM, unix.IPPROTO_SCTP, true)
	try("seqpacket", unix.SOCK_SEQPACKET, 0, false)
	try("ping", unix.SOCK_DGRAM, unix.IPPROTO_ICMP, false)
	// listen(2) without bind(2) binds a free port itself.
	if fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err == nil {
		if err := unix.Listen(fd, 1); err != nil {
			fmt.Printf("listen:%v ", unix.ErrnoName(err.(unix.Errno)))
		} else {
			fmt.Printf("listen:listening ")
		}
		unix.Close(fd)
	}
	// TCP Fast Open: a send that connects, without connect(2).
	sends := []struct {
		name string
		send func(fd int) error
	}{
		{"tfo-sendto", func(fd int) error { return unix.Sendto(fd, []byte("x"), unix.MSG_FASTOPEN, sa) }},
		{"tfo-sendmsg", func(fd int) error { return unix.Sendmsg(fd, []byte("x"), nil, sa, unix.MSG_FASTOPEN) }},
	}
	for _, s := range sends {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			fmt.Printf("%s:socket-%v ", s.name, err)
			continue
		}
		if err := s.send(fd); err != nil {
			fmt.Printf("%s:%v ", s.name, unix.ErrnoName(err.(unix.Errno)))
		} else {
			fmt.Printf("%s:sent ", s.name)
		}
		unix.Close(fd)
	}
	fmt.Println()
	return 0
}

// TestAgentProfileSocketProtocols: Landlock's connect rules hold for TCP
// only, so the agent may make TCP and UDP sockets and nothing else of the
// inet families: an IPPROTO_MPTCP stream reached every port (the kernel
// runs MPTCP here), SCTP and ICMP are refused too; and no send may connect
// a TCP socket with MSG_FASTOPEN (Landlock sees only connect(2); Fast
// Open reached every port), and no socket may listen (listen(2) binds an
// unbound socket to a free port itself, unseen by Landlock's bind rule).
// As root and as nobody.
func TestAgentProfileSocketProtocols(t *testing.T) {
	for _, uid := range []int{0, 65534} {
		t.Run(fmt.Sprint(uid), func(t *testing.T) {
			f := newFixture(t, uid)
			state := worldDir(t, uid)
			os.Chown(state, uid, uid)
			// The allowed port: everything but TCP to it must fail.
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
			port := l.Addr().(*net.TCPAddr).Port
			ag, err := NewAgent(AgentConfig{Writable: []string{state}, Launcher: filepath.Join(f.bin, "helper")})
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(filepath.Join(f.bin, "helper"))
			cmd.Env = []string{"SANDBOX_TEST_HELPER=sockets", "SANDBOX_TEST_ADDR=" + l.Addr().String()}
			cmd.Dir = state
			if uid != 0 {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
			}
			if err := ag.Wrap(cmd); err != nil {
				t.Fatal(err)
			}
			out, err := cmd.CombinedOutput()
			got := strings.TrimSpace(string(out))
			// The port is not among ConnectPorts: TCP is refused by
			// Landlock (EACCES at connect), the others at socket(2).
			want := "tcp:EACCES tcpproto:EACCES udp:socket udpproto:socket mptcp:EACCES sctp:EACCES seqpacket:EACCES ping:EACCES " +
				"listen:EACCES tfo-sendto:EACCES tfo-sendmsg:EACCES"
			if err != nil || got != want {
				t.Errorf("sockets under the agent profile (port %d) as uid %d: %v\n got %s\nwant %s", port, uid, err, got, want)
			}
		})
	}
}

// TestAgentProfileFailsClosedWithoutMounts: a user whose launcher cannot
// make the read-only mount namespace (here a launcher that fails, as one
// does where user namespaces are denied) gets no agent profile: the error
// says why and is an ErrNoAgentConfinement.
func TestAgentProfileFailsClosedWithoutMounts(t *testing.T) {
	f := newFixture(t, 65534)
	b, _ := json.Marshal(agentParentSpec{Writable: []string{f.ws}, Argv: []string{"/bin/true"}, Dir: f.ws, Launcher: "/bin/false"})
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", filepath.Join(f.bin, "helper"))
	cmd.Env = []string{"SANDBOX_TEST_AGENT_PARENT=" + string(b)}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 ||
		!strings.Contains(string(out), "no private mount namespace for this user") || !strings.HasSuffix(strings.TrimSpace(string(out)), " true") {
		t.Errorf("NewAgent as nobody with a launcher that cannot mount: %v\n%s", err, out)
	}
}

// ttyHelper runs under the agent profile with a terminal as its stderr
// (and its parent's controlling terminal): it tries to open /dev/tty and
// to push input to the terminal through stderr (TIOCSTI), printing the
// errno of each.
func ttyHelper() int {
	word := func(err error) string {
		if err == nil {
			return "ok"
		}
		if e, ok := err.(unix.Errno); ok {
			return unix.ErrnoName(e)
		}
		return err.Error()
	}
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
	c := byte('#')
	_, _, e := unix.Syscall(unix.SYS_IOCTL, 2, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	var serr error
	if e != 0 {
		serr = e
	}
	fmt.Printf("devtty:%s tiocsti:%s\n", word(err), word(serr))
	return 0
}

// TestAgentProfileNoTerminal: planbridge started from a terminal does not
// hand it to the agent: the agent is in a session of its own, /dev/tty
// does not open, and TIOCSTI on a terminal it holds as a descriptor (the
// person's shell would read and run the input, unconfined) is refused.
// As root and as a nobody parent.
func TestAgentProfileNoTerminal(t *testing.T) {
	for _, uid := range []int{0, 65534} {
		t.Run(fmt.Sprint(uid), func(t *testing.T) {
			f := newFixture(t, uid)
			state := worldDir(t, uid)
			os.Chown(state, uid, uid)
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
			b, _ := json.Marshal(agentParentSpec{Writable: []string{state}, Argv: []string{filepath.Join(f.bin, "helper")}, Dir: state,
				Env: []string{"SANDBOX_TEST_HELPER=tty"}})
			cmd := exec.Command("setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(uid), "--clear-groups", filepath.Join(f.bin, "helper"))
			cmd.Env = []string{"SANDBOX_TEST_AGENT_PARENT=" + string(b)}
			// The parent (planbridge) has the terminal as its controlling
			// one and passes it on as stderr, as a shell would.
			cmd.Stdin, cmd.Stderr = pts, pts
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			out, err := cmd.Output()
			if got := strings.TrimSpace(string(out)); err != nil || got != "devtty:ENXIO tiocsti:EPERM" {
				t.Errorf("the agent and the terminal as uid %d: %v\n got %q\nwant %q", uid, err, got, "devtty:ENXIO tiocsti:EPERM")
			}
		})
	}
}

// shmHelper runs under the agent profile: it looks up the System V shared
// memory segment of key and writes into it, printing what it could do.
func shmHelper(key string) int {
	k, _ := strconv.Atoi(key)
	id, err := unix.SysvShmGet(k, 0, 0)
	if err != nil {
		fmt.Println("shmget:" + unix.ErrnoName(err.(unix.Errno)))
		return 0
	}
	b, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		fmt.Println("shmat:" + unix.ErrnoName(err.(unix.Errno)))
		return 0
	}
	copy(b, "PWNED")
	unix.SysvShmDetach(b)
	fmt.Println("written")
	return 0
}

// TestAgentProfileOtherProcessesSharedMemory: a System V shared memory
// segment of another process (mode 0666, so any user could attach) is
// out of the agent's reach: it has an IPC namespace of its own. As root
// and as nobody.
func TestAgentProfileOtherProcessesSharedMemory(t *testing.T) {
	for _, uid := range []int{0, 65534} {
		t.Run(fmt.Sprint(uid), func(t *testing.T) {
			f := newFixture(t, uid)
			state := worldDir(t, uid)
			key := 0x5eed0000 + os.Getpid()%0xffff + uid
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
			ag, err := NewAgent(AgentConfig{Writable: []string{state}, Launcher: filepath.Join(f.bin, "helper")})
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(filepath.Join(f.bin, "helper"))
			cmd.Env = []string{"SANDBOX_TEST_HELPER=shm", "SANDBOX_TEST_ADDR=" + strconv.Itoa(key)}
			cmd.Dir = state
			if uid != 0 {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
			}
			if err := ag.Wrap(cmd); err != nil {
				t.Fatal(err)
			}
			out, err := cmd.CombinedOutput()
			if got := strings.TrimSpace(string(out)); err != nil || got != "shmget:ENOENT" || string(mem[:8]) != "original" {
				t.Errorf("the agent and another process's shared memory as uid %d: %v %q, memory %q", uid, err, got, mem[:8])
			}
		})
	}
}

// TestAgentProfileProcessLimit: a fork bomb in the agent stops at its
// process limit as root too (uid 0 is exempt from RLIMIT_NPROC: a pids
// cgroup bounds it), and the cgroup of a finished agent is removed when
// the next one starts. As root and as nobody (RLIMIT_NPROC).
func TestAgentProfileProcessLimit(t *testing.T) {
	if Probe().cgroupRoot == "" {
		t.Fatalf("this test runs as root with a writable pids cgroup hierarchy (probe: %s)", Probe().Processes)
	}
	for _, uid := range []int{0, 65534} {
		t.Run(fmt.Sprint(uid), func(t *testing.T) {
			f := newFixture(t, uid)
			state := worldDir(t, uid)
			ag, err := NewAgent(AgentConfig{Writable: []string{state}, Launcher: filepath.Join(f.bin, "helper"),
				Limits: AgentLimits{Processes: 30}})
			if err != nil {
				t.Fatal(err)
			}
			// 200 children that wait on a pipe: the limit must stop it.
			bomb := `import os
r, w = os.pipe()
n = 0
for i in range(200):
    try:
        pid = os.fork()
    except OSError as e:
        print("stopped", n < 30, e.strerror); break
    if pid == 0:
        os.close(w); os.read(r, 1); os._exit(0)
    n += 1
else:
    print("forked", n)
`
			cmd := exec.Command("/usr/bin/python3", "-c", bomb)
			cmd.Dir = state
			cmd.Env = []string{"PATH=" + fixedPath}
			if uid != 0 {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
			}
			if err := ag.Wrap(cmd); err != nil {
				t.Fatal(err)
			}
			var sp spec
			if err := json.Unmarshal([]byte(cmd.Args[2]), &sp); err != nil || (sp.CgroupDir == "") != (uid != 0) {
				t.Fatalf("the launcher's spec as uid %d (a cgroup for uid 0 only, RLIMIT_NPROC bounds the others): %v %+v", uid, err, sp)
			}
			out, err := cmd.CombinedOutput()
			// As nobody the limit counts the user's processes elsewhere
			// too (30 more than those): it stops, maybe later.
			want := "stopped True Resource temporarily unavailable"
			got := strings.TrimSpace(string(out))
			if uid != 0 {
				got = strings.Replace(got, "stopped False", "stopped True", 1)
			}
			if err != nil || got != want {
				t.Errorf("fork bomb in the agent as uid %d: %v %q", uid, err, got)
			}
			if uid != 0 {
				return
			}
			run := strings.TrimSuffix(sp.CgroupDir, "-new") + "-run"
			if _, err := os.Stat(run); err != nil {
				t.Errorf("the agent's cgroup: %v", err)
			}
			// The bomb's children end when it does (their pipe
			// closes); wait for the cgroup to be empty.
			for i := 0; ; i++ {
				b, err := os.ReadFile(filepath.Join(run, "cgroup.procs"))
				if err != nil || len(strings.TrimSpace(string(b))) == 0 {
					break
				}
				if i > 2000 { // 20 s: a hang guard
					t.Fatalf("the bomb's processes do not end: %s", b)
				}
				time.Sleep(10 * time.Millisecond)
			}
			next := exec.Command("/bin/true")
			if err := ag.Wrap(next); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(run); !os.IsNotExist(err) {
				t.Errorf("the finished agent's cgroup %s is still there: %v", run, err)
			}
			var nsp spec
			json.Unmarshal([]byte(next.Args[2]), &nsp)
			os.Remove(nsp.CgroupDir) // never started
		})
	}
}

// TestAgentProfileInheritsNoDescriptors: a descriptor planbridge holds
// without close-on-exec (one inherited from whatever started it: here a
// workspace file opened for writing) does not reach the agent, nor a
// command of the read-only sandbox; through it they wrote the workspace
// past Landlock and the read-only mounts, which check a file when it is
// opened. As root and as nobody.
func TestAgentProfileInheritsNoDescriptors(t *testing.T) {
	for _, uid := range []int{0, 65534} {
		t.Run(fmt.Sprint(uid), func(t *testing.T) {
			f := newFixture(t, uid)
			state := worldDir(t, uid)
			os.Chown(state, uid, uid)
			before := treeOf(t, f.ws)
			// No O_CLOEXEC: every child of this process inherits it.
			fd, err := syscall.Open(filepath.Join(f.ws, "notes.txt"), syscall.O_WRONLY|syscall.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(fd)
			ag, err := NewAgent(AgentConfig{Writable: []string{state}, Launcher: filepath.Join(f.bin, "helper")})
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(`echo pwned >&%d && echo wrote || echo refused`, fd))
			cmd.Dir = state
			cmd.Env = []string{"PATH=" + fixedPath}
			if uid != 0 {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
			}
			if err := ag.Wrap(cmd); err != nil {
				t.Fatal(err)
			}
			out, err := cmd.Output()
			if got := strings.TrimSpace(string(out)); err != nil || got != "refused" {
				t.Errorf("the agent and an inherited descriptor as uid %d: %v %q", uid, err, got)
			}
			// The read-only runner's profile, with bwrap and without.
			for _, noBwrap := range []bool{false, true} {
				// Its file size limit 0 stops a write; not a truncation.
				prog := fmt.Sprintf("import os\ntry:\n  os.ftruncate(%d, 0); print('truncated')\nexcept OSError: print('refused')", fd)
				got, code := f.run(t, f.sandbox(t, noBwrap, Limits{}), nil, "/usr/bin/python3", "-c", prog)
				if strings.TrimSpace(got) != "refused" {
					t.Errorf("the read-only sandbox (no bwrap: %v) and an inherited descriptor as uid %d: %d %q", noBwrap, uid, code, got)
				}
			}
			if after := treeOf(t, f.ws); after != before {
				t.Errorf("the workspace changed through an inherited descriptor")
			}
		})
	}
}
