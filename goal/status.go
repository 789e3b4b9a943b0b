package goal

import "fmt"

// Status is where a [Goal] stands. The zero value is not a valid status, so
// a Goal that was never constructed with [New] is never mistaken for an
// active one.
type Status int

const (
	// Active: continuation turns may be dispatched.
	Active Status = iota + 1
	// Paused by the person, by a failure, by an interrupt, by a changed plan
	// or by a restart. [Goal.Reason] says which.
	Paused
	// Blocked: the model reported, through update_goal, that it cannot go
	// on; [Goal.Reason] holds its summary.
	Blocked
	// BudgetLimited: the token budget was reached at a settlement.
	BudgetLimited
	// Complete: the model reported the objective done. The only finished
	// status.
	Complete
)

var statusNames = [...]string{
	Active:        "active",
	Paused:        "paused",
	Blocked:       "blocked",
	BudgetLimited: "budget-limited",
	Complete:      "complete",
}

func (s Status) valid() bool { return s >= Active && s <= Complete }

// String returns the wire name: active, paused, blocked, budget-limited or
// complete; "Status(N)" for an invalid value.
func (s Status) String() string {
	if !s.valid() {
		return fmt.Sprintf("Status(%d)", int(s))
	}
	return statusNames[s]
}

// ParseStatus is the inverse of [Status.String]. It accepts only the exact
// wire names.
func ParseStatus(name string) (Status, error) {
	for s := Active; s <= Complete; s++ {
		if statusNames[s] == name {
			return s, nil
		}
	}
	return 0, fmt.Errorf("goal: unknown status %q", name)
}

// Unfinished reports whether a Goal in this status still counts as the
// session's Goal: every valid status except [Complete]. An unfinished Goal
// blocks entering Plan and starting another Goal; at most one exists per
// session. (A cleared Goal is simply removed by the caller.)
func (s Status) Unfinished() bool { return s.valid() && s != Complete }

// MarshalText encodes the wire name, so a Status persists as a string.
func (s Status) MarshalText() ([]byte, error) {
	if !s.valid() {
		return nil, fmt.Errorf("goal: cannot encode invalid %v", s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText decodes a wire name.
func (s *Status) UnmarshalText(b []byte) error {
	v, err := ParseStatus(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}
