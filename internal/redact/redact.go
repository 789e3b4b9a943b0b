package redact

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"sync"
)

// Mask replaces a secret.
const Mask = "[redacted]"

// MinLen is the shortest secret a [Set] masks.
const MinLen = 8

// Set is a set of secrets to mask. Safe for concurrent use.
type Set struct {
	mu    sync.RWMutex // guards forms
	forms []string     // every spelling of every secret, longest first
}

// Add registers secrets (and their JSON-escaped spellings).
func (s *Set) Add(secrets ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sec := range secrets {
		if len(sec) < MinLen {
			continue
		}
		for _, f := range spellings(sec) {
			if len(f) >= MinLen && !contains(s.forms, f) {
				s.forms = append(s.forms, f)
			}
		}
	}
	// Longest first, so a secret containing another is masked whole.
	for i := 1; i < len(s.forms); i++ {
		for j := i; j > 0 && len(s.forms[j]) > len(s.forms[j-1]); j-- {
			s.forms[j], s.forms[j-1] = s.forms[j-1], s.forms[j]
		}
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func (s *Set) snapshot() []string {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.forms
}

// String returns v with every secret masked.
func (s *Set) String(v string) string {
	for _, f := range s.snapshot() {
		if strings.Contains(v, f) {
			v = strings.ReplaceAll(v, f, Mask)
		}
	}
	return v
}

// Bytes returns b with every secret masked (b itself when none occurs).
func (s *Set) Bytes(b []byte) []byte {
	forms := s.snapshot()
	if len(forms) == 0 {
		return b
	}
	str := string(b)
	out := s.String(str)
	if out == str {
		return b
	}
	return []byte(out)
}

// Error returns err with its message redacted; errors.Is and errors.As
// still see err's chain. nil stays nil.
func (s *Set) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := s.String(msg); red != msg {
		return &redacted{msg: red, err: err}
	}
	return err
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// IsRedacted reports whether err's message was redacted by [Set.Error].
func IsRedacted(err error) bool {
	var r *redacted
	return errors.As(err, &r)
}

// Stream redacts text arriving in pieces and passes the result to emit.
// Not safe for concurrent use.
type Stream struct {
	set  *Set
	emit func(string)
	held string
}

// Stream returns a [Stream] writing to emit.
func (s *Set) Stream(emit func(string)) *Stream { return &Stream{set: s, emit: emit} }

// Write adds a piece; what can no longer be part of a secret is emitted.
func (st *Stream) Write(piece string) {
	text := st.held + piece
	forms := st.set.snapshot()
	if len(forms) == 0 {
		st.held = ""
		if text != "" {
			st.emit(text)
		}
		return
	}
	text = st.set.String(text)
	// Hold back the longest suffix that is a proper prefix of a secret.
	keep := 0
	for _, f := range forms {
		for n := min(len(f)-1, len(text)); n > keep; n-- {
			if strings.HasSuffix(text, f[:n]) {
				keep = n
				break
			}
		}
	}
	out := text[:len(text)-keep]
	st.held = text[len(text)-keep:]
	if out != "" {
		st.emit(out)
	}
}

// Flush emits what is held back (the response ended).
func (st *Stream) Flush() {
	if st.held != "" {
		st.emit(st.set.String(st.held))
		st.held = ""
	}
}

// Handler wraps h so every record's message and string attributes are
// redacted.
func (s *Set) Handler(h slog.Handler) slog.Handler { return &handler{set: s, h: h} }

type handler struct {
	set *Set
	h   slog.Handler
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.set.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.set.String(v.String()))
	case slog.KindGroup:
		var as []any
		for _, g := range v.Group() {
			as = append(as, h.attr(g))
		}
		return slog.Group(a.Key, as...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.set.String(err.Error()))
		}
		return slog.String(a.Key, h.set.String(v.String()))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &handler{set: h.set, h: h.h.WithAttrs(red)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{set: h.set, h: h.h.WithGroup(name)}
}

// spellings are the forms a secret travels in: verbatim, JSON-escaped,
// percent-encoded (query and path) and base64 in both alphabets. Base64
// depends on the bytes around the secret, so for each of the three byte
// offsets it may start at, the form is the run of characters that only
// the secret's bytes determine (a few characters at either end, shared
// with the neighbours, stay visible; they carry under 12 bits of it).
func spellings(sec string) []string {
	b, _ := json.Marshal(sec)
	out := []string{sec, string(b[1 : len(b)-1]), url.QueryEscape(sec), url.PathEscape(sec)}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for k := 0; k < 3; k++ {
			full := enc.EncodeToString(append(make([]byte, k), sec...))
			start, end := (8*k+5)/6, 8*(k+len(sec))/6
			if end > start {
				out = append(out, full[start:end])
			}
		}
	}
	return out
}
