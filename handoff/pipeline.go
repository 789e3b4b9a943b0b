package handoff

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Env is what the pipeline needs from the session that owns the handoff.
// Every method that commits must be durable when it returns.
type Env interface {
	// Save commits rec.
	Save(ctx context.Context, rec *Record) error
	// PlanBody returns the accepted plan, verified against rec.Artifact.
	PlanBody(ctx context.Context, rec *Record) (string, error)
	// History renders the current context for a summary, with the
	// accepted plan replaced by [OmittedPlan].
	History(ctx context.Context) (string, error)
	// Summarize sends one summarization-workload model request and
	// returns the completed summary (a blank one fails the step). It commits nothing: the summary's
	// commit is the next thing that happens ([Env.Save]).
	Summarize(ctx context.Context, system, input string) (string, error)
	// Summarized tells the person the summary of rec arrived; it is
	// called once the summary is committed.
	Summarized(ctx context.Context, rec *Record)
	// InstallSegment starts context segment rec.Segment holding material,
	// unless the session is already on it, and commits rec in the same
	// transaction (so a crash never installs it twice).
	InstallSegment(ctx context.Context, rec *Record, material string) error
	// Workspace is the session's workspace directory, which a Fresh
	// context's first message describes ([FreshMaterial]).
	Workspace(ctx context.Context) string
	// Fork performs the Worktree fork step; after it the fork owns the
	// implementation and this session's record is gone.
	Fork(ctx context.Context, rec *Record) error
	// StartGoal constructs and persists the reserved Goal and clears the
	// record in one transaction (reusing a matching Goal, reporting any other
	// unfinished one as a conflict); the Goal then owns the kickoff.
	StartGoal(ctx context.Context, rec *Record) error
	// Failpoint is called between durable steps with the names in
	// [Failpoints] ([Failpoint] in production).
	Failpoint(name string)
	// Kickoff sends the implementation turn under rec.Policy. It commits
	// rec at [StepDispatched] with the prompt, before the request leaves;
	// on success it clears the record in the transaction that settles the
	// turn.
	Kickoff(ctx context.Context, rec *Record, prompt, display string) error
	// Continue resumes a dispatched implementation from its stored
	// transcript with [InterruptedPrompt] (never the kickoff again); on
	// success it clears the record like Kickoff.
	Continue(ctx context.Context, rec *Record) error
}

// ErrHandedOver is returned by a step after which another session owns the
// record (a Worktree fork): the caller must not save it here again.
var ErrHandedOver = errors.New("the implementation was handed over to another session")

// errEmptySummary fails a Summary context whose summary came back blank:
// it is not cached, so a retry requests it again.
var errEmptySummary = errors.New("the summary came back empty")

// ErrNothingToRetry is returned by a retry without a record.
var ErrNothingToRetry = errors.New("nothing_to_retry: no accepted plan is waiting for implementation")

// Run drives rec from its recorded step to the kickoff. It never repeats a
// committed step: the archive and the acceptance are behind it already, a
// cached summary is reused, an installed segment is recognised. A failure
// stores a bounded reason in the record, which stays retryable.
func Run(ctx context.Context, env Env, rec *Record) (err error) {
	defer func() {
		if err != nil && rec.Step != StepForked && !errors.Is(err, ErrHandedOver) {
			rec.SetReason(err)
			if serr := env.Save(context.WithoutCancel(ctx), rec); serr != nil {
				err = fmt.Errorf("%w (and the retry record could not be saved: %v)", err, serr)
			}
		}
	}()
	for {
		switch rec.Step {
		case StepRecorded:
			if rec.Selection.Location == Worktree {
				// Context and Execution run in the fork, exactly as Here.
				return env.Fork(ctx, rec)
			}
			if err := prepareContext(ctx, env, rec); err != nil {
				return err
			}
			env.Failpoint("handoff.context")
		case StepContextReady:
			switch {
			case rec.Selection.Location == Worktree:
				return env.Fork(ctx, rec)
			case rec.Selection.Execution == Goal:
				// The Goal is the recovery boundary: it is persisted and the
				// record cleared together; its kickoff runs as a Goal turn.
				return env.StartGoal(ctx, rec)
			default:
				rec.Step = StepKickoff
				if err := env.Save(ctx, rec); err != nil {
					return err
				}
			}
		case StepKickoff:
			return kickoff(ctx, env, rec)
		case StepDispatched:
			return env.Continue(ctx, rec)
		case StepForked:
			return fmt.Errorf("the implementation moved to fork %s", rec.Fork.Session)
		default:
			return fmt.Errorf("unknown handoff step %q", rec.Step)
		}
	}
}

func prepareContext(ctx context.Context, env Env, rec *Record) error {
	switch rec.Selection.Context {
	case Current:
		rec.Step = StepContextReady
		return env.Save(ctx, rec)
	case Fresh:
		rec.Step = StepContextReady
		return env.InstallSegment(ctx, rec, FreshMaterial(env.Workspace(ctx)))
	case Summary:
		if rec.Summary == "" {
			plan, err := env.PlanBody(ctx, rec)
			if err != nil {
				return err
			}
			hist, err := env.History(ctx)
			if err != nil {
				return err
			}
			sum, err := env.Summarize(ctx, SummaryPrompt(), SummaryInput(hist, plan, rec.Selection.Instructions))
			if err == nil && strings.TrimSpace(sum) == "" {
				err = errEmptySummary
			}
			if err != nil {
				return fmt.Errorf("summary request failed: %w", err)
			}
			rec.Summary = sum
			// Committed before anything else happens, and even when the
			// handoff was interrupted as the stream ended: a completed
			// summary is never requested again.
			if err := env.Save(context.WithoutCancel(ctx), rec); err != nil {
				return err
			}
			env.Summarized(ctx, rec)
			env.Failpoint("handoff.summarized")
		}
		rec.Step = StepContextReady
		return env.InstallSegment(ctx, rec, SummarySetup(rec.Summary))
	}
	return fmt.Errorf("unknown context %q", rec.Selection.Context)
}

func kickoff(ctx context.Context, env Env, rec *Record) error {
	prompt, display, err := BuildKickoff(ctx, env, rec)
	if err != nil {
		return err
	}
	env.Failpoint("handoff.kickoff")
	return env.Kickoff(ctx, rec, prompt, display)
}

// BuildKickoff revalidates the selected skills (a missing, disabled,
// malformed or no longer user-invocable one means no request) and returns
// the full kickoff prompt and its display label.
func BuildKickoff(ctx context.Context, env Env, rec *Record) (prompt, display string, err error) {
	skills, err := ResolveSkills(rec.Selection.Skills)
	if err != nil {
		return "", "", fmt.Errorf("no request sent: %w", err)
	}
	plan, err := env.PlanBody(ctx, rec)
	if err != nil {
		return "", "", err
	}
	goal := rec.Selection.Execution == Goal
	return KickoffPrompt(rec, plan, skills, goal), KickoffDisplay(goal), nil
}
