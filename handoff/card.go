package handoff

import (
	"context"
	"encoding/json"

	"planbridge/proposal"
	"planbridge/worktree"
)

// Card is the approval card as package handoff draws it: the presentation
// (attempt, hidden), the selection and what it can choose, what would
// refuse a Worktree fork and the plan shown. The session's card adds the
// review parts (checks, versions, scope) beside it.
type Card struct {
	Pending   bool        `json:"pending"`
	Attempt   string      `json:"attempt,omitempty"`
	Hidden    bool        `json:"hidden"`
	Selection Selection   `json:"selection"`
	Title     string      `json:"title"`
	Body      string      `json:"body"`
	Text      string      `json:"text"`
	Hash      string      `json:"hash"`
	Path      string      `json:"path"`
	Edited    bool        `json:"edited"`
	Models    []Model     `json:"models"`
	Skills    []SkillInfo `json:"skills"`
	// Blockers name what would refuse a Worktree fork (same words as the
	// refusal, [ForkBlockers]); never nil.
	Blockers []string `json:"blockers"`
	// Branch is the branch a Worktree acceptance that names none uses
	// (the card's choice, else the one derived from the title), and
	// BranchBlocker why it cannot be used (an existing branch, say; ""
	// if it can). Both are set for a Worktree selection only, and checked
	// when the card is fetched or its settings change.
	Branch        string `json:"branch,omitempty"`
	BranchBlocker string `json:"branch_blocker,omitempty"`
	Notice        string `json:"notice,omitempty"`
	// Tampered is set when the plan file on disk no longer matches Hash:
	// Body is then the stored, proposed text (and Notice says so).
	Tampered bool `json:"tampered,omitempty"`
}

// CardState is the snapshot of a session a [Card] is drawn from.
type CardState struct {
	Approval Approval
	Models   []Model
	Fork     ForkState
	// Proposal is the session's proposal (nil: none, and the card shows
	// only the presentation, the models and the blockers).
	Proposal *CardProposal
}

// CardProposal is the proposal a card shows.
type CardProposal struct {
	Title, Hash string
	Path        string // as the person sees it (work://…)
	Edited      bool   // the person edited it
	Selection   Selection
	// Worktree is the last [CheckWorktreeCard] of the selection (zero
	// when it is not Worktree).
	Worktree WorktreeCard
}

// NewCard draws the card of st, without the plan's text ([Card.ShowBody]).
func NewCard(st CardState) Card {
	c := Card{Pending: st.Approval.Pending(), Attempt: st.Approval.Attempt, Hidden: st.Approval.Hidden,
		Models: st.Models, Blockers: ForkBlockers(st.Fork)}
	p := st.Proposal
	if p == nil {
		return c
	}
	c.Selection = p.Selection
	c.Notice = p.Worktree.Notice
	if p.Selection.Location == Worktree {
		c.Branch, c.BranchBlocker = p.Worktree.Branch, p.Worktree.BranchBlocker
	}
	c.Title, c.Hash, c.Path, c.Edited = p.Title, p.Hash, p.Path, p.Edited
	return c
}

// ShowBody puts the plan's text on the card: body is the stored proposed
// text (whose hash is the card's), differs reports that the plan file no
// longer holds it, which the card flags and names first in its notice.
func (c *Card) ShowBody(body string, differs bool) {
	c.Body = body
	c.Text = proposal.RenderText(body)
	if differs {
		c.Tampered = true
		c.Notice = JoinNotice(TamperNotice(c.Path), c.Notice)
	}
}

// TamperNotice is the card's notice of a plan file at path changed on disk.
func TamperNotice(path string) string {
	return path + " was changed on disk after it was proposed: this card shows, edits and accepts the proposed text, not the file"
}

// JoinNotice joins two notices of a card ("" is none).
func JoinNotice(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " · " + b
}

// WorktreeCard is what a card shows of a Worktree selection: the status
// walk's notice ([WorktreeNotice]; noGit is a fork blocker), the branch
// and why it cannot be used.
type WorktreeCard struct {
	Notice        string
	NoGit         bool
	Branch        string
	BranchBlocker string
}

// NoBranchBlocker is the branch blocker of a plan whose title gives no
// branch name and whose card names none.
const NoBranchBlocker = "the plan's title gives no branch name; choose one"

// CheckWorktreeCard checks a Worktree selection of the plan titled title
// for the card, in the checkout holding workspace: edited is the files
// the session edited (restored in the fork, so they do not stay behind).
// Outside git no branch blocker is named (NoGit blocks the fork).
func CheckWorktreeCard(ctx context.Context, workspace string, edited []string, sel Selection, title string) WorktreeCard {
	w := WorktreeCard{Branch: sel.BranchFor(title)}
	w.Notice, w.NoGit = WorktreeNotice(ctx, workspace, edited)
	r, err := worktree.Open(workspace)
	switch {
	case err != nil:
	case w.Branch == "":
		w.BranchBlocker = NoBranchBlocker
	default:
		w.BranchBlocker = BranchBlocker(r.Root, w.Branch)
	}
	if err == nil {
		r.Close()
	}
	return w
}

// Stored is the form a selection is kept in with its proposal (JSON),
// which [CardSelection] reads back.
func (s Selection) Stored() string {
	b, _ := json.Marshal(s) // a Selection has no value json cannot encode
	return string(b)
}

// CardSelection is the selection a card shows: the one stored with the
// proposal (JSON) if it reads and validates, else defaults() (a first
// proposal's, [Defaults]).
func CardSelection(stored string, defaults func() Selection) Selection {
	if stored != "" {
		var sel Selection
		if err := json.Unmarshal([]byte(stored), &sel); err == nil && sel.Validate() == nil {
			return sel
		}
	}
	return defaults()
}
