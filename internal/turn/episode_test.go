package turn

import (
	"context"
	"strings"
	"testing"

	"planbridge/internal/agent"
	"planbridge/internal/store"
)

// reenterEngine answers each request; on the first it re-enters Plan in
// the host's row (a new Plan episode, which re-arms the full reminder), as
// a person's /plan exit and /plan during the turn would.
type reenterEngine struct {
	h    *fakeHost
	n    int
	reqs []agent.Request
}

func (e *reenterEngine) Name() string { return "reenter" }
func (e *reenterEngine) Stream(ctx context.Context, req agent.Request, onText func(string)) (agent.Response, error) {
	e.reqs = append(e.reqs, req)
	if e.n++; e.n == 1 {
		e.h.mu.Lock()
		e.h.row.PlanEpisode++
		e.h.mu.Unlock()
	}
	onText("done")
	return agent.Response{Text: "done"}, nil
}

// TestFullReminderOfALaterEpisodeStaysArmed: a Plan turn that delivered
// its episode's full reminder settles that episode's delivery, not the
// episode the row is on by then: a Plan episode entered during the turn
// keeps its full reminder armed, and the next Plan turn carries it.
func TestFullReminderOfALaterEpisodeStaysArmed(t *testing.T) {
	g := newRig(t, store.Session{Plan: true, PlanEpisode: 1})
	eng := &reenterEngine{h: g.host}
	g.host.engine = eng
	ctx := context.Background()
	if err := g.r.Run(ctx, Req{Text: "first"}); err != nil {
		t.Fatal(err)
	}
	if row := g.host.snapshot(); row.TemplateEpisode == row.PlanEpisode {
		t.Errorf("the turn of episode 1 marked episode %d's full reminder delivered (template episode %d)", row.PlanEpisode, row.TemplateEpisode)
	}
	if err := g.r.Run(ctx, Req{Text: "second"}); err != nil {
		t.Fatal(err)
	}
	full := agent.PlanReminder(true)
	for i, req := range eng.reqs {
		last := req.Messages[len(req.Messages)-1].Content
		if !strings.Contains(last, full) {
			t.Errorf("request %d of a new Plan episode without the full reminder: %.80q", i+1, last)
		}
	}
}
