package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/eventlog"
	"planbridge/internal/redact"
	"planbridge/internal/sessioninfo"
	"planbridge/internal/store"
	"planbridge/internal/tracking"
)

// Error is an application error with a stable code for clients.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Stable error codes.
const (
	CodeNotFound       = "not_found"
	CodeInvalidParams  = "invalid_params"
	CodeBusy           = "busy"
	CodeGoalUnfinished = "goal_unfinished"
	CodeQueueFull      = "queue_full"
	CodePromptTooLarge = "prompt_too_large"
)

func errorf(code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Asker asks the attached person whether a tool call may run.
type Asker func(ctx context.Context, session string, call agent.ToolCall, reason string) (bool, error)

// Config configures a [Manager].
type Config struct {
	Store  *store.Store
	Engine agent.Engine // may be replaced later with SetEngine
	Shell  agent.Shell  // bash runner; nil refuses bash everywhere it is needed
	Logger *slog.Logger
	// Redact masks configured secrets (API keys, link secrets) in every
	// event and transcript row before it is stored or published; nil masks
	// nothing.
	Redact *redact.Set
	// ReadRoots are directories outside the workspace that a person lets
	// every session's tools and Plan's shell read (absolute paths).
	ReadRoots []string
	// Hidden are paths no read may reach even inside the workspace or a
	// read root: the state directory (work:// stays readable).
	Hidden []string
}

// Manager owns the live sessions of one state directory. Safe for
// concurrent use.
type Manager struct {
	st     *store.Store
	log    *slog.Logger
	shell  agent.Shell
	redact *redact.Set
	read   []string // Config.ReadRoots
	hide   []string // Config.Hidden
	turns  sync.WaitGroup
	// approvalTimeout closes undecided cards as timed_out.
	approvalTimeout handoff.TimeoutSetting
	listeners       eventlog.Listeners // every session's log publishes to them

	mu       sync.Mutex // guards the fields below
	sessions map[string]*Session
	engine   agent.Engine
	asker    Asker
	models   handoff.ModelConfig
	closed   bool
	// created are the sessions this process created: loading one is no
	// restart, so nothing of it is paused by restart.
	created map[string]bool

	// failpoint receives a turn's crash points ([handoff.Failpoint]; tests
	// crash in process there). Set before use, never changed.
	failpoint func(name string)
}

// born records that this process created session id.
func (m *Manager) born(id string) {
	m.mu.Lock()
	m.created[id] = true
	m.mu.Unlock()
}

// NewManager returns a manager over cfg.Store.
func NewManager(cfg Config) *Manager {
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return &Manager{st: cfg.Store, log: lg, shell: cfg.Shell, engine: cfg.Engine, redact: cfg.Redact, read: cfg.ReadRoots, hide: cfg.Hidden,
		sessions: map[string]*Session{}, created: map[string]bool{}, failpoint: handoff.Failpoint}
}

// SetEngine replaces the model engine for turns started from now on.
func (m *Manager) SetEngine(e agent.Engine) {
	m.mu.Lock()
	m.engine = e
	m.mu.Unlock()
}

// Engine returns the current engine (nil if none is configured).
func (m *Manager) Engine() agent.Engine {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.engine
}

// SetAsker installs the permission prompt used in ask/edits modes.
func (m *Manager) SetAsker(a Asker) {
	m.mu.Lock()
	m.asker = a
	m.mu.Unlock()
}

// Subscribe registers fn for every event of every session, in order per
// session. It returns a function that unsubscribes.
func (m *Manager) Subscribe(fn func(Event)) (cancel func()) { return m.listeners.Subscribe(fn) }

// Close interrupts running turns (queued prompts stay queued for the next
// start), waits for them and flushes event logs.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	ss := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		ss = append(ss, s)
	}
	m.mu.Unlock()
	for _, s := range ss {
		s.stopForShutdown()
		// The person's client went away: the card's presentation ends as
		// interrupted, and the next start presents the proposal again.
		s.card.Interrupt(context.Background(), false)
	}
	m.turns.Wait()
	for _, s := range ss {
		s.events.Flush()
	}
}

func newID(prefix string) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return prefix + hex.EncodeToString(b[:])
}

// Create starts a session for workspace (an existing directory).
func (m *Manager) Create(ctx context.Context, workspace string) (*Session, error) {
	if workspace == "" {
		return nil, errorf(CodeInvalidParams, "workspace is required")
	}
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return nil, errorf(CodeInvalidParams, "workspace: %v", err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return nil, errorf(CodeInvalidParams, "workspace %s is not a directory", workspace)
	}
	row := store.Session{ID: newID("s-"), Workspace: abs, Mode: string(agent.ModeAsk), CreatedAt: time.Now()}
	if err := m.st.PutSession(ctx, row); err != nil {
		return nil, err
	}
	// Every session has a directory: the start-up check compares them with
	// the rows, so a database that lost its newest commits is noticed.
	if err := os.MkdirAll(store.SessionDir(m.st.Dir(), row.ID), 0o700); err != nil {
		return nil, err
	}
	m.born(row.ID)
	s, err := m.Get(ctx, row.ID)
	if err != nil {
		return nil, err
	}
	s.changed()
	return s, nil
}

// Get returns the live session id, loading it from the store if needed.
func (m *Manager) Get(ctx context.Context, id string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sessions[id]; s != nil {
		return s, nil
	}
	if id == "" {
		return nil, errorf(CodeInvalidParams, "session is required")
	}
	row, err := m.st.GetSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(CodeNotFound, "no session %q", id)
	}
	if err != nil {
		return nil, err
	}
	if aside, ok := m.st.SetAside(id); ok {
		// Loading it would judge its proposal by files that are not
		// there (and demote it for good), and its first write would
		// give it an empty directory beside its real one.
		return nil, errorf(CodeUnavailable, "session %s cannot be opened: an interrupted delete set its files aside in %s and could not put them back; move that directory to %s (nothing of the session was changed)",
			id, aside, store.SessionDir(m.st.Dir(), id))
	}
	s, err := loadSession(ctx, m, row, !m.created[id])
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", id, err)
	}
	m.sessions[id] = s
	// A card presented again on resume times out like any other.
	s.card.Arm(m.approvalTimeout.Duration())
	return s, nil
}

// List returns every stored session, most recent first.
func (m *Manager) List(ctx context.Context) ([]Info, error) {
	rows, err := m.st.ListSessions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(rows))
	for _, r := range rows {
		m.mu.Lock()
		live := m.sessions[r.ID]
		m.mu.Unlock()
		if live != nil {
			out = append(out, live.Info())
			continue
		}
		out = append(out, sessioninfo.Stored(ctx, m.st, r))
	}
	return out, nil
}

// AcceptedPlan returns the accepted plan of stored session id without
// loading it or changing anything: for "planbridge plan-trailer", which may
// run beside a server. It is nil when the session has none.
func (m *Manager) AcceptedPlan(ctx context.Context, id string) (*PlanRef, error) {
	if _, err := m.st.GetSession(ctx, id); errors.Is(err, store.ErrNotFound) {
		return nil, errorf(CodeNotFound, "no session %q", id)
	} else if err != nil {
		return nil, err
	}
	return tracking.StoredPlan(ctx, m.st, id), nil
}

// SetModels installs the model policy a client configures at initialize,
// refusing one that does not validate ([handoff.ModelConfig.Validate])
// with nothing changed.
func (m *Manager) SetModels(cfg handoff.ModelConfig) error {
	if err := cfg.Validate(); err != nil {
		return errorf(CodeInvalidParams, "%v", err)
	}
	m.mu.Lock()
	m.models = cfg
	m.mu.Unlock()
	return nil
}

func (m *Manager) modelConfig() handoff.ModelConfig {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.models
}

// Store exposes the underlying store (for doctor and tests).
func (m *Manager) Store() *store.Store { return m.st }
