package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Streamable HTTP's streams, and the headers 2026-07-28 mirrors from a
// message. Up to 2025-11-25 a server may end a request's event stream
// before the response (to poll, or because the connection dropped) and the
// client resumes it with a GET carrying Last-Event-ID after the server's
// retry: delay; the optional GET stream carries the server's own requests
// and reconnects the same way. 2026-07-28 resumes nothing: a stream lost
// before its response fails the call with errStreamLost, and the request
// goes out again under a new id (mcp.go).

const (
	// mcpDefaultRetry is the wait before a reconnection when the stream
	// named none.
	mcpDefaultRetry = 2 * time.Second
	// mcpMinRetry and mcpMaxRetry bound the server's retry:, so a stream
	// can neither make zot reconnect in a tight loop nor park a call or
	// the listener for hours.
	mcpMinRetry = 100 * time.Millisecond
	mcpMaxRetry = time.Minute
	// mcpResumeTries is how many reconnections in a row that bring
	// nothing new end a stream for good.
	mcpResumeTries = 5
	// mcpListenWait bounds how long the start waits for the server to
	// answer the GET stream; a server that never does costs this, once.
	mcpListenWait = 5 * time.Second
)

// errStreamLost is a 2026-07-28 response stream that ended before its
// response; the request is sent again as a new one.
var errStreamLost = errors.New("the event stream ended before the response")

// errNoStream is a GET the server refuses for good (405: it offers no
// stream at this endpoint), or one zot may no longer send.
var errNoStream = errors.New("the server offers no GET stream")

// retryDelay is the wait before reconnecting a stream: its retry:, capped.
func retryDelay(cur *sseCursor) time.Duration {
	if cur.Retry <= 0 {
		return mcpDefaultRetry
	}
	return min(max(cur.Retry, mcpMinRetry), mcpMaxRetry)
}

// follow reads a request's event stream until its response. A stream that
// ends before it is resumed (see resume) up to 2025-11-25; in 2026-07-28
// the call fails with errStreamLost.
func (t *httpTransport) follow(ctx context.Context, body io.ReadCloser, wantID int64) {
	var cur sseCursor
	got, _ := t.readStream(body, wantID, &cur)
	body.Close()
	if got || wantID == 0 {
		return
	}
	var err error
	switch {
	case t.isStateless():
		err = errStreamLost
	case cur.LastID == "":
		err = fmt.Errorf("POST %s: the event stream ended before the response, without an event id to resume it from", t.rawURL)
	default:
		err = t.resume(ctx, wantID, &cur)
	}
	if err != nil {
		t.conn.failCall(wantID, err)
	}
}

// resume polls for the rest of a request's stream: after the stream's
// retry: delay, a GET with Last-Event-ID, again for as long as the
// reconnections bring something new, until the response arrives; after
// mcpResumeTries in a row that bring nothing (or one the server refuses)
// the call fails. ctx is the call's: its timeout bounds the whole.
func (t *httpTransport) resume(ctx context.Context, wantID int64, cur *sseCursor) error {
	for idle := 0; idle < mcpResumeTries; {
		if err := sleepCtx(ctx, retryDelay(cur)); err != nil {
			return err
		}
		t.conn.log.printf("resuming the stream of request %d from event %q", wantID, truncate(cur.LastID, 80))
		before := cur.LastID
		resp, err := t.get(ctx, cur.LastID)
		if errors.Is(err, errNoStream) || errors.Is(err, errSessionExpired) {
			return fmt.Errorf("POST %s: the event stream ended before the response and cannot be resumed: %w", t.rawURL, err)
		}
		n := 0
		if err == nil {
			var got bool
			got, n = t.readStream(resp.Body, wantID, cur)
			resp.Body.Close()
			if got {
				return nil
			}
		} else {
			t.conn.log.printf("resume: %v", err)
		}
		if n > 0 || cur.LastID != before {
			idle = 0
		} else {
			idle++
		}
	}
	return fmt.Errorf("POST %s: the event stream ended before the response, and %d attempts in a row to resume it from event %q brought nothing", t.rawURL, mcpResumeTries, truncate(cur.LastID, 80))
}

// get opens a GET event stream of the session, resuming after lastID when
// set. errNoStream: the server refuses it, or the transport is closing.
func (t *httpTransport) get(ctx context.Context, lastID string) (*http.Response, error) {
	if !t.begin() {
		return nil, errNoStream
	}
	defer t.sending.Done()
	var set func(*http.Request)
	if lastID != "" {
		set = func(req *http.Request) { req.Header.Set("Last-Event-ID", lastID) }
	}
	resp, sid, err := t.do(ctx, http.MethodGet, nil, set)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("GET %s: %w", t.rawURL, scrubURLError(err))
	}
	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusOK && ctype == "text/event-stream":
		return resp, nil
	case resp.StatusCode == http.StatusNotFound && sid != "":
		resp.Body.Close()
		return nil, errSessionExpired
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests:
		defer resp.Body.Close()
		return nil, t.statusError("GET", resp)
	}
	// 405 is the refusal the specification names; no other answer of
	// the kind would change on asking again.
	resp.Body.Close()
	return nil, fmt.Errorf("%w (HTTP %d, Content-Type %q)", errNoStream, resp.StatusCode, truncate(ctype, 60))
}

// listen opens the optional GET stream on which a server sends what is
// not tied to a request of ours — its own requests, list_changed, logs —
// and returns once the server answered it (at most mcpListenWait, or
// ctx's end): a server that asks something right after a tools/call must
// find the stream open, or its request is lost. The stream reconnects as a
// request's does (retry:, Last-Event-ID) until the server refuses it, the
// session ends, or mcpResumeTries reconnections in a row bring nothing.
// Once per session.
func (t *httpTransport) listen(ctx context.Context) {
	t.mu.Lock()
	if t.listening || t.protocol == "" || t.stateless || t.closing {
		t.mu.Unlock()
		return
	}
	t.listening = true
	t.mu.Unlock()
	answered := make(chan struct{})
	var once sync.Once
	opened := func() { once.Do(func() { close(answered) }) }
	t.wg.Add(1)
	// Owned by the transport; exits as said above.
	go func() {
		defer t.wg.Done()
		defer opened()
		defer func() {
			t.mu.Lock()
			t.listening = false
			t.mu.Unlock()
		}()
		var cur sseCursor
		for idle := 0; idle < mcpResumeTries && t.ctx.Err() == nil; {
			before := cur.LastID
			resp, err := t.get(t.ctx, cur.LastID)
			opened()
			n := 0
			switch {
			case errors.Is(err, errNoStream) || errors.Is(err, errSessionExpired):
				t.conn.log.printf("no GET stream: %v", err)
				return
			case err != nil:
				t.conn.log.printf("GET stream: %v", err)
			default:
				_, n = t.readStream(resp.Body, 0, &cur)
				resp.Body.Close()
			}
			if n > 0 || cur.LastID != before {
				idle = 0
			} else {
				idle++
			}
			if sleepCtx(t.ctx, retryDelay(&cur)) != nil {
				return
			}
		}
		if t.ctx.Err() == nil {
			t.conn.log.printf("GET stream: %d reconnections in a row brought nothing; not reopened", mcpResumeTries)
		}
	}()
	wait := time.NewTimer(mcpListenWait)
	defer wait.Stop()
	select {
	case <-answered:
	case <-ctx.Done():
	case <-wait.C:
		t.conn.log.printf("GET stream: no answer within %s; going on without waiting for it", mcpListenWait)
	}
}

// mcpRepeatable are the messages whose POST Go's transport sends once more
// when the connection it went on, kept from an earlier request, breaks
// before any answer: the server closed it as zot picked it up. Sending one
// of these twice does nothing the first did not (a second initialize
// leaves the first session unused, to expire). A tools/call may act on the
// world, and the answer to a server's request may be its user's consent:
// neither goes twice, and such a break is their caller's error.
var mcpRepeatable = map[string]bool{
	"initialize":                true,
	"notifications/initialized": true,
	"tools/list":                true,
	"server/discover":           true,
	"notifications/cancelled":   true,
}

// mirror sets the headers 2026-07-28 asks of a POST: Mcp-Method, Mcp-Name
// for tools/call, and the Mcp-Param-* of the tool's x-mcp-header
// arguments, each value encoded as mcpHeaderValue says.
func (t *httpTransport) mirror(req *http.Request, out mcpOut) {
	if !t.isStateless() || out.method == "" {
		return
	}
	req.Header.Set("Mcp-Method", out.method)
	if out.method == "tools/call" && out.name != "" {
		req.Header.Set("Mcp-Name", mcpHeaderValue(out.name))
	}
	for name, v := range out.params {
		req.Header.Set("Mcp-Param-"+name, mcpHeaderValue(v))
	}
}

// mcpHeaderValue is v as a header value: as it is when it is plain
// printable ASCII without spaces at its ends, else (or when it looks like
// the encoding itself) =?base64?…?= of its UTF-8.
func mcpHeaderValue(v string) string {
	plain := v != "" && v[0] != ' ' && v[len(v)-1] != ' ' &&
		!(strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?="))
	for i := 0; plain && i < len(v); i++ {
		plain = v[i] >= 0x20 && v[i] <= 0x7e
	}
	if plain {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}
