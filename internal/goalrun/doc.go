// Package goalrun is a session's Goal at run time: a [Runner] owns the
// session's [goal.State] and everything that loads, stores, undoes,
// announces and transitions it — a person's Goal actions with their
// commit ([Runner.Act], clear included), the model's update_goal tool
// ([Runner.Tools]), a Goal turn's choice, admission and booking
// ([Runner.TurnLocked], [Runner.Admit], [Runner.Book]), the kickoff
// marked sent in the prompt's transaction ([Runner.TurnLocked]'s
// [Turn.Dispatch]) and the Goal step of a plan handoff ([Runner.UpdateGoal],
// the [handoff.GoalPort]). Package goal decides; goalrun carries the
// decision out against the store and the session; the session dispatches
// the turns (it decides what runs next with [goal.Decide], reading the
// queue, the card and the Goal together).
//
// Ports: a [Store] (the Goal row's commit, the Goal start's commit, the
// current row) and a [Host] (the session aggregate: its posture, its
// events, its artifacts, its queue). The Runner has no lock of its own for
// its state: the State is guarded by the aggregate's lock
// ([Config.Lock]), so each transition is atomic with the session's
// decisions about its posture, queue and card. Methods named …Locked
// expect that lock held; every other method takes it itself and must be
// called without it. The Runner's own write lock orders Goal writes (a
// snapshot and its commit are never overtaken by another Goal write) and
// is taken before the aggregate's lock, never after.
//
// Its contract:
//   - Memory equals the store: a person's action (start, pause, resume,
//     budget, edit, clear), the model's requested end and a plan
//     handoff's Goal start are decided and committed under the
//     aggregate's lock; a commit that fails puts the State back as it was
//     (the Goal's fields included) and announces nothing, so no turn runs
//     for a Goal, or a Goal state, the store does not hold. A start is
//     refused in Plan, and a new Goal takes the permission mode, read
//     under the same lock.
//   - update_goal's end is recorded only once stored; a failed commit
//     tells the model the end was not recorded and the Goal stays active.
//   - A pause [goal.Decide] chose ([Runner.DecidedPauseLocked]: the
//     budget run out, the plan gone stale) or one for the scope
//     ([Runner.Pause]) whose commit fails stays in memory (the safe side:
//     a restart loads an active Goal paused too) and is told as an error
//     (an error event; Pause returns it for its caller to report).
//   - A booking whose commit fails stops the Goal: an active Goal pauses
//     in memory (as a restart would load it), an ended one stays as the
//     turn left it, unsaved; the person gets an error event and no
//     continuation follows.
//   - A Goal turn that cannot be sent (its prompt's commit fails, no
//     model takes it) is tried once: the Goal pauses, its kickoff still
//     pending ([Runner.Unsent]), never chosen again in a loop.
//   - The kickoff is marked sent in the transaction that stores its
//     prompt ([Turn.Dispatch], committed with the turn step), and only
//     once that committed in memory ([Turn.Dispatched]): it is never sent
//     twice.
//   - Every change that is stored is announced with one goal event
//     ([event.Goal]) after its commit, outside the aggregate's lock.
package goalrun
