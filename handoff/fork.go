package handoff

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"path/filepath"

	"planbridge/worktree"
)

// ForkPort is what the Worktree fork step needs from the session that
// forks. Every method that commits is durable when it returns.
type ForkPort interface {
	// Save commits rec.
	Save(ctx context.Context, rec *Record) error
	// ForkPoint is the transcript index the fork starts after (the reply
	// that proposed the plan).
	ForkPoint() int64
	// RepoRoot is the root of the git checkout holding the workspace.
	RepoRoot() (string, error)
	// CreateForkSession creates the fork's session (the planning
	// conversation up to rec.Fork.Point, the accepted proposal) and sets
	// rec.Fork.Session, committing it with rec in one transaction. On
	// failure rec is unchanged: the record a failed step saves never
	// names a session that was not created.
	CreateForkSession(ctx context.Context, rec *Record) error
	// RestoreEdits copies the files this session itself edited from the
	// source checkout into the fork at dir.
	RestoreEdits(ctx context.Context, root, dir string) error
	// HandOver gives the fork its own artifact and a Here-equivalent record
	// and, in the same transaction, removes this session's record and
	// links it to the fork.
	HandOver(ctx context.Context, rec *Record) error
	// StartFork opens the fork and starts its handoff (the selected Context
	// and Execution, exactly as Here).
	StartFork(ctx context.Context, rec *Record) error
	// Failpoint is called between durable steps with the names in
	// [ForkFailpoints] (the process's [Failpoint] in production).
	Failpoint(name string)
}

// Git is the repository side of the fork step; [WorktreeGit] is the real one.
type Git interface {
	// Head returns the hex id of HEAD's commit in the checkout at root.
	Head(root string) (string, error)
	// Verify reports nil only for a complete fork worktree (see
	// [worktree.VerifyFork]).
	Verify(root, dir, branch string) error
	// Discard removes what an unfinished attempt of owner left (see
	// [worktree.Discard]).
	Discard(root, dir, branch, base, owner string) error
	// Add creates the linked worktree on a new branch from base, marked
	// with owner (see [worktree.AddWorktreeWith]).
	Add(ctx context.Context, root, dir, branch, base, owner string) error
}

// WorktreeGit is [Git] over package worktree (no git helper runs).
// Failpoint, when set, receives the failpoints inside the worktree's
// creation ("worktree.staged", "worktree.admin", "worktree.checkout").
type WorktreeGit struct{ Failpoint func(name string) }

func (WorktreeGit) Head(root string) (string, error) {
	_, h, err := worktree.HeadOf(root)
	return h, err
}

func (WorktreeGit) Verify(root, dir, branch string) error {
	return worktree.VerifyFork(root, dir, branch)
}

func (WorktreeGit) Discard(root, dir, branch, base, owner string) error {
	return worktree.Discard(root, dir, branch, base, owner)
}

// Add also keeps `git status` in the main checkout from listing the forks
// directory (see [worktree.ExcludeForks]); that is cosmetic, so its
// failure does not fail the fork.
func (g WorktreeGit) Add(ctx context.Context, root, dir, branch, base, owner string) error {
	_, err := worktree.AddWorktreeWith(ctx, root, dir, branch, worktree.AddOptions{Commit: base, Owner: owner, Failpoint: g.Failpoint})
	if err == nil && filepath.Dir(filepath.Clean(dir)) == filepath.Join(root, ".worktrees") {
		worktree.ExcludeForks(root) //nolint:errcheck // cosmetic, see above
	}
	return err
}

// ForkDir is where a Worktree fork of branch lives: .worktrees/<branch leaf>.
func ForkDir(root, branch string) string {
	return filepath.Join(root, ".worktrees", path.Base(branch))
}

// ForkStep is the Worktree step machine. Each stage is committed before the
// next: the fork point; the branch, directory, base commit and owner mark
// (before any git mutation); the fork session; the linked worktree, taken
// as the fork's only once [Git.Verify] says it is complete (an attempt a
// crash cut short is discarded, only what this fork's owner mark made,
// and redone); then one transaction gives the fork its own record and
// removes this one, so exactly one session owns the implementation at
// every moment. After the hand-over the step returns [ErrHandedOver]
// wrapped around any later failure: the record is the fork's now.
func ForkStep(ctx context.Context, p ForkPort, g Git, rec *Record) error {
	if rec.Fork.Point == 0 {
		rec.Fork.Point = p.ForkPoint()
		if err := p.Save(ctx, rec); err != nil {
			return err
		}
		p.Failpoint("fork.point")
	}
	root, err := p.RepoRoot()
	if err != nil {
		return err
	}
	if rec.Fork.Dir == "" || rec.Fork.Owner == "" {
		rec.Fork.Branch = rec.Selection.Branch
		rec.Fork.Dir = ForkDir(root, rec.Fork.Branch)
		rec.Fork.Owner = newOwner()
		if rec.Fork.Base, err = g.Head(root); err != nil {
			return err
		}
		if err := p.Save(ctx, rec); err != nil {
			return err
		}
		p.Failpoint("fork.reserved")
	}
	if rec.Fork.Session == "" {
		if err := p.CreateForkSession(ctx, rec); err != nil {
			return err
		}
		p.Failpoint("fork.session")
	}
	if err := g.Verify(root, rec.Fork.Dir, rec.Fork.Branch); err != nil {
		if err := g.Discard(root, rec.Fork.Dir, rec.Fork.Branch, rec.Fork.Base, rec.Fork.Owner); err != nil {
			return fmt.Errorf("an earlier attempt left the fork incomplete and it cannot be redone: %w", err)
		}
		if err := g.Add(ctx, root, rec.Fork.Dir, rec.Fork.Branch, rec.Fork.Base, rec.Fork.Owner); err != nil {
			return fmt.Errorf("create the worktree: %w", err)
		}
		p.Failpoint("fork.worktree")
	}
	if err := p.RestoreEdits(ctx, root, rec.Fork.Dir); err != nil {
		return err
	}
	if err := p.HandOver(ctx, rec); err != nil {
		return err
	}
	p.Failpoint("fork.handed")
	rec.Step = StepForked
	if err := p.StartFork(context.WithoutCancel(ctx), rec); err != nil {
		return fmt.Errorf("start the fork's handoff: %w: %w", err, ErrHandedOver)
	}
	return nil
}

// ForkRecord is the record a fork takes over at the hand-over: rec as a
// Here handoff from its first step (Context and Execution as selected),
// with no fork, reason or tries of the source's.
func ForkRecord(rec *Record) *Record {
	f := *rec
	f.Selection.Location = Here
	f.Step, f.Fork, f.Reason, f.Tries = StepRecorded, Fork{}, "", 0
	return &f
}

func newOwner() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return "fork-" + hex.EncodeToString(b[:])
}
