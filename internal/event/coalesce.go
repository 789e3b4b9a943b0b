package event

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// CoalesceText merges each run of consecutive "text" events into one event
// that carries the run's deltas joined, and the seq and time of the run's
// last event. A client replaying a log renders the same transcript from far
// fewer events (a streamed response is thousands of small deltas); seqs
// stay increasing, with gaps where deltas were merged. A text event whose
// data is not {"delta": string} is kept as it is and ends the run. evs is
// not modified.
//
// The deltas are joined in their JSON form: the escaped contents of each
// {"delta":"…"} are concatenated, which is the escaped form of the joined
// text, so a long log is not decoded and encoded again.
func CoalesceText(evs []Event) []Event {
	out := make([]Event, 0, len(evs))
	var run []byte // the escaped contents of the joined deltas
	var last Event
	open := false
	closeRun := func() {
		if !open {
			return
		}
		data := make([]byte, 0, len(deltaPrefix)+len(run)+len(deltaSuffix))
		data = append(append(append(data, deltaPrefix...), run...), deltaSuffix...)
		last.Data = data
		out = append(out, last)
		run = run[:0]
		open = false
	}
	for _, e := range evs {
		delta, ok := escapedDelta(e)
		if !ok {
			closeRun()
			out = append(out, e)
			continue
		}
		run = append(run, delta...)
		last, open = e, true
	}
	closeRun()
	return out
}

const (
	deltaPrefix = `{"delta":"`
	deltaSuffix = `"}`
)

// escapedDelta returns the delta of a text event e as the contents of a
// JSON string (escaped, without its quotes); ok is false when e is not a
// text event whose data is {"delta": string}.
func escapedDelta(e Event) (delta []byte, ok bool) {
	if e.Kind != "text" || !json.Valid(e.Data) {
		return nil, false
	}
	// The form the backend stores: the value is the object's only member
	// when the string that starts after the prefix ends right before the
	// closing brace (valid JSON, so that string is well formed).
	if d, ok := bytes.CutPrefix(e.Data, []byte(deltaPrefix)); ok && bytes.HasSuffix(d, []byte(deltaSuffix)) {
		d = d[:len(d)-len(deltaSuffix)]
		if plainContents(d) {
			return d, true
		}
	}
	// Any other spelling ({ "delta" : "…" }, more members): decoded.
	var v struct {
		Delta *string `json:"delta"`
	}
	if json.Unmarshal(e.Data, &v) != nil || v.Delta == nil {
		return nil, false
	}
	enc, err := json.Marshal(*v.Delta)
	if err != nil {
		return nil, false
	}
	return enc[1 : len(enc)-1], true
}

// plainContents reports whether s is the whole contents of one JSON string
// (no unescaped quote) that can be joined to another by concatenation: valid
// UTF-8 and no \u escape of a surrogate. A lone surrogate or a rune cut
// between two deltas decodes to U+FFFD in each; joined raw, the halves
// would pair up into a character neither delta has.
func plainContents(s []byte) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+3 < len(s) && s[i+1] == 'u' && (s[i+2] == 'd' || s[i+2] == 'D') && bytes.IndexByte([]byte("89abcdefABCDEF"), s[i+3]) >= 0 {
				return false
			}
			i++
		case '"':
			return false
		}
	}
	return utf8.Valid(s)
}
