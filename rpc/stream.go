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

// DefaultMaxFrame is the default bound on one message body ([Options.MaxFrame]).
const DefaultMaxFrame = 16 << 20

// MaxHeaderLine bounds one header line; a longer one is discarded unread.
const MaxHeaderLine = 8 << 10

// CodeFrameTooLarge is the data.code of the error answering a frame over
// the limit.
const CodeFrameTooLarge = "frame_too_large"

// frameStream is a jsonrpc2.ObjectStream with Content-Length framing
// (jsonrpc2.VSCodeObjectCodec on the write side) that survives bad input: a
// frame that is not JSON, not a JSON-RPC message or too large is answered
// with the JSON-RPC error it deserves and reading goes on, where jsonrpc2's
// own codec would close the connection.
//
// Memory is bounded whatever arrives: header lines longer than
// [MaxHeaderLine] and bodies longer than maxFrame are read through and
// dropped, never buffered (the id of an oversized request is found by a
// streaming scan, so its error still carries it). After a malformed header
// reading resynchronises on the next line that starts a header block, even
// in the middle of a line (a body sent without a usable length), so later
// requests are answered with their own ids.
//
// Request ids are echoed exactly as sent: jsonrpc2 knows only unsigned
// numbers and strings, so each incoming request's id is carried through it
// as an opaque string holding the raw JSON ([wireID]) and restored when the
// response is written.
type frameStream struct {
	r        *bufio.Reader
	c        io.Closer
	maxFrame int
	mu       sync.Mutex // guards w
	w        *bufio.Writer
	// beforeEOF, if set, runs before ReadObject reports end of input.
	beforeEOF func()
	// pending is the start of a header block found inside a junk line.
	pending string
	// resync: an error about the bytes being skipped was already sent.
	resync bool
}

func newFrameStream(r io.Reader, w io.Writer, c io.Closer, maxFrame int) *frameStream {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	return &frameStream{r: bufio.NewReaderSize(r, 64<<10), w: bufio.NewWriter(w), c: c, maxFrame: maxFrame}
}

// idPrefix marks an id rewritten by [wireID]; every incoming request id is
// rewritten, so the mapping is one to one.
const idPrefix = "\x00id:"

// wireID is the jsonrpc2 id standing for the raw JSON id of a request.
func wireID(raw json.RawMessage) jsonrpc2.ID {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		b.Reset()
		b.Write(raw)
	}
	return jsonrpc2.ID{Str: idPrefix + b.String(), IsString: true}
}

// restoreID puts a request's raw id back into an outgoing response.
func restoreID(msg []byte) []byte {
	if bytes.HasPrefix(msg, []byte(`{"jsonrpc":"2.0","method":`)) {
		return msg // a notification (jsonrpc2 sorts its keys): no id
	}
	if out, ok := restoreLeadingID(msg); ok {
		return out
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	if _, isReq := m["method"]; isReq {
		return msg
	}
	var id string
	if json.Unmarshal(m["id"], &id) != nil || !strings.HasPrefix(id, idPrefix) {
		return msg
	}
	m["id"] = json.RawMessage(id[len(idPrefix):])
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// restoreLeadingID is [restoreID] for a response as jsonrpc2 writes it
// (Refuse's answers), its id first ({"id":"\u0000id:…",…): only that
// string is decoded and replaced, the rest copied as it is. ok is false
// for any other message.
func restoreLeadingID(msg []byte) (out []byte, ok bool) {
	const lead = `{"id":`
	if !bytes.HasPrefix(msg, []byte(lead+`"`)) {
		return nil, false
	}
	end := -1 // the id string's closing quote
	for i := len(lead) + 1; i < len(msg) && end < 0; i++ {
		switch msg[i] {
		case '\\':
			i++
		case '"':
			end = i
		}
	}
	if end < 0 {
		return nil, false
	}
	var id string
	if json.Unmarshal(msg[len(lead):end+1], &id) != nil || !strings.HasPrefix(id, idPrefix) {
		return nil, false
	}
	raw := id[len(idPrefix):]
	out = make([]byte, 0, len(lead)+len(raw)+len(msg)-end-1)
	out = append(out, lead...)
	out = append(out, raw...)
	return append(out, msg[end+1:]...), true
}

func (s *frameStream) WriteObject(obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return s.writeFrame(restoreID(b))
}

// WriteResponse answers the request id with result, or with rerr when it
// is not nil, in one frame, the id restored as the client sent it. The
// result is marshalled once: jsonrpc2's own reply marshals it three times
// over (SetResult, Response, its message wrapper), each a full copy of a
// long session/open. A result that cannot be marshalled is answered with
// an internal error.
func (s *frameStream) WriteResponse(id jsonrpc2.ID, result any, rerr *jsonrpc2.Error) error {
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	if raw := strings.TrimPrefix(id.Str, idPrefix); id.IsString && len(raw) < len(id.Str) && json.Valid([]byte(raw)) {
		buf.WriteString(raw)
	} else {
		raw, err := json.Marshal(id)
		if err != nil {
			return err
		}
		buf.Write(raw)
	}
	if rerr == nil {
		raw, err := json.Marshal(result)
		if err == nil {
			buf.WriteString(`,"result":`)
			buf.Write(raw)
		} else {
			rerr = &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: "the result cannot be encoded: " + err.Error()}
		}
	}
	if rerr != nil {
		raw, err := json.Marshal(rerr)
		if err != nil {
			return err
		}
		buf.WriteString(`,"error":`)
		buf.Write(raw)
	}
	buf.WriteByte('}')
	return s.writeFrame(buf.Bytes())
}

// writeFrame writes one message body with its Content-Length header.
func (s *frameStream) writeFrame(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := fmt.Fprintf(s.w, "Content-Length: %d\r\n\r\n", len(b)); err != nil {
		return err
	}
	if _, err := s.w.Write(b); err != nil {
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
	s.replyErrorData(id, code, msg, "")
}

func (s *frameStream) replyErrorData(id json.RawMessage, code int64, msg, dataCode string) {
	if !scalarID(id) {
		id = json.RawMessage("null")
	}
	e := jsonrpc2.Error{Code: code, Message: msg}
	if dataCode != "" {
		e.SetError(map[string]string{"code": dataCode})
	}
	_ = s.WriteObject(wireError{JSONRPC: "2.0", ID: id, Error: e})
}

// scalarID reports whether raw is an id JSON-RPC allows: a string, a
// number or null.
func scalarID(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || !json.Valid(t) {
		return false
	}
	switch t[0] {
	case '{', '[', 't', 'f':
		return false
	}
	return true
}

// ReadObject reads the next well-formed JSON-RPC message into v.
func (s *frameStream) ReadObject(v any) error {
	for {
		body, err := s.readFrame()
		var fe *frameError
		if errors.As(err, &fe) {
			s.replyErrorData(fe.id, fe.code, fe.msg, fe.dataCode)
			s.resync = true
			continue
		}
		if err != nil {
			if s.beforeEOF != nil {
				s.beforeEOF()
			}
			return err
		}
		s.resync = false
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
		hasID := len(probe.ID) > 0 && string(bytes.TrimSpace(probe.ID)) != "null"
		if isReq && hasID {
			if !scalarID(probe.ID) {
				s.replyError(nil, jsonrpc2.CodeInvalidRequest, "invalid request: an id must be a string or a number")
				continue
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(body, &m); err != nil {
				s.replyError(probe.ID, jsonrpc2.CodeInvalidRequest, "invalid request: "+err.Error())
				continue
			}
			id, _ := json.Marshal(wireID(probe.ID))
			m["id"] = id
			if body, err = json.Marshal(m); err != nil {
				s.replyError(probe.ID, jsonrpc2.CodeInvalidRequest, "invalid request: "+err.Error())
				continue
			}
		}
		if err := json.Unmarshal(body, v); err != nil {
			s.replyError(probe.ID, jsonrpc2.CodeInvalidRequest, "invalid request: "+err.Error())
			continue
		}
		return nil
	}
}

// frameError is a frame that could not be read as a message; it is answered
// (with the request's id when it could be found) and reading goes on.
type frameError struct {
	id       json.RawMessage
	code     int64
	msg      string
	dataCode string
}

func (e *frameError) Error() string { return e.msg }

func badHeader(format string, args ...any) *frameError {
	return &frameError{code: jsonrpc2.CodeParseError, msg: "parse error: bad frame header: " + fmt.Sprintf(format, args...)}
}

// readLine returns the next line without its line ending. A line longer
// than [MaxHeaderLine] is read through without being kept: long is set and
// line holds only its last bytes (where a header block may start).
func (s *frameStream) readLine() (line string, long bool, err error) {
	if s.pending != "" {
		line, s.pending = s.pending, ""
		return line, false, nil
	}
	var buf []byte
	for {
		chunk, err := s.r.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxHeaderLine {
			long = true
			buf = append(buf, chunk...)
			if len(buf) > 256 {
				buf = append(buf[:0], buf[len(buf)-256:]...)
			}
		} else {
			buf = append(buf, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		line = strings.TrimRight(string(buf), "\r\n")
		if err != nil {
			if err == io.EOF && line != "" {
				return line, long, io.ErrUnexpectedEOF
			}
			return line, long, err
		}
		return line, long, nil
	}
}

// headerStart reports whether line begins a header block ("Name: value"
// with a token name), and otherwise where in it one begins (-1 if nowhere).
func headerStart(line string) (ok bool, at int) {
	if isHeaderLine(line) {
		return true, 0
	}
	low := strings.ToLower(line)
	at = -1
	for _, name := range []string{"content-length:", "content-type:"} {
		if i := strings.Index(low, name); i > 0 && (at < 0 || i < at) {
			at = i
		}
	}
	return false, at
}

func isHeaderLine(line string) bool {
	name, _, ok := strings.Cut(line, ":")
	if !ok || name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// readFrame returns the body of the next frame, or a *frameError for a
// frame that cannot be a message (after reading past it).
func (s *frameStream) readFrame() ([]byte, error) {
	// Find the start of a header block, skipping junk.
	var first string
	for {
		line, long, err := s.readLine()
		if err != nil {
			if err == io.ErrUnexpectedEOF {
				err = io.EOF // a junk tail at end of input
			}
			return nil, err
		}
		if line == "" && !long {
			continue // blank lines between frames
		}
		ok, at := headerStart(line)
		if ok && !long {
			first = line
			break
		}
		if at > 0 {
			s.pending = line[at:]
		}
		if !s.resync {
			s.resync = true
			return nil, badHeader("%s", describeJunk(line, long))
		}
	}
	length := -1
	bad := ""
	for line := first; ; {
		if !isHeaderLine(line) {
			if bad == "" {
				bad = fmt.Sprintf("malformed header line %q", clipStr(line, 60))
			}
		} else if name, val, _ := strings.Cut(line, ":"); strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(val))
			switch {
			case err != nil || n < 0:
				if bad == "" {
					bad = fmt.Sprintf("bad Content-Length %q", clipStr(val, 30))
				}
			case length >= 0 && n != length:
				if bad == "" {
					bad = "two different Content-Length headers"
				}
			default:
				length = n
			}
		}
		next, long, err := s.readLine()
		if err != nil {
			return nil, err
		}
		if long {
			if bad == "" {
				bad = fmt.Sprintf("a header line longer than %d bytes", MaxHeaderLine)
			}
			continue
		}
		if next == "" {
			break
		}
		line = next
	}
	if length < 0 {
		if bad == "" {
			bad = "missing Content-Length"
		}
		return nil, badHeader("%s", bad)
	}
	if length > s.maxFrame {
		sc := &idScanner{}
		if _, err := io.CopyN(sc, s.r, int64(length)); err != nil {
			return nil, err
		}
		return nil, &frameError{id: sc.id(), code: jsonrpc2.CodeInvalidRequest, dataCode: CodeFrameTooLarge,
			msg: fmt.Sprintf("frame of %d bytes exceeds the limit of %d bytes (serve --max-frame)", length, s.maxFrame)}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(s.r, body); err != nil {
		return nil, err
	}
	if bad != "" {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(body, &probe)
		e := badHeader("%s", bad)
		e.id = probe.ID
		return nil, e
	}
	return body, nil
}

func describeJunk(line string, long bool) string {
	if long {
		return fmt.Sprintf("a line longer than %d bytes outside any frame", MaxHeaderLine)
	}
	return fmt.Sprintf("unexpected %q outside any frame", clipStr(line, 60))
}

func clipStr(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// idScanner finds the top-level "id" member of a JSON object streamed
// through it, keeping a few bytes only: the answer to an oversized request
// still carries its id.
type idScanner struct {
	depth      int
	inStr, esc bool
	keyStr     bool // the string being read is a top-level key
	wantKey    bool
	key        []byte
	keyLong    bool
	lastKey    string
	capture    bool
	val        []byte
	done       bool
}

const maxIDBytes = 256

func (sc *idScanner) Write(p []byte) (int, error) {
	for _, b := range p {
		if sc.done {
			break
		}
		if sc.inStr {
			if sc.capture {
				sc.val = append(sc.val, b)
			}
			switch {
			case sc.esc:
				sc.esc = false
			case b == '\\':
				sc.esc = true
			case b == '"':
				sc.inStr = false
				if sc.keyStr {
					sc.keyStr = false
					sc.lastKey = ""
					if !sc.keyLong {
						sc.lastKey = string(sc.key)
					}
				}
				if sc.capture {
					sc.done = true
				}
			}
			if sc.keyStr && !sc.esc && b != '"' && b != '\\' {
				if len(sc.key) < 8 {
					sc.key = append(sc.key, b)
				} else {
					sc.keyLong = true
				}
			}
			if sc.capture && len(sc.val) > maxIDBytes {
				sc.capture, sc.val, sc.done = false, nil, true
			}
			continue
		}
		if sc.capture {
			switch {
			case b == ' ' || b == '\t' || b == '\n' || b == '\r':
				if len(sc.val) > 0 {
					sc.done = true
				}
			case b == ',' || b == '}':
				sc.done = true
			case b == '"' && len(sc.val) == 0:
				sc.inStr = true
				sc.val = append(sc.val, b)
			default:
				sc.val = append(sc.val, b)
				if len(sc.val) > maxIDBytes {
					sc.capture, sc.val, sc.done = false, nil, true
				}
			}
			continue
		}
		switch b {
		case '"':
			sc.inStr = true
			if sc.depth == 1 && sc.wantKey {
				sc.keyStr, sc.key, sc.keyLong = true, sc.key[:0], false
			}
		case '{', '[':
			sc.depth++
			if sc.depth == 1 {
				sc.wantKey = b == '{'
			}
		case '}', ']':
			sc.depth--
		case ':':
			if sc.depth == 1 {
				sc.wantKey = false
				if sc.lastKey == "id" {
					sc.capture, sc.val = true, nil
				}
			}
		case ',':
			if sc.depth == 1 {
				sc.wantKey = true
			}
		}
	}
	return len(p), nil
}

// id returns the id found, or nil.
func (sc *idScanner) id() json.RawMessage {
	if len(sc.val) == 0 || !scalarID(sc.val) {
		return nil
	}
	return json.RawMessage(sc.val)
}
