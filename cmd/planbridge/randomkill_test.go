package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/store"
	"planbridge/rpc"
)

// Environment of the random-kill test (`make crash N=300 SEED=7`).
const (
	crashTrialsEnv = "PLANBRIDGE_CRASH_TRIALS" // trials in all (default 30)
	crashSeedEnv   = "PLANBRIDGE_CRASH_SEED"   // default 14
	// crashVariantEnv runs one variant only (here-current, here-fresh,
	// here-summary, worktree, goal).
	crashVariantEnv = "PLANBRIDGE_CRASH_VARIANT"
)

// fakeModel is a local OpenAI-compatible streaming server playing a model
// that plans, summarizes and implements (write greet.txt, complete its
// step, end the Goal if there is one), deciding each reply from the
// conversation it is sent, as a real model would. It counts what the
// issue counts: kickoffs sent, summaries completed.
type fakeModel struct {
	mu         sync.Mutex
	kickoffs   int // requests whose newest message is the kickoff prompt
	summaries  int // summary responses streamed to the end
	requests   int
	inflight   int // requests being answered
	violations []string
}

// settle waits until no request of a killed process is still being
// answered, so the counts include every response the server finished.
func (f *fakeModel) settle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		n := f.inflight
		f.mu.Unlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d model requests still being answered", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

const kickoffMarker = "Implement the accepted plan"

type fakeMsg struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	Name       string `json:"name"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body struct {
		Messages []fakeMsg `json:"messages"`
		Tools    []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(b, &body); err != nil || len(body.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, 400)
		return
	}
	msgs := body.Messages
	last := msgs[len(msgs)-1]
	f.mu.Lock()
	f.requests++
	f.inflight++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	flusher := w.(http.Flusher)
	send := func(v string) bool {
		if _, err := fmt.Fprintf(w, "data: %s\n\n", v); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	text := func(s string) bool {
		for i := 0; i < len(s); i += 1 + len(s)/4 {
			end := min(len(s), i+1+len(s)/4)
			c, _ := json.Marshal(s[i:end])
			if !send(`{"choices":[{"index":0,"delta":{"content":` + string(c) + `}}]}`) {
				return false
			}
			time.Sleep(2 * time.Millisecond)
		}
		return true
	}
	call := func(name, args string) {
		a, _ := json.Marshal(args)
		send(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":%q,"arguments":%s}}]}}]}`,
			time.Now().UnixNano(), name, a))
		send(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
	}
	done := func() bool {
		send(`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
		return send(`[DONE]`)
	}
	if msgs[0].Role == "system" && strings.HasPrefix(msgs[0].Content, "You write handoff summaries") {
		sum := "## Scope\nRename.\n## Constraints & Preferences\n-\n## Work & Evidence\n-\n## Key Decisions\n-\n## Open Questions & Risks\n-\n## Critical Context\n-\n## Relevant Files\ngreet.txt\n## Skills Invoked\nnone\n"
		if text(sum) && send(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`) && done() {
			f.mu.Lock()
			f.summaries++
			f.mu.Unlock()
		}
		return
	}
	kick := -1
	for i, m := range msgs {
		if m.Role == "user" && strings.HasPrefix(m.Content, kickoffMarker) {
			if kick >= 0 {
				f.mu.Lock()
				f.violations = append(f.violations, "the kickoff prompt appears twice in one conversation")
				f.mu.Unlock()
			}
			kick = i
		}
	}
	switch {
	case last.Role == "user" && strings.HasPrefix(last.Content, "are you there"):
		text("Yes, still here.\n")
	case kick < 0:
		text(planText)
	default:
		if kick == len(msgs)-1 {
			f.mu.Lock()
			f.kickoffs++
			f.mu.Unlock()
		}
		did, names := map[string]bool{}, map[string]string{}
		for _, m := range msgs[kick:] {
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Function.Name
			}
			if m.Role == "tool" && !strings.HasPrefix(m.Content, "error") && !strings.HasPrefix(m.Content, "{") {
				did[names[m.ToolCallID]] = true
			}
		}
		goalTool := false
		for _, t := range body.Tools {
			goalTool = goalTool || t.Function.Name == "update_goal"
		}
		switch {
		case !did["write_file"]:
			text("Implementing.\n")
			call("write_file", `{"path":"greet.txt","content":"hi\n"}`)
		case !did["update_plan_step"]:
			call("update_plan_step", `{"step":"s1","status":"completed"}`)
		case goalTool && !did["update_goal"]:
			call("update_goal", `{"status":"complete","summary":"greet.txt says hi"}`)
		default:
			text("Done: greet.txt says hi.\n")
		}
	}
	if last.Role != "x" {
		send(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	}
	done()
}

func (f *fakeModel) counts() (kickoffs, summaries int, violations []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kickoffs, f.summaries, append([]string(nil), f.violations...)
}

type killVariant struct {
	name, location, context, execution string
}

var killVariants = []killVariant{
	{"here-current", "here", "current", "direct"},
	{"here-fresh", "here", "fresh", "direct"},
	{"here-summary", "here", "summary", "direct"},
	{"worktree", "worktree", "current", "direct"},
	{"goal", "here", "current", "goal"},
}

// TestRandomKill: SIGKILL at a uniformly random moment of the whole
// pipeline, from acceptance to the finished implementation, for each
// variant; restart; recover with the one recovery command; then count at
// the model server and check the state: exactly one kickoff, at most one
// completed summary (a second only when the first was cut off before it
// was committed), one archive, one fork whose git status shows only the
// planned edit, no event number reused, and the session still usable.
func TestRandomKill(t *testing.T) {
	trials := 30
	if v, err := strconv.Atoi(os.Getenv(crashTrialsEnv)); err == nil && v > 0 {
		trials = v
	}
	seed := int64(14)
	if v, err := strconv.ParseInt(os.Getenv(crashSeedEnv), 10, 64); err == nil {
		seed = v
	}
	rng := rand.New(rand.NewSource(seed))
	t.Logf("%d trials, seed %d", trials, seed)
	variants := killVariants
	if only := os.Getenv(crashVariantEnv); only != "" {
		variants = nil
		for _, v := range killVariants {
			if v.name == only {
				variants = append(variants, v)
			}
		}
		if len(variants) == 0 {
			t.Fatalf("%s=%s: no such variant", crashVariantEnv, only)
		}
	}
	spans := map[string]time.Duration{}
	for _, v := range variants {
		spans[v.name] = killTrial(t, v, -1) // calibration: one uninterrupted run
	}
	for i := 0; i < trials; i++ {
		v := variants[i%len(variants)]
		at := time.Duration(rng.Int63n(int64(spans[v.name]) + 1))
		t.Run(fmt.Sprintf("%03d-%s-%s", i, v.name, at.Round(time.Millisecond)), func(t *testing.T) { killTrial(t, v, at) })
	}
}

func initOpenAI(t *testing.T, ctx context.Context, c *rpc.Client, url string) {
	t.Helper()
	if err := c.Call(ctx, "initialize", map[string]any{"engine": map[string]string{
		"kind": "openai", "base_url": url, "model": "fake", "api_key": "k"}}, nil); err != nil {
		t.Fatal(err)
	}
}

// killTrial runs one variant, killing the server at offset at after the
// acceptance starts (at < 0: no kill), and returns how long the pipeline
// took from acceptance to its end.
func killTrial(t *testing.T, v killVariant, at time.Duration) time.Duration {
	ctx := ctxT(t)
	model := &fakeModel{}
	srv := httptest.NewServer(model)
	defer srv.Close()
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	p := startServe(t, state)
	initOpenAI(t, ctx, p.c, srv.URL)
	s, card := proposeAndWait(t, ctx, p, ws)
	budget := int64(0)
	changes := []handoff.Change{{Axis: "mode", Value: "full-auto"}, {Axis: "context", Value: v.context}, {Axis: "location", Value: v.location}}
	if v.execution == "goal" {
		changes = append(changes, handoff.Change{Axis: "execution", Value: "goal"}, handoff.Change{Axis: "budget", Budget: &budget})
	}
	for _, ch := range changes {
		card = update(t, ctx, p.c, s.ID, card.Attempt, ch)
	}
	accept := func(c *rpc.Client, attempt string) error {
		return c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": attempt, "branch": "feature/rename"}, nil)
	}
	start := time.Now()
	var span time.Duration
	live := p.c
	if at < 0 {
		if err := accept(p.c, card.Attempt); err != nil {
			t.Fatal(err)
		}
		waitPipelineDone(t, ctx, p, s.ID, v)
		span = time.Since(start)
		p.stop()
	} else {
		go accept(p.c, card.Attempt)
		time.Sleep(at)
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
	}
	liveEvents := live.Events()
	model.settle(t)
	_, summariesBefore, _ := model.counts()
	summaryCommitted := summaryStored(t, state, s.ID)

	p2 := startServe(t, state)
	initOpenAI(t, ctx, p2.c, srv.URL)
	if at >= 0 {
		var res struct{ Action string }
		err := p2.c.Call(ctx, "handoff/recover", map[string]string{"session": s.ID}, &res)
		if err != nil {
			if !strings.Contains(err.Error(), "nothing") {
				t.Fatalf("recover: %v", err)
			}
			// Killed before the acceptance committed: the card is back.
			if c2 := getApproval(t, ctx, p2.c, s.ID); c2.Pending {
				if err := accept(p2.c, c2.Attempt); err != nil {
					t.Fatal(err)
				}
			}
		}
		waitPipelineDone(t, ctx, p2, s.ID, v)
	}

	// Counted at the model server.
	kickoffs, summaries, violations := model.counts()
	for _, vio := range violations {
		t.Error(vio)
	}
	if kickoffs > 1 {
		t.Errorf("the kickoff was sent %d times", kickoffs)
	}
	allowed := 1
	if summariesBefore == 1 && !summaryCommitted {
		allowed = 2 // the first completed as the process died, before its commit
	}
	if v.context == "summary" && (summaries < 1 || summaries > allowed) {
		t.Errorf("%d completed summaries (allowed %d)", summaries, allowed)
	} else if v.context != "summary" && summaries != 0 {
		t.Errorf("%d summaries without Summary", summaries)
	}
	// The state.
	st := p2.opened(t)
	archives, _ := filepath.Glob(filepath.Join(state, "sessions", s.ID, "work", "plans", "accepted-*.md"))
	if len(archives) != 1 {
		t.Errorf("%d archives", len(archives))
	}
	impl := s.ID
	forks, _ := st.ForksOf(ctx, s.ID)
	wsImpl := ws
	if v.location == "worktree" {
		if len(forks) != 1 {
			t.Fatalf("%d forks", len(forks))
		}
		impl, wsImpl = forks[0].ID, forks[0].Workspace
		if out := git(t, ws, "worktree", "list"); strings.Count(out, ".worktrees") != 1 {
			t.Errorf("git worktree list:\n%s", out)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "greet.txt")); string(b) != "hello\n" {
			t.Errorf("source greet.txt = %q", b)
		}
	} else if len(forks) != 0 {
		t.Errorf("%d forks of a Here handoff", len(forks))
	}
	if out := git(t, wsImpl, "status", "--porcelain"); strings.TrimSpace(out) != "M greet.txt" {
		t.Errorf("git status where the plan was implemented: %q", out)
	}
	if b, _ := os.ReadFile(filepath.Join(wsImpl, "greet.txt")); string(b) != "hi\n" {
		t.Errorf("greet.txt = %q", b)
	}
	// No event number was given out twice: what the first process showed
	// is exactly what is stored under that number.
	for _, id := range []string{s.ID, impl} {
		var opened struct {
			Events []rpc.Event `json:"events"`
		}
		if err := p2.c.Call(ctx, "session/open", map[string]any{"session": id}, &opened); err != nil {
			t.Fatal(err)
		}
		stored := map[int64]rpc.Event{}
		for _, e := range opened.Events {
			stored[e.Seq] = e
		}
		for _, e := range liveEvents {
			if e.Session != id || e.Seq == 0 {
				continue
			}
			got, ok := stored[e.Seq]
			if !ok || got.Kind != e.Kind || !sameJSON(got.Data, e.Data) {
				t.Errorf("event %d of %s was shown as %s %s but stored as %s %s", e.Seq, id, e.Kind, e.Data, got.Kind, got.Data)
				break
			}
		}
	}
	var info struct{ Mode string }
	p2.c.Call(ctx, "plan/status", map[string]string{"session": s.ID}, &info)
	if info.Mode != "ask" {
		t.Errorf("session mode became %q", info.Mode)
	}
	// The session is usable.
	n := 0
	for _, e := range p2.c.Events() {
		if e.Kind == "turn_end" {
			n++
		}
	}
	if err := p2.c.Call(ctx, "session/submit", map[string]string{"session": impl, "text": "are you there?"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p2.c, n+1)
	if evs := p2.c.Events(); !strings.Contains(string(evs[len(evs)-1].Data), `"ok":true`) && !strings.Contains(lastTurnEnd(evs), `"ok":true`) {
		t.Errorf("the follow-up turn failed: %s", lastTurnEnd(evs))
	}
	p2.stop()
	return span
}

func lastTurnEnd(evs []rpc.Event) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == "turn_end" {
			return string(evs[i].Data)
		}
	}
	return ""
}

// summaryStored reports whether a completed summary is committed (cached
// in the retry record, or the handoff already past it).
func summaryStored(t *testing.T, state, id string) bool {
	st, err := store.Open(context.Background(), state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	data, err := st.GetRetryRecord(context.Background(), id)
	if errors.Is(err, store.ErrNotFound) {
		p, err := st.GetProposal(context.Background(), id)
		return err == nil && p.Status == "accepted"
	}
	rec, err := handoff.UnmarshalRecord(data)
	return err == nil && rec.Summary != ""
}

// waitPipelineDone waits until the implementation is finished: no retry
// record anywhere, the accepted plan's steps done (and the Goal complete),
// nothing running.
func waitPipelineDone(t *testing.T, ctx context.Context, p *proc, src string, v killVariant) {
	t.Helper()
	st, err := store.Open(ctx, p.state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		impl := src
		if forks, _ := st.ForksOf(ctx, src); len(forks) == 1 {
			impl = forks[0].ID
		}
		_, e1 := st.GetRetryRecord(ctx, src)
		_, e2 := st.GetRetryRecord(ctx, impl)
		tr, _ := st.GetTracking(ctx, impl)
		var plan struct{ Status string }
		json.Unmarshal([]byte(tr.Plan), &plan)
		ok := errors.Is(e1, store.ErrNotFound) && errors.Is(e2, store.ErrNotFound) && plan.Status == "done"
		why := "records or plan"
		if ok && v.execution == "goal" {
			g, err := st.CurrentGoal(ctx, impl)
			var gd struct{ Status string }
			json.Unmarshal([]byte(g.Data), &gd)
			ok = err == nil && gd.Status == "complete"
			why = fmt.Sprintf("goal %v %q", err, gd.Status)
		}
		if ok {
			var opened struct {
				Session struct{ Busy bool } `json:"session"`
			}
			err := p.c.Call(ctx, "session/open", map[string]any{"session": impl, "since": 1 << 62}, &opened)
			if err == nil && !opened.Session.Busy {
				return
			}
			why = fmt.Sprintf("open %v busy %v", err, opened.Session.Busy)
		}
		select {
		case <-ctx.Done():
			var evs []string
			for _, e := range p.c.Events() {
				evs = append(evs, e.Kind+" "+string(e.Data))
			}
			t.Fatalf("the implementation never finished (%s): records %v %v, plan %q; stderr:\n%s\nevents:\n%s", why, e1, e2, plan.Status, p.stderr.String(), strings.Join(evs, "\n"))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
