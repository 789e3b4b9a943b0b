package rpc

import (
	"context"
	"encoding/json"
	"strconv"

	"planbridge/internal/session"
)

// goalMethod adapts a goal/* method to the session's /goal command.
func goalMethod(verb string, arg func(p goalParams) string) handlerFunc {
	return func(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
		return withSession(ctx, s, raw, func(sess *session.Session, p goalParams) (any, error) {
			text := verb
			if a := arg(p); a != "" {
				text += " " + a
			}
			msg, err := sess.GoalCommand(ctx, text)
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
	goalStart  = goalMethod("", func(p goalParams) string { return p.Objective })
	goalPause  = goalMethod("pause", none)
	goalResume = goalMethod("resume", func(p goalParams) string { return p.Steering })
	goalEdit   = goalMethod("edit", func(p goalParams) string { return p.Objective })
	goalClear  = goalMethod("clear", none)
	goalBudget = goalMethod("budget", func(p goalParams) string {
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
