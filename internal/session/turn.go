package session

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"planbridge/handoff"
	"planbridge/internal/agent"
)

const systemPrompt = `You are a careful coding agent working in the repository at %s.
Use the tools to inspect files before changing them. Paths are relative to the workspace;
work:// paths address your own session notes and plan files.`

// turnSink turns agent callbacks into session events.
type turnSink struct {
	s    *Session
	plan bool // the turn's immutable Plan stamp
	view viewFilter
}

// viewFilter decides what of a streamed response the person sees.
type viewFilter interface {
	Write(delta string) string
	Done(text string) string // returns any held-back visible text
}

type passThrough struct{}

func (passThrough) Write(d string) string { return d }
func (passThrough) Done(string) string    { return "" }

func (k *turnSink) Text(delta string) {
	if v := k.view.Write(delta); v != "" {
		k.s.emit("text", map[string]any{"delta": v})
	}
}

func (k *turnSink) ResponseDone(text string) {
	if v := k.view.Done(text); v != "" {
		k.s.emit("text", map[string]any{"delta": v})
	}
	k.s.onResponse(k.plan, k.view, text)
	k.view = k.s.newView(k.plan)
}

func (k *turnSink) ToolCall(call agent.ToolCall) {
	k.s.emit("tool_call", map[string]any{"id": call.ID, "name": call.Name, "arguments": rawOrEmpty(call.Arguments)})
}

func (k *turnSink) ToolResult(call agent.ToolCall, ok bool, output string) {
	if ok {
		k.s.recordEdit(call)
	}
	k.s.emit("tool_result", map[string]any{"id": call.ID, "name": call.Name, "ok": ok, "output": clipView(output)})
}

func (k *turnSink) Blocked(call agent.ToolCall, code, reason string) {
	// blocked_total counts Plan refusals only (the turn's Plan stamp, which
	// its children share); anything else refused is counted apart.
	k.s.mu.Lock()
	if k.plan && code == agent.CodePlanBlocked {
		k.s.row.BlockedTotal++
	} else {
		k.s.row.RefusedTotal++
	}
	k.s.mu.Unlock()
	if err := k.s.saveRow(context.Background()); err != nil {
		k.s.m.log.Error("persist blocked count", "session", k.s.id, "err", err)
	}
	k.s.emit("blocked", map[string]any{"id": call.ID, "name": call.Name, "code": code, "reason": reason})
}

func rawOrEmpty(r json.RawMessage) json.RawMessage {
	if len(r) == 0 || !json.Valid(r) {
		return json.RawMessage(`{}`)
	}
	return r
}

// maxViewOutput bounds tool output copied into events (the model gets all).
const maxViewOutput = 16 << 10

func clipView(s string) string {
	if len(s) <= maxViewOutput {
		return s
	}
	cut := maxViewOutput
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[… %d more bytes shown to the model only]", len(s)-cut)
}

// runTurn runs one prompt as a model turn and persists what it produced.
// It returns the turn's error (nil when it settled successfully).
func (s *Session) runTurn(ctx context.Context, req turnReq) error {
	if why := s.admitGoalTurn(&req); why != "" {
		s.emit("notice", map[string]any{"message": "Dropped a stale Goal turn without sending it: " + why + "."})
		return nil
	}
	if req.kickoff {
		handoff.Failpoint("goal.kickoff")
	}
	started := time.Now()
	text := req.text
	if s.needsCompaction(text) {
		if err := s.compactNow(ctx, "the context neared the model's window"); err != nil {
			s.emit("error", map[string]any{"message": "automatic compaction failed: " + err.Error()})
		}
	}
	eng := s.engine()
	s.mu.Lock()
	s.turnNo++
	turnNo := s.turnNo
	plan := s.row.Plan // the turn's immutable Plan stamp
	fullReminder := plan && s.row.TemplateEpisode != s.row.PlanEpisode
	if s.row.Title == "" {
		s.row.Title = titleFrom(text)
	}
	history := append([]agent.Message(nil), s.msgs...)
	mode := agent.Mode(s.row.Mode)
	workspace := s.row.Workspace
	s.mu.Unlock()
	model, effort := s.m.sessionModel()
	if plan {
		w := s.m.workload(WorkloadPlanning)
		model, effort = w.Model, w.Effort
	}
	if req.policy != nil {
		// Implementation-scoped policy: this request only.
		mode, model, effort = agent.Mode(req.policy.Mode), req.policy.Model, req.policy.Effort
	}

	content := text
	if plan {
		content = text + "\n\n" + reminder(fullReminder)
	}
	user := agent.Message{Role: agent.RoleUser, Content: content}
	display := req.display
	if display == "" {
		display = text
	}
	s.emit("user", map[string]any{"text": display, "display": display})
	s.emit("turn_start", map[string]any{"turn": turnNo, "plan": plan})
	if eng == nil {
		err := errors.New("no model engine is configured")
		s.finishTurn(ctx, turnNo, nil, err, false, nil)
		return err
	}
	if err := s.m.checkModel(model); err != nil {
		s.finishTurn(ctx, turnNo, nil, err, false, nil)
		return err
	}
	sink := &turnSink{s: s, plan: plan, view: s.newView(plan)}
	roots := agent.Roots{Workspace: workspace, Work: s.workDir, ReadRoots: s.m.read, Hidden: s.m.hide}
	// Skills folders are project configuration wherever they live.
	protected := handoff.SkillDirs(workspace, userConfigDir())
	t := &agent.Turn{
		Engine:   eng,
		Model:    model,
		Effort:   effort,
		Messages: append(append([]agent.Message{{Role: agent.RoleSystem, Content: fmt.Sprintf(systemPrompt, workspace)}}, history...), user),
		Tools:    s.registry(),
		Gate: agent.Gate{Plan: plan, Mode: mode, Shell: s.m.shell, Roots: roots, Protected: protected,
			Unattended: req.guest || req.continuation},
		Env:  agent.Env{Roots: roots, Shell: s.m.shell, Protected: protected},
		Ask:  s.askFunc(),
		Sink: sink,
	}
	// The prompt is durable before it is sent: a crash mid-turn never loses
	// it from the conversation.
	if perr := s.appendTranscript(ctx, []agent.Message{user}, nil); perr != nil {
		s.finishTurn(ctx, turnNo, nil, perr, false, nil)
		return perr
	}
	base := *t // before it runs: a retry starts from the same settings
	res, err := t.Run(ctx)
	if req.goalID == "" && !req.retried && errors.Is(err, agent.ErrTransient) && ctx.Err() == nil {
		res, err = s.retryTurn(ctx, base, res, err)
	}
	if req.goalID != "" {
		if s.settleGoalTurn(ctx, req, res.Usage, time.Since(started), err) {
			retry := req
			retry.retried = true
			s.mu.Lock()
			s.queue = append([]turnReq{retry}, s.queue...)
			s.mu.Unlock()
		}
	}
	// The full template counts as delivered only once a model response
	// actually arrived: a cancelled dispatch leaves it armed.
	delivered := fullReminder && len(res.Messages) > 0
	s.finishTurn(ctx, turnNo, res.Messages, err, delivered, req.settle)
	return err
}

// retryTurn retries an ordinary turn once after a transient model failure
// (a 429/5xx or a broken stream), as Goal turns are: what the failed attempt
// produced is kept and the turn goes on from it, so the prompt is never
// sent twice. It returns the two attempts' combined result.
func (s *Session) retryTurn(ctx context.Context, base agent.Turn, first agent.TurnResult, cause error) (agent.TurnResult, error) {
	s.emit("notice", map[string]any{"message": "The model request failed (" + cause.Error() + "); retrying once."})
	base.Messages = append(append([]agent.Message(nil), base.Messages...), first.Messages...)
	res, err := base.Run(ctx)
	res.Messages = append(first.Messages, res.Messages...)
	res.Usage.InputTokens += first.Usage.InputTokens
	res.Usage.OutputTokens += first.Usage.OutputTokens
	res.Requests += first.Requests
	return res, err
}

func (s *Session) finishTurn(ctx context.Context, turnNo int64, msgs []agent.Message, err error, templateDelivered bool, settle func(context.Context, *sql.Tx) error) {
	if err != nil {
		settle = nil // only a successful turn settles
	}
	if templateDelivered {
		s.mu.Lock()
		s.row.TemplateEpisode = s.row.PlanEpisode
		s.mu.Unlock()
	}
	// Persist even after cancellation: the transcript must not lose what happened.
	if perr := s.appendTranscript(context.WithoutCancel(ctx), msgs, settle); perr != nil {
		s.m.log.Error("persist transcript", "session", s.id, "err", perr)
		s.emit("error", map[string]any{"message": "could not save the transcript: " + perr.Error()})
	}
	data := map[string]any{"turn": turnNo, "ok": err == nil}
	if err != nil {
		msg := err.Error()
		if errors.Is(err, context.Canceled) {
			msg = "interrupted"
		}
		data["error"] = msg
		if !errors.Is(err, context.Canceled) {
			s.emit("error", map[string]any{"message": msg})
		}
	}
	s.emit("turn_end", data)
}

func (s *Session) askFunc() agent.Asker {
	s.m.mu.Lock()
	ask := s.m.asker
	s.m.mu.Unlock()
	if ask == nil {
		return nil
	}
	return func(ctx context.Context, call agent.ToolCall, reason string) (bool, error) {
		return ask(ctx, s.id, call, reason)
	}
}

func titleFrom(text string) string {
	t := strings.TrimSpace(text)
	if i := strings.IndexByte(t, '\n'); i >= 0 {
		t = t[:i]
	}
	if utf8.RuneCountInString(t) > 60 {
		r := []rune(t)
		t = string(r[:59]) + "…"
	}
	return t
}
