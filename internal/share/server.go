package share

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"planbridge/internal/session"
)

// Defaults for [Config].
const (
	DefaultListen      = "127.0.0.1:0"
	DefaultTTL         = time.Hour
	MaxTTL             = 24 * time.Hour
	DefaultFrameBudget = 48 << 10 // bytes of rendered proposal + settings
)

// KeyHeader is the request header that carries a link's secret.
const KeyHeader = "X-Planbridge-Key"

// Errors callers branch on.
var (
	ErrBadTier   = errors.New("invalid tier")
	ErrNotShared = errors.New("the session is not shared")
	ErrClosed    = errors.New("the share server is closed")
)

// Config configures a [Server].
type Config struct {
	Manager *session.Manager
	// Listen is the TCP address the HTTP server binds on first share
	// (default [DefaultListen], loopback).
	Listen string
	// BaseURL, when set, is the scheme://host[:port] links use instead of
	// the listener's address (for a LAN or VPN name).
	BaseURL string
	// TTL is the default link lifetime ([DefaultTTL]).
	TTL time.Duration
	// FrameBudget is the largest rendered proposal + settings, in bytes,
	// the page offers to accept ([DefaultFrameBudget]).
	FrameBudget int
	Logger      *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Link is one share link. URL carries the secret and is only returned when
// the link is minted: the server keeps only the secret's hash.
type Link struct {
	Tier      Tier      `json:"tier"`
	URL       string    `json:"url,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Server serves shared sessions over HTTP. The zero value is not usable;
// call [New]. Safe for concurrent use.
type Server struct {
	cfg Config
	log *slog.Logger

	mu        sync.Mutex // guards the fields below
	srv       *http.Server
	base      string           // scheme://host:port of links
	rooms     map[string]*room // live rooms by room id
	bySession map[string]*room // live rooms by session id
	ended     map[string]ending
	unsub     func()
	closed    bool
}

// maxTombstones bounds how many ended rooms remember why they ended.
const maxTombstones = 256

// New returns a server; nothing listens until the first [Server.Start].
func New(cfg Config) *Server {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.FrameBudget <= 0 {
		cfg.FrameBudget = DefaultFrameBudget
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Server{cfg: cfg, log: lg, rooms: map[string]*room{}, bySession: map[string]*room{}, ended: map[string]ending{}}
}

// Addr is the base URL links use ("" before the first share).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base
}

// Start shares session sid: it mints one new link per tier (all three when
// tiers is empty) valid for ttl (the configured default when ttl <= 0, at
// most [MaxTTL]) and returns them with their URLs. Links minted earlier stay
// valid. The HTTP listener starts on the first call.
func (s *Server) Start(ctx context.Context, sid string, want []Tier, ttl time.Duration) ([]Link, error) {
	if len(want) == 0 {
		want = tiers[:]
	}
	if ttl <= 0 {
		ttl = s.cfg.TTL
	}
	if ttl > MaxTTL {
		return nil, fmt.Errorf("link lifetime %s is longer than %s", ttl, MaxTTL)
	}
	exp := map[Tier]time.Time{}
	for _, t := range want {
		if t < View || t > Owner {
			return nil, fmt.Errorf("%w %d", ErrBadTier, int(t))
		}
		exp[t] = s.cfg.Now().Add(ttl)
	}
	return s.share(ctx, sid, exp)
}

// share mints one link per tier in exp, expiring at the given times.
func (s *Server) share(ctx context.Context, sid string, exp map[Tier]time.Time) ([]Link, error) {
	if _, err := s.cfg.Manager.Get(ctx, sid); err != nil {
		return nil, err
	}
	if err := s.listen(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	r := s.bySession[sid]
	if r == nil {
		r = newRoom(randomHex(16), sid)
		s.rooms[r.id], s.bySession[sid] = r, r
	}
	out := make([]Link, 0, len(exp))
	for _, t := range tiers {
		e, ok := exp[t]
		if !ok {
			continue
		}
		secret := r.mint(t, e)
		out = append(out, Link{Tier: t, URL: s.base + "/s/" + r.id + "#k=" + secret, ExpiresAt: e})
	}
	s.log.Info("share started", "session", sid, "room", r.id, "links", len(out))
	return out, nil
}

// listen starts the HTTP server once.
func (s *Server) listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.srv != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("share listener: %w", err)
	}
	s.base = s.cfg.BaseURL
	if s.base == "" {
		s.base = "http://" + ln.Addr().String()
	}
	s.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	s.unsub = s.cfg.Manager.Subscribe(s.publish)
	go func(srv *http.Server) {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("share server stopped", "err", err)
		}
	}(s.srv)
	s.log.Info("share server listening", "addr", ln.Addr().String())
	return nil
}

// publish fans a session event out to the streams of its room. It runs on
// the session's emitting goroutine, so it never blocks. A "forked" event
// (the session's Worktree fork step, data {fork, branch, dir}) of a shared
// session hands the room over to the fork.
func (s *Server) publish(ev session.Event) {
	s.mu.Lock()
	r := s.bySession[ev.Session]
	s.mu.Unlock()
	if r == nil {
		return
	}
	r.broadcast(ev)
	if ev.Kind == "forked" {
		var d struct {
			Fork string `json:"fork"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil || d.Fork == "" {
			s.HandoffFailed(ev.Session, "the fork event names no session")
			return
		}
		// Not on the emitting goroutine: Handoff reads the fork session.
		go func() {
			if err := s.Handoff(context.Background(), ev.Session, d.Fork); err != nil {
				s.log.Warn("share handoff to fork failed", "session", ev.Session, "fork", d.Fork, "err", err)
			}
		}()
	}
}

// Links returns the live (unexpired) links of session sid, without URLs,
// weakest tier first; nil if it is not shared.
func (s *Server) Links(sid string) []Link {
	s.mu.Lock()
	r := s.bySession[sid]
	s.mu.Unlock()
	if r == nil {
		return nil
	}
	out := r.live(s.cfg.Now())
	sort.SliceStable(out, func(i, j int) bool { return out[i].Tier < out[j].Tier })
	return out
}

// Stop ends sharing of session sid: every link dies at once and open
// streams are closed with a notice. It reports whether the session was
// shared.
func (s *Server) Stop(sid string) bool {
	return s.end(sid, ending{Reason: "stopped", Message: "The host stopped sharing this session."}, nil)
}

// Handoff moves the share of oldSID to its Worktree fork newSID: the fork is
// shared at the same tiers with the same expiry, every page connected to
// the old room gets an "open" event carrying the link of its own tier, and
// the old room ends with a continuation notice. If the fork cannot be
// shared, the old room ends with a handoff-failed notice (see
// [Server.HandoffFailed]) and the error is returned. The server calls it
// itself when a shared session emits its "forked" event.
func (s *Server) Handoff(ctx context.Context, oldSID, newSID string) error {
	s.mu.Lock()
	r := s.bySession[oldSID]
	s.mu.Unlock()
	if r == nil {
		return ErrNotShared
	}
	exp := map[Tier]time.Time{}
	for _, l := range r.live(s.cfg.Now()) {
		if l.ExpiresAt.After(exp[l.Tier]) {
			exp[l.Tier] = l.ExpiresAt
		}
	}
	if len(exp) == 0 {
		s.HandoffFailed(oldSID, "every link of the old room has expired")
		return fmt.Errorf("hand off share of %s: no live links", oldSID)
	}
	links, err := s.share(ctx, newSID, exp)
	if err != nil {
		s.HandoffFailed(oldSID, err.Error())
		return fmt.Errorf("share the fork %s: %w", newSID, err)
	}
	open := map[Tier]Link{}
	for _, l := range links {
		open[l.Tier] = l
	}
	s.end(oldSID, ending{Reason: "handoff", Message: "This session continues in a Worktree fork."}, open)
	return nil
}

// HandoffFailed ends the room of session sid with a notice that the Worktree
// fork could not be shared (the native handoff still completes in Emacs).
// It reports whether the session was shared.
func (s *Server) HandoffFailed(sid, reason string) bool {
	return s.end(sid, ending{Reason: "handoff_failed",
		Message: "The Worktree fork could not be shared (" + reason + "). The implementation continues in Emacs; ask the host for a new link."}, nil)
}

// end removes the room of sid, remembers why, and closes its streams.
func (s *Server) end(sid string, e ending, open map[Tier]Link) bool {
	s.mu.Lock()
	r := s.bySession[sid]
	if r != nil {
		delete(s.bySession, sid)
		delete(s.rooms, r.id)
		if len(s.ended) >= maxTombstones {
			for k := range s.ended {
				delete(s.ended, k)
				break
			}
		}
		s.ended[r.id] = e
	}
	s.mu.Unlock()
	if r == nil {
		return false
	}
	r.end(e, open)
	s.log.Info("share ended", "session", sid, "room", r.id, "reason", e.Reason)
	return true
}

// Close ends every room and shuts the HTTP server down.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	sids := make([]string, 0, len(s.bySession))
	for sid := range s.bySession {
		sids = append(sids, sid)
	}
	srv, unsub := s.srv, s.unsub
	s.mu.Unlock()
	for _, sid := range sids {
		s.end(sid, ending{Reason: "closed", Message: "planbridge stopped."}, nil)
	}
	if unsub != nil {
		unsub()
	}
	if srv == nil {
		return nil
	}
	if err := srv.Shutdown(ctx); err != nil {
		return srv.Close()
	}
	return nil
}

// lookup returns the live room id, or why it ended.
func (s *Server) lookup(id string) (*room, ending, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rooms[id]; r != nil {
		return r, ending{}, true
	}
	e, ok := s.ended[id]
	return nil, e, ok
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}
