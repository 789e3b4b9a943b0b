package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// worldDir returns a new directory every user can enter.
func worldDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "planbridge-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	os.Chmod(d, 0o755)
	return d
}

// sandboxWorld is a workspace with a repository, a home with a secret key
// and a state directory with a secret database, for one uid, and a copy
// of the planbridge binary that uid may run.
type sandboxWorld struct {
	uid                   int
	bin, ws, home, state  string
	secret, apiKey, stdin string
}

func newSandboxWorld(t *testing.T, uid int) *sandboxWorld {
	t.Helper()
	w := &sandboxWorld{uid: uid, bin: worldDir(t), ws: worldDir(t), home: worldDir(t), state: worldDir(t),
		secret: fmt.Sprintf("SECRET-%d", time.Now().UnixNano()), apiKey: "sk-fake-planbridge-key-0000"}
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.bin, "planbridge"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(w.home, ".ssh"), 0o755)
	os.WriteFile(filepath.Join(w.home, ".ssh", "id_ed25519"), []byte(w.secret+"\n"), 0o644)
	os.WriteFile(filepath.Join(w.state, "state.db"), []byte(w.secret+"\n"), 0o644)
	os.WriteFile(filepath.Join(w.ws, "notes.txt"), []byte("alpha\nbeta\n"), 0o644)
	os.Symlink("/proc/self/environ", filepath.Join(w.ws, "CONTRIBUTING.md"))
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first commit"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = w.ws
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if out, err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", uid, uid), w.ws).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	return w
}

// run runs the planbridge binary with args as w.uid, with the API key in
// its environment and w.stdin on its stdin.
func (w *sandboxWorld) run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(w.bin, "planbridge"), args...)
	cmd.Dir = w.ws
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + w.home, "OPENAI_API_KEY=" + w.apiKey,
		"PLANBRIDGE_STATE_DIR=" + w.state}
	cmd.Stdin = strings.NewReader(w.stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if w.uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.uid)}
	}
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("planbridge %q did not finish:\n%s", args, out.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

// TestSandboxCommandContained attacks the confinement alone through
// "planbridge sandbox", as root and as uid 65534: every attack is
// contained and git log, cat and rg in the workspace still work.
func TestSandboxCommandContained(t *testing.T) {
	for _, uid := range []int{0, 65534} {
		t.Run(fmt.Sprintf("uid=%d", uid), func(t *testing.T) {
			w := newSandboxWorld(t, uid)
			sh := func(script string) (string, int) { return w.run(t, "sandbox", "-C", w.ws, "--", "sh", "-c", script) }

			if out, code := sh("git log --format=%s && cat notes.txt && rg -n beta ."); code != 0 ||
				!strings.Contains(out, "first commit\nalpha\nbeta\n") || !strings.Contains(out, "2:beta") {
				t.Errorf("reading the workspace: exit %d\n%s", code, out)
			}
			attacks := []struct{ name, script string }{
				{"write in the workspace", "echo x > notes.txt; echo y > new; touch t; mkdir d; ls"},
				{"remount", "mount -o remount,rw / ; mount -o remount,rw,bind " + w.ws + " " + w.ws + " ; echo z > notes.txt; ls"},
				{"secret in $HOME", "cat " + w.home + "/.ssh/id_ed25519; cat ~/.ssh/id_ed25519; ls -a ~ " + w.home + "/.ssh"},
				{"state directory", "cat " + w.state + "/state.db $PLANBRIDGE_STATE_DIR/state.db; ls " + w.state},
				{"own parent's environment", "cat /proc/$PPID/environ /proc/1/environ; for p in /proc/[0-9]*; do cat $p/environ; done"},
				{"fill /tmp", "dd if=/dev/zero of=/tmp/fill bs=1M count=100; ls -la /tmp"},
				{"fill /dev/shm", "dd if=/dev/zero of=/dev/shm/fill bs=1M count=100; ls -la /dev/shm"},
			}
			for _, a := range attacks {
				out, _ := sh(a.script)
				if strings.Contains(out, w.secret) || strings.Contains(out, w.apiKey) {
					t.Errorf("%s: leaked a secret:\n%s", a.name, out)
				}
				for _, made := range []string{"new", "t", "d", "mounted"} {
					if _, err := os.Stat(filepath.Join(w.ws, made)); err == nil {
						t.Errorf("%s: created %s in the workspace", a.name, made)
					}
				}
				if b, _ := os.ReadFile(filepath.Join(w.ws, "notes.txt")); string(b) != "alpha\nbeta\n" {
					t.Fatalf("%s: notes.txt changed to %q", a.name, b)
				}
			}

			// Another process: its environment, and killing it.
			victim := exec.Command("sleep", "120")
			victim.Env = []string{"VICTIM=" + w.secret}
			victim.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
			if err := victim.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { victim.Process.Kill(); victim.Wait() }()
			pid := fmt.Sprint(victim.Process.Pid)
			if out, _ := sh("cat /proc/" + pid + "/environ; kill -9 " + pid + "; kill -KILL -1; echo done"); strings.Contains(out, w.secret) {
				t.Errorf("read another process's environment:\n%s", out)
			}
			if err := victim.Process.Signal(syscall.Signal(0)); err != nil {
				t.Errorf("the sandbox killed an outside process: %v", err)
			}

			// Sockets outside: unix (path and abstract) and TCP on loopback.
			sockDir := worldDir(t)
			for _, l := range []struct{ kind, addr, client string }{
				{"unix", filepath.Join(sockDir, "s.sock"), `perl -MIO::Socket::UNIX -e '$s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "refused: $!\n"; print $s "hello\n"; print "connected\n"' ADDR`},
				{"unix", "@planbridge-cli-test-" + fmt.Sprint(os.Getpid(), uid), `perl -MIO::Socket::UNIX -e '$s = IO::Socket::UNIX->new(Peer => "\0" . substr($ARGV[0], 1)) or die "refused: $!\n"; print $s "hello\n"; print "connected\n"' ADDR`},
				{"tcp", "127.0.0.1:0", `bash -c 'echo hello > /dev/tcp/${1%:*}/${1#*:} && echo connected' x ADDR`},
			} {
				ln, err := net.Listen(l.kind, l.addr)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(l.addr, "@") && l.kind == "unix" {
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
				out, _ := sh(strings.Replace(l.client, "ADDR", ln.Addr().String(), 1))
				ln.Close()
				if line := <-got; line != "" || strings.Contains(out, "connected") {
					t.Errorf("%s %s reached from the sandbox (%q):\n%s", l.kind, ln.Addr(), line, out)
				}
				if !strings.Contains(out, "refused") && !strings.Contains(out, "ermission denied") && !strings.Contains(out, "No such file") {
					t.Errorf("%s %s: the client did not fail as expected:\n%s", l.kind, ln.Addr(), out)
				}
			}

			// Resources.
			if out, _ := sh(`i=0; while [ $i -lt 5000 ]; do sleep 60 & i=$((i+1)); done; echo started $i`); strings.Contains(out, "started 5000") {
				t.Errorf("5,000 background processes started:\n%.300s", out)
			}
			if out, code := sh("sort /dev/zero"); code == 0 || !strings.Contains(out, "memory") {
				t.Errorf("memory hog: exit %d\n%.300s", code, out)
			}
		})
	}
}

// TestShContained runs Plan's shell through the real binary, as root and
// as uid 65534, against the in-process reads of the issue: the binary's
// own environment (with an API key in it) and stdin never reach the
// output, and the hogs end.
func TestShContained(t *testing.T) {
	for _, uid := range []int{0, 65534} {
		t.Run(fmt.Sprintf("uid=%d", uid), func(t *testing.T) {
			w := newSandboxWorld(t, uid)
			w.stdin = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"api_key":"` + w.apiKey + `"}}`
			for _, src := range []string{
				"cat < /proc/self/environ",
				"cat /proc/self/environ",
				"cat < /proc/$PPID/environ",
				"cat /proc/1/environ",
				"cat < /proc/thread-self/environ",
				"cat < /dev/stdin",
				"cat /dev/stdin",
				"cat < /dev/fd/0",
				"cat /dev/fd/0",
				"cat < CONTRIBUTING.md",
				"cat CONTRIBUTING.md",
				"cat ~/.ssh/id_ed25519",
				"cat < " + w.state + "/state.db",
				"echo /*/*/*/*/*/* | wc -c",
				"sort /dev/zero",
				"cat /dev/zero | tac",
			} {
				out, code := w.run(t, "sh", "-C", w.ws, "-timeout", "60s", src)
				if strings.Contains(out, w.apiKey) || strings.Contains(out, "OPENAI_API_KEY") || strings.Contains(out, w.secret) {
					t.Errorf("%q (exit %d) leaked:\n%.400s", src, code, out)
				}
				if strings.Contains(out, "timed out") {
					t.Errorf("%q ran into the timeout instead of a limit:\n%.300s", src, out)
				}
			}
			if out, code := w.run(t, "sh", "-C", w.ws, "git log --format=%s | cat; cat notes.txt | head -n 1"); code != 0 || out != "first commit\nalpha\n" {
				t.Errorf("workspace reads through sh: exit %d\n%s", code, out)
			}
		})
	}
}

// TestDoctorListsLayers: doctor names every confinement layer and its
// state; on these machines all of them are active.
func TestDoctorListsLayers(t *testing.T) {
	out, err := exec.Command(binary, "doctor", "--state-dir", t.TempDir()).CombinedOutput()
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	for _, want := range []string{"landlock   active   ABI ", "bwrap      active   ", "userns     active", "seccomp    active", "rlimits    active"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}
