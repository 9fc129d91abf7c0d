package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzACPInput is an attacker on zot acp's stdin: the fuzzed bytes are
// the whole input of a connection, served in-process by sessions whose
// model answers at once (no network, no process, no file written but the
// one saved session, once). Whatever
// comes in, Serve returns once the input ends, every line zot writes is
// one JSON-RPC object in UTF-8 (and one the ACP schema allows, where the
// schema is installed), every request with a valid id is answered exactly
// once with that id, every line that is not a JSON object gets an error,
// and every session opened is closed, with nothing left running.
//
// paced gives the lines one at a time, each once the requests before it
// are answered or zot waits on the client, so that a session opened by
// one line is there for the next; unpaced, the whole input arrives at
// once and the requests race each other and the end of the input.
func FuzzACPInput(f *testing.F) {
	home := f.TempDir()
	writeACPFuzzSession(f, home)
	for _, seed := range acpFuzzSeeds() {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, stream []byte, paced bool) {
		t.Parallel()
		runACPFuzz(t, home, stream, paced)
	})
}

// acpFuzzSaved is the id of the one saved session in the fuzz home, made
// in "/": what session/load, resume and list find.
const acpFuzzSaved = "saved0001"

// acpFuzzConversation is the saved session's conversation: a prompt with
// an image, thinking, a command and its output, so that session/load has
// each kind of update to replay.
func acpFuzzConversation() []Message {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return []Message{
		{Role: RoleUser, Time: at, Content: []Block{TextBlock("fix the parser"), {Type: BlockImage, MimeType: "image/png", Data: "iVBORw0KGgo="}}},
		{Role: RoleAssistant, Time: at, Content: []Block{{Type: BlockThinking, Text: "look first"}, TextBlock("Looking."),
			{Type: BlockToolCall, ID: "t1", Name: ToolBash, Args: json.RawMessage(`{"command":"ls"}`)}}},
		{Role: RoleUser, Time: at, Content: []Block{{Type: BlockToolResult, CallID: "t1", Content: []Block{TextBlock("parser.go\n")}}}},
		{Role: RoleAssistant, Time: at, Content: []Block{TextBlock("Fixed.")}},
	}
}

func writeACPFuzzSession(f *testing.F, home string) {
	s := NewSession(home, "/", "anthropic", "claude-sonnet-4-5")
	s.Meta.ID = acpFuzzSaved
	for _, m := range acpFuzzConversation() {
		if err := s.Append(m); err != nil {
			f.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
}

func runACPFuzz(t *testing.T, home string, stream []byte, paced bool) {
	// A fuzz worker runs one input at a time, so the process's goroutines
	// are this input's; beside parallel tests the count means nothing.
	worker := flag.Lookup("test.fuzzworker")
	countGoroutines := worker != nil && worker.Value.String() == "true"
	before := runtime.NumGoroutine()

	w := &acpFuzzWiring{closes: map[int]int{}, running: map[int]int{}}
	out := newACPFuzzOutput()
	srv := newACPServer(acpConfig{Home: home, Persist: true, Open: w.open,
		MissingKey: func() (string, string, bool) { return "", "", false }}, out)

	// giveUp closes shortly before the test's deadline, so that a hang is
	// reported with what zot wrote rather than as a bare timeout.
	giveUp := make(chan struct{})
	if d, ok := t.Deadline(); ok {
		timer := time.AfterFunc(time.Until(d)*9/10, func() { close(giveUp) })
		defer timer.Stop()
	}
	var in io.Reader = bytes.NewReader(stream)
	if paced {
		in = &acpPacedInput{rest: stream, srv: srv, out: out, owed: map[string]int{}, answered: map[int64]bool{}, giveUp: giveUp}
	}
	served := make(chan error, 1)
	// Ends when Serve returns: after the input's end, once every request
	// is answered and every session closed.
	go func() { served <- srv.Serve(context.Background(), in) }()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after the input ended: %v", err)
		}
	case <-giveUp:
		t.Fatalf("Serve did not return after its input ended (paced %v); unanswered: %v\nzot wrote:\n%s", paced, unansweredACP(stream, out), out.text())
	}

	w.checkAllClosed(t)
	srv.mu.Lock()
	if n := len(srv.pending); n > 0 {
		t.Errorf("%d requests to the client still pending after Serve returned", n)
	}
	srv.mu.Unlock()
	checkACPOutput(t, stream, out)
	if countGoroutines {
		waitFor(t, "the connection's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	}
}

// acpFuzzWiring opens the fuzzed connection's sessions in place of the
// real wiring: an agent on acpInstantModel, modes, commands, a note and a
// rewind, and nothing else (the MCP servers the client names are not
// started). It counts what it opens, closes and runs.
type acpFuzzWiring struct {
	mu      sync.Mutex
	opens   int         // Open calls, which number the sessions
	closes  map[int]int // by backend opened: how often it was closed
	running map[int]int // by backend: its prompts in flight
	misuse  []string    // a backend prompted once closed, or closed mid-prompt
}

func (w *acpFuzzWiring) open(ctx context.Context, req acpOpenRequest) (*acpBackend, error) {
	w.mu.Lock()
	w.opens++
	n := w.opens
	w.mu.Unlock()
	tools := NewToolRegistry()
	tools.SetSource("builtin", []Tool{&funcTool{name: ToolBash}})
	agent := NewAgent(acpInstantModel{}, "claude-sonnet-4-5", tools)
	// Session ids the input can name: s1, s2 … in the order opened, and
	// a saved session's own.
	meta := SessionMeta{ID: fmt.Sprintf("s%d", n)}
	if req.Path != "" {
		info, err := readSessionInfo(req.Path)
		if err != nil {
			return nil, err
		}
		meta = info.Meta
		if err := agent.SetMessages(acpFuzzConversation(), Usage{}); err != nil {
			return nil, err
		}
	}
	var modeMu sync.Mutex
	mode, heard := "ask", []func(string){}
	b := &acpBackend{Agent: agent, Session: &Session{Meta: meta}, Provider: "anthropic",
		Notes:    []string{"this project is not trusted: its programs did not start"},
		Modes:    []acpMode{{ID: "ask", Name: "Ask"}, {ID: "accept-edits", Name: "Accept edits"}, {ID: "plan", Name: "Plan"}, {ID: "auto", Name: "Auto"}},
		Commands: []acpCommand{{Name: "review", Description: "prompt template (user)", Input: &acpCommandInput{Hint: "what to review"}}},
	}
	b.Mode = func() string { modeMu.Lock(); defer modeMu.Unlock(); return mode }
	b.SetMode = func(id string) error {
		if id == "auto" {
			return errors.New("the managed settings do not allow auto")
		}
		modeMu.Lock()
		mode = id
		hear := slices.Clone(heard)
		modeMu.Unlock()
		for _, f := range hear {
			f(id)
		}
		return nil
	}
	b.HearMode = func(f func(string)) { modeMu.Lock(); heard = append(heard, f); modeMu.Unlock() }
	b.Rewind = func(k int, force bool) (string, error) {
		if k > 2 && !force {
			return "", fmt.Errorf("there are 2 prompts with checkpoints in this session, not %d", k)
		}
		return fmt.Sprintf("Rewound %d prompts.", k), nil
	}
	b.Prompt = func(ctx context.Context, text string, blocks []Block, sink Sink) error {
		w.mu.Lock()
		w.running[n]++
		if w.closes[n] > 0 {
			w.misuse = append(w.misuse, fmt.Sprintf("session backend %d was prompted after it was closed", n))
		}
		w.mu.Unlock()
		defer func() { w.mu.Lock(); w.running[n]--; w.mu.Unlock() }()
		acpFuzzAskEditor(ctx, req, text)
		return agent.Prompt(ctx, text, blocks, sink)
	}
	b.Close = func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.closes[n]++
		if w.running[n] > 0 {
			w.misuse = append(w.misuse, fmt.Sprintf("session backend %d was closed while a prompt ran on it", n))
		}
	}
	w.mu.Lock()
	w.closes[n] = 0 // opened: owed one Close
	w.mu.Unlock()
	return b, nil
}

// acpFuzzAskEditor puts to the editor the questions the prompt's words
// name, as gates, a plan, the editor's files and an MCP server would: the
// requests zot sends, whose answers the input may give (ids 1, 2 … in
// order).
func acpFuzzAskEditor(ctx context.Context, req acpOpenRequest, text string) {
	if strings.Contains(text, "ask") {
		req.Ask(ctx, approvalQuestion{Call: ToolCall{ID: "c1", Name: ToolBash, Args: json.RawMessage(`{"command":"go test ./..."}`)},
			Asks: []GateNote{{By: "rules", Reason: "tests run code"}}, Offer: approvalOffer{Prefixes: []string{"go test"}}})
	}
	if strings.Contains(text, "plan") {
		req.Ask(ctx, approvalQuestion{Call: ToolCall{ID: "p1", Name: ToolPresentPlan, Args: json.RawMessage(`{"plan":"- read\n- fix"}`)},
			Plan: &planQuestion{Text: "1. read\n2. fix", Modes: []string{"accept-edits", "auto"}}})
	}
	if f := req.Files; f != nil && f.Read != nil && strings.Contains(text, "read") {
		f.Read(ctx, "/project/a.go")
	}
	if f := req.Files; f != nil && f.Write != nil && strings.Contains(text, "write") {
		f.Write(ctx, "/project/a.go", "package a\n")
	}
	if strings.Contains(text, "elicit") {
		if req.Elicit.Offers(ElicitForm) {
			req.Elicit.Ask(ctx, Elicitation{Server: "tickets", Mode: ElicitForm, Message: "which project?",
				Fields: []ElicitField{{Name: "project", Type: "string", Required: true}}})
		}
		if req.Elicit.Offers(ElicitURL) {
			req.Elicit.Ask(ctx, Elicitation{Server: "tickets", Mode: ElicitURL, Message: "log in", URL: "https://tickets.example.invalid/login"})
		}
	}
}

func (w *acpFuzzWiring) checkAllClosed(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, n := range w.closes {
		if n != 1 {
			t.Errorf("session backend %d was closed %d times after Serve returned, want once", i, n)
		}
	}
	for i, n := range w.running {
		if n != 0 {
			t.Errorf("%d prompts still running on session backend %d after Serve returned", n, i)
		}
	}
	for _, m := range w.misuse {
		t.Error(m)
	}
}

// acpInstantModel answers at once, without a network. The prompt's words
// choose the answer: "tool" calls the bash tool (a funcTool: nothing
// runs), "refuse", "long" and "fail" end the turn so; else it thinks and
// says ok.
type acpInstantModel struct{}

func (acpInstantModel) Name() string { return "anthropic" }

func (acpInstantModel) Stream(ctx context.Context, req Request, on func(StreamEvent)) (Reply, error) {
	usage := Usage{Input: 10, Output: 2}
	last := Message{}
	if n := len(req.Messages); n > 0 {
		last = req.Messages[n-1]
	}
	text := last.Text()
	switch {
	case !last.isPrompt():
		on(StreamEvent{Type: "text", Delta: "Done."})
		return Reply{Content: []Block{TextBlock("Done.")}, Stop: StopEndTurn, Usage: usage}, nil
	case strings.Contains(text, "tool"):
		on(StreamEvent{Type: "tool_start", ID: "t1", Name: ToolBash})
		return Reply{Content: []Block{{Type: BlockToolCall, ID: "t1", Name: ToolBash, Args: json.RawMessage(`{"command":"echo hi"}`)}}, Stop: StopToolUse, Usage: usage}, nil
	case strings.Contains(text, "refuse"):
		return Reply{Stop: StopRefusal, Usage: usage}, nil
	case strings.Contains(text, "long"):
		on(StreamEvent{Type: "text", Delta: "and so"})
		return Reply{Content: []Block{TextBlock("and so")}, Stop: StopLength, Usage: usage}, nil
	case strings.Contains(text, "fail"):
		return Reply{}, errors.New("the model's server answered 500")
	}
	on(StreamEvent{Type: "thinking", Delta: "hm"})
	on(StreamEvent{Type: "text", Delta: "ok"})
	return Reply{Content: []Block{{Type: BlockThinking, Text: "hm"}, TextBlock("ok")}, Stop: StopEndTurn, Usage: usage}, nil
}

// acpFuzzOutput is zot's stdout: the lines written, and how many
// responses each id got so far; changed closes at each write.
type acpFuzzOutput struct {
	mu      sync.Mutex
	partial []byte
	lines   [][]byte
	replies map[string]int
	changed chan struct{}
}

func newACPFuzzOutput() *acpFuzzOutput {
	return &acpFuzzOutput{replies: map[string]int{}, changed: make(chan struct{})}
}

func (o *acpFuzzOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, p...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		line := bytes.Clone(o.partial[:i])
		o.partial = o.partial[i+1:]
		o.lines = append(o.lines, line)
		if id, ok := acpReplyID(line); ok {
			o.replies[id]++
		}
	}
	close(o.changed)
	o.changed = make(chan struct{})
	return len(p), nil
}

func (o *acpFuzzOutput) text() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b strings.Builder
	for _, l := range o.lines {
		b.WriteString(truncate(string(l), 2000) + "\n")
	}
	if len(o.partial) > 0 {
		fmt.Fprintf(&b, "(and a line without its newline: %q)\n", truncate(string(o.partial), 2000))
	}
	return b.String()
}

// acpReplyID is the id of a response zot wrote, compacted.
func acpReplyID(line []byte) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return "", false
	}
	id, ok := m["id"]
	if _, isCall := m["method"]; isCall || !ok {
		return "", false
	}
	return compactJSON(id), true
}

// acpPacedInput hands Serve its input a line at a time (see FuzzACPInput).
type acpPacedInput struct {
	rest []byte
	mid  bool // the line begun is not all read yet
	srv  *acpServer
	out  *acpFuzzOutput
	owed map[string]int // replies the requests given so far are owed
	// answered are zot's requests given an answer zot will take.
	answered map[int64]bool
	giveUp   <-chan struct{}
}

func (r *acpPacedInput) Read(p []byte) (int, error) {
	if len(r.rest) == 0 {
		return 0, io.EOF
	}
	line := r.rest
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i+1]
	}
	if !r.mid {
		r.settle()
		c := classifyACPLine(bytes.TrimSuffix(line, []byte("\n")))
		if c.owes {
			r.owed[c.id]++
		}
		r.srv.mu.Lock()
		if _, asked := r.srv.pending[c.answers]; asked {
			r.answered[c.answers] = true
		}
		r.srv.mu.Unlock()
	}
	n := copy(p, line)
	r.mid = n < len(line)
	r.rest = r.rest[n:]
	return n, nil
}

// settle waits until every request given is answered, or zot waits on
// the client for an answer not given yet (it may be the next line), or
// the test gives up.
func (r *acpPacedInput) settle() {
	for {
		r.out.mu.Lock()
		changed := r.out.changed
		answered := true
		for id, n := range r.owed {
			answered = answered && r.out.replies[id] >= n
		}
		r.out.mu.Unlock()
		waiting := false
		r.srv.mu.Lock()
		for id := range r.srv.pending {
			waiting = waiting || !r.answered[id]
		}
		r.srv.mu.Unlock()
		if answered || waiting {
			return
		}
		select {
		case <-changed:
		case <-r.giveUp:
			return
		}
	}
}

// acpInputLine is what one line of the input entitles the client to.
type acpInputLine struct {
	blank bool
	// bad: not a JSON object, or one with neither id nor method; owed an
	// error with a null id.
	bad bool
	// owes: a request, owed exactly one response with id (compacted).
	owes       bool
	id, method string
	// mayGet are ids a response to a line that is not plainly a request
	// may carry: each of its keys that encoding/json takes for "id".
	mayGet []string
	// answers is the id of zot's request that a plain response answers
	// (zot's ids start at 1).
	answers int64
}

// acpEnvelope are the top-level keys of a JSON-RPC message.
var acpEnvelope = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// classifyACPLine reads a line as the client meant it, by JSON-RPC 2.0
// and nothing of zot's: a request is an object with "jsonrpc": "2.0", a
// method and a valid id (acpFuzzValidID), and no key given twice or in
// another case, which would leave which id it has in doubt.
func classifyACPLine(line []byte) (c acpInputLine) {
	// Zot skips lines of Unicode white space too (bytes.TrimSpace).
	if len(bytes.TrimSpace(line)) == 0 {
		return acpInputLine{blank: true}
	}
	if !json.Valid(line) {
		return acpInputLine{bad: true}
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return acpInputLine{bad: true}
	}
	fields := map[string]json.RawMessage{}
	clean, idOrMethod := true, false
	for dec.More() {
		tok, err := dec.Token()
		key, _ := tok.(string)
		var v json.RawMessage
		if err != nil || dec.Decode(&v) != nil {
			return acpInputLine{} // cannot happen: the line is valid JSON
		}
		if strings.EqualFold(key, "id") && acpFuzzValidID(v) {
			c.mayGet = append(c.mayGet, compactJSON(v))
		}
		idOrMethod = idOrMethod || strings.EqualFold(key, "id") || strings.EqualFold(key, "method")
		if _, twice := fields[key]; twice {
			clean = false
		}
		for _, k := range acpEnvelope {
			clean = clean && (key == k || !strings.EqualFold(key, k))
		}
		fields[key] = v
	}
	if !idOrMethod {
		return acpInputLine{bad: true}
	}
	var jsonrpc, method string
	id, hasID := fields["id"]
	if !clean || !hasID || json.Unmarshal(fields["jsonrpc"], &jsonrpc) != nil || jsonrpc != "2.0" {
		return c
	}
	// An id that is not UTF-8 cannot be echoed in JSON: a null one may
	// answer it.
	if acpFuzzValidID(id) && utf8.Valid(id) && json.Unmarshal(fields["method"], &method) == nil && method != "" {
		return acpInputLine{owes: true, id: compactJSON(id), method: method}
	}
	var e *acpError
	errorRaw, hasError := fields["error"]
	if _, hasMethod := fields["method"]; !hasMethod && (!hasError || json.Unmarshal(errorRaw, &e) == nil) {
		c.answers, _ = strconv.ParseInt(string(id), 10, 64)
	}
	return c
}

// acpFuzzValidID is a JSON-RPC id: a string, a number encoding/json can
// hold, or null. validACPID also wants it UTF-8, which classifyACPLine
// checks apart: an id zot cannot echo is owed an error with a null id.
func acpFuzzValidID(raw json.RawMessage) bool {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64, nil:
		return true
	}
	return false
}

// acpExpected is what the whole input entitles the client to.
type acpExpected struct {
	lines  int                 // non-blank lines: each gets a response at most
	owed   map[string]int      // by id: responses owed exactly
	mayGet map[string]int      // by id: responses other lines may get too
	nulls  int                 // responses with a null id, at least
	asked  map[string][]string // by id: the methods asked
}

func expectACP(stream []byte) acpExpected {
	e := acpExpected{owed: map[string]int{}, mayGet: map[string]int{}, asked: map[string][]string{}}
	for _, line := range bytes.Split(stream, []byte("\n")) {
		c := classifyACPLine(line)
		if !c.blank {
			e.lines++
		}
		switch {
		case c.bad:
			e.nulls++
		case c.owes && c.id == "null":
			e.nulls++
		case c.owes:
			e.owed[c.id]++
		}
		if c.owes && !slices.Contains(e.asked[c.id], c.method) {
			e.asked[c.id] = append(e.asked[c.id], c.method)
		}
		for _, id := range c.mayGet {
			e.mayGet[id]++
		}
	}
	return e
}

// unansweredACP lists the requests of the input still owed a response.
func unansweredACP(stream []byte, out *acpFuzzOutput) []string {
	e := expectACP(stream)
	out.mu.Lock()
	defer out.mu.Unlock()
	var ids []string
	for id, n := range e.owed {
		if out.replies[id] < n {
			ids = append(ids, fmt.Sprintf("%s (%s)", truncate(id, 40), strings.Join(e.asked[id], ", ")))
		}
	}
	slices.Sort(ids)
	return ids
}

// checkACPOutput checks what zot wrote against what the input asked.
func checkACPOutput(t *testing.T, stream []byte, out *acpFuzzOutput) {
	t.Helper()
	e := expectACP(stream)
	out.mu.Lock()
	defer out.mu.Unlock()
	if len(out.partial) > 0 {
		t.Errorf("zot's output ends in a line without its newline: %q", truncate(string(out.partial), 200))
	}
	schema, _ := loadACPSchema() // nil when not installed: the other checks still hold
	responses := 0
	for _, line := range out.lines {
		if err := checkACPOutputLine(line, schema, e.asked); err != nil {
			t.Errorf("zot wrote %v:\n%s", err, truncate(string(line), 2000))
		}
		if _, ok := acpReplyID(line); ok {
			responses++
		}
	}
	if responses > e.lines {
		t.Errorf("%d responses to %d lines: some line was answered twice", responses, e.lines)
	}
	for id, n := range e.owed {
		if got := out.replies[id]; got < n || got > n+e.mayGet[id] {
			t.Errorf("requests with id %s: %d, answered %d times", truncate(id, 60), n, got)
		}
	}
	for id, got := range out.replies {
		if id != "null" && got > e.owed[id]+e.mayGet[id] {
			t.Errorf("%d responses with id %s, which %d requests carried", got, truncate(id, 60), e.owed[id]+e.mayGet[id])
		}
	}
	if got := out.replies["null"]; got < e.nulls {
		t.Errorf("%d responses with a null id; the input's bad lines and null-id requests are owed %d", got, e.nulls)
	}
}

// checkACPOutputLine checks that one line zot wrote is a JSON-RPC 2.0
// message in UTF-8 (RFC 8259: an editor reads it as such), a response
// with a result or a clear error, and one the schema allows.
func checkACPOutputLine(line []byte, schema *acpSchema, asked map[string][]string) error {
	if !utf8.Valid(line) {
		return errors.New("a line that is not UTF-8")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return fmt.Errorf("a line that is not one JSON object: %v", err)
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return errors.New(`a message without "jsonrpc": "2.0"`)
	}
	var l acpLine
	if err := json.Unmarshal(line, &l); err != nil {
		return fmt.Errorf("a message of the wrong shape: %v", err)
	}
	_, hasResult := m["result"]
	_, hasError := m["error"]
	switch {
	case l.Method != "":
	case len(l.ID) == 0:
		return errors.New("a response without an id")
	case hasResult == hasError:
		return errors.New("a response without exactly one of result and error")
	case hasError && (l.Error == nil || l.Error.Code == 0 || strings.TrimSpace(l.Error.Message) == ""):
		return errors.New("an error without a code and a message")
	}
	if schema == nil {
		return nil
	}
	// The schema's ids are integers; JSON-RPC lets a client use any
	// number, which zot echoes: such an id is not what is checked here.
	l.Raw = string(line)
	if len(l.ID) > 0 && !acpSchemaID(l.ID) {
		m["id"] = json.RawMessage("null")
		b, _ := json.Marshal(m)
		l.Raw = string(b)
	}
	if l.Method != "" || l.Error != nil {
		if err := schema.checkMessage(l, ""); err != nil {
			return fmt.Errorf("a message the ACP schema does not allow (%v)", err)
		}
		return nil
	}
	// A result is checked against the method asked; of requests that
	// shared its id, any one's will do. A result to no request the
	// input plainly made the count checks.
	var err error
	for _, method := range asked[compactJSON(l.ID)] {
		if err = schema.checkMessage(l, method); err == nil {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("a result the ACP schema does not allow (%v)", err)
	}
	return nil
}

// acpSchemaID is an id the schema's RequestId allows: null, a string or
// an int64.
func acpSchemaID(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v := v.(type) {
	case nil, string:
		return true
	case float64:
		return v == math.Trunc(v) && math.Abs(v) < 1<<63
	}
	return false
}

// acpFuzzSeeds are whole inputs: an editor's ordinary traffic, then what
// a broken or hostile one sends.
func acpFuzzSeeds() []string {
	lines := func(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
	req := func(id any, method, params string) string {
		b, _ := json.Marshal(id)
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}`, b, method, params)
	}
	prompt := func(id any, text string) string {
		b, _ := json.Marshal(text)
		return req(id, "session/prompt", `{"sessionId":"s1","prompt":[{"type":"text","text":`+string(b)+`}]}`)
	}
	answer := func(id int, result string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, id, result)
	}
	initialize := req(0, "initialize", `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"elicitation":{"form":{},"url":{}},"session":{"notices":{}}}}`)
	plainInit := req(0, "initialize", `{"protocolVersion":1}`)
	newSession := req("new", "session/new", `{"cwd":"/","mcpServers":[]}`)
	cancel := `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`
	deep := strings.Repeat(`{"a":`, 3000) + "1" + strings.Repeat("}", 3000)

	return []string{
		// An editor's session: every method, and notifications.
		lines(initialize, newSession, prompt(1, "hello"), prompt(2, "use a tool"),
			req(3, "session/set_mode", `{"sessionId":"s1","modeId":"accept-edits"}`),
			req(4, "session/set_mode", `{"sessionId":"s1","modeId":"acceptEdits"}`),
			req(5, "session/set_config_option", `{"sessionId":"s1","configId":"model","value":"claude-opus-4-1"}`),
			req(6, "session/set_config_option", `{"sessionId":"s1","configId":"thought_level","value":"high"}`),
			req(7, "session/set_config_option", `{"sessionId":"s1","configId":"mode","value":"plan"}`),
			req(8, "session/list", `{}`), req(9, "session/list", `{"cwd":"/"}`),
			req(10, "session/load", `{"sessionId":"saved0001","cwd":"/","mcpServers":[]}`),
			req(11, "session/resume", `{"sessionId":"saved0001","cwd":"/"}`),
			cancel, `{"jsonrpc":"2.0","method":"$/progress","params":{}}`,
			req(12, "authenticate", `{"methodId":"zot-api-key"}`),
			req(13, "session/close", `{"sessionId":"s1"}`), prompt(14, "after close")),
		// zot asks the editor; the editor answers each request in turn.
		lines(initialize, newSession, prompt("a", "ask me"), answer(1, `{"outcome":{"outcome":"selected","optionId":"allow-always"}}`),
			prompt("b", "plan it"), answer(2, `{"outcome":{"outcome":"selected","optionId":"approve-plan:accept-edits"}}`),
			prompt("c", "read and write"), answer(3, `{"content":"package a\n"}`), answer(4, `null`),
			prompt("d", "elicit"), answer(5, `{"action":"accept","content":{"project":"zot"}}`), answer(6, `{"action":"decline"}`)),
		// … and answers wrongly: errors, options never offered, no result.
		lines(initialize, newSession, prompt("a", "ask"), `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"no dialog"}}`,
			prompt("b", "ask"), answer(2, `{"outcome":{"outcome":"selected","optionId":"allow-forever"}}`),
			prompt("c", "plan"), answer(3, `{"outcome":{"outcome":"cancelled"}}`),
			prompt("d", "read"), answer(4, `{"content":7}`), prompt("e", "elicit"), answer(5, `{"action":"maybe"}`), answer(6, `[]`),
			prompt("f", "ask"), `{"jsonrpc":"2.0","id":7}`),
		// Responses to requests zot never sent, and to one twice.
		lines(answer(1, `{}`), answer(-1, `{}`), `{"jsonrpc":"2.0","id":"1","result":{}}`, `{"jsonrpc":"2.0","id":1.0,"result":{}}`,
			`{"jsonrpc":"2.0","id":99999999999999999999,"result":{}}`, `{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`,
			initialize, newSession, prompt("a", "ask"), answer(1, `{"outcome":{"outcome":"selected","optionId":"allow-once"}}`), answer(1, `{}`)),
		// A prompt waits on the editor, and the session is cancelled,
		// closed or prompted again meanwhile; the input ends while it waits.
		lines(initialize, newSession, prompt("a", "ask"), cancel, prompt("b", "ask again"), prompt("c", "and again"),
			req("close", "session/close", `{"sessionId":"s1"}`), prompt("d", "ask")),
		// Slash commands, stop reasons, content blocks.
		lines(plainInit, newSession, prompt(1, "/compact"), prompt(2, "/rewind 3"), prompt(3, "/rewind 3 force"), prompt(4, "/rewind x"),
			prompt(5, "/review the parser"), prompt(6, "//not a command"), prompt(7, "/"), prompt(8, "refuse this"),
			prompt(9, "be long"), prompt(10, "fail now"), prompt(11, ""),
			req(12, "session/prompt", `{"sessionId":"s1","prompt":[{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="},{"type":"resource_link","uri":"file:///a/b.go","name":"b.go"},{"type":"resource","resource":{"uri":"file:///a/README.md","text":"`+"```"+`x"}},{"type":"resource","resource":{"uri":"file:///a/x.bin","mimeType":"application/zip","blob":"AAAA"}}]}`),
			req(13, "session/prompt", `{"sessionId":"s1","prompt":[{"type":"image","mimeType":"image/svg+xml","data":"PHN2Zz4="}]}`),
			req(14, "session/prompt", `{"sessionId":"s1","prompt":[{"type":"image","mimeType":"image/png","data":"not base64!"}]}`),
			req(15, "session/prompt", `{"sessionId":"s1","prompt":[{"type":"resource"}]}`),
			req(16, "session/prompt", `{"sessionId":"s1","prompt":[{"type":"audio","data":"AAAA"}]}`)),
		// Out of order and refused: before initialize, bad params of every method.
		lines(newSession, prompt(1, "hi"), req(2, "session/list", `{}`), req(3, "initialize", `{}`), req(4, "initialize", `{"protocolVersion":"1"}`),
			plainInit, plainInit, req(5, "authenticate", `{"methodId":"password"}`),
			req(6, "session/new", `{"cwd":"relative"}`), req(7, "session/new", `{"cwd":"/no/such/dir"}`), req(8, "session/new", `{}`),
			req(9, "session/new", `{"cwd":"/","mcpServers":[{"type":"sse","name":"a","url":"http://x"}]}`),
			req(10, "session/new", `{"cwd":"/","mcpServers":[{"name":"b","command":"relative/cmd"}]}`),
			req(11, "session/new", `{"cwd":"/","mcpServers":[{"type":"http","url":"http://x"}]}`),
			req(12, "session/new", `{"cwd":"/","mcpServers":[{"name":"c","command":"/bin/true","env":[{"name":"A","value":"1"}]},{"type":"http","name":"d","url":"http://x","headers":[{"name":"H","value":"v"}]}]}`),
			req(13, "session/new", `{"cwd":"/","mcpServers":"none"}`), req(14, "session/new", `{"cwd":"/","mcpServers":[1]}`),
			req(15, "session/load", `{"sessionId":"../../etc/passwd","cwd":"/"}`), req(16, "session/load", `{"sessionId":"nope","cwd":"/"}`),
			req(17, "session/load", `{"sessionId":"","cwd":"/"}`), req(18, "session/resume", `{"sessionId":"saved0001","cwd":"relative"}`),
			req(19, "session/list", `{"cwd":"relative"}`), req(20, "session/list", `{"cursor":"abc"}`), req(21, "session/list", `{"cursor":"-1"}`),
			req(22, "session/list", `{"cursor":"1000"}`), req(23, "session/list", `{"cursor":"0"}`),
			req(24, "session/set_mode", `{"sessionId":"s1","modeId":"yolo"}`), req(25, "session/set_mode", `{"sessionId":"s1","modeId":"auto"}`),
			req(26, "session/set_mode", `{"sessionId":"nope","modeId":"ask"}`),
			req(27, "session/set_config_option", `{"sessionId":"s1","configId":"model","value":1}`),
			req(28, "session/set_config_option", `{"sessionId":"s1","configId":"colour","value":"red"}`),
			req(29, "session/set_config_option", `{"sessionId":"s1","configId":"model","value":"gpt-9"}`),
			req(30, "session/close", `{"sessionId":"nope"}`), req(31, "session/close", `{}`),
			req(32, "session/prompt", `{"sessionId":"s1","prompt":"hi"}`), req(33, "session/prompt", `{"sessionId":"s1"}`),
			req(34, "zot/unknown", `{}`), req(35, "", `{}`)),
		// Params of the wrong type, to every method.
		lines(plainInit, req(1, "session/new", `[]`), req(2, "session/prompt", `"s1"`), req(3, "session/set_mode", `5`),
			req(4, "session/set_config_option", `true`), req(5, "session/list", `[1,2]`), req(6, "session/load", `"x"`),
			req(7, "session/close", `null`), req(8, "initialize", `[]`), req(9, "authenticate", `1`),
			`{"jsonrpc":"2.0","method":"session/cancel","params":[1]}`, `{"jsonrpc":"2.0","method":"session/cancel","params":"s1"}`,
			`{"jsonrpc":"2.0","method":"session/cancel"}`),
		// Bad ids.
		lines(`{"jsonrpc":"2.0","id":{},"method":"initialize","params":{"protocolVersion":1}}`,
			`{"jsonrpc":"2.0","id":[1],"method":"initialize","params":{"protocolVersion":1}}`,
			`{"jsonrpc":"2.0","id":true,"method":"initialize","params":{"protocolVersion":1}}`,
			`{"jsonrpc":"2.0","id":1.5,"method":"initialize","params":{"protocolVersion":1}}`,
			`{"jsonrpc":"2.0","id":-0,"method":"initialize","params":{"protocolVersion":1}}`,
			`{"jsonrpc":"2.0","id":1e400,"method":"initialize","params":{"protocolVersion":1}}`,
			`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"initialize","params":{"protocolVersion":1}}`,
			`{"jsonrpc":"2.0","id":null,"method":"initialize","params":{"protocolVersion":1}}`,
			`{"jsonrpc":"2.0","id":"","method":"initialize","params":{"protocolVersion":1}}`,
			`{"jsonrpc":"2.0","id":"\u00e9\ud83d\ude00","method":"initialize","params":{"protocolVersion":1}}`,
			`{"jsonrpc":"2.0","id":"a\"b\\c</script>","method":"initialize","params":{"protocolVersion":1}}`,
			`{"jsonrpc":"2.0","id" : 7 ,"method":"initialize","params":{"protocolVersion":1}}`),
		// Duplicate ids, in flight together.
		lines(plainInit, newSession, prompt(7, "one"), prompt(7, "two"), req(7, "session/list", `{}`), prompt("7", "three")),
		// Envelopes gone wrong.
		lines(`{"id":1,"method":"initialize","params":{"protocolVersion":1}}`,
			`{"jsonrpc":"1.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`,
			`{"jsonrpc":2.0,"id":3,"method":"initialize"}`, `{"jsonrpc":"2.0","id":4,"method":5}`,
			`{"jsonrpc":"2.0","id":5,"method":"initialize","id":6}`, `{"jsonrpc":"2.0","ID":7,"method":"initialize"}`,
			`{"jsonrpc":"2.0","id":8,"Method":"initialize"}`, `{"jsonrpc":"2.0","\u0069d":9,"method":"initialize","params":{"protocolVersion":1}}`,
			`{"jsonrpc":"2.0","id":10,"method":"initialize","error":"x"}`, `{"jsonrpc":"2.0","id":11,"result":{},"error":{"code":1,"message":"m"}}`,
			`{"jsonrpc":"2.0"}`, `{"jsonrpc":"2.0","method":""}`, `{"jsonrpc":"2.0","id":12,"method":""}`, `{}`,
			`{"jsonrpc":"2.0","id":13,"method":"initialize","params":{"protocolVersion":1}} {"again":true}`,
			`[{"jsonrpc":"2.0","id":14,"method":"initialize","params":{"protocolVersion":1}}]`),
		// Lines that are not JSON, or not objects.
		lines("hello", "{", "}", `{"jsonrpc":"2.0","id":1,"method":"initialize"`, "null", "1", `"str"`, "[]", "true",
			"Content-Length: 52", "\x00\x01", "\xff\xfe{}", "\ufeff{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\"}", "", "   ", "\t\r"),
		// Invalid UTF-8 inside strings, and \r\n line ends.
		strings.ReplaceAll(lines(plainInit, newSession, req(1, "session/prompt", `{"sessionId":"s1","prompt":[{"type":"text","text":"caf`+"\xe9"+`"}]}`), req(2, "zot/\xff", `{}`),
			req(3, "session/set_mode", `{"sessionId":"s1","modeId":"\xc3"}`)), "\n", "\r\n"),
		// Huge strings, deep nesting, and a last line without its newline.
		lines(plainInit, newSession, prompt(1, strings.Repeat("x", 30_000)), req(2, strings.Repeat("m", 10_000), `{}`),
			req(3, "session/list", deep), strings.Repeat("[", 20_000), strings.Repeat(`{"a":`, 12_000)+"1"+strings.Repeat("}", 12_000)) +
			prompt(4, "no newline after me"),
		// A burst of sessions, opened and closed together.
		lines(plainInit, newSession, newSession, req("n3", "session/new", `{"cwd":"/"}`), req("c1", "session/close", `{"sessionId":"s1"}`),
			req("c2", "session/close", `{"sessionId":"s2"}`), req("l", "session/load", `{"sessionId":"saved0001","cwd":"/"}`),
			req("l2", "session/load", `{"sessionId":"saved0001","cwd":"/"}`), req("cl", "session/close", `{"sessionId":"saved0001"}`)),
		"",
	}
}
