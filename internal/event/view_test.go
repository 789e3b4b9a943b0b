package event

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNewToolCallArguments(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, `{}`},
		{`not json`, `{}`},
		{`{"a":`, `{}`},
		{`{"path":"x"}`, `{"path":"x"}`},
		{`[1,2]`, `[1,2]`},
	} {
		got := NewToolCall("c1", "read_file", json.RawMessage(tc.in))
		if string(got.Arguments) != tc.want || got.ID != "c1" || got.Name != "read_file" {
			t.Errorf("NewToolCall(%q) = %+v, want arguments %s", tc.in, got, tc.want)
		}
		if _, err := json.Marshal(got); err != nil {
			t.Errorf("NewToolCall(%q) does not encode: %v", tc.in, err)
		}
	}
}

func TestNewToolResultClips(t *testing.T) {
	long := strings.Repeat("a", MaxViewOutput+10)
	// A multi-byte rune straddling the limit is cut before it, never split.
	straddle := strings.Repeat("a", MaxViewOutput-1) + "é" + "tail"
	for _, tc := range []struct {
		name, in, prefix string
		more             int // bytes the note says the model alone got (0: no note)
	}{
		{"short", "ok", "ok", 0},
		{"exactly the limit", strings.Repeat("b", MaxViewOutput), strings.Repeat("b", MaxViewOutput), 0},
		{"over the limit", long, long[:MaxViewOutput], 10},
		{"rune at the limit", straddle, straddle[:MaxViewOutput-1], len(straddle) - (MaxViewOutput - 1)},
	} {
		got := NewToolResult("c", "bash", true, tc.in).Output
		if !strings.HasPrefix(got, tc.prefix) || !utf8.ValidString(got) {
			t.Errorf("%s: output %.40q… does not keep the valid prefix", tc.name, got)
		}
		if tc.more == 0 {
			if got != tc.in {
				t.Errorf("%s: clipped although within the limit", tc.name)
			}
			continue
		}
		note := "\n[… " + itoa(tc.more) + " more bytes shown to the model only]"
		if got != tc.prefix+note {
			t.Errorf("%s: got suffix %q, want %q", tc.name, got[len(tc.prefix):], note)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
