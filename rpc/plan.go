package rpc

import (
	"context"
	"encoding/json"
)

func planEnter(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	p, err := decode[sessionRef](raw)
	if err != nil {
		return nil, err
	}
	sess, err := s.opt.Manager.Get(ctx, p.Session)
	if err != nil {
		return nil, err
	}
	if err := sess.EnterPlan(ctx); err != nil {
		return nil, err
	}
	return sess.Info(), nil
}

func planExit(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	p, err := decode[sessionRef](raw)
	if err != nil {
		return nil, err
	}
	sess, err := s.opt.Manager.Get(ctx, p.Session)
	if err != nil {
		return nil, err
	}
	if err := sess.ExitPlan(ctx); err != nil {
		return nil, err
	}
	return sess.Info(), nil
}

func planStatus(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	p, err := decode[sessionRef](raw)
	if err != nil {
		return nil, err
	}
	sess, err := s.opt.Manager.Get(ctx, p.Session)
	if err != nil {
		return nil, err
	}
	return sess.Status(), nil
}
