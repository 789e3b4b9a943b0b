package rpc

import (
	"context"
	"encoding/json"

	"planbridge/internal/session"
)

func planEnter(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withSession(ctx, s, raw, func(sess *session.Session, _ sessionRef) (any, error) {
		if err := sess.EnterPlan(ctx); err != nil {
			return nil, err
		}
		return sess.Info(), nil
	})
}

func planExit(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withSession(ctx, s, raw, func(sess *session.Session, _ sessionRef) (any, error) {
		if err := sess.ExitPlan(ctx); err != nil {
			return nil, err
		}
		return sess.Info(), nil
	})
}

func planStatus(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withSession(ctx, s, raw, func(sess *session.Session, _ sessionRef) (any, error) {
		return sess.Status(), nil
	})
}
