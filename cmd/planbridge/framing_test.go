package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// rawResponse is one frame the server wrote, its members kept raw so ids
// can be compared byte for byte.
type rawResponse map[string]json.RawMessage

func (r rawResponse) code() int {
	var e struct{ Code int }
	json.Unmarshal(r["error"], &e)
	return e.Code
}

func (r rawResponse) dataCode() string {
	var e struct{ Data struct{ Code string } }
	json.Unmarshal(r["error"], &e)
	return e.Data.Code
}

// streamExchange feeds input to a fresh server, reads every response and
// reports the server's peak resident memory in MiB.
func streamExchange(t *testing.T, input io.Reader, extra ...string) ([]rawResponse, int64) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--state-dir", t.TempDir()}, extra...)...)
	cmd.Stdin = input
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var resps []rawResponse
	br := bufio.NewReader(out)
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "Content-Length:")))
		if err != nil {
			t.Fatalf("bad header %q", line)
		}
		br.ReadString('\n')
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			t.Fatal(err)
		}
		var m rawResponse
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("bad response %q", body)
		}
		resps = append(resps, m)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
	return resps, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss / 1024
}

func TestIDsEchoedExactly(t *testing.T) {
	ids := []string{`-1`, `0`, `18446744073709551615`, `18446744073709551616`, `9007199254740993`, `-9223372036854775809`,
		`1.5`, `1e3`, `"-1"`, `"a\"b"`, `""`, `"\u00e9"`, `7`}
	var in strings.Builder
	for _, id := range ids {
		in.WriteString(frame(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/list"}`))
	}
	// A cancel naming an id the way the client sent it reaches that request.
	in.WriteString(frame(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":-1}}`))
	in.WriteString(frame(`{"jsonrpc":"2.0","id":{"x":1},"method":"session/list"}`))
	resps, _ := streamExchange(t, strings.NewReader(in.String()))
	if len(resps) != len(ids)+1 {
		t.Fatalf("%d responses for %d requests: %v", len(resps), len(ids)+1, resps)
	}
	got := map[string]bool{}
	for _, r := range resps {
		if string(r["id"]) == "null" {
			if r.code() != -32600 {
				t.Errorf("object id answered %v", r)
			}
			continue
		}
		// The cancel for -1 may land before or after its answer.
		if r.code() != 0 && !(string(r["id"]) == "-1" && r.code() == -32800) {
			t.Errorf("id %s: error %s", r["id"], r["error"])
		}
		got[string(r["id"])] = true
	}
	for _, id := range ids {
		if !got[id] {
			t.Errorf("id %s was not echoed exactly; got %v", id, got)
		}
	}
}

func TestFramingResyncAndLimits(t *testing.T) {
	submit := func(id int, text string) string {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "session/submit",
			"params": map[string]string{"session": "s-none", "text": text}})
		return string(b)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"session/list"}`
	input := io.MultiReader(
		// A bad header name, then its body without a usable length.
		strings.NewReader("Content-Lenght: "+strconv.Itoa(len(body))+"\r\n\r\n"+body),
		strings.NewReader(frame(`{"jsonrpc":"2.0","id":2,"method":"session/list"}`)),
		// A bad extra header with a good length: answered with its own id.
		strings.NewReader("Content-Length: "+strconv.Itoa(len(body)+1)+"\r\nX Bad Header\r\n\r\n"+strings.Replace(body, `"id":1`, `"id":13`, 1)),
		strings.NewReader(frame(`{"jsonrpc":"2.0","id":3,"method":"session/list"}`)),
		// A 200 MiB header line.
		strings.NewReader("X-Junk: "),
		io.LimitReader(repeat('a'), 200<<20),
		strings.NewReader("\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+strings.Replace(body, `"id":1`, `"id":4`, 1)),
		strings.NewReader(frame(`{"jsonrpc":"2.0","id":5,"method":"session/list"}`)),
		// A 50 MB session/submit: refused with its id, never buffered.
		strings.NewReader(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(submit(6, ""))+50<<20)),
		strings.NewReader(strings.TrimSuffix(submit(6, ""), `"}}`)),
		io.LimitReader(repeat('x'), 50<<20),
		strings.NewReader(`"}}`),
		strings.NewReader(frame(`{"jsonrpc":"2.0","id":7,"method":"session/list"}`)),
		strings.NewReader(frame(`{"jsonrpc":"2.0","id":9,"method":"session/list"}`)),
	)
	resps, rssMiB := streamExchange(t, input)
	byID := map[string]rawResponse{}
	var nulls []rawResponse
	for _, r := range resps {
		if string(r["id"]) == "null" {
			nulls = append(nulls, r)
		} else {
			byID[string(r["id"])] = r
		}
	}
	for _, id := range []string{"2", "3", "4", "5", "7", "9"} {
		if r, ok := byID[id]; !ok || r.code() != 0 {
			t.Errorf("request %s after bad input: %v", id, r)
		}
	}
	if r := byID["13"]; r.code() != -32700 {
		t.Errorf("bad extra header: %v", r)
	}
	if r := byID["6"]; r.code() != -32600 || r.dataCode() != "frame_too_large" {
		t.Errorf("50 MB frame: %v", r)
	}
	if len(nulls) != 2 {
		t.Errorf("want 2 id-less parse errors (misspelt header, long line), got %d: %v", len(nulls), nulls)
	}
	// 200 MiB of header and 50 MB of body went through; the server held
	// neither (its baseline is a few tens of MiB).
	if rssMiB > 150 {
		t.Errorf("peak memory %d MiB: oversized input was buffered", rssMiB)
	}
	t.Logf("peak RSS %d MiB", rssMiB)
}

type repeatReader byte

func repeat(b byte) io.Reader { return repeatReader(b) }

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}
