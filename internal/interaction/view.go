package interaction

import (
	"context"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/event"
	"planbridge/review"
)

// View is what a client needs to draw the approval card: the card of
// package handoff ([handoff.Card]) and beside it the review parts.
type View struct {
	handoff.Card
	// Warnings are the pre-approval checks of the plan against the
	// workspace (see package review); they never block acceptance.
	Warnings []review.Warning `json:"warnings"`
	// Version is the proposal's plan version (work://plans/vN.md, at
	// VersionPath); Revisions how many versions came before it.
	Version     int    `json:"version,omitempty"`
	Revisions   int    `json:"revisions"`
	VersionPath string `json:"version_path,omitempty"`
	// Comments are the line comments on the previous version, re-anchored
	// on this one (open, addressed or stale).
	Comments []review.Carried `json:"comments,omitempty"`
	// Scope is what the implementation will be held to: the paths its Key
	// Changes and steps name, or the person's edit (approval/update scope).
	Scope []string `json:"scope"`
}

// Kind makes the card an event ("approval").
func (View) Kind() string { return event.KindApproval }

// View returns the current card (Pending false when there is none). The
// files it reads (the plan, the skill folders) are read outside the
// lock.
func (c *Card) View() View {
	c.cfg.Lock.Lock()
	models, fork, workspace := c.cfg.Host.CardLocked()
	st := handoff.CardState{Approval: c.approval, Models: models, Fork: fork}
	if c.prop == nil {
		c.cfg.Lock.Unlock()
		return View{Card: handoff.NewCard(st)}
	}
	st.Proposal = &handoff.CardProposal{Title: c.prop.Title, Hash: c.prop.Hash, Path: agent.WorkScheme + c.prop.Path,
		Edited: c.prop.PersonEdited, Selection: c.SelectionLocked(), Worktree: c.wt}
	p := *c.prop
	c.cfg.Lock.Unlock()
	v := View{Card: handoff.NewCard(st)}
	if body, differs, err := c.Body(p); err == nil {
		v.ShowBody(body, differs)
		v.Warnings = c.cfg.Tracker.Warnings(p.Hash, body, workspace)
		if vc := c.cfg.Tracker.Card(p.Hash, body); vc.Version != 0 {
			v.Version, v.Revisions, v.VersionPath, v.Comments = vc.Version, vc.Revisions, vc.Path, vc.Comments
			if vc.Notice != "" {
				v.Notice = handoff.JoinNotice(v.Notice, vc.Notice)
			}
		}
		v.Scope = c.cfg.Tracker.CardScope(p.Hash, body)
	}
	v.Skills = handoff.FindSkills(handoff.SkillDirs(workspace, handoff.UserConfigDir()))
	return v
}

// Open is [Card.View] for a client opening the card: the Worktree checks
// (uncommitted changes, the branch) run again first, so a branch created
// since the card was shown is named as a blocker.
func (c *Card) Open(ctx context.Context) View {
	c.refreshWorktree(ctx)
	c.cfg.Host.Changed()
	return c.View()
}

// refreshWorktree reruns the card's Worktree checks
// ([handoff.CheckWorktreeCard]) when Worktree is selected (when the card
// is shown or fetched and after each selection change).
func (c *Card) refreshWorktree(ctx context.Context) {
	c.cfg.Lock.Lock()
	sel, title := c.SelectionLocked(), ""
	_, _, ws := c.cfg.Host.CardLocked()
	wt := c.prop != nil && sel.Location == handoff.Worktree
	if wt {
		title = c.prop.Title
	}
	c.cfg.Lock.Unlock()
	var w handoff.WorktreeCard
	if wt {
		edited, _ := c.cfg.Store.EditedFiles(ctx, c.cfg.Session)
		w = handoff.CheckWorktreeCard(ctx, ws, edited, sel, title)
	}
	c.cfg.Lock.Lock()
	c.wt = w
	c.cfg.Lock.Unlock()
}
