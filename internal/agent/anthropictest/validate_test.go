package anthropictest

import (
	"strings"
	"testing"
)

// TestValidate: the validator rejects what the real API rejects, so tests
// that use it notice a request shape the API would refuse.
func TestValidate(t *testing.T) {
	u := func(c string) string { return `{"role":"user","content":[` + c + `]}` }
	a := func(c string) string { return `{"role":"assistant","content":[` + c + `]}` }
	body := func(extra string, msgs ...string) string {
		return `{"model":"m","max_tokens":9000` + extra + `,"messages":[` + strings.Join(msgs, ",") + `]}`
	}
	text := `{"type":"text","text":"hi"}`
	use := `{"type":"tool_use","id":"t1","name":"x","input":{}}`
	result := `{"type":"tool_result","tool_use_id":"t1","content":"r"}`
	think := `,"thinking":{"type":"enabled","budget_tokens":2048}`
	good := []string{
		body("", u(text)),
		body("", u(text), a(use), u(result+","+text)),
		body(think, u(text), a(`{"type":"thinking","thinking":"t","signature":"s"},`+use), u(result)),
	}
	bad := map[string]string{
		"first message assistant": body("", a(text), u(text)),
		"roles not alternating":   body("", u(text), u(text)),
		"empty text":              body("", u(`{"type":"text","text":""}`)),
		"missing result":          body("", u(text), a(use), u(text)),
		"orphan result":           body("", u(result)),
		"result after text":       body("", u(text), a(use), u(text+","+result)),
		"loop without thinking":   body(think, u(text), a(use), u(result)),
		"unsigned thinking":       body(think, u(text), a(`{"type":"thinking","thinking":"t"},`+use), u(result)),
		"input not an object":     body("", u(text), a(`{"type":"tool_use","id":"t1","name":"x","input":"s"}`), u(result)),
		"bad tool_use id":         body("", u(text), a(`{"type":"tool_use","id":"t:1","name":"x","input":{}}`), u(`{"type":"tool_result","tool_use_id":"t:1"}`)),
		"budget over max_tokens":  body(`,"thinking":{"type":"enabled","budget_tokens":9000}`, u(text)),
		"five breakpoints": body("", u(strings.Repeat(`{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},`, 4)+
			`{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}`)),
	}
	for _, g := range good {
		if err := Validate([]byte(g)); err != nil {
			t.Errorf("valid request rejected: %v\n%s", err, g)
		}
	}
	for name, b := range bad {
		if err := Validate([]byte(b)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
