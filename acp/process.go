package acp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Command is how to start an agent.
type Command struct {
	Argv []string // program and arguments; Argv[0] is looked up in PATH
	Env  []string // the agent's whole environment ("K=V")
	Dir  string   // working directory
	// Stderr receives the agent's stderr (nil discards it).
	Stderr io.Writer
	// Prepare may change the command before it starts (the OS confinement
	// hook: wrap Path/Args, set SysProcAttr fields other than the process
	// group). It runs after the process group is set.
	Prepare func(*exec.Cmd) error
}

// Process is a running agent and its connection.
type Process struct {
	*Conn
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	// marker is the NAME=VALUE every process of this agent inherits.
	marker string
	mu     sync.Mutex // guards err
	err    error
}

// Start starts the agent in its own process group and connects to its
// stdio; h serves its requests.
func Start(c Command, h Handler) (*Process, error) {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return nil, errors.New("acp: no agent command configured")
	}
	path, err := exec.LookPath(c.Argv[0])
	if err != nil {
		return nil, fmt.Errorf("acp: agent command %q: %w", c.Argv[0], err)
	}
	cmd := exec.Command(path, c.Argv[1:]...)
	// Every process the agent starts inherits the marker, also those that
	// leave its process group (Claude Code starts its commands in groups
	// of their own): sweep finds them by it.
	marker := fmt.Sprintf("%s=%d-%d", markerVar, os.Getpid(), markerSeq.Add(1))
	cmd.Env = append(append([]string(nil), c.Env...), marker)
	cmd.Dir = c.Dir
	cmd.Stderr = c.Stderr
	// A grandchild holding stderr open must not keep Wait from returning.
	cmd.WaitDelay = 2 * time.Second
	// Its own group, so Close kills what the agent started too; and killed
	// with planbridge if planbridge dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if c.Prepare != nil {
		if err := c.Prepare(cmd); err != nil {
			return nil, fmt.Errorf("acp: preparing the agent: %w", err)
		}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("acp: starting %s: %w", c.Argv[0], err)
	}
	p := &Process{cmd: cmd, stdin: stdin, done: make(chan struct{}), marker: marker}
	p.Conn = NewConn(stdout, stdin, h)
	go func() {
		err := cmd.Wait()
		// A dead agent's processes die with it, wherever they are.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		sweep(marker)
		p.mu.Lock()
		if err == nil {
			err = errors.New("exited")
		}
		p.err = err
		p.mu.Unlock()
		p.Conn.fail(fmt.Errorf("acp: the agent %s: %w", c.Argv[0], err))
		close(p.done)
	}()
	return p, nil
}

// Pid is the agent's process id (and its process group's).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the agent process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err says how the agent exited (nil while it runs).
func (p *Process) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Close ends the connection and kills the agent's process group: SIGTERM,
// then SIGKILL after grace. It returns once the agent has exited.
func (p *Process) Close(grace time.Duration) {
	p.Conn.Close()
	p.stdin.Close()
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
	}
	// The leader may be gone while the group lives on: kill it regardless.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
	sweep(p.marker)
}

// KillOrphans kills the agent's orphans: the processes carrying its
// marker that are no longer descendants of the agent (their parent died
// and they were reparented away), such as a command whose session the
// agent closed without stopping it. Best effort, as [sweep].
func (p *Process) KillOrphans() {
	leader := p.cmd.Process.Pid
	want := []byte("\x00" + p.marker + "\x00")
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	parent := map[int]int{}
	var marked []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold blanks and parentheses.
		f := bytes.Fields(st[bytes.LastIndexByte(st, ')')+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		parent[pid] = ppid
		if pid == leader || string(f[0]) == "Z" {
			continue
		}
		if carries(e.Name(), want) {
			marked = append(marked, pid)
		}
	}
	for _, pid := range marked {
		q, ok := pid, false
		for i := 0; i < 1<<12 && q > 1; i++ {
			if q = parent[q]; q == leader {
				ok = true
				break
			}
		}
		if !ok {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// carries says the environment of process pid (a /proc entry) holds
// want, a marker framed by NULs.
func carries(pid string, want []byte) bool {
	env, err := os.ReadFile("/proc/" + pid + "/environ")
	return err == nil && bytes.Contains(append(append([]byte{0}, env...), 0), want)
}

// markerVar names the variable that marks an agent's processes.
const markerVar = "PLANBRIDGE_ACP_AGENT"

var markerSeq atomic.Int64

// sweep kills every process whose environment holds marker: what an agent
// started outside its process group. Best effort: it sees the processes
// whose environment this process may read (its own user's, or all as
// root), and misses one that replaced its environment.
func sweep(marker string) {
	want := []byte("\x00" + marker + "\x00")
	for round := 0; round < 3; round++ { // a process may fork while we kill
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		found := false
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			if !carries(e.Name(), want) {
				continue
			}
			found = true
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if !found {
			return
		}
	}
}

// Initialize performs the handshake, advertising caps.
func (p *Process) Initialize(ctx context.Context, caps ClientCapabilities, info Implementation) (InitializeResult, error) {
	var res InitializeResult
	err := p.Call(ctx, "initialize", InitializeParams{ProtocolVersion: ProtocolVersion, ClientCapabilities: caps, ClientInfo: &info}, &res)
	if err != nil {
		return res, err
	}
	if res.ProtocolVersion != ProtocolVersion {
		return res, fmt.Errorf("acp: the agent speaks protocol version %d, planbridge speaks %d", res.ProtocolVersion, ProtocolVersion)
	}
	return res, nil
}

// Environ is os.Environ without the variables named in drop.
func Environ(drop ...string) []string {
	var out []string
outer:
	for _, kv := range os.Environ() {
		for _, d := range drop {
			if len(kv) > len(d) && kv[:len(d)+1] == d+"=" {
				continue outer
			}
		}
		out = append(out, kv)
	}
	return out
}
