package rpc

import (
	"context"
	"encoding/json"
	"strconv"

	"planbridge/goal"
	"planbridge/internal/session"
)

// goalMethod adapts a goal/* method to one explicit Goal action (never the
// typed-command parser, so an objective starting with "clear" starts a Goal).
func goalMethod(verb string, arg func(p goalParams) string) handlerFunc {
	return func(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
		return withSession(ctx, s, raw, func(sess *session.Session, p goalParams) (any, error) {
			msg, err := sess.GoalAction(ctx, verb, arg(p))
			if err != nil {
				return nil, err
			}
			return map[string]any{"message": msg, "goal": sess.Goal()}, nil
		})
	}
}

type goalParams struct {
	Objective string `json:"objective"`
	Steering  string `json:"steering"`
	Budget    *int64 `json:"budget"` // null or 0: unlimited
}

func none(goalParams) string { return "" }

var (
	goalStart  = goalMethod(goal.VerbStart, func(p goalParams) string { return p.Objective })
	goalPause  = goalMethod(goal.VerbPause, none)
	goalResume = goalMethod(goal.VerbResume, func(p goalParams) string { return p.Steering })
	goalEdit   = goalMethod(goal.VerbEdit, func(p goalParams) string { return p.Objective })
	goalClear  = goalMethod(goal.VerbClear, none)
	goalBudget = goalMethod(goal.VerbBudget, func(p goalParams) string {
		if p.Budget == nil || *p.Budget == 0 {
			return "none"
		}
		return strconv.FormatInt(*p.Budget, 10)
	})
)

func goalGet(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withSession(ctx, s, raw, func(sess *session.Session, _ sessionRef) (any, error) {
		g := sess.Goal()
		return map[string]any{"goal": g, "summary": g.Summary()}, nil
	})
}
