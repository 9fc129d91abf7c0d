// Package zotext writes zot extensions in Go.
//
// One file, standard library only. It speaks zot's extension protocol v1
// (docs/extensions.md) in full: commands, tools, events, the three
// intercepts with their rewrites, notes, panels and shutdown. Use it from
// your extension's module with
//
//	require zot.local/zotext v0.0.0
//	replace zot.local/zotext => /path/to/zot/sdk/go
//
// or copy this file into your module (say as zotext/zotext.go) and import
// it from there. Reference: docs/sdk.md.
//
//	ext := zotext.New("hello", "1.0.0")
//	ext.Command("hello", "say hi", func(args string) zotext.Response {
//		return zotext.Prompt("Greet me in one short sentence.")
//	})
//	if err := ext.Run(); err != nil {
//		ext.Logf("%v", err)
//	}
//
// How it runs:
//
//   - Commands, tools and intercepts each run on a goroutine of their own,
//     so a slow handler never holds up the next frame. Events, panel keys
//     and panel closes run one at a time, in the order they came, on one
//     goroutine.
//   - A handler that panics answers with an error: a command with its
//     error text, a tool with an is_error result, an interceptor with
//     allow (or block, when the manifest says "fail_closed": true). The
//     panic and its stack go to stderr, which zot keeps in the extension's
//     log.
//   - stdout belongs to the protocol: Run points os.Stdout at stderr, so
//     fmt.Println in a handler cannot break it.
//   - On shutdown (or when zot closes stdin) OnShutdown handlers run, work
//     in flight gets up to 1.5 s to finish, shutdown_ack is sent and Run
//     returns nil; return from main then.
package zotext

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"
)

// ProtocolVersion is the protocol this package speaks.
const ProtocolVersion = 1

const shutdownGrace = 1500 * time.Millisecond // of zot's 2 s

// Response is a command's answer. Action is prompt, insert, display or
// noop; Error is shown whatever the action; Panel, when set, opens an
// overlay.
type Response struct {
	Action string
	Text   string
	Error  string
	Panel  *Panel
}

// Prompt submits text as the user's next message.
func Prompt(text string) Response { return Response{Action: "prompt", Text: text} }

// Insert puts text into the editor at the cursor.
func Insert(text string) Response { return Response{Action: "insert", Text: text} }

// Display shows text as a note in the chat (no model call).
func Display(text string) Response { return Response{Action: "display", Text: text} }

// Noop does nothing (the work is done, or a panel opens).
func Noop() Response { return Response{Action: "noop"} }

// WithPanel opens p along with the response.
func (r Response) WithPanel(p Panel) Response { r.Panel = &p; return r }

// Panel is an overlay the user sees above the editor; keys go to
// OnPanelKey.
type Panel struct {
	ID     string   `json:"id"`
	Title  string   `json:"title"`
	Lines  []string `json:"lines"`
	Footer string   `json:"footer"`
}

// Block is a piece of a tool result: text, or an image (MimeType and
// base64 Data).
type Block struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	Data     string `json:"data,omitempty"`
}

// ToolResult is a tool's answer.
type ToolResult struct {
	Content []Block
	IsError bool
}

// TextResult is a successful text answer.
func TextResult(text string) ToolResult {
	return ToolResult{Content: []Block{{Type: "text", Text: text}}}
}

// TextErrorResult marks the call failed; the model sees text as the error.
func TextErrorResult(text string) ToolResult {
	return ToolResult{Content: []Block{{Type: "text", Text: text}}, IsError: true}
}

// ImageResult is an image, e.g. ImageResult("image/png", png).
func ImageResult(mimeType string, data []byte) ToolResult {
	return ToolResult{Content: []Block{{Type: "image", MimeType: mimeType, Data: base64.StdEncoding.EncodeToString(data)}}}
}

// ToolCallDecision is a tool_call interceptor's answer. The zero value
// allows; Block refuses (Reason is what the model sees); ModifiedArgs, a
// JSON object, replaces the arguments.
type ToolCallDecision struct {
	Block        bool
	Reason       string
	ModifiedArgs json.RawMessage
}

// TurnStartDecision is a turn_start interceptor's answer; the zero value
// allows.
type TurnStartDecision struct {
	Block  bool
	Reason string
}

// AssistantMessageDecision is an assistant_message interceptor's answer.
// The zero value shows the message unchanged; Block hides it; ReplaceText
// shows that instead.
type AssistantMessageDecision struct {
	Block       bool
	ReplaceText string
}

// Event is an event frame: Name and the fields that event has.
type Event struct {
	Name     string          `json:"event"`
	Step     int             `json:"step"`
	ToolID   string          `json:"tool_id"`
	ToolName string          `json:"tool_name"`
	ToolArgs json.RawMessage `json:"tool_args"`
	Stop     string          `json:"stop"`
	Error    string          `json:"error"`
	Text     string          `json:"text"`
}

// HelloAck is what zot says after hello.
type HelloAck struct {
	ProtocolVersion int    `json:"protocol_version"`
	ZotVersion      string `json:"zot_version"`
	Provider        string `json:"provider"`
	Model           string `json:"model"`
	Cwd             string `json:"cwd"`
	ExtensionDir    string `json:"extension_dir"`
	DataDir         string `json:"data_dir"`
}

// Extension is one extension: register handlers, then Run. Its methods
// are safe for concurrent use, before and during Run.
type Extension struct {
	name, version string

	mu          sync.Mutex // guards the fields below
	info        HelloAck
	commands    map[string]command
	tools       map[string]tool
	cmdOrder    []string
	toolOrder   []string
	events      map[string][]func(Event)
	toolCall    func(tool string, args json.RawMessage) ToolCallDecision
	turnStart   func(step int) TurnStartDecision
	assistant   func(text string) AssistantMessageDecision
	panelKey    []func(panelID, key, text string)
	panelClose  []func(panelID string)
	shutdown    []func()
	failClosed  *bool
	started     bool
	out         io.Writer
	writeMu     sync.Mutex // serialises writes to out
	inflight    sync.WaitGroup
	queue       []frame       // events and panel frames waiting, in order (guarded by mu)
	queueWake   chan struct{} // a frame was queued, or the queue closed
	queueClosed bool
}

type command struct {
	description string
	fn          func(args string) Response
}

type tool struct {
	description string
	schema      json.RawMessage
	fn          func(args json.RawMessage) ToolResult
}

// New returns an extension named name (use the manifest's name).
func New(name, version string) *Extension {
	return &Extension{
		name: name, version: version,
		commands: map[string]command{}, tools: map[string]tool{}, events: map[string][]func(Event){},
		out: os.Stdout,
	}
}

// Command registers /name. The handler gets what the user typed after it.
func (e *Extension) Command(name, description string, fn func(args string) Response) {
	name = strings.TrimPrefix(name, "/")
	e.mu.Lock()
	if _, ok := e.commands[name]; !ok {
		e.cmdOrder = append(e.cmdOrder, name)
	}
	e.commands[name] = command{description, fn}
	started := e.started
	e.mu.Unlock()
	if started {
		e.send(registerFrame("register_command", name, description, nil))
	}
}

// Tool registers a tool the model can call; schema is a JSON Schema object
// for its arguments (nil: no arguments).
func (e *Extension) Tool(name, description string, schema json.RawMessage, fn func(args json.RawMessage) ToolResult) {
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	e.mu.Lock()
	if _, ok := e.tools[name]; !ok {
		e.toolOrder = append(e.toolOrder, name)
	}
	e.tools[name] = tool{description, schema, fn}
	started := e.started
	e.mu.Unlock()
	if started {
		e.send(registerFrame("register_tool", name, description, schema))
	}
}

// On calls fn for each event named event: session_start, turn_start,
// tool_call, turn_end or assistant_message.
func (e *Extension) On(event string, fn func(Event)) {
	e.mu.Lock()
	e.events[event] = append(e.events[event], fn)
	started := e.started
	e.mu.Unlock()
	if started {
		e.send(map[string]any{"type": "subscribe", "events": []string{event}})
	}
}

// InterceptToolCall decides about every tool call before it runs: allow,
// or refuse with a reason the model sees.
func (e *Extension) InterceptToolCall(fn func(tool string, args json.RawMessage) (allow bool, reason string)) {
	e.InterceptToolCallX(func(tool string, args json.RawMessage) ToolCallDecision {
		allow, reason := fn(tool, args)
		return ToolCallDecision{Block: !allow, Reason: reason}
	})
}

// InterceptToolCallX decides about every tool call before it runs, and may
// rewrite its arguments.
func (e *Extension) InterceptToolCallX(fn func(tool string, args json.RawMessage) ToolCallDecision) {
	e.intercept("tool_call", func() { e.toolCall = fn })
}

// InterceptTurnStart decides whether each model turn may start.
func (e *Extension) InterceptTurnStart(fn func(step int) TurnStartDecision) {
	e.intercept("turn_start", func() { e.turnStart = fn })
}

// InterceptAssistantMessage decides what the user sees of each finished
// answer (the transcript keeps the original).
func (e *Extension) InterceptAssistantMessage(fn func(text string) AssistantMessageDecision) {
	e.intercept("assistant_message", func() { e.assistant = fn })
}

func (e *Extension) intercept(event string, set func()) {
	e.mu.Lock()
	set()
	started := e.started
	e.mu.Unlock()
	if started {
		e.send(map[string]any{"type": "subscribe", "intercept": []string{event}})
	}
}

// OnPanelKey receives the keys pressed in this extension's panels: key is
// rune for a character typed alone (the character in text), paste for
// pasted text (in text), or the key's name — up, down, left, right, enter,
// tab, shift+tab, backspace, delete, insert, home, end, pageup, pagedown,
// with modifiers as prefixes (ctrl+a, alt+enter).
func (e *Extension) OnPanelKey(fn func(panelID, key, text string)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.panelKey = append(e.panelKey, fn)
}

// OnPanelClose learns that the user closed a panel (esc).
func (e *Extension) OnPanelClose(fn func(panelID string)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.panelClose = append(e.panelClose, fn)
}

// OnShutdown runs fn before the extension exits.
func (e *Extension) OnShutdown(fn func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shutdown = append(e.shutdown, fn)
}

// SetFailClosed says whether a panicking interceptor blocks; by default it
// is the manifest's fail_closed.
func (e *Extension) SetFailClosed(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failClosed = &on
}

// Info is hello_ack (empty until it arrived, which is before any request).
func (e *Extension) Info() HelloAck {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.info
}

// Notify shows the user a one-line note; level is info, success, warn or
// error.
func (e *Extension) Notify(level, message string) {
	e.send(map[string]any{"type": "notify", "level": level, "message": message})
}

// ClearNotes retracts every note this extension showed.
func (e *Extension) ClearNotes() { e.send(map[string]any{"type": "clear_notes"}) }

// RenderPanel redraws an open panel (p.ID is the id it was opened with).
func (e *Extension) RenderPanel(p Panel) {
	if p.Lines == nil {
		p.Lines = []string{}
	}
	e.send(map[string]any{"type": "panel_render", "panel_id": p.ID, "title": p.Title, "lines": p.Lines, "footer": p.Footer})
}

// ClosePanel closes one of this extension's panels.
func (e *Extension) ClosePanel(id string) {
	e.send(map[string]any{"type": "panel_close", "panel_id": id})
}

// Logf writes a line to the extension's log (stderr).
func (e *Extension) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, strings.TrimSuffix(format, "\n")+"\n", args...)
}

// frame is every zot → extension frame.
type frame struct {
	Type     string          `json:"type"`
	ID       json.RawMessage `json:"id"`
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args"`
	Event    string          `json:"event"`
	Step     int             `json:"step"`
	ToolID   string          `json:"tool_id"`
	ToolName string          `json:"tool_name"`
	ToolArgs json.RawMessage `json:"tool_args"`
	Text     string          `json:"text"`
	PanelID  string          `json:"panel_id"`
	Key      string          `json:"key"`
	raw      []byte
}

// Run says hello, registers everything, serves frames until shutdown (or
// until zot closes stdin), and returns. It points os.Stdout at stderr.
func (e *Extension) Run() error {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return errors.New("zotext: Run called twice")
	}
	if e.failClosed == nil {
		fc := manifestFailClosed()
		e.failClosed = &fc
	}
	out := os.Stdout
	os.Stdout = os.Stderr // fmt.Println must not break the protocol
	e.out = out
	var caps []string
	if len(e.commands) > 0 {
		caps = append(caps, "commands")
	}
	if len(e.tools) > 0 {
		caps = append(caps, "tools")
	}
	var events, intercepts []string
	for ev := range e.events {
		events = append(events, ev)
	}
	sort.Strings(events)
	for ev, on := range map[string]bool{"tool_call": e.toolCall != nil, "turn_start": e.turnStart != nil, "assistant_message": e.assistant != nil} {
		if on {
			intercepts = append(intercepts, ev)
		}
	}
	sort.Strings(intercepts)
	if len(events)+len(intercepts) > 0 {
		caps = append(caps, "events")
	}
	regs := []any{map[string]any{"type": "hello", "name": e.name, "version": e.version, "capabilities": nonNil(caps)}}
	for _, name := range e.cmdOrder {
		regs = append(regs, registerFrame("register_command", name, e.commands[name].description, nil))
	}
	for _, name := range e.toolOrder {
		t := e.tools[name]
		regs = append(regs, registerFrame("register_tool", name, t.description, t.schema))
	}
	if len(events)+len(intercepts) > 0 {
		regs = append(regs, map[string]any{"type": "subscribe", "events": nonNil(events), "intercept": nonNil(intercepts)})
	}
	e.started = true
	e.queueWake = make(chan struct{}, 1)
	e.mu.Unlock()
	for _, f := range regs {
		e.send(f)
	}
	// The ordered worker runs events and panel frames one at a time; it
	// ends once finish closes the queue.
	go e.orderedWorker()
	e.send(map[string]any{"type": "ready"})

	in := bufio.NewReader(os.Stdin)
	ack := false
	for {
		line, err := readLine(in)
		if len(strings.TrimSpace(string(line))) > 0 {
			var f frame
			if jerr := json.Unmarshal(line, &f); jerr != nil {
				e.Logf("zotext: skipped a frame that is not a JSON object: %.200s", line)
			} else if f.Type == "shutdown" {
				ack = true
				break
			} else {
				f.raw = line
				e.dispatch(f)
			}
		}
		if err != nil {
			break
		}
	}
	e.finish(ack)
	return nil
}

// readLine reads one line of any length (zot's frames are at most 8 MiB).
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

func (e *Extension) dispatch(f frame) {
	switch f.Type {
	case "hello_ack":
		var ack HelloAck
		json.Unmarshal(f.raw, &ack)
		e.mu.Lock()
		e.info = ack
		e.mu.Unlock()
	case "command_invoked", "tool_call", "event_intercept":
		e.inflight.Add(1)
		// Ends when the handler has answered.
		go func() {
			defer e.inflight.Done()
			e.serve(f)
		}()
	case "event", "panel_key", "panel_close":
		e.inflight.Add(1)
		e.mu.Lock()
		e.queue = append(e.queue, f)
		e.mu.Unlock()
		select {
		case e.queueWake <- struct{}{}:
		default:
		}
	default:
		e.Logf("zotext: ignored a frame of type %q", f.Type)
	}
}

func (e *Extension) serve(f frame) {
	switch f.Type {
	case "command_invoked":
		e.runCommand(f)
	case "tool_call":
		e.runTool(f)
	case "event_intercept":
		e.runIntercept(f)
	}
}

// guard runs fn, turning a panic into an error (logged with its stack).
func (e *Extension) guard(what string, fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			e.Logf("zotext: %s panicked: %v\n%s", what, r, debug.Stack())
			err = fmt.Errorf("%v", r)
		}
	}()
	fn()
	return nil
}

func (e *Extension) runCommand(f frame) {
	var args string
	json.Unmarshal(f.Args, &args)
	e.mu.Lock()
	cmd, ok := e.commands[f.Name]
	e.mu.Unlock()
	var r Response
	err := e.guard("command /"+f.Name, func() {
		if !ok {
			panic("this extension has no command /" + f.Name)
		}
		r = cmd.fn(args)
	})
	if r.Action == "" {
		r.Action = "noop"
	}
	switch {
	case err != nil:
		r = Response{Action: "noop", Error: fmt.Sprintf("/%s failed: %v", f.Name, err)}
	case r.Action != "prompt" && r.Action != "insert" && r.Action != "display" && r.Action != "noop":
		r = Response{Action: "noop", Error: fmt.Sprintf("/%s answered with unknown action %q", f.Name, r.Action)}
	}
	out := map[string]any{"type": "command_response", "id": f.ID, "action": r.Action}
	if r.Action != "noop" {
		out[r.Action] = r.Text
	}
	if r.Error != "" {
		out["error"] = r.Error
	}
	if r.Panel != nil {
		p := *r.Panel
		if p.Lines == nil {
			p.Lines = []string{}
		}
		out["open_panel"] = p
	}
	e.send(out)
}

func (e *Extension) runTool(f frame) {
	e.mu.Lock()
	t, ok := e.tools[f.Name]
	e.mu.Unlock()
	args := f.Args
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var r ToolResult
	err := e.guard("tool "+f.Name, func() {
		if !ok {
			panic("this extension has no tool " + f.Name)
		}
		r = t.fn(args)
	})
	if err != nil {
		r = TextErrorResult(fmt.Sprintf("tool %s failed: %v", f.Name, err))
	}
	if r.Content == nil {
		r.Content = []Block{}
	}
	e.send(map[string]any{"type": "tool_result", "id": f.ID, "content": r.Content, "is_error": r.IsError})
}

func (e *Extension) runIntercept(f frame) {
	e.mu.Lock()
	toolCall, turnStart, assistant, failClosed := e.toolCall, e.turnStart, e.assistant, *e.failClosed
	e.mu.Unlock()
	out := map[string]any{"type": "event_intercept_response", "id": f.ID}
	err := e.guard(f.Event+" interceptor", func() {
		switch {
		case f.Event == "tool_call" && toolCall != nil:
			args := f.ToolArgs
			if len(args) == 0 || string(args) == "null" {
				args = json.RawMessage("{}")
			}
			d := toolCall(f.ToolName, args)
			if d.Block {
				out["block"] = true
			}
			if d.Reason != "" {
				out["reason"] = d.Reason
			}
			if len(d.ModifiedArgs) > 0 {
				var obj map[string]json.RawMessage
				if json.Unmarshal(d.ModifiedArgs, &obj) != nil || obj == nil {
					panic("ModifiedArgs must be a JSON object")
				}
				out["modified_args"] = d.ModifiedArgs
			}
		case f.Event == "turn_start" && turnStart != nil:
			d := turnStart(f.Step)
			if d.Block {
				out["block"] = true
			}
			if d.Reason != "" {
				out["reason"] = d.Reason
			}
		case f.Event == "assistant_message" && assistant != nil:
			d := assistant(f.Text)
			if d.Block {
				out["block"] = true
			}
			if d.ReplaceText != "" {
				out["replace_text"] = d.ReplaceText
			}
		}
	})
	if err != nil {
		why := fmt.Sprintf("%s interceptor of %s failed: %v", f.Event, e.name, err)
		out = map[string]any{"type": "event_intercept_response", "id": f.ID}
		if failClosed {
			out["block"], out["reason"] = true, "blocked: "+why
		} else {
			out["reason"] = why + "; allowed"
		}
	}
	e.send(out)
}

// orderedWorker drains the queue; the queue never blocks the frame loop.
func (e *Extension) orderedWorker() {
	for {
		e.mu.Lock()
		if len(e.queue) == 0 {
			closed := e.queueClosed
			e.mu.Unlock()
			if closed {
				return
			}
			<-e.queueWake
			continue
		}
		f := e.queue[0]
		e.queue = e.queue[1:]
		e.mu.Unlock()
		e.runOrdered(f)
		e.inflight.Done()
	}
}

func (e *Extension) runOrdered(f frame) {
	e.mu.Lock()
	events := append([]func(Event){}, e.events[f.Event]...)
	keys := append([]func(string, string, string){}, e.panelKey...)
	closes := append([]func(string){}, e.panelClose...)
	e.mu.Unlock()
	switch f.Type {
	case "event":
		var ev Event
		json.Unmarshal(f.raw, &ev)
		for _, fn := range events {
			e.guard(f.Event+" handler", func() { fn(ev) })
		}
	case "panel_key":
		for _, fn := range keys {
			e.guard("panel key handler", func() { fn(f.PanelID, f.Key, f.Text) })
		}
	case "panel_close":
		for _, fn := range closes {
			e.guard("panel close handler", func() { fn(f.PanelID) })
		}
	}
}

// finish runs the OnShutdown handlers, gives work in flight up to 1.5 s,
// and acknowledges a shutdown.
func (e *Extension) finish(ack bool) {
	e.mu.Lock()
	shutdown := append([]func(){}, e.shutdown...)
	e.mu.Unlock()
	for _, fn := range shutdown {
		e.guard("shutdown handler", fn)
	}
	done := make(chan struct{})
	// Ends when the work in flight is done; Run does not wait for it
	// longer than the grace period (a stuck handler dies with the process).
	go func() {
		e.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(shutdownGrace):
	}
	if ack {
		e.send(map[string]any{"type": "shutdown_ack"})
	}
	e.mu.Lock()
	e.queueClosed = true
	e.mu.Unlock()
	select {
	case e.queueWake <- struct{}{}:
	default:
	}
}

func (e *Extension) send(v any) {
	line, err := json.Marshal(v)
	if err != nil {
		e.Logf("zotext: encode frame: %v", err)
		return
	}
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if _, err := e.out.Write(append(line, '\n')); err != nil {
		os.Exit(0) // zot is gone
	}
}

func registerFrame(typ, name, description string, schema json.RawMessage) map[string]any {
	f := map[string]any{"type": typ, "name": name, "description": description}
	if schema != nil {
		f["schema"] = schema
	}
	return f
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// manifestFailClosed reads the manifest's fail_closed: zot starts
// extensions in their own directory, so ./extension.json is this one's.
func manifestFailClosed() bool {
	b, err := os.ReadFile("extension.json")
	if err != nil {
		return false
	}
	var mf struct {
		FailClosed bool `json:"fail_closed"`
	}
	return json.Unmarshal(b, &mf) == nil && mf.FailClosed
}
