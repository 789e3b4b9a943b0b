package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"planbridge/internal/agent"
)

// parseCommand reads --acp-command: a JSON array of strings, or words
// separated by blanks (no quoting: use the array form for arguments with
// spaces).
func parseCommand(s string) []string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") {
		var argv []string
		if json.Unmarshal([]byte(s), &argv) == nil {
			return argv
		}
		return []string{s} // fails at start with a clear "not found"
	}
	return strings.Fields(s)
}

// acpEngines are the acp engines one serve built; Close kills their
// agents' process groups when serve ends. Safe for concurrent use.
type acpEngines struct {
	mu   sync.Mutex // guards list
	list []*agent.ACP
}

func (a *acpEngines) add(e *agent.ACP) {
	a.mu.Lock()
	a.list = append(a.list, e)
	a.mu.Unlock()
}

// Close closes every engine added so far.
func (a *acpEngines) Close() {
	a.mu.Lock()
	list := a.list
	a.list = nil
	a.mu.Unlock()
	for _, e := range list {
		e.Close()
	}
}

func acpConfig(cfg agent.EngineConfig, stateDir string, stderr io.Writer) agent.ACPConfig {
	cmd := cfg.Command
	if len(cmd) == 0 {
		cmd = parseCommand(os.Getenv("PLANBRIDGE_ACP_COMMAND"))
	}
	return agent.ACPConfig{Command: cmd, Env: cfg.Env, Stderr: stderr, StateDir: stateDir,
		Confine: agent.ConfineACP, Confined: agent.ACPConfinementText(cfg.Env)}
}

func newACP(cfg agent.EngineConfig, stateDir string, lg *slog.Logger, acps *acpEngines) (agent.Engine, error) {
	e, err := agent.NewACP(acpConfig(cfg, stateDir, logLines(lg)))
	if err != nil {
		return nil, err
	}
	acps.add(e)
	return e, nil
}

// logLines is a writer that logs each line of an agent's stderr.
func logLines(lg *slog.Logger) io.Writer {
	r, w := io.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lg.Info("acp agent stderr", "line", sc.Text())
		}
		r.Close()
	}()
	return w
}

// acpDoctor starts the configured agent and checks it speaks ACP.
func acpDoctor(ctx context.Context, cfg agent.EngineConfig) (string, error) {
	c := acpConfig(cfg, "", nil)
	e, err := agent.NewACP(c)
	if err != nil {
		return err.Error(), err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := e.Probe(ctx)
	if err != nil {
		return "acp " + err.Error(), err
	}
	name := "an unnamed agent"
	if res.AgentInfo != nil {
		name = strings.TrimSpace(res.AgentInfo.Name + " " + res.AgentInfo.Version)
	}
	return fmt.Sprintf("acp %s speaks ACP %d (%s)", strings.Join(c.Command, " "), res.ProtocolVersion, name), nil
}

// acpSecretName reports whether an agent environment variable holds a
// secret to mask: API keys and tokens (…_KEY, …_TOKEN, …_SECRET).
func acpSecretName(name string) bool {
	n := strings.ToUpper(name)
	for _, suf := range []string{"_KEY", "_TOKEN", "_SECRET", "_PASSWORD"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	return false
}
