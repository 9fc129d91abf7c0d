package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// rpcOut is one line the server wrote: a response or an event.
type rpcOut struct {
	Type    string          `json:"type"`
	ID      json.RawMessage `json:"id"`
	Command string          `json:"command"`
	Success bool            `json:"success"`
	Data    json.RawMessage `json:"data"`
	Error   string          `json:"error"`
	Stop    string          `json:"stop"`
	Delta   string          `json:"delta"`
	Message string          `json:"message"`
	Summary string          `json:"summary"`
	Level   string          `json:"level"`
	Ext     string          `json:"extension"`
	Content []wireBlock     `json:"content"`
	Raw     string          `json:"-"`
}

// rpcPipe is a server running in-process over pipes, and its client end.
type rpcPipe struct {
	t      *testing.T
	srv    *rpcServer
	in     *io.PipeWriter
	outR   *io.PipeReader
	cancel context.CancelFunc
	served chan error // Serve's result
	lines  <-chan rpcOut
	nextID int
}

// startRPC serves agent over pipes; edit adjusts the config first.
func startRPC(t *testing.T, agent *Agent, edit func(*rpcConfig)) *rpcPipe {
	t.Helper()
	cfg := rpcConfig{Agent: agent, Provider: "anthropic", Cwd: "/work/project", Log: t.Logf}
	if edit != nil {
		edit(&cfg)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	stop := make(chan struct{})
	p := &rpcPipe{t: t, srv: newRPCServer(cfg, inR, outW), in: inW, outR: outR, cancel: cancel, served: make(chan error, 1), lines: queueLines(outR, stop)}
	// Owned by the test; ends when Serve returns.
	go func() {
		err := p.srv.Serve(ctx)
		outW.Close()
		inR.Close()
		p.served <- err
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		select {
		case <-p.served:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
		close(stop)
	})
	return p
}

// queueLines passes r's lines on as rpcOut, in order, holding those the
// test has not read yet however many: the server never waits on the test.
// (A channel buffered for the longest test held 65,536 of them, 16 MB
// zeroed for every server started.) The channel closes once r has ended
// and all is read; closing stop ends both goroutines sooner.
func queueLines(r io.Reader, stop <-chan struct{}) <-chan rpcOut {
	read := make(chan rpcOut)
	// Owned by the caller; ends when r ends or stop closes.
	go func() {
		defer close(read)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var o rpcOut
			if err := json.Unmarshal(sc.Bytes(), &o); err != nil || o.Type == "" {
				o = rpcOut{Type: "BAD LINE"}
			}
			o.Raw = sc.Text()
			select {
			case read <- o:
			case <-stop:
				return
			}
		}
	}()
	lines := make(chan rpcOut)
	// Owned by the caller; ends when all read is passed on, or stop closes.
	go func() {
		defer close(lines)
		var held []rpcOut
		for in := read; in != nil || len(held) > 0; {
			var out chan rpcOut
			var next rpcOut
			if len(held) > 0 {
				out, next = lines, held[0]
			}
			select {
			case o, ok := <-in:
				if !ok {
					in = nil
					continue
				}
				held = append(held, o)
			case out <- next:
				held = held[1:]
			case <-stop:
				return
			}
		}
	}()
	return lines
}

// send writes one raw line.
func (p *rpcPipe) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("send %s: %v", line, err)
	}
}

// cmd sends a command with a fresh id and returns the id.
func (p *rpcPipe) cmd(typ string, fields ...any) string {
	p.t.Helper()
	p.nextID++
	id := fmt.Sprintf("c%d", p.nextID)
	m := obj{"id": id, "type": typ}
	for i := 0; i+1 < len(fields); i += 2 {
		m[fields[i].(string)] = fields[i+1]
	}
	b, _ := json.Marshal(m)
	p.send(string(b))
	return id
}

// next returns the next line, failing after a deadline.
func (p *rpcPipe) next() rpcOut {
	p.t.Helper()
	select {
	case o, ok := <-p.lines:
		if !ok {
			p.t.Fatal("server output ended")
		}
		if o.Type == "BAD LINE" {
			p.t.Fatalf("server wrote a line that is not a JSON object with a type: %q", o.Raw)
		}
		return o
	case <-time.After(time.Minute): // generous: one test waits on 64 MiB, under load or -race
		p.t.Fatal("timed out waiting for a line from the server")
	}
	return rpcOut{}
}

// until reads lines up to and including the first that matches.
func (p *rpcPipe) until(match func(rpcOut) bool) []rpcOut {
	p.t.Helper()
	var got []rpcOut
	for {
		o := p.next()
		got = append(got, o)
		if match(o) {
			return got
		}
	}
}

func isType(typ string) func(rpcOut) bool { return func(o rpcOut) bool { return o.Type == typ } }

// response reads up to the response to id and returns it.
func (p *rpcPipe) response(id string) rpcOut {
	p.t.Helper()
	lines := p.until(func(o rpcOut) bool { return o.Type == "response" && string(o.ID) == `"`+id+`"` })
	return lines[len(lines)-1]
}

// call sends a command and returns its response, which must succeed.
func (p *rpcPipe) call(typ string, fields ...any) rpcOut {
	p.t.Helper()
	r := p.response(p.cmd(typ, fields...))
	if !r.Success {
		p.t.Fatalf("%s failed: %s", typ, r.Raw)
	}
	return r
}

func decodeData[T any](t *testing.T, r rpcOut) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.Data, &v); err != nil {
		t.Fatalf("data of %s: %v", r.Raw, err)
	}
	return v
}

// collect sends a command and reads until its response and n dones have
// come, in whatever order; it returns the response and the events.
func (p *rpcPipe) collect(n int, typ string, fields ...any) (rpcOut, []rpcOut) {
	p.t.Helper()
	id := p.cmd(typ, fields...)
	var resp rpcOut
	var events []rpcOut
	for resp.Type == "" || n > 0 {
		o := p.next()
		switch {
		case o.Type == "response" && string(o.ID) == `"`+id+`"`:
			resp = o
		case o.Type == "done":
			n--
			fallthrough
		default:
			events = append(events, o)
		}
	}
	return resp, events
}

// eventTypes lists event types, collapsing runs of deltas, with
// turn_end's stop; responses are left out.
func eventTypes(lines []rpcOut) string {
	var out []string
	for _, o := range lines {
		t := o.Type
		if t == "response" {
			continue
		}
		if t == "turn_end" {
			t += ":" + o.Stop
		}
		if n := len(out); n > 0 && out[n-1] == t && (strings.HasSuffix(t, "_delta") || t == "tool_use_args") {
			continue
		}
		out = append(out, t)
	}
	return strings.Join(out, " ")
}

func slowStep(text string) replayStep {
	return replayStep{Events: anthropicEvents(gen{Text: text}), HangAfter: 3}
}

func textStep(text string) replayStep {
	return replayStep{Events: anthropicEvents(gen{Text: text})}
}

func TestRPCEveryCommandAnswersWithItsID(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("hi"))
	p := startRPC(t, newTestAgent(t, srv), nil)

	hello := decodeData[rpcHelloData](t, p.call("hello"))
	if hello != (rpcHelloData{ProtocolVersion: 1, Version: version, Provider: "anthropic", Model: "claude-sonnet-4-5"}) {
		t.Errorf("hello = %+v", hello)
	}
	if pong := decodeData[rpcPongData](t, p.call("ping")); !pong.Pong {
		t.Error("ping did not pong")
	}
	models := decodeData[rpcModelsData](t, p.call("get_models")).Models
	if len(models) == 0 || models[0].Provider != "anthropic" || models[0].ContextWindow == 0 {
		t.Errorf("models = %+v", models)
	}
	if r := p.call("set_model", "model", "claude-opus-4-5"); r.Data != nil {
		t.Errorf("set_model data = %s", r.Data)
	}
	st := decodeData[rpcStateData](t, p.call("get_state"))
	if st.Model != "claude-opus-4-5" || st.Provider != "anthropic" || st.Cwd != "/work/project" || st.Busy || st.MessageCount != 0 {
		t.Errorf("state = %+v", st)
	}
	if ab := decodeData[rpcAbortData](t, p.call("abort")); ab.Aborted || ab.Dropped != 0 {
		t.Errorf("idle abort = %+v", ab)
	}
	p.call("clear")
	if msgs := decodeData[rpcMessagesData](t, p.call("get_messages")); msgs.Messages == nil || len(msgs.Messages) != 0 {
		t.Errorf("messages = %+v", msgs.Messages)
	}
	r := p.response(p.cmd("reload_extensions"))
	if r.Success || r.Command != "reload_extensions" || !strings.Contains(r.Error, "no extension host") {
		t.Errorf("reload without a host = %s", r.Raw)
	}
	// Numeric ids are echoed as they came; a missing id is left out.
	p.send(`{"id":42,"type":"ping"}`)
	if r := p.next(); string(r.ID) != "42" || !r.Success {
		t.Errorf("numeric id reply = %s", r.Raw)
	}
	p.send(`{"type":"ping"}`)
	if r := p.next(); r.Raw != `{"type":"response","command":"ping","success":true,"data":{"pong":true}}` {
		t.Errorf("id-less reply = %s", r.Raw)
	}
}

func TestRPCPromptToolLoopEventOrderAndMessages(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(gen{Text: "Let me look."}, gen{ToolID: "t1", ToolName: "echo", ToolArgs: `{"x":1}`})},
		textStep("Done."))
	p := startRPC(t, newTestAgent(t, srv, &funcTool{name: "echo"}), nil)
	id := p.cmd("prompt", "message", "go")
	r := p.next()
	if r.Type != "response" || string(r.ID) != `"`+id+`"` || r.Command != "prompt" || string(r.Data) != `{"started":true}` {
		t.Fatalf("the prompt's response must come first and at once: %s", r.Raw)
	}
	events := p.until(isType("done"))
	want := "user_message turn_start assistant_start text_delta tool_use_start tool_use_args tool_use_end assistant_message usage " +
		"tool_call tool_progress tool_result turn_end:tool_use turn_start assistant_start text_delta assistant_message usage turn_end:end_turn done"
	if got := eventTypes(events); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	for _, e := range events {
		if string(e.ID) == `"`+id+`"` {
			t.Errorf("events do not carry the command's id: %s", e.Raw)
		}
	}
	msgs := decodeData[rpcMessagesData](t, p.call("get_messages")).Messages
	b, _ := json.Marshal(msgs)
	var shape []string
	for _, m := range msgs {
		var blocks []string
		for _, c := range m.Content {
			blocks = append(blocks, string(c.Type))
		}
		shape = append(shape, string(m.Role)+"["+strings.Join(blocks, ",")+"]")
	}
	if got := strings.Join(shape, " "); got != "user[text] assistant[text,tool_call] user[tool_result] assistant[text]" {
		t.Fatalf("transcript = %s", got)
	}
	for _, want := range []string{`"args":{"x":1}`, `"call_id":"t1","is_error":false,"content":[{"type":"text","text":"ran {\"x\":1}"}]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("messages lack %s: %s", want, b)
		}
	}
	st := decodeData[rpcStateData](t, p.call("get_state"))
	if st.Busy || st.MessageCount != 4 || st.Usage.Input != 200 || st.Usage.Output != 40 || st.Usage.CostUSD <= 0 {
		t.Errorf("state after the loop = %+v", st)
	}
}

func TestRPCPromptWithImages(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("a cat"))
	p := startRPC(t, newTestAgent(t, srv), nil)
	data := base64.StdEncoding.EncodeToString([]byte("\x89PNG fake image bytes"))
	p.call("prompt", "message", "what is it?", "images", []any{obj{"mime_type": "image/png", "data": data}})
	events := p.until(isType("done"))
	if got := events[0].Raw; !strings.Contains(got, `{"type":"image","mime_type":"image/png","bytes":21},{"type":"text","text":"what is it?"}`) {
		t.Errorf("user_message = %s", got)
	}
	if body := string(srv.Requests()[0].Body); !strings.Contains(body, data) {
		t.Errorf("the provider did not get the image: %s", truncate(body, 400))
	}
}

func TestRPCSecondPromptQueuesBehindASlowFirst(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, slowStep("slow answer that never ends"), textStep("second answer"), textStep("third answer"))
	p := startRPC(t, newTestAgent(t, srv), nil)
	if r := p.call("prompt", "message", "one"); string(r.Data) != `{"started":true}` {
		t.Fatalf("first = %s", r.Raw)
	}
	p.until(isType("text_delta"))
	if r := p.call("prompt", "message", "two"); string(r.Data) != `{"queued":true,"position":1}` {
		t.Fatalf("second = %s", r.Raw)
	}
	if r := p.call("prompt", "message", "three"); string(r.Data) != `{"queued":true,"position":2}` {
		t.Fatalf("third = %s", r.Raw)
	}
	if st := decodeData[rpcStateData](t, p.call("get_state")); !st.Busy || st.Queued != 2 {
		t.Errorf("state while queued = %+v", st)
	}
	_, all := p.collect(3, "abort")
	got := eventTypes(all)
	want := "usage turn_end:aborted done " +
		"user_message turn_start assistant_start text_delta assistant_message usage turn_end:end_turn done " +
		"user_message turn_start assistant_start text_delta assistant_message usage turn_end:end_turn done"
	if got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("provider requests = %d", n)
	}
	// The queued prompts ran in order on the transcript the abort left.
	var roles []string
	for _, m := range decodeData[rpcMessagesData](t, p.call("get_messages")).Messages {
		roles = append(roles, string(m.Role)+":"+Message{Content: wireToBlocks(m.Content)}.Text())
	}
	if got := strings.Join(roles, " | "); got != "user:one | assistant:slow answe | user:two | assistant:second answer | user:three | assistant:third answer" {
		t.Errorf("transcript = %s", got)
	}
}

// wireToBlocks reads back the text of wire blocks, for assertions.
func wireToBlocks(ws []wireBlock) []Block {
	var out []Block
	for _, w := range ws {
		if w.Text != nil {
			out = append(out, Block{Type: w.Type, Text: *w.Text})
		}
	}
	return out
}

func TestRPCAbortEndsASlowStreamPromptly(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, slowStep("partial words then nothing"), textStep("after"))
	p := startRPC(t, newTestAgent(t, srv), nil)
	p.call("prompt", "message", "hang")
	p.until(isType("text_delta"))
	ab, tail := p.collect(1, "abort")
	if d := decodeData[rpcAbortData](t, ab); !d.Aborted {
		t.Errorf("abort = %s", ab.Raw)
	}
	if got := eventTypes(tail); !strings.HasSuffix(got, "turn_end:aborted done") || strings.Contains(got, "error") {
		t.Fatalf("after abort: %s", got)
	}
	if st := decodeData[rpcStateData](t, p.call("get_state")); st.Busy {
		t.Error("busy after done")
	}
	// The transcript stays one the provider accepts: the next prompt goes out
	// with alternating roles and the partial answer kept.
	p.call("prompt", "message", "again")
	if got := eventTypes(p.until(isType("done"))); strings.Contains(got, "error") {
		t.Fatalf("next prompt: %s", got)
	}
	var body anthRequest
	json.Unmarshal(srv.Requests()[1].Body, &body)
	var roles []string
	for _, m := range body.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "user,assistant,user" {
		t.Errorf("second request roles = %v", roles)
	}
}

func TestRPCAbortAllDropsTheQueue(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, slowStep("never finishes"), textStep("must not run"))
	p := startRPC(t, newTestAgent(t, srv), nil)
	p.call("prompt", "message", "one")
	p.until(isType("text_delta"))
	p.call("prompt", "message", "two")
	p.call("compact")
	r, all := p.collect(3, "abort", "all", true)
	if d := decodeData[rpcAbortData](t, r); !d.Aborted || d.Dropped != 2 {
		t.Errorf("abort all = %s", r.Raw)
	}
	if got := eventTypes(all); got != "usage turn_end:aborted done done done" {
		t.Errorf("events = %s", got)
	}
	if st := decodeData[rpcStateData](t, p.call("get_state")); st.Busy || st.Queued != 0 || st.MessageCount != 2 {
		t.Errorf("state = %+v", st)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("dropped prompts reached the provider: %d requests", n)
	}
}

// Prompts dropped by abort all wait in the queue only for their done: a
// prompt sent right after is next, whatever the worker has reached.
func TestRPCQueuePositionSkipsDroppedPrompts(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	s := newRPCServer(rpcConfig{Agent: newTestAgent(t, startReplay(t))}, strings.NewReader(""), &out)
	ctx := context.Background()
	for _, msg := range []string{"running", "queued 1", "queued 2"} {
		s.enqueue(ctx, rpcRequest{Type: "prompt"}, &rpcJob{kind: "prompt", text: msg})
	}
	s.abort(true)
	s.enqueue(ctx, rpcRequest{Type: "prompt"}, &rpcJob{kind: "prompt", text: "after the abort"})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if got, want := lines[len(lines)-1], `"data":{"queued":true,"position":1}`; !strings.Contains(got, want) {
		t.Errorf("answer = %s, want %s", got, want)
	}
	if st := s.state(); !st.Busy || st.Queued != 1 {
		t.Errorf("state = %+v, want busy with 1 queued", st)
	}
}

func TestRPCClearAndSetModelRefuseWhileBusy(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, slowStep("slow"), textStep("ok"))
	p := startRPC(t, newTestAgent(t, srv), nil)
	p.call("prompt", "message", "one")
	for _, c := range []struct{ typ, field, value string }{{"clear", "", ""}, {"set_model", "model", "claude-opus-4-5"}} {
		r := p.response(p.cmd(c.typ, c.field, c.value))
		if r.Success || !strings.Contains(r.Error, c.typ+": agent is busy") || !strings.Contains(r.Error, "send abort or wait for done") {
			t.Errorf("%s while busy = %s", c.typ, r.Raw)
		}
	}
	p.collect(1, "abort")
	p.call("clear")
	p.call("set_model", "model", "claude-opus-4-5")
	st := decodeData[rpcStateData](t, p.call("get_state"))
	if st.MessageCount != 0 || st.Model != "claude-opus-4-5" {
		t.Errorf("state = %+v", st)
	}
}

// A client that acts on done at once must find the server idle.
func TestRPCDoneMeansIdle(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("quick"))
	p := startRPC(t, newTestAgent(t, srv), nil)
	for i := 0; i < 20; i++ {
		p.call("prompt", "message", "hi")
		p.until(isType("done"))
		p.call("clear")
	}
}

func TestRPCCompactEndsWithExactlyOneDone(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("a1"), textStep("a2"), textStep("a3"), textStep("the summary"))
	p := startRPC(t, newTestAgent(t, srv), nil)
	r := p.call("compact")
	if string(r.Data) != `{"started":true}` {
		t.Errorf("compact response = %s", r.Raw)
	}
	tail := p.until(isType("done"))
	if got := eventTypes(tail); got != "error done" || !strings.Contains(tail[0].Message, "nothing to compact") {
		t.Errorf("compact of nothing: %s / %s", got, tail[0].Raw)
	}
	for _, m := range []string{"p1", "p2", "p3"} {
		p.call("prompt", "message", m)
		p.until(isType("done"))
	}
	p.call("compact")
	tail = p.until(isType("done"))
	if got := eventTypes(tail); got != "usage compact_done done" || tail[1].Summary != "the summary" {
		t.Errorf("compact: %s", got)
	}
	if st := decodeData[rpcStateData](t, p.call("get_state")); st.MessageCount != 5 {
		t.Errorf("messages after compaction = %d, want summary + 2 prompts with answers", st.MessageCount)
	}
}

func TestRPCAuth(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("hi"))
	t.Run("absent", func(t *testing.T) {
		p := startRPC(t, newTestAgent(t, srv), nil)
		p.call("ping")
		p.call("hello", "token", "anything")
	})
	t.Run("required before anything runs", func(t *testing.T) {
		p := startRPC(t, newTestAgent(t, srv), func(c *rpcConfig) { c.Token = "s3cret" })
		p.srv.Notify(rpcNote{Extension: "guard", Level: "info", Message: "loaded"})
		for _, typ := range []string{"prompt", "ping", "get_state", "clear"} {
			r := p.response(p.cmd(typ, "message", "x"))
			if r.Success || r.Error != "auth required" || r.Command != typ {
				t.Errorf("%s before hello = %s", typ, r.Raw)
			}
		}
		hello := p.call("hello", "token", "s3cret")
		if decodeData[rpcHelloData](t, hello).ProtocolVersion != 1 {
			t.Errorf("hello = %s", hello.Raw)
		}
		if note := p.next(); note.Raw != `{"type":"ext_notify","extension":"guard","level":"info","message":"loaded"}` {
			t.Errorf("held note = %s", note.Raw)
		}
		p.call("ping")
		if n := len(srv.Requests()); n != 0 {
			t.Errorf("a prompt before hello reached the provider")
		}
	})
	t.Run("a malformed hello with the right token is not a wrong token", func(t *testing.T) {
		p := startRPC(t, newTestAgent(t, srv), func(c *rpcConfig) { c.Token = "s3cret" })
		p.send(`{"id":true,"type":"hello","token":"s3cret"}`)
		if r := p.next(); r.Success || !strings.Contains(r.Error, `"id"`) {
			t.Errorf("reply = %s", r.Raw)
		}
		p.call("hello", "token", "s3cret")
		p.call("ping")
	})
	for _, tc := range []struct{ name, line, want string }{
		{"wrong", `{"id":"h","type":"hello","token":"guess"}`, "invalid token"},
		{"missing", `{"id":"h","type":"hello"}`, `hello needs "token"`},
		{"not a string", `{"id":"h","type":"hello","token":123}`, `field "token" must be a string`},
		// encoding/json matches keys case-insensitively and lets the last
		// one win: none of these may open the door.
		{"another case", `{"id":"h","type":"hello","TOKEN":"s3cret"}`, `field "TOKEN": field names are case-sensitive`},
		{"a later case variant", `{"id":"h","type":"hello","token":"guess","Token":"s3cret"}`, `field "Token": field names are case-sensitive`},
		{"repeated", `{"id":"h","type":"hello","token":"guess","token":"s3cret"}`, `field "token" appears more than once`},
		{"right then repeated", `{"id":"h","type":"hello","token":"s3cret","token":"guess"}`, `field "token" appears more than once`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startRPC(t, newTestAgent(t, srv), func(c *rpcConfig) { c.Token = "s3cret" })
			p.send(tc.line)
			if r := p.next(); r.Success || !strings.Contains(r.Error, tc.want) || strings.Contains(r.Raw, "s3cret") {
				t.Errorf("reply = %s", r.Raw)
			}
			select {
			case err := <-p.served:
				p.served <- err
				if !errors.Is(err, errRPCAuth) {
					t.Errorf("Serve = %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the server kept running after a bad token")
			}
		})
	}
}

func TestRPCTokenCompare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		got, want string
		ok        bool
	}{{"abc", "abc", true}, {"abd", "abc", false}, {"ab", "abc", false}, {"", "abc", false}, {"abcd", "abc", false}} {
		if tokenMatches(tc.got, tc.want) != tc.ok {
			t.Errorf("tokenMatches(%q, %q) != %v", tc.got, tc.want, tc.ok)
		}
	}
}

func TestRPCBadInputNeverStopsTheServer(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("hi"))
	p := startRPC(t, newTestAgent(t, srv), nil)
	tests := []struct {
		line, want, id, command string
	}{
		{`{"type":"ping"`, "invalid JSON: ", "", ""},
		{`not json`, "invalid JSON: invalid character 'o'", "", ""},
		{`[1,2]`, "want a JSON object, got array", "", ""},
		{`"ping"`, "want a JSON object, got string", "", ""},
		{`null`, "want a JSON object, got null", "", ""},
		{`{"id":"p","type":"ping","type":"clear"}`, `field "type" appears more than once`, `"p"`, "ping"},
		{`{"id":"q","Type":"clear"}`, `field "Type": field names are case-sensitive; write "type"`, `"q"`, ""},
		{`{"id":"r","type":"prompt","Message":"x"}`, `field "Message": field names are case-sensitive`, `"r"`, "prompt"},
		{`{"id":"a"}`, `missing "type"`, `"a"`, ""},
		{`{"id":"b","type":"launch"}`, `unknown command type "launch"; known: hello, prompt`, `"b"`, "launch"},
		{`{"id":"c","type":7}`, `field "type" must be a string, not number`, `"c"`, ""},
		{`{"id":"d","type":"prompt","message":5}`, `field "message" must be a string, not number`, `"d"`, "prompt"},
		{`{"id":"e","type":"prompt","message":"x","images":"cat.png"}`, `field "images" must be an array, not string`, `"e"`, "prompt"},
		{`{"id":"f","type":"prompt","message":"x","images":[{"mime_type":1}]}`, `field "images.mime_type" must be a string`, `"f"`, "prompt"},
		{`{"id":"g","type":"prompt","message":"x","images":[{"mime_type":"text/plain","data":"aGk="}]}`, `images[0]: "mime_type" "text/plain" is not one of image/png`, `"g"`, "prompt"},
		{`{"id":"h","type":"prompt","message":"x","images":[{"mime_type":"image/png","data":"%%%"}]}`, `images[0]: "data" is not base64`, `"h"`, "prompt"},
		{`{"id":"i","type":"prompt","message":"x","images":[{"mime_type":"image/png"}]}`, `images[0]: "data" is empty`, `"i"`, "prompt"},
		{`{"id":"j","type":"prompt"}`, `prompt needs "message"`, `"j"`, "prompt"},
		{`{"id":"k","type":"abort","all":"yes"}`, `field "all" must be true or false, not string`, `"k"`, "abort"},
		{`{"id":"l","type":"set_model"}`, `set_model needs "model"`, `"l"`, "set_model"},
		{`{"id":"m","type":"set_model","model":["x"]}`, `field "model" must be a string, not array`, `"m"`, "set_model"},
		{`{"id":{"x":1},"type":"ping"}`, `field "id" must be a string or a number`, "", "ping"},
		{`{"id":"n","type":"hello","token":false}`, `field "token" must be a string, not bool`, `"n"`, "hello"},
		{`{"id":"o","type":"prompt","message":"x","images":[7]}`, `field "images" must be an object, not number`, `"o"`, "prompt"},
	}
	for _, tt := range tests {
		p.send(tt.line)
		r := p.next()
		if r.Type != "response" || r.Success || !strings.Contains(r.Error, tt.want) || string(r.ID) != tt.id || r.Command != tt.command {
			t.Errorf("%s\n got %s\nwant error containing %q, id %s, command %q", tt.line, r.Raw, tt.want, tt.id, tt.command)
		}
	}
	// A field another command uses is ignored, whatever its type.
	p.send(`{"id":"ign","type":"ping","images":5,"all":"x","message":{}}`)
	if r := p.next(); string(r.ID) != `"ign"` || !r.Success {
		t.Errorf("ping with stray fields = %s", r.Raw)
	}
	// Blank lines are skipped; \r before \n is whitespace; U+2028 inside a
	// string is not a line break.
	p.send("")
	p.send("   \t")
	p.send(`{"id":"crlf","type":"ping"}` + "\r")
	if r := p.next(); string(r.ID) != `"crlf"` || !r.Success {
		t.Errorf("CRLF ping = %s", r.Raw)
	}
	p.call("prompt", "message", "line\u2028separator\u2029para")
	if ev := p.next(); ev.Type != "user_message" || !strings.Contains(ev.Raw, `line\u2028separator\u2029para`) {
		t.Errorf("user_message = %s", ev.Raw)
	}
	p.until(isType("done"))
	p.call("ping")
}

func TestRPCOversizeLineIsDroppedAndTheNextServed(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	srv := startReplay(t, textStep("hi"))
	p := startRPC(t, newTestAgent(t, srv), nil)
	go func() { // owned by the test; ends when the lines are written
		// Written in pieces: building the line first would copy 64 MiB
		// three times over.
		io.WriteString(p.in, `{"id":"big","type":"prompt","message":"`)
		piece := bytes.Repeat([]byte("a"), 1<<20)
		for range maxRPCLine / len(piece) {
			p.in.Write(piece)
		}
		io.WriteString(p.in, `"}`+"\n"+`{"id":"after","type":"ping"}`+"\n")
	}()
	r := p.next()
	if r.Success || r.ID != nil || !strings.Contains(r.Error, "longer than 64 MiB: dropped") {
		t.Errorf("oversize reply = %s", r.Raw)
	}
	if r := p.next(); string(r.ID) != `"after"` || !r.Success {
		t.Errorf("next reply = %s", r.Raw)
	}
	if len(srv.Requests()) != 0 {
		t.Error("the oversize prompt ran")
	}
}

func TestRPCStdinEOFFinishesRunningAndQueuedWork(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("first"), textStep("second"))
	p := startRPC(t, newTestAgent(t, srv), nil)
	p.send(`{"type":"prompt","message":"one"}`)
	p.send(`{"type":"prompt","message":"two"}`)
	p.in.Close()
	var dones, texts int
	for o := range p.lines {
		switch o.Type {
		case "done":
			dones++
		case "assistant_message":
			texts++
		}
	}
	if dones != 2 || texts != 2 {
		t.Errorf("dones %d, answers %d", dones, texts)
	}
	if err := <-p.served; err != nil {
		t.Errorf("Serve = %v", err)
	}
	p.served <- nil
}

func TestRPCCancelAbortsEverythingAndGivesEachItsDone(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, slowStep("hanging"))
	p := startRPC(t, newTestAgent(t, srv), nil)
	p.call("prompt", "message", "one")
	p.until(isType("text_delta"))
	p.call("prompt", "message", "two")
	p.cancel()
	var rest []rpcOut
	for o := range p.lines {
		rest = append(rest, o)
	}
	if got := eventTypes(rest); !strings.HasSuffix(got, "turn_end:aborted done done") {
		t.Errorf("events = %s", got)
	}
	if err := <-p.served; !errors.Is(err, context.Canceled) {
		t.Errorf("Serve = %v", err)
	}
	p.served <- nil
}

func TestRPCClientGoneStopsTheServer(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, slowStep("hanging"))
	p := startRPC(t, newTestAgent(t, srv), nil)
	p.call("prompt", "message", "one")
	p.until(isType("text_delta"))
	p.outR.CloseWithError(errors.New("client went away"))
	p.cmd("ping") // the server learns on its next write
	select {
	case err := <-p.served:
		p.served <- err
		if err == nil || !strings.Contains(err.Error(), "write to client: client went away") {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server kept running for a client that is gone")
	}
}

func TestRPCReloadExtensions(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("hi"))
	var calls int
	var mu sync.Mutex
	p := startRPC(t, newTestAgent(t, srv), func(c *rpcConfig) {
		c.ReloadExtensions = func(ctx context.Context) (rpcReloadStats, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls == 2 {
				return rpcReloadStats{}, errors.New(`extension "broken": no hello within 5s`)
			}
			return rpcReloadStats{Stopped: 2, Loaded: 3, Ready: 2}, nil
		}
	})
	r := p.call("reload_extensions")
	if string(r.Data) != `{"stopped":2,"loaded":3,"ready":2,"errors":[]}` {
		t.Errorf("reload = %s", r.Raw)
	}
	r = p.response(p.cmd("reload_extensions"))
	if r.Success || r.Error != `reload extensions: extension "broken": no hello within 5s` {
		t.Errorf("failed reload = %s", r.Raw)
	}
}

// A slow reload does not hold up other commands.
func TestRPCReloadDoesNotBlockTheCommandLoop(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("hi"))
	release := make(chan struct{})
	p := startRPC(t, newTestAgent(t, srv), func(c *rpcConfig) {
		c.ReloadExtensions = func(ctx context.Context) (rpcReloadStats, error) {
			<-release
			return rpcReloadStats{Loaded: 1, Ready: 1, Errors: []string{"x: bad manifest"}}, nil
		}
	})
	id := p.cmd("reload_extensions")
	p.call("ping")
	close(release)
	if r := p.response(id); string(r.Data) != `{"stopped":0,"loaded":1,"ready":1,"errors":["x: bad manifest"]}` {
		t.Errorf("reload = %s", r.Raw)
	}
}

func TestRPCObserveAndNotify(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("hi"))
	var seen eventLog
	p := startRPC(t, newTestAgent(t, srv), func(c *rpcConfig) { c.Observe = seen.sink })
	p.srv.Notify(rpcNote{Extension: "lint", Level: "warn", Message: "slow"})
	p.srv.Notify(rpcNote{Extension: "lint", Clear: true})
	if n := p.next(); n.Raw != `{"type":"ext_notify","extension":"lint","level":"warn","message":"slow"}` {
		t.Errorf("note = %s", n.Raw)
	}
	p.call("prompt", "message", "go")
	p.until(isType("done"))
	if got := seen.types(); got != "user_message turn_start assistant_start text_delta assistant_message usage turn_end:end_turn done" {
		t.Errorf("observed = %s", got)
	}
}

// Concurrent writers (the worker, the command loop, extension notes) never
// interleave lines.
func TestRPCLinesNeverInterleave(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: strings.Repeat("streamed text ", 200)})})
	p := startRPC(t, newTestAgent(t, srv), nil)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owned by the test; ends after 200 notes
		defer wg.Done()
		for i := 0; i < 200; i++ {
			p.srv.Notify(rpcNote{Extension: "x", Level: "info", Message: strings.Repeat("n", 1000)})
		}
	}()
	p.cmd("prompt", "message", "go")
	for i := 0; i < 50; i++ {
		p.cmd("ping")
	}
	p.until(isType("done")) // next() fails on any line that is not one JSON object
	wg.Wait()
}

func TestRPCServeLeavesNoGoroutines(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	before := runtime.NumGoroutine()
	inR, inW := io.Pipe()
	var out bytes.Buffer
	s := newRPCServer(rpcConfig{Agent: NewAgent(nil, "m", nil), Provider: "anthropic"}, inR, &out)
	done := make(chan error)
	go func() { done <- s.Serve(context.Background()) }()
	io.WriteString(inW, `{"type":"ping"}`+"\n")
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	if out.String() != `{"type":"response","command":"ping","success":true,"data":{"pong":true}}`+"\n" {
		t.Errorf("out = %q", out.String())
	}
}

func FuzzRPCDecode(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","type":"prompt","message":"fix it","images":[{"mime_type":"image/png","data":"aGk="}]}`,
		`{"type":"hello","token":"t"}`, `{"type":"abort","all":true}`, `{"id":7,"type":"set_model","model":"m"}`,
		`{"type":"ping"}`, `[]`, `{"type":5}`, `{"id":{},"type":"ping"}`, `{"images":[1]}`, `null`, `{"type":"prompt","message":"\u2028"}`,
		`{"type":"hello","token":"a","Token":"b"}`, `{"type":"hello","\u0074oken":"a"}`, `{"type":"hello","token":"a","token":"b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		req, err := decodeRPCRequest(line)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if !slices.Contains(rpcCommands, req.Type) {
			t.Fatalf("accepted unknown type %q", req.Type)
		}
		if req.Type == "prompt" && req.Message == "" && len(req.Images) == 0 {
			t.Fatal("accepted an empty prompt")
		}
		if len(req.ID) > 0 && !json.Valid(req.ID) {
			t.Fatalf("id %q is not JSON", req.ID)
		}
		// An accepted hello has one plain "token": encoding/json, which
		// folds case and lets the last key win, must read the same one.
		var loose struct{ Token string }
		if req.Type == "hello" && (json.Unmarshal(line, &loose) != nil || loose.Token != req.Token) {
			t.Fatalf("token %q, but encoding/json reads %q", req.Token, loose.Token)
		}
		// The reply to an accepted request is one line of JSON.
		var buf bytes.Buffer
		newEventWriter(&buf).Write(rpcResponse{Type: "response", ID: req.ID, Command: req.Type, Success: true})
		if bytes.Count(buf.Bytes(), []byte("\n")) != 1 || !json.Valid(buf.Bytes()) {
			t.Fatalf("reply %q", buf.String())
		}
	})
}
