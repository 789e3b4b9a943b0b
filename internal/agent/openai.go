package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// DefaultOpenAIBaseURL is the base URL used when [OpenAIConfig.BaseURL] is
// empty.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

// maxErrorBody bounds how much of a non-2xx response body is read for its
// error message, so a misbehaving server cannot make us buffer megabytes.
const maxErrorBody = 64 << 10

// maxSSELine bounds one line of the event stream. A single delta is small;
// the bound only protects against a server that never sends a newline.
const maxSSELine = 8 << 20

// OpenAIConfig configures an [OpenAI] engine.
type OpenAIConfig struct {
	// BaseURL of the Chat Completions API, without the trailing
	// "/chat/completions". Empty means [DefaultOpenAIBaseURL].
	BaseURL string
	// APIKey is sent as a bearer token. Empty sends no Authorization header
	// (local servers such as Ollama or llama.cpp need none).
	APIKey string
	// Model used when [Request.Model] is empty. Required.
	Model string
	// HTTPClient performs the requests. Nil means a client without a
	// timeout: a streamed turn may legitimately run for minutes, and the
	// request's context is what bounds it.
	HTTPClient *http.Client
}

// OpenAIConfigFromEnv builds a config from the environment, looked up through
// getenv (os.Getenv in production; a map in tests). The planbridge-specific
// variables win over the conventional ones:
//
//	base URL: PLANBRIDGE_OPENAI_BASE_URL, then OPENAI_BASE_URL
//	API key:  PLANBRIDGE_OPENAI_API_KEY, then OPENAI_API_KEY
//	model:    PLANBRIDGE_OPENAI_MODEL
//
// Unset variables leave the field empty; [NewOpenAI] applies defaults and
// validates.
func OpenAIConfigFromEnv(getenv func(string) string) OpenAIConfig {
	first := func(names ...string) string { return firstEnv(getenv, names...) }
	return OpenAIConfig{
		BaseURL: first("PLANBRIDGE_OPENAI_BASE_URL", "OPENAI_BASE_URL"),
		APIKey:  first("PLANBRIDGE_OPENAI_API_KEY", "OPENAI_API_KEY"),
		Model:   first("PLANBRIDGE_OPENAI_MODEL"),
	}
}

// OpenAI is an [Engine] for any OpenAI-compatible Chat Completions endpoint
// with streaming and tool calls (OpenAI, OpenRouter, Ollama, llama.cpp
// server, vLLM, LM Studio). Safe for concurrent use: it holds only immutable
// configuration.
type OpenAI struct {
	endpoint string // {BaseURL}/chat/completions
	apiKey   string
	model    string
	client   *http.Client
}

// NewOpenAI validates cfg and returns an engine. It fails if cfg.Model is
// empty or the base URL is not an absolute http(s) URL; it does not contact
// the server.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai: no model configured (set PLANBRIDGE_OPENAI_MODEL)")
	}
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("openai: base URL %q: %w", base, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q is not an absolute http(s) URL", base)
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	return &OpenAI{
		endpoint: strings.TrimRight(base, "/") + "/chat/completions",
		apiKey:   cfg.APIKey,
		model:    strings.TrimSpace(cfg.Model),
		client:   client,
	}, nil
}

// Name reports "openai".
func (o *OpenAI) Name() string { return "openai" }

// APIError is a non-2xx answer from the provider, or an error object the
// provider sent inside the stream. It wraps [ErrTransient] when a retry may
// succeed (429 and 5xx).
type APIError struct {
	StatusCode int    // HTTP status, or the error's numeric code for in-stream errors (0 if none)
	Message    string // the provider's message, or the body text if it had none
}

func (e *APIError) Error() string {
	if e.StatusCode == 0 {
		return "openai: " + e.Message
	}
	return fmt.Sprintf("openai: HTTP %d: %s", e.StatusCode, e.Message)
}

// Unwrap returns [ErrTransient] for 429 and 5xx, nil otherwise.
func (e *APIError) Unwrap() error {
	if e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500 {
		return ErrTransient
	}
	return nil
}

// Stream sends req as one streamed Chat Completions request. onText (which
// may be nil) is called for every content delta, in order, on the calling
// goroutine. Tool calls streamed in pieces are reassembled by index and
// returned in index order; a call with empty arguments gets "{}", and
// arguments that are not valid JSON are returned as a JSON string so the
// result always marshals (the tool's decoder then reports the mistake to
// the model).
//
// Errors: a non-2xx response is an [*APIError] carrying the provider's
// message; 429, 5xx, a connection lost mid-stream and a stream that ends
// before [DONE] or a finish_reason wrap [ErrTransient]. A cancelled ctx
// aborts the request promptly and the error wraps ctx.Err().
func (o *OpenAI) Stream(ctx context.Context, req Request, onText func(delta string)) (Response, error) {
	body, err := json.Marshal(o.buildRequest(req))
	if err != nil {
		return Response{}, fmt.Errorf("openai: encoding request: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		return Response{}, fmt.Errorf("openai: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if o.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+o.apiKey)
	}

	resp, err := o.client.Do(hreq)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Response{}, fmt.Errorf("openai: request cancelled: %w", ctxErr)
		}
		// The server was not reached or dropped the connection before
		// answering; worth one retry.
		return Response{}, fmt.Errorf("openai: %w: %w", ErrTransient, err)
	}
	defer resp.Body.Close()
	// The transport already aborts body reads when ctx is done; closing the
	// body as well keeps that promise for custom RoundTrippers too.
	stop := context.AfterFunc(ctx, func() { resp.Body.Close() })
	defer stop()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Response{}, fmt.Errorf("openai: request cancelled: %w", ctxErr)
		}
		return Response{}, &APIError{StatusCode: resp.StatusCode, Message: errorMessage(raw, resp.Status)}
	}

	out, err := decodeStream(resp.Body, onText)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Response{}, fmt.Errorf("openai: request cancelled: %w", ctxErr)
		}
		return Response{}, err
	}
	return out, nil
}

// Wire types of the Chat Completions API (only the fields we use).

type chatRequest struct {
	Model           string         `json:"model"`
	Messages        []chatMessage  `json:"messages"`
	Tools           []chatTool     `json:"tools,omitempty"`
	Stream          bool           `json:"stream"`
	StreamOptions   *streamOptions `json:"stream_options,omitempty"`
	ReasoningEffort string         `json:"reasoning_effort,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is a pointer so that an assistant message carrying only tool
	// calls sends null, which every compatible server accepts.
	Content    *string        `json:"content"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON text, as the API wants it
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatToolSpec `json:"function"`
}

type chatToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

func (o *OpenAI) buildRequest(req Request) chatRequest {
	model := req.Model
	if model == "" {
		model = o.model
	}
	cr := chatRequest{
		Model:           model,
		Messages:        make([]chatMessage, 0, len(req.Messages)),
		Stream:          true,
		StreamOptions:   &streamOptions{IncludeUsage: true},
		ReasoningEffort: req.Effort,
	}
	for _, m := range req.Messages {
		content := m.Content
		cm := chatMessage{Role: m.Role, Content: &content, ToolCallID: m.ToolCallID}
		// Tool messages identify their call by tool_call_id; some servers
		// reject a name there.
		if m.Role != RoleTool {
			cm.Name = m.Name
		}
		for _, tc := range m.ToolCalls {
			args := string(bytes.TrimSpace(tc.Arguments))
			if args == "" || args == "null" {
				args = "{}"
			}
			cm.ToolCalls = append(cm.ToolCalls, chatToolCall{
				ID:       tc.ID,
				Type:     "function",
				Function: chatFunction{Name: tc.Name, Arguments: args},
			})
		}
		if m.Role == RoleAssistant && len(cm.ToolCalls) > 0 && m.Content == "" {
			cm.Content = nil
		}
		cr.Messages = append(cr.Messages, cm)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		cr.Tools = append(cr.Tools, chatTool{
			Type:     "function",
			Function: chatToolSpec{Name: t.Name, Description: t.Description, Parameters: params},
		})
	}
	return cr
}

// chatChunk is one streamed event.
type chatChunk struct {
	Choices []struct {
		Delta struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// partialCall accumulates one tool call streamed in pieces.
type partialCall struct {
	index int
	id    string
	name  string
	args  strings.Builder
}

// decodeStream reads a Chat Completions event stream to its end. It never
// panics on malformed input; see [OpenAI.Stream] for the error contract.
func decodeStream(r io.Reader, onText func(string)) (Response, error) {
	var (
		out      Response
		text     strings.Builder
		calls    = map[int]*partialCall{}
		last     *partialCall
		finished bool // a finish_reason was seen
		done     bool // data: [DONE] was seen
	)

	handle := func(data string) error {
		if strings.TrimSpace(data) == "[DONE]" {
			done = true
			return nil
		}
		var c chatChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return fmt.Errorf("openai: malformed stream event %q: %w", truncate(data, 200), err)
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			return streamError(c.Error)
		}
		if c.Usage != nil {
			out.Usage = Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens}
		}
		for _, ch := range c.Choices {
			if d := ch.Delta.Content; d != "" {
				text.WriteString(d)
				if onText != nil {
					onText(d)
				}
			}
			for _, tc := range ch.Delta.ToolCalls {
				var p *partialCall
				switch {
				case tc.Index != nil:
					p = calls[*tc.Index]
					if p == nil {
						p = &partialCall{index: *tc.Index}
						calls[*tc.Index] = p
					}
				case last == nil || (tc.ID != "" && tc.ID != last.id):
					// Some servers omit index; a new id starts a new call
					// and a piece without one continues the last call.
					p = &partialCall{index: len(calls)}
					for calls[p.index] != nil {
						p.index++
					}
					calls[p.index] = p
				default:
					p = last
				}
				last = p
				if tc.ID != "" && p.id == "" {
					p.id = tc.ID
				}
				if tc.Function.Name != "" && p.name == "" {
					p.name = tc.Function.Name
				}
				p.args.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				finished = true
			}
		}
		return nil
	}

	br := bufio.NewReaderSize(r, 64<<10)
	var data []string // data lines of the event being read
	for !done {
		line, err := readLine(br)
		if err != nil && line == "" {
			if err == io.EOF {
				break
			}
			if errors.Is(err, errLineTooLong) {
				return Response{}, err
			}
			return Response{}, fmt.Errorf("openai: reading stream: %w: %w", ErrTransient, err)
		}
		switch {
		case line == "":
			if len(data) > 0 {
				if herr := handle(strings.Join(data, "\n")); herr != nil {
					return Response{}, herr
				}
				data = data[:0]
			}
		case line[0] == ':':
			// Comment, used by servers as a keepalive.
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			if field == "data" {
				data = append(data, value)
			}
			// event:, id:, retry: carry nothing we need.
		}
		if err != nil { // last line without a newline, then EOF
			if err != io.EOF {
				return Response{}, fmt.Errorf("openai: reading stream: %w: %w", ErrTransient, err)
			}
			break
		}
	}
	// An event cut off by EOF is dispatched only if it is the terminator:
	// a half-received JSON chunk is indistinguishable from a dropped
	// connection.
	if !done && len(data) > 0 && strings.TrimSpace(strings.Join(data, "\n")) == "[DONE]" {
		done = true
	}
	if !done && !finished {
		return Response{}, fmt.Errorf("openai: stream ended before completion: %w", ErrTransient)
	}

	out.Text = text.String()
	if len(calls) > 0 {
		ordered := make([]*partialCall, 0, len(calls))
		for _, p := range calls {
			ordered = append(ordered, p)
		}
		sort.Slice(ordered, func(i, j int) bool { return ordered[i].index < ordered[j].index })
		for i, p := range ordered {
			id := p.id
			if id == "" {
				// Some local servers omit ids; the tool result still needs
				// one to refer to.
				id = "call_" + strconv.Itoa(i)
			}
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: id, Name: p.name, Arguments: toolArguments(p.args.String())})
		}
	}
	return out, nil
}

// errLineTooLong reports an event-stream line over maxSSELine: a broken
// server, not a transient failure.
var errLineTooLong = errors.New("openai: event stream line too long")

// readLine returns the next line without its "\n" or "\r\n". At the end of
// the stream it returns io.EOF, together with the final line if that line
// had no newline. Lines longer than maxSSELine return errLineTooLong.
func readLine(br *bufio.Reader) (string, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxSSELine {
			return "", errLineTooLong
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return strings.TrimSuffix(strings.TrimSuffix(string(buf), "\n"), "\r"), err
	}
}

// toolArguments turns streamed argument text into the RawMessage of a
// [ToolCall]: "{}" when empty, the text itself when it is valid JSON, and
// otherwise the text as a JSON string, so the value always marshals.
func toolArguments(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	q, _ := json.Marshal(s)
	return json.RawMessage(q)
}

// errorMessage extracts the provider's message from an error body, which is
// usually {"error":{"message":…}} but is {"error":"…"} or {"message":…} on
// some compatible servers. It falls back to the (bounded) body text, then
// to the HTTP status line.
func errorMessage(body []byte, status string) string {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &env) == nil {
		if msg, _ := errorObject(env.Error); msg != "" {
			return msg
		}
		if env.Message != "" {
			return env.Message
		}
	}
	if t := strings.TrimSpace(string(body)); t != "" {
		return truncate(t, 500)
	}
	return status
}

// errorObject decodes an "error" value: an object with message and code, or
// a bare string. code is 0 unless it is numeric.
func errorObject(raw json.RawMessage) (msg string, code int) {
	if len(raw) == 0 {
		return "", 0
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, 0
	}
	var obj struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return "", 0
	}
	if n, err := strconv.Atoi(strings.Trim(string(obj.Code), `"`)); err == nil {
		code = n
	}
	return obj.Message, code
}

// streamError converts an error object sent inside a 200 stream (OpenRouter
// and vLLM do this when the upstream fails mid-generation).
func streamError(raw json.RawMessage) error {
	msg, code := errorObject(raw)
	if msg == "" {
		msg = truncate(string(raw), 500)
	}
	if code < 100 || code > 599 {
		code = 0
	}
	return &APIError{StatusCode: code, Message: msg}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
