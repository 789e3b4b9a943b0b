package rpc

import (
	"context"
	"encoding/json"
	"time"

	"planbridge/handoff"
	"planbridge/internal/session"
)

type attemptParams struct {
	Session string `json:"session"`
	Attempt string `json:"attempt"`
}

func withSession[T any](ctx context.Context, s *Server, raw json.RawMessage, fn func(*session.Session, T) (any, error)) (any, error) {
	p, err := decode[T](raw)
	if err != nil {
		return nil, err
	}
	var ref sessionRef
	_ = json.Unmarshal(raw, &ref)
	sess, err := s.opt.Manager.Get(ctx, ref.Session)
	if err != nil {
		return nil, err
	}
	return fn(sess, p)
}

func approvalGet(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withSession(ctx, s, raw, func(sess *session.Session, _ sessionRef) (any, error) {
		return sess.OpenApproval(ctx), nil
	})
}

func approvalUpdate(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	type params struct {
		attemptParams
		Change handoff.Change `json:"change"`
		// Scope, when present, replaces the card's declared scope instead.
		Scope *[]string `json:"scope"`
	}
	return withSession(ctx, s, raw, func(sess *session.Session, p params) (any, error) {
		if p.Scope != nil {
			return sess.UpdateScope(ctx, p.Attempt, *p.Scope)
		}
		return sess.UpdateSelection(ctx, p.Attempt, p.Change)
	})
}

func approvalAccept(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	type params struct {
		attemptParams
		Branch string `json:"branch"`
	}
	return withSession(ctx, s, raw, func(sess *session.Session, p params) (any, error) {
		return sess.Accept(ctx, p.Attempt, p.Branch)
	})
}

func approvalFeedback(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	type params struct {
		attemptParams
		Text     string            `json:"text"`
		Comments []session.Comment `json:"comments"`
	}
	return withSession(ctx, s, raw, func(sess *session.Session, p params) (any, error) {
		return nil, sess.Feedback(ctx, p.Attempt, p.Text, p.Comments)
	})
}

func approvalDiff(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	type params struct {
		sessionRef
		From int `json:"from"`
		To   int `json:"to"`
	}
	return withSession(ctx, s, raw, func(sess *session.Session, p params) (any, error) {
		return sess.DiffVersions(p.From, p.To)
	})
}

func reportGet(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	type params struct {
		sessionRef
		Stored bool `json:"stored"` // the last report built, without building one
	}
	return withSession(ctx, s, raw, func(sess *session.Session, p params) (any, error) {
		if p.Stored {
			return sess.StoredReport(), nil
		}
		return sess.Report(ctx)
	})
}

func reportFileDiff(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	type params struct {
		sessionRef
		Path string `json:"path"`
	}
	return withSession(ctx, s, raw, func(sess *session.Session, p params) (any, error) {
		d, err := sess.FileDiff(ctx, p.Path)
		if err != nil {
			return nil, err
		}
		return map[string]string{"path": p.Path, "diff": d}, nil
	})
}

func approvalCancel(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withSession(ctx, s, raw, func(sess *session.Session, p attemptParams) (any, error) {
		return nil, sess.CancelApproval(ctx, p.Attempt)
	})
}

func approvalHide(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withSession(ctx, s, raw, func(sess *session.Session, p attemptParams) (any, error) {
		return sess.SetHidden(p.Attempt, true)
	})
}

func approvalShow(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withSession(ctx, s, raw, func(sess *session.Session, p attemptParams) (any, error) {
		return sess.SetHidden(p.Attempt, false)
	})
}

func approvalEdit(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	type params struct {
		attemptParams
		Body string `json:"body"`
	}
	return withSession(ctx, s, raw, func(sess *session.Session, p params) (any, error) {
		return sess.EditProposal(ctx, p.Attempt, p.Body)
	})
}

// handoffRecover is the one recovery method; handoff/retry and
// implementation/resume are its older names.
func handoffRecover(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withSession(ctx, s, raw, func(sess *session.Session, _ sessionRef) (any, error) {
		return sess.Recover(ctx)
	})
}

func handoffSavePlan(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withSession(ctx, s, raw, func(sess *session.Session, _ sessionRef) (any, error) {
		path, err := sess.SavePlanToProject(ctx, time.Now().Format("2006-01-02"))
		return map[string]string{"path": path}, err
	})
}

func sessionQueue(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	type params struct {
		Text string `json:"text"`
	}
	return withSession(ctx, s, raw, func(sess *session.Session, p params) (any, error) {
		return sess.Queue(p.Text)
	})
}

func sessionCompact(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withSession(ctx, s, raw, func(sess *session.Session, _ sessionRef) (any, error) {
		return nil, sess.Compact()
	})
}

func sessionTracking(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	return withSession(ctx, s, raw, func(sess *session.Session, _ sessionRef) (any, error) {
		return map[string]any{"todos": sess.Todos(), "plan": sess.TrackedPlan()}, nil
	})
}

func approvalRestore(ctx context.Context, s *Server, raw json.RawMessage) (any, error) {
	type params struct {
		sessionRef
		Hash string `json:"hash"`
	}
	return withSession(ctx, s, raw, func(sess *session.Session, p params) (any, error) {
		return sess.RestoreDraft(ctx, p.Hash)
	})
}
