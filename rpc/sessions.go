package rpc

import (
	"context"
	"encoding/json"

	"planbridge/internal/event"
	"planbridge/internal/session"
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
	type params struct {
		Since        int64 `json:"since"`
		Limit        int   `json:"limit"` // 0: every event after since
		CoalesceText bool  `json:"coalesce_text"`
	}
	return withSession(ctx, s, raw, func(sess *session.Session, p params) (any, error) {
		if p.Limit < 0 {
			return nil, paramsError{errString("limit must be 0 (no limit) or positive")}
		}
		info := sess.Info() // before the events: last_seq never runs ahead of them
		limit := p.Limit
		if limit > 0 {
			limit++ // one more tells whether another page follows
		}
		evs, err := sess.EventsPage(ctx, p.Since, limit)
		if err != nil {
			return nil, err
		}
		more := p.Limit > 0 && len(evs) > p.Limit
		if more {
			evs = evs[:p.Limit]
		}
		if p.CoalesceText {
			evs = event.CoalesceText(evs)
		}
		return map[string]any{"session": info, "events": evs, "more": more, "report": sess.StoredReport()}, nil
	})
}

func sessionList(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return s.opt.Manager.List(ctx)
}

// sessionDelete removes a stored session (see [session.Manager.Delete]).
func sessionDelete(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	p, err := decode[sessionRef](raw)
	if err != nil {
		return nil, err
	}
	return s.opt.Manager.Delete(ctx, p.Session)
}

func sessionSubmit(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	type params struct {
		Text string `json:"text"`
	}
	return withSession(ctx, s, raw, func(sess *session.Session, p params) (any, error) {
		return sess.Submit(ctx, p.Text)
	})
}

func sessionInterrupt(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withSession(ctx, s, raw, func(sess *session.Session, _ sessionRef) (any, error) {
		sess.Interrupt()
		return nil, nil
	})
}

func sessionSetMode(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	type params struct {
		Mode string `json:"mode"`
	}
	return withSession(ctx, s, raw, func(sess *session.Session, p params) (any, error) {
		if err := sess.SetMode(ctx, p.Mode); err != nil {
			return nil, err
		}
		return sess.Info(), nil
	})
}
