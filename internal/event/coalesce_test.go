package event

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
		{"escapes at the ends of deltas", []Event{ev(1, "text", `{"delta":"a\\"}`), ev(2, "text", `{"delta":"\"b\u003c\n"}`), ev(3, "text", `{"delta":"\\"}`)},
			[]Event{ev(3, "text", `{"delta":"a\\\"b<\n\\"}`)}},
		{"other spellings are decoded", []Event{ev(1, "text", `{ "delta" : "a" }`), ev(2, "text", `{"delta":"b","x":1}`), ev(3, "text", `{"x":"\"}","delta":"c"}`)},
			[]Event{ev(3, "text", `{"delta":"abc"}`)}},
		{"a second delta member is not smuggled", []Event{ev(1, "text", `{"delta":"a","delta":"b"}`), ev(2, "text", `{"delta":"c"}`)},
			[]Event{ev(2, "text", `{"delta":"bc"}`)}},
		{"a delta that is not a string ends the run", []Event{ev(1, "text", `{"delta":"a"}`), ev(2, "text", `{"delta":null}`), ev(3, "text", `{"delta":7}`)},
			[]Event{ev(1, "text", `{"delta":"a"}`), ev(2, "text", `{"delta":null}`), ev(3, "text", `{"delta":7}`)}},
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

// naiveCoalesce is the definition CoalesceText must agree with: decode each
// delta, join the runs, encode the joined text.
func naiveCoalesce(evs []Event) []string {
	var out []string
	var run *string
	for _, e := range evs {
		var v struct {
			Delta *string `json:"delta"`
		}
		if e.Kind != "text" || json.Unmarshal(e.Data, &v) != nil || v.Delta == nil {
			if run != nil {
				out = append(out, "text:"+*run)
				run = nil
			}
			out = append(out, e.Kind+"="+string(e.Data))
			continue
		}
		if run == nil {
			run = new(string)
		}
		*run += *v.Delta
	}
	if run != nil {
		out = append(out, "text:"+*run)
	}
	return out
}

// FuzzCoalesceText: joining the escaped forms decodes to the joined deltas,
// whatever the stored data is, and every merged event is valid JSON.
func FuzzCoalesceText(f *testing.F) {
	f.Add(`{"delta":"a\\"}`, `{"delta":"\\"b"}`, `{"delta":"c","delta":"d"}`)
	f.Add(`{"delta":"\ud83d"}`, `{"delta":"\ude00"}`, `{ "delta":"x"}`)
	f.Add(`{"delta":"<&>"}`, `not json`, `{"delta":"é\u2028"}`)
	f.Add("{\"delta\":\"\xe2\x9c\"}", "{\"delta\":\"\x93\"}", `{"delta":"\\ud83d"}`)
	f.Fuzz(func(t *testing.T, a, b, c string) {
		var in []Event
		for i, d := range []string{a, b, c, a} {
			in = append(in, Event{Seq: int64(i + 1), Kind: "text", Data: json.RawMessage(d)})
		}
		got := CoalesceText(in)
		var dec []string
		for _, e := range got {
			if !json.Valid(e.Data) && e.Kind == "text" {
				if naive := naiveCoalesce([]Event{e}); len(naive) == 1 && naive[0] == "text="+string(e.Data) {
					dec = append(dec, "text="+string(e.Data)) // kept as it was
					continue
				}
				t.Fatalf("merged event is not JSON: %q", e.Data)
			}
			n := naiveCoalesce([]Event{e})
			dec = append(dec, n...)
		}
		want := naiveCoalesce(in)
		if !reflect.DeepEqual(dec, want) {
			t.Fatalf("CoalesceText(%q, %q, %q):\n got %q\nwant %q", a, b, c, dec, want)
		}
	})
}
