package goal

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// State is a session's Goal at run time: the Goal record, the kickoff
// prompt it still owes (an accepted plan's, or a /goal start's), the
// budget notes not yet delivered to the model, and the mark that the next
// kickoff or continuation is the one transient retry. Its methods make
// every transition of that state (a person's action, a turn's admission,
// choice and booking, the model's end request, a clear) and give its
// stored form; none sends, stores or reads the clock.
//
// Not safe for concurrent use. The zero State has no Goal. The session
// guards its State with the lock under which it also decides its posture,
// queue and interactions, so each transition is atomic with those
// decisions; assigning a new State (a Goal started, or cleared) forgets
// the old one's notes and retry mark.
type State struct {
	Goal    *Goal  // nil: none
	Kickoff string // the pending kickoff prompt; "" when sent or none
	notes   []string
	retry   bool
}

// Record is the stored form of a [State]: the Goal as JSON and the
// pending kickoff.
type Record struct {
	ID, Data, Kickoff string
}

// Load is the State of a stored Goal (its JSON and pending kickoff). A
// Goal that was active when an earlier process stopped (restarted true)
// comes back paused ([Goal.RestorePaused]); changed then says it must be
// stored again. Data that does not decode is an error, with no State.
func Load(data, kickoff string, restarted bool) (st State, changed bool, err error) {
	var g Goal
	if err := json.Unmarshal([]byte(data), &g); err != nil {
		return State{}, false, err
	}
	st = State{Goal: &g, Kickoff: kickoff}
	if g.Status == Active && restarted {
		g.RestorePaused()
		return st, true, nil
	}
	return st, false, nil
}

// Record stamps the Goal's UpdatedAt with now and returns the stored form
// (ok false: there is no Goal).
func (st *State) Record(now time.Time) (r Record, ok bool) {
	if st.Goal == nil {
		return Record{}, false
	}
	st.Goal.UpdatedAt = now
	data, _ := json.Marshal(st.Goal)
	return Record{ID: st.Goal.ID, Data: string(data), Kickoff: st.Kickoff}, true
}

// Dispatched is the stored form of Goal id with its kickoff marked sent
// (no kickoff; a copy stamped with now), for the transaction that stores
// the kickoff prompt, so the kickoff is never sent twice (ok false: the
// Goal is no longer id). The State changes only by [State.KickoffSent],
// once that transaction committed.
func (st *State) Dispatched(id string, now time.Time) (r Record, ok bool) {
	if st.Goal == nil || st.Goal.ID != id {
		return Record{}, false
	}
	c := *st.Goal
	c.UpdatedAt = now
	data, _ := json.Marshal(&c)
	return Record{ID: id, Data: string(data)}, true
}

// KickoffSent forgets the pending kickoff of Goal id, if it is still the
// Goal: its prompt was stored with [State.Dispatched]'s record.
func (st *State) KickoffSent(id string) {
	if st.Goal != nil && st.Goal.ID == id {
		st.Kickoff = ""
	}
}

// View is a copy of the Goal (nil: none) and whether its kickoff is still
// pending, for the session's goal event.
func (st *State) View() (g *Goal, kickoffPending bool) {
	if st.Goal == nil {
		return nil, false
	}
	c := *st.Goal
	return &c, st.Kickoff != ""
}

// Unfinished reports a Goal that is not complete (active, paused, blocked
// or budget-limited): it refuses Plan, a fork and a second Goal.
func (st *State) Unfinished() bool { return st.Goal != nil && st.Goal.Status.Unfinished() }

// Active reports an active Goal, the one whose turns offer [UpdateTool].
func (st *State) Active() bool { return st.Goal != nil && st.Goal.Status == Active }

// Next is the Goal turn [Decide] chose (kickoff true: [Kickoff], else
// [Continue]) with its prompt and what the view shows for it; display is
// "" for an accepted plan's kickoff, which the handoff names. It consumes
// the one-retry mark. The Goal must be there.
func (st *State) Next(kickoff bool) (t Turn, prompt, display string) {
	g := st.Goal
	t = Turn{ID: g.ID, Objective: g.Objective, Kickoff: kickoff, Continuation: !kickoff, Retried: st.retry}
	st.retry = false
	if !kickoff {
		return t, ContinuePrompt, "Continue Goal"
	}
	if g.PlanRef == "" || IsObjectiveKickoff(st.Kickoff) {
		display = "Work toward Goal: " + g.Objective
	}
	return t, st.Kickoff, display
}

// Admit is [Admit] with this State's Goal and undelivered notes; the
// notes it hands to the turn (suffix) are forgotten.
func (st *State) Admit(t Turn, free bool) (bound Turn, suffix, drop string) {
	bound, suffix, drop = Admit(st.Goal, t, free, st.notes)
	if drop == "" && suffix != "" {
		bound.Notes, st.notes = st.notes, nil
	}
	return bound, suffix, drop
}

// Unsent takes back the notes [State.Admit] handed turn t, whose prompt
// was never stored (so never sent): the next Goal turn of the same Goal
// carries them, before any noted since.
func (st *State) Unsent(t Turn) {
	if st.Goal == nil || st.Goal.ID != t.ID || len(t.Notes) == 0 {
		return
	}
	st.notes = append(append([]string(nil), t.Notes...), st.notes...)
}

// Book settles turn t ([Goal.Book]) if it ran for the current Goal (ok
// false: the Goal was cleared or replaced since, and nothing changes),
// keeping the notes for the next Goal turn, the retry mark and the
// kickoff's end; the session carries out the rest of the [Booking] (save,
// announce, requeue).
func (st *State) Book(t Turn, u TurnUsage, err error, transient bool) (b Booking, ok bool) {
	g := st.Goal
	if g == nil || g.ID != t.ID {
		return Booking{}, false
	}
	b = g.Book(t, u, err, transient)
	st.notes = append(st.notes, b.Notes...)
	if b.RetryNext {
		st.retry = true
	}
	if b.KickoffDone {
		st.Kickoff = ""
	}
	return b, true
}

// Act applies a person's Goal action other than clear ([Act]) and keeps
// its effect on the rest of the State: a new Goal replaces the old one
// with its kickoff pending; an edit replaces a kickoff still pending
// (never one already sent); a budget change forgets the notes, which
// describe the old budget. A refusal changes nothing.
func (st *State) Act(verb, rest string, c ActContext) (Acted, error) {
	a, err := Act(st.Goal, verb, rest, c)
	if err != nil {
		return Acted{}, err
	}
	switch {
	case a.Goal != st.Goal:
		*st = State{Goal: a.Goal, Kickoff: a.Kickoff}
	case a.KickoffEdited && st.Kickoff != "":
		st.Kickoff = a.Kickoff
	}
	if a.BudgetChanged {
		st.notes = nil
	}
	return a, nil
}

// Cleared is the stored form of the Goal marked cleared (no kickoff,
// UpdatedAt as it was), or [ErrNoGoal]. The State is unchanged: the
// session forgets it (assigns the zero State) only once that is stored.
func (st *State) Cleared() (Record, error) {
	if st.Goal == nil {
		return Record{}, ErrNoGoal
	}
	data, _ := json.Marshal(st.Goal)
	return Record{ID: st.Goal.ID, Data: string(data)}, nil
}

// ToolSpec describes a tool the session offers the model.
type ToolSpec struct {
	Name, Description string
	Parameters        json.RawMessage // JSON Schema of the arguments
}

// UpdateTool is update_goal, offered while a Goal is active: the model's
// only way to end it ([State.RequestEnd]).
var UpdateTool = ToolSpec{
	Name:        "update_goal",
	Description: "End the active Goal: status complete, or blocked with a summary of what blocks it.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"status":{"type":"string","enum":["complete","blocked"]},"summary":{"type":"string"}},"required":["status"]}`),
}

// ErrNoActiveGoal refuses update_goal with no Goal.
var ErrNoActiveGoal = errors.New("there is no active Goal")

// RequestEnd records the end the model asks for with update_goal's
// arguments ([Goal.RequestEnd]): it is settled with the turn's accounting
// when the turn ends, in one save and one event. reply is the tool's
// answer once the request is stored. Arguments that do not decode, no
// Goal ([ErrNoActiveGoal]) or an end the Goal refuses are an error, with
// nothing changed.
func (st *State) RequestEnd(args json.RawMessage) (reply string, err error) {
	var a struct{ Status, Summary string }
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("update_goal: invalid arguments: %w", err)
	}
	if st.Goal == nil {
		return "", ErrNoActiveGoal
	}
	if err := st.Goal.RequestEnd(a.Status, a.Summary); err != nil {
		return "", err
	}
	return "Recorded: the Goal becomes " + strings.TrimSpace(a.Status) + " when this turn ends; finish your reply without further tool calls.", nil
}
