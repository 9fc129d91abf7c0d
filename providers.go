package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Provider streams one model reply. Stream calls on for each piece as it
// arrives and returns the assembled reply. On failure it still returns what
// arrived before the failure, so an abort keeps the partial text.
type Provider interface {
	Name() string
	Stream(ctx context.Context, req Request, on func(StreamEvent)) (Reply, error)
}

// Request is one call to the model.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int    // 0: the model's default
	Reasoning string // "", low, medium, high
}

// checkConversation refuses a request no API takes, before it is sent: no
// messages, a first message that is not the user's, a user message with
// nothing in it. The agent never builds one; a session written by hand or
// by an older zot may hold one.
func checkConversation(provider string, msgs []Message) error {
	if len(msgs) == 0 {
		return fmt.Errorf("%s: not sent: the request has no messages", provider)
	}
	if msgs[0].Role != RoleUser {
		return fmt.Errorf("%s: not sent: the conversation starts with the %s's message, not a prompt (/clear starts afresh)", provider, msgs[0].Role)
	}
	for i, m := range msgs {
		if m.Role == RoleUser && m.tallied().blank {
			return fmt.Errorf("%s: not sent: message %d of the conversation is an empty prompt (/fork before it, or /clear)", provider, i+1)
		}
	}
	return nil
}

// StreamEvent is one streamed piece: Type is text, thinking, tool_start (ID,
// Name), tool_args (ID, Delta) or tool_end (ID).
type StreamEvent struct {
	Type  string
	ID    string
	Name  string
	Delta string
}

// Reply is an assembled model reply. Usage carries no cost: prices are the
// agent's business.
type Reply struct {
	Content []Block
	Stop    string
	Usage   Usage
	// Truncated, when set, says that the server read markedly less of the
	// prompt than was sent: it cut the conversation without an error.
	Truncated string
	// Notice is something the user should hear once about how zot speaks
	// to this server (a fallback it chose).
	Notice string
}

// ErrContextTooLong matches (errors.Is) a provider's "prompt is too long"
// refusal, which the agent answers by compacting and retrying once.
var ErrContextTooLong = errors.New("prompt too long for the model's context window")

// ProviderError is an error the provider itself reported, over HTTP or
// inside the stream.
type ProviderError struct {
	Provider string
	Status   int // 0 when it came inside the stream
	Type     string
	Message  string
	Hint     string
	// Request is "POST <url>" (without credentials) when the body was not
	// the provider's JSON error but a page — a proxy's, a server's 404 —
	// whose ContentType the message names: the request is then what the
	// user needs to see.
	Request     string
	ContentType string
}

func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	if e.Request != "" {
		fmt.Fprintf(&b, ": %s → %d", e.Request, e.Status)
		if e.ContentType != "" {
			fmt.Fprintf(&b, " (%s)", e.ContentType)
		}
		if e.Hint != "" {
			b.WriteString(": " + e.Hint)
		}
		if e.Message != "" {
			fmt.Fprintf(&b, "; the server said: %s", e.Message)
		}
		return sanitize(b.String())
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Type != "" {
		b.WriteString(": " + e.Type)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Hint != "" {
		b.WriteString(" (" + e.Hint + ")")
	}
	return sanitize(b.String())
}

func (e *ProviderError) Is(target error) bool {
	if target != ErrContextTooLong {
		return false
	}
	return isOverflow(e.Message, e.Type)
}

// Unavailable reports whether err is a failure of the provider rather than
// of the request: the key was refused (401, 403), the rate or the server
// gave out (408, 429, 5xx, an overload reported inside the stream), or
// the connection did (refused, reset, cut, stalled, no answer). Another
// provider may well answer the same request. A request the server found
// bad (400, 404, 413, 422) or too long for the context window would fail
// anywhere, and an abort is the user's wish: those are not.
func Unavailable(err error) bool {
	var perr *ProviderError
	var nerr net.Error
	var gone serverGone
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, ErrContextTooLong):
		return false
	case errors.As(err, &perr):
		if perr.Status == 0 {
			t := strings.ToLower(perr.Type)
			return strings.Contains(t, "overload") || strings.Contains(t, "rate_limit") ||
				t == "api_error" || t == "server_error" || strings.Contains(t, "unavailable")
		}
		return perr.Status == 401 || perr.Status == 403 || retryableStatus[perr.Status] || perr.Status >= 500
	case errors.As(err, &gone), errors.As(err, &nerr), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	return false
}

// serverGone is a server that stopped answering — no response headers
// in time, a stream that ended early or stalled — with the message of
// the error it wraps.
type serverGone struct{ error }

func (e serverGone) Unwrap() error { return e.error }

// ProviderConfig selects and configures a provider.
type ProviderConfig struct {
	Name      string // anthropic, openai, ollama
	BaseURL   string
	APIKey    string
	KeySource string // where the key came from, for error messages
	Retries   int    // -1: none; 0: the default of 3
	Client    *http.Client
	// ResponseTimeout bounds the wait for a response's headers after a
	// request is sent; 0 is DefaultResponseTimeout. IdleTimeout bounds a
	// started stream's silence; 0 is DefaultIdleTimeout.
	ResponseTimeout time.Duration
	IdleTimeout     time.Duration
	// CacheRetention is how long Anthropic keeps prompt cache entries: ""
	// for its default of 5 minutes, or CacheRetention1h.
	CacheRetention string
	// Local holds what differs for servers other than the vendors' APIs
	// (providers_local.go): headers, text tool calls, compatibility.
	Local LocalOptions
}

// DefaultResponseTimeout is how long a server may take to start answering:
// long enough for a local server to load a large model on the first
// request, short enough that one that accepted the connection and went
// quiet does not hang -p or rpc forever.
const DefaultResponseTimeout = 5 * time.Minute

// DefaultIdleTimeout is how long a started stream may go without progress:
// generous, since a reasoning model may think for minutes, but a server
// that stopped answering must not hang a run forever.
const DefaultIdleTimeout = 10 * time.Minute

// NewProvider builds the client for cfg.Name.
func NewProvider(cfg ProviderConfig) (Provider, error) {
	h := &httpStreamer{client: credentialClient(cfg.Client), retries: cfg.Retries, keySource: cfg.KeySource,
		baseDelay: 500 * time.Millisecond, maxDelay: 30 * time.Second, idle: cmp.Or(cfg.IdleTimeout, DefaultIdleTimeout), sleep: sleepCtx,
		headerTimeout: cmp.Or(cfg.ResponseTimeout, DefaultResponseTimeout), headers: cfg.Local.Headers}
	if h.retries == 0 {
		h.retries = 3
	} else if h.retries < 0 {
		h.retries = 0
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base != "" {
		if err := checkBaseURL(base); err != nil {
			return nil, fmt.Errorf("base URL %w", err)
		}
	}
	switch cfg.Name {
	case "anthropic":
		if base == "" {
			base = "https://api.anthropic.com"
		}
		h.name = "anthropic"
		return &anthropicProvider{http: h, url: endpointURL(base, "/v1/messages"), key: cfg.APIKey, cacheTTL: cfg.CacheRetention}, nil
	case "openai", "ollama":
		if base == "" {
			base = "https://api.openai.com"
			if cfg.Name == "ollama" {
				base = "http://localhost:11434/v1"
			}
		}
		url := openaiURL(base, "/chat/completions")
		h.name = cfg.Name
		vendor := isOpenAIAPI(base)
		p := &openaiProvider{http: h, name: cfg.Name, url: url, key: cfg.APIKey, plainMaxTokens: !vendor, compat: cfg.Local.Compat}
		if p.plainMaxTokens {
			p.local = newLocalServer(cfg.Name, cfg.BaseURL, cfg.APIKey, h, cfg.Local)
		}
		if cfg.Name == "ollama" {
			return &ollamaProvider{openai: p, local: p.local}, nil
		}
		return p, nil
	}
	return nil, fmt.Errorf("unknown provider %q (want anthropic, openai or ollama)", cfg.Name)
}

// httpStreamer posts a streaming request, retrying only before the first
// byte of the response body: a stream that has begun is never replayed.
type httpStreamer struct {
	name      string
	client    *http.Client
	retries   int
	keySource string
	baseDelay time.Duration
	maxDelay  time.Duration
	// idle is how long a started stream may go without progress — a piece
	// of the reply — before it counts as stalled. Keep-alive comments and
	// pings are not progress, so a server cannot hold a run open with them.
	idle time.Duration
	// headerTimeout bounds the wait for the response headers.
	headerTimeout time.Duration
	sleep         func(ctx context.Context, d time.Duration) error
	// headers are the user's own (models.json), sent with every request
	// over zot's.
	headers map[string]string
}

// RetryNotice is what the retry loop tells before it waits to try a
// request again: the attempt it will make (2 for the first retry), the
// most it makes, how long it waits, and the failure it answers.
type RetryNotice struct {
	Attempt, Attempts int
	Wait              time.Duration
	Err               error
}

type retryHookKey struct{}

// WithRetryHook returns a context whose provider calls report each retry
// to hook before waiting for it, as net/http/httptrace reports a request's
// progress: whoever waits for the model can show why it waits.
func WithRetryHook(ctx context.Context, hook func(RetryNotice)) context.Context {
	return context.WithValue(ctx, retryHookKey{}, hook)
}

var retryableStatus = map[int]bool{408: true, 429: true, 500: true, 502: true, 503: true, 504: true, 529: true}

func (h *httpStreamer) post(ctx context.Context, url string, header http.Header, body wireBody) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, "POST", url, body.reader())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", h.name, err)
		}
		req.ContentLength = int64(body.size)
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body.reader()), nil }
		req.Header = header.Clone()
		for k, v := range h.headers {
			req.Header.Set(k, v)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := h.do(req)
		var wait time.Duration
		var refused *RedirectRefusedError
		switch {
		case errors.As(err, &refused):
			return nil, fmt.Errorf("%s: %w", h.name, refused)
		case errors.Is(err, errNoResponse):
			// Not retried: a server that took the request and said nothing
			// for minutes would only be given more minutes.
			return nil, serverGone{fmt.Errorf("%s: no response within %v of sending the request: the server accepted it but did not answer (overloaded, or still loading the model? --response-timeout gives it longer)", h.name, h.headerTimeout)}
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			err = fmt.Errorf("%s: %w", h.name, scrubURLError(err))
			if hint := refusedLocally(h.name, req.URL, err); hint != "" {
				// Nothing listens there: a second later nothing will.
				return nil, fmt.Errorf("%w (%s)", err, hint)
			}
		case resp.StatusCode == http.StatusOK:
			if err := notAStream(h.name, resp); err != nil {
				return nil, err
			}
			return resp, nil
		default:
			perr := h.httpError(resp)
			if !retryableStatus[resp.StatusCode] || refusesTools(perr) || cannotLoad(perr) {
				// A refusal that says why is the same the next time.
				return nil, perr
			}
			wait = retryAfter(resp.Header.Get("Retry-After"), time.Now())
			err = perr
		}
		if attempt >= h.retries {
			if attempt > 0 {
				return nil, fmt.Errorf("%w (gave up after %d retries)", err, attempt)
			}
			return nil, err
		}
		if wait == 0 {
			backoff := h.baseDelay << attempt
			wait = backoff/2 + time.Duration(rand.Int63n(int64(backoff/2)+1))
		}
		if wait > h.maxDelay {
			wait = h.maxDelay
		}
		if hook, _ := ctx.Value(retryHookKey{}).(func(RetryNotice)); hook != nil {
			hook(RetryNotice{Attempt: attempt + 2, Attempts: h.retries + 1, Wait: wait, Err: err})
		}
		if serr := h.sleep(ctx, wait); serr != nil {
			return nil, serr
		}
	}
}

// errNoResponse is a request whose response headers did not come within
// headerTimeout.
var errNoResponse = errors.New("no response headers in time")

// do sends req, giving up when the response headers take longer than
// headerTimeout. The timer's context stays with the response body, which
// releases it when closed.
func (h *httpStreamer) do(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	timer := time.AfterFunc(h.headerTimeout, func() { cancel(errNoResponse) })
	resp, err := h.client.Do(req.WithContext(ctx))
	if !timer.Stop() || context.Cause(ctx) == errNoResponse {
		if err == nil {
			resp.Body.Close()
		}
		cancel(nil)
		if req.Context().Err() != nil {
			return nil, req.Context().Err()
		}
		return nil, errNoResponse
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	resp.Body = cancelOnClose{resp.Body, func() { cancel(nil) }}
	return resp, nil
}

// cancelOnClose releases a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// notAStream refuses a 200 answer that is plainly not an event stream — a
// server or proxy that ignored "stream": true, or a login portal — with the
// start of what it sent, rather than a puzzling "ended early after 0 events".
func notAStream(name string, resp *http.Response) error {
	ct := strings.ToLower(resp.Header.Get("Content-Type"))
	if !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "text/html") {
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	perr := &ProviderError{Provider: name, Status: resp.StatusCode}
	pageError(perr, resp, body)
	perr.Hint = "expected an event stream (text/event-stream)"
	if strings.Contains(ct, "html") {
		perr.Hint += "; check --base-url"
	}
	return perr
}

// scrubURLError drops the URL from a transport error: a base URL may carry
// credentials.
func scrubURLError(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && strings.HasPrefix(err.Error(), "Post ") {
		return ue.Unwrap()
	}
	return err
}

func (h *httpStreamer) httpError(resp *http.Response) *ProviderError {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	perr := &ProviderError{Provider: h.name, Status: resp.StatusCode}
	var parsed struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &parsed) == nil && len(parsed.Error) > 0 {
		perr.Type, perr.Message = decodeErrorValue(parsed.Error)
	} else if len(body) > 0 && body[0] == '{' {
		// vLLM and others: {"object": "error", "message": …, "type": …}
		perr.Type, perr.Message = decodeErrorValue(body)
	}
	if perr.Message == "" {
		pageError(perr, resp, body)
	}
	if resp.StatusCode == 401 || resp.StatusCode == 403 {
		src := h.keySource
		if src == "" {
			src = "no key was set"
		} else {
			src = "the key came from " + src
		}
		perr.Hint = fmt.Sprintf("%s; give a valid key with --api-key, the %s environment variable or /login", src, keyEnvVar(h.name))
	}
	return perr
}

// decodeErrorValue reads an "error" value: {type, message, code} or a string.
func decodeErrorValue(raw json.RawMessage) (typ, msg string) {
	var obj struct {
		Type    string          `json:"type"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	// ollama passes on its runner's (llama-server's) error as a string
	// that holds the JSON — the error itself, or its message on the
	// OpenAI path: the words are inside.
	var inner struct {
		Error json.RawMessage `json:"error"`
	}
	nested := func(s string) bool {
		return strings.HasPrefix(s, "{") && json.Unmarshal([]byte(s), &inner) == nil && len(inner.Error) > 0 && inner.Error[0] != '"'
	}
	if json.Unmarshal(raw, &obj) == nil {
		if nested(obj.Message) {
			return decodeErrorValue(inner.Error)
		}
		typ = obj.Type
		if typ == "" && len(obj.Code) > 0 && string(obj.Code) != "null" {
			typ = strings.Trim(string(obj.Code), `"`)
		}
		return typ, obj.Message
	}
	var s string
	json.Unmarshal(raw, &s)
	if nested(s) {
		return decodeErrorValue(inner.Error)
	}
	return "", s
}

func keyEnvVar(provider string) string {
	if provider == "anthropic" {
		return "ANTHROPIC_API_KEY"
	}
	return "OPENAI_API_KEY"
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		// Clamped before converting: a huge value would overflow.
		return time.Duration(min(secs, 24*3600) * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
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

// sseEvent is one server-sent event: its name and its data lines joined,
// which are readSSE's, valid until the function given the event returns.
type sseEvent struct {
	Event string
	Data  []byte
}

// maxSSELine bounds one line, and one event's data, of a stream, so a
// broken server cannot make us buffer without end.
const maxSSELine = 16 << 20

// sseCursor is where a stream stands, for a reconnection: the id of the
// last event dispatched and the reconnection delay the stream asked for,
// kept as the SSE standard keeps them (an id: line counts once its event
// is dispatched, with or without data, and stays until another replaces
// it; a retry: of ASCII digits counts at once).
type sseCursor struct {
	LastID string
	Retry  time.Duration // 0 until the stream sets one
}

// readSSE reads a text/event-stream and calls fn for each event. An event
// still pending at EOF (no blank line after it) is delivered, as the
// providers' own SDKs do. fn returning errStopSSE ends reading cleanly.
func readSSE(r io.Reader, fn func(sseEvent) error) error { return readSSEFrom(r, nil, fn) }

// readSSEFrom is readSSE keeping cur, when not nil, up to date.
func readSSEFrom(r io.Reader, cur *sseCursor, fn func(sseEvent) error) error {
	lr := newLineReader(r, maxSSELine, overLongFail)
	var ev sseEvent
	var data []byte
	hasData := false
	var idBuf string
	dispatch := func() error {
		if cur != nil {
			cur.LastID = idBuf
		}
		if !hasData { // the spec drops an event without data
			ev = sseEvent{}
			return nil
		}
		ev.Data = data
		err := fn(ev)
		ev, data, hasData = sseEvent{}, data[:0], false
		return err
	}
	for {
		line, err := lr.next()
		if isLineTooLong(err) {
			return fmt.Errorf("stream line longer than %d bytes", maxSSELine)
		}
		if err == io.EOF {
			// A pending event ends with the stream; its JSON cut short
			// means the stream was, unless its last line was whole.
			derr := dispatch()
			var cut *json.SyntaxError
			if !lr.terminated && errors.As(derr, &cut) {
				return errCutEvent
			}
			return derr
		}
		if err != nil {
			return err
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			if derr := dispatch(); derr != nil {
				return derr
			}
		} else if line[0] != ':' {
			field, value := line, []byte(nil)
			if i := bytes.IndexByte(line, ':'); i >= 0 {
				field, value = line[:i], line[i+1:]
				if len(value) > 0 && value[0] == ' ' {
					value = value[1:]
				}
			}
			switch string(field) {
			case "event":
				ev.Event = string(value)
			case "id":
				if bytes.IndexByte(value, 0) < 0 {
					idBuf = string(value)
				}
			case "retry":
				if ms, ok := sseRetry(value); ok && cur != nil {
					cur.Retry = ms
				}
			case "data":
				if hasData {
					data = append(data, '\n')
				}
				if len(data)+len(value) > maxSSELine {
					return fmt.Errorf("stream event longer than %d bytes", maxSSELine)
				}
				data = append(data, value...)
				hasData = true
			}
		}
	}
}

// sseRetry reads a retry: field, ASCII digits only; past 10^12 ms (about
// 30 years) the number stops growing, so it cannot overflow.
func sseRetry(v []byte) (time.Duration, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var ms int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		ms = min(ms*10+int64(c-'0'), 1e12)
	}
	return time.Duration(ms) * time.Millisecond, true
}

// errStopSSE ends readSSE without an error, at a terminal event.
var errStopSSE = errors.New("end of stream")

// errCutEvent is an event pending at EOF whose JSON is not whole: the
// connection dropped in the middle of it.
var errCutEvent = errors.New("the last event was cut off")

// replyBytesPerToken sizes the cap on one streamed reply: a token is a few
// bytes of text, and far fewer than this even as escaped JSON in tool
// arguments, so a reply past the model's output limit times this is not a
// model talking but a server that will not stop.
const (
	replyBytesPerToken = 32
	minReplyBytes      = 1 << 20
)

// maxReplyBytes is the most one reply of a model whose output limit is
// maxTokens may hold.
func maxReplyBytes(maxTokens int) int64 {
	return max(int64(maxTokens)*replyBytesPerToken, minReplyBytes)
}

// sseHandler takes a stream's events and keeps the reply they build.
// received is the reply's size so far, in bytes of text, thinking and
// tool arguments plus a little for each block: what memory it holds.
type sseHandler interface {
	handle(sseEvent) error
	received() int64
}

// streamBody reads the response body as SSE, counting events so that an
// early end can say how far it got. It ends the stream with an error when
// the reply grows past maxBytes, or when nothing is added to the reply for
// idle: comments, pings and empty deltas keep a connection alive but are
// not progress.
func streamBody(ctx context.Context, name string, body io.ReadCloser, idle time.Duration, maxBytes int64, h sseHandler) (events int, err error) {
	return streamFrames(ctx, name, body, idle, maxBytes, h, readSSE)
}

// streamFrames is streamBody for any framing: read calls fn for each
// frame of the body (readSSE; ollama's readNDJSON).
func streamFrames(ctx context.Context, name string, body io.ReadCloser, idle time.Duration, maxBytes int64, h sseHandler, read func(io.Reader, func(sseEvent) error) error) (events int, err error) {
	defer body.Close()
	// Closing the body is what unblocks a read when ctx is cancelled, or
	// when the server has made no progress for longer than idle.
	stop := context.AfterFunc(ctx, func() { body.Close() })
	defer stop()
	var stalled atomic.Bool
	watchdog := time.AfterFunc(idle, func() {
		stalled.Store(true)
		body.Close()
	})
	defer watchdog.Stop()
	var size int64
	err = read(body, func(ev sseEvent) error {
		events++
		if err := h.handle(ev); err != nil {
			return err
		}
		if n := h.received(); n != size {
			size = n
			if size > maxBytes {
				return errReplyTooLong
			}
			watchdog.Reset(idle)
		}
		return nil
	})
	if err == errStopSSE {
		return events, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return events, ctx.Err()
		}
		if err == errReplyTooLong {
			return events, fmt.Errorf("%s: the reply grew past %s (%d bytes per token of the model's output limit) without ending; stopped reading it", name, sizeString(maxBytes), replyBytesPerToken)
		}
		if stalled.Load() {
			return events, serverGone{fmt.Errorf("%s: nothing new for %v after %d events (keep-alives do not count); the server stalled", name, idle, events)}
		}
		var perr *ProviderError
		if errors.As(err, &perr) {
			return events, err
		}
		if err == errCutEvent {
			return events, fmt.Errorf("%w (%v)", streamEndedEarly(name, events-1), err)
		}
		return events, fmt.Errorf("%s: stream interrupted after %d events: %w", name, events, err)
	}
	return events, nil
}

// errReplyTooLong ends a stream whose reply outgrew maxReplyBytes.
var errReplyTooLong = errors.New("reply too long")

func streamEndedEarly(name string, events int) error {
	return serverGone{fmt.Errorf("%s: stream ended early after %d events", name, events)}
}

// partialBlock collects one content block while it streams.
type partialBlock struct {
	typ       string
	text      strings.Builder
	args      strings.Builder
	id, name  string
	signature string
	data      string
	open      bool
}

// streamPiece adds delta, a piece of text or reasoning ("text" or
// "thinking"), to *pb, made on the first piece, counts it into size and
// tells on: how a reply's text grows in the formats that stream it as
// plain deltas (Chat Completions, ollama).
func streamPiece(pb **partialBlock, typ, delta string, size *int64, on func(StreamEvent)) {
	if delta == "" {
		return
	}
	*size += int64(len(delta))
	if *pb == nil {
		*pb = &partialBlock{typ: typ}
	}
	(*pb).text.WriteString(delta)
	on(StreamEvent{Type: typ, Delta: delta})
}

func (p *partialBlock) block() Block {
	switch p.typ {
	case "tool_call":
		args := p.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		return Block{Type: BlockToolCall, ID: p.id, Name: p.name, Args: json.RawMessage(args)}
	case "thinking":
		return Block{Type: BlockThinking, Text: p.text.String(), Signature: p.signature}
	case "redacted_thinking":
		return Block{Type: BlockThinking, Redacted: true, Data: p.data}
	}
	return Block{Type: BlockText, Text: p.text.String()}
}

func assemble(parts []*partialBlock) []Block {
	var out []Block
	for _, p := range parts {
		if p == nil {
			continue
		}
		b := p.block()
		if b.Type == BlockText && b.Text == "" {
			continue
		}
		out = append(out, b)
	}
	return out
}

// openaiProvider speaks OpenAI Chat Completions, and with another base URL
// the servers that copy it: ollama, llama.cpp, vLLM.
type openaiProvider struct {
	http *httpStreamer
	name string
	url  string
	key  string
	// plainMaxTokens sends the output limit as max_tokens, which every
	// compatible server reads; OpenAI's own API wants
	// max_completion_tokens (and refuses max_tokens for reasoning models).
	plainMaxTokens bool
	compat         Compat
	// local is what zot knows of a server that is not api.openai.com
	// (providers_local.go); nil for OpenAI's own API.
	local *localServer
	// log is the transcript laid out for the last request, in Chat
	// Completions' format or the Responses API's.
	log wireLog
}

func (p *openaiProvider) Name() string { return p.name }

type oaiMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Reasoning        string          `json:"reasoning,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []oaiToolCall   `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
}

type oaiToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaiPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url,omitempty"`
}

type oaiTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type oaiRequest struct {
	Model         string       `json:"model"`
	Messages      []oaiMessage `json:"messages"`
	Tools         []oaiTool    `json:"tools,omitempty"`
	Stream        bool         `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
	ReasoningEffort     string `json:"reasoning_effort,omitempty"`
	MaxCompletionTokens int    `json:"max_completion_tokens,omitempty"`
	MaxTokens           int    `json:"max_tokens,omitempty"`
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func (p *openaiProvider) buildRequest(req Request) oaiRequest {
	info := lookupModel(p.name, req.Model)
	out := oaiRequest{Model: req.Model, Stream: true, ReasoningEffort: reasoningFor(info, req.Reasoning)}
	// The catalogue's limits are the API's defaults anyway; a limit the
	// user wrote in models.json is sent, since a local server's default
	// may be far from it.
	limit := req.MaxTokens
	if limit == 0 && info.Source == SourceUser {
		limit = info.MaxOutput
	}
	if p.compat.MaxTokensField == "max_tokens" || p.plainMaxTokens && p.compat.MaxTokensField == "" {
		out.MaxTokens = limit
	} else {
		out.MaxCompletionTokens = limit
	}
	if isTrue(p.compat.SupportsUsageInStreaming, true) {
		out.StreamOptions = &struct {
			IncludeUsage bool `json:"include_usage"`
		}{true}
	}
	out.Tools = oaiTools(req.Tools)
	return out
}

// requestBody is the Chat Completions request: the system prompt and the
// transcript, each message encoded once for the whole session
// (Message.wireEncoded), spliced into the rest. reasoningKey names the
// field each reply's reasoning goes back in; "" sends none.
func (p *openaiProvider) requestBody(req Request, reasoningKey string) (wireBody, error) {
	frame, err := json.Marshal(p.buildRequest(req))
	if err != nil {
		return wireBody{}, err
	}
	var list jsonList
	if req.System != "" {
		role := "system"
		if isTrue(p.compat.SupportsDeveloperRole, false) {
			role = "developer"
		}
		system, err := jsonItems([]oaiMessage{{Role: role, Content: jsonString(req.System)}})
		if err != nil {
			return wireBody{}, err
		}
		list.add(system)
	}
	format := "openai-chat"
	if reasoningKey != "" {
		format += "+" + reasoningKey
	}
	err = p.log.addEach(&list, format, req.Messages, func(_ int, m Message) wireEncoding {
		data, err := jsonItems(oaiMessages([]Message{m}, reasoningKey))
		return wireEncoding{data: data, err: err}
	})
	if err != nil {
		return wireBody{}, err
	}
	return list.splice(frame, "messages")
}

// oaiMessages converts the transcript. Tool messages cannot carry images,
// so images a tool returned follow its results in one user message.
// reasoningKey, reasoning or reasoning_content, sends each reply's
// reasoning back in that field.
func oaiMessages(msgs []Message, reasoningKey string) []oaiMessage {
	var out []oaiMessage
	for _, m := range msgs {
		if m.Role == RoleAssistant {
			// content may be null only beside tool_calls; a reply that was
			// all reasoning (or cut off) has neither, and goes as "".
			om := oaiMessage{Role: "assistant", Content: jsonString(m.Text())}
			switch reasoningKey {
			case "reasoning":
				om.Reasoning = m.thinkingText()
			case "reasoning_content":
				om.ReasoningContent = m.thinkingText()
			}
			if len(m.ToolCalls()) > 0 && m.Text() == "" {
				om.Content = json.RawMessage("null")
			}
			for _, c := range m.ToolCalls() {
				var tc oaiToolCall
				args := string(c.Args)
				if !json.Valid(c.Args) || !isJSONObject(c.Args) {
					args = "{}"
				}
				tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments = c.ID, "function", c.Name, args
				om.ToolCalls = append(om.ToolCalls, tc)
			}
			out = append(out, om)
			continue
		}
		var parts []oaiPart
		var toolImages []oaiPart
		for _, b := range m.Content {
			switch b.Type {
			case BlockText:
				parts = append(parts, oaiPart{Type: "text", Text: b.Text})
			case BlockImage:
				parts = append(parts, imagePart(b))
			case BlockToolResult:
				var text []string
				for _, c := range b.Content {
					switch c.Type {
					case BlockText:
						text = append(text, c.Text)
					case BlockImage:
						toolImages = append(toolImages, imagePart(c))
					}
				}
				body := strings.Join(text, "\n")
				if b.IsError && !strings.HasPrefix(body, "Error") {
					body = "Error: " + body
				}
				out = append(out, oaiMessage{Role: "tool", ToolCallID: b.CallID, Content: jsonString(body)})
			}
		}
		if len(toolImages) > 0 {
			parts = append([]oaiPart{{Type: "text", Text: "Images returned by the tool calls above:"}}, append(toolImages, parts...)...)
		}
		if len(parts) == 0 {
			continue
		}
		if len(parts) == 1 && parts[0].Type == "text" {
			out = append(out, oaiMessage{Role: "user", Content: jsonString(parts[0].Text)})
			continue
		}
		raw, _ := json.Marshal(parts)
		out = append(out, oaiMessage{Role: "user", Content: raw})
	}
	return out
}

func imagePart(b Block) oaiPart {
	p := oaiPart{Type: "image_url"}
	p.ImageURL = &struct {
		URL string `json:"url"`
	}{URL: "data:" + b.MimeType + ";base64," + b.Data}
	return p
}

func (p *openaiProvider) Stream(ctx context.Context, req Request, on func(StreamEvent)) (Reply, error) {
	if err := checkConversation(p.name, req.Messages); err != nil {
		return Reply{}, err
	}
	if p.usesResponses(req.Model) {
		return p.streamResponses(ctx, req, on)
	}
	if p.local == nil {
		reply, _, err := p.stream(ctx, req, p.compat.reasoningKey(), on)
		return reply, err
	}
	return p.local.converse(ctx, req, on, func(req Request, plan localPlan, on func(StreamEvent)) (Reply, bool, error) {
		reply, s, err := p.stream(ctx, req, p.local.reasoningKey(req.Model, plan.info.Kind, p.compat), on)
		if s == nil {
			return reply, false, err
		}
		p.local.replies.learnReasoningField(req.Model, s.reasoningField)
		return reply, s.sawUsage, err
	})
}

// stream sends one request and reads its stream, which it returns for
// what the server showed of itself (usage, its reasoning's field); nil
// when no stream began.
func (p *openaiProvider) stream(ctx context.Context, req Request, reasoningKey string, on func(StreamEvent)) (reply Reply, s *oaiStream, err error) {
	body, err := p.requestBody(req, reasoningKey)
	if err != nil {
		return Reply{}, nil, fmt.Errorf("%s: encode request: %w", p.name, err)
	}
	header := http.Header{}
	if p.key != "" {
		header.Set("Authorization", "Bearer "+p.key)
	}
	resp, err := p.http.post(ctx, p.url, header, body)
	if err != nil {
		return Reply{}, nil, err
	}
	s = &oaiStream{name: p.name, on: on}
	maxTokens := cmp.Or(req.MaxTokens, lookupModel(p.name, req.Model).MaxOutput)
	events, err := streamBody(ctx, p.name, resp.Body, p.http.idle, maxReplyBytes(maxTokens), s)
	reply = Reply{Stop: s.stop, Usage: s.usage}
	if s.thinking != nil {
		reply.Content = append(reply.Content, s.thinking.block())
	}
	reply.Content = append(reply.Content, assemble([]*partialBlock{s.text})...)
	for _, tc := range s.calls {
		s.endCall(tc)
		b := tc.block()
		if s.stop == StopLength && strings.TrimSpace(tc.args.String()) == "" {
			b.Args = nil // cut before its arguments began: not a call without any
		}
		reply.Content = append(reply.Content, b)
	}
	if err == nil && !s.done && s.stop == "" {
		err = streamEndedEarly(p.name, events)
	}
	return reply, s, err
}

// oaiStream is the state of one Chat Completions stream. Only choice 0 is
// read: we never ask for more, and a server that sends more is ignored.
type oaiStream struct {
	name     string
	on       func(StreamEvent)
	text     *partialBlock
	thinking *partialBlock
	calls    []*partialBlock
	byIndex  map[int]*partialBlock
	stop     string
	usage    Usage
	sawUsage bool
	done     bool
	size     int64    // for received
	chunk    oaiChunk // the one being handled
	// reasoningField is the field the reasoning came in: vLLM 0.17 and
	// later write "reasoning", llama-server and older vLLM
	// "reasoning_content".
	reasoningField string
}

func (s *oaiStream) received() int64 { return s.size }

type oaiChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			Reasoning        *string `json:"reasoning"`
			Refusal          *string `json:"refusal"`
			ToolCalls        []struct {
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
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

func (s *oaiStream) handle(ev sseEvent) error {
	data := bytes.TrimSpace(ev.Data)
	if string(data) == "[DONE]" {
		s.done = true
		return errStopSSE
	}
	s.chunk = oaiChunk{} // one for the stream, not one per chunk
	c := &s.chunk
	if err := json.Unmarshal(data, c); err != nil {
		return fmt.Errorf("bad chunk %q: %w", truncate(string(data), 120), err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		typ, msg := decodeErrorValue(c.Error)
		return &ProviderError{Provider: s.name, Type: typ, Message: msg}
	}
	if c.Usage != nil {
		s.sawUsage = true
		cached := 0
		if c.Usage.PromptTokensDetails != nil {
			cached = c.Usage.PromptTokensDetails.CachedTokens
		}
		s.usage = Usage{Input: c.Usage.PromptTokens - cached, Output: c.Usage.CompletionTokens, CacheRead: cached}
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		switch {
		case d.Reasoning != nil && *d.Reasoning != "":
			s.reasoningField = "reasoning"
		case d.ReasoningContent != nil && *d.ReasoningContent != "":
			s.reasoningField = "reasoning_content"
		}
		streamPiece(&s.thinking, "thinking", firstNonEmpty(d.ReasoningContent, d.Reasoning), &s.size, s.on)
		streamPiece(&s.text, "text", firstNonEmpty(d.Content, d.Refusal), &s.size, s.on)
		for _, tc := range d.ToolCalls {
			s.toolPiece(tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.stop = oaiStopReason(*ch.FinishReason)
		}
	}
	return nil
}

func firstNonEmpty(ps ...*string) string {
	for _, p := range ps {
		if p != nil && *p != "" {
			return *p
		}
	}
	return ""
}

// toolPiece adds one streamed piece of a tool call. Calls are keyed by index;
// servers that leave the index out get one call per new id.
func (s *oaiStream) toolPiece(index *int, id, name, args string) {
	if s.byIndex == nil {
		s.byIndex = map[int]*partialBlock{}
	}
	i := len(s.calls) - 1
	if index != nil {
		i = *index
	}
	tc := s.byIndex[i]
	if tc == nil || (id != "" && tc.id != "" && id != tc.id) {
		if index == nil {
			i = len(s.calls)
		}
		if id == "" {
			id = fmt.Sprintf("call_%d", len(s.calls))
		}
		tc = &partialBlock{typ: "tool_call", id: id, open: true}
		s.size += blockCost + int64(len(id))
		s.byIndex[i] = tc
		s.calls = append(s.calls, tc)
	}
	if name != "" && tc.name == "" {
		s.size += int64(len(name))
		tc.name = name
		s.on(StreamEvent{Type: "tool_start", ID: tc.id, Name: name})
	}
	if args != "" {
		s.size += int64(len(args))
		tc.args.WriteString(args)
		s.on(StreamEvent{Type: "tool_args", ID: tc.id, Delta: args})
	}
}

func (s *oaiStream) endCall(tc *partialBlock) {
	if tc.open {
		tc.open = false
		s.on(StreamEvent{Type: "tool_end", ID: tc.id})
	}
}

func oaiStopReason(r string) string {
	switch r {
	case "tool_calls", "function_call":
		return StopToolUse
	case "length":
		return StopLength
	}
	return StopEndTurn
}
