package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// MaxFrame bounds one message; larger frames are skipped with an error.
const MaxFrame = 64 << 20

// frameStream is a jsonrpc2.ObjectStream with Content-Length framing
// (jsonrpc2.VSCodeObjectCodec on the write side) that survives bad input: a
// frame that is not JSON, not a JSON-RPC message or too large is answered
// with the JSON-RPC error it deserves and reading goes on, where jsonrpc2's
// own codec would close the connection.
type frameStream struct {
	r  *bufio.Reader
	c  io.Closer
	mu sync.Mutex // guards w
	w  *bufio.Writer
	// beforeEOF, if set, runs before ReadObject reports end of input.
	beforeEOF func()
}

func newFrameStream(r io.Reader, w io.Writer, c io.Closer) *frameStream {
	return &frameStream{r: bufio.NewReaderSize(r, 64<<10), w: bufio.NewWriter(w), c: c}
}

func (s *frameStream) WriteObject(obj any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := (jsonrpc2.VSCodeObjectCodec{}).WriteObject(s.w, obj); err != nil {
		return err
	}
	return s.w.Flush()
}

func (s *frameStream) Close() error {
	if s.c != nil {
		return s.c.Close()
	}
	return nil
}

type wireError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   jsonrpc2.Error  `json:"error"`
}

func (s *frameStream) replyError(id json.RawMessage, code int64, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	_ = s.WriteObject(wireError{JSONRPC: "2.0", ID: id, Error: jsonrpc2.Error{Code: code, Message: msg}})
}

// ReadObject reads the next well-formed JSON-RPC message into v.
func (s *frameStream) ReadObject(v any) error {
	for {
		body, err := s.readFrame()
		if errors.Is(err, errBadHeader) {
			s.replyError(nil, jsonrpc2.CodeParseError, err.Error())
			continue
		}
		if err != nil {
			if s.beforeEOF != nil {
				s.beforeEOF()
			}
			return err
		}
		if !json.Valid(body) {
			s.replyError(nil, jsonrpc2.CodeParseError, "parse error: invalid JSON")
			continue
		}
		var probe struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  *string         `json:"method"`
			Result  json.RawMessage `json:"result"`
			Error   json.RawMessage `json:"error"`
		}
		trimmed := bytes.TrimSpace(body)
		if len(trimmed) == 0 || trimmed[0] != '{' {
			s.replyError(nil, jsonrpc2.CodeInvalidRequest, "invalid request: expected a JSON object (batches are not supported)")
			continue
		}
		if err := json.Unmarshal(body, &probe); err != nil {
			s.replyError(nil, jsonrpc2.CodeInvalidRequest, "invalid request: "+err.Error())
			continue
		}
		isReq := probe.Method != nil
		isResp := len(probe.ID) > 0 && (len(probe.Result) > 0 || len(probe.Error) > 0)
		if probe.JSONRPC != "2.0" || (!isReq && !isResp) || (isReq && *probe.Method == "") {
			s.replyError(probe.ID, jsonrpc2.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 request or response")
			continue
		}
		if err := json.Unmarshal(body, v); err != nil {
			s.replyError(probe.ID, jsonrpc2.CodeInvalidRequest, "invalid request: "+err.Error())
			continue
		}
		return nil
	}
}

var errBadHeader = errors.New("parse error: bad frame header")

// readFrame returns the body of the next frame. Header trouble yields
// errBadHeader after resynchronising on the next blank line.
func (s *frameStream) readFrame() ([]byte, error) {
	length := -1
	bad := ""
	sawHeader := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && (sawHeader || line != "") {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if !sawHeader {
				continue // stray blank lines between frames
			}
			break
		}
		sawHeader = true
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			bad = fmt.Sprintf("malformed header line %q", clipStr(line, 60))
			continue
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(val))
			if err != nil || n < 0 {
				bad = fmt.Sprintf("bad Content-Length %q", clipStr(val, 30))
				continue
			}
			length = n
		}
	}
	if length < 0 && bad == "" {
		bad = "missing Content-Length"
	}
	if length > MaxFrame {
		if _, err := io.CopyN(io.Discard, s.r, int64(length)); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: frame of %d bytes exceeds %d", errBadHeader, length, MaxFrame)
	}
	if bad != "" {
		return nil, fmt.Errorf("%w: %s", errBadHeader, bad)
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(s.r, body); err != nil {
		return nil, err
	}
	return body, nil
}

func clipStr(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
