package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"planbridge/internal/event"
	"planbridge/internal/store"
)

// TextCoalesce is how long streamed text deltas gather, by default, before
// one group commit publishes them as one text event.
const TextCoalesce = 5 * time.Millisecond

// Store is the log's persistence: one commit operation that appends events
// and the reads behind [Open] and [Log.Page]. *store.Store is one.
type Store interface {
	AppendEvents(ctx context.Context, session string, evs []store.Event) error
	EventsPage(ctx context.Context, session string, since int64, limit int) ([]store.Event, error)
	LastSeq(ctx context.Context, session string) (int64, error)
}

// Redactor masks secrets in an event's encoded data (b itself when none
// occurs). *redact.Set is one.
type Redactor interface {
	Bytes(b []byte) []byte
}

// Config configures a [Log].
type Config struct {
	Session string
	Store   Store
	// Publish hands a committed event (or a failed commit's notification)
	// to every surface; nil publishes nothing.
	Publish func(event.Event)
	Redact  Redactor // nil masks nothing
	Logger  *slog.Logger
	// Coalesce is how long text deltas gather (0: [TextCoalesce]).
	Coalesce time.Duration
}

// Log is one session's event log. Safe for concurrent use.
type Log struct {
	cfg Config

	mu      sync.Mutex // serialises commits: seq order = delivery order
	lastSeq int64      // the highest committed sequence number
	// views holds, per derived kind, the data of the last view committed
	// (absent: none since [Log.EndView] or start).
	views map[string][]byte

	// textMu guards the text gathered for the next group commit. It is
	// never held across a commit, so a stream never waits on the disk.
	// Taken after mu when both are held.
	textMu    sync.Mutex
	text      strings.Builder
	textTimer *time.Timer // pending group commit of text, nil if none
}

// withheld replaces data that masking a secret would leave invalid JSON.
var withheld = mustJSON(map[string]string{"error": "event withheld: it contained a secret"})

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// derived reports the kinds only [Log.View] publishes.
func derived(kind string) bool {
	return kind == event.Status{}.Kind() || kind == event.KindApproval
}

// Open opens the log of cfg.Session, continuing after its highest
// committed sequence number.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	last, err := cfg.Store.LastSeq(ctx, cfg.Session)
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Coalesce <= 0 {
		cfg.Coalesce = TextCoalesce
	}
	return &Log{cfg: cfg, lastSeq: last, views: map[string][]byte{}}, nil
}

// LastSeq is the highest committed sequence number.
func (l *Log) LastSeq() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastSeq
}

// Emit commits an event of the catalogue and then publishes it, after the
// text gathered before it. A derived view's kind is refused (logged,
// nothing stored or published): those come from [Log.View] only.
func (l *Log) Emit(d event.Data) {
	kind := d.Kind()
	if derived(kind) {
		l.cfg.Logger.Error("status and approval events are derived views (View only); dropped", "session", l.cfg.Session, "kind", kind)
		return
	}
	raw, err := json.Marshal(d)
	if err != nil {
		raw = mustJSON(map[string]string{"error": err.Error()})
	}
	raw = l.redact(raw)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	l.commitLocked(kind, raw)
}

// View publishes a derived view (status, the approval card) when its data
// differs from the last one of its kind committed, after the text
// gathered before it. A view whose commit fails is not remembered, so the
// next equal one is tried again. Any other kind is refused (logged).
func (l *Log) View(d event.Data) {
	kind := d.Kind()
	if !derived(kind) {
		l.cfg.Logger.Error("not a derived view; dropped", "session", l.cfg.Session, "kind", kind)
		return
	}
	raw, err := json.Marshal(d)
	if err != nil {
		l.cfg.Logger.Error("encode the "+kind+" view", "session", l.cfg.Session, "err", err)
		return
	}
	raw = l.redact(raw)
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.views[kind]; ok && bytes.Equal(raw, last) {
		return
	}
	l.flushLocked()
	if l.commitLocked(kind, raw) {
		l.views[kind] = raw
	}
}

// EndView forgets the last view of kind (the presentation it showed
// ended): the next one is published even if it is equal.
func (l *Log) EndView(kind string) {
	l.mu.Lock()
	delete(l.views, kind)
	l.mu.Unlock()
}

// Text gathers a streamed text delta; deltas gather for at most
// [Config.Coalesce] and are committed and published as one text event.
func (l *Log) Text(delta string) {
	if delta == "" {
		return
	}
	l.textMu.Lock()
	l.text.WriteString(delta)
	if l.textTimer == nil {
		l.textTimer = time.AfterFunc(l.cfg.Coalesce, l.Flush)
	}
	l.textMu.Unlock()
}

// Flush commits and publishes the text gathered so far, if any.
func (l *Log) Flush() {
	l.mu.Lock()
	l.flushLocked()
	l.mu.Unlock()
}

// Page returns the committed events after seq since, oldest first (limit
// > 0: at most limit of them). Text still gathering is committed first.
func (l *Log) Page(ctx context.Context, since int64, limit int) ([]event.Event, error) {
	l.Flush()
	evs, err := l.cfg.Store.EventsPage(ctx, l.cfg.Session, since, limit)
	if err != nil {
		return nil, err
	}
	out := make([]event.Event, len(evs))
	for i, e := range evs {
		out[i] = event.Event{Session: l.cfg.Session, Seq: e.Seq, Kind: e.Kind, Data: e.Data, Time: e.Time}
	}
	return out, nil
}

// redact masks secrets in raw, withholding data masking leaves invalid.
func (l *Log) redact(raw []byte) []byte {
	if l.cfg.Redact == nil {
		return raw
	}
	if red := l.cfg.Redact.Bytes(raw); json.Valid(red) {
		return red
	}
	return withheld
}

// flushLocked commits and publishes the gathered text deltas as one event.
// Caller holds mu: text taken here is committed before anything emitted
// after it.
func (l *Log) flushLocked() {
	l.textMu.Lock()
	if l.textTimer != nil {
		l.textTimer.Stop()
		l.textTimer = nil
	}
	text := l.text.String()
	l.text.Reset()
	l.textMu.Unlock()
	if text == "" {
		return
	}
	ev := event.Text{Delta: text}
	l.commitLocked(ev.Kind(), mustJSON(ev))
}

// commitLocked gives the event the next number, commits it, then
// publishes; ok reports the commit. Caller holds mu.
func (l *Log) commitLocked(kind string, raw json.RawMessage) (ok bool) {
	ev := store.Event{Seq: l.lastSeq + 1, Kind: kind, Data: raw, Time: time.Now()}
	if err := l.cfg.Store.AppendEvents(context.Background(), l.cfg.Session, []store.Event{ev}); err != nil {
		l.cfg.Logger.Error("persist event", "session", l.cfg.Session, "kind", kind, "err", err)
		durable := false
		msg := mustJSON(event.Error{Message: "could not save an event (" + kind + "): " + err.Error(), Durable: &durable})
		l.publish(event.Event{Session: l.cfg.Session, Seq: 0, Kind: event.Error{}.Kind(), Data: msg, Time: ev.Time})
		return false
	}
	l.lastSeq = ev.Seq
	l.publish(event.Event{Session: l.cfg.Session, Seq: ev.Seq, Kind: kind, Data: raw, Time: ev.Time})
	return true
}

func (l *Log) publish(ev event.Event) {
	if l.cfg.Publish != nil {
		l.cfg.Publish(ev)
	}
}
