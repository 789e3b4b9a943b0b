package review

import "encoding/json"

// LoadPlan decodes a stored plan's progress. When restarted, an
// implementation that was running comes back paused ("paused by
// restart"), and paused says it must be stored again: a restart never
// forgets an implementation in flight, and nothing runs it on its own.
func LoadPlan(data string, restarted bool) (p *TrackedPlan, paused bool, err error) {
	var tp TrackedPlan
	if err := json.Unmarshal([]byte(data), &tp); err != nil {
		return nil, false, err
	}
	if tp.Status == ImplRunning && restarted {
		tp.Status, tp.Reason = ImplPaused, "paused by restart"
		return &tp, true, nil
	}
	return &tp, false, nil
}
