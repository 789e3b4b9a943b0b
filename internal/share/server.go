package share

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"planbridge/internal/event"
	"planbridge/internal/redact"
	"planbridge/internal/session"
	"planbridge/internal/store"
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
	ErrBadTTL    = errors.New("invalid link lifetime")
	ErrNotShared = errors.New("the session is not shared")
	ErrClosed    = errors.New("the share server is closed")
)

// Config configures a [Server].
type Config struct {
	Manager *session.Manager
	// Store keeps rooms and link hashes across restarts (default
	// Manager.Store()); with none, rooms live in memory only.
	Store *store.Store
	// Listen is the TCP address the HTTP server binds (default
	// [DefaultListen], loopback). With port 0 the server first tries the
	// port it had last time, so links survive a restart.
	Listen string
	// BaseURL, when set, is the scheme://host[:port] links use instead of
	// the listener's address (for a LAN or VPN name, or a 0.0.0.0
	// listener); see [CheckBaseURL].
	BaseURL string
	// TTL is the default link lifetime ([DefaultTTL]).
	TTL time.Duration
	// FrameBudget is the largest rendered proposal + settings, in bytes,
	// the page offers to accept ([DefaultFrameBudget]).
	FrameBudget int
	Logger      *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time

	// Bounds (zero: the Default* value). ReadTimeout covers a whole
	// request, body included; WriteTimeout a response, and each write of
	// an event stream separately (streams are exempt from the read and
	// whole-response deadlines and send a heartbeat instead). IdleTimeout
	// closes a keep-alive connection that sends nothing.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConns and MaxConnsPerAddr cap open connections in total and per
	// remote address; a connection over a cap is closed at once.
	MaxConns, MaxConnsPerAddr int
	// MaxStreamsPerLink caps the open event streams of one link (429).
	MaxStreamsPerLink int
	// Redact learns every link secret minted, so the session's events,
	// rows and logs mask it (nil: not shared with anyone).
	Redact *redact.Set
}

// Link is one share link. URL carries the secret and is only returned when
// the link is minted: the server keeps only the secret's hash.
type Link struct {
	Tier      Tier      `json:"tier"`
	URL       string    `json:"url,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
	// Transport is how the link reaches this host: [TransportDirect]
	// (this server's listener) or [TransportRelay].
	Transport string `json:"transport,omitempty"`
}

// Server serves shared sessions over HTTP. The zero value is not usable;
// call [New]. Safe for concurrent use.
type Server struct {
	cfg Config
	log *slog.Logger
	st  *store.Store // nil: memory only

	// opMu serializes the changes that are written to the store (loading,
	// minting links, ending rooms), so memory and store agree; it is held
	// across store writes, mu never is.
	opMu   sync.Mutex
	loaded bool // guarded by opMu

	listenMu sync.Mutex // serializes starting the listener

	mu        sync.Mutex // guards the fields below
	srv       *http.Server
	lln       *limitListener
	base      string           // scheme://host:port of links
	rooms     map[string]*room // live rooms by room id
	bySession map[string]*room // live rooms by session id
	ended     map[string]tomb  // ended rooms by room id
	unsub     func()
	closed    bool

	relay relayHost // rooms shared through relays (relayhost.go)
}

// maxTombstones bounds how many ended rooms remember why they ended.
const maxTombstones = 256

// maxHops bounds how far an ended room's continuation is followed.
const maxHops = 8

// listenKey is the store key remembering the listener's last address.
const listenKey = "share.listen"

// New returns a server; nothing listens until [Server.Restore] finds live
// rooms or the first [Server.Start].
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
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	st := cfg.Store
	if st == nil && cfg.Manager != nil {
		st = cfg.Manager.Store()
	}
	return &Server{cfg: cfg, log: lg, st: st, rooms: map[string]*room{}, bySession: map[string]*room{}, ended: map[string]tomb{}}
}

// CheckBaseURL checks a [Config.BaseURL]: an absolute http or https URL
// with a host and no path, query or fragment. It returns the URL without a
// trailing slash.
func CheckBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("share base URL: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("share base URL %q: want http:// or https://", raw)
	case u.Host == "" || u.Hostname() == "":
		return "", fmt.Errorf("share base URL %q has no host", raw)
	case u.User != nil:
		return "", fmt.Errorf("share base URL %q: no user info allowed", raw)
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", fmt.Errorf("share base URL %q: want scheme://host[:port] only (links add /s/ROOM)", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

// Addr is the base URL links use ("" before the listener starts).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base
}

// Restore loads the rooms a previous planbridge left in the store and, if
// a link may still be presented to one of them (a live room with an
// unexpired link, or a room that ended less than [MaxTTL] ago), starts
// the listener at once, so pages reconnect without the host sharing again.
// Otherwise the listener starts on the first [Server.Start], as it would
// without Restore. Every other method loads the rooms on first use, so
// calling Restore is needed only to listen at startup.
func (s *Server) Restore(ctx context.Context) error {
	if err := s.load(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	need := s.reachable(s.cfg.Now())
	s.mu.Unlock()
	if !need {
		return nil
	}
	return s.listen(ctx)
}

// reachable reports whether a link could still be presented to a known
// room. s.mu is held.
func (s *Server) reachable(now time.Time) bool {
	for _, r := range s.rooms {
		if len(r.unexpired(now)) > 0 {
			return true
		}
	}
	for _, t := range s.ended {
		if t.at.After(now.Add(-MaxTTL)) {
			return true
		}
	}
	return false
}

// load reads the stored rooms once. A failed load is retried on next use.
func (s *Server) load(ctx context.Context) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if s.loaded || s.st == nil {
		return nil
	}
	rows, err := s.st.ShareRooms(ctx, maxTombstones)
	if err != nil {
		return fmt.Errorf("load share rooms: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, row := range rows {
		links := make([]link, 0, len(row.Links))
		for _, l := range row.Links {
			t, err := ParseTier(l.Tier)
			h, herr := hex.DecodeString(l.Hash)
			if err != nil || herr != nil || len(h) != sha256.Size {
				s.log.Warn("share link with a bad row skipped", "room", row.ID, "tier", l.Tier)
				continue
			}
			lk := link{tier: t, expires: l.ExpiresAt, inherited: l.Inherited}
			copy(lk.hash[:], h)
			links = append(links, lk)
		}
		if row.Ended {
			s.ended[row.ID] = tomb{why: ending{Reason: row.Reason, Message: row.Message}, cont: row.ContinueRoom, links: links, at: row.EndedAt}
			continue
		}
		r := newRoom(row.ID, row.SessionID)
		r.links = links
		if prev := s.bySession[row.SessionID]; prev != nil {
			s.log.Warn("two live share rooms for one session; the newer takes its events", "session", row.SessionID, "room", prev.id, "newer", row.ID)
		}
		s.rooms[r.id], s.bySession[r.session] = r, r
	}
	s.loaded = true
	s.log.Info("share rooms loaded", "live", len(s.rooms), "ended", len(s.ended))
	return nil
}

// Start shares session sid: it mints one new link per tier (all three when
// tiers is empty) valid for ttl (the configured default when ttl <= 0, at
// most [MaxTTL]) and returns them with their URLs. Links minted earlier stay
// valid. The links' hashes are stored before they are returned. The HTTP
// listener starts on the first call.
func (s *Server) Start(ctx context.Context, sid string, want []Tier, ttl time.Duration) ([]Link, error) {
	if len(want) == 0 {
		want = tiers[:]
	}
	if ttl < 0 || ttl > MaxTTL {
		return nil, fmt.Errorf("%w: %s (want up to %s, or 0 for the default)", ErrBadTTL, ttl, MaxTTL)
	}
	if ttl == 0 {
		ttl = s.cfg.TTL
	}
	exp := map[Tier]time.Time{}
	for _, t := range want {
		if t < View || t > Owner {
			return nil, fmt.Errorf("%w %d", ErrBadTier, int(t))
		}
		exp[t] = s.cfg.Now().Add(ttl)
	}
	links, _, err := s.share(ctx, sid, exp, nil)
	return links, err
}

// share mints one link per tier in exp, expiring at the given times, and
// adds inherit (marked inherited) to the room. It returns the links and
// the room id.
func (s *Server) share(ctx context.Context, sid string, exp map[Tier]time.Time, inherit []link) ([]Link, string, error) {
	if err := s.load(ctx); err != nil {
		return nil, "", err
	}
	if _, err := s.cfg.Manager.Get(ctx, sid); err != nil {
		return nil, "", err
	}
	if err := s.listen(ctx); err != nil {
		return nil, "", err
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	r, base, closed := s.bySession[sid], s.base, s.closed
	s.mu.Unlock()
	if closed {
		return nil, "", ErrClosed
	}
	fresh := r == nil
	if fresh {
		r = newRoom(randomHex(16), sid)
	}
	var add []link
	out := make([]Link, 0, len(exp))
	for _, t := range tiers {
		e, ok := exp[t]
		if !ok {
			continue
		}
		secret, l := newLink(t, e)
		s.cfg.Redact.Add(secret) // never in an event, a stored row or a log line
		add = append(add, l)
		out = append(out, Link{Tier: t, URL: base + "/s/" + r.id + "#k=" + secret, ExpiresAt: e, Transport: TransportDirect})
	}
	for _, l := range inherit {
		l.inherited = true
		add = append(add, l)
	}
	if s.st != nil {
		rows := make([]store.ShareLink, len(add))
		for i, l := range add {
			rows[i] = store.ShareLink{Hash: hex.EncodeToString(l.hash[:]), Tier: l.tier.String(), ExpiresAt: l.expires, Inherited: l.inherited}
		}
		if err := s.st.AddShareLinks(ctx, store.ShareRoom{ID: r.id, SessionID: sid, CreatedAt: s.cfg.Now()}, rows); err != nil {
			return nil, "", fmt.Errorf("store share links: %w", err)
		}
	}
	r.add(add)
	if fresh {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, "", ErrClosed
		}
		s.rooms[r.id], s.bySession[sid] = r, r
		s.mu.Unlock()
	}
	s.log.Info("share started", "session", sid, "room", r.id, "links", len(out), "inherited", len(inherit))
	return out, r.id, nil
}

// listen starts the HTTP server once.
func (s *Server) listen(ctx context.Context) error {
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	s.mu.Lock()
	started, closed := s.srv != nil, s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case started:
		return nil
	}
	ln, err := s.bind(ctx)
	if err != nil {
		return fmt.Errorf("share listener: %w", err)
	}
	if s.st != nil {
		if err := s.st.Put(ctx, listenKey, ln.Addr().String()); err != nil {
			s.log.Warn("cannot remember the share listener's address", "err", err)
		}
	}
	lim := s.cfg.limits()
	lln := newLimitListener(ln, lim.conns, lim.connsPerAddr)
	ln = lln
	allow := newHostAllow(ln.Addr().String(), s.cfg.BaseURL)
	srv := &http.Server{Handler: allow.wrap(s.handler()),
		ReadHeaderTimeout: lim.readHeader, ReadTimeout: lim.read, WriteTimeout: lim.write, IdleTimeout: lim.idle,
		MaxHeaderBytes: MaxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	s.srv, s.lln = srv, lln
	s.base = s.cfg.BaseURL
	if s.base == "" {
		s.base = "http://" + ln.Addr().String()
	}
	s.unsub = s.cfg.Manager.Subscribe(s.publish)
	s.mu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("share server stopped", "err", err)
		}
	}()
	s.log.Info("share server listening", "addr", ln.Addr().String())
	return nil
}

// bind listens on the configured address. When its port is 0 it first
// tries the port the listener had last time, so that links minted before
// a restart still point at it.
func (s *Server) bind(ctx context.Context) (net.Listener, error) {
	host, port, err := net.SplitHostPort(s.cfg.Listen)
	if err == nil && port == "0" && s.st != nil {
		if prev, ok, _ := s.st.Get(ctx, listenKey); ok {
			if _, pport, err := net.SplitHostPort(prev); err == nil && pport != "0" {
				if ln, err := net.Listen("tcp", net.JoinHostPort(host, pport)); err == nil {
					return ln, nil
				}
				s.log.Warn("the share listener's previous port is taken; links minted before the restart will not reach it", "port", pport)
			}
		}
	}
	return net.Listen("tcp", s.cfg.Listen)
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
		var d event.Forked
		// Not on the emitting goroutine: Handoff reads the fork session
		// and both write the store.
		if err := json.Unmarshal(ev.Data, &d); err != nil || d.Fork == "" {
			go s.HandoffFailed(ev.Session, "the fork event names no session")
			return
		}
		go func() {
			if err := s.Handoff(context.Background(), ev.Session, d.Fork); err != nil {
				s.log.Warn("share handoff to fork failed", "session", ev.Session, "fork", d.Fork, "err", err)
			}
		}()
	}
}

// Links returns the live (unexpired) links of session sid, without URLs,
// weakest tier first; nil if it is not shared. Links inherited from a
// handed-off room are not listed.
// Following returns the links serving sid now: its own while it is
// shared, or, after a Worktree handoff moved its share to the fork, the
// fork's (following each fork on, at most [maxHops]), with the session
// they belong to. It returns sid and nil when nothing is shared.
func (s *Server) Following(ctx context.Context, sid string) (owner string, links []Link) {
	owner = sid
	for range maxHops {
		if ls := s.Links(owner); ls != nil {
			return owner, ls
		}
		if s.cfg.Manager == nil {
			break
		}
		sess, err := s.cfg.Manager.Get(ctx, owner)
		if err != nil || sess.Info().ForkedTo == "" {
			break
		}
		owner = sess.Info().ForkedTo
	}
	return sid, nil
}

func (s *Server) Links(sid string) []Link {
	s.loadNow()
	s.mu.Lock()
	r := s.bySession[sid]
	s.mu.Unlock()
	now := s.cfg.Now()
	relayed := s.relay.linksOf(sid, now)
	if r == nil && relayed == nil {
		return nil
	}
	var out []Link
	if r != nil {
		out = r.live(now)
	}
	out = append(out, relayed...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Tier < out[j].Tier })
	return out
}

// loadNow loads the stored rooms for a method without a context; a
// failure is logged and retried on next use.
func (s *Server) loadNow() {
	if err := s.load(context.Background()); err != nil {
		s.log.Error("share rooms", "err", err)
	}
}

// Stop ends sharing of session sid: every link dies at once, in the store
// too, and open streams are closed with a notice. It reports whether the
// session was shared.
func (s *Server) Stop(sid string) bool {
	e := ending{Reason: "stopped", Message: "The host stopped sharing this session."}
	relayed := s.relay.stop(sid, e)
	return s.end(sid, e, nil, "", true) || relayed
}

// Handoff moves the share of oldSID to its Worktree fork newSID: the fork is
// shared at the same tiers with the same expiry, every page connected to
// the old room gets an "open" event carrying the link of its own tier, and
// the old room ends with a continuation notice. The old room's unexpired
// links also open the fork's room, so a page that was not connected then
// (or after a restart) is shown its Open link when it reconnects. If the
// fork cannot be shared, the old room ends with a handoff-failed notice
// (see [Server.HandoffFailed]) and the error is returned. The server calls
// it itself when a shared session emits its "forked" event.
func (s *Server) Handoff(ctx context.Context, oldSID, newSID string) error {
	if err := s.load(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	r := s.bySession[oldSID]
	s.mu.Unlock()
	if r == nil {
		return ErrNotShared
	}
	now := s.cfg.Now()
	exp := map[Tier]time.Time{}
	for _, l := range r.live(now) {
		if l.ExpiresAt.After(exp[l.Tier]) {
			exp[l.Tier] = l.ExpiresAt
		}
	}
	if len(exp) == 0 {
		s.HandoffFailed(oldSID, "every link of the old room has expired")
		return fmt.Errorf("hand off share of %s: no live links", oldSID)
	}
	links, forkRoom, err := s.share(ctx, newSID, exp, r.unexpired(now))
	if err != nil {
		s.HandoffFailed(oldSID, err.Error())
		return fmt.Errorf("share the fork %s: %w", newSID, err)
	}
	open := map[Tier]Link{}
	for _, l := range links {
		open[l.Tier] = l
	}
	s.end(oldSID, ending{Reason: "handoff", Message: "This session continues in a Worktree fork."}, open, forkRoom, true)
	return nil
}

// HandoffFailed ends the room of session sid with a notice that the Worktree
// fork could not be shared (the native handoff still completes in Emacs).
// It reports whether the session was shared.
func (s *Server) HandoffFailed(sid, reason string) bool {
	return s.end(sid, ending{Reason: "handoff_failed",
		Message: "The Worktree fork could not be shared (" + reason + "). The implementation continues in Emacs; ask the host for a new link."}, nil, "", true)
}

// end removes the room of sid, remembers why (in the store too when
// persist is set) and closes its streams. cont is the room a Worktree
// handoff continues in; the ended room then keeps its links' hashes to
// show their holders the way there.
func (s *Server) end(sid string, e ending, open map[Tier]Link, cont string, persist bool) bool {
	s.loadNow()
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	r := s.bySession[sid]
	s.mu.Unlock()
	if r == nil {
		return false
	}
	at := s.cfg.Now()
	if persist && s.st != nil {
		err := s.st.EndShareRoom(context.Background(), r.id, store.ShareEnding{Reason: e.Reason, Message: e.Message,
			ContinueRoom: cont, ContinueSession: s.sessionOf(cont), KeepLinks: cont != "", At: at})
		if err != nil {
			// The room still ends now; a restart would bring it back.
			s.log.Error("cannot store the end of a share; it ends until planbridge restarts", "session", sid, "room", r.id, "err", err)
		}
	}
	// The room ends and becomes a tombstone in one step (s.mu before the
	// room's lock): a request in between would find a live room without
	// links and be told its link is not valid (401), instead of that the
	// share ended and where it continues (410).
	s.mu.Lock()
	old := r.end(e, open)
	t := tomb{why: e, at: at}
	if cont != "" {
		t.cont, t.links = cont, old
	}
	if s.bySession[sid] == r {
		delete(s.bySession, sid)
	}
	delete(s.rooms, r.id)
	if len(s.ended) >= maxTombstones {
		for k := range s.ended {
			delete(s.ended, k)
			break
		}
	}
	s.ended[r.id] = t
	s.mu.Unlock()
	s.log.Info("share ended", "session", sid, "room", r.id, "reason", e.Reason)
	return true
}

// sessionOf returns the session of live room id ("" if none).
func (s *Server) sessionOf(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rooms[id]; r != nil {
		return r.session
	}
	return ""
}

// Close ends every room in this process (the store keeps them live for the
// next one: [Server.Restore]) and shuts the HTTP server down.
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
		s.end(sid, ending{Reason: "closed", Message: "planbridge stopped."}, nil, "", false)
	}
	if unsub != nil {
		unsub()
	}
	s.relay.close(ctx)
	if srv == nil {
		return nil
	}
	if err := srv.Shutdown(ctx); err != nil {
		return srv.Close()
	}
	return nil
}

// lookup returns the live room id, or why it ended.
func (s *Server) lookup(id string) (*room, tomb, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rooms[id]; r != nil {
		return r, tomb{}, true
	}
	t, ok := s.ended[id]
	return nil, t, ok
}

// continuation returns the Open link for key presented to the ended room
// t: the live room the handoff chain ends in, with the same key (which
// that room inherited), or nil.
func (s *Server) continuation(t tomb, key string) *Link {
	now := s.cfg.Now()
	if t.cont == "" {
		return nil
	}
	if _, res := match(t.links, key, now); res != authOK {
		return nil
	}
	id := t.cont
	for range maxHops {
		r, next, ok := s.lookup(id)
		switch {
		case !ok:
			return nil
		case r != nil:
			l, res := r.auth(key, now)
			if res != authOK {
				return nil
			}
			return &Link{Tier: l.tier, URL: s.Addr() + "/s/" + r.id + "#k=" + key, ExpiresAt: l.expires, Transport: TransportDirect}
		case next.cont == "":
			return nil
		}
		id = next.cont
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}
