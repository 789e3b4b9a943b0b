package session

import (
	"encoding/json"
	"strings"
)

// CoalesceText merges each run of consecutive "text" events into one event
// that carries the run's deltas joined, and the seq and time of the run's
// last event. A client replaying a log renders the same transcript from far
// fewer events (a streamed response is thousands of small deltas); seqs
// stay increasing, with gaps where deltas were merged. A text event whose
// data is not {"delta": string} is kept as it is and ends the run. evs is
// not modified.
func CoalesceText(evs []Event) []Event {
	out := make([]Event, 0, len(evs))
	var run strings.Builder
	var last Event
	open := false
	closeRun := func() {
		if !open {
			return
		}
		data, _ := json.Marshal(map[string]string{"delta": run.String()})
		last.Data = data
		out = append(out, last)
		run.Reset()
		open = false
	}
	for _, e := range evs {
		var d struct {
			Delta *string `json:"delta"`
		}
		if e.Kind != "text" || json.Unmarshal(e.Data, &d) != nil || d.Delta == nil {
			closeRun()
			out = append(out, e)
			continue
		}
		run.WriteString(*d.Delta)
		last, open = e, true
	}
	closeRun()
	return out
}
