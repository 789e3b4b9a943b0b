package trackbind

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"planbridge/internal/agent"
	"planbridge/proposal"
	"planbridge/review"
)

// fakePort is the session as its tracker sees it.
type fakePort struct {
	mu        sync.Mutex
	t         *review.Tracker
	ws, dir   string
	scopes    []review.Scope
	pauses    []string
	artifacts map[string]string
}

func (f *fakePort) CommitTracking(context.Context, review.Row) error { return nil }
func (f *fakePort) TodosChanged([]review.TodoItem)                   {}
func (f *fakePort) StepsChanged(*review.TrackedPlan)                 {}
func (f *fakePort) ScopeChanged(sc review.Scope) {
	f.mu.Lock()
	f.scopes = append(f.scopes, sc)
	f.mu.Unlock()
}
func (f *fakePort) ReportBuilt(review.Report) {}
func (f *fakePort) Notice(string)             {}
func (f *fakePort) Unsaved(string, error)     {}
func (f *fakePort) Workspace() string         { return f.ws }
func (f *fakePort) ReadArtifact(rel, hash string) (string, error) {
	if b, ok := f.artifacts[rel]; ok && proposal.HashBody(b) == hash {
		return b, nil
	}
	return "", errors.New("no such artifact")
}
func (f *fakePort) Asker() review.Asker { return nil }
func (f *fakePort) Pause(reason string) {
	f.mu.Lock()
	f.pauses = append(f.pauses, reason)
	f.mu.Unlock()
	f.t.SetStatus(context.Background(), review.ImplPaused, reason)
}

func (f *fakePort) lastScope() review.Scope {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.scopes) == 0 {
		return review.Scope{}
	}
	return f.scopes[len(f.scopes)-1]
}

const planBody = "# Tidy\n\n## Steps\n1. Edit `src/a.go`\n2. Finish\n"

// setup is a binding over a fresh tracker for workspace ws (a git
// checkout when repo), with an accepted plan whose staged base declares
// scope (nil: nothing tracked).
func setup(t *testing.T, repo bool, scope []string) (Binding, *fakePort) {
	t.Helper()
	state, ws := t.TempDir(), t.TempDir()
	if repo {
		git(t, ws, "init", "-q", "-b", "main")
		os.MkdirAll(filepath.Join(ws, "src"), 0o755)
		os.WriteFile(filepath.Join(ws, "src", "a.go"), []byte("package a\n"), 0o644)
		git(t, ws, "add", "-A")
		git(t, ws, "commit", "-q", "-m", "init")
	}
	work := filepath.Join(state, "sessions", "s1", "work")
	os.MkdirAll(filepath.Join(work, "plans"), 0o700)
	dir := filepath.Join(state, "sessions", "s1", "review")
	f := &fakePort{ws: ws, dir: dir, artifacts: map[string]string{}}
	tr := review.NewTracker(review.Config{Session: "s1", Dir: dir, State: state, Work: work, Plans: "plans", Port: f})
	f.t = tr
	if scope != nil {
		hash := proposal.HashBody(planBody)
		f.artifacts["plans/accepted-x.md"] = planBody
		id, err := review.StageBase(context.Background(), dir, ws, "Tidy", hash, "work://plans/accepted-x.md", scope)
		if err != nil {
			t.Fatal(err)
		}
		tr.Begin(review.Accepted{Title: "Tidy", Artifact: "work://plans/accepted-x.md", Hash: hash, Body: planBody, Base: id})
		if err := review.BaseCommitted(dir, id); err != nil {
			t.Fatal(err)
		}
	}
	reg := agent.NewRegistry(append(agent.DefaultTools(), Tools(tr)...)...)
	return Binding{Tracker: tr, Tool: reg.Get, Roots: func() agent.Roots { return agent.Roots{Workspace: ws, Work: work} }}, f
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func call(name, args string) agent.ToolCall {
	return agent.ToolCall{ID: "c1", Name: name, Arguments: json.RawMessage(args)}
}

func TestCall(t *testing.T) {
	b, _ := setup(t, false, nil)
	for _, c := range []struct {
		name, call, args string
		command          string
		writes           []string
	}{
		{"bash", "bash", `{"command":"make -j2"}`, "make -j2", nil},
		{"a file tool declares its path", "write_file", `{"path":"src/x.go","content":""}`, "", []string{"src/x.go"}},
		{"as spelled", "write_file", `{"path":"/abs/y.go","content":""}`, "", []string{"/abs/y.go"}},
		{"a patch declares every file", "apply_patch",
			`{"patch":"--- a/one.txt\n+++ b/one.txt\n@@ -1 +1 @@\n-a\n+b\n--- a/work://notes/n.md\n+++ b/work://notes/n.md\n@@ -1 +1 @@\n-a\n+b\n"}`, "",
			nil},
		{"a read declares nothing", "read_file", `{"path":"src/a.go"}`, "", nil},
		{"a session-only tool declares nothing", "todo_write", `{"items":[]}`, "", nil},
		{"an unknown tool declares nothing", "no_such_tool", `{"path":"x"}`, "", nil},
		{"arguments that cannot be read", "write_file", `{"path":`, "", nil},
		{"a command named by another tool is no command", "write_file", `{"path":"a","command":"rm -rf /"}`, "rm -rf /", []string{"a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := b.Call(call(c.call, c.args))
			if got.ID != "c1" || got.Name != c.call || string(got.Arguments) != c.args {
				t.Errorf("call %+v lost its identity", got)
			}
			if got.Command != c.command {
				t.Errorf("command %q, want %q", got.Command, c.command)
			}
			if c.writes != nil && !slices.Equal(got.Writes, c.writes) {
				t.Errorf("writes %q, want %q", got.Writes, c.writes)
			}
			if c.writes == nil && c.call != "apply_patch" && len(got.Writes) != 0 {
				t.Errorf("writes %q, want none", got.Writes)
			}
		})
	}
}

func TestScopeAndWatcher(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		scope []string
		plan  bool
		set   func(*review.Tracker)
		held  bool
	}{
		{"nothing tracked", nil, false, nil, false},
		{"a running implementation with a scope", []string{"src"}, false, nil, true},
		{"a Plan turn never", []string{"src"}, true, nil, false},
		{"paused still holds", []string{"src"}, false, func(tr *review.Tracker) { tr.SetStatus(ctx, review.ImplPaused, "x") }, true},
		{"a scope declaring nothing holds nothing", []string{}, false, nil, false},
		{"done releases", []string{"src"}, false, func(tr *review.Tracker) {
			tr.UpdateStep(ctx, "s1", review.StepCompleted)
			tr.UpdateStep(ctx, "s2", review.StepCompleted)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, _ := setup(t, true, c.scope)
			if c.set != nil {
				c.set(b.Tracker)
			}
			sc, w := b.Scope(c.plan), b.Watcher(c.plan, false)
			if (sc != nil) != c.held || (w != nil) != c.held {
				t.Fatalf("scope %v, watcher %v, want held %v", sc, w, c.held)
			}
			if c.held && (!sc.Allows("src/a.go") || sc.Allows("docs/b.md")) {
				t.Error("the held scope is not the tracker's")
			}
		})
	}
}

// TestWatcherIsTheTrackers: the watcher hands the tracker the command and
// whether a person can answer; unattended, what a command wrote outside
// the scope is put back and the implementation pauses.
func TestWatcherIsTheTrackers(t *testing.T) {
	ctx := context.Background()
	b, f := setup(t, true, []string{"src"})
	w := b.Watcher(false, true)
	after, err := w.Before(ctx, call("bash", `{"command":"touch stray.txt"}`))
	if err != nil || after == nil {
		t.Fatalf("no watch: %v", err)
	}
	stray := filepath.Join(f.ws, "stray.txt")
	os.WriteFile(stray, []byte("x"), 0o644)
	out := after(ctx, "\n[exit status 0]")
	if _, err := os.Stat(stray); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stray file outside the scope was kept (%v); output %q", err, out)
	}
	if len(f.pauses) != 1 || b.Tracker.Plan().Status != review.ImplPaused {
		t.Errorf("pauses %q, status %s: want one pause", f.pauses, b.Tracker.Plan().Status)
	}
}

func TestExtend(t *testing.T) {
	b, f := setup(t, true, []string{"src"})
	ws := f.ws
	os.MkdirAll(filepath.Join(ws, "docs"), 0o755)
	os.WriteFile(filepath.Join(ws, "docs", "target.md"), nil, 0o644)
	os.Symlink("docs/target.md", filepath.Join(ws, "alias.md"))
	os.Symlink("src/a.go", filepath.Join(ws, "inscope.go"))
	var want []string
	for _, c := range []struct {
		name, call, args string
		adds             []string
	}{
		{"a workspace file outside the scope", "write_file", `{"path":"docs/new.md","content":""}`, []string{"docs/new.md"}},
		{"the file really written, through a link", "edit_file", `{"path":"alias.md","old":"a","new":"b"}`, []string{"docs/target.md"}},
		{"spelled absolutely", "write_file", `{"path":"` + filepath.Join(ws, "top.txt") + `","content":""}`, []string{"top.txt"}},
		{"already in the scope", "write_file", `{"path":"src/b.go","content":""}`, nil},
		{"a link into the scope", "write_file", `{"path":"inscope.go","content":""}`, nil},
		{"a note", "write_file", `{"path":"work://notes/n.md","content":""}`, nil},
		{"the published plan", "write_file", `{"path":"work://plans/current.md","content":""}`, nil},
		{"a control file", "write_file", `{"path":".git/config","content":""}`, nil},
		{"outside the workspace", "write_file", `{"path":"../escape.txt","content":""}`, nil},
		{"a command declares nothing", "bash", `{"command":"touch x"}`, nil},
		{"granted once", "write_file", `{"path":"docs/new.md","content":""}`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			b.Extend(call(c.call, c.args))
			want = append(want, c.adds...)
			if got := f.lastScope().Extensions; !slices.Equal(got, want) {
				t.Errorf("extensions %q, want %q", got, want)
			}
		})
	}
	// Nothing tracked: nothing to extend, nothing published.
	b2, f2 := setup(t, true, nil)
	b2.Extend(call("write_file", `{"path":"docs/x.md","content":""}`))
	if len(f2.scopes) != 0 {
		t.Errorf("extended a scope nobody holds: %+v", f2.scopes)
	}
}

// TestLogTool: each completed call of a running implementation is logged
// with the files its tool declares it writes (as the report names them)
// and a bash call's command; nothing is logged while it is not running.
func TestLogTool(t *testing.T) {
	ctx := context.Background()
	b, f := setup(t, true, []string{"src"})
	b.LogTool(call("write_file", `{"path":"src/x.go","content":""}`), true, "wrote")
	b.LogTool(call("bash", `{"command":"go vet ./..."}`), false, "\n[exit status 1]")
	b.LogTool(call("read_file", `{"path":"src/a.go"}`), true, "package a")
	b.Tracker.SetStatus(ctx, review.ImplPaused, "x")
	b.LogTool(call("write_file", `{"path":"src/late.go","content":""}`), true, "wrote")
	logs, _ := filepath.Glob(filepath.Join(f.dir, "b-*", "tools.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("tool logs %q, want one", logs)
	}
	data, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	var got []review.ToolEvent
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev review.ToolEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, ev)
	}
	if len(got) != 3 ||
		got[0].Tool != "write_file" || !slices.Equal(got[0].Paths, []string{"src/x.go"}) || !got[0].OK ||
		got[1].Tool != "bash" || got[1].Command != "go vet ./..." || got[1].Exit != 1 || got[1].OK ||
		got[2].Tool != "read_file" || len(got[2].Paths) != 0 {
		t.Fatalf("logged %+v", got)
	}
}

func TestTools(t *testing.T) {
	ctx := context.Background()
	b, _ := setup(t, false, nil)
	specs := b.Tracker.Tools()
	tools := Tools(b.Tracker)
	if len(tools) != len(specs) || len(tools) == 0 {
		t.Fatalf("%d tools for %d", len(tools), len(specs))
	}
	for i, tool := range tools {
		if tool.Spec.Name != specs[i].Name || tool.Spec.Description != specs[i].Description || string(tool.Spec.Parameters) != string(specs[i].Parameters) {
			t.Errorf("tool %d is %+v, want %s", i, tool.Spec, specs[i].Name)
		}
		if !tool.Meta.SessionOnly || tool.Meta.ReadOnly || tool.Meta.Writes != nil {
			t.Errorf("%s: meta %+v, want session-only", tool.Spec.Name, tool.Meta)
		}
		if agent.Watched(tool, &agent.Env{}) {
			t.Errorf("%s would be watched", tool.Spec.Name)
		}
	}
	var todo *agent.Tool
	for _, tool := range tools {
		if tool.Spec.Name == "todo_write" {
			todo = tool
		}
	}
	out, err := todo.Run(ctx, nil, json.RawMessage(`{"items":[{"content":"look","status":"in_progress"}]}`))
	if err != nil || !strings.Contains(out, "look") || len(b.Tracker.Todos()) != 1 {
		t.Fatalf("todo_write ran %q %v, todos %+v", out, err, b.Tracker.Todos())
	}
	if _, err := todo.Run(ctx, nil, json.RawMessage(`{"items":`)); err == nil {
		t.Error("bad arguments accepted")
	}
}

func TestAsker(t *testing.T) {
	if Asker(nil) != nil {
		t.Fatal("an asker where nobody can answer")
	}
	if k := AskKind(context.Background()); k != "" {
		t.Fatalf("a plain context has kind %q", k)
	}
	var seen agent.ToolCall
	var kind, question string
	ask := Asker(func(ctx context.Context, c agent.ToolCall, q string) (bool, error) {
		seen, kind, question = c, AskKind(ctx), q
		return true, nil
	})
	ok, err := ask(context.Background(), review.Call{ID: "c9", Name: "bash", Command: "make", Arguments: json.RawMessage(`{"command":"make"}`)}, "extend?")
	if !ok || err != nil || kind != AskScopeEffects || question != "extend?" || seen.ID != "c9" || seen.Name != "bash" || string(seen.Arguments) != `{"command":"make"}` {
		t.Fatalf("asked %+v kind %q question %q: %v %v", seen, kind, question, ok, err)
	}
	no := Asker(func(context.Context, agent.ToolCall, string) (bool, error) { return false, context.Canceled })
	if ok, err := no(context.Background(), review.Call{}, "q"); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("the answer was changed: %v %v", ok, err)
	}
}
