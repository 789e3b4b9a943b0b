// Package goal holds the Goal record, its statuses and budget accounting, and
// decides what the session runs next ([Decide]: the Goal's kickoff, a queued
// follow-up or a continuation, in that order). It decides; the session
// dispatches. An end the model requests with update_goal is recorded
// ([Goal.RequestEnd]) and settled with the turn's accounting ([Goal.Settle]).
//
// The continuation policy around a turn is here too: [ParseCommand] and
// [ParseBudget] read what a person types, [Act] applies a person's Goal
// action (start, pause, resume with steering, budget, edit; clear is the
// session's, with its store) and says what the session must do next,
// [KickoffPrompt] writes an objective's first prompt, and [Stale] says
// when a scheduled Goal turn must be dropped unsent (the Goal cleared,
// replaced, no longer active or edited since).
//
// Around each turn: a [Turn] is a turn's binding to a Goal; [Admit] binds
// a person's prompt to the active Goal, drops a stale Goal turn and hands a
// Goal turn the budget notes not yet delivered; [Goal.Book] settles a
// finished turn (accounting, notes for the model or the person, one retry
// of a transient failure, the kickoff done) and says in a [Booking] what
// the session must carry out. None of it sends or stores anything.
//
// A session's Goal at run time is a [State]: the Goal, its pending
// kickoff, the budget notes not yet delivered and the one-retry mark. Its
// methods are the transitions of that state ([State.Act] for a person's
// action, [State.Next], [State.Admit] and [State.Book] around a turn,
// [State.RequestEnd] for the model's [UpdateTool], [State.Dispatched] and
// [State.KickoffSent] for a kickoff stored with its prompt, [State.Cleared]) and
// its stored form ([Load], [State.Record]). A State is not safe for
// concurrent use: the session holds it under the lock with which it
// decides its posture, queue and interactions, so every transition is
// atomic with those decisions; storing, announcing and dispatching stay
// the session's.
package goal
