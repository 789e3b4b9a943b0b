package transcript

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"planbridge/internal/agent"
	"planbridge/internal/store"
)

// Store is the transcript's persistence: the read behind [Load] and the two
// named commit operations. *store.Store is one.
type Store interface {
	Messages(ctx context.Context, session string) ([]store.Message, error)
	CommitTurnStep(ctx context.Context, op string, st store.TurnStep) error
	CommitSegment(ctx context.Context, g store.Segment) error
}

// Redactor masks secrets in text before it is stored. *redact.Set is one.
type Redactor interface {
	String(v string) string
}

// Config configures a [Transcript].
type Config struct {
	Session string
	Segment int64 // the current context segment: its messages are loaded
	Store   Store
	// Row returns a snapshot of the session row every commit writes with
	// its messages. It is called with the commits serialised, never while
	// the transcript's own lock is held.
	Row func() store.Session
	// RowLock, when set, is held from the Row snapshot until the commit
	// (and OnSegment) is done: the lock the session's other writers of its
	// row hold the same way, so no writer commits a snapshot older than
	// one another writer has already committed (a posture changed during
	// a turn step is never written back). Taken after commitMu.
	RowLock sync.Locker
	// OnSegment is told that segment seg is committed as the current one
	// (the session sets its row's copy); nil: nobody is.
	OnSegment func(seg int64)
	// Apply is handed the change to the session row a step committed
	// ([Transcript.AppendRow]), before the row lock is released, so the
	// session's copy follows its commit; nil: nobody is.
	Apply  func(set func(*store.Session))
	Redact Redactor // nil masks nothing
	Logger *slog.Logger
}

// Transcript is the current context segment of one session. Safe for
// concurrent use.
type Transcript struct {
	cfg Config

	// commitMu serialises commits: indices are taken and committed in one
	// piece. Taken before the caller's locks (Row) and before mu.
	commitMu sync.Mutex

	mu   sync.Mutex      // guards the fields below; a leaf
	msgs []agent.Message // the current segment's messages, committed
	next int64           // the index the next message takes
}

// Load reads the stored transcript of cfg.Session: the messages of
// cfg.Segment, and the next index after every stored one.
func Load(ctx context.Context, cfg Config) (*Transcript, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	rows, err := cfg.Store.Messages(ctx, cfg.Session)
	if err != nil {
		return nil, err
	}
	t := &Transcript{cfg: cfg}
	for _, pm := range rows {
		t.next = pm.Idx + 1
		if pm.Segment != cfg.Segment {
			continue
		}
		am := agent.Message{Role: pm.Role, Content: pm.Content, ToolCallID: pm.ToolCallID, Name: pm.Name}
		if pm.ToolCalls != "" {
			if err := json.Unmarshal([]byte(pm.ToolCalls), &am.ToolCalls); err != nil {
				cfg.Logger.Warn("corrupt tool calls in transcript; dropped", "session", cfg.Session, "idx", pm.Idx, "err", err)
			}
		}
		if pm.Thinking != "" {
			if err := json.Unmarshal([]byte(pm.Thinking), &am.Thinking); err != nil {
				cfg.Logger.Warn("corrupt reasoning in transcript; dropped", "session", cfg.Session, "idx", pm.Idx, "err", err)
				am.Thinking = nil
			}
		}
		t.msgs = append(t.msgs, am)
	}
	return t, nil
}

// Messages returns the current segment's committed messages. The caller
// must not change them.
func (t *Transcript) Messages() []agent.Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.msgs[:len(t.msgs):len(t.msgs)]
}

// Next is the index the next committed message takes (a fork's point:
// everything before it is the conversation so far).
func (t *Transcript) Next() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.next
}

// Append commits msgs to the current segment under operation op, with the
// session row and what with adds to the step, in one transaction; only
// then do they join the conversation. msgs may be empty (a step that
// commits only the row and what with adds).
func (t *Transcript) Append(ctx context.Context, op string, msgs []agent.Message, with func(*store.TurnStep)) error {
	return t.AppendRow(ctx, op, msgs, nil, with)
}

// AppendRow is [Transcript.Append] for a step that also changes the
// session row: set (nil: no change) is applied to the row the step
// writes and, only once the step is committed, handed to [Config.Apply]
// under the same serialisation and row lock. So the session's copy of the
// row changes only with its commit (a failed commit changes nothing), and
// no other writer of the row commits between the two.
func (t *Transcript) AppendRow(ctx context.Context, op string, msgs []agent.Message, set func(*store.Session), with func(*store.TurnStep)) error {
	t.commitMu.Lock()
	defer t.commitMu.Unlock()
	defer t.lockRow()()
	row := t.cfg.Row()
	next := t.Next()
	rows := make([]store.Message, 0, len(msgs))
	for _, m := range msgs {
		calls := ""
		if len(m.ToolCalls) > 0 {
			b, _ := json.Marshal(m.ToolCalls)
			calls = string(b)
		}
		thinking := ""
		if len(m.Thinking) > 0 {
			b, _ := json.Marshal(m.Thinking)
			thinking = string(b)
		}
		rows = append(rows, store.Message{Idx: next + int64(len(rows)), Segment: row.Segment, Role: m.Role, Content: t.redact(m.Content),
			ToolCalls: t.redact(calls), ToolCallID: m.ToolCallID, Name: m.Name, Thinking: thinking})
	}
	if set != nil {
		set(&row)
	}
	step := store.TurnStep{Session: row, Messages: rows}
	if with != nil {
		with(&step)
	}
	if err := t.cfg.Store.CommitTurnStep(ctx, op, step); err != nil {
		return err
	}
	if set != nil && t.cfg.Apply != nil {
		t.cfg.Apply(set)
	}
	t.mu.Lock()
	t.next += int64(len(rows))
	t.msgs = append(t.msgs, msgs...)
	t.mu.Unlock()
	return nil
}

// Rotate starts segment seg with material as its first (user) message: the
// session row on seg, the message and record (a retry record; "" for none)
// in one transaction. Only after it commits is seg the current context
// (and [Config.OnSegment] told).
func (t *Transcript) Rotate(ctx context.Context, seg int64, material, record string) error {
	t.commitMu.Lock()
	defer t.commitMu.Unlock()
	defer t.lockRow()()
	row := t.cfg.Row()
	row.Segment = seg
	msg := store.Message{Idx: t.Next(), Segment: seg, Role: agent.RoleUser, Content: material}
	if err := t.cfg.Store.CommitSegment(ctx, store.Segment{Session: row, Message: &msg, Record: record}); err != nil {
		return err
	}
	t.mu.Lock()
	t.next++
	t.msgs = []agent.Message{{Role: agent.RoleUser, Content: material}}
	t.mu.Unlock()
	if t.cfg.OnSegment != nil {
		t.cfg.OnSegment(seg)
	}
	return nil
}

// lockRow takes [Config.RowLock] (if any) and returns its release.
func (t *Transcript) lockRow() (unlock func()) {
	if t.cfg.RowLock == nil {
		return func() {}
	}
	t.cfg.RowLock.Lock()
	return t.cfg.RowLock.Unlock
}

func (t *Transcript) redact(v string) string {
	if t.cfg.Redact == nil {
		return v
	}
	return t.cfg.Redact.String(v)
}
