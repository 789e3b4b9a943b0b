package session

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestCoalesceText(t *testing.T) {
	ev := func(seq int64, kind, data string) Event {
		return Event{Session: "s", Seq: seq, Kind: kind, Data: json.RawMessage(data)}
	}
	for _, tc := range []struct {
		name     string
		in, want []Event
	}{
		{"empty", nil, []Event{}},
		{"one run", []Event{ev(1, "text", `{"delta":"a"}`), ev(2, "text", `{"delta":"b\n"}`), ev(3, "text", `{"delta":"c"}`)},
			[]Event{ev(3, "text", `{"delta":"ab\nc"}`)}},
		{"runs split by other kinds", []Event{ev(1, "user", `{"text":"x"}`), ev(2, "text", `{"delta":"a"}`), ev(3, "text", `{"delta":"b"}`),
			ev(4, "tool_call", `{}`), ev(5, "text", `{"delta":"c"}`), ev(6, "turn_end", `{}`)},
			[]Event{ev(1, "user", `{"text":"x"}`), ev(3, "text", `{"delta":"ab"}`), ev(4, "tool_call", `{}`), ev(5, "text", `{"delta":"c"}`), ev(6, "turn_end", `{}`)}},
		{"a malformed text event is kept and ends the run", []Event{ev(1, "text", `{"delta":"a"}`), ev(2, "text", `not json`), ev(3, "text", `{"delta":"b"}`), ev(4, "text", `{"other":1}`)},
			[]Event{ev(1, "text", `{"delta":"a"}`), ev(2, "text", `not json`), ev(3, "text", `{"delta":"b"}`), ev(4, "text", `{"other":1}`)}},
		{"unicode and quotes survive", []Event{ev(7, "text", `{"delta":"é\""}`), ev(8, "text", `{"delta":"✓"}`)},
			[]Event{ev(8, "text", `{"delta":"é\"✓"}`)}},
	} {
		got := CoalesceText(tc.in)
		for i := range got {
			// Compare decoded data: the encoding of a merged event is ours.
			var a, b any
			json.Unmarshal(got[i].Data, &a)
			if i < len(tc.want) {
				json.Unmarshal(tc.want[i].Data, &b)
				if reflect.DeepEqual(a, b) {
					got[i].Data = tc.want[i].Data
				}
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %v\nwant %v", tc.name, got, tc.want)
		}
	}
}
