package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
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

// TestWriteResponse: the answers the server writes itself are one valid
// JSON-RPC response each, with the id as the client sent it, the result
// marshalled as encoding/json would, and an internal error (never a broken
// frame) for a result that cannot be encoded.
func TestWriteResponse(t *testing.T) {
	long := strings.Repeat("<line & \"quote\" é\n", 5000)
	for _, tc := range []struct {
		name   string
		id     jsonrpc2.ID
		result any
		rerr   *jsonrpc2.Error
		want   string
	}{
		{"raw id restored", wireID(json.RawMessage(` 18446744073709551616 `)), map[string]int{"n": 1},
			nil, `{"jsonrpc":"2.0","id":18446744073709551616,"result":{"n":1}}`},
		{"string id with escapes", wireID(json.RawMessage(`"a\"b\u00e9"`)), []string{},
			nil, `{"jsonrpc":"2.0","id":"a\"b\u00e9","result":[]}`},
		{"nil result is null", wireID(json.RawMessage(`7`)), nil,
			nil, `{"jsonrpc":"2.0","id":7,"result":null}`},
		{"an id jsonrpc2 made", jsonrpc2.ID{Num: 3}, true,
			nil, `{"jsonrpc":"2.0","id":3,"result":true}`},
		{"error", wireID(json.RawMessage(`"x"`)), nil, &jsonrpc2.Error{Code: -32000, Message: "no <session>"},
			`{"jsonrpc":"2.0","id":"x","error":{"code":-32000,"message":"no \u003csession\u003e"}}`},
		{"unencodable result", wireID(json.RawMessage(`1`)), map[string]any{"c": make(chan int)},
			nil, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"the result cannot be encoded: json: unsupported type: chan int"}}`},
		{"long result", wireID(json.RawMessage(`2`)), map[string]string{"text": long}, nil, ""},
	} {
		var out bytes.Buffer
		s := newFrameStream(strings.NewReader(""), &out, nil, 0)
		if err := s.WriteResponse(tc.id, tc.result, tc.rerr); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		header, body, ok := strings.Cut(out.String(), "\r\n\r\n")
		if !ok || header != fmt.Sprintf("Content-Length: %d", len(body)) {
			t.Fatalf("%s: bad frame %q", tc.name, out.String())
		}
		if !json.Valid([]byte(body)) {
			t.Fatalf("%s: invalid JSON %q", tc.name, body)
		}
		if tc.want != "" && body != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, body, tc.want)
		}
		if tc.want == "" {
			var resp struct {
				ID     int               `json:"id"`
				Result map[string]string `json:"result"`
			}
			if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.ID != 2 || resp.Result["text"] != long {
				t.Errorf("%s: the long result did not survive (%v)", tc.name, err)
			}
		}
	}
}
