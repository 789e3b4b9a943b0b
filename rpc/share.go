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
}

// shareServer returns the configured share server or an application error.
func (s *Server) shareServer() (*share.Server, error) {
	if s.opt.Share == nil {
		return nil, &session.Error{Code: session.CodeUnavailable, Message: "sharing is not configured in this planbridge"}
	}
	return s.opt.Share, nil
}

// shareError gives share's errors a stable code for the client.
func shareError(err error) error {
	if errors.Is(err, share.ErrBadTier) {
		return &session.Error{Code: session.CodeInvalidParams, Message: err.Error()}
	}
	return err
}

func shareStart(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	type params struct {
		Session    string       `json:"session"`
		Tiers      []share.Tier `json:"tiers"`
		TTLSeconds int64        `json:"ttl_seconds"`
	}
	p, err := decode[params](raw)
	if err != nil {
		return nil, err
	}
	sh, err := s.shareServer()
	if err != nil {
		return nil, err
	}
	if p.TTLSeconds < 0 || time.Duration(p.TTLSeconds)*time.Second > share.MaxTTL {
		return nil, &session.Error{Code: session.CodeInvalidParams, Message: "ttl_seconds must be between 1 and 86400 (0 for the default hour)"}
	}
	links, err := sh.Start(ctx, p.Session, p.Tiers, time.Duration(p.TTLSeconds)*time.Second)
	if err != nil {
		return nil, shareError(err)
	}
	return shareLinks{Links: links}, nil
}

func shareStop(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	p, err := decode[sessionRef](raw)
	if err != nil {
		return nil, err
	}
	sh, err := s.shareServer()
	if err != nil {
		return nil, err
	}
	return map[string]bool{"stopped": sh.Stop(p.Session)}, nil
}

func shareLinksGet(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	p, err := decode[sessionRef](raw)
	if err != nil {
		return nil, err
	}
	sh, err := s.shareServer()
	if err != nil {
		return nil, err
	}
	links := sh.Links(p.Session)
	if links == nil {
		links = []share.Link{}
	}
	return shareLinks{Links: links}, nil
}
