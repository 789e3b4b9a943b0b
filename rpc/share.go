package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"planbridge/internal/session"
	"planbridge/internal/share"
)

// shareLinks is the result of share/start and share/links. URLs (which
// carry the secrets) appear only in share/start's answer.
type shareLinks struct {
	Links []share.Link `json:"links"`
	// Session is the session the links belong to: after a Worktree
	// handoff, the fork the share followed.
	Session string `json:"session,omitempty"`
}

// withShare decodes params and hands them to fn with the share server, or
// fails with an application error when sharing is not configured. share's
// validation errors become invalid_params.
func withShare[T any](s *Server, raw json.RawMessage, fn func(*share.Server, T) (any, error)) (any, error) {
	p, err := decode[T](raw)
	if err != nil {
		return nil, err
	}
	if s.opt.Share == nil {
		return nil, &session.Error{Code: session.CodeUnavailable, Message: "sharing is not configured in this planbridge"}
	}
	res, err := fn(s.opt.Share, p)
	if errors.Is(err, share.ErrBadTier) || errors.Is(err, share.ErrBadTTL) || errors.Is(err, share.ErrBadRelay) {
		return nil, &session.Error{Code: session.CodeInvalidParams, Message: err.Error()}
	}
	return res, err
}

func shareStart(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	type params struct {
		Session    string       `json:"session"`
		Tiers      []share.Tier `json:"tiers"`
		TTLSeconds int64        `json:"ttl_seconds"`
		// Relay, when set, shares through the relay at this URL (end-to-end
		// sealed) instead of this process's listener.
		Relay string `json:"relay"`
	}
	return withShare(s, raw, func(sh *share.Server, p params) (any, error) {
		ttl := time.Duration(p.TTLSeconds) * time.Second
		var links []share.Link
		var err error
		if p.Relay != "" {
			links, err = sh.StartRelay(ctx, p.Session, p.Relay, p.Tiers, ttl)
		} else {
			links, err = sh.Start(ctx, p.Session, p.Tiers, ttl)
		}
		if err != nil {
			return nil, err
		}
		return shareLinks{Links: links}, nil
	})
}

func shareStop(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withShare(s, raw, func(sh *share.Server, p sessionRef) (any, error) {
		return map[string]bool{"stopped": sh.Stop(p.Session)}, nil
	})
}

func shareLinksGet(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withShare(s, raw, func(sh *share.Server, p sessionRef) (any, error) {
		owner, links := sh.Following(ctx, p.Session)
		if links == nil {
			links = []share.Link{}
		}
		return shareLinks{Links: links, Session: owner}, nil
	})
}
