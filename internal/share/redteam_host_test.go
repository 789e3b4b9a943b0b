package share

import "testing"

// TestHostAllowVariants: spellings an attacker's page can put in Host
// through DNS rebinding, or that a person's browser sends for loopback.
func TestHostAllowVariants(t *testing.T) {
	h := newHostAllow("127.0.0.1:0", "https://share.example.com:8443/base")
	for host, want := range map[string]bool{
		"localhost":                 true,
		"LOCALHOST:1234":            true,
		"localhost.:1234":           true,
		"127.0.0.1":                 true,
		"127.0.0.1.:80":             true,
		"127.5.6.7:80":              true, // all of 127/8 is loopback
		"[::1]:80":                  true,
		"[::ffff:127.0.0.1]:80":     true,
		"share.example.com":         true,
		"SHARE.example.com.:8443":   true,
		"":                          false,
		"evil.example":              false,
		"localhost.evil.example":    false,
		"127.0.0.1.nip.io":          false,
		"0x7f000001":                false,
		"2130706433":                false,
		"0177.0.0.1":                false,
		"foo.localhost":             false,
		"share.example.com.evil":    false,
		"evil.example@localhost":    false,
		"localhost\x00.evil":        false,
		"[::ffff:10.0.0.1]:80":      false,
		"0.0.0.0":                   false,
		"[::]":                      false,
		"share.example.com:8443:80": false,
	} {
		if got := h.ok(host); got != want {
			t.Errorf("Host %q: allowed %v, want %v", host, got, want)
		}
	}
}
