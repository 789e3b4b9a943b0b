package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"planbridge/acp"
)

// acpTerminal is one terminal/create command of the agent's, run by
// planbridge's shell after the gate allowed it. The shell runs a command
// to its end and then hands its output over, so terminal/output shows
// nothing until the command has exited.
type acpTerminal struct {
	cancel context.CancelFunc
	done   chan struct{}
	limit  int // outputByteLimit, 0 for none

	mu     sync.Mutex // guards the fields below
	output string
	exit   *acp.TerminalExitStatus
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// terminalCommand is the bash command line a terminal/create request
// stands for, as the gate classifies it and the shell runs it: `bash -c
// SCRIPT` (or sh, -lc) is SCRIPT; a command with arguments is the quoted
// argv; a command without arguments is taken as a command line. The
// request's variables become assignments before it, and a cwd other than
// the workspace a `cd` (both classified like the rest: an assignment or
// cd the read-only classifier refuses is refused).
func (u *acpTurn) terminalCommand(p acp.CreateTerminalParams) (string, error) {
	if strings.TrimSpace(p.Command) == "" {
		return "", fmt.Errorf("terminal/create without a command")
	}
	src := p.Command
	if len(p.Args) > 0 {
		base := filepath.Base(p.Command)
		if (base == "bash" || base == "sh") && len(p.Args) == 2 && (p.Args[0] == "-c" || p.Args[0] == "-lc") {
			src = p.Args[1]
		} else {
			src = shellQuoteArgv(append([]string{p.Command}, p.Args...))
		}
	}
	var pre []string
	for _, e := range p.Env {
		if !envName.MatchString(e.Name) {
			return "", fmt.Errorf("terminal/create: bad variable name %q", e.Name)
		}
		pre = append(pre, e.Name+"="+shellQuoteArgv([]string{e.Value}))
	}
	if p.Cwd != "" {
		ws, err := filepath.Abs(u.t.Env.Roots.Workspace)
		if err != nil {
			return "", err
		}
		cwd := filepath.Clean(p.Cwd)
		if !filepath.IsAbs(cwd) {
			cwd = filepath.Join(ws, cwd)
		}
		rel, err := filepath.Rel(ws, cwd)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("terminal/create: cwd %s is outside the workspace", p.Cwd)
		}
		if rel != "." {
			src = "cd " + shellQuoteArgv([]string{rel}) + " && " + src
		}
	}
	if len(pre) > 0 {
		src = strings.Join(pre, " ") + " " + src
	}
	return src, nil
}

// createTerminal serves terminal/create as a bash call through the gate:
// in Plan only a command the classifier finds read-only runs, under the
// read-only runner and its OS sandbox; outside Plan the permission mode
// decides (the person is asked for a command that is not read-only) and a
// read-only command still takes the read-only runner.
func (u *acpTurn) createTerminal(ctx context.Context, p acp.CreateTerminalParams) (any, error) {
	src, err := u.terminalCommand(p)
	if err != nil {
		return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: "planbridge refused the terminal: " + err.Error()}
	}
	u.mu.Lock()
	u.nterm++
	id := "term-" + strconv.Itoa(u.nterm)
	u.mu.Unlock()
	call := ToolCall{ID: "terminal:" + id, Name: "bash", Arguments: mustJSON(map[string]string{"command": src})}
	tool := u.t.Tools.Get("bash")
	if tool == nil {
		tool = bashTool
	}
	d := u.t.Gate.Decide(tool, call)
	if e := u.settle(ctx, call, d, "command", "the person did not allow the command"); e != nil {
		return nil, e
	}
	shell := u.t.Env.Shell
	if shell == nil {
		return nil, &acp.Error{Code: acp.CodeInternalError, Message: "planbridge has no shell to run the command"}
	}
	u.t.Sink.ToolCall(call)
	readOnly := d.ReadOnlyShell || u.t.Gate.Plan
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	term := &acpTerminal{cancel: cancel, done: make(chan struct{})}
	if p.OutputByteLimit != nil && *p.OutputByteLimit > 0 {
		term.limit = *p.OutputByteLimit
	}
	u.mu.Lock()
	if u.terms == nil {
		u.terms = map[string]*acpTerminal{}
	}
	u.terms[id] = term
	u.mu.Unlock()
	roots := u.t.Env.Roots
	go func() {
		defer close(term.done)
		out, code, refused, reason, err := runBash(tctx, shell, roots, src, readOnly)
		if err == nil && refused {
			reason = "bash command refused at execution: " + reason + "." + u.t.Gate.advice()
			u.blocked(call, CodePlanBlocked, reason)
			out, code = "planbridge refused the command: "+reason, 126
		}
		st := &acp.TerminalExitStatus{}
		switch {
		case tctx.Err() != nil:
			sig := "SIGKILL"
			st.Signal = &sig
		case err != nil:
			out += err.Error()
			c := 127
			st.ExitCode = &c
		default:
			st.ExitCode = &code
		}
		term.mu.Lock()
		term.output, term.exit = out, st
		term.mu.Unlock()
		u.t.Sink.ToolResult(call, err == nil && st.ExitCode != nil && *st.ExitCode == 0, out)
	}()
	return acp.CreateTerminalResult{TerminalID: id}, nil
}

// terminal returns the turn's terminal p names.
func (u *acpTurn) terminal(p acp.TerminalParams) (*acpTerminal, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if t := u.terms[p.TerminalID]; t != nil {
		return t, nil
	}
	return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: "no such terminal: " + p.TerminalID}
}

// result is terminal/output's answer: the output, its tail when it is
// longer than the limit (cut at a character boundary).
func (t *acpTerminal) result() acp.TerminalOutputResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	out, trunc := t.output, false
	if t.limit > 0 && len(out) > t.limit {
		out, trunc = out[len(out)-t.limit:], true
		for len(out) > 0 && !utf8.RuneStart(out[0]) {
			out = out[1:]
		}
	}
	return acp.TerminalOutputResult{Output: out, Truncated: trunc, ExitStatus: t.exit}
}

// terminalRequest serves terminal/output, wait_for_exit, kill and release.
func (u *acpTurn) terminalRequest(ctx context.Context, method string, p acp.TerminalParams) (any, error) {
	t, err := u.terminal(p)
	if err != nil {
		return nil, err
	}
	switch method {
	case "terminal/output":
		return t.result(), nil
	case "terminal/wait_for_exit":
		select {
		case <-t.done:
		case <-ctx.Done():
			return nil, &acp.Error{Code: acp.CodeInternalError, Message: ctx.Err().Error()}
		}
		return t.result().ExitStatus, nil
	}
	// terminal/kill, and terminal/release, which also forgets it.
	t.cancel()
	<-t.done
	if method == "terminal/release" {
		u.mu.Lock()
		delete(u.terms, p.TerminalID)
		u.mu.Unlock()
	}
	return struct{}{}, nil
}

// closeTerminals kills the commands of the turn's terminals and waits for
// them: nothing a turn started outlives it.
func (u *acpTurn) closeTerminals() {
	u.mu.Lock()
	terms := u.terms
	u.terms = nil
	u.mu.Unlock()
	for _, t := range terms {
		t.cancel()
		<-t.done
	}
}
