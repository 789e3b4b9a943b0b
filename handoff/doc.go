// Package handoff turns an accepted proposal into implementation through
// durable steps, each committed before the next starts, so a crash at any
// point resumes exactly once.
//
// What is here: the approval model ([Selection] with its Worktree branch
// ([DefaultBranch]), [Approval] attempts, [FeedbackText] and
// [FeedbackEnvelope], a revision request's [FeedbackSize] and its masking
// as it enters, [MaskFeedback]; how a presentation ended, [Outcome] and
// the Outcome* constants), the approval card ([NewCard] draws a [Card] from a
// [CardState] snapshot: the stored selection ([Selection.Stored]) or
// the defaults ([CardSelection]), the fork blockers, the Worktree checks
// ([CheckWorktreeCard]), a tampered plan's notice) and its [Timeout]
// (how long, as a client configures it: [TimeoutSetting]),
// the retry [Record] and its steps (recorded →
// context_ready → kickoff → dispatched, or forked), and the step machines.
// Each step machine is a function over a narrow port that the session
// side implements (package internal/handoffport, over the session's
// parts); it keeps the data access, and every port method that commits
// is one named store operation:
//   - [Accept] over [AcceptPort] ([RunPort] and the [CardPort] it shares
//     with [Park]: the card's proposal, its plan, the archive): validate (the attempt, the expected
//     Location, the selection, the branch, [CheckRun], the plan), archive
//     immutably, the
//     acceptance commit, the session brought in line with it, start
//     (each failpoint of acceptance is between two of these).
//   - [Park] over [ParkPort]: approve and park (validate, with the
//     expected settings [Selection.SameSettings]; archive, one commit,
//     nothing starts); [StartParked] over [StartPort] starts a parked plan
//     through the same record and [Run] (Location and branch applied, a
//     Location or selection that cannot start a [CodeInvalidSelection]
//     refusal, a Goal reserved, a moved HEAD reported). [ParkedPlan] is a parked
//     plan as clients see it, [ParkedList] the `/plan parked` text,
//     [ParkedSelection] its stored selection read back; what a start and
//     an acceptance tell the client is [StartResult] ([Started.Result])
//     and [AcceptResult] ([Accepted]).
//   - [Run] over [Env]: context preparation (Current; Fresh with
//     [FreshMaterial]; Summary from [RenderHistory], proposals omitted,
//     its summary cached in the record), then the Worktree fork, the Goal
//     start or the Direct kickoff. A compaction's context is built the
//     same way ([CompactPrompt], [CompactMaterial]: what must not be lost
//     rides along verbatim).
//   - [ForkStep] over [ForkPort] and [Git]: fork point, reservation with
//     base commit and owner mark, fork session, verified worktree,
//     hand-over ([WorktreeGit] is package worktree; [InstallPlan] gives
//     the fork its plan files). The fork's checks
//     before acceptance are here too: [ForkBlockers] (what refuses any
//     fork of the session now), [BranchBlocker] (the card's branch
//     and the acceptance's, in the refusal's words), [WorktreeNotice]
//     (what stays behind) and [RestoreEdits] (the session's own edited
//     files, and nothing else, copied into the fork).
//   - [CheckRun] over [RunPort]: whether an implementation of a selection
//     may start now, the same for an acceptance and a parked plan's start
//     ([CheckFork]: the branch, the fork blockers, the repository), and
//     [StartBlocker]: what refuses a parked plan's start whatever its
//     selection. A no is a [Refusal]: a stable code and the person's
//     words, which the session hands on unchanged.
//   - [StartGoal] over [GoalPort]: the Goal step ([GoalFor] decides which
//     Goal; package goal owns the Goal itself). The Goal names its plan
//     with [PlanRef], read back by [ParsePlanRef].
//   - [Recover] over [RecoverPort]: the one recovery path. [NextRecovery]
//     decides (the fork, the record, a Goal or implementation a restart
//     paused, the durable queue, in that order) from the session's
//     [RecoveryState]; the port carries the chosen step out; nothing to
//     recover, or an unreadable record, is a [CodeNothingToRetry] refusal.
//   - [CheckDelete]: what refuses deleting a session ([DeleteState]: a
//     turn or a parked plan's start running ([CodeBusy]), prompts
//     waiting, a hand-over to it still under way, a live fork, a retry
//     record, an unfinished implementation or Goal, an open share link,
//     in that order; [CodeSessionInUse]); the session reads the facts and
//     deletes.
//
// The model policy a client configures ([ModelConfig]: the session's
// default, the catalog the card's model choice is validated against, the
// three workloads) resolves each workload ([ModelConfig.Workload]: what it
// leaves out comes from the default) and the policy of one root turn
// ([ModelConfig.Turn]: an implementation's scoped policy, else planning in
// Plan, else the default) and fails visibly for a model the
// catalog does not know ([ModelConfig.Check]), never falling back; a
// request nearing the context window is compacted first
// ([ModelConfig.NearWindow]).
//
// A plan file under work:// ([CurrentPlan], a version, an accepted
// archive) holds its body and one line feed ([ArtifactData]); reading one
// checks it against its recorded hash ([ReadArtifact]: a changed file is
// an error, never trusted), and a proposal's authoritative text is its
// stored body, a changed file only flagged ([ProposalBody]).
//
// [SaveToProject] writes an accepted plan into the workspace's docs/plans,
// never overwriting and never following a link; each failure is a
// [CodeSaveFailed] refusal naming no absolute path.
//
// The handoff's words are here too, so every surface says the same:
// [StoppedMessage], [PreparingNotice], [ParkedNotice], [NewContextNotice].
//
// Exactly once: the kickoff's record moves to [StepDispatched] in the
// transaction that stores the prompt ([Record.Dispatched]), before the
// request leaves; from there [Run] continues with [InterruptedPrompt],
// never the kickoff again.
// A summary is committed into the record as the first thing after its
// stream completes (even if the handoff was interrupted meanwhile; the
// person hears of it only after that commit) and is never requested
// again. The window that remains is from the model's last byte to that
// one transaction's commit (the engine reading the end of the stream,
// then the commit): a crash there, or a stream cut off earlier, requests
// the summary again; a crash between that commit and the summary's event
// loses only the event. A fork's worktree is taken only once verified
// complete; an unfinished one is discarded (only what its owner mark or
// its owner-named staging directory proves ours) and redone. [Failpoint]
// names the crash points ([Failpoints], [ParkFailpoints],
// [ForkFailpoints]); the ports receive them, so in-process tests crash
// there with fakes (steps_test.go, park_test.go, goal_test.go) and the
// binary tests with PLANBRIDGE_FAILPOINT.
package handoff
