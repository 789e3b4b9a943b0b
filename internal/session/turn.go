package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
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
		k.s.emitText(v)
	}
}

func (k *turnSink) ResponseDone(text string) {
	if v := k.view.Done(text); v != "" {
		k.s.emitText(v)
	}
	k.s.onResponse(k.plan, k.view, text)
	k.view = k.s.newView(k.plan)
}

func (k *turnSink) ToolCall(call agent.ToolCall) {
	k.s.emit(event.NewToolCall(call.ID, call.Name, call.Arguments))
}

func (k *turnSink) ToolResult(call agent.ToolCall, ok bool, output string) {
	if ok {
		k.s.recordEdit(call)
	}
	k.s.logToolEvent(call, ok, output)
	k.s.emit(event.NewToolResult(call.ID, call.Name, ok, output))
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
	k.s.emit(event.Blocked{ID: call.ID, Name: call.Name, Code: code, Reason: reason})
	if code == agent.CodeOutsideScope {
		k.s.pauseForScope(reason)
	}
}

// runTurn runs one prompt as a model turn and persists what it produced.
// It returns the turn's error (nil when it settled successfully).
func (s *Session) runTurn(ctx context.Context, req turnReq) error {
	promptStored := false
	if req.queueID != 0 {
		// The queue entry leaves in the prompt's commit, or with the turn
		// if it never gets that far.
		defer func() {
			if !promptStored {
				s.dropQueued(req.queueID)
			}
		}()
		dispatch, id := req.dispatch, req.queueID
		req.dispatch = func(st *store.TurnStep) {
			if dispatch != nil {
				dispatch(st)
			}
			st.Dequeue = id
		}
	}
	if why := s.admitGoalTurn(&req); why != "" {
		s.emit(event.Notice{Message: "Dropped a stale Goal turn without sending it: " + why + "."})
		return nil
	}
	if req.kickoff {
		handoff.Failpoint("goal.kickoff")
	}
	started := time.Now()
	text := req.text
	if s.needsCompaction(text) {
		if err := s.compactNow(ctx, "the context neared the model's window"); err != nil {
			s.emit(event.Error{Message: "automatic compaction failed: " + err.Error()})
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
	history := agent.CompleteToolCalls(s.msgs)
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
	// The view shows the prompt once it is durable (or once it is clear it
	// will not be sent), so a crash or a failed commit never shows a kickoff
	// that the conversation does not hold.
	announce := func() {
		s.emit(event.User{Text: display, Display: display})
		s.emit(event.TurnStart{Turn: turnNo, Plan: plan})
	}
	if eng == nil {
		announce()
		err := errors.New("no model engine is configured")
		return s.finishTurn(ctx, turnNo, err, false, nil)
	}
	if err := s.m.checkModel(model); err != nil {
		announce()
		return s.finishTurn(ctx, turnNo, err, false, nil)
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
			Unattended: req.guest || req.continuation, Scope: s.heldScope(plan)},
		Env:   agent.Env{Roots: roots, Shell: s.m.shell, Protected: protected},
		Ask:   s.askFunc(),
		Watch: s.watcher(plan, req.guest || req.continuation),
		Sink:  sink,
		// Each assistant message and tool result is durable before the
		// next model request: after a crash the conversation the model
		// continues from is what happened, effects included.
		Record: func(ctx context.Context, m agent.Message) error {
			return s.appendTranscript(ctx, store.OpTurn, []agent.Message{m}, nil)
		},
	}
	// The prompt is durable before it is sent: a crash mid-turn never loses
	// it from the conversation. A kickoff moves its retry record to
	// dispatched in the same transaction, so it is never sent again.
	op := store.OpPrompt
	if req.dispatched != nil {
		op = store.OpDispatch
	}
	perr := s.appendTranscript(ctx, op, []agent.Message{user}, req.dispatch)
	promptStored = perr == nil
	announce()
	if perr != nil {
		return s.finishTurn(ctx, turnNo, perr, false, nil)
	}
	if req.dispatched != nil {
		req.dispatched()
		if req.kickoff {
			handoff.Failpoint("goal.dispatched")
		} else {
			handoff.Failpoint("handoff.dispatched")
		}
	}
	base := *t // before it runs: a retry starts from the same settings
	res, err := t.Run(ctx)
	// A Goal's kickoff and continuations are retried by the Goal (the
	// continuation regenerates them); any other turn, a person's or a
	// guest's follow-up bound to the Goal included, goes on from what it
	// produced, so its prompt is never stored or sent twice.
	if !req.kickoff && !req.continuation && !req.retried && errors.Is(err, agent.ErrTransient) && ctx.Err() == nil {
		res, err = s.retryTurn(ctx, base, res, err)
		req.retried = true // the Goal does not retry it again
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
	return s.finishTurn(ctx, turnNo, err, delivered, req.settle)
}

// retryTurn retries an ordinary turn once after a transient model failure
// (a 429/5xx or a broken stream), as Goal turns are: what the failed attempt
// produced is kept (already stored, step by step) and the turn goes on from
// it, so the prompt is never sent twice. It returns the two attempts'
// combined result.
func (s *Session) retryTurn(ctx context.Context, base agent.Turn, first agent.TurnResult, cause error) (agent.TurnResult, error) {
	s.emit(event.Notice{Message: "The model request failed (" + cause.Error() + "); retrying once."})
	base.Messages = append(append([]agent.Message(nil), base.Messages...), first.Messages...)
	res, err := base.Run(ctx)
	res.Messages = append(first.Messages, res.Messages...)
	res.Usage.InputTokens += first.Usage.InputTokens
	res.Usage.OutputTokens += first.Usage.OutputTokens
	res.Requests += first.Requests
	return res, err
}

// finishTurn settles a turn whose messages are already durable: the
// session row and, for a successful turn, its settlement commit together.
// A failing commit fails the turn (ok false, an error event); the returned
// error is the turn's.
func (s *Session) finishTurn(ctx context.Context, turnNo int64, err error, templateDelivered bool, settle func(*store.TurnStep)) error {
	if err != nil {
		settle = nil // only a successful turn settles
	}
	if templateDelivered {
		s.mu.Lock()
		s.row.TemplateEpisode = s.row.PlanEpisode
		s.mu.Unlock()
	}
	// Persist even after cancellation: the transcript must not lose what happened.
	if perr := s.appendTranscript(context.WithoutCancel(ctx), store.OpTurn, nil, settle); perr != nil {
		s.m.log.Error("persist turn", "session", s.id, "err", perr)
		if err == nil {
			err = fmt.Errorf("could not save the turn: %w", perr)
		}
	}
	end := event.TurnEnd{Turn: turnNo, OK: err == nil}
	if err != nil {
		end.Error = err.Error()
		if errors.Is(err, context.Canceled) {
			end.Error = "interrupted"
		} else {
			s.emit(event.Error{Message: end.Error})
		}
	}
	s.reportIfEnded(context.WithoutCancel(ctx))
	s.emit(end)
	return err
}

func (s *Session) askFunc() agent.Asker {
	s.m.mu.Lock()
	ask := s.m.asker
	s.m.mu.Unlock()
	if ask == nil {
		return nil
	}
	return func(ctx context.Context, call agent.ToolCall, reason string) (bool, error) {
		ok, err := ask(ctx, s.id, call, reason)
		if ok && err == nil {
			s.extendScope(call) // allowing a write outside the scope extends it
		}
		return ok, err
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

// dropQueued removes a queue entry that is done with (a no-op once the
// prompt's commit removed it).
func (s *Session) dropQueued(id int64) {
	if err := s.m.st.DropQueuedInput(context.Background(), s.id, id); err != nil {
		s.m.log.Error("drop queued input", "session", s.id, "err", err)
	}
}
