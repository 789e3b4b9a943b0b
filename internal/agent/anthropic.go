// The anthropic engine is a small client of the Messages API, not the
// official Go SDK (github.com/anthropics/anthropic-sdk-go). The part of the
// API planbridge uses is one streamed POST and seven event types; the SDK
// would bring a generated client of the whole API, its own dependencies
// (gjson, sjson) and its own retry loop and error types into a binary whose
// every request should be explained by this file. A small client keeps the
// engine honest to the [Engine] contract the openai engine already keeps:
// the same event-stream reader, the same transient/fatal split
// ([ErrTransient]), cancellation through the request context alone, and a
// retry policy (429/529 only, honouring retry-after, never after output has
// streamed) that tests can observe without waiting on the clock.

package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultAnthropicBaseURL is the base URL used when [AnthropicConfig.BaseURL]
// is empty.
const DefaultAnthropicBaseURL = "https://api.anthropic.com"

// AnthropicVersion is the anthropic-version header every request carries.
const AnthropicVersion = "2023-06-01"

// DefaultAnthropicMaxTokens is the output a request allows beyond its
// thinking budget when [AnthropicConfig.MaxTokens] is 0. It fits every
// current model's output limit.
const DefaultAnthropicMaxTokens = 8192

// Retry policy for rate limits (429) and overload (529).
const (
	anthropicMaxRetries  = 4
	anthropicBackoffBase = 500 * time.Millisecond
	anthropicBackoffMax  = 8 * time.Second
	// A retry-after longer than this is not waited for: the error goes
	// back to the caller (still transient) instead of stalling the turn.
	anthropicMaxRetryAfter = 60 * time.Second
)

// Thinking budgets (tokens) per effort. The API's minimum is 1024.
var thinkingBudgets = map[string]int{"low": 2048, "medium": 8192, "high": 16384}

// AnthropicConfig configures an [Anthropic] engine.
type AnthropicConfig struct {
	// BaseURL of the API, without "/v1/messages" (as ANTHROPIC_BASE_URL is
	// given to Anthropic's own tools). A base ending in "/v1" is accepted
	// too. Empty means [DefaultAnthropicBaseURL].
	BaseURL string
	// APIKey is sent as x-api-key. Empty sends none (a local proxy may need
	// none; the API itself answers 401, which is reported as is).
	APIKey string
	// Model used when [Request.Model] is empty. Required.
	Model string
	// MaxTokens is the output allowed beyond any thinking budget; 0 means
	// [DefaultAnthropicMaxTokens].
	MaxTokens int
	// HTTPClient performs the requests (a copy of it that follows no
	// redirects). Nil means a client without a timeout: the request's
	// context is what bounds a turn.
	HTTPClient *http.Client
}

// AnthropicConfigFromEnv builds a config from the environment, looked up
// through getenv. The planbridge-specific variables win:
//
//	base URL:   PLANBRIDGE_ANTHROPIC_BASE_URL, then ANTHROPIC_BASE_URL
//	API key:    PLANBRIDGE_ANTHROPIC_API_KEY, then ANTHROPIC_API_KEY
//	model:      PLANBRIDGE_ANTHROPIC_MODEL, then ANTHROPIC_MODEL
//	max tokens: PLANBRIDGE_ANTHROPIC_MAX_TOKENS (ignored unless a positive integer)
func AnthropicConfigFromEnv(getenv func(string) string) AnthropicConfig {
	first := func(names ...string) string { return firstEnv(getenv, names...) }
	maxTokens, _ := strconv.Atoi(first("PLANBRIDGE_ANTHROPIC_MAX_TOKENS"))
	return AnthropicConfig{
		BaseURL:   first("PLANBRIDGE_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL"),
		APIKey:    first("PLANBRIDGE_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"),
		Model:     first("PLANBRIDGE_ANTHROPIC_MODEL", "ANTHROPIC_MODEL"),
		MaxTokens: max(maxTokens, 0),
	}
}

// Anthropic is an [Engine] for Anthropic's Messages API with streaming,
// tool use, extended thinking and prompt caching. Safe for concurrent use:
// it holds only immutable configuration.
type Anthropic struct {
	endpoint  string // {BaseURL}/v1/messages
	apiKey    string
	model     string
	maxTokens int
	client    *http.Client
	// sleep waits before a retry; tests replace it to observe the waits.
	sleep func(ctx context.Context, d time.Duration) error
}

// NewAnthropic validates cfg and returns an engine. It fails if cfg.Model is
// empty or the base URL is not an absolute http(s) URL; it does not contact
// the server.
func NewAnthropic(cfg AnthropicConfig) (*Anthropic, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("anthropic: no model configured (set PLANBRIDGE_ANTHROPIC_MODEL)")
	}
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		base = DefaultAnthropicBaseURL
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("anthropic: base URL %q: %w", base, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: base URL %q is not an absolute http(s) URL", base)
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: max tokens %d is negative", cfg.MaxTokens)
	}
	base = strings.TrimRight(base, "/")
	endpoint := base + "/v1/messages"
	if strings.HasSuffix(base, "/v1") {
		endpoint = base + "/messages"
	}
	// The key travels in x-api-key, which Go's client would forward on a
	// redirect to any host; the Messages API never redirects, so no
	// redirect is followed (a 3xx is reported as the error it is).
	client := &http.Client{}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		client = &c
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	maxTokens := cfg.MaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultAnthropicMaxTokens
	}
	return &Anthropic{
		endpoint:  endpoint,
		apiKey:    cfg.APIKey,
		model:     strings.TrimSpace(cfg.Model),
		maxTokens: maxTokens,
		client:    client,
		sleep:     sleepCtx,
	}, nil
}

// Name reports "anthropic".
func (a *Anthropic) Name() string { return "anthropic" }

// AnthropicError is a non-2xx answer from the Messages API, or an error
// event inside the stream. It wraps [ErrTransient] for rate limits, overload
// and server errors (429, 5xx, 529).
type AnthropicError struct {
	StatusCode int    // HTTP status, or the status the error type stands for (in-stream errors)
	Type       string // the API's error type, e.g. "overloaded_error"; "" if the body had none
	Message    string // the API's message (never containing the API key)
	RequestID  string // request-id, when the API sent one
	// RetryAfter is the wait the server asked for (retry-after-ms or
	// retry-after); 0 if it asked for none.
	RetryAfter time.Duration
	// Attempts is how many requests were made before giving up (1 when
	// the error was not retried).
	Attempts int

	noRetry bool // the server said x-should-retry: false
}

func (e *AnthropicError) Error() string {
	var b strings.Builder
	b.WriteString("anthropic: ")
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, "HTTP %d: ", e.StatusCode)
	}
	if e.Type != "" {
		b.WriteString(e.Type + ": ")
	}
	b.WriteString(e.Message)
	if e.RequestID != "" {
		b.WriteString(" (request " + e.RequestID + ")")
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	return b.String()
}

// Unwrap returns [ErrTransient] for 429 and 5xx, nil otherwise.
func (e *AnthropicError) Unwrap() error {
	if e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500 {
		return ErrTransient
	}
	return nil
}

// retryable reports whether the engine itself retries e: rate limits and
// overload only; other server errors go back to the caller as transient.
func (e *AnthropicError) retryable() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode == 529
}

// errorTypeStatus maps the API's error types to the HTTP status each stands
// for, so an in-stream error is classified as its HTTP twin would be.
var errorTypeStatus = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"billing_error":         402,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"timeout_error":         504,
	"overloaded_error":      529,
}

// Stream sends req as one streamed Messages request. onText (which may be
// nil) is called for every text delta, in order, on the calling goroutine;
// thinking is not text: it is returned in [Response.Thinking], with its
// signature, so the next request of the turn can send it back. Tool input
// streamed in pieces is reassembled per block and returned in block order,
// with the same rules for empty and invalid input as the openai engine.
//
// Effort "low", "medium" or "high" enables extended thinking with a budget
// of 2048, 8192 or 16384 tokens; a decimal number is taken as the budget
// itself (at least 1024); "", "none" and "off" leave thinking off; anything
// else fails before a request is sent.
//
// Rate limits (429) and overload (529, or an overloaded/rate-limit error
// event before any output streamed) are retried up to 4 times, waiting as
// retry-after-ms or retry-after asks (up to 60s; a longer wait is not taken
// and the error is returned) or with exponential backoff, unless the server
// says x-should-retry: false.
//
// Errors: a non-2xx response or an error event is an [*AnthropicError];
// 429, 5xx, a connection lost mid-stream and a stream that ends before
// message_stop wrap [ErrTransient]. A cancelled ctx aborts the request (or
// the wait before a retry) promptly and the error wraps ctx.Err(). No error
// carries the API key.
func (a *Anthropic) Stream(ctx context.Context, req Request, onText func(delta string)) (Response, error) {
	wire, err := a.buildRequest(req)
	if err != nil {
		return Response{}, err
	}
	body, err := json.Marshal(wire)
	if err != nil {
		return Response{}, fmt.Errorf("anthropic: encoding request: %w", err)
	}
	for attempt := 1; ; attempt++ {
		emitted := false
		resp, err := a.once(ctx, body, func(d string) {
			emitted = true
			if onText != nil {
				onText(d)
			}
		})
		var ae *AnthropicError
		if err == nil || !errors.As(err, &ae) {
			return resp, err
		}
		ae.Attempts = attempt
		if !ae.retryable() || ae.noRetry || emitted || attempt > anthropicMaxRetries || ae.RetryAfter > anthropicMaxRetryAfter {
			return Response{}, err
		}
		wait := ae.RetryAfter
		if wait == 0 {
			wait = backoff(attempt)
		}
		if err := a.sleep(ctx, wait); err != nil {
			return Response{}, fmt.Errorf("anthropic: cancelled while waiting to retry (%v): %w", ae, err)
		}
	}
}

// once makes one request.
func (a *Anthropic) once(ctx context.Context, body []byte, onText func(string)) (Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, a.endpoint, bytes.NewReader(body))
	if err != nil {
		return Response{}, fmt.Errorf("anthropic: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	hreq.Header.Set("anthropic-version", AnthropicVersion)
	if a.apiKey != "" {
		hreq.Header.Set("x-api-key", a.apiKey)
	}
	resp, err := a.client.Do(hreq)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Response{}, fmt.Errorf("anthropic: request cancelled: %w", ctxErr)
		}
		// Not reached, or dropped before answering: worth a retry.
		return Response{}, a.redactErr(fmt.Errorf("anthropic: %w: %w", ErrTransient, err))
	}
	defer resp.Body.Close()
	stop := context.AfterFunc(ctx, func() { resp.Body.Close() })
	defer stop()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Response{}, fmt.Errorf("anthropic: request cancelled: %w", ctxErr)
		}
		ae := a.httpError(resp, raw)
		return Response{}, ae
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
		return Response{}, fmt.Errorf("anthropic: expected an event stream, got Content-Type %q: %s",
			resp.Header.Get("Content-Type"), a.redact(truncate(strings.TrimSpace(string(raw)), 200)))
	}
	out, err := decodeAnthropicStream(&capReader{r: resp.Body, left: maxAnthropicStream}, onText)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Response{}, fmt.Errorf("anthropic: request cancelled: %w", ctxErr)
		}
		var ae *AnthropicError
		if errors.As(err, &ae) {
			ae.Message = a.redact(ae.Message)
			return Response{}, ae
		}
		return Response{}, a.redactErr(err)
	}
	return out, nil
}

// maxAnthropicStream bounds one streamed response. The longest legitimate
// answer (tens of thousands of output tokens, each delta wrapped in its own
// event) is a few MiB; the bound only stops a server that never ends.
const maxAnthropicStream = 64 << 20

// errStreamTooLarge reports a response over maxAnthropicStream: a broken
// server, not worth a retry.
var errStreamTooLarge = fmt.Errorf("anthropic: response stream over %d MiB", maxAnthropicStream>>20)

// capReader fails with errStreamTooLarge once more than left bytes are read.
type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errStreamTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// redactedErr is an error whose text went through [Anthropic.redact]. It
// unwraps to [ErrTransient] only, so the unredacted original cannot be
// reached through it.
type redactedErr struct {
	msg       string
	transient bool
}

func (r *redactedErr) Error() string { return r.msg }
func (r *redactedErr) Unwrap() error {
	if r.transient {
		return ErrTransient
	}
	return nil
}

func (a *Anthropic) redactErr(err error) error {
	return &redactedErr{msg: a.redact(err.Error()), transient: errors.Is(err, ErrTransient)}
}

// redact removes the API key from text the server (or a proxy) sent back.
func (a *Anthropic) redact(s string) string {
	if a.apiKey == "" {
		return s
	}
	return strings.ReplaceAll(s, a.apiKey, "[redacted]")
}

// httpError builds the error of a non-2xx response.
func (a *Anthropic) httpError(resp *http.Response, raw []byte) *AnthropicError {
	ae := &AnthropicError{StatusCode: resp.StatusCode, RequestID: resp.Header.Get("request-id")}
	var env struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Error.Message != "" {
		ae.Type, ae.Message = env.Error.Type, env.Error.Message
		if ae.RequestID == "" {
			ae.RequestID = env.RequestID
		}
	} else if t := strings.TrimSpace(string(raw)); t != "" {
		ae.Message = truncate(t, 500)
	} else {
		ae.Message = resp.Status
	}
	ae.Message = a.redact(ae.Message)
	ae.RequestID = truncate(ae.RequestID, 100)
	ae.RetryAfter = retryAfter(resp.Header, time.Now())
	ae.noRetry = strings.EqualFold(strings.TrimSpace(resp.Header.Get("x-should-retry")), "false")
	return ae
}

// retryAfter reads the wait a response asks for: retry-after-ms, then
// retry-after (seconds or an HTTP date). It returns 0 when the server asks
// nothing (or nonsense); an explicit zero comes back as 1ns, so "retry now"
// is not mistaken for "no advice" and replaced by backoff.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return max(time.Duration(ms*float64(time.Millisecond)), time.Nanosecond)
		}
	}
	if v := strings.TrimSpace(h.Get("retry-after")); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e9 {
			return max(time.Duration(s*float64(time.Second)), time.Nanosecond)
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), time.Nanosecond)
		}
	}
	return 0
}

// backoff is the wait before retry number attempt (1-based) when the server
// asked for none: 0.5s doubling to 8s, minus up to a quarter of jitter.
func backoff(attempt int) time.Duration {
	d := anthropicBackoffBase << min(attempt-1, 10)
	d = min(d, anthropicBackoffMax)
	return d - time.Duration(rand.Int64N(int64(d/4)+1))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
