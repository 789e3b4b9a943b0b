package share

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"planbridge/internal/session"
	"planbridge/relay"
)

// Relay limits on the host side.
const (
	relayOutbox      = 1024             // sealed frames waiting for the relay
	relayBatch       = 32               // frames per POST
	relayPages       = 4096             // pages a room remembers counters of
	relayFresh       = 10 * time.Minute // a mutating frame's time may differ from ours by this much
	relayForget      = 2 * relayFresh   // a page's counter is kept this long after its last frame
	relayActions     = 4                // actions a room runs at once
	relayMaxBackoff  = 5 * time.Second
	relayRequestBody = 1 << 20
)

// ErrBadRelay is returned for an unusable relay URL.
var ErrBadRelay = errors.New("invalid relay URL")

// TransportRelay and TransportDirect name how a [Link] reaches the host.
const (
	TransportDirect = "direct"
	TransportRelay  = "relay"
)

// relayOps are the actions a page may send through a relay, with the tier
// each needs: the HTTP routes' table (see handler), plus hello.
var relayOps = map[string]struct {
	min Tier
	h   func(*Server) func(http.ResponseWriter, *http.Request, guest)
	// mutating ops must be fresh (see relayFresh)
	mutating bool
}{
	"state":    {View, func(s *Server) func(http.ResponseWriter, *http.Request, guest) { return s.state }, false},
	"feedback": {Full, func(s *Server) func(http.ResponseWriter, *http.Request, guest) { return s.feedback }, true},
	"prompt":   {Full, func(s *Server) func(http.ResponseWriter, *http.Request, guest) { return s.prompt }, true},
	"accept":   {Full, func(s *Server) func(http.ResponseWriter, *http.Request, guest) { return s.accept }, true},
}

// relayHost holds the rooms this server shares through relays. The zero
// value is ready.
type relayHost struct {
	mu     sync.Mutex // guards the fields below
	rooms  map[string]*relayRoom
	unsub  func()
	closed bool
}

// relayRoom is one session shared through a relay.
type relayRoom struct {
	s        *Server
	keys     relayKeys
	sid      string
	ws       string // the session's workspace, hidden from pages ([hidePaths])
	base     string // the relay's scheme://host[:port]
	tiers    []Tier
	expires  time.Time
	ctx      context.Context
	cancel   context.CancelFunc
	out      chan downMsg
	lost     atomic.Bool // a frame was dropped before sealing: skip a seq so pages notice
	sem      chan struct{}
	finished chan struct{} // closed when the sender has said goodbye to the relay
	once     sync.Once
	ready    chan struct{} // closed when the relay first opened the inbox stream (the room exists there)
	readyOne sync.Once
	lastErr  atomic.Value  // string: why the relay last refused or failed
	failed   chan struct{} // closed when the relay failed before the room was ready
	failOne  sync.Once

	mu    sync.Mutex // guards the fields below
	seq   int64
	pages map[string]pageSeen
	done  bool
}

// pageSeen is the last counter a page used.
type pageSeen struct {
	n  int64
	at time.Time
}

// downMsg is a plaintext host→page frame waiting to be sealed under key
// label k ("s" for the stream key, a tier name for that tier's reply key).
// final ends the room at the relay after it is sent.
type downMsg struct {
	k     string
	plain []byte
	final bool
}

// CheckRelayURL checks a relay URL: https://host[:port], or http:// only
// to a loopback address (a page refuses to derive keys on a plain-HTTP
// origin anywhere else, and browsers give it no WebCrypto there). It
// returns the URL without a trailing slash.
func CheckRelayURL(raw string) (string, error) {
	u, err := CheckBaseURL(raw)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadRelay, err)
	}
	p, _ := url.Parse(u)
	if p.Scheme == "http" && !loopbackHost(p.Hostname()) {
		return "", fmt.Errorf("%w %q: a relay off this machine must be https:// (the link secrets must not cross a network in the clear)", ErrBadRelay, raw)
	}
	return u, nil
}

// loopbackHost reports whether host names this machine.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// StartRelay shares session sid through the relay at relayURL: a new room
// with a fresh owner secret, one link per tier in want (all three when
// empty), valid for ttl (as [Server.Start]). The links point at the relay
// and carry their tier's secret in the fragment; the relay learns only
// the room id. This process keeps the keys in memory only: a restart of
// planbridge ends relay rooms (a restart of the relay does not).
func (s *Server) StartRelay(ctx context.Context, sid, relayURL string, want []Tier, ttl time.Duration) ([]Link, error) {
	base, err := CheckRelayURL(relayURL)
	if err != nil {
		return nil, err
	}
	if len(want) == 0 {
		want = tiers[:]
	}
	if ttl < 0 || ttl > MaxTTL {
		return nil, fmt.Errorf("%w: %s (want up to %s, or 0 for the default)", ErrBadTTL, ttl, MaxTTL)
	}
	if ttl == 0 {
		ttl = s.cfg.TTL
	}
	for _, t := range want {
		if t < View || t > Owner {
			return nil, fmt.Errorf("%w %d", ErrBadTier, int(t))
		}
	}
	if _, err := s.cfg.Manager.Get(ctx, sid); err != nil {
		return nil, err
	}
	rr, err := s.relay.open(s, sid, base, want, s.cfg.Now().Add(ttl))
	if err != nil {
		return nil, err
	}
	if err := rr.waitReady(ctx); err != nil {
		s.relay.end(rr, ending{Reason: "closed", Message: "The relay did not answer."}, nil)
		return nil, err
	}
	s.log.Info("share started through a relay", "session", sid, "room", rr.keys.room, "relay", base, "links", len(want))
	return rr.links(), nil
}

func (h *relayHost) open(s *Server, sid, base string, want []Tier, expires time.Time) (*relayRoom, error) {
	sess, err := s.cfg.Manager.Get(context.Background(), sid)
	if err != nil {
		return nil, err
	}
	owner := make([]byte, relaySecretBytes)
	rand.Read(owner)
	keys := newRelayKeys(owner)
	for _, sec := range keys.secrets {
		s.cfg.Redact.Add(base64.RawURLEncoding.EncodeToString(sec)) // never in an event, a stored row or a log line
	}
	ctx, cancel := context.WithCancel(context.Background())
	rr := &relayRoom{s: s, keys: keys, sid: sid, ws: sess.Info().Workspace, base: base, expires: expires, ctx: ctx, cancel: cancel,
		out: make(chan downMsg, relayOutbox), sem: make(chan struct{}, relayActions), finished: make(chan struct{}),
		ready: make(chan struct{}), failed: make(chan struct{}), pages: map[string]pageSeen{}}
	for _, t := range tiers {
		for _, w := range want {
			if w == t {
				rr.tiers = append(rr.tiers, t)
			}
		}
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		cancel()
		return nil, ErrClosed
	}
	if h.rooms == nil {
		h.rooms = map[string]*relayRoom{}
	}
	h.rooms[rr.keys.room] = rr
	if h.unsub == nil {
		h.unsub = s.cfg.Manager.Subscribe(func(ev session.Event) { h.publish(s, ev) })
	}
	h.mu.Unlock()
	go rr.send()
	go rr.receive()
	go func() {
		t := time.NewTimer(time.Until(expires))
		defer t.Stop()
		select {
		case <-t.C:
			h.end(rr, ending{Reason: "expired", Message: "This link has expired; ask the host for a new one."}, nil)
		case <-ctx.Done():
		}
	}()
	return rr, nil
}

// relayAnswer bounds how long sharing waits for the relay to open the room.
const relayAnswer = 10 * time.Second

// waitReady waits until the relay holds the room (so a page that opens a
// link finds it), or fails with why the relay did not answer.
func (rr *relayRoom) waitReady(ctx context.Context) error {
	t := time.NewTimer(relayAnswer)
	defer t.Stop()
	select {
	case <-rr.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-rr.failed:
	case <-t.C:
	}
	why, _ := rr.lastErr.Load().(string)
	return fmt.Errorf("the relay at %s did not open the room: %s", rr.base, why)
}

// links returns the room's links with their URLs.
func (rr *relayRoom) links() []Link {
	out := make([]Link, 0, len(rr.tiers))
	for _, t := range rr.tiers {
		out = append(out, Link{Tier: t, URL: rr.url(t), ExpiresAt: rr.expires, Transport: TransportRelay})
	}
	return out
}

func (rr *relayRoom) url(t Tier) string {
	return rr.base + "/r/" + rr.keys.room + "#k=" + base64.RawURLEncoding.EncodeToString(rr.keys.secrets[t]) + "&t=" + t.String()
}

// roomsOf returns the live relay rooms of session sid.
func (h *relayHost) roomsOf(sid string) []*relayRoom {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*relayRoom
	for _, rr := range h.rooms {
		if rr.sid == sid {
			out = append(out, rr)
		}
	}
	return out
}

// linksOf returns the unexpired relay links of sid, without URLs.
func (h *relayHost) linksOf(sid string, now time.Time) []Link {
	var out []Link
	for _, rr := range h.roomsOf(sid) {
		if now.Before(rr.expires) {
			for _, t := range rr.tiers {
				out = append(out, Link{Tier: t, ExpiresAt: rr.expires, Transport: TransportRelay})
			}
		}
	}
	return out
}

// stop ends every relay room of sid; it reports whether there was one.
func (h *relayHost) stop(sid string, e ending) bool {
	rooms := h.roomsOf(sid)
	for _, rr := range rooms {
		h.end(rr, e, nil)
	}
	return len(rooms) > 0
}

// end sends the room's pages e (and each tier its open link, if any),
// then removes the room from the relay and forgets its keys.
func (h *relayHost) end(rr *relayRoom, e ending, open map[Tier]Link) {
	h.mu.Lock()
	if h.rooms[rr.keys.room] != rr {
		h.mu.Unlock()
		return
	}
	delete(h.rooms, rr.keys.room)
	h.mu.Unlock()
	rr.mu.Lock()
	rr.done = true
	rr.mu.Unlock()
	for t, l := range open {
		rr.enqueueWait(t.String(), map[string]any{"t": "open", "open": l})
	}
	rr.enqueueFinal(map[string]any{"t": "ended", "ended": e})
	rr.s.log.Info("share through a relay ended", "session", rr.sid, "room", rr.keys.room, "reason", e.Reason)
}

// close ends every relay room (planbridge is stopping) and waits briefly
// for the relays to hear it.
func (h *relayHost) close(ctx context.Context) {
	h.mu.Lock()
	h.closed = true
	rooms := make([]*relayRoom, 0, len(h.rooms))
	for _, rr := range h.rooms {
		rooms = append(rooms, rr)
	}
	unsub := h.unsub
	h.mu.Unlock()
	if unsub != nil {
		unsub()
	}
	for _, rr := range rooms {
		h.end(rr, ending{Reason: "closed", Message: "planbridge stopped."}, nil)
	}
	for _, rr := range rooms {
		select {
		case <-rr.finished:
		case <-ctx.Done():
		}
		rr.cancel()
	}
}

// publish seals a session event for the pages of every relay room of its
// session. It runs on the session's emitting goroutine and never blocks.
// A "forked" event hands the rooms over to the fork, as for direct links.
func (h *relayHost) publish(s *Server, ev session.Event) {
	rooms := h.roomsOf(ev.Session)
	for _, rr := range rooms {
		e := ev
		e.Data = hidePaths(e.Data, rr.ws)
		rr.enqueue("s", map[string]any{"t": "event", "ev": e})
	}
	if ev.Kind != "forked" || len(rooms) == 0 {
		return
	}
	var d struct {
		Fork string `json:"fork"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	go func() {
		for _, rr := range rooms {
			h.handoff(s, rr, d.Fork)
		}
	}()
}

// handoff shares fork through the same relay at rr's tiers and expiry,
// sends each tier its open link and ends rr.
func (h *relayHost) handoff(s *Server, rr *relayRoom, fork string) {
	fail := func(reason string) {
		h.end(rr, ending{Reason: "handoff_failed", Message: "The Worktree fork could not be shared (" + reason +
			"). The implementation continues in Emacs; ask the host for a new link."}, nil)
	}
	if fork == "" {
		fail("the fork event names no session")
		return
	}
	if _, err := s.cfg.Manager.Get(context.Background(), fork); err != nil {
		fail(err.Error())
		return
	}
	next, err := h.open(s, fork, rr.base, rr.tiers, rr.expires)
	if err == nil {
		if err = next.waitReady(context.Background()); err != nil {
			h.end(next, ending{Reason: "closed", Message: "The relay did not answer."}, nil)
		}
	}
	if err != nil {
		fail(err.Error())
		return
	}
	open := map[Tier]Link{}
	for _, l := range next.links() {
		open[l.Tier] = l
	}
	h.end(rr, ending{Reason: "handoff", Message: "This session continues in a Worktree fork."}, open)
}

// maxPlain is the largest plaintext frame: sealed and in base64 it stays
// within the relay's default frame limit.
const maxPlain = relay.DefaultMaxFrame/4*3 - 64

// encode marshals frame v with the host's clock; a frame too large for
// the relay is replaced by a short one saying so.
func (rr *relayRoom) encode(v map[string]any) []byte {
	b, err := json.Marshal(withNow(v, rr.s.cfg.Now()))
	if err == nil && len(b) <= maxPlain {
		return b
	}
	if err != nil {
		rr.s.log.Error("relay frame not encodable", "err", err)
	}
	small := map[string]any{"t": v["t"], "page": v["page"], "id": v["id"]}
	switch v["t"] {
	case "reply":
		small["status"] = http.StatusRequestEntityTooLarge
		small["body"] = map[string]string{"code": "too_large", "error": "the answer is too large for the relay: use Emacs"}
	case "event":
		ev, _ := v["ev"].(session.Event)
		ev.Kind, ev.Data = "notice", json.RawMessage(`{"message":"An event too large for the relay was left out."}`)
		small["ev"] = ev
	}
	b, _ = json.Marshal(withNow(small, rr.s.cfg.Now()))
	return b
}

// enqueue queues v for sealing under key label k without blocking (it
// runs on the session's emitting goroutine). A full outbox drops it and
// marks the loss, so the next frame skips a seq and pages resynchronise.
func (rr *relayRoom) enqueue(k string, v map[string]any) {
	select {
	case rr.out <- downMsg{k: k, plain: rr.encode(v)}:
	default:
		rr.lost.Store(true)
	}
}

// enqueueWait queues v, waiting for room in the outbox (answers and
// replays, which run on their own goroutines).
func (rr *relayRoom) enqueueWait(k string, v map[string]any) {
	select {
	case rr.out <- downMsg{k: k, plain: rr.encode(v)}:
	case <-rr.ctx.Done():
	}
}

// enqueueFinal queues the last frame; it waits for room in the outbox.
func (rr *relayRoom) enqueueFinal(v map[string]any) {
	select {
	case rr.out <- downMsg{k: "s", plain: rr.encode(v), final: true}:
	case <-time.After(5 * time.Second):
		rr.cancel()
	}
}

// withNow adds the host's clock (Unix ms) to a frame, so pages date
// their requests in host time.
func withNow(v map[string]any, now time.Time) map[string]any {
	v["now"] = now.UnixMilli()
	return v
}

// send seals and posts queued frames in batches, in order. A batch the
// relay does not take is dropped: pages see the gap in seq (or reconnect
// after a relay restart) and ask for what they missed (hello).
func (rr *relayRoom) send() {
	defer rr.once.Do(func() { close(rr.finished) })
	backoff := 100 * time.Millisecond
	for {
		var batch []relay.Frame
		final := false
		select {
		case m := <-rr.out:
			batch, final = append(batch, rr.seal(m)), m.final
		case <-rr.ctx.Done():
			return
		}
	fill:
		for len(batch) < relayBatch && !final {
			select {
			case m := <-rr.out:
				batch, final = append(batch, rr.seal(m)), m.final
			default:
				break fill
			}
		}
		if err := rr.post(batch); err != nil {
			if rr.ctx.Err() != nil {
				return
			}
			rr.s.log.Warn("relay did not take frames; pages will resynchronise", "room", rr.keys.room, "frames", len(batch), "err", err)
			if final {
				break
			}
			select {
			case <-time.After(backoff):
			case <-rr.ctx.Done():
				return
			}
			backoff = min(2*backoff, relayMaxBackoff)
			continue
		}
		backoff = 100 * time.Millisecond
		if final {
			break
		}
	}
	// Stop receiving first: an inbox stream reconnecting after the
	// removal would open the room again.
	rr.cancel()
	rr.remove()
}

// seal assigns the next seq and seals m.
func (rr *relayRoom) seal(m downMsg) relay.Frame {
	rr.mu.Lock()
	if rr.lost.Swap(false) {
		rr.seq++
	}
	rr.seq++
	seq := rr.seq
	rr.mu.Unlock()
	aead := rr.keys.stream
	if m.k != "s" {
		t, _ := ParseTier(m.k)
		aead = rr.keys.reply[t]
	}
	c := aead.Seal(nil, downNonce(seq), m.plain, downAAD(rr.keys.room, m.k, seq))
	return relay.Frame{Seq: seq, K: m.k, C: base64.StdEncoding.EncodeToString(c)}
}

func (rr *relayRoom) request(method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(rr.ctx, method, rr.base+"/r/"+rr.keys.room+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set(relay.HostHeader, base64.RawURLEncoding.EncodeToString(rr.keys.host))
	return req, nil
}

func (rr *relayRoom) post(batch []relay.Frame) error {
	b, _ := json.Marshal(batch)
	req, err := rr.request(http.MethodPost, "/down", bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	ctx, cancel := context.WithTimeout(rr.ctx, 15*time.Second)
	defer cancel()
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	io.Copy(io.Discard, io.LimitReader(res.Body, 4096))
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("relay answered %s", res.Status)
	}
	return nil
}

// remove tells the relay the room is over (best effort).
func (rr *relayRoom) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, rr.base+"/r/"+rr.keys.room, nil)
	if err != nil {
		return
	}
	req.Header.Set(relay.HostHeader, base64.RawURLEncoding.EncodeToString(rr.keys.host))
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
	}
}

// receive holds the relay's inbox stream open, reconnecting with backoff,
// and hands each page frame to handle.
func (rr *relayRoom) receive() {
	backoff := 100 * time.Millisecond
	for rr.ctx.Err() == nil {
		ok := rr.receiveOnce()
		if rr.ctx.Err() != nil {
			return
		}
		if ok {
			backoff = 100 * time.Millisecond
		}
		select {
		case <-time.After(backoff):
		case <-rr.ctx.Done():
			return
		}
		backoff = min(2*backoff, relayMaxBackoff)
	}
}

// receiveOnce reads one inbox stream until it ends; it reports whether
// the stream was opened.
func (rr *relayRoom) receiveOnce() bool {
	req, err := rr.request(http.MethodGet, "/inbox", nil)
	if err != nil {
		return false
	}
	fail := func(why string) {
		rr.lastErr.Store(why)
		select {
		case <-rr.ready:
		default:
			rr.failOne.Do(func() { close(rr.failed) })
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		fail(err.Error())
		return false
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		fail("it answered " + res.Status)
		rr.s.log.Warn("relay refused the inbox stream", "room", rr.keys.room, "status", res.Status)
		return false
	}
	rr.readyOne.Do(func() { close(rr.ready) })
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), relayRequestBody)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		// Opened and admitted here, in the relay's order, so a page's
		// counters are checked in the order it sent them; the action
		// then runs on its own goroutine.
		tier, page, req, ok := rr.admitFrame([]byte(line))
		if !ok {
			continue
		}
		select {
		case rr.sem <- struct{}{}:
		case <-rr.ctx.Done():
			return true
		}
		go func() {
			defer func() { <-rr.sem }()
			rr.act(tier, page, req)
		}()
	}
	return true
}

// relayRequest is the plaintext of a page→host frame.
type relayRequest struct {
	Op   string          `json:"op"`
	ID   int64           `json:"id"`
	Body json.RawMessage `json:"body,omitempty"`
}

// admitFrame opens and checks one page frame. A frame no tier's key
// opens (forged, or sealed for another room), a replayed counter, and a
// stale mutating frame are dropped without an answer and logged without
// their content.
func (rr *relayRoom) admitFrame(raw []byte) (Tier, string, relayRequest, bool) {
	var f upFrame
	iv, cerr := []byte(nil), error(nil)
	if err := json.Unmarshal(raw, &f); err == nil {
		iv, cerr = base64.StdEncoding.DecodeString(f.IV)
	}
	c, err := base64.StdEncoding.DecodeString(f.C)
	if err != nil || cerr != nil || len(iv) != 12 || f.N <= 0 || len(f.Page) != 22 {
		rr.reject("malformed")
		return 0, "", relayRequest{}, false
	}
	var tier Tier
	var plain []byte
	for _, t := range []Tier{Owner, Full, View} {
		if p, err := rr.keys.action[t].Open(nil, iv, c, upAAD(rr.keys.room, t, f)); err == nil {
			tier, plain = t, p
			break
		}
	}
	if tier == 0 {
		rr.reject("forged")
		return 0, "", relayRequest{}, false
	}
	var req relayRequest
	if err := json.Unmarshal(plain, &req); err != nil {
		rr.reject("undecodable")
		return 0, "", relayRequest{}, false
	}
	now := rr.s.cfg.Now()
	op, known := relayOps[req.Op]
	if known && op.mutating {
		if d := now.Sub(time.UnixMilli(f.TS)); d > relayFresh || d < -relayFresh {
			rr.reject("stale")
			return 0, "", relayRequest{}, false
		}
	}
	switch rr.admit(f, now) {
	case admitReplay:
		rr.reject("replayed")
		return 0, "", relayRequest{}, false
	case admitFull:
		go rr.reply(tier, f.Page, req.ID, http.StatusTooManyRequests, map[string]string{"code": "too_many_pages", "error": "too many pages are open on this share"})
		return 0, "", relayRequest{}, false
	}
	return tier, f.Page, req, true
}

// act answers an admitted request, through the HTTP route's own handler.
func (rr *relayRoom) act(tier Tier, page string, req relayRequest) {
	op, known := relayOps[req.Op]
	if rr.s.cfg.Now().After(rr.expires) {
		rr.reply(tier, page, req.ID, http.StatusGone, map[string]any{"code": "expired", "error": "this link has expired; ask the host for a new one",
			"ended": ending{Reason: "expired", Message: "This link has expired; ask the host for a new one."}})
		return
	}
	if req.Op == "hello" {
		// Answered after the replay, through the same ordered outbox: a
		// page that has the answer has every replayed event.
		rr.hello(req.Body)
		rr.reply(tier, page, req.ID, http.StatusOK, map[string]bool{"ok": true})
		return
	}
	if !known {
		rr.reply(tier, page, req.ID, http.StatusNotFound, map[string]string{"code": "not_found", "error": "no such action"})
		return
	}
	if tier < op.min {
		rr.reply(tier, page, req.ID, http.StatusForbidden, map[string]string{"code": "forbidden", "error": fmt.Sprintf("a %s link cannot do this", tier)})
		return
	}
	sess, err := rr.s.cfg.Manager.Get(rr.ctx, rr.sid)
	if err != nil {
		rr.reply(tier, page, req.ID, http.StatusNotFound, map[string]string{"code": "not_found", "error": "the session is gone"})
		return
	}
	// The very handler the HTTP route runs, on a recorded response.
	body := req.Body
	if len(body) == 0 {
		body = []byte("{}")
	}
	hr, _ := http.NewRequestWithContext(rr.ctx, http.MethodPost, "/", bytes.NewReader(body))
	w := &recorder{h: http.Header{}}
	op.h(rr.s)(w, hr, guest{sess: sess, tier: tier, expires: rr.expires})
	if w.status == 0 {
		w.status = http.StatusOK
	}
	rr.reply(tier, page, req.ID, w.status, json.RawMessage(bytes.TrimSpace(w.b.Bytes())))
}

type admitResult int

const (
	admitOK admitResult = iota
	admitReplay
	admitFull
)

// admit records page f.Page's counter; a counter not above the last one
// is a replay.
func (rr *relayRoom) admit(f upFrame, now time.Time) admitResult {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	p, seen := rr.pages[f.Page]
	if seen && f.N <= p.n {
		return admitReplay
	}
	if !seen && len(rr.pages) >= relayPages {
		for id, q := range rr.pages {
			if now.Sub(q.at) > relayForget {
				delete(rr.pages, id)
			}
		}
		if len(rr.pages) >= relayPages {
			return admitFull
		}
	}
	rr.pages[f.Page] = pageSeen{n: f.N, at: now}
	return admitOK
}

func (rr *relayRoom) reject(why string) {
	rr.s.log.Warn("relay frame rejected", "room", rr.keys.room, "why", why)
}

// reply seals an answer for the pages of tier t; page picks it up by id.
func (rr *relayRoom) reply(t Tier, page string, id int64, status int, body any) {
	rr.enqueueWait(t.String(), map[string]any{"t": "reply", "page": page, "id": id, "status": status, "body": body})
}

// hello replays the session's persisted events after since to the room
// (pages drop those they have by seq).
func (rr *relayRoom) hello(raw json.RawMessage) {
	var p struct {
		Since int64 `json:"since"`
	}
	_ = json.Unmarshal(raw, &p)
	sess, err := rr.s.cfg.Manager.Get(rr.ctx, rr.sid)
	if err != nil {
		return
	}
	evs, err := sess.Events(rr.ctx, p.Since)
	if err != nil {
		rr.s.log.Warn("relay hello: events", "room", rr.keys.room, "err", err)
		return
	}
	for _, ev := range evs {
		ev.Data = hidePaths(ev.Data, rr.ws)
		rr.enqueueWait("s", map[string]any{"t": "event", "ev": ev})
	}
}

// recorder is the ResponseWriter a relayed action's handler writes to.
type recorder struct {
	h      http.Header
	status int
	b      bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.h }
func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.b.Len()+len(p) > relayRequestBody {
		return 0, errors.New("reply too large")
	}
	return r.b.Write(p)
}
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
