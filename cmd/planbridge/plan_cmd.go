package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"

	"planbridge/internal/agent"
	"planbridge/internal/planonly"
	"planbridge/internal/redact"
	"planbridge/internal/session"
	"planbridge/internal/store"
)

// exitNoProposal is planbridge plan's exit status when the turn ended
// without a proposal.
const exitNoProposal = 3

// runPlan runs one headless Plan turn and prints its proposal. There is no
// client, so nothing can accept: the session is created, put in Plan, given
// the prompt, and read back; permission asks are denied.
func runPlan(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("plan", stderr)
	var cf commonFlags
	cf.register(fs)
	dir := fs.String("C", ".", "the repository (workspace) to plan in")
	asJSON := fs.Bool("json", false, "print one JSON document {proposed, title, body, hash, diagnostics, warnings, ...}")
	var readRoots rootList
	readRoots.fromEnv(os.Getenv("PLANBRIDGE_READ_ROOTS"))
	fs.Var(&readRoots, "read-root", "a directory outside the workspace that tools and Plan's shell may read (repeatable)")
	pos, code, ok := parseFlags(fs, args, true, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "pass the prompt as one argument (quote it)")
	}
	prompt := pos[0]
	ec := cf.engineConfig()
	if ec.Kind == "" {
		return usageError(fs, stderr, "no engine: pass --engine (script, openai or anthropic) or set PLANBRIDGE_ENGINE")
	}
	lg, closeLog, err := openLogger(cf.logFile, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "planbridge plan: %v\n", err)
		return 1
	}
	defer closeLog()
	stateDir := cf.stateDir
	if stateDir == "" {
		// A private, throwaway state: a CI run leaves nothing behind and
		// never touches the person's sessions.
		tmp, err := os.MkdirTemp("", "planbridge-plan-")
		if err != nil {
			fmt.Fprintf(stderr, "planbridge plan: %v\n", err)
			return 1
		}
		defer os.RemoveAll(tmp)
		stateDir = filepath.Join(tmp, "state")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// The same lock and integrity checks as serve: a plan run never shares
	// a state directory with a running server.
	st, release, _, err := openState(ctx, stateDir, lg) // what a start could not settle is logged
	if err != nil {
		fmt.Fprintf(stderr, "planbridge plan: %v\n", err)
		return 1
	}
	defer release()
	defer st.Close()
	red := &redact.Set{}
	acps := &acpEngines{}
	defer acps.Close() // after the manager's Close below (defers run last first)
	mgr := session.NewManager(session.Config{Store: st, Shell: newShell(), Logger: lg, Redact: red, ReadRoots: readRoots,
		Hidden: []string{absOr(stateDir)}})
	defer mgr.Close()
	// Nobody is there to answer: every ask is a refusal.
	mgr.SetAsker(func(context.Context, string, agent.ToolCall, string) (bool, error) { return false, nil })
	eng, err := newEngine(ctx, st, red, ec, lg, acps)
	if err != nil {
		fmt.Fprintf(stderr, "planbridge plan: %v\n", err)
		return 1
	}
	mgr.SetEngine(eng)
	res, err := planonly.Run(ctx, mgr, *dir, prompt)
	var se *session.Error
	switch {
	case errors.As(err, &se):
		fmt.Fprintf(stderr, "planbridge plan: %s\n", se.Message)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "planbridge plan: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		enc.Encode(res)
	} else {
		for _, d := range res.Diagnostics {
			fmt.Fprintf(stderr, "planbridge plan: %s: %s\n", d.Level, d.Message)
		}
		if res.Proposed {
			fmt.Fprintln(stdout, res.Body)
		}
	}
	if !res.Proposed {
		if !*asJSON {
			fmt.Fprintln(stderr, "planbridge plan: the turn ended without a proposal")
		}
		return exitNoProposal
	}
	return 0
}

// runPlanTrailer prints the "Plan: <title> (sha256:<12 hex>)" trailer of a
// session's accepted plan, reading the state without changing it.
func runPlanTrailer(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := newFlags("plan-trailer", stderr)
	var cf commonFlags
	flags.StringVar(&cf.stateDir, "state-dir", "", "state directory (default $PLANBRIDGE_STATE_DIR or $XDG_STATE_HOME/planbridge)")
	dir := flags.String("C", ".", "without SESSION: the checkout whose latest session with an accepted plan is named")
	pos, code, ok := parseFlags(flags, args, true, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageError(flags, stderr, "pass at most one SESSION")
	}
	stateDir := cf.dir()
	// Never create a state directory just to say there is nothing in it.
	if _, err := os.Stat(filepath.Join(stateDir, "state.db")); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "planbridge plan-trailer: no planbridge state in %s\n", stateDir)
		return 1
	}
	ctx := context.Background()
	st, err := store.Open(ctx, stateDir)
	if err != nil {
		fmt.Fprintf(stderr, "planbridge plan-trailer: %v\n", err)
		return 1
	}
	defer st.Close()
	mgr := session.NewManager(session.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ref, err := trailerPlan(ctx, mgr, pos, *dir)
	if err != nil {
		fmt.Fprintf(stderr, "planbridge plan-trailer: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, ref.Trailer)
	return 0
}

// trailerPlan finds the accepted plan: SESSION's, or that of the most
// recently updated session whose workspace is dir or contains it.
func trailerPlan(ctx context.Context, mgr *session.Manager, pos []string, dir string) (*session.PlanRef, error) {
	if len(pos) == 1 {
		ref, err := mgr.AcceptedPlan(ctx, pos[0])
		if err != nil {
			return nil, err
		}
		if ref == nil || ref.Trailer == "" {
			return nil, fmt.Errorf("session %s has no accepted plan", pos[0])
		}
		return ref, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	infos, err := mgr.List(ctx)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(infos, func(i, j int) bool { return infos[i].UpdatedAt.After(infos[j].UpdatedAt) })
	for _, in := range infos {
		if in.AcceptedPlan == nil || in.AcceptedPlan.Trailer == "" || !within(abs, in.Workspace) {
			continue
		}
		return in.AcceptedPlan, nil
	}
	return nil, fmt.Errorf("no session in %s has an accepted plan (name one: planbridge plan-trailer SESSION)", abs)
}

// within reports whether path is root or below it.
func within(path, root string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
