package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"planbridge/acp"
)

// TurnEngine is an engine that runs a whole turn itself (an ACP agent runs
// its own tool loop). [Turn.Run] hands a root turn to it; the engine must
// still pass every permission request and client-side file access through
// t.Gate, report through t.Sink and honour ctx.
type TurnEngine interface {
	Engine
	RunTurn(ctx context.Context, t *Turn) (TurnResult, error)
}

// ACPConfig configures the [ACP] engine.
type ACPConfig struct {
	// Command is the agent program and its arguments.
	Command []string
	// Env is added to the agent's environment (after the hygiene
	// variables, so the person may override them).
	Env map[string]string
	// Stderr receives the agent's stderr (the log); nil discards it.
	Stderr io.Writer
	// StateDir is the agent's own directory, which planbridge provides
	// (created if missing): the one place a confined Plan agent may write.
	StateDir string
	// Confine, when set, wraps the agent command in the OS confinement
	// before it starts (see [Confinement]). It is called for every agent
	// process; the Plan one must come out unable to change the workspace
	// whether or not it asks first.
	Confine func(cmd *exec.Cmd, c Confinement) error
	// Confined describes the layers Confine applies to the Plan agent,
	// for doctor and /plan status; it starts with "NO OS CONFINEMENT"
	// when none can be applied here (Confine then fails and Plan turns
	// are refused).
	Confined string
}

// Confinement is what [ACPConfig.Confine] must enforce on one agent
// process.
type Confinement struct {
	// Plan: the process serves Plan turns. Everything but Writable must be
	// read-only to it, the workspace above all.
	Plan bool
	// Writable lists the directories the agent may write in Plan (its
	// state directory).
	Writable []string
}

// acpHygiene is set in every agent's environment: no update checks, no
// telemetry, no usage statistics.
var acpHygiene = []string{
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	"DISABLE_AUTOUPDATER=1",
	"DISABLE_TELEMETRY=1",
	"DISABLE_ERROR_REPORTING=1",
	"GEMINI_TELEMETRY_ENABLED=false",
	"GEMINI_CLI_DISABLE_USAGE_STATISTICS=true",
}

// acpDropped never reaches an agent: IS_SANDBOX=yes makes Claude Code
// refuse to start as root (and would let it bypass its permission asks).
var acpDropped = []string{"IS_SANDBOX"}

// ACP drives an Agent Client Protocol agent (Claude Code, Codex, Gemini
// CLI …) as a turn's engine. Plan turns and other turns use separate agent
// processes, so the Plan one can be started confined. Safe for concurrent
// use; one ACP session per planbridge session and process.
type ACP struct {
	cfg ACPConfig

	mu     sync.Mutex        // guards agents
	agents map[bool]*acpProc // by the Plan stamp of the turns it serves
}

// NewACP validates cfg and returns the engine; the agent starts with the
// first turn.
func NewACP(cfg ACPConfig) (*ACP, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("engine acp needs a command (--acp-command, PLANBRIDGE_ACP_COMMAND or initialize's engine.command)")
	}
	return &ACP{cfg: cfg, agents: map[bool]*acpProc{}}, nil
}

// Name implements [Engine].
func (e *ACP) Name() string { return "acp" }

// Stream implements [Engine]; an ACP agent runs whole turns (see
// [ACP.RunTurn]), so a single model request is an error.
func (e *ACP) Stream(ctx context.Context, req Request, onText func(string)) (Response, error) {
	return Response{}, errors.New("the acp engine runs whole turns; it cannot serve a single model request")
}

// AgentConfinement says what confines the Plan agent process: the OS
// layers of [ACPConfig.Confine], or that only the gate holds Plan.
func (e *ACP) AgentConfinement() string {
	if e.cfg.Confine == nil {
		return "NO OS CONFINEMENT of the Plan agent process: only the gate holds Plan (for what the agent asks or does through the client's methods)"
	}
	if e.cfg.Confined == "" {
		return "Plan agent process confined by the configured hook"
	}
	return e.cfg.Confined
}

// Close kills every agent process group.
func (e *ACP) Close() {
	e.mu.Lock()
	agents := e.agents
	e.agents = map[bool]*acpProc{}
	e.mu.Unlock()
	for _, a := range agents {
		a.proc.Close(2 * time.Second)
	}
}

// Probe starts the agent, performs the initialize round-trip and stops it
// (doctor).
func (e *ACP) Probe(ctx context.Context) (acp.InitializeResult, error) {
	a, err := e.start(ctx, false)
	if err != nil {
		return acp.InitializeResult{}, err
	}
	defer a.proc.Close(2 * time.Second)
	return a.init, nil
}

// acpProc is one running agent.
type acpProc struct {
	proc *acp.Process
	init acp.InitializeResult

	mu       sync.Mutex             // guards the maps
	sessions map[string]*acpSession // by planbridge session (its work dir)
	turns    map[string]*acpTurn    // by ACP session id, while a turn runs
}

// idle says no turn runs on the agent.
func (a *acpProc) idle() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.turns) == 0
}

type acpSession struct {
	id    string
	modes *acp.ModeState
}

func (e *ACP) env() []string { return acpEnviron(e.cfg.Env) }

// acpEnviron is the environment of an agent configured with cfgEnv:
// planbridge's own without [acpDropped], the hygiene variables, then
// cfgEnv.
func acpEnviron(cfgEnv map[string]string) []string {
	env := append(acp.Environ(acpDropped...), acpHygiene...)
	for k, v := range cfgEnv {
		if k == "IS_SANDBOX" {
			continue
		}
		env = append(env, k+"="+v)
	}
	return env
}

func (e *ACP) start(ctx context.Context, plan bool) (*acpProc, error) {
	a := &acpProc{sessions: map[string]*acpSession{}, turns: map[string]*acpTurn{}}
	c := acp.Command{Argv: e.cfg.Command, Env: e.env(), Stderr: e.cfg.Stderr}
	var writable []string
	if e.cfg.StateDir != "" {
		if err := os.MkdirAll(e.cfg.StateDir, 0o700); err != nil {
			return nil, fmt.Errorf("the acp agent's state directory: %w", err)
		}
		writable = append(writable, e.cfg.StateDir)
	}
	if e.cfg.Confine != nil {
		conf := Confinement{Plan: plan, Writable: writable}
		c.Prepare = func(cmd *exec.Cmd) error { return e.cfg.Confine(cmd, conf) }
	}
	p, err := acp.Start(c, a.handle)
	if err != nil {
		return nil, err
	}
	a.proc = p
	ictx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	caps := acp.ClientCapabilities{FS: acp.FSCapabilities{ReadTextFile: true, WriteTextFile: true}, Terminal: true}
	a.init, err = p.Initialize(ictx, caps, acp.Implementation{Name: "planbridge", Title: "planbridge", Version: "1"})
	if err != nil {
		p.Close(time.Second)
		return nil, fmt.Errorf("the acp agent %s did not initialize: %w", e.cfg.Command[0], err)
	}
	return a, nil
}

// agent returns the running agent for plan, starting one if there is none
// or the last one died.
func (e *ACP) agent(ctx context.Context, plan bool) (*acpProc, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if plan {
		// The unconfined agent of earlier turns may have left commands
		// running (Claude Code's background Bash): a Plan turn stops it
		// first, with all it started, unless a turn still runs on it.
		// e.mu is held across the stop (≤2 s) on purpose: agent is the
		// only way a turn gets an agent, so none can start on it between
		// the idle check and the stop (starting one holds e.mu too).
		if o := e.agents[false]; o != nil && o.idle() {
			delete(e.agents, false)
			o.proc.Close(2 * time.Second)
		}
	}
	if a := e.agents[plan]; a != nil {
		if a.proc.Conn.Err() == nil {
			return a, nil
		}
		// Dead, or alive with its connection gone: replace it.
		delete(e.agents, plan)
		go a.proc.Close(time.Second)
	}
	a, err := e.start(ctx, plan)
	if err != nil {
		return nil, err
	}
	e.agents[plan] = a
	return a, nil
}

// acpTurn is the state of one running turn on an agent.
type acpTurn struct {
	t    *Turn
	sess string

	mu       sync.Mutex // guards the fields below
	text     strings.Builder
	calls    map[string]ToolCall
	raw      map[string]acp.ToolCall // the agent's own view of each call
	exitPlan string                  // the plan of the agent's own plan-exit request
	allowed  map[string]bool         // absolute paths a permission allowed to write
	// warned are the paths of a permission the person allowed after the
	// protected-path warning: only those cover a protected write.
	warned   map[string]bool
	refusals []string // reasons of refusals not yet told the agent
	terms    map[string]*acpTerminal
	nterm    int // terminals created, for their ids
}

// RunTurn implements [TurnEngine]: it sends the turn's prompt to the
// agent's session for this planbridge session and serves the agent's
// requests through the turn's gate until the prompt ends.
func (e *ACP) RunTurn(ctx context.Context, t *Turn) (TurnResult, error) {
	var res TurnResult
	plan := t.Gate.Plan
	a, err := e.agent(ctx, plan)
	if err != nil {
		return res, err
	}
	sess, fresh, err := a.session(ctx, t)
	if err != nil {
		return res, e.crashed(a, err)
	}
	turn := &acpTurn{t: t, sess: sess.id, calls: map[string]ToolCall{}, raw: map[string]acp.ToolCall{}, allowed: map[string]bool{}}
	a.mu.Lock()
	a.turns[sess.id] = turn
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.turns, sess.id)
		a.mu.Unlock()
		turn.closeTerminals()
	}()
	if id := pickMode(sess.modes); id != "" && id != sess.modes.CurrentModeID {
		if err := a.proc.Call(ctx, "session/set_mode", acp.SetModeParams{SessionID: sess.id, ModeID: id}, nil); err != nil {
			return res, e.crashed(a, fmt.Errorf("setting the agent's mode %s: %w", id, err))
		}
		sess.modes.CurrentModeID = id
	}

	prompt := promptText(t.Messages, fresh)
	for {
		pr, ended, err := e.prompt(ctx, a, sess.id, prompt)
		res.Requests++
		res.Messages = turn.messages()
		if err != nil {
			if ctx.Err() != nil {
				// The agent's session is not reused after a cancel: Claude
				// Code answers the next prompt of a cancelled session with
				// the cancelled query's leftover end_turn, before any work
				// (claude-agent-acp issue 551). The next turn opens a fresh
				// session on the same process, with the conversation as
				// context; the old one is closed where the agent can.
				a.forget(t, sess.id, ended)
				// An agent may answer the cancel and leave the commands it
				// started running (Claude Code does, now and then): where no
				// other turn uses the process, it is stopped with all it
				// started, and the next turn starts a fresh one.
				e.retire(a, sess.id, ended)
				return res, fmt.Errorf("acp turn: %w", ctx.Err())
			}
			return res, e.crashed(a, err)
		}
		// An agent that ends its turn on a refusal (Codex: a rejected patch
		// aborts it) gets the refusals as the native engine's model gets a
		// tool result, and goes on, a bounded number of times.
		if refusals := turn.takeRefusals(); plan && len(refusals) > 0 && res.Requests <= maxACPFollowUps &&
			!strings.Contains(turn.finalTextNoPlan(), "<proposed_plan>") && turn.exitPlanEmpty() {
			prompt = "planbridge refused: " + strings.Join(refusals, " ") + "\nGo on without changing anything."
			continue
		}
		t.Sink.ResponseDone(turn.finalText())
		if pr.StopReason == acp.StopRefusal {
			return res, errors.New("the acp agent refused the prompt")
		}
		return res, nil
	}
}

// retire stops agent a after an interrupted turn (session sid) once it
// has answered the cancelled prompt (ended) or a few seconds passed,
// unless another turn runs on it: Close kills its group and every process
// carrying its marker, so nothing the interrupted turn started lives on.
func (e *ACP) retire(a *acpProc, sid string, ended <-chan struct{}) {
	a.mu.Lock()
	busy := false
	for id := range a.turns {
		if id != sid {
			busy = true
		}
	}
	a.mu.Unlock()
	if busy {
		return
	}
	e.mu.Lock()
	for k, v := range e.agents {
		if v == a {
			delete(e.agents, k)
		}
	}
	e.mu.Unlock()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
	case <-a.proc.Done():
	}
	a.proc.Close(2 * time.Second)
}

// maxACPFollowUps bounds the prompts of one turn (see [ACP.RunTurn]).
const maxACPFollowUps = 3

// prompt sends one session/prompt and waits for its end; a cancelled ctx
// sends session/cancel and waits a little for the agent to stop. ended is
// closed when the agent has answered the prompt (or its connection ended).
func (e *ACP) prompt(ctx context.Context, a *acpProc, sid, text string) (pr acp.PromptResult, ended <-chan struct{}, err error) {
	done := make(chan error, 1)
	end := make(chan struct{})
	var res acp.PromptResult
	go func() {
		err := a.proc.Call(context.WithoutCancel(ctx), "session/prompt",
			acp.PromptParams{SessionID: sid, Prompt: []acp.ContentBlock{{Type: "text", Text: text}}}, &res)
		close(end)
		done <- err
	}()
	select {
	case err := <-done:
		return res, end, err
	case <-ctx.Done():
		_ = a.proc.Notify("session/cancel", acp.CancelParams{SessionID: sid})
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		return acp.PromptResult{}, end, ctx.Err()
	}
}

// crashed turns a failure into the error the person sees, saying whether
// the agent died (it is restarted at the next prompt).
func (e *ACP) crashed(a *acpProc, err error) error {
	if a.proc.Conn.Err() != nil {
		// The connection ends a moment before the process is reaped.
		select {
		case <-a.proc.Done():
		case <-time.After(3 * time.Second):
		}
	}
	select {
	case <-a.proc.Done():
		e.mu.Lock()
		for k, v := range e.agents {
			if v == a {
				delete(e.agents, k)
			}
		}
		e.mu.Unlock()
		return fmt.Errorf("the acp agent %s exited (%v); it is restarted at the next prompt: %w", e.cfg.Command[0], a.proc.Err(), err)
	default:
		return err
	}
}

// forget drops the agent session id of t's planbridge session, and closes
// it (session/close, in the background) when the agent can close
// sessions, so what it runs for that session ends. The close waits for
// the cancelled prompt's answer (ended), for at most a few seconds:
// closing a session that is still stopping kills its process before it
// has stopped its own commands (Claude Code starts them in groups of
// their own, which then live on), so the agent's orphans are killed for a
// while after the close ([acp.Process.KillOrphans]).
func (a *acpProc) forget(t *Turn, id string, ended <-chan struct{}) {
	key := t.Env.Roots.Work + "\x00" + t.Env.Roots.Workspace
	a.mu.Lock()
	if s := a.sessions[key]; s != nil && s.id == id {
		delete(a.sessions, key)
	}
	a.mu.Unlock()
	var caps struct {
		SessionCapabilities struct {
			Close *struct{} `json:"close"`
		} `json:"sessionCapabilities"`
	}
	if json.Unmarshal(a.init.AgentCapabilities, &caps) != nil || caps.SessionCapabilities.Close == nil {
		return
	}
	go func() {
		select {
		case <-ended:
		case <-time.After(10 * time.Second): // it may never answer (the orphans are killed below)
		case <-a.proc.Done():
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.proc.Call(ctx, "session/close", map[string]string{"sessionId": id}, nil)
		// Claude Code may answer the cancel before it has stopped the
		// command, which it runs in a group of its own; the close then
		// ends the session's process and leaves the command an orphan.
		for i := 0; i < 120; i++ { // 30 s after the close
			select {
			case <-a.proc.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
			a.proc.KillOrphans()
		}
	}()
}

// session returns the agent's session for t's planbridge session, opening
// one in t's workspace if there is none; fresh says it was just opened.
func (a *acpProc) session(ctx context.Context, t *Turn) (*acpSession, bool, error) {
	key := t.Env.Roots.Work + "\x00" + t.Env.Roots.Workspace
	a.mu.Lock()
	s := a.sessions[key]
	a.mu.Unlock()
	if s != nil {
		return s, false, nil
	}
	cwd, err := filepath.Abs(t.Env.Roots.Workspace)
	if err != nil {
		return nil, false, err
	}
	var r acp.NewSessionResult
	if err := a.proc.Call(ctx, "session/new", acp.NewSessionParams{Cwd: cwd, MCPServers: []any{}}, &r); err != nil {
		return nil, false, fmt.Errorf("opening an acp session: %w", err)
	}
	if r.SessionID == "" {
		return nil, false, errors.New("the acp agent returned no session id")
	}
	if r.Modes == nil {
		r.Modes = &acp.ModeState{}
	}
	s = &acpSession{id: r.SessionID, modes: r.Modes}
	a.mu.Lock()
	a.sessions[key] = s
	a.mu.Unlock()
	return s, true, nil
}

// pickMode picks the agent mode a turn runs in ("" keeps the current
// one): always the agent's asking mode, whatever the Plan stamp and the
// card's permission mode, because planbridge's gate answers every
// permission request and so implements both. An agent mode that acts
// unasked would take decisions away from the gate: Claude Code's plan mode
// is advisory, Gemini CLI's refuses silently (planbridge could not count
// the attempt), Codex's auto writes the workspace and runs commands in its
// own sandbox unasked, acceptEdits/autoEdit would skip the person in ask
// mode. Codex's asking mode is read-only, the others' default.
func pickMode(ms *acp.ModeState) string {
	for _, w := range []string{"default", "read-only"} {
		for _, m := range ms.AvailableModes {
			if m.ID == w {
				return w
			}
		}
	}
	return ""
}

// promptText is what the agent is sent: the new user message, preceded by
// the conversation so far when the agent's session is new (after a
// restart of planbridge or of the agent) so no context is lost.
func promptText(msgs []Message, fresh bool) string {
	last := ""
	if n := len(msgs); n > 0 {
		last = msgs[n-1].Content
	}
	if !fresh {
		return last
	}
	var b strings.Builder
	for _, m := range msgs[:max(len(msgs)-1, 0)] {
		if (m.Role != RoleUser && m.Role != RoleAssistant) || strings.TrimSpace(m.Content) == "" {
			continue
		}
		fmt.Fprintf(&b, "[%s]\n%s\n\n", m.Role, m.Content)
	}
	if b.Len() == 0 {
		return last
	}
	return "The conversation so far (for context):\n\n" + b.String() + "[the person's new message]\n" + last
}

// takeRefusals returns and forgets the reasons of this turn's refusals.
func (u *acpTurn) takeRefusals() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	r := u.refusals
	u.refusals = nil
	return r
}

func (u *acpTurn) finalTextNoPlan() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.text.String()
}

func (u *acpTurn) exitPlanEmpty() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.exitPlan == ""
}

// blocked reports a refusal to the sink and keeps its reason for a
// follow-up prompt.
func (u *acpTurn) blocked(call ToolCall, code, reason string) {
	u.mu.Lock()
	u.refusals = append(u.refusals, reason)
	u.mu.Unlock()
	u.t.Sink.Blocked(call, code, reason)
}

func (u *acpTurn) messages() []Message {
	text := u.finalText()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	return []Message{{Role: RoleAssistant, Content: text}}
}

// finalText is the agent's text, with the plan of its own plan-exit
// request appended as a <proposed_plan> block when the text has none.
func (u *acpTurn) finalText() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	text := u.text.String()
	if u.exitPlan != "" && !strings.Contains(text, "<proposed_plan>") {
		block := "\n<proposed_plan>\n" + strings.TrimSpace(u.exitPlan) + "\n</proposed_plan>\n"
		u.text.WriteString(block)
		u.t.Sink.Text(block)
		text = u.text.String()
	}
	return text
}

// handle serves the agent's requests and notifications.
func (a *acpProc) handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var head struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(params, &head)
	a.mu.Lock()
	u := a.turns[head.SessionID]
	a.mu.Unlock()
	switch method {
	case "session/update":
		if u != nil {
			var n acp.SessionNotification
			if json.Unmarshal(params, &n) == nil {
				u.update(n.Update)
			}
		}
		return nil, nil
	case "session/request_permission":
		var p acp.RequestPermissionParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: err.Error()}
		}
		if u == nil {
			// No turn of planbridge's is running for it: nothing may be allowed.
			if id, ok := acp.Pick(p.Options, acp.RejectOnce); ok {
				return acp.Selected(id), nil
			}
			return acp.Cancelled(), nil
		}
		return u.permission(ctx, p), nil
	case "fs/read_text_file":
		if u == nil {
			return nil, &acp.Error{Code: acp.CodeInvalidRequest, Message: "no planbridge turn is running for this session"}
		}
		var p acp.ReadTextFileParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: err.Error()}
		}
		return u.readFile(p)
	case "fs/write_text_file":
		if u == nil {
			return nil, &acp.Error{Code: acp.CodeInvalidRequest, Message: "no planbridge turn is running for this session"}
		}
		var p acp.WriteTextFileParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: err.Error()}
		}
		return u.writeFile(ctx, p)
	case "terminal/create":
		if u == nil {
			return nil, &acp.Error{Code: acp.CodeInvalidRequest, Message: "no planbridge turn is running for this session"}
		}
		var p acp.CreateTerminalParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: err.Error()}
		}
		return u.createTerminal(ctx, p)
	case "terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release":
		if u == nil {
			return nil, &acp.Error{Code: acp.CodeInvalidRequest, Message: "no planbridge turn is running for this session"}
		}
		var p acp.TerminalParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: err.Error()}
		}
		return u.terminalRequest(ctx, method, p)
	}
	return nil, &acp.Error{Code: acp.CodeMethodNotFound, Message: "method not found: " + method}
}

func (u *acpTurn) update(up acp.SessionUpdate) {
	switch up.Kind {
	case "agent_message_chunk":
		if d := up.Text(); d != "" {
			u.mu.Lock()
			u.text.WriteString(d)
			u.mu.Unlock()
			u.t.Sink.Text(d)
		}
	case "tool_call":
		call := u.toolCall(up.ToolCall)
		u.mu.Lock()
		u.calls[call.ID] = call
		u.raw[call.ID] = up.ToolCall
		u.mu.Unlock()
		u.t.Sink.ToolCall(call)
		u.finish(call, up)
	case "tool_call_update":
		u.mu.Lock()
		call, ok := u.calls[up.ToolCallID]
		u.mu.Unlock()
		if ok {
			u.finish(call, up)
		}
	case "plan":
		var b strings.Builder
		for _, e := range up.Entries {
			fmt.Fprintf(&b, "[%s] %s\n", e.Status, e.Content)
		}
		args, _ := json.Marshal(map[string]any{"entries": up.Entries})
		call := ToolCall{ID: "acp-plan", Name: "agent_plan", Arguments: args}
		u.t.Sink.ToolCall(call)
		u.t.Sink.ToolResult(call, true, b.String())
	}
}

// finish reports a tool call's result once the agent says it ended.
func (u *acpTurn) finish(call ToolCall, up acp.SessionUpdate) {
	if up.Status != acp.StatusCompleted && up.Status != acp.StatusFailed {
		return
	}
	u.t.Sink.ToolResult(call, up.Status == acp.StatusCompleted, contentText(up.Content, up.RawOutput))
}

// contentText renders a tool call's content list (or raw output) as text.
func contentText(content, raw json.RawMessage) string {
	var items []struct {
		Type    string           `json:"type"`
		Content acp.ContentBlock `json:"content"`
		Path    string           `json:"path"`
	}
	var b strings.Builder
	if json.Unmarshal(content, &items) == nil {
		for _, it := range items {
			switch it.Type {
			case "content":
				b.WriteString(it.Content.Text)
			case "diff":
				fmt.Fprintf(&b, "diff of %s\n", it.Path)
			}
		}
	}
	if b.Len() == 0 && len(raw) > 0 {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return string(raw)
	}
	return b.String()
}

// toolCall is the planbridge view of an agent's tool call: its name says
// its kind, and a shell command's arguments are {"command": …} as for the
// bash tool.
func (u *acpTurn) toolCall(tc acp.ToolCall) ToolCall {
	name := tc.Kind
	if name == "" {
		name = acp.KindOther
	}
	args := tc.RawInput
	if tc.Kind == acp.KindExecute {
		name = "bash"
		b, _ := json.Marshal(map[string]string{"command": shellCommand(tc)})
		args = b
	}
	if len(args) == 0 || !json.Valid(args) {
		b, _ := json.Marshal(map[string]string{"title": tc.Title})
		args = b
	}
	return ToolCall{ID: tc.ToolCallID, Name: name, Arguments: args}
}

// shellCommand is the command line of an execute tool call: rawInput's
// "command" (a string, or an argv whose last element is the script of
// `bash -lc …`), else the title.
func shellCommand(tc acp.ToolCall) string {
	var in struct {
		Command json.RawMessage `json:"command"`
	}
	if json.Unmarshal(tc.RawInput, &in) == nil && len(in.Command) > 0 {
		var s string
		if json.Unmarshal(in.Command, &s) == nil {
			return s
		}
		var argv []string
		if json.Unmarshal(in.Command, &argv) == nil && len(argv) > 0 {
			if len(argv) == 3 && (argv[0] == "bash" || argv[0] == "sh" || strings.HasSuffix(argv[0], "/bash") || strings.HasSuffix(argv[0], "/sh")) &&
				(argv[1] == "-c" || argv[1] == "-lc") {
				return argv[2]
			}
			return shellQuoteArgv(argv)
		}
	}
	return tc.Title
}

func shellQuoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// toolMeta is what an ACP tool call declares, as [Meta]. Only kinds
// that cannot change anything are read-only; an edit, delete or move
// writes the files it names (its locations and the path fields of its raw
// input), so the gate applies the write policy to them (work:// notes only
// in Plan, protected paths always asked); an unknown kind may do anything
// (fail closed).
func (u *acpTurn) toolMeta(tc acp.ToolCall) Meta {
	switch tc.Kind {
	case acp.KindRead, acp.KindSearch, acp.KindThink:
		return Meta{ReadOnly: true}
	case acp.KindEdit, acp.KindDelete, acp.KindMove:
		targets := u.writeTargets(tc)
		return Meta{Edits: tc.Kind == acp.KindEdit, Writes: func(json.RawMessage) ([]string, error) { return targets, nil }}
	}
	return Meta{}
}

// writeTargets lists the files an agent's tool call writes, as tool paths
// (an absolute path in the session's work directory becomes work://…).
func (u *acpTurn) writeTargets(tc acp.ToolCall) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(u.t.Env.Roots.Workspace, p)
		}
		p = filepath.Clean(p)
		if w := u.t.Env.Roots.Work; w != "" {
			if rel, err := filepath.Rel(w, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				p = WorkScheme + filepath.ToSlash(rel)
			}
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, l := range tc.Locations {
		add(l.Path)
	}
	var in map[string]json.RawMessage
	if json.Unmarshal(tc.RawInput, &in) == nil {
		for _, k := range []string{"file_path", "path", "notebook_path", "absolute_path", "destination", "new_path", "move_path"} {
			var v string
			if json.Unmarshal(in[k], &v) == nil {
				add(v)
			}
		}
		var changes map[string]json.RawMessage // Codex: {path: change}
		if json.Unmarshal(in["changes"], &changes) == nil {
			for k := range changes {
				add(k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// permission answers one permission request through the turn's gate.
func (u *acpTurn) permission(ctx context.Context, p acp.RequestPermissionParams) acp.RequestPermissionResult {
	reject := func() acp.RequestPermissionResult {
		if id, ok := acp.Pick(p.Options, acp.RejectOnce); ok {
			return acp.Selected(id)
		}
		return acp.Cancelled()
	}
	allow := func(warned bool) acp.RequestPermissionResult {
		if id, ok := acp.Pick(p.Options, acp.AllowOnce); ok {
			u.mu.Lock()
			if warned && u.warned == nil {
				u.warned = map[string]bool{}
			}
			for _, l := range p.ToolCall.Locations {
				u.allowed[filepath.Clean(l.Path)] = true
				if warned {
					u.warned[filepath.Clean(l.Path)] = true
				}
			}
			u.mu.Unlock()
			return acp.Selected(id)
		}
		return reject()
	}
	if ctx.Err() != nil {
		return acp.Cancelled()
	}
	u.mu.Lock()
	known, seen := u.calls[p.ToolCall.ToolCallID]
	u.mu.Unlock()
	tc := p.ToolCall
	if seen && tc.Kind == "" {
		// A permission request may carry only the id of an announced call.
		u.mu.Lock()
		raw := u.raw[tc.ToolCallID]
		u.mu.Unlock()
		raw.Locations = append(raw.Locations, tc.Locations...)
		return u.decide(ctx, known, u.toolMeta(raw), allow, reject)
	}
	call := u.toolCall(tc)
	if !seen {
		u.mu.Lock()
		u.calls[call.ID] = call
		u.mu.Unlock()
		u.t.Sink.ToolCall(call)
	}
	if tc.Kind == acp.KindSwitchMode {
		// The agent's own plan exit. In Plan its plan becomes planbridge's
		// proposal and the person decides on the card: the agent stays in
		// its plan mode.
		if u.t.Gate.Plan {
			var in struct {
				Plan string `json:"plan"`
			}
			_ = json.Unmarshal(tc.RawInput, &in)
			if strings.TrimSpace(in.Plan) != "" {
				u.mu.Lock()
				u.exitPlan = in.Plan
				u.mu.Unlock()
			}
			u.t.Sink.ToolResult(call, false, "the plan goes to planbridge's approval card; the person accepts it there.")
			return reject()
		}
		return allow(false)
	}
	return u.decide(ctx, call, u.toolMeta(tc), allow, reject)
}

func (u *acpTurn) decide(ctx context.Context, call ToolCall, meta Meta, allow func(warned bool) acp.RequestPermissionResult, reject func() acp.RequestPermissionResult) acp.RequestPermissionResult {
	tool := &Tool{Spec: ToolSpec{Name: call.Name}, Meta: meta}
	d := u.t.Gate.Decide(tool, call)
	switch d.Verdict {
	case Run:
		return allow(false)
	case Refuse:
		u.blocked(call, d.Code, d.Reason)
		return reject()
	}
	if u.t.Ask != nil {
		if ok, err := u.t.Ask(ctx, call, d.Reason); err == nil && ok {
			return allow(d.Protected)
		}
	}
	u.t.Sink.ToolResult(call, false, fmt.Sprintf("the person did not allow %s.", call.Name))
	return reject()
}

// resolve maps an agent's absolute path onto planbridge's roots: the
// workspace, or the session's work:// tree.
func (u *acpTurn) resolve(p string) (string, string, error) {
	roots := u.t.Env.Roots
	if roots.Work != "" {
		if rel, err := filepath.Rel(roots.Work, filepath.Clean(p)); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			tp := WorkScheme + filepath.ToSlash(rel)
			abs, err := roots.Resolve(tp)
			return abs, tp, err
		}
	}
	abs, err := roots.Resolve(p)
	if err != nil {
		return "", "", err
	}
	rel, _ := filepath.Rel(roots.Workspace, abs)
	return abs, rel, nil
}

// maxACPRead bounds one fs/read_text_file answer.
const maxACPRead = 32 << 20

// readFile serves fs/read_text_file under the one read policy
// ([Roots.OpenRead]: workspace, work://, read roots, never /proc). A
// missing file reads as empty, not as an error: Gemini CLI reads a file
// before writing it and takes any error (its SDK hands it the bare error
// object, so no code or wording is recognised) as "cannot check the
// existing file", which makes creating a new file impossible.
func (u *acpTurn) readFile(p acp.ReadTextFileParams) (any, error) {
	f, err := u.t.Env.Roots.OpenRead(p.Path)
	if errors.Is(err, os.ErrNotExist) {
		return acp.ReadTextFileResult{Content: ""}, nil
	}
	if err != nil {
		u.t.Sink.ToolResult(ToolCall{ID: "fs-read", Name: "read_file", Arguments: mustJSON(map[string]string{"path": p.Path})}, false, err.Error())
		return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: "planbridge refused the read: " + err.Error()}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxACPRead+1))
	if err != nil {
		return nil, &acp.Error{Code: acp.CodeInternalError, Message: err.Error()}
	}
	if len(b) > maxACPRead {
		return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: fmt.Sprintf("%s is larger than %d bytes; read it in parts (line, limit)", p.Path, maxACPRead)}
	}
	text := string(b)
	if p.Line != nil || p.Limit != nil {
		lines := strings.SplitAfter(text, "\n")
		start := 0
		if p.Line != nil && *p.Line > 1 {
			start = min(*p.Line-1, len(lines))
		}
		end := len(lines)
		if p.Limit != nil && *p.Limit >= 0 {
			end = min(start+*p.Limit, end)
		}
		text = strings.Join(lines[start:end], "")
	}
	return acp.ReadTextFileResult{Content: text}, nil
}

// settle carries out the gate's decision d on a call the agent asked the
// client to make (noun names it in the answers): a refusal is counted and
// refused, an ask goes to the person and a no is refused with denied; nil
// means the call may run.
func (u *acpTurn) settle(ctx context.Context, call ToolCall, d Decision, noun, denied string) *acp.Error {
	switch d.Verdict {
	case Refuse:
		u.blocked(call, d.Code, d.Reason)
		return &acp.Error{Code: acp.CodeInvalidRequest, Message: "planbridge refused the " + noun + ": " + d.Reason}
	case Ask:
		ok := false
		if u.t.Ask != nil {
			allowed, err := u.t.Ask(ctx, call, d.Reason)
			ok = allowed && err == nil
		}
		if !ok {
			u.t.Sink.ToolResult(call, false, "the person did not allow the "+noun+".")
			return &acp.Error{Code: acp.CodeInvalidRequest, Message: denied}
		}
	}
	return nil
}

// writeFile serves fs/write_text_file as a write_file call through the
// gate: refused in Plan (except work:// notes), asked or run
// by the permission mode outside it, unless a permission the person or
// the gate already gave for this path in this turn covers it.
func (u *acpTurn) writeFile(ctx context.Context, p acp.WriteTextFileParams) (any, error) {
	_, tp, err := u.resolve(p.Path)
	if err != nil {
		return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: "planbridge refused the write: " + err.Error()}
	}
	call := ToolCall{ID: "fs-write:" + tp, Name: "write_file", Arguments: mustJSON(map[string]string{"path": tp, "content": p.Content})}
	tool := u.t.Tools.Get("write_file")
	if tool == nil {
		tool = writeFileTool
	}
	d := u.t.Gate.Decide(tool, call)
	u.mu.Lock()
	// A permission covers this write only as far as it was given: a
	// protected path needs a yes to its warning, not to some other
	// question (or to none, in full-auto) that merely listed the path.
	if d.Verdict == Ask && (d.Protected && u.warned[filepath.Clean(p.Path)] || !d.Protected && u.allowed[filepath.Clean(p.Path)]) {
		d.Verdict = Run
	}
	u.mu.Unlock()
	if e := u.settle(ctx, call, d, "write", "the person did not allow writing "+p.Path); e != nil {
		return nil, e
	}
	u.t.Sink.ToolCall(call)
	env := u.t.Env
	env.AllowProtected = d.Protected // asked: the person confirmed this write
	out, err := tool.Run(ctx, &env, call.Arguments)
	if err != nil {
		u.t.Sink.ToolResult(call, false, err.Error())
		return nil, &acp.Error{Code: acp.CodeInternalError, Message: err.Error()}
	}
	u.t.Sink.ToolResult(call, true, out)
	return nil, nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
