package handoff

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestNewCard: what a card shows of each snapshot: without a proposal only
// the presentation, the models and the blockers (never nil); the branch
// only for a Worktree selection; a tampered plan flagged with its notice
// first.
func TestNewCard(t *testing.T) {
	wt := WorktreeCard{Notice: "2 uncommitted change(s) stay behind", Branch: "plan/x", BranchBlocker: "branch plan/x already exists; choose another branch name"}
	here := Selection{Location: Here, Context: Current, Execution: Direct, Mode: "ask"}
	fork := here
	fork.Location = Worktree
	prop := func(sel Selection) *CardProposal {
		return &CardProposal{Title: "T", Hash: "h", Path: "work://plans/current.md", Edited: true, Selection: sel, Worktree: wt}
	}
	for _, c := range []struct {
		name            string
		st              CardState
		body            string
		differs         bool
		blockers        int
		branch, notice  string
		tampered, shown bool
	}{
		{name: "no proposal", st: CardState{Approval: Approval{Attempt: "a-1", Hidden: true}, Fork: ForkState{Busy: true}}, blockers: 1},
		{name: "no card", st: CardState{}},
		{name: "here", st: CardState{Approval: Approval{Attempt: "a-1"}, Proposal: prop(here)}, notice: wt.Notice, body: "# T", shown: true},
		{name: "worktree", st: CardState{Approval: Approval{Attempt: "a-1"}, Proposal: prop(fork), Fork: ForkState{Queued: 1, NoGit: true}},
			blockers: 2, branch: "plan/x", notice: wt.Notice, body: "# T", shown: true},
		{name: "tampered", st: CardState{Approval: Approval{Attempt: "a-1"}, Proposal: prop(here)}, body: "# T", differs: true, shown: true, tampered: true,
			notice: TamperNotice("work://plans/current.md") + " · " + wt.Notice},
		{name: "tampered, no other notice", st: CardState{Approval: Approval{Attempt: "a-1"}, Proposal: &CardProposal{Title: "T", Path: "work://p.md", Edited: true, Selection: here}},
			body: "# T", differs: true, shown: true, tampered: true, notice: TamperNotice("work://p.md")},
		{name: "body unreadable", st: CardState{Approval: Approval{Attempt: "a-1"}, Proposal: prop(here)}, notice: wt.Notice},
	} {
		t.Run(c.name, func(t *testing.T) {
			card := NewCard(c.st)
			if c.shown {
				card.ShowBody(c.body, c.differs)
			}
			if card.Pending != c.st.Approval.Pending() || card.Attempt != c.st.Approval.Attempt || card.Hidden != c.st.Approval.Hidden {
				t.Errorf("presentation %+v", card)
			}
			if card.Blockers == nil || len(card.Blockers) != c.blockers {
				t.Errorf("blockers %#v, want %d", card.Blockers, c.blockers)
			}
			if card.Branch != c.branch || (c.branch != "") != (card.BranchBlocker != "") {
				t.Errorf("branch %q (%q), want %q", card.Branch, card.BranchBlocker, c.branch)
			}
			if card.Notice != c.notice || card.Tampered != c.tampered {
				t.Errorf("notice %q tampered %v, want %q %v", card.Notice, card.Tampered, c.notice, c.tampered)
			}
			if c.st.Proposal == nil {
				if card.Title != "" || card.Path != "" || card.Selection.Location != "" {
					t.Errorf("a card without a proposal shows one: %+v", card)
				}
				return
			}
			if card.Title != c.st.Proposal.Title || card.Path != c.st.Proposal.Path || !card.Edited || card.Selection.Location != c.st.Proposal.Selection.Location {
				t.Errorf("proposal %+v", card)
			}
			if c.shown && (card.Body != c.body || !strings.Contains(card.Text, "T")) || !c.shown && (card.Body != "" || card.Text != "") {
				t.Errorf("body %q text %q", card.Body, card.Text)
			}
		})
	}
}

// TestCardSelection: a stored selection that reads and validates is the
// card's (defaults not even computed); anything else gives the defaults.
func TestCardSelection(t *testing.T) {
	def := Selection{Location: Here, Context: Current, Execution: Direct, Mode: "edits", Model: "default"}
	stored := Selection{Location: Worktree, Context: Summary, Execution: Goal, Mode: "ask", Branch: "plan/mine"}
	b := []byte(stored.Stored())
	if w, _ := json.Marshal(stored); string(w) != string(b) {
		t.Fatalf("Stored is not the selection's JSON: %s", b)
	}
	bad := stored
	bad.Context = "everything"
	badJSON, _ := json.Marshal(bad)
	for _, c := range []struct {
		name, stored string
		want         Selection
		defaults     int
	}{
		{"stored", string(b), stored, 0},
		{"none", "", def, 1},
		{"unreadable", "{not json", def, 1},
		{"invalid", string(badJSON), def, 1},
	} {
		n := 0
		got := CardSelection(c.stored, func() Selection { n++; return def })
		if gb, _ := json.Marshal(got); string(gb) != func() string { w, _ := json.Marshal(c.want); return string(w) }() || n != c.defaults {
			t.Errorf("%s: %+v (defaults computed %d times), want %+v", c.name, got, n, c.want)
		}
	}
}

// TestCheckWorktreeCard against a real repository: the branch the card
// would use and why not, and the notice; outside git no branch blocker
// (the missing checkout blocks the fork).
func TestCheckWorktreeCard(t *testing.T) {
	ctx := context.Background()
	root := gitRepo(t, map[string]string{"a.txt": "a\n"})
	sel := Selection{Location: Worktree, Context: Current, Execution: Direct, Mode: "ask"}
	taken := sel
	taken.Branch = "taken"
	for _, c := range []struct {
		name, ws, title string
		sel             Selection
		branch, blocker string
		noGit           bool
	}{
		{"from the title", root, "Add a --name flag", sel, "plan/add-a-name-flag", "", false},
		{"title without words", root, "¿¡…!?", sel, "", NoBranchBlocker, false},
		{"existing branch", root, "whatever", taken, "taken", "branch taken already exists; choose another branch name", false},
		{"no git", t.TempDir(), "Add a flag", sel, "plan/add-a-flag", "", true},
	} {
		w := CheckWorktreeCard(ctx, c.ws, nil, c.sel, c.title)
		if w.Branch != c.branch || w.BranchBlocker != c.blocker || w.NoGit != c.noGit || w.Notice == "" {
			t.Errorf("%s: %+v, want branch %q blocker %q noGit %v", c.name, w, c.branch, c.blocker, c.noGit)
		}
	}
}
