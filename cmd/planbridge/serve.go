package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"planbridge/internal/agent"
	"planbridge/internal/redact"
	"planbridge/internal/session"
	"planbridge/internal/share"
	"planbridge/internal/store"
	"planbridge/rpc"
	"planbridge/sandbox"
)

// commonFlags are the flags serve, doctor and demo share.
type commonFlags struct {
	stateDir string
	engine   string
	script   string
	logFile  string
	acpCmd   string
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.stateDir, "state-dir", "", "state directory (default $PLANBRIDGE_STATE_DIR or $XDG_STATE_HOME/planbridge)")
	fs.StringVar(&c.engine, "engine", os.Getenv("PLANBRIDGE_ENGINE"), "model engine: script, openai, anthropic or acp")
	fs.StringVar(&c.acpCmd, "acp-command", os.Getenv("PLANBRIDGE_ACP_COMMAND"), "agent command for the acp engine, e.g. 'claude-agent-acp' or a JSON array (env PLANBRIDGE_ACP_COMMAND)")
	fs.StringVar(&c.script, "script", os.Getenv("PLANBRIDGE_SCRIPT"), "script file for the script engine")
	fs.StringVar(&c.logFile, "log", os.Getenv("PLANBRIDGE_LOG"), "log file (default stderr; never stdout)")
}

func (c *commonFlags) dir() string {
	if c.stateDir != "" {
		return c.stateDir
	}
	return store.DefaultDir(os.Getenv)
}

func (c *commonFlags) engineConfig() agent.EngineConfig {
	kind := c.engine
	if kind == "" && c.script != "" {
		kind = "script"
	}
	return agent.EngineConfig{Kind: kind, Script: c.script, Command: parseCommand(c.acpCmd)}
}

// newEngine builds an engine and, for scripts, keeps each session's replay
// position in the store so a restarted process continues a session's
// replay where it stopped, while a new session starts from the beginning.
func newEngine(ctx context.Context, st *store.Store, red *redact.Set, cfg agent.EngineConfig, lg *slog.Logger, acps *acpEngines) (agent.Engine, error) {
	if cfg.Kind == "acp" {
		for name, v := range cfg.Env {
			if acpSecretName(name) {
				red.Add(v)
			}
		}
		eng, err := newACP(cfg, filepath.Join(st.Dir(), "acp"), lg, acps)
		if err != nil {
			return nil, red.Error(err)
		}
		return agent.Redacting(eng, red), nil
	}
	eng, err := agent.NewEngine(cfg, os.Getenv)
	if err != nil {
		return nil, red.Error(err)
	}
	// Every key configured, wherever it came from, is masked everywhere
	// (also those of engines not in use: a tool's output may show them).
	red.Add(cfg.APIKey, agent.OpenAIConfigFromEnv(os.Getenv).APIKey, agent.AnthropicConfigFromEnv(os.Getenv).APIKey)
	if sc, ok := eng.(*agent.Script); ok {
		abs, _ := filepath.Abs(cfg.Script)
		sc.Cursors = scriptCursors{st: st, key: "script-cursor:" + abs}
	}
	return agent.Redacting(eng, red), nil
}

// scriptCursors persists script positions per session in the store, as
// values of the session ([store.Store.PutValue]) keyed by the script: they
// are deleted with the session, and a position saved after its delete is
// refused, never left behind.
type scriptCursors struct {
	st  *store.Store
	key string
}

// LoadCursor reads session's position; a store error is returned, never
// taken for "no position" (that would replay the script from its start).
func (c scriptCursors) LoadCursor(session string) (int, bool, error) {
	v, ok, err := c.st.Value(context.Background(), session, c.key)
	if err != nil || !ok {
		return 0, false, err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, false, fmt.Errorf("stored script position %q: %w", v, err)
	}
	return n, true, nil
}

func (c scriptCursors) SaveCursor(session string, pos int) error {
	return c.st.PutValue(context.Background(), session, c.key, strconv.Itoa(pos))
}

// envOr returns the environment variable name, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func openLogger(path string, stderr io.Writer) (*slog.Logger, func(), error) {
	if path == "" {
		return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, err
	}
	return slog.New(slog.NewTextHandler(f, nil)), func() { f.Close() }, nil
}

func runServe(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("serve", stderr)
	var cf commonFlags
	cf.register(fs)
	shareListen := fs.String("share-listen", envOr("PLANBRIDGE_SHARE_LISTEN", share.DefaultListen),
		"address the browser share server listens on (env PLANBRIDGE_SHARE_LISTEN); it starts on the first share, or at startup "+
			"when shared sessions survive from the last run; with port 0 it reuses its previous port so old links keep working")
	shareBase := fs.String("share-base-url", os.Getenv("PLANBRIDGE_SHARE_BASE_URL"),
		"scheme://host[:port] that share links start with instead of the listen address, for a 0.0.0.0 listener or a LAN/VPN name, "+
			"e.g. http://laptop.lan:8787 with --share-listen 0.0.0.0:8787 (env PLANBRIDGE_SHARE_BASE_URL)")
	maxFrame := fs.Int("max-frame", rpc.DefaultMaxFrame,
		"largest JSON-RPC message body in bytes; a larger frame is read through unbuffered and refused with error data.code frame_too_large")
	var readRoots rootList
	readRoots.fromEnv(os.Getenv("PLANBRIDGE_READ_ROOTS"))
	fs.Var(&readRoots, "read-root", "a directory outside the workspace that tools and Plan's shell may read (repeatable; env PLANBRIDGE_READ_ROOTS, colon-separated)")
	pos, code, ok := parseFlags(fs, args, false, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(fs, stderr, fmt.Sprintf("unexpected argument %q (serve takes flags only)", pos[0]))
	}
	if *maxFrame <= 0 {
		return usageError(fs, stderr, "--max-frame must be positive")
	}
	if *shareBase != "" {
		u, err := share.CheckBaseURL(*shareBase)
		if err != nil {
			fmt.Fprintf(stderr, "planbridge: --share-base-url: %v\n", err)
			return 2
		}
		*shareBase = u
	}
	lg, closeLog, err := openLogger(cf.logFile, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "planbridge: %v\n", err)
		return 1
	}
	defer closeLog()
	red := &redact.Set{}
	red.Add(agent.OpenAIConfigFromEnv(os.Getenv).APIKey, agent.AnthropicConfigFromEnv(os.Getenv).APIKey)
	lg = slog.New(red.Handler(lg.Handler()))
	ctx := context.Background()
	st, release, unfinished, err := openState(ctx, cf.dir(), lg)
	if err != nil {
		fmt.Fprintf(stderr, "planbridge: %v\n", err)
		// Tell the client too, if it asks something before we go.
		code := "state_unavailable"
		var le *store.LockError
		if errors.As(err, &le) {
			code = "state_locked"
		}
		rpc.Refuse(ctx, stdin, stdout, code, "planbridge: "+err.Error(), refuseWait)
		return 1
	}
	defer release()
	defer st.Close()
	mgr := session.NewManager(session.Config{Store: st, Shell: newShell(), Logger: lg, Redact: red, ReadRoots: readRoots,
		Hidden: []string{absOr(cf.dir())}})
	acps := &acpEngines{}
	defer acps.Close()
	if ec := cf.engineConfig(); ec.Kind != "" {
		eng, err := newEngine(ctx, st, red, ec, lg, acps)
		if err != nil {
			fmt.Fprintf(stderr, "planbridge: %v\n", err)
			return 1
		}
		mgr.SetEngine(eng)
	}
	sh := share.New(share.Config{Manager: mgr, Store: st, Listen: *shareListen, BaseURL: *shareBase, Logger: lg, Redact: red})
	// Shared sessions survive a restart: listen now if some link may still
	// come back. Failing that only costs the old links; sharing works.
	if err := sh.Restore(ctx); err != nil {
		lg.Error("restore shared sessions", "err", err)
	}
	err = rpc.Serve(ctx, stdin, stdout, rpc.Options{Manager: mgr, Logger: lg, Version: version, Share: sh, MaxFrame: *maxFrame, Warnings: unfinished,
		NewEngine: func(c agent.EngineConfig) (agent.Engine, error) { return newEngine(ctx, st, red, c, lg, acps) }})
	closeShare, cancel := context.WithTimeout(ctx, 2*time.Second)
	sh.Close(closeShare)
	cancel()
	mgr.Close()
	if err != nil {
		lg.Error("serve", "err", err)
		return 1
	}
	return 0
}

// refuseWait is how long a server that cannot start waits for the
// client's first request, to answer it with the reason.
const refuseWait = 500 * time.Millisecond

// openState takes the state directory's exclusive lock, runs the quick
// integrity check (refusing a damaged directory without changing it) and
// opens the database. release drops the lock. unfinished is what the
// start could not settle of the deletes a crash cut short
// ([store.Store.FinishDeletes]): never a reason to refuse (nothing of a
// live session is removed, every other session is intact), each logged
// and for the client to show.
func openState(ctx context.Context, dir string, lg *slog.Logger) (st *store.Store, release func(), unfinished []string, err error) {
	release, err = store.Lock(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := store.Preflight(ctx, dir); err != nil {
		release()
		return nil, nil, nil, err
	}
	st, err = store.Open(ctx, dir, store.WithFailingCommits(os.Getenv(store.FailCommitsEnv)))
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	if probs := st.Check(ctx, false); len(probs) > 0 {
		st.Close()
		release()
		return nil, nil, nil, &store.DamageError{Dir: dir, Problems: probs}
	}
	// A delete a crash cut short is finished or undone, under the lock.
	if unfinished, err = st.FinishDeletes(ctx); err != nil {
		st.Close()
		release()
		return nil, nil, nil, err
	}
	for _, u := range unfinished {
		lg.Warn("start: " + u)
	}
	return st, release, unfinished, nil
}

func runDoctor(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := newFlags("doctor", stderr)
	var cf commonFlags
	cf.register(flags)
	pos, code, parsed := parseFlags(flags, args, false, stdout, stderr)
	if !parsed {
		return code
	}
	if len(pos) > 0 {
		return usageError(flags, stderr, fmt.Sprintf("unexpected argument %q", pos[0]))
	}
	ok := true
	line := func(name, val string, good bool) {
		mark := "ok  "
		if !good {
			mark, ok = "FAIL", false
		}
		fmt.Fprintf(stdout, "%s %-10s %s\n", mark, name, val)
	}
	fmt.Fprintf(stdout, "planbridge %s\n", version)
	dir := cf.dir()
	ctx := context.Background()
	// doctor only looks: it never creates the state directory or database.
	db := filepath.Join(dir, "state.db")
	_, dirErr := os.Stat(dir)
	dbInfo, dbErr := os.Stat(db)
	switch {
	case errors.Is(dirErr, fs.ErrNotExist):
		line("state dir", dir+" (not created yet; the first planbridge serve creates it)", true)
	case dirErr != nil:
		line("state dir", dirErr.Error(), false)
	default:
		line("state dir", dir, true)
	}
	if err := store.Preflight(ctx, dir); err != nil {
		line("database", err.Error(), false)
	} else if errors.Is(dbErr, fs.ErrNotExist) {
		line("database", db+" (not created yet)", true)
	} else if dbErr == nil && dbInfo.Size() == 0 {
		// Preflight accepted it: no session exists. Opening it would write
		// the schema; the first planbridge serve does that.
		line("database", db+" is empty (0 bytes, no sessions; the first planbridge serve writes its schema)", true)
	} else if st, err := store.Open(ctx, dir); err != nil {
		line("database", err.Error(), false)
	} else {
		probs := st.Check(ctx, true)
		integrity := "full integrity check passed; every session directory has its row"
		if len(probs) > 0 {
			integrity = strings.Join(probs, "; ")
		}
		line("integrity", integrity, len(probs) == 0)
		v, _ := st.SchemaVersion(ctx)
		stats, err := st.Stats(ctx)
		line("database", fmt.Sprintf("%s (schema %d, %d sessions, %d in Plan)", filepath.Join(dir, "state.db"), v, stats.Sessions, stats.InPlan), err == nil)
		line("blocked", fmt.Sprintf("plan_mode_blocked_total %d (tool calls refused by Plan)", stats.BlockedTotal), true)
		line("refused", fmt.Sprintf("other_refused_total %d (refusals outside Plan: unknown tools, commands the runner refused)", stats.RefusedTotal), true)
		line("proposals", countsText(stats.Proposals), true)
		line("handoffs", fmt.Sprintf("%d accepted plan(s) waiting for retry", stats.RetryPending), true)
		line("implement", "accepted plans "+countsText(stats.Implementations), stats.Implementations["corrupt"] == 0)
		line("goals", countsText(stats.Goals), stats.Goals["corrupt"] == 0)
		st.Close()
	}
	if out, err := exec.Command("git", "--version").Output(); err != nil {
		line("git", "not found: "+err.Error(), false)
	} else {
		line("git", strings.TrimSpace(string(out)), true)
	}
	line("bash", "read-only runner under the sandbox: "+shellConfinement(), true)
	layers := sandbox.Probe()
	for _, l := range layers.Lines() {
		fmt.Fprintf(stdout, "     %-10s %-8s %s\n", l[0], l[2], l[1])
	}
	if layers.None() {
		line("sandbox", "NO OS CONFINEMENT: neither Landlock nor bwrap works here; Plan's shell relies on the static and dynamic checks, seccomp and limits only", false)
	}
	ec := cf.engineConfig()
	switch ec.Kind {
	case "":
		line("engine", "none configured (set by the client at initialize, or --engine)", true)
	case "openai":
		oc := agent.OpenAIConfigFromEnv(os.Getenv)
		key := "no API key in the environment (Emacs passes one from auth-source)"
		if oc.APIKey != "" {
			key = "API key from the environment"
		}
		line("engine", fmt.Sprintf("openai %s model %q, %s", oc.BaseURL, oc.Model, key), oc.Model != "")
	case "anthropic":
		ac := agent.AnthropicConfigFromEnv(os.Getenv)
		_, err := agent.NewAnthropic(ac)
		line("engine", anthropicDoctor(ac, err), err == nil)
	case "acp":
		msg, err := acpDoctor(ctx, ec)
		line("engine", msg, err == nil)
		agentText := agent.ACPConfinementText(ec.Env)
		line("agent", agentText, !strings.HasPrefix(agentText, "NO OS CONFINEMENT"))
	default:
		_, err := agent.NewEngine(ec, os.Getenv)
		msg := ec.Kind + " " + ec.Script
		if err != nil {
			msg = err.Error()
		}
		line("engine", msg, err == nil)
	}
	if !ok {
		return 1
	}
	return 0
}

// anthropicDoctor describes the anthropic engine the environment
// configures, never the key itself.
func anthropicDoctor(ac agent.AnthropicConfig, err error) string {
	if err != nil {
		return err.Error()
	}
	base := ac.BaseURL
	if base == "" {
		base = agent.DefaultAnthropicBaseURL
	}
	key := "no API key in the environment (Emacs passes one from auth-source)"
	if ac.APIKey != "" {
		key = "API key from the environment"
	}
	return fmt.Sprintf("anthropic %s model %q, %s", base, ac.Model, key)
}

// countsText renders {"paused": 1, "done": 2} as "done 2, paused 1" ("none" if empty).
func countsText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
