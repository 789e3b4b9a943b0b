package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

func TestRunExtract(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     string
	}{
		{
			name: "proposal",
			in:   "Intro\r\n<proposed_plan>\r\n# Title\r\n- step\r\n</proposed_plan>\r\nbye",
			want: `{"proposal":{"title":"Title","body":"# Title\n- step","hash":"` + hashOf("# Title\n- step") + `"},"diagnostics":[],"visible":"Intro\nbye"}`,
		},
		{
			name: "nothing",
			in:   "just prose",
			want: `{"proposal":null,"diagnostics":[],"visible":"just prose"}`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := runExtract(nil, strings.NewReader(c.in), &out, &errb); code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errb.String())
			}
			if got := strings.TrimSpace(out.String()); got != c.want {
				t.Errorf("output\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestRunExtractWarning(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runExtract(nil, strings.NewReader("<proposed_plan>\n# T\n"), &out, &errb); code != 0 {
		t.Fatalf("exit %d", code)
	}
	var v struct {
		Proposal    *struct{}                        `json:"proposal"`
		Diagnostics []struct{ Kind, Message string } `json:"diagnostics"`
		Visible     string                           `json:"visible"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.Proposal != nil || len(v.Diagnostics) != 1 || v.Diagnostics[0].Kind != "warning" || v.Visible != "" {
		t.Errorf("got %+v", v)
	}
}

func TestRunExtractUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runExtract([]string{"extra"}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
