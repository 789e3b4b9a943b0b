package rpc

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// FuzzFrameStream: any input is read to its end without a panic, every
// message read is valid JSON, and memory stays bounded (a small maxFrame
// makes oversized bodies common).
func FuzzFrameStream(f *testing.F) {
	for _, seed := range []string{
		"Content-Length: 2\r\n\r\n{}",
		"Content-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":-1,\"method\":\"x\"}",
		"Content-Lenght: 5\r\n\r\n{\"a\":1}Content-Length: 2\r\n\r\n{}",
		"X-Junk: " + strings.Repeat("a", MaxHeaderLine+10) + "\r\n\r\n",
		"Content-Length: 99999999999999999999\r\n\r\n",
		"Content-Length: 300\r\n\r\n{\"id\":\"\\\"x\",\"params\":\"" + strings.Repeat("z", 290),
		"\r\n\r\ngarbage\nContent-Type: x\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		s := newFrameStream(bytes.NewReader(in), &out, nil, 256)
		for i := 0; ; i++ {
			var v json.RawMessage
			err := s.ReadObject(&v)
			if err != nil {
				break
			}
			if !json.Valid(v) {
				t.Fatalf("invalid message %q", v)
			}
			if i > len(in) {
				t.Fatal("more messages than input bytes")
			}
		}
		// Every answer the stream wrote is a well-framed JSON object.
		rd := newFrameStream(&out, io.Discard, nil, 1<<20)
		for {
			var v map[string]json.RawMessage
			if err := rd.ReadObject(&v); err != nil {
				break
			}
		}
	})
}

func TestIDScanner(t *testing.T) {
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":-1,"method":"x"}`:              `-1`,
		`{"params":{"id":5,"x":"id"},"id":"a\"b","method":1}`: `"a\"b"`,
		`{"method":"x","params":["id",{"id":1}],"id" : 7 }`:   `7`,
		`{"idx":1,"method":"x"}`:                              ``,
		`{"id":{"nested":1}}`:                                 ``,
		`[{"id":1}]`:                                          ``,
	} {
		sc := &idScanner{}
		sc.Write([]byte(body))
		if got := string(sc.id()); got != want {
			t.Errorf("%s: id %q, want %q", body, got, want)
		}
	}
}
