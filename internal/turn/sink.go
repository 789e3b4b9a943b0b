package turn

import (
	"context"

	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/proposal"
)

// sink turns a turn's agent callbacks into session events.
type sink struct {
	r    *Runner
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

func (k *sink) Text(delta string) {
	if v := k.view.Write(delta); v != "" {
		k.r.cfg.Events.Text(v)
	}
}

func (k *sink) ResponseDone(text string) {
	if v := k.view.Done(text); v != "" {
		k.r.cfg.Events.Text(v)
	}
	k.r.cfg.Host.Response(k.view.Result())
	k.view = viewFor(k.plan)
}

func (k *sink) ToolCall(call agent.ToolCall) {
	k.r.cfg.Events.Emit(event.NewToolCall(call.ID, call.Name, call.Arguments))
}

func (k *sink) ToolResult(call agent.ToolCall, ok bool, output string) {
	if ok {
		k.r.cfg.Host.Edited(call)
	}
	k.r.cfg.Host.Binding().LogTool(call, ok, output)
	k.r.cfg.Events.Emit(event.NewToolResult(call.ID, call.Name, ok, output))
}

// Blocked counts a refusal in the session row and reports it. The count
// changes in memory only with its commit; a commit that fails is told as
// an error event.
func (k *sink) Blocked(call agent.ToolCall, code, reason string) {
	// blocked_total counts Plan refusals only (the turn's Plan stamp, which
	// its children share); anything else refused is counted apart.
	plan := k.plan && code == agent.CodePlanBlocked
	if err := k.r.cfg.Host.CommitRow(context.Background(), func(row *store.Session) {
		if plan {
			row.BlockedTotal++
		} else {
			row.RefusedTotal++
		}
	}); err != nil {
		k.r.cfg.Logger.Error("persist blocked count", "session", k.r.cfg.Session, "err", err)
		k.r.cfg.Events.Emit(event.Error{Message: "The refused call could not be counted (the count is not saved): " + err.Error()})
	}
	k.r.cfg.Events.Emit(event.Blocked{ID: call.ID, Name: call.Name, Code: code, Reason: reason})
	if code == agent.CodeOutsideScope {
		k.r.cfg.Host.PauseForScope(reason)
	}
}
