package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestFramingAdversarial: header tricks a hostile or broken client sends.
// Each bad frame gets one error (with its id when the body was read), no
// frame is dropped silently, and the valid request after all of them is
// read intact.
func TestFramingAdversarial(t *testing.T) {
	frame := func(hdr, body string) string { return hdr + "\r\n\r\n" + body }
	req := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"m"}` }
	body := req("7")
	deep := `{"jsonrpc":"2.0","id":8,"method":"m","params":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`
	cases := []struct {
		name, in string
		wantID   string // id in the error answer
	}{
		{"negative length", frame("Content-Length: -5", "") + body, "null"},
		{"plus sign is a number", frame("Content-Length: +"+fmt.Sprint(len(body)), body), ""},
		{"huge length", frame("Content-Length: 99999999999999999999999", "") + body, "null"},
		{"two different lengths", frame(fmt.Sprintf("Content-Length: %d\r\nContent-Length: %d", len(body), len(body)+1), body), "7"},
		{"two equal lengths", frame(fmt.Sprintf("Content-Length: %d\r\nContent-Length: %d", len(body), len(body)), body), ""},
		{"space before colon", frame(fmt.Sprintf("Content-Length : %d", len(body)), body), "null"},
		{"LF only", fmt.Sprintf("Content-Length: %d\n\n%s", len(body), body), ""},
		{"odd content type", frame(fmt.Sprintf("Content-Length: %d\r\nContent-Type: text/html; charset=utf-7", len(body)), body), ""},
		{"batch", frame(fmt.Sprintf("Content-Length: %d", len("["+body+"]")), "["+body+"]"), "null"},
		{"deep nesting", frame(fmt.Sprintf("Content-Length: %d", len(deep)), deep), "null"},
		{"id object", frame(fmt.Sprintf("Content-Length: %d", len(req(`{"a":1}`))), req(`{"a":1}`)), "null"},
	}
	final := req("-1e400")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in + frame(fmt.Sprintf("Content-Length: %d", len(final)), final)
			var out bytes.Buffer
			fs := newFrameStream(strings.NewReader(in), &out, nil, 1<<20)
			var got []json.RawMessage
			for {
				var m json.RawMessage
				if err := fs.ReadObject(&m); err != nil {
					if err != io.EOF {
						t.Fatalf("read: %v", err)
					}
					break
				}
				got = append(got, m)
			}
			errs := readFrames(t, out.Bytes())
			if c.wantID == "" {
				if len(errs) != 0 || len(got) != 2 {
					t.Fatalf("a valid frame was refused: errors %s, messages %d", errs, len(got))
				}
				return
			}
			if len(errs) != 1 || len(got) != 1 {
				t.Fatalf("errors %s, messages %d; want one error and the final request", errs, len(got))
			}
			var e struct{ ID json.RawMessage }
			json.Unmarshal(errs[0], &e)
			if string(e.ID) != c.wantID {
				t.Errorf("error id %s, want %s: %s", e.ID, c.wantID, errs[0])
			}
			if !strings.Contains(string(got[0]), `-1e400`) {
				t.Errorf("final request %s lost its id", got[0])
			}
		})
	}
}

func readFrames(t *testing.T, b []byte) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	r := bufio.NewReader(bytes.NewReader(b))
	for {
		var n int
		if _, err := fmt.Fscanf(r, "Content-Length: %d\r\n\r\n", &n); err != nil {
			return out
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			t.Fatal(err)
		}
		out = append(out, buf)
	}
}
