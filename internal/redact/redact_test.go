package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const key = "sk-test-abcdefghijklmnop"

func TestStringAndError(t *testing.T) {
	var s Set
	s.Add(key, "short", `quote"d-secret-value`)
	for in, want := range map[string]string{
		"Incorrect API key provided: " + key + ".": "Incorrect API key provided: " + Mask + ".",
		key + key:                       Mask + Mask,
		`{"k":"quote\"d-secret-value"}`: `{"k":"` + Mask + `"}`,
		"short stays":                   "short stays",
		"sk-test-abcdefghijklmno (one byte missing)": "sk-test-abcdefghijklmno (one byte missing)",
	} {
		if got := s.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	base := errors.New("transient")
	err := s.Error(fmt.Errorf("%w: 401 %s", base, key))
	if strings.Contains(err.Error(), key) || !errors.Is(err, base) || !IsRedacted(err) {
		t.Errorf("Error: %v", err)
	}
	var zero *Set
	if zero.String(key) != key {
		t.Error("nil set changed text")
	}
}

// A secret split across stream pieces at every position is masked, and no
// other text is lost or reordered.
func TestStreamSplitSecret(t *testing.T) {
	var s Set
	s.Add(key)
	text := "before " + key + " middle sk-test-abc not a key " + key
	want := s.String(text)
	for cut1 := 0; cut1 <= len(text); cut1++ {
		for _, step := range []int{1, 3, 7} {
			var out strings.Builder
			st := s.Stream(func(p string) { out.WriteString(p) })
			st.Write(text[:cut1])
			for i := cut1; i < len(text); i += step {
				st.Write(text[i:min(i+step, len(text))])
			}
			st.Flush()
			if out.String() != want {
				t.Fatalf("cut %d step %d: %q", cut1, step, out.String())
			}
		}
	}
}

func TestHandler(t *testing.T) {
	var s Set
	s.Add(key)
	var buf bytes.Buffer
	lg := slog.New(s.Handler(slog.NewTextHandler(&buf, nil))).With("k", key)
	lg.Error("failed with "+key, "err", errors.New("401: "+key), "body", key, slog.Group("g", "x", key))
	if strings.Contains(buf.String(), key) || !strings.Contains(buf.String(), Mask) {
		t.Fatalf("log line %q", buf.String())
	}
}
