package planonly

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"planbridge/internal/event"
	"planbridge/internal/session"
	"planbridge/internal/store"
)

func ev(t *testing.T, kind string, data any) event.Event {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return event.Event{Kind: kind, Data: b}
}

func TestDigest(t *testing.T) {
	warn := event.Diagnostic{Level: "warning", Message: "two <proposed_plan> blocks; the last one counts"}
	hint := event.Diagnostic{Level: "hint", Message: "no title"}
	for _, tc := range []struct {
		name    string
		evs     []event.Event
		diags   []event.Diagnostic
		turnErr string
	}{
		{name: "nothing"},
		{name: "diagnostics in order, a turn that ended ok",
			evs:   []event.Event{ev(t, "diagnostic", warn), ev(t, "text", map[string]string{"text": "x"}), ev(t, "diagnostic", hint), ev(t, "turn_end", event.TurnEnd{Turn: 1, OK: true})},
			diags: []event.Diagnostic{warn, hint}},
		{name: "a failed turn's error",
			evs:     []event.Event{ev(t, "turn_end", event.TurnEnd{Turn: 1, OK: false, Error: "model request failed: 502"})},
			turnErr: "model request failed: 502"},
		{name: "the last failed turn's error",
			evs:     []event.Event{ev(t, "turn_end", event.TurnEnd{Turn: 1, Error: "first"}), ev(t, "turn_end", event.TurnEnd{Turn: 2, OK: true}), ev(t, "turn_end", event.TurnEnd{Turn: 3, Error: "last"})},
			turnErr: "last"},
		{name: "events that do not decode are skipped",
			evs:   []event.Event{{Kind: "diagnostic", Data: json.RawMessage(`{"level":`)}, {Kind: "turn_end", Data: json.RawMessage(`[]`)}, ev(t, "diagnostic", hint)},
			diags: []event.Diagnostic{hint}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			diags, turnErr := Digest(tc.evs)
			if !reflect.DeepEqual(diags, tc.diags) || turnErr != tc.turnErr {
				t.Fatalf("Digest = %+v, %q; want %+v, %q", diags, turnErr, tc.diags, tc.turnErr)
			}
		})
	}
}

// TestRunRefusesABadPromptBeforeAnySession: an empty or oversized prompt
// is refused with its code and leaves no session behind.
func TestRunRefusesABadPromptBeforeAnySession(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := session.NewManager(session.Config{Store: st})
	defer m.Close()
	for _, tc := range []struct {
		prompt, code string
	}{
		{" \n", session.CodeInvalidParams},
		{strings.Repeat("x", session.MaxPromptBytes+1), session.CodePromptTooLarge},
	} {
		_, err := Run(ctx, m, t.TempDir(), tc.prompt)
		var se *session.Error
		if !errors.As(err, &se) || se.Code != tc.code {
			t.Fatalf("Run(%.10q…) = %v, want %s", tc.prompt, err, tc.code)
		}
	}
	if list, err := m.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("sessions after refused prompts: %v, %v", list, err)
	}
}
