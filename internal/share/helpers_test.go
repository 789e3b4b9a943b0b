package share_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/session"
	"planbridge/internal/share"
	"planbridge/internal/store"
)

const planText = "Looked around.\n\n<proposed_plan>\n# Rename the greeting\n\n## Key Changes\n- Change hello to hi in greet.txt\n\n## Validation\n- cat greet.txt\n</proposed_plan>\n"

const revisedPlan = "Revised.\n\n<proposed_plan>\n# Rename the greeting politely\n\n## Key Changes\n- Change hello to hi, politely\n\n## Validation\n- cat greet.txt\n</proposed_plan>\n"

// script returns a script: a Plan turn proposing, a revised proposal (for
// feedback), then plain answers for implementation turns.
func script(extra ...string) []string {
	steps := []string{fmt.Sprintf(`{"text": %q, "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}`, "Let me look.\n"),
		fmt.Sprintf(`{"text": %q}`, planText), fmt.Sprintf(`{"text": %q}`, revisedPlan)}
	steps = append(steps, extra...)
	for range 4 {
		steps = append(steps, `{"text": "Done.\n"}`)
	}
	return steps
}

// syncBuffer is a concurrency-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	t     *testing.T
	ctx   context.Context
	mgr   *session.Manager
	sess  *session.Session
	srv   *share.Server
	clock *clock
	logs  *syncBuffer

	mu      sync.Mutex // guards secrets
	secrets []string
}

type option func(*share.Config)

func withBudget(n int) option { return func(c *share.Config) { c.FrameBudget = n } }

// newFixture builds a real store, manager, script engine and share server;
// on cleanup it checks that no minted secret reached the log.
func newFixture(t *testing.T, steps []string, opts ...option) *fixture {
	t.Helper()
	return newFixtureIn(t, t.TempDir(), steps, opts...)
}

// gitWorkspace returns a fresh git checkout with one commit (Worktree
// acceptance forks it).
func gitWorkspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "greet.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// forkOf waits for the session's forked event and returns the fork's id.
func (f *fixture) forkOf() string {
	f.t.Helper()
	var id string
	waitFor(f.t, "the forked event", func() bool {
		for _, e := range f.eventsOf("forked") {
			var d struct{ Fork string }
			json.Unmarshal(e.Data, &d)
			id = d.Fork
		}
		return id != ""
	})
	return id
}

func newFixtureIn(t *testing.T, ws string, steps []string, opts ...option) *fixture {
	t.Helper()
	return newFixtureWith(t, ws, steps, nil, opts...)
}

// newFixtureWith is newFixtureIn whose session manager's configuration
// tune may change first (nil: none).
func newFixtureWith(t *testing.T, ws string, steps []string, tune func(*session.Config), opts ...option) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	st, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte("["+strings.Join(steps, ",\n")+"]"), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := agent.LoadScript(path)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	lg := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	mcfg := session.Config{Store: st, Engine: sc, Logger: lg}
	if tune != nil {
		tune(&mcfg)
	}
	mgr := session.NewManager(mcfg)
	sess, err := mgr.Create(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Now()}
	cfg := share.Config{Manager: mgr, Logger: lg, Now: clk.Now}
	for _, o := range opts {
		o(&cfg)
	}
	f := &fixture{t: t, ctx: ctx, mgr: mgr, sess: sess, srv: share.New(cfg), clock: clk, logs: logs}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		f.srv.Close(c)
		mgr.Close()
		st.Close()
		f.checkLogs()
	})
	return f
}

func (f *fixture) checkLogs() {
	f.t.Helper()
	logs := f.logs.String()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.secrets {
		if strings.Contains(logs, s) {
			f.t.Errorf("a link secret reached the log:\n%s", logs)
		}
	}
}

// propose runs a Plan turn that proposes and returns the pending approval.
func (f *fixture) propose() session.ApprovalView {
	f.t.Helper()
	if _, err := f.sess.Submit(f.ctx, "/plan rename the greeting"); err != nil {
		f.t.Fatal(err)
	}
	if err := f.sess.Wait(f.ctx); err != nil {
		f.t.Fatal(err)
	}
	v := f.sess.Approval()
	if !v.Pending || v.Title != "Rename the greeting" {
		f.t.Fatalf("after the Plan turn: pending=%v title=%q", v.Pending, v.Title)
	}
	return v
}

// setWorktree makes the host's selection Worktree (as Emacs would).
func (f *fixture) setWorktree(attempt string) {
	f.t.Helper()
	if _, err := f.sess.UpdateSelection(f.ctx, attempt, handoff.Change{Axis: "location", Value: "worktree"}); err != nil {
		f.t.Fatal(err)
	}
}

// share shares the fixture's session and returns a link per tier.
func (f *fixture) share(tiers ...share.Tier) map[share.Tier]share.Link {
	f.t.Helper()
	return f.shareSession(f.sess.ID(), tiers...)
}

func (f *fixture) shareSession(sid string, tiers ...share.Tier) map[share.Tier]share.Link {
	f.t.Helper()
	links, err := f.srv.Start(f.ctx, sid, tiers, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[share.Tier]share.Link{}
	for _, l := range links {
		out[l.Tier] = l
		f.remember(l)
	}
	return out
}

func (f *fixture) remember(l share.Link) {
	f.mu.Lock()
	f.secrets = append(f.secrets, secretOf(f.t, l))
	f.mu.Unlock()
}

// secretOf and endpoint split a link URL into the key and the room base.
func secretOf(t *testing.T, l share.Link) string {
	t.Helper()
	_, frag, ok := strings.Cut(l.URL, "#k=")
	if !ok || frag == "" {
		t.Fatalf("link %q has no #k= fragment", l.URL)
	}
	return frag
}

func endpoint(l share.Link, path string) string {
	base, _, _ := strings.Cut(l.URL, "#")
	return base + path
}

type response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

// do sends a request with l's key in the header (key "" sends none).
func do(t *testing.T, method, url, key string, body any) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set(share.KeyHeader, key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := response{Status: res.StatusCode, Header: res.Header, Raw: string(raw)}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

func (f *fixture) call(l share.Link, method, path string, body any) response {
	f.t.Helper()
	return do(f.t, method, endpoint(l, path), secretOf(f.t, l), body)
}

// sseFrame is one Server-Sent Event.
type sseFrame struct {
	Event, ID, Data string
}

// sse is an open event stream.
type sse struct {
	res    *http.Response
	frames chan sseFrame
}

func openSSE(t *testing.T, url, key string, hdr map[string]string) *sse {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set(share.KeyHeader, key)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Fatalf("events: %d %s", res.StatusCode, b)
	}
	s := &sse{res: res, frames: make(chan sseFrame, 1024)}
	t.Cleanup(func() { res.Body.Close() })
	go func() {
		defer close(s.frames)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var fr sseFrame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if fr.Data != "" {
					if fr.Event == "" {
						fr.Event = "message"
					}
					s.frames <- fr
				}
				fr = sseFrame{}
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "event: "):
				fr.Event = line[7:]
			case strings.HasPrefix(line, "id: "):
				fr.ID = line[4:]
			case strings.HasPrefix(line, "data: "):
				fr.Data = line[6:]
			}
		}
	}()
	return s
}

// next returns the next frame matching pred, failing after 10 s. ok is
// false if the stream ended first.
func (s *sse) next(t *testing.T, pred func(sseFrame) bool) (sseFrame, bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case fr, ok := <-s.frames:
			if !ok {
				return sseFrame{}, false
			}
			if pred(fr) {
				return fr, true
			}
		case <-timeout:
			t.Fatal("timed out waiting for an event")
		}
	}
}

func kind(k string) func(sseFrame) bool {
	return func(fr sseFrame) bool {
		var ev session.Event
		return fr.Event == "message" && json.Unmarshal([]byte(fr.Data), &ev) == nil && ev.Kind == k
	}
}

func named(name string) func(sseFrame) bool {
	return func(fr sseFrame) bool { return fr.Event == name }
}

// eventsOf returns the session's persisted events of kind k.
func (f *fixture) eventsOf(k string) []session.Event {
	f.t.Helper()
	evs, err := f.sess.Events(f.ctx, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []session.Event
	for _, e := range evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // a hang guard: a fork checks out a repository, slow on a loaded machine
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
