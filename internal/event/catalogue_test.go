package event

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// catalogue is every kind of the package, zero-valued.
var catalogue = []Data{User{}, TurnStart{}, Text{}, ToolCall{}, ToolResult{}, Blocked{}, TurnEnd{}, Error{}, Notice{},
	Queued{}, Status{}, ApprovalClosed{}, Handoff{}, ParkedStarted{}, Forked{}, Summary{}, Compacted{}, Proposal{},
	Report{}, Scope{}, Diagnostic{}, Todo{}, Goal{}, Steps{}}

// fields are the JSON member names a kind's struct can carry (a zero
// value with every omitempty field filled would show them all; reading
// the encoding of a zero value and the omitempty tags is enough here).
func fields(t *testing.T, d Data) map[string]bool {
	t.Helper()
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatalf("%s: %v", d.Kind(), err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: data is not an object: %s", d.Kind(), raw)
	}
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// TestCatalogueMatchesProtocol: the kinds are distinct, none is a view
// kind whose struct is the session's, and every member docs/protocol.md
// names for a kind is one its struct writes (an optional member, "x?", is
// one it may write).
func TestCatalogueMatchesProtocol(t *testing.T) {
	seen := map[string]bool{KindApproval: true, KindParked: true}
	byKind := map[string]Data{}
	for _, d := range catalogue {
		if seen[d.Kind()] {
			t.Errorf("kind %q twice", d.Kind())
		}
		seen[d.Kind()] = true
		byKind[d.Kind()] = d
	}
	doc, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	optional := map[string]map[string]bool{"turn_end": {"error": true}}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| `\\{([^}]*)\\}`")
	n := 0
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		d, ok := byKind[m[1]]
		if !ok {
			continue // a request row, not an event kind
		}
		n++
		have := fields(t, d)
		for _, f := range strings.Split(m[2], ",") {
			f = strings.TrimSpace(f)
			name, opt := strings.CutSuffix(f, "?")
			if i := strings.IndexByte(name, ':'); i >= 0 {
				name = strings.TrimSpace(name[:i])
			}
			if opt && optional[m[1]][name] {
				continue
			}
			if !have[name] {
				t.Errorf("kind %s: docs/protocol.md names %q, the struct writes %v", m[1], name, have)
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d event rows in docs/protocol.md; the table moved?", n)
	}
}
