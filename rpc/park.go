package rpc

import (
	"context"
	"encoding/json"

	"planbridge/handoff"
	"planbridge/internal/session"
)

func approvalPark(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withSession(ctx, s, raw, func(sess *session.Session, p attemptParams) (any, error) {
		return sess.Park(ctx, p.Attempt)
	})
}

func approvalOutcomes(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withSession(ctx, s, raw, func(sess *session.Session, _ sessionRef) (any, error) {
		return sess.Outcomes(ctx)
	})
}

func planParked(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	p, err := decode[struct {
		Session string `json:"session"`
		All     bool   `json:"all"`
	}](raw)
	if err != nil {
		return nil, err
	}
	return s.opt.Manager.Parked(ctx, p.Session, p.All)
}

func planStartParked(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	p, err := decode[struct {
		ID       string           `json:"id"`
		Location handoff.Location `json:"location"`
		Branch   string           `json:"branch"`
	}](raw)
	if err != nil {
		return nil, err
	}
	return s.opt.Manager.StartParked(ctx, p.ID, p.Location, p.Branch)
}
