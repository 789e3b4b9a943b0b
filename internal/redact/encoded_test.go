package redact

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
)

// TestEncodedForms: a provider or a proxy that echoes the key the way it
// travelled — base64 inside a Basic authorization header, at any byte
// offset, padded or not, standard or URL alphabet, or percent-encoded in a
// query string — leaks it as surely as the plain text.
func TestEncodedForms(t *testing.T) {
	const key = "sk-ant+api03/Zx9_Qw-0123456789abcdef"
	var s Set
	s.Add(key)
	var cases []string
	for _, prefix := range []string{"", "u:", "user:", ":"} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			cases = append(cases, "Authorization: Basic "+enc.EncodeToString([]byte(prefix+key))+" was refused")
			cases = append(cases, "token "+enc.EncodeToString([]byte(prefix+key+"\n")))
		}
	}
	cases = append(cases, "GET /v1?key="+url.QueryEscape(key)+"&x=1", "GET /v1/"+url.PathEscape(key)+"/models")
	for _, c := range cases {
		got := s.String(c)
		if !strings.Contains(got, Mask) {
			t.Errorf("not masked: %q", c)
			continue
		}
		// What is left must not decode back to a useful part of the key.
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			for _, w := range strings.Fields(strings.ReplaceAll(got, Mask, " ")) {
				if b, err := enc.DecodeString(strings.TrimRight(w, "=") + strings.Repeat("=", (4-len(strings.TrimRight(w, "="))%4)%4)); err == nil && strings.Contains(string(b), key[:12]) {
					t.Errorf("%q: %q still decodes to the key", c, w)
				}
			}
		}
	}
	if got := s.String("plain text with base64 words like c2stYW50 and QUJD"); strings.Contains(got, Mask) {
		t.Errorf("ordinary text masked: %q", got)
	}
}
