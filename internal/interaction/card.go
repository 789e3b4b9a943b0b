package interaction

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/atomicfile"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/proposal"
	"planbridge/review"
)

// Proposal statuses (the stored row's).
const (
	Proposed = "proposed"
	Draft    = "draft"
	// Parked: approved and archived with its selection, not started.
	Parked   = "parked"
	Accepted = "accepted"
)

// Stable error codes of the card's refusals ([handoff.Refusal]).
const (
	CodeStaleAttempt     = "stale_attempt"
	CodeNoProposal       = "no_proposal"
	CodeInvalidParams    = "invalid_params"
	CodePromptTooLarge   = "prompt_too_large"
	CodeInvalidSelection = handoff.CodeInvalidSelection
)

// ErrStale refuses an action on a presentation that is not the current
// one (a stale or missing attempt id); nothing changed.
var ErrStale = &handoff.Refusal{Code: CodeStaleAttempt, Message: "this approval card is no longer current (stale or missing attempt id); nothing changed"}

func refusal(code, format string, args ...any) error {
	return &handoff.Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Store is what a Card commits and reads (*store.Store is one).
type Store interface {
	GetProposal(ctx context.Context, session string) (store.Proposal, error)
	// PutProposal commits the session's proposal row.
	PutProposal(ctx context.Context, p store.Proposal) error
	PutApprovalOutcome(ctx context.Context, o store.ApprovalOutcome) error
	ApprovalOutcomes(ctx context.Context, session string) ([]store.ApprovalOutcome, error)
	// EditedFiles lists the files the session's turns edited (the
	// Worktree check names them).
	EditedFiles(ctx context.Context, session string) ([]string, error)
}

// Host is the rest of the session as the card sees it. Methods named
// …Locked are called with [Config.Lock] held; the others without it.
type Host interface {
	// PlanLocked reports whether Plan is on.
	PlanLocked() bool
	// DefaultsLocked is a first proposal's selection ([handoff.Defaults]
	// of the session's mode and model policy).
	DefaultsLocked() handoff.Selection
	// CardLocked is what the card shows of the rest of the session: the
	// models offered, what refuses a fork, the workspace.
	CardLocked() (models []handoff.Model, fork handoff.ForkState, workspace string)
	// Timeout is how long a card may stay undecided (0: it never times
	// out). Called with the lock held.
	Timeout() time.Duration
	// Closed reports that the server is closing: a timeout then changes
	// nothing.
	Closed() bool
	// Emit appends an event to the session's log.
	Emit(event.Data)
	// Changed publishes the status and card views if they changed.
	Changed()
	// Enqueue queues a turn (the feedback's) behind the running one.
	Enqueue(prompt, display string)
	// Kick starts queued input if nothing holds it.
	Kick()
}

// Tracker is what the card reads and records of the plan's review
// (*review.Tracker is one).
type Tracker interface {
	RecordVersion(hash, body string) error
	SaveComments(hash string, comments []review.Comment) error
	Warnings(hash, body, workspace string) []review.Warning
	Card(hash, body string) review.VersionCard
	CardScope(hash, body string) []string
	ChecksHint(hash string) string
}

// Config configures a [Card].
type Config struct {
	Session string
	WorkDir string      // the session's work:// root
	Lock    sync.Locker // the aggregate's lock: it guards the card's state
	Store   Store
	Host    Host
	Tracker Tracker
	// Mask masks a person's text as it enters (nil masks nothing).
	Mask func(string) string
	// MaxFeedback bounds one feedback, text and comments (0: unbounded).
	MaxFeedback int
	Logger      *slog.Logger
	// Live runs fn, which writes the session's rows or into its
	// directory (the plan file, its version, its line comments, the
	// proposal row, an outcome), unless the session is deleted: then it
	// returns its refusal and fn never runs (nil runs fn). Called with
	// commitMu held, never with Lock held.
	Live func(fn func() error) error
}

// Card is a session's proposal and its one presentation (see the package
// doc). Its state is guarded by [Config.Lock].
type Card struct {
	cfg Config

	// commitMu serialises the card's own commits of the proposal row,
	// from the snapshot to the memory change after the commit, so memory
	// follows the store's order. Taken before cfg.Lock (and before the
	// session's pubMu, and the rowMu [Config.Live] takes); nothing under
	// it takes goalMu, and no holder of rowMu takes it.
	commitMu sync.Mutex

	// Guarded by cfg.Lock:
	prop     *store.Proposal  // the session's proposal, nil if none
	approval handoff.Approval // the pending presentation, if any (not persisted)
	editing  bool             // a selection change of the pending card is committing
	// wt is the card's last Worktree check (notice, branch; NoGit is a
	// fork blocker), zero unless Worktree is selected.
	wt      handoff.WorktreeCard
	timeout handoff.Timeout  // the current presentation's
	closed  handoff.Approval // the presentation CloseLocked last ended, for ReopenLocked
}

// New returns the card part of a session with no proposal; [Card.Load]
// restores the stored one.
func New(cfg Config) *Card {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Mask == nil {
		cfg.Mask = func(s string) string { return s }
	}
	if cfg.Live == nil {
		cfg.Live = func(fn func() error) error { return fn() }
	}
	return &Card{cfg: cfg}
}

// --- Reads and decisions under the aggregate lock ---------------------------

// ProposalLocked is the session's proposal (ok false: none).
func (c *Card) ProposalLocked() (p store.Proposal, ok bool) {
	if c.prop == nil {
		return store.Proposal{}, false
	}
	return *c.prop, true
}

// ArmedLocked reports whether the presentation's timeout is running.
func (c *Card) ArmedLocked() bool { return c.timeout.Armed() }

// PendingLocked reports whether a card is presented (shown or hidden).
func (c *Card) PendingLocked() bool { return c.approval.Pending() }

// PresentationLocked is the pending presentation (zero: none).
func (c *Card) PresentationLocked() handoff.Approval { return c.approval }

// NoGitLocked reports the card's last Worktree check found no git
// checkout (a fork blocker).
func (c *Card) NoGitLocked() bool { return c.wt.NoGit }

// SelectionLocked is [handoff.CardSelection] of the proposal: its stored
// selection, or a first proposal's defaults.
func (c *Card) SelectionLocked() handoff.Selection {
	stored := ""
	if c.prop != nil {
		stored = c.prop.Selection
	}
	return c.selectionOf(stored)
}

func (c *Card) selectionOf(stored string) handoff.Selection {
	return handoff.CardSelection(stored, c.cfg.Host.DefaultsLocked)
}

// CheckLocked fails closed on a stale or missing attempt ([ErrStale]),
// and refuses ([handoff.ErrSettingsChanged]) while a selection change of
// the card commits: a decision on the card (an acceptance, a park) then
// waits for the settings the store will hold.
func (c *Card) CheckLocked(attempt string) error {
	if err := c.checkLocked(attempt); err != nil {
		return err
	}
	if c.editing {
		return handoff.ErrSettingsChanged
	}
	return nil
}

// CurrentLocked fails closed on a stale or missing attempt ([ErrStale])
// only: for an action that is no decision on the card (a scope edit),
// which a selection commit in flight does not refuse.
func (c *Card) CurrentLocked(attempt string) error { return c.checkLocked(attempt) }

func (c *Card) checkLocked(attempt string) error {
	if c.approval.Check(attempt) != nil {
		return ErrStale
	}
	return nil
}

// CloseLocked ends the presentation (its timeout stops) and returns its
// attempt ("" when none was pending). It records nothing.
func (c *Card) CloseLocked() string {
	a := c.approval.Attempt
	if a != "" {
		c.closed = c.approval
	}
	c.approval = handoff.Approval{}
	c.timeout.Stop()
	return a
}

// ReopenLocked presents attempt again after a close whose commit failed
// (nothing moved): the card is as it was (hidden if it was), its timeout
// started over.
func (c *Card) ReopenLocked(attempt string) {
	c.approval = handoff.Approval{Attempt: attempt}
	if c.closed.Attempt == attempt {
		c.approval = c.closed
	}
	c.armLocked()
}

// SetLocked makes p the session's proposal as another commit stored it
// (an acceptance, a park, a parked plan's start).
func (c *Card) SetLocked(p store.Proposal) { c.prop = &p }

func (c *Card) armLocked() {
	c.timeout.Arm(c.cfg.Host.Timeout(), c.approval, c.TimeOut)
}

// --- Load ----------------------------------------------------------------------

// Load restores the stored proposal and applies the resume rule: it
// stays actionable only if plan (Plan is on), it was proposed, and its
// artifact still matches its hash — then it is presented again under a
// new attempt — otherwise it is committed as a draft. Called once, before
// the card is shared; it takes no lock. A failed commit changes nothing.
func (c *Card) Load(ctx context.Context, plan bool) error {
	p, err := c.cfg.Store.GetProposal(ctx, c.cfg.Session)
	if errors.Is(err, store.ErrNotFound) {
		c.settle(nil)
		return nil
	}
	if err != nil {
		return err
	}
	c.settle(&p)
	if p.Status == Proposed {
		if _, err := c.readArtifact(p.Path, p.Hash); plan && err == nil {
			// Resume re-presents it (hidden state is not persisted).
			c.approval = handoff.Approval{Attempt: handoff.NewAttemptID()}
		} else {
			p.Status = Draft
			if err := c.cfg.Store.PutProposal(ctx, p); err != nil {
				return err
			}
		}
	}
	c.prop = &p
	return nil
}

// Arm starts the timeout of a card Load presented again, d long. Like
// Load it takes no lock: called before the card is shared.
func (c *Card) Arm(d time.Duration) {
	c.timeout.Arm(d, c.approval, c.TimeOut)
}

// --- Files -------------------------------------------------------------------

// publishStep is a test's hook between the steps of a publish ("staged":
// the new text staged, "committed": its row committed, the plan file not
// yet replaced).
var publishStep = func(string) {}

// PendingPlan is the work:// path (session-relative) where [Card.Publish]
// stages a proposal's text until its row is committed.
const PendingPlan = "plans/.current.md.pending"

// installPending moves the staged plan file of the work:// root work into
// place, durably.
func installPending(work string) error {
	dst := filepath.Join(work, filepath.FromSlash(handoff.CurrentPlan))
	if err := os.Rename(filepath.Join(work, filepath.FromSlash(PendingPlan)), dst); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(dst))
}

// settlePending finishes or drops a staged plan file a crashed publish
// left: installed when it is the text of the stored proposal p (the
// commit happened), removed otherwise (it did not). Nothing staged:
// nothing to do.
func (c *Card) settlePending(p *store.Proposal) error {
	pending := c.path(PendingPlan)
	if _, err := os.Lstat(pending); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if p != nil && p.Path == handoff.CurrentPlan {
		if _, err := handoff.ReadArtifact(c.cfg.WorkDir, PendingPlan, p.Hash); err == nil {
			return installPending(c.cfg.WorkDir)
		}
	}
	if err := os.Remove(pending); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// settle is [Card.settlePending] at load, whose failure is logged: the
// resume rule then goes by the plan file as it is (a mismatch makes the
// proposal a draft, never actionable from a file the row does not name).
func (c *Card) settle(p *store.Proposal) {
	if err := c.settlePending(p); err != nil {
		c.cfg.Logger.Error("settle the plan file an interrupted publish left", "session", c.cfg.Session, "err", err)
	}
}

// anchor is the session's directory (the work:// root's parent): the
// card's writes lie below it and never create it, so none brings back a
// deleted session's directory.
func (c *Card) anchor() string { return filepath.Dir(filepath.Clean(c.cfg.WorkDir)) }

func (c *Card) path(rel string) string {
	return filepath.Join(c.cfg.WorkDir, filepath.FromSlash(rel))
}

func (c *Card) readArtifact(rel, hash string) (string, error) {
	return handoff.ReadArtifact(c.cfg.WorkDir, rel, hash)
}

// Body is [handoff.ProposalBody] of p: its published body, and whether
// the file on disk differs from it.
func (c *Card) Body(p store.Proposal) (body string, differs bool, err error) {
	return handoff.ProposalBody(c.cfg.WorkDir, p.Path, p.Hash, p.Body)
}

// --- Publish, present, demote -------------------------------------------------

// OnResponse examines the extraction of one completed root-assistant
// response (nil: a response outside Plan, which cannot propose): its
// diagnostics are announced, and its proposal published; a proposal
// that cannot be saved is told as an error event.
func (c *Card) OnResponse(res *proposal.Result) {
	if res == nil {
		return
	}
	for _, d := range res.Diagnostics {
		c.cfg.Host.Emit(event.Diagnostic{Level: string(d.Kind), Message: d.Message})
	}
	if res.Proposal == nil {
		return
	}
	if err := c.Publish(context.Background(), res.Proposal.Title, res.Proposal.Body, false); err != nil {
		c.cfg.Logger.Error("publish proposal", "session", c.cfg.Session, "err", err)
		c.cfg.Host.Emit(event.Error{Message: "could not save the proposal: " + err.Error()})
	}
}

// Publish makes body the session's one actionable proposal and presents
// it: the new text is staged beside the plan file ([PendingPlan]) and its
// version kept, then the row (with the selection the card will show)
// points at it, and only then does the staged file replace
// [handoff.CurrentPlan]. The selection of an earlier proposal survives. A
// failure changes nothing in memory, and the plan file and the row agree
// after it: a failed commit leaves the plan file as it was (the staged
// one removed); a crash between the commit and the replacement is
// finished by the next [Card.Load]. A replacement that fails after the
// commit is told (an error event) and finished by the next Load too.

func (c *Card) Publish(ctx context.Context, title, body string, edited bool) error {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	return c.publish(ctx, title, body, edited)
}

// publish is [Card.Publish] with commitMu held.
func (c *Card) publish(ctx context.Context, title, body string, edited bool) error {
	hash := proposal.HashBody(body)
	pending := c.path(PendingPlan)
	if err := c.cfg.Live(func() error {
		// Below the session's directory, never creating it.
		if err := atomicfile.WriteFileIn(c.anchor(), pending, handoff.ArtifactData(body), 0o644); err != nil {
			return err
		}
		if err := c.cfg.Tracker.RecordVersion(hash, body); err != nil {
			return fmt.Errorf("keep the plan version: %w", err)
		}
		return nil
	}); err != nil {
		os.Remove(pending)
		return err
	}
	publishStep("staged")
	c.cfg.Lock.Lock()
	p := store.Proposal{SessionID: c.cfg.Session}
	if c.prop != nil {
		p = *c.prop
	}
	p.Status, p.Title, p.Path, p.Hash, p.Body, p.PersonEdited = Proposed, title, handoff.CurrentPlan, hash, body, edited
	if c.cfg.Host.PlanLocked() {
		// The card snapshots its selection in the same row: what it
		// shows is stored.
		p.Selection = c.selectionOf(p.Selection).Stored()
	}
	c.cfg.Lock.Unlock()
	if err := c.put(ctx, p); err != nil {
		os.Remove(pending) // the plan file stays what the row still names
		return err
	}
	publishStep("committed")
	ran := false
	if err := c.cfg.Live(func() error { ran = true; return installPending(c.cfg.WorkDir) }); !ran {
		return err // deleted meanwhile: its row and files are gone with it
	} else if err != nil {
		c.cfg.Logger.Error("install the published plan file", "session", c.cfg.Session, "err", err)
		c.cfg.Host.Emit(event.Error{Message: "the proposal is saved, but its plan file work://" + handoff.CurrentPlan +
			" could not be written (" + err.Error() + "); the next start writes it"})
	}
	c.cfg.Host.Emit(event.Proposal{Title: title, Body: body, Hash: hash,
		Path: agent.WorkScheme + handoff.CurrentPlan, Text: proposal.RenderText(body), Edited: edited})
	c.present(ctx)
	return nil
}

// put commits p and only then makes it the proposal in memory (commitMu
// held).
func (c *Card) put(ctx context.Context, p store.Proposal) error {
	if err := c.putRow(ctx, p); err != nil {
		return err
	}
	c.cfg.Lock.Lock()
	c.prop = &p
	c.cfg.Lock.Unlock()
	return nil
}

// putRow commits p unless the session is deleted ([Config.Live]).
func (c *Card) putRow(ctx context.Context, p store.Proposal) error {
	return c.cfg.Live(func() error { return c.cfg.Store.PutProposal(ctx, p) })
}

// present opens a new presentation of the proposal, if it is actionable
// and Plan is on, with a fresh attempt id and its timeout; the Worktree
// checks run and the views are published.
func (c *Card) present(ctx context.Context) {
	c.cfg.Lock.Lock()
	if c.prop == nil || c.prop.Status != Proposed || !c.cfg.Host.PlanLocked() {
		c.cfg.Lock.Unlock()
		return
	}
	c.approval = handoff.Approval{Attempt: handoff.NewAttemptID()}
	c.armLocked()
	c.cfg.Lock.Unlock()
	c.refreshWorktree(ctx)
	c.cfg.Host.Changed() // the card (with its pre-approval checks) and the status
}

// Demote turns an actionable proposal into a draft, keeping its
// selection, and closes its card with outcome (demoted: a follow-up in
// Plan; cancelled: leaving Plan). The card closes even when the draft's
// commit fails (nobody decided on it: the safe side); the proposal then
// stays proposed, as stored, and the person is told.
func (c *Card) Demote(ctx context.Context, outcome string) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	c.cfg.Lock.Lock()
	actionable := c.prop != nil && c.prop.Status == Proposed
	var p store.Proposal
	if actionable {
		p = *c.prop
		p.Status = Draft
	}
	a := c.CloseLocked()
	c.cfg.Lock.Unlock()
	if a != "" {
		c.closedWith(ctx, a, outcome, &p)
	}
	if !actionable {
		return
	}
	if err := c.put(ctx, p); err != nil {
		c.draftFailed(outcome, err)
	}
}

// draftFailed tells that the draft of a card closed as outcome could not
// be committed.
func (c *Card) draftFailed(outcome string, err error) {
	c.cfg.Logger.Error("demote the closed card's proposal", "session", c.cfg.Session, "outcome", outcome, "err", err)
	c.cfg.Host.Emit(event.Error{Message: "could not keep the plan as a draft: " + err.Error() + "; it stays proposed, and nothing runs from it without a new approval"})
}

// RestoreDraft presents the draft proposal again as a card (a new
// attempt), undoing a cancel or a demotion. hash must be the draft's
// recorded hash and the artifact must still match it, so what comes back
// is exactly the plan the person last saw; Plan must be on, as for any
// proposal. The selection starts from the defaults when the cancel
// discarded it. A failure changes nothing.
func (c *Card) RestoreDraft(ctx context.Context, hash string) (View, error) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	c.cfg.Lock.Lock()
	if c.prop == nil || c.prop.Status != Draft {
		c.cfg.Lock.Unlock()
		return View{}, refusal(CodeNoProposal, "there is no draft plan to restore")
	}
	if hash == "" || hash != c.prop.Hash {
		c.cfg.Lock.Unlock()
		return View{}, refusal(CodeStaleAttempt, "the draft plan changed since it was shown; it was not restored")
	}
	if !c.cfg.Host.PlanLocked() {
		c.cfg.Lock.Unlock()
		return View{}, refusal(CodeNoProposal, "Plan is off: enter Plan to restore the draft plan")
	}
	p := *c.prop
	c.cfg.Lock.Unlock()
	if _, err := c.readArtifact(p.Path, p.Hash); err != nil {
		return View{}, refusal(CodeStaleAttempt, "the draft plan cannot be restored: %v", err)
	}
	p.Status = Proposed
	c.cfg.Lock.Lock()
	p.Selection = c.selectionOf(p.Selection).Stored()
	c.cfg.Lock.Unlock()
	if err := c.put(ctx, p); err != nil {
		return View{}, err
	}
	c.present(ctx)
	return c.View(), nil
}

// Proposed is the proposal while it is actionable (proposed), with its
// published body (ok false: there is none). It reads; it changes nothing
// and presents no card.
func (c *Card) Proposed() (t Text, ok bool, err error) {
	c.cfg.Lock.Lock()
	prop := c.prop
	c.cfg.Lock.Unlock()
	if prop == nil || prop.Status != Proposed {
		return Text{}, false, nil
	}
	body, _, err := c.Body(*prop)
	if err != nil {
		return Text{}, false, err
	}
	return Text{Title: prop.Title, Body: body, Hash: prop.Hash}, true, nil
}

// Text is a proposal as every surface shows it and acceptance archives it.
type Text struct{ Title, Body, Hash string }
