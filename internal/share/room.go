package share

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"

	"planbridge/internal/session"
)

// secretBytes is the size of a link secret: 192 random bits.
const secretBytes = 24

// streamBuffer is how many live events a slow page may fall behind before
// its stream is closed (it reconnects and replays from its last seq).
const streamBuffer = 512

// ending says why a room ended; pages show Message.
type ending struct {
	Reason  string `json:"reason"` // stopped, expired, handoff, handoff_failed, closed
	Message string `json:"message"`
}

// link is a stored link: only the secret's hash is kept.
type link struct {
	tier    Tier
	hash    [sha256.Size]byte
	expires time.Time
	// inherited links were carried over from the room this one continues
	// (a Worktree handoff) so that pages of the old room can follow it;
	// they are not listed by [Server.Links].
	inherited bool
}

// tomb remembers an ended room: why it ended and, after a Worktree
// handoff, the room it continues in with the old room's links, so a page
// holding one of them is shown the way there.
type tomb struct {
	why   ending
	cont  string // room id of the continuation; "" unless handed off
	links []link
	at    time.Time // when it ended
}

// room is one shared session.
type room struct {
	id      string
	session string

	mu      sync.Mutex // guards the fields below
	links   []link
	streams map[*stream]struct{}
	done    bool
}

// stream is one connected page's live event feed.
type stream struct {
	tier   Tier
	link   [sha256.Size]byte // the link it was opened with
	events chan session.Event
	lag    chan struct{} // closed when events overflowed
	end    chan struct{} // closed when the room ended
	// set under room.mu before end is closed
	final ending
	open  *Link
}

func newRoom(id, sid string) *room {
	return &room{id: id, session: sid, streams: map[*stream]struct{}{}}
}

// newLink returns a fresh secret and the link that stores its hash.
func newLink(t Tier, expires time.Time) (string, link) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	secret := base64.RawURLEncoding.EncodeToString(b)
	return secret, link{tier: t, hash: sha256.Sum256([]byte(secret)), expires: expires}
}

// add adds links to the room.
func (r *room) add(ls []link) {
	r.mu.Lock()
	r.links = append(r.links, ls...)
	r.mu.Unlock()
}

// authResult is the outcome of checking a key.
type authResult int

const (
	authBad     authResult = iota // no link has this secret
	authExpired                   // the link exists but expired
	authOK
)

// auth finds the link whose secret is key; see [match].
func (r *room) auth(key string, now time.Time) (link, authResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return link{}, authBad
	}
	return match(r.links, key, now)
}

// match finds the link among links whose secret is key. Every stored hash
// is compared in constant time, and the loop does not stop at a match, so
// timing reveals neither the secret nor which link matched.
func match(links []link, key string, now time.Time) (link, authResult) {
	if key == "" {
		return link{}, authBad
	}
	h := sha256.Sum256([]byte(key))
	var found link
	ok := 0
	for _, l := range links {
		if subtle.ConstantTimeCompare(h[:], l.hash[:]) == 1 {
			found, ok = l, 1
		}
	}
	switch {
	case ok == 0:
		return link{}, authBad
	case !now.Before(found.expires):
		return found, authExpired
	}
	return found, authOK
}

// live returns the unexpired links the room was shared with (not the
// inherited ones), without URLs.
func (r *room) live(now time.Time) []Link {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Link
	for _, l := range r.links {
		if now.Before(l.expires) && !l.inherited {
			out = append(out, Link{Tier: l.tier, ExpiresAt: l.expires, Transport: TransportDirect})
		}
	}
	return out
}

// unexpired returns every unexpired link, inherited ones included.
func (r *room) unexpired(now time.Time) []link {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []link
	for _, l := range r.links {
		if now.Before(l.expires) {
			out = append(out, l)
		}
	}
	return out
}

// subscribe registers a stream opened with link l; nil if the room has
// ended. full is set (and nothing registered) when l already has max
// open streams.
func (r *room) subscribe(l link, max int) (st *stream, full bool) {
	st = &stream{tier: l.tier, link: l.hash, events: make(chan session.Event, streamBuffer), lag: make(chan struct{}), end: make(chan struct{})}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return nil, false
	}
	n := 0
	for o := range r.streams {
		if o.link == l.hash {
			n++
		}
	}
	if n >= max {
		return nil, true
	}
	r.streams[st] = struct{}{}
	return st, false
}

func (r *room) unsubscribe(st *stream) {
	r.mu.Lock()
	delete(r.streams, st)
	r.mu.Unlock()
}

// broadcast queues ev on every stream without blocking; a stream whose
// buffer is full is cut so its page reconnects and replays.
func (r *room) broadcast(ev session.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for st := range r.streams {
		select {
		case st.events <- ev:
		default:
			delete(r.streams, st)
			close(st.lag)
		}
	}
}

// end kills every link and closes every stream with e; open, when set,
// gives each stream the link of its own tier to continue with. It returns
// the links the room had.
func (r *room) end(e ending, open map[Tier]Link) []link {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	old := r.links
	r.links = nil
	for st := range r.streams {
		st.final = e
		if l, ok := open[st.tier]; ok {
			st.open = &l
		}
		close(st.end)
	}
	r.streams = map[*stream]struct{}{}
	return old
}
