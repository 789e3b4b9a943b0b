// Package session is the Session aggregate: Plan posture (sticky Plan, its
// episode and reminder cadence), permission mode, the root-workflow owner and
// pending-input queue, and the event log every surface renders. It talks to
// the database only through internal/store's named commit operations and to
// models only through internal/agent. The session side of the handoff
// step machines' ports is package internal/handoffport's
// ([handoffport.Ports], guarded by the session's lock; its host is the
// session's one adapter).
// The proposal and its one approval card (publish, present, the card's
// edits, feedback, cancel, drafts, the timeout, outcomes) are package
// internal/interaction's ([interaction.Card], guarded by the session's
// lock); whether an implementation may start is handoff's
// ([handoff.CheckRun], [handoff.StartBlocker]).
// The Goal at run time is a [goalrun.Runner] guarded by the session's lock.
// What a person submits is read by package command ([command.Parse]: a
// command or a prompt, `/plan`'s verbs, a first prompt's title; the
// `/plan status` reply, [command.Status]); the session carries it out.
// The session chooses and owns each turn; package internal/turn executes it.
//
// Durability contract:
//   - Events are write-ahead: an event (package event's catalogue, [event.Data])
//     is committed under its sequence number before any listener sees it;
//     numbers are never reused, across restarts too. Streamed text is
//     group-committed (a few milliseconds per batch, one event per batch).
//     The log itself (numbering, commits, text batches, redaction, views
//     published only on change) is an [eventlog.Log] over the store.
//     Status and approval (card) events come from one path,
//     [Session.changed], which every mutation of what they describe ends
//     with: it derives both views and publishes each only when it differs
//     from the last one published; emit refuses both kinds.
//   - A turn's durability (prompt, steps, settlement, retry) is package
//     internal/turn's contract ([turn.Runner]).
//   - The posture (Plan, mode) changes in memory only after its commit:
//     a failed commit changes nothing, so no turn runs under, and no
//     status event announces, a posture the store does not hold.
//   - The implementation's status is committed before it is announced
//     ([tracking.Tracking]); a handoff whose tracking commit fails stops
//     with its failed event and an error event, a resume fails
//     [Session.Recover].
//   - A kickoff's retry record moves to dispatched with its prompt; the
//     implementation then continues (told it was interrupted), never
//     restarts. [Session.Recover] is the one recovery path.
//   - Queued follow-ups (a share link's too, with its guest mark, so its
//     turn stays unattended after a restart) are stored when queued and
//     leave the queue in the transaction that stores them as a prompt.
//     Only an interrupt drops them: a crash or a clean stop (Emacs
//     exiting) keeps them for the next start's recovery.
//     One whose prompt commit fails (a full disk) is neither sent nor
//     dropped: its turn ends ok:false with the error and it stays queued,
//     first, in memory as in the store, until the next kick (a prompt,
//     [Session.Recover]) tries it again.
//     A planning session that handed over to its Worktree fork takes no
//     prompt, however it comes ([CodeSessionEnded]).
//   - What a restart loads comes back paused (an implementation or Goal in
//     flight), except what this process itself created (a Worktree fork
//     taking over its implementation). Turn numbers continue from the
//     log's last turn_start.
//
// [Manager.Delete] removes a session's rows and its work:// directory
// (never the workspace or a worktree), refusing, with nothing changed,
// while a turn or a start runs ([CodeBusy]) or while prompts wait or the
// session owns an unfinished implementation, Goal, fork, hand-over or
// open share link ([CodeSessionInUse], decided by [handoff.CheckDelete]).
// Every write of a session's rows or directory is refused once it is
// deleted ([CodeNotFound]): none brings back a row or a directory.
//
// A person's input is bounded the same way on every surface: a prompt is
// at most [MaxPromptBytes] ([CodePromptTooLarge]) and at most [MaxQueued]
// prompts wait in the queue ([CodeQueueFull]). A prompt from a share link
// ([Session.QueueGuest]) and an automatic Goal continuation run as
// unattended turns ([agent.Gate.Unattended]). With
// [Config.Redact], events and transcript rows are masked before they are
// stored or published, and so is the person's own text as it enters
// (prompts, queued and shared prompts, feedback, Goal objectives and
// steering): a pasted key never becomes a session title or a Goal row.
//
// How an implementation starts (an acceptance, a parked plan's start) and
// what a park does is package internal/handoffport's contract. Every
// approval presentation that ends has
// its outcome recorded ([Session.Outcomes], see package interaction). A
// headless Plan turn (package internal/planonly) drives a session through this exported API alone and
// reads its result with [Session.Proposed]. [Info] is package
// internal/sessioninfo's; its AcceptedPlan and [PlanStatus] carry the
// accepted plan's title, hash and commit trailer.
//
// Holding the implementation to its plan is package tracking's
// ([tracking.Tracking], its contract there); the session holds it (s.track).
package session
