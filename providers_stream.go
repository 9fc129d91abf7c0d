package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The HTTP and SSE machinery every provider client streams through:
// posting a request with retries before the first byte (httpStreamer),
// the errors a server answers, the server-sent-event reader, the watchdog
// that ends a stalled or endless reply (streamBody), and the pieces a
// reply is assembled from.

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

// readSSEFrom is readSSE keeping cur, when not nil, up to date. A stream
// read with a cursor goes on where the last left off: an event without an
// id keeps the last one. And once it has an id to resume from, an event
// the stream did not end (no blank line after it) is dropped, as the SSE
// standard drops it, and so is a last line it did not end, which the
// standard does not count as a line: the server sends the event again
// after that id, and a cut id: line counted would resume from the wrong
// place ("1" of "10") or from none ("id" of "id: 10").
func readSSEFrom(r io.Reader, cur *sseCursor, fn func(sseEvent) error) error {
	lr := newLineReader(r, maxSSELine, overLongFail)
	var ev sseEvent
	var data []byte
	hasData := false
	var idBuf string
	if cur != nil {
		idBuf = cur.LastID
	}
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
			if cur != nil && idBuf != "" {
				return nil
			}
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
		if !lr.terminated && cur != nil && idBuf != "" {
			return nil
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
