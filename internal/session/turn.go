package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/command"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/internal/turn"
	"planbridge/proposal"
)

// turnSink turns agent callbacks into session events.
type turnSink struct {
	s    *Session
	plan bool           // the turn's immutable Plan stamp
	view *proposal.View // what the person sees of the response streaming now
}

// viewFor is the view of one response of a turn stamped plan: only a Plan
// response can propose, so only its blocks are hidden (a nil view hides
// nothing).
func viewFor(plan bool) *proposal.View {
	if !plan {
		return nil
	}
	return proposal.NewView()
}

func (k *turnSink) Text(delta string) {
	if v := k.view.Write(delta); v != "" {
		k.s.events.Text(v)
	}
}

func (k *turnSink) ResponseDone(text string) {
	if v := k.view.Done(text); v != "" {
		k.s.events.Text(v)
	}
	k.s.card.OnResponse(k.view.Result())
	k.view = viewFor(k.plan)
}

func (k *turnSink) ToolCall(call agent.ToolCall) {
	k.s.emit(event.NewToolCall(call.ID, call.Name, call.Arguments))
}

func (k *turnSink) ToolResult(call agent.ToolCall, ok bool, output string) {
	if ok {
		k.s.track.RecordEdit(call)
	}
	k.s.track.Binding().LogTool(call, ok, output)
	k.s.emit(event.NewToolResult(call.ID, call.Name, ok, output))
}

// Blocked counts a refusal in the session row and reports it. The count
// changes in memory only with its commit; a commit that fails is told as
// an error event.
func (k *turnSink) Blocked(call agent.ToolCall, code, reason string) {
	// blocked_total counts Plan refusals only (the turn's Plan stamp, which
	// its children share); anything else refused is counted apart.
	plan := k.plan && code == agent.CodePlanBlocked
	if err := k.s.commitRow(context.Background(), func(row *store.Session) {
		if plan {
			row.BlockedTotal++
		} else {
			row.RefusedTotal++
		}
	}); err != nil {
		k.s.m.log.Error("persist blocked count", "session", k.s.id, "err", err)
		k.s.emit(event.Error{Message: "The refused call could not be counted (the count is not saved): " + err.Error()})
	}
	k.s.emit(event.Blocked{ID: call.ID, Name: call.Name, Code: code, Reason: reason})
	if code == agent.CodeOutsideScope {
		k.s.track.PauseForScope(reason)
	}
}

// runTurn runs one prompt as a model turn and persists what it produced.
// It returns the turn's error (nil when it settled successfully).
func (s *Session) runTurn(ctx context.Context, req turn.Req) error {
	promptStored, promptFailed := false, false
	if req.QueueID != 0 {
		// The queue entry leaves in the prompt's commit, or with the turn
		// if it never gets that far; a prompt whose commit failed stays
		// queued, in the store as in memory ([errPromptKept]).
		defer func() {
			if !promptStored && !promptFailed {
				s.dropQueued(req.QueueID)
			}
		}()
		dispatch, id := req.Dispatch, req.QueueID
		req.Dispatch = func(st *store.TurnStep) {
			if dispatch != nil {
				dispatch(st)
			}
			st.Dequeue = id
		}
	}
	if why := s.goal.Admit(&req.Goal, &req.Policy, &req.Text); why != "" {
		s.emit(event.Notice{Message: "Dropped a stale Goal turn without sending it: " + why + "."})
		return nil
	}
	started := time.Now()
	text := req.Text
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
	var titled func(*store.Session)
	if s.row.Title == "" {
		// The session is named in the turn's first commit that succeeds.
		title := command.Title(text)
		titled = func(row *store.Session) {
			if row.Title == "" {
				row.Title = title
			}
		}
	}
	history := agent.CompleteToolCalls(s.tr.Messages())
	mode := s.row.Mode
	workspace := s.row.Workspace
	s.mu.Unlock()
	cfg := s.m.modelConfig()
	pol := cfg.Turn(plan, mode, req.Policy)
	display := cmp.Or(req.Display, text)
	err := cfg.Check(pol.Model)
	if eng == nil {
		err = errors.New("no model engine is configured")
	}
	if err != nil { // nothing is sent, but the person sees what failed
		s.announceTurn(display, turnNo, plan)
		s.goal.Unsent(ctx, req.Goal, err)
		return s.finishTurn(ctx, turnNo, err, false, nil, titled)
	}
	sink := &turnSink{s: s, plan: plan, view: viewFor(plan)}
	roots := agent.Roots{Workspace: workspace, Work: s.workDir, ReadRoots: s.m.read, Hidden: s.m.hide}
	// Skills folders are project configuration wherever they live.
	protected := handoff.SkillDirs(workspace, userConfigDir())
	t := &agent.Turn{
		Engine:   eng,
		Model:    pol.Model,
		Effort:   pol.Effort,
		Messages: agent.RootConversation(workspace, history, text, plan, fullReminder),
		Tools:    s.registry(),
		Gate: agent.Gate{Plan: plan, Mode: agent.Mode(pol.Mode), Shell: s.m.shell, Roots: roots, Protected: protected,
			Unattended: req.Guest || req.Goal.Continuation, Scope: s.track.Binding().Scope(plan)},
		Env:   agent.Env{Roots: roots, Shell: s.m.shell, Protected: protected},
		Ask:   s.askFunc(),
		Watch: s.track.Binding().Watcher(plan, req.Guest || req.Goal.Continuation),
		Sink:  sink,
	}
	// The prompt is durable before it is sent, each assistant message and
	// tool result before the next model request ([agent.Turn.Send]); a
	// kickoff moves its record to dispatched with its prompt. A Goal's
	// kickoff and continuations are retried by the Goal (the continuation
	// regenerates them); any other turn, a person's or a guest's follow-up
	// bound to the Goal included, is retried once by Send.
	l := &turnLedger{s: s, req: &req, display: display, turn: turnNo, plan: plan, row: titled, stored: &promptStored, failed: &promptFailed}
	opts := agent.SendOptions{RetryTransient: !req.Goal.Kickoff && !req.Goal.Continuation && !req.Goal.Retried}
	if req.Goal.Kickoff {
		opts.BeforePrompt = "goal.kickoff"
	}
	if req.Dispatched != nil {
		opts.Dispatched = map[bool]string{true: "goal.dispatched", false: "handoff.dispatched"}[req.Goal.Kickoff]
	}
	res, retried, err := t.Send(ctx, l, opts)
	if !promptStored {
		s.goal.Unsent(ctx, req.Goal, err)
		err = s.finishTurn(ctx, turnNo, err, false, nil, l.row)
		if promptFailed && req.QueueID != 0 && err != nil {
			return &errPromptKept{err}
		}
		return err
	}
	if retried {
		req.Goal.Retried = true // the Goal does not retry it again
	}
	if req.Goal.Bound() {
		if s.goal.Book(ctx, req.Goal, res.Usage, time.Since(started), err) {
			retry := req
			retry.Goal.Retried = true
			s.mu.Lock()
			s.queue = append([]turn.Req{retry}, s.queue...)
			s.mu.Unlock()
		}
	}
	// The full template counts as delivered only once a model response
	// actually arrived: a cancelled dispatch leaves it armed.
	delivered := fullReminder && len(res.Messages) > 0
	return s.finishTurn(ctx, turnNo, err, delivered, req.Settle, l.row)
}

// finishTurn settles a turn whose messages are already durable: the
// session row (the template's delivery, row: a change no commit of the
// turn stored yet) and, for a successful turn, its settlement, in one
// commit; the row in memory changes only with it. A failing commit fails
// the turn (ok false, an error event); the returned error is the turn's.
func (s *Session) finishTurn(ctx context.Context, turnNo int64, err error, templateDelivered bool, settle func(*store.TurnStep), row func(*store.Session)) error {
	if err != nil {
		settle = nil // only a successful turn settles
	}
	set := row
	if templateDelivered {
		set = func(r *store.Session) {
			if row != nil {
				row(r)
			}
			r.TemplateEpisode = r.PlanEpisode
		}
	}
	// Persist even after cancellation: the transcript must not lose what happened.
	if perr := s.appendTranscript(context.WithoutCancel(ctx), store.OpTurn, nil, set, settle); perr != nil {
		s.m.log.Error("persist turn", "session", s.id, "err", perr)
		if err == nil {
			err = fmt.Errorf("could not save the turn: %w", perr)
		}
	}
	end, failure := event.NewTurnEnd(turnNo, err)
	if failure != nil {
		s.emit(*failure)
	}
	s.track.ReportIfEnded(context.WithoutCancel(ctx))
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
			s.track.Binding().Extend(call) // allowing a write outside the scope extends it
		}
		return ok, err
	}
}

// dropQueued removes a queue entry that is done with (a no-op once the
// prompt's commit removed it). A removal that fails leaves the prompt in
// the store's queue, where the next start would run it again: the person
// is told.
func (s *Session) dropQueued(id int64) {
	if err := s.m.st.DropQueuedInput(context.Background(), s.id, id); err != nil {
		s.m.log.Error("drop queued input", "session", s.id, "err", err)
		s.emit(event.Error{Message: "A prompt could not be removed from the stored queue (the next start may run it): " + err.Error()})
	}
}

// turnLedger is the session side of a turn ([agent.Ledger]): its prompt
// and steps committed through the store, its events emitted.
type turnLedger struct {
	s       *Session
	req     *turn.Req
	display string
	turn    int64
	plan    bool
	// row is the change to the session row the turn's first successful
	// commit carries (its title; nil: none).
	row    func(*store.Session)
	stored *bool // set once the prompt's commit succeeded
	failed *bool // set when the prompt's commit failed (not cancelled)
}

// errPromptKept is a queued prompt's turn that ended because its prompt
// could not be stored (a full disk): nothing was sent, and the prompt
// stays queued, first, in the store as in memory. The queue runner puts
// it back and stops, so it does not fail in a loop; the next kick (a
// prompt, [Session.Recover]) tries it again, before anything queued
// behind it.
type errPromptKept struct{ err error }

func (e *errPromptKept) Error() string { return e.err.Error() }
func (e *errPromptKept) Unwrap() error { return e.err }

func (l *turnLedger) Prompt(ctx context.Context, m agent.Message) error {
	op := store.OpPrompt
	if l.req.Dispatched != nil {
		op = store.OpDispatch
	}
	err := l.s.appendTranscript(ctx, op, []agent.Message{m}, l.row, l.req.Dispatch)
	*l.stored = err == nil
	*l.failed = err != nil && ctx.Err() == nil
	if err == nil {
		l.row = nil // the title is stored
	}
	return err
}

func (l *turnLedger) Step(ctx context.Context, m agent.Message) error {
	return l.s.appendTranscript(ctx, store.OpTurn, []agent.Message{m}, nil, nil)
}

func (l *turnLedger) Announce() { l.s.announceTurn(l.display, l.turn, l.plan) }

func (l *turnLedger) Dispatched() {
	if l.req.Dispatched != nil {
		l.req.Dispatched()
	}
}

func (l *turnLedger) Retrying(cause error) {
	l.s.emit(event.Notice{Message: "The model request failed (" + cause.Error() + "); retrying once."})
}

func (l *turnLedger) Failpoint(name string) { l.s.m.failpoint(name) }

// announceTurn shows a turn's prompt and start once the prompt is durable
// (or once it is clear it will not be sent), so a crash or a failed commit
// never shows a kickoff that the conversation does not hold.
func (s *Session) announceTurn(display string, turn int64, plan bool) {
	s.emit(event.User{Text: display, Display: display})
	s.emit(event.TurnStart{Turn: turn, Plan: plan})
}
