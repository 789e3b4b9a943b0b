package handoff

import (
	"errors"
	"strings"
	"testing"
)

// fakeRun is a session's state as [CheckRun] reads it; reads counts the
// port calls, so a test sees that an earlier refusal stops the checks.
type fakeRun struct {
	blockers []string
	root     string
	rootErr  error
	goal     bool
	model    error
	reads    []string
}

func (f *fakeRun) ForkBlockers() []string {
	f.reads = append(f.reads, "blockers")
	return f.blockers
}
func (f *fakeRun) RepoRoot() (string, error) {
	f.reads = append(f.reads, "root")
	return f.root, f.rootErr
}
func (f *fakeRun) UnfinishedGoal() (bool, string) {
	f.reads = append(f.reads, "goal")
	return f.goal, "active: ship it"
}
func (f *fakeRun) CheckModel(name string) error {
	f.reads = append(f.reads, "model")
	return f.model
}

// TestCheckRun: each refusal has its code and the words the card and the
// acceptance use, in the documented order, and stops the checks there;
// a Here Direct start reads only the model.
func TestCheckRun(t *testing.T) {
	root := gitRepo(t, map[string]string{"a.txt": "a\n"})
	sel := func(loc Location, ex Execution, branch string) Selection {
		return Selection{Location: loc, Context: Current, Execution: ex, Mode: "ask", Model: "m", Branch: branch}
	}
	for _, c := range []struct {
		name      string
		f         fakeRun
		sel       Selection
		doing     string
		code, msg string
		reads     string
	}{
		{"here direct", fakeRun{}, sel(Here, Direct, ""), "accepting", "", "", "model"},
		{"worktree free", fakeRun{root: root}, sel(Worktree, Direct, "plan/free"), "accepting", "", "", "blockers root model"},
		{"invalid branch", fakeRun{root: root}, sel(Worktree, Direct, "bad..name"), "accepting",
			CodeInvalidBranch, `branch "bad..name": `, ""},
		{"blockers", fakeRun{root: root, blockers: []string{"a request is running", NotGitBlocker}}, sel(Worktree, Direct, "plan/x"), "accepting",
			CodeForkBlocked, "cannot fork: a request is running; the workspace is not a git checkout", "blockers"},
		{"no repository", fakeRun{rootErr: errors.New("no .git")}, sel(Worktree, Direct, "plan/x"), "accepting",
			CodeForkBlocked, "cannot fork: the workspace is not a git checkout: no .git", "blockers root"},
		{"branch exists", fakeRun{root: root}, sel(Worktree, Direct, "taken"), "starting",
			CodeForkBlocked, "cannot fork: branch taken already exists; choose another branch name", "blockers root"},
		{"goal unfinished", fakeRun{goal: true}, sel(Here, Goal, ""), "starting",
			CodeGoalUnfinished, "an unfinished Goal exists (active: ship it); finish or clear it before starting with Goal", "goal"},
		{"goal unfinished, direct", fakeRun{goal: true}, sel(Here, Direct, ""), "accepting", "", "", "model"},
		{"goal free", fakeRun{}, sel(Here, Goal, ""), "accepting", "", "", "goal model"},
		{"model", fakeRun{model: errors.New(`model "m" is not available (known: 2 models); nothing was sent`)}, sel(Here, Direct, ""), "accepting",
			CodeInvalidSelection, `model "m" is not available (known: 2 models); nothing was sent`, "model"},
		{"worktree goal, fork first", fakeRun{root: root, goal: true, blockers: []string{"an unfinished Goal is active in this session"}}, sel(Worktree, Goal, "plan/x"), "accepting",
			CodeForkBlocked, "cannot fork: an unfinished Goal is active in this session", "blockers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckRun(&c.f, c.sel, c.doing)
			if got := strings.Join(c.f.reads, " "); got != c.reads {
				t.Errorf("reads %q, want %q", got, c.reads)
			}
			if c.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			r, ok := AsRefusal(err)
			if !ok || r.Code != c.code || !strings.HasPrefix(r.Message, c.msg) || err.Error() != r.Message {
				t.Fatalf("got %#v, want %s %q", err, c.code, c.msg)
			}
		})
	}
}

// TestStartBlocker: the order of the refusals (a fork ends the session
// before anything else; busy before another start before a pending card)
// and nothing refused when the session is free.
func TestStartBlocker(t *testing.T) {
	for _, c := range []struct {
		st        StartState
		code, msg string
	}{
		{StartState{}, "", ""},
		{StartState{ForkedTo: "s-f", Busy: true, Starting: true, Pending: true}, CodeSessionEnded, "this planning session continued in its Worktree fork s-f"},
		{StartState{Busy: true, Starting: true, Pending: true}, CodeBusy, "the session is busy; wait for the running turn or interrupt it"},
		{StartState{Starting: true, Pending: true}, CodeBusy, "the session is busy starting an accepted plan; wait for it"},
		{StartState{Pending: true}, CodeBusy, "an approval card is pending in this session; decide it first"},
	} {
		err := StartBlocker(c.st)
		if c.code == "" {
			if err != nil {
				t.Errorf("%+v: refused %v", c.st, err)
			}
			continue
		}
		if r, ok := AsRefusal(err); !ok || r.Code != c.code || r.Message != c.msg {
			t.Errorf("%+v: %#v, want %s %q", c.st, err, c.code, c.msg)
		}
	}
	if _, ok := AsRefusal(errors.New("plain")); ok {
		t.Error("a plain error taken for a refusal")
	}
}
