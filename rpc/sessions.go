package rpc

import (
	"context"
	"encoding/json"
)

type sessionRef struct {
	Session string `json:"session"`
}

func sessionCreate(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	p, err := decode[struct {
		Workspace string `json:"workspace"`
	}](raw)
	if err != nil {
		return nil, err
	}
	sess, err := s.opt.Manager.Create(ctx, p.Workspace)
	if err != nil {
		return nil, err
	}
	return sess.Info(), nil
}

func sessionOpen(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	p, err := decode[struct {
		Session string `json:"session"`
		Since   int64  `json:"since"`
	}](raw)
	if err != nil {
		return nil, err
	}
	sess, err := s.opt.Manager.Get(ctx, p.Session)
	if err != nil {
		return nil, err
	}
	evs, err := sess.Events(ctx, p.Since)
	if err != nil {
		return nil, err
	}
	return map[string]any{"session": sess.Info(), "events": evs}, nil
}

func sessionList(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return s.opt.Manager.List(ctx)
}

func sessionSubmit(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	p, err := decode[struct {
		Session string `json:"session"`
		Text    string `json:"text"`
	}](raw)
	if err != nil {
		return nil, err
	}
	sess, err := s.opt.Manager.Get(ctx, p.Session)
	if err != nil {
		return nil, err
	}
	return sess.Submit(ctx, p.Text)
}

func sessionInterrupt(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	p, err := decode[sessionRef](raw)
	if err != nil {
		return nil, err
	}
	sess, err := s.opt.Manager.Get(ctx, p.Session)
	if err != nil {
		return nil, err
	}
	sess.Interrupt()
	return nil, nil
}

func sessionSetMode(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	p, err := decode[struct {
		Session string `json:"session"`
		Mode    string `json:"mode"`
	}](raw)
	if err != nil {
		return nil, err
	}
	sess, err := s.opt.Manager.Get(ctx, p.Session)
	if err != nil {
		return nil, err
	}
	if err := sess.SetMode(ctx, p.Mode); err != nil {
		return nil, err
	}
	return sess.Info(), nil
}
