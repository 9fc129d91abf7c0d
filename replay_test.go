package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// replayStep is one scripted HTTP answer of the replay server.
type replayStep struct {
	Status int         // 0 means 200
	Header http.Header // extra response headers
	Body   string      // a non-SSE body (error responses)
	Events []string    // SSE events, written and flushed one at a time
	// DropAfter > 0 closes the connection abruptly after that many events.
	DropAfter int
	// HangAfter > 0 stops after that many events and holds the connection
	// open until the client goes away (a slow or stuck model).
	HangAfter int
}

// capturedRequest is what the client sent.
type capturedRequest struct {
	Path   string
	Header http.Header
	Body   []byte
}

// replayServer answers each request with the next scripted step; once the
// script runs out it repeats the last step.
type replayServer struct {
	*httptest.Server
	mu       sync.Mutex
	steps    []replayStep
	requests []capturedRequest
	sent     time.Time // when the last answer was sent whole
}

func startReplay(t testing.TB, steps ...replayStep) *replayServer {
	t.Helper()
	rs := &replayServer{steps: steps}
	rs.Server = httptest.NewServer(http.HandlerFunc(rs.serve))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *replayServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		// The TUI's background model listing (models_server.go) is no
		// part of a script: it neither takes a step nor counts.
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	rs.mu.Lock()
	n := len(rs.requests)
	rs.requests = append(rs.requests, capturedRequest{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	step := rs.steps[min(n, len(rs.steps)-1)]
	rs.mu.Unlock()

	for k, vs := range step.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if step.Status != 0 && step.Status != 200 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(step.Status)
		io.WriteString(w, step.Body)
		return
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	w.WriteHeader(200)
	flusher := w.(http.Flusher)
	flusher.Flush()
	for i, ev := range step.Events {
		if step.DropAfter > 0 && i == step.DropAfter {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		if step.HangAfter > 0 && i == step.HangAfter {
			<-r.Context().Done()
			return
		}
		io.WriteString(w, ev)
		flusher.Flush()
	}
	if step.HangAfter >= len(step.Events) && step.HangAfter > 0 {
		<-r.Context().Done()
	}
	rs.mu.Lock()
	rs.sent = time.Now()
	rs.mu.Unlock()
}

// lastSent is when the server last sent an answer whole.
func (rs *replayServer) lastSent() time.Time {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.sent
}

// Requests returns what the clients sent so far.
func (rs *replayServer) Requests() []capturedRequest {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]capturedRequest(nil), rs.requests...)
}

// splitSSE cuts a recorded stream into its events, keeping every byte: the
// pieces concatenated are the file.
func splitSSE(data string) []string {
	var events []string
	for len(data) > 0 {
		i := strings.Index(data, "\n\n")
		if i < 0 {
			events = append(events, data)
			break
		}
		events = append(events, data[:i+2])
		data = data[i+2:]
	}
	return events
}

// fixture reads a recorded stream from testdata/sse.
func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sse", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fixtureStep(t testing.TB, name string) replayStep {
	return replayStep{Events: splitSSE(fixture(t, name))}
}

// gen is one content block of a generated stream: text, thinking, or a tool
// call when ToolName is set.
type gen struct {
	Text     string
	Thinking string
	ToolID   string
	ToolName string
	ToolArgs string
}

func sseEventText(name string, v any) string {
	b, _ := json.Marshal(v)
	if name == "" {
		return "data: " + string(b) + "\n\n"
	}
	return "event: " + name + "\ndata: " + string(b) + "\n\n"
}

// pieces splits s into chunks of at most n bytes, the way providers stream
// text and tool arguments.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return append(out, s)
}

type obj = map[string]any

// anthropicEvents builds an Anthropic Messages stream shaped like the
// recorded ones.
func anthropicEvents(blocks ...gen) []string {
	ev := []string{sseEventText("message_start", obj{"type": "message_start", "message": obj{
		"id": "msg_test", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": []any{},
		"usage": obj{"input_tokens": 100, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 50, "output_tokens": 1}}})}
	stop := "end_turn"
	for i, b := range blocks {
		switch {
		case b.ToolName != "":
			stop = "tool_use"
			ev = append(ev, sseEventText("content_block_start", obj{"type": "content_block_start", "index": i,
				"content_block": obj{"type": "tool_use", "id": b.ToolID, "name": b.ToolName, "input": obj{}}}))
			for _, p := range pieces(b.ToolArgs, 7) {
				ev = append(ev, sseEventText("content_block_delta", obj{"type": "content_block_delta", "index": i,
					"delta": obj{"type": "input_json_delta", "partial_json": p}}))
			}
		case b.Thinking != "":
			ev = append(ev, sseEventText("content_block_start", obj{"type": "content_block_start", "index": i,
				"content_block": obj{"type": "thinking", "thinking": ""}}))
			for _, p := range pieces(b.Thinking, 10) {
				ev = append(ev, sseEventText("content_block_delta", obj{"type": "content_block_delta", "index": i,
					"delta": obj{"type": "thinking_delta", "thinking": p}}))
			}
			ev = append(ev, sseEventText("content_block_delta", obj{"type": "content_block_delta", "index": i,
				"delta": obj{"type": "signature_delta", "signature": "sig-" + fmt.Sprint(i)}}))
		default:
			ev = append(ev, sseEventText("content_block_start", obj{"type": "content_block_start", "index": i,
				"content_block": obj{"type": "text", "text": ""}}))
			for _, p := range pieces(b.Text, 10) {
				ev = append(ev, sseEventText("content_block_delta", obj{"type": "content_block_delta", "index": i,
					"delta": obj{"type": "text_delta", "text": p}}))
			}
		}
		ev = append(ev, sseEventText("content_block_stop", obj{"type": "content_block_stop", "index": i}))
	}
	ev = append(ev,
		sseEventText("message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": stop}, "usage": obj{"output_tokens": 20}}),
		sseEventText("message_stop", obj{"type": "message_stop"}))
	return ev
}

// openaiEvents builds a Chat Completions stream shaped like the recorded ones.
func openaiEvents(blocks ...gen) []string {
	chunk := func(delta obj, finish any) string {
		return sseEventText("", obj{"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": "gpt-test",
			"choices": []any{obj{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	ev := []string{chunk(obj{"role": "assistant", "content": ""}, nil)}
	finish := "stop"
	tool := 0
	for _, b := range blocks {
		switch {
		case b.ToolName != "":
			finish = "tool_calls"
			ev = append(ev, chunk(obj{"tool_calls": []any{obj{"index": tool, "id": b.ToolID, "type": "function",
				"function": obj{"name": b.ToolName, "arguments": ""}}}}, nil))
			for _, p := range pieces(b.ToolArgs, 7) {
				ev = append(ev, chunk(obj{"tool_calls": []any{obj{"index": tool, "function": obj{"arguments": p}}}}, nil))
			}
			tool++
		case b.Thinking != "":
			for _, p := range pieces(b.Thinking, 10) {
				ev = append(ev, chunk(obj{"reasoning_content": p}, nil))
			}
		default:
			for _, p := range pieces(b.Text, 10) {
				ev = append(ev, chunk(obj{"content": p}, nil))
			}
		}
	}
	ev = append(ev, chunk(obj{}, finish),
		sseEventText("", obj{"id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": []any{},
			"usage": obj{"prompt_tokens": 120, "completion_tokens": 30, "prompt_tokens_details": obj{"cached_tokens": 20}}}),
		"data: [DONE]\n\n")
	return ev
}
