package rpc

import (
	"context"
	"encoding/json"
	"time"

	"planbridge/handoff"
	"planbridge/internal/agent"
)

type initializeParams struct {
	Engine *agent.EngineConfig  `json:"engine"`
	Models *handoff.ModelConfig `json:"models"`
	// ApprovalTimeout, in seconds, closes an undecided approval card as
	// timed_out (0 or absent: never).
	ApprovalTimeout *float64 `json:"approval_timeout"`
	Client          *struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"client"`
}

func initialize(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	p, err := decode[initializeParams](raw)
	if err != nil {
		return nil, err
	}
	m := s.opt.Manager
	if p.Engine != nil && p.Engine.Kind != "" {
		if s.opt.NewEngine == nil {
			return nil, paramsError{errString("this server cannot configure engines")}
		}
		eng, err := s.opt.NewEngine(*p.Engine)
		if err != nil {
			return nil, paramsError{err}
		}
		m.SetEngine(eng)
	}
	if p.Models != nil {
		if err := m.SetModels(*p.Models); err != nil {
			return nil, err
		}
	}
	if p.ApprovalTimeout != nil {
		t := *p.ApprovalTimeout
		if t < 0 || t > 7*24*3600 || t != t {
			return nil, paramsError{errString("approval_timeout: want seconds between 0 (off) and one week")}
		}
		m.SetApprovalTimeout(time.Duration(t * float64(time.Second)))
	}
	engine := ""
	if e := m.Engine(); e != nil {
		engine = e.Name()
	}
	res := map[string]any{"version": s.opt.Version, "state_dir": m.Store().Dir(), "engine": engine, "instance": s.instance}
	if len(s.opt.Warnings) > 0 {
		res["warnings"] = s.opt.Warnings
	}
	return res, nil
}

func shutdown(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	s.opt.Manager.Close()
	return nil, nil
}

type errString string

func (e errString) Error() string { return string(e) }
