package relay

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HostHeader carries the host token on the host's requests.
const HostHeader = "X-Relay-Host"

// Defaults for [Config]; a zero field takes its default.
const (
	DefaultMaxFrame       = 256 << 10 // bytes of one sealed frame as sent
	DefaultRingFrames     = 1024      // sealed frames a room keeps for resuming pages
	DefaultRingBytes      = 8 << 20   // bytes a room's ring keeps
	DefaultInboxFrames    = 64        // page→host frames waiting for the host
	DefaultStreamsPerRoom = 64        // page streams per room
	DefaultStreamsPerAddr = 32        // page streams per client address, all rooms
	DefaultRoomsPerAddr   = 64        // rooms one address may create
	DefaultMaxRooms       = 4096
	DefaultSendRate       = 20 // page→host frames per second per address
	DefaultSendBurst      = 40
	DefaultHostGone       = 5 * time.Minute // a room without its host this long is forgotten
	DefaultPing           = 15 * time.Second
)

// Config configures a [Relay]. Limits left zero take the Default values.
type Config struct {
	// Page holds the share page: "page.html" and "assets/NAME" files by
	// name. The relay serves them as they are; they carry no data.
	Page map[string][]byte

	MaxFrame       int
	RingFrames     int
	RingBytes      int
	InboxFrames    int
	StreamsPerRoom int
	StreamsPerAddr int
	RoomsPerAddr   int
	MaxRooms       int
	SendRate       float64
	SendBurst      int
	HostGone       time.Duration
	Ping           time.Duration

	// Debug serves GET /debug/dump: every byte the relay holds (tests
	// grep it for plaintext). Never enable it in production.
	Debug bool

	Logger *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// RoomID is the room id of a host token: the first 128 bits of
// SHA-256("planbridge relay room v1\x00" || token), base64url. The relay
// checks a host by recomputing it, so it needs no state to know who the
// host of a room is, and holds no token.
func RoomID(token []byte) string {
	h := sha256.New()
	h.Write([]byte("planbridge relay room v1\x00"))
	h.Write(token)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

// Frame is one host→page frame as the relay sees it: a sequence number
// the host assigned, a short key label and the sealed bytes. The relay
// only checks its shape and that Seq grows.
type Frame struct {
	Seq int64  `json:"seq"`
	K   string `json:"k"`
	C   string `json:"c"`
}

// Relay forwards sealed frames between a host and its pages. Safe for
// concurrent use.
type Relay struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex // guards the fields below
	rooms   map[string]*room
	ended   map[string]time.Time // rooms their host removed, bounded: pages are told 410, not 404
	addrs   map[string]*addrState
	closed  bool
	stopGC  chan struct{}
	gcOnce  sync.Once
	handler http.Handler
}

// addrState is what the relay counts per client address.
type addrState struct {
	streams int
	rooms   int
	tokens  float64
	last    time.Time
}

// room is one relayed share. Everything in it is sealed.
type room struct {
	id      string
	creator string // address that created it (for RoomsPerAddr)

	mu       sync.Mutex // guards the fields below
	ring     []Frame
	ringSize int
	lastSeq  int64
	streams  map[*stream]struct{}
	inbox    chan []byte // page→host frames, waiting (bounded) for the host's inbox stream
	hostConn int         // inbox streams open (0 or 1; a new one replaces the old)
	hostKick chan struct{}
	lastHost time.Time
	gone     bool
}

// stream is one page's event stream.
type stream struct {
	frames chan Frame
	lag    chan struct{} // closed when the page fell behind
	end    chan struct{} // closed when the room went away
}

// New returns a relay. Call [Relay.Close] to stop its janitor.
func New(cfg Config) *Relay {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.MaxFrame, DefaultMaxFrame)
	def(&cfg.RingFrames, DefaultRingFrames)
	def(&cfg.RingBytes, DefaultRingBytes)
	def(&cfg.InboxFrames, DefaultInboxFrames)
	def(&cfg.StreamsPerRoom, DefaultStreamsPerRoom)
	def(&cfg.StreamsPerAddr, DefaultStreamsPerAddr)
	def(&cfg.RoomsPerAddr, DefaultRoomsPerAddr)
	def(&cfg.MaxRooms, DefaultMaxRooms)
	def(&cfg.SendBurst, DefaultSendBurst)
	if cfg.SendRate <= 0 {
		cfg.SendRate = DefaultSendRate
	}
	if cfg.HostGone <= 0 {
		cfg.HostGone = DefaultHostGone
	}
	if cfg.Ping <= 0 {
		cfg.Ping = DefaultPing
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	r := &Relay{cfg: cfg, log: lg, rooms: map[string]*room{}, ended: map[string]time.Time{}, addrs: map[string]*addrState{}, stopGC: make(chan struct{})}
	r.handler = r.routes()
	go r.janitor()
	return r
}

// Close ends every room and stops the janitor.
func (rl *Relay) Close() {
	rl.gcOnce.Do(func() { close(rl.stopGC) })
	rl.mu.Lock()
	rl.closed = true
	rooms := rl.rooms
	rl.rooms = map[string]*room{}
	rl.mu.Unlock()
	for _, rm := range rooms {
		rm.drop()
	}
}

// ServeHTTP serves the relay's endpoints.
func (rl *Relay) ServeHTTP(w http.ResponseWriter, r *http.Request) { rl.handler.ServeHTTP(w, r) }

// contentSecurityPolicy is the share page's own: its script and style,
// fetches to this origin only.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

func (rl *Relay) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /r/{room}", rl.page)
	mux.HandleFunc("GET /assets/{name}", rl.asset)
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("POST /r/{room}/down", rl.hostOnly(rl.down))
	mux.HandleFunc("GET /r/{room}/inbox", rl.hostOnly(rl.inboxStream))
	mux.HandleFunc("DELETE /r/{room}", rl.hostOnly(rl.remove))
	mux.HandleFunc("GET /r/{room}/events", rl.events)
	mux.HandleFunc("POST /r/{room}/send", rl.send)
	if rl.cfg.Debug {
		mux.HandleFunc("GET /debug/dump", rl.dump)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})
}

func (rl *Relay) page(w http.ResponseWriter, r *http.Request) {
	if !validID(r.PathValue("room")) {
		http.NotFound(w, r)
		return
	}
	rl.serveFile(w, r, "page.html", "text/html; charset=utf-8")
}

func (rl *Relay) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var ctype string
	switch path.Ext(name) {
	case ".js":
		ctype = "text/javascript; charset=utf-8"
	case ".css":
		ctype = "text/css; charset=utf-8"
	default:
		http.NotFound(w, r)
		return
	}
	if name != path.Base(name) || strings.HasPrefix(name, ".") {
		http.NotFound(w, r)
		return
	}
	rl.serveFile(w, r, "assets/"+name, ctype)
}

func (rl *Relay) serveFile(w http.ResponseWriter, r *http.Request, name, ctype string) {
	b, ok := rl.cfg.Page[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Write(b)
}

// validID reports whether s looks like a [RoomID].
func validID(s string) bool {
	if len(s) != 22 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}

// clientAddr is the request's remote IP (no port).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// hostOnly checks the host token against the room id (constant time) and
// finds or, for down and inbox, creates the room.
func (rl *Relay) hostOnly(h func(http.ResponseWriter, *http.Request, *room)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("room")
		tok, err := base64.RawURLEncoding.DecodeString(r.Header.Get(HostHeader))
		if !validID(id) || err != nil || len(tok) < 16 || subtle.ConstantTimeCompare([]byte(RoomID(tok)), []byte(id)) != 1 {
			writeError(w, http.StatusForbidden, "not_host", "this request does not carry the room's host token")
			return
		}
		rm, status, msg := rl.hostRoom(id, clientAddr(r), r.Method != http.MethodDelete)
		if rm == nil {
			writeError(w, status, "refused", msg)
			return
		}
		h(w, r, rm)
	}
}

// hostRoom returns room id, creating it when create is set and the limits
// allow.
func (rl *Relay) hostRoom(id, addr string, create bool) (*room, int, string) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.closed {
		return nil, http.StatusServiceUnavailable, "the relay is shutting down"
	}
	if rm := rl.rooms[id]; rm != nil {
		rm.mu.Lock()
		rm.lastHost = rl.cfg.Now()
		rm.mu.Unlock()
		return rm, 0, ""
	}
	if _, gone := rl.ended[id]; gone {
		return nil, http.StatusGone, "this room was removed by its host"
	}
	if !create {
		return nil, http.StatusNotFound, "no such room"
	}
	a := rl.addr(addr)
	switch {
	case len(rl.rooms) >= rl.cfg.MaxRooms:
		return nil, http.StatusServiceUnavailable, "the relay holds as many rooms as it may"
	case a.rooms >= rl.cfg.RoomsPerAddr:
		return nil, http.StatusTooManyRequests, "this address holds as many rooms as it may"
	}
	a.rooms++
	rm := &room{id: id, creator: addr, streams: map[*stream]struct{}{}, inbox: make(chan []byte, rl.cfg.InboxFrames),
		lastHost: rl.cfg.Now()}
	rl.rooms[id] = rm
	rl.log.Info("room opened", "room", id, "rooms", len(rl.rooms))
	return rm, 0, ""
}

// addr returns the state of address a, creating it. rl.mu is held.
func (rl *Relay) addr(a string) *addrState {
	s := rl.addrs[a]
	if s == nil {
		s = &addrState{tokens: float64(rl.cfg.SendBurst), last: rl.cfg.Now()}
		rl.addrs[a] = s
	}
	return s
}

// down appends the host's frames (a JSON array) to the room's ring and
// sends them to every page stream.
func (rl *Relay) down(w http.ResponseWriter, r *http.Request, rm *room) {
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(30 * time.Second))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(4*rl.cfg.MaxFrame)))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "a batch is at most 4 frames' size")
		return
	}
	var frames []Frame
	if err := json.Unmarshal(body, &frames); err != nil {
		writeError(w, http.StatusBadRequest, "bad_frames", "want a JSON array of frames")
		return
	}
	for _, f := range frames {
		if err := rl.checkFrame(f); err != nil {
			writeError(w, http.StatusBadRequest, "bad_frame", err.Error())
			return
		}
	}
	if err := rm.publish(frames, rl.cfg.RingFrames, rl.cfg.RingBytes); err != nil {
		writeError(w, http.StatusConflict, "bad_seq", err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rl *Relay) checkFrame(f Frame) error {
	switch {
	case f.Seq <= 0:
		return errors.New("frame seq must be positive")
	case len(f.K) == 0 || len(f.K) > 8 || strings.IndexFunc(f.K, func(r rune) bool { return r < 'a' || r > 'z' }) >= 0:
		return errors.New("frame key label must be 1-8 lowercase letters")
	case len(f.C) > rl.cfg.MaxFrame:
		return fmt.Errorf("frame of %d bytes exceeds %d", len(f.C), rl.cfg.MaxFrame)
	}
	if _, err := base64.StdEncoding.DecodeString(f.C); err != nil {
		return errors.New("frame body is not base64")
	}
	return nil
}

// publish appends frames (seq strictly increasing) and fans them out.
func (rm *room) publish(frames []Frame, maxFrames, maxBytes int) error {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if rm.gone {
		return errors.New("room gone")
	}
	for _, f := range frames {
		if f.Seq <= rm.lastSeq {
			return fmt.Errorf("frame seq %d is not after %d", f.Seq, rm.lastSeq)
		}
		rm.lastSeq = f.Seq
		rm.ring = append(rm.ring, f)
		rm.ringSize += len(f.C)
		for len(rm.ring) > maxFrames || rm.ringSize > maxBytes {
			rm.ringSize -= len(rm.ring[0].C)
			rm.ring[0] = Frame{}
			rm.ring = rm.ring[1:]
		}
		for st := range rm.streams {
			select {
			case st.frames <- f:
			default:
				delete(rm.streams, st)
				close(st.lag)
			}
		}
	}
	return nil
}

// inboxStream is the host's long-lived stream of page→host frames. A new
// one replaces an older one of the same room.
func (rl *Relay) inboxStream(w http.ResponseWriter, r *http.Request, rm *room) {
	rc := http.NewResponseController(w)
	kick := make(chan struct{})
	rm.mu.Lock()
	if rm.hostKick != nil {
		close(rm.hostKick)
	}
	rm.hostKick = kick
	rm.hostConn++
	rm.mu.Unlock()
	defer func() {
		rm.mu.Lock()
		rm.hostConn--
		if rm.hostKick == kick {
			rm.hostKick = nil
		}
		rm.lastHost = rl.cfg.Now()
		rm.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, ": host\n\n")
	rc.Flush()
	ping := time.NewTicker(rl.cfg.Ping)
	defer ping.Stop()
	for {
		select {
		case b, ok := <-rm.inbox:
			if !ok {
				return
			}
			rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return
			}
			rc.Flush()
		case <-ping.C:
			rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.WriteString(w, ": ping\n\n"); err != nil {
				return
			}
			rc.Flush()
			rm.mu.Lock()
			rm.lastHost = rl.cfg.Now()
			rm.mu.Unlock()
		case <-kick:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// remove ends the room: its page streams get "gone" and close.
func (rl *Relay) remove(w http.ResponseWriter, r *http.Request, rm *room) {
	rl.mu.Lock()
	if len(rl.ended) >= maxEnded {
		for k := range rl.ended {
			delete(rl.ended, k)
			break
		}
	}
	rl.ended[rm.id] = rl.cfg.Now()
	rl.mu.Unlock()
	rl.forget(rm)
	w.WriteHeader(http.StatusNoContent)
}

// maxEnded bounds how many removed rooms the relay remembers (in memory
// only), and endedFor how long.
const (
	maxEnded = 4096
	endedFor = time.Hour
)

func (rl *Relay) forget(rm *room) {
	rl.mu.Lock()
	if rl.rooms[rm.id] == rm {
		delete(rl.rooms, rm.id)
		if a := rl.addrs[rm.creator]; a != nil && a.rooms > 0 {
			a.rooms--
		}
	}
	n := len(rl.rooms)
	rl.mu.Unlock()
	rm.drop()
	rl.log.Info("room closed", "room", rm.id, "rooms", n)
}

// drop closes every stream of the room and frees its frames.
func (rm *room) drop() {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if rm.gone {
		return
	}
	rm.gone = true
	for st := range rm.streams {
		close(st.end)
	}
	rm.streams = nil
	rm.ring, rm.ringSize = nil, 0
	if rm.hostKick != nil {
		close(rm.hostKick)
		rm.hostKick = nil
	}
}

// events is a page's stream: the ring's frames after ?since=, then live
// ones, each "id: SEQ" and "data: FRAME". "event: live" marks the end of
// the replay. An unknown room is 404: its host is not (yet) connected.
func (rl *Relay) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("room")
	since, _ := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
	addr := clientAddr(r)
	rl.mu.Lock()
	rm := rl.rooms[id]
	a := rl.addr(addr)
	switch {
	case rm == nil:
		_, gone := rl.ended[id]
		rl.mu.Unlock()
		if gone {
			writeError(w, http.StatusGone, "ended", "this share has ended")
			return
		}
		writeError(w, http.StatusNotFound, "no_room", "the host of this share is not connected to the relay")
		return
	case a.streams >= rl.cfg.StreamsPerAddr:
		rl.mu.Unlock()
		writeError(w, http.StatusTooManyRequests, "too_many_streams", "too many open streams from this address")
		return
	}
	a.streams++
	rl.mu.Unlock()
	defer func() {
		rl.mu.Lock()
		a.streams--
		a.last = rl.cfg.Now()
		rl.mu.Unlock()
	}()
	st := &stream{frames: make(chan Frame, 256), lag: make(chan struct{}), end: make(chan struct{})}
	rm.mu.Lock()
	if rm.gone || len(rm.streams) >= rl.cfg.StreamsPerRoom {
		rm.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "room_full", "this room has as many pages as it may")
		return
	}
	var past []Frame
	for _, f := range rm.ring {
		if f.Seq > since {
			past = append(past, f)
		}
	}
	rm.streams[st] = struct{}{}
	rm.mu.Unlock()
	defer func() {
		rm.mu.Lock()
		delete(rm.streams, st)
		rm.mu.Unlock()
	}()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(s string) bool {
		rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		_, err := io.WriteString(w, s)
		return err == nil
	}
	last := since
	send := func(f Frame) bool {
		if f.Seq <= last {
			return true
		}
		last = f.Seq
		b, _ := json.Marshal(f)
		return write("id: " + strconv.FormatInt(f.Seq, 10) + "\ndata: " + string(b) + "\n\n")
	}
	for _, f := range past {
		if !send(f) {
			return
		}
	}
	if !write("event: live\ndata: {}\n\n") {
		return
	}
	rc.Flush()
	ping := time.NewTicker(rl.cfg.Ping)
	defer ping.Stop()
	for {
		select {
		case f := <-st.frames:
			if !send(f) {
				return
			}
			rc.Flush()
		case <-ping.C:
			if !write(": ping\n\n") {
				return
			}
			rc.Flush()
		case <-st.lag:
			return
		case <-st.end:
			// The host's last frames (its "ended") were queued before
			// the room went: send them first.
			for drained := false; !drained; {
				select {
				case f := <-st.frames:
					if !send(f) {
						return
					}
				default:
					drained = true
				}
			}
			write("event: gone\ndata: {}\n\n")
			rc.Flush()
			return
		case <-r.Context().Done():
			return
		}
	}
}

// send queues one page→host frame. The relay checks only its size, that
// it is one line of printable bytes, and the sender's rate.
func (rl *Relay) send(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("room")
	if !rl.allow(clientAddr(r)) {
		writeError(w, http.StatusTooManyRequests, "rate", "too many frames from this address; slow down")
		return
	}
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(30 * time.Second))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(rl.cfg.MaxFrame)))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("a frame is at most %d bytes", rl.cfg.MaxFrame))
		return
	}
	if len(body) == 0 || strings.IndexFunc(string(body), func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
		writeError(w, http.StatusBadRequest, "bad_frame", "a frame is one line of printable ASCII")
		return
	}
	rl.mu.Lock()
	rm := rl.rooms[id]
	_, gone := rl.ended[id]
	rl.mu.Unlock()
	switch {
	case rm == nil && gone:
		writeError(w, http.StatusGone, "ended", "this share has ended")
		return
	case rm == nil:
		writeError(w, http.StatusNotFound, "no_room", "the host of this share is not connected to the relay")
		return
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if rm.gone {
		writeError(w, http.StatusNotFound, "no_room", "this share has ended")
		return
	}
	select {
	case rm.inbox <- body:
		w.WriteHeader(http.StatusAccepted)
	default:
		writeError(w, http.StatusServiceUnavailable, "inbox_full", "the host has too many frames waiting; try again shortly")
	}
}

// allow takes one token from addr's bucket.
func (rl *Relay) allow(addr string) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	a := rl.addr(addr)
	now := rl.cfg.Now()
	a.tokens += now.Sub(a.last).Seconds() * rl.cfg.SendRate
	if a.tokens > float64(rl.cfg.SendBurst) {
		a.tokens = float64(rl.cfg.SendBurst)
	}
	a.last = now
	if a.tokens < 1 {
		return false
	}
	a.tokens--
	return true
}

// janitor forgets rooms whose host has been gone for HostGone and idle
// address records.
func (rl *Relay) janitor() {
	t := time.NewTicker(rl.cfg.HostGone / 10)
	defer t.Stop()
	for {
		select {
		case <-rl.stopGC:
			return
		case <-t.C:
		}
		rl.sweep()
	}
}

func (rl *Relay) sweep() {
	now := rl.cfg.Now()
	rl.mu.Lock()
	var stale []*room
	for _, rm := range rl.rooms {
		rm.mu.Lock()
		if rm.hostConn == 0 && now.Sub(rm.lastHost) > rl.cfg.HostGone {
			stale = append(stale, rm)
		}
		rm.mu.Unlock()
	}
	for k, at := range rl.ended {
		if now.Sub(at) > endedFor {
			delete(rl.ended, k)
		}
	}
	for k, a := range rl.addrs {
		if a.streams == 0 && a.rooms == 0 && now.Sub(a.last) > time.Minute {
			delete(rl.addrs, k)
		}
	}
	rl.mu.Unlock()
	for _, rm := range stale {
		rl.forget(rm)
	}
}

// Dump is everything the relay holds, for [Config.Debug].
type Dump struct {
	Rooms []RoomDump `json:"rooms"`
}

// RoomDump is one room's held bytes.
type RoomDump struct {
	ID      string   `json:"id"`
	LastSeq int64    `json:"last_seq"`
	Ring    []Frame  `json:"ring"`
	Inbox   []string `json:"inbox"`
	Streams int      `json:"streams"`
	Host    bool     `json:"host"`
}

// Snapshot returns what the relay holds. Inbox frames are peeked, not
// consumed.
func (rl *Relay) Snapshot() Dump {
	rl.mu.Lock()
	rooms := make([]*room, 0, len(rl.rooms))
	for _, rm := range rl.rooms {
		rooms = append(rooms, rm)
	}
	rl.mu.Unlock()
	var d Dump
	for _, rm := range rooms {
		rm.mu.Lock()
		rd := RoomDump{ID: rm.id, LastSeq: rm.lastSeq, Ring: append([]Frame(nil), rm.ring...), Streams: len(rm.streams), Host: rm.hostConn > 0}
		// Drain and refill the inbox under the room lock; send holds it
		// too, so nothing interleaves.
		n := len(rm.inbox)
		for range n {
			b := <-rm.inbox
			rd.Inbox = append(rd.Inbox, string(b))
			rm.inbox <- b
		}
		rm.mu.Unlock()
		d.Rooms = append(d.Rooms, rd)
	}
	return d
}

func (rl *Relay) dump(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, rl.Snapshot())
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"error": msg, "code": code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
