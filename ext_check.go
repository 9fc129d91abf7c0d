package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// `zot ext check <dir>`: the conformance checker for extension authors. It
// starts the extension as zot would (the same exec resolution, working
// directory, session, environment and hello_ack: extProcSpec) and drives
// every part of the protocol the extension signed up for — each command,
// each tool with arguments made from its schema, each intercept — then
// shuts it down, reporting line by line what it did and how long it took.
// Unlike the host (extProc), which hides an extension's mistakes behind
// logs so that zot goes on, the checker reads the raw stream and calls out
// each one.

// checkLine is one line of the report.
type checkLine struct {
	Check   string `json:"check"`
	Status  string `json:"status"` // ok, info, warn, fail
	Message string `json:"message"`
	Ms      *int64 `json:"ms,omitempty"`
}

// checkReport is the whole report; --json prints it as is.
type checkReport struct {
	Extension  string      `json:"extension"`
	Dir        string      `json:"dir"`
	Conformant bool        `json:"conformant"`
	Lines      []checkLine `json:"lines"`
	Violations []string    `json:"violations"`
	Warnings   []string    `json:"warnings"`
	Stderr     []string    `json:"stderr"` // the extension's last stderr lines
}

// checkFrame is one line the extension wrote, with when it came.
type checkFrame struct {
	at      time.Time
	line    []byte
	msg     extMsg
	err     error
	tooLong bool
}

// extChecker is one run of the checker.
type extChecker struct {
	lim extLimits
	cwd string // hello_ack cwd
	// reserved are the TUI's own slash commands, which win over an
	// extension's.
	reserved []string
	report   checkReport

	mf         *extManifest
	proc       *proc
	child      *lineChild
	started    time.Time
	frames     chan checkFrame // closed at the end of its stdout
	exited     chan struct{}   // closed when the process is reaped
	stderr     *cappedTail     // the copier's until stderrDone is closed
	stderrDone chan struct{}
	gone       bool // stdout ended: the extension can no longer answer
	spoke      bool // it said hello: what it writes is checked

	ids          int
	commands     []extRegistration
	tools        []extRegistration
	events       map[extEventName]bool
	intercepts   map[extEventName]bool
	panels       map[string]bool
	acked        time.Time
	strayCount   int
	badFrames    int
	dropped      int // report lines beyond maxCheckLines
	droppedFails int
	unknownSeen  map[extFrame]bool
}

func runExtCheck(dir string, asJSON bool, reserved []string, stdout, stderr io.Writer) int {
	cwd, _ := os.Getwd()
	c := &extChecker{lim: defaultExtLimits, cwd: cwd, reserved: reserved}
	c.run(dir)
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(c.report)
	} else {
		io.WriteString(stdout, c.report.text())
	}
	if !c.report.Conformant {
		return exitFailure
	}
	return exitOK
}

// run checks the extension in dir; the report is in c.report.
func (c *extChecker) run(dir string) {
	if filepath.Base(dir) == "extension.json" {
		dir = filepath.Dir(dir)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	c.report = checkReport{Dir: dir, Violations: []string{}, Warnings: []string{}, Stderr: []string{}}
	c.events, c.intercepts, c.panels, c.unknownSeen = map[extEventName]bool{}, map[extEventName]bool{}, map[string]bool{}, map[extFrame]bool{}
	home, err := os.MkdirTemp("", "zot-ext-check-")
	if err != nil {
		c.fail("setup", "create a temporary data directory: %v", err)
		c.finish()
		return
	}
	defer os.RemoveAll(home)
	if c.start(dir, home) && c.handshake(home) {
		c.exercise()
	}
	c.shutdown()
	c.finish()
}

func (c *extChecker) add(check, status string, ms *int64, format string, args ...any) {
	if len(c.report.Lines) >= maxCheckLines {
		c.dropped++
		if status == "fail" {
			c.droppedFails++
		}
		return
	}
	msg := sanitize(fmt.Sprintf(format, args...))
	c.report.Lines = append(c.report.Lines, checkLine{Check: check, Status: status, Message: msg, Ms: ms})
	switch status {
	case "fail":
		c.report.Violations = append(c.report.Violations, check+": "+msg)
	case "warn":
		c.report.Warnings = append(c.report.Warnings, check+": "+msg)
	}
}

func (c *extChecker) ok(check, format string, args ...any) { c.add(check, "ok", nil, format, args...) }
func (c *extChecker) info(check, format string, args ...any) {
	c.add(check, "info", nil, format, args...)
}
func (c *extChecker) warn(check, format string, args ...any) {
	c.add(check, "warn", nil, format, args...)
}
func (c *extChecker) fail(check, format string, args ...any) {
	c.add(check, "fail", nil, format, args...)
}

func msSince(t time.Time) *int64 {
	ms := time.Since(t).Milliseconds()
	return &ms
}

// start reads the manifest and spawns the extension as zot would.
func (c *extChecker) start(dir, home string) bool {
	mf, err := readManifest(dir, "check")
	if err != nil {
		c.fail("manifest", "%v", err)
		return false
	}
	c.mf = mf
	c.report.Extension = mf.Name
	c.ok("manifest", "%s %s: exec %s", mf.Name, mf.Version, strings.Join(append([]string{mf.Exec}, mf.Args...), " "))
	if !mf.Enabled {
		c.warn("manifest", "\"enabled\": false: zot does not start it (checked anyway)")
	}
	execPath, err := resolveExec(mf)
	if err == nil {
		err = execExists(execPath)
	}
	if err != nil {
		c.fail("spawn", "%v", err)
		return false
	}
	c.started = time.Now()
	child, err := startLineChild(extProcSpec(mf, execPath))
	if err != nil {
		c.fail("spawn", "start %s: %v%s", execPath, err, startHint(err))
		return false
	}
	p := child.proc
	c.proc, c.child = p, child
	c.frames, c.exited = make(chan checkFrame, 64), child.reaped
	c.stderr, c.stderrDone = &cappedTail{max: 64 << 10}, child.copierDone
	// The child's reader turns stdout into frames; it ends at EOF or the
	// drain deadline after the exit, closing frames: an extension that
	// closed its stdout cannot answer, even if it runs on with its stderr
	// open. Its copier keeps the end of stderr; its waiter reaps the
	// process, which kills what is left of its session first.
	child.serve(lineChildIO{maxLine: c.lim.maxFrame, overLong: overLongSkip,
		line: func(line []byte, err error) {
			if err != nil {
				c.frames <- checkFrame{at: time.Now(), tooLong: true}
				return
			}
			line = bytes.TrimRight(line, "\r")
			if len(bytes.TrimSpace(line)) == 0 {
				return
			}
			f := checkFrame{at: time.Now(), line: append([]byte(nil), line...)}
			f.msg, f.err = decodeExtMsg(f.line)
			c.frames <- f
		},
		ended:  func(error) { close(c.frames) },
		stderr: c.stderr, drain: 500 * time.Millisecond})
	c.ok("spawn", "pid %d in a session of its own, working directory %s", p.pid, mf.Dir)
	return true
}

// next waits up to d for the extension's next line. got is false on a
// timeout and once its stdout has ended (c.gone).
func (c *extChecker) next(d time.Duration) (f checkFrame, got bool) {
	if c.gone {
		return f, false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case f, ok := <-c.frames:
		if !ok {
			c.gone = true
			return f, false
		}
		return f, true
	case <-t.C:
		return f, false
	}
}

// whyGone says how the extension's stdout ended: it exited, or it only
// closed its stdout. Its exit comes a moment after the end of its stdout,
// so that is waited for.
func (c *extChecker) whyGone() string {
	select {
	case <-c.exited:
		state, _ := c.proc.Reap()
		return "it exited (" + state.String() + ")"
	case <-time.After(500 * time.Millisecond):
		return "it closed its stdout but is still running"
	}
}

func (c *extChecker) send(v any) bool {
	line, err := encodeFrame(v)
	if err != nil {
		c.fail("send", "%v", err)
		return false
	}
	if _, err := c.child.write(line, time.Now().Add(5*time.Second)); err != nil {
		c.fail("stdin", "writing a frame to it failed (%v): it must keep reading stdin until shutdown", err)
		return false
	}
	return true
}

// handshake checks hello, answers it and follows the registration up to
// ready (or the idle fallback, or the startup limit).
func (c *extChecker) handshake(home string) bool {
	f, got := c.next(c.lim.hello)
	switch {
	case !got && c.gone:
		c.fail("hello", "%s before saying hello", c.whyGone())
		return false
	case !got:
		c.fail("hello", "no frame within %s: the first line must be a hello frame, sent at once", c.lim.hello)
		return false
	case !f.tooLong && f.err != nil && f.msg.Type == frameHello:
		c.fail("hello", "a malformed hello: %v: %s (zot stops it)", f.err, excerpt(f.line))
		return false
	case f.tooLong || f.err != nil || f.msg.Type != frameHello:
		c.fail("hello", "the first line must be a hello frame, got %s", frameExcerpt(f))
		return false
	}
	hello := f.msg
	c.spoke = true
	ms := f.at.Sub(c.started).Milliseconds()
	c.add("hello", "ok", &ms, "%q %s, capabilities [%s] after %d ms", hello.Name, hello.Version, strings.Join(hello.Capabilities, ", "), ms)
	if hello.Name != c.mf.Name {
		c.warn("hello", "names %q but the manifest says %q: zot uses the manifest's name", hello.Name, c.mf.Name)
	}
	dataDir := filepath.Join(home, "ext-data", c.mf.Name)
	os.MkdirAll(dataDir, 0o700)
	if !c.send(hostHelloAck{Type: frameHelloAck, ProtocolVersion: 1, ZotVersion: version, Provider: "check", Model: "check",
		Cwd: c.cwd, ExtensionDir: c.mf.Dir, DataDir: dataDir}) {
		return false
	}

	deadline := f.at.Add(c.lim.startup)
	last := f.at
	for {
		wait := min(time.Until(last.Add(c.lim.idle)), time.Until(deadline))
		f, got := c.next(max(wait, 0))
		if !got {
			switch {
			case c.gone:
				c.fail("ready", "%s during registration", c.whyGone())
				return false
			case time.Now().Before(deadline):
				ms := time.Since(c.started).Milliseconds()
				c.add("ready", "warn", &ms, "no ready frame: counted as ready after %s without a frame (%d ms after start); send {\"type\":\"ready\"} to save the wait", c.lim.idle, ms)
			default:
				c.fail("ready", "still sending frames %s after hello: zot goes on without it and its commands and tools join late", c.lim.startup)
			}
			break
		}
		last = f.at
		if f.err == nil && f.msg.Type == frameReady {
			ms := f.at.Sub(c.started).Milliseconds()
			c.add("ready", "ok", &ms, "after %d ms", ms)
			break
		}
		c.handle(f)
	}
	c.summarise()
	return true
}

// summarise reports what the extension registered.
func (c *extChecker) summarise() {
	names := func(regs []extRegistration) string {
		var out []string
		for _, r := range regs {
			out = append(out, r.Name)
		}
		return strings.Join(out, ", ")
	}
	set := func(m map[extEventName]bool) string { return joinNames(sortedKeys(m), ", ") }
	c.info("registered", "commands [%s], tools [%s], events [%s], intercepts [%s]", names(c.commands), names(c.tools), set(c.events), set(c.intercepts))
	if len(c.commands)+len(c.tools)+len(c.events)+len(c.intercepts) == 0 {
		c.warn("registered", "nothing: no command, tool, event or intercept")
	}
}

// handle checks a frame that is not the answer being waited for.
func (c *extChecker) handle(f checkFrame) {
	switch {
	case f.tooLong:
		c.fail("stdout", "a line longer than %d bytes (zot skips it)", c.lim.maxFrame)
		return
	case f.err != nil && !isJSONObject(f.line):
		c.strayCount++
		if c.strayCount <= 3 {
			c.fail("stdout", "stray output, not a JSON frame: %s (print logs to stderr; stdout is for frames)", excerpt(f.line))
		}
		return
	case f.err != nil:
		c.badFrames++
		if c.badFrames <= 3 {
			c.fail("frame", "%v: %s (zot skips it)", f.err, excerpt(f.line))
		}
		return
	}
	m := f.msg
	switch m.Type {
	case frameRegisterCommand, frameRegisterTool:
		c.register(m)
	case frameSubscribe:
		for _, ev := range m.Events {
			if !extEventNames[ev] {
				c.fail("subscribe", "unknown event %q (events: session_start, turn_start, tool_call, turn_end, assistant_message)", ev)
			} else {
				c.events[ev] = true
			}
		}
		for _, ev := range m.Intercept {
			if !extInterceptNames[ev] {
				c.fail("subscribe", "unknown intercept %q (intercepts: tool_call, turn_start, assistant_message)", ev)
			} else {
				c.intercepts[ev] = true
			}
		}
	case frameReady:
		c.info("ready", "another ready frame (harmless)")
	case frameNotify:
		switch m.Level {
		case "info", "success", "warn", "error":
			c.ok("notify", "[%s] %s", m.Level, m.Message)
		default:
			c.fail("notify", "level %q is not info, success, warn or error (zot shows it as info): %s", m.Level, m.Message)
		}
	case frameClearNotes:
		c.ok("clear_notes", "retracts its notes")
	case framePanelRender, framePanelClose:
		if !c.panels[m.PanelID] {
			c.fail(string(m.Type), "for panel %q, which it has not opened (zot ignores it)", m.PanelID)
		} else if m.Type == framePanelClose {
			delete(c.panels, m.PanelID)
			c.ok("panel_close", "closed panel %q", m.PanelID)
		} else {
			c.ok("panel_render", "panel %q: %d lines", m.PanelID, len(m.Lines))
		}
	case frameShutdownAck:
		if c.acked.IsZero() {
			c.warn("shutdown_ack", "sent before any shutdown")
		}
	case frameHello:
		c.warn("hello", "a second hello (zot ignores it)")
	case frameCommandResponse, frameToolResult, frameInterceptResponse:
		c.fail(string(m.Type), "for id %q, which no request has (or whose request it answered late)", string(m.ID))
	default:
		if !c.unknownSeen[m.Type] {
			c.unknownSeen[m.Type] = true
			c.fail("frame", "unknown type %q (zot skips it): %s", m.Type, excerpt(f.line))
		}
	}
}

// register checks one registration: its name, and a tool's schema.
func (c *extChecker) register(m extMsg) {
	kind, name := "tool", m.Name
	if m.Type == frameRegisterCommand {
		kind, name = "command", strings.TrimPrefix(name, "/")
	}
	if err := validRegistrationName(kind, name); err != nil {
		c.fail(string(m.Type), "refused: %v", err)
		return
	}
	r := extRegistration{Name: name, Description: m.Description, Schema: m.Schema}
	list := &c.commands
	if kind == "tool" {
		list = &c.tools
		schema, err := toolSchema(m.Schema)
		switch {
		case err != nil:
			c.fail("register_tool", "%s: refused: %v", name, err)
			return
		case len(m.Schema) == 0 || string(m.Schema) == "null":
			c.info("register_tool", "%s: no schema: it takes no arguments", name)
		case !bytes.Equal(schema, m.Schema): // zot added the "type"
			c.warn("register_tool", `%s: schema has no "type": zot adds "type": "object", other hosts may refuse it`, name)
		}
		r.Schema = schema
		for _, p := range checkToolSchema(schema) {
			c.fail("register_tool", "%s: %s", name, p)
		}
		if slices.Contains(BuiltinToolNames, name) {
			c.warn("register_tool", "%s: a built-in tool has this name and wins", name)
		}
		if m.Description == "" {
			c.warn("register_tool", "%s: no description: the model reads it to decide when to call the tool", name)
		}
	} else if slices.Contains(c.reserved, name) {
		c.warn("register_command", "/%s: a built-in command has this name and wins", name)
	}
	for i := range *list {
		if (*list)[i].Name == name {
			(*list)[i] = r
			c.info(string(m.Type), "%s registered again: replaced", name)
			return
		}
	}
	*list = append(*list, r)
	c.ok(string(m.Type), "%s", name)
}

// checkToolSchema finds what model APIs would refuse in the properties of
// a schema toolSchema accepted.
func checkToolSchema(raw json.RawMessage) []string {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   json.RawMessage `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return []string{"schema: " + err.Error()}
	}
	var problems []string
	var props map[string]json.RawMessage
	if len(s.Properties) > 0 {
		if err := json.Unmarshal(s.Properties, &props); err != nil || props == nil {
			problems = append(problems, `schema "properties" must be an object`)
		}
		for name, p := range props {
			if !isJSONObject(p) {
				problems = append(problems, fmt.Sprintf("schema property %q must be a schema object", name))
			}
		}
	}
	if len(s.Required) > 0 {
		var req []string
		if json.Unmarshal(s.Required, &req) != nil {
			problems = append(problems, `schema "required" must be a list of property names`)
		}
		for _, r := range req {
			if _, ok := props[r]; !ok {
				problems = append(problems, fmt.Sprintf("schema requires %q, which is not among its properties", r))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// exercise sends session_start, then one command_invoked per command, one
// tool_call per tool and one event_intercept per intercept.
func (c *extChecker) exercise() {
	if c.events[extEventSessionStart] {
		if c.send(extEvent{Frame: frameEvent, Name: extEventSessionStart}) {
			c.ok("event", "session_start sent (no answer expected)")
		}
	}
	for _, cmd := range c.commands {
		if c.gone {
			return
		}
		c.command(cmd)
	}
	for _, tool := range c.tools {
		if c.gone {
			return
		}
		c.tool(tool)
	}
	for _, ev := range extInterceptList {
		if c.intercepts[ev] && !c.gone {
			c.intercept(ev)
		}
	}
}

func (c *extChecker) nextID() string {
	c.ids++
	return "check-" + strconv.Itoa(c.ids)
}

// await sends a request and waits up to d for its reply of type want,
// checking every other frame that comes meanwhile.
func (c *extChecker) await(check, what string, frame func(id string) any, want extFrame, d time.Duration) (extMsg, *int64, bool) {
	id := c.nextID()
	if !c.send(frame(id)) {
		return extMsg{}, nil, false
	}
	sent := time.Now()
	deadline := sent.Add(d)
	for {
		f, got := c.next(max(time.Until(deadline), 0))
		if !got {
			if c.gone {
				c.fail(check, "%s: %s instead of answering", what, c.whyGone())
			} else {
				c.fail(check, "%s: no %s within %s", what, want, d)
			}
			return extMsg{}, nil, false
		}
		if string(f.msg.ID) != id || f.tooLong {
			c.handle(f)
			continue
		}
		ms := msSince(sent)
		switch {
		case f.err != nil:
			c.add(check, "fail", ms, "%s: a malformed %s: %v: %s (zot fails the request)", what, f.msg.Type, f.err, excerpt(f.line))
			return extMsg{}, ms, false
		case f.msg.Type != want:
			c.add(check, "fail", ms, "%s: answered with %s instead of %s (zot fails the request)", what, f.msg.Type, want)
			return extMsg{}, ms, false
		}
		return f.msg, ms, true
	}
}

func (c *extChecker) command(cmd extRegistration) {
	check := "command"
	msg, ms, ok := c.await(check, "/"+cmd.Name, func(id string) any {
		return hostCommandInvoked{Type: frameCommandInvoked, ID: id, Name: cmd.Name, Args: ""}
	}, frameCommandResponse, c.lim.command)
	if !ok {
		return
	}
	what := ""
	switch msg.Action {
	case "prompt":
		what = "prompt " + strconv.Quote(truncate(msg.Prompt, 80))
	case "insert":
		what = "insert " + strconv.Quote(truncate(msg.Insert, 80))
	case "display":
		what = "display " + strconv.Quote(truncate(msg.Display, 80))
	case "noop", "":
		what = "noop"
	default:
		c.add(check, "fail", ms, "/%s answered with unknown action %q (zot treats it as noop with an error)", cmd.Name, msg.Action)
		return
	}
	if msg.Error != "" {
		what += ", error " + strconv.Quote(truncate(msg.Error, 80))
	}
	if p := msg.OpenPanel; p != nil {
		if p.ID == "" {
			c.add(check, "fail", ms, "/%s opened a panel without an id (zot ignores it)", cmd.Name)
			return
		}
		what += fmt.Sprintf(", opens panel %q", p.ID)
		c.panels[p.ID] = true
	}
	c.add(check, "ok", ms, "/%s \"\" → %s (%d ms)", cmd.Name, what, *ms)
	if p := msg.OpenPanel; p != nil {
		// As the user pressing esc.
		delete(c.panels, p.ID)
		c.send(hostPanelFrame{Type: framePanelClose, PanelID: p.ID})
	}
}

func (c *extChecker) tool(tool extRegistration) {
	args := sampleArgs(tool.Schema)
	msg, ms, ok := c.await("tool", tool.Name, func(id string) any {
		return hostToolCall{Type: frameToolCall, ID: id, Name: tool.Name, Args: args}
	}, frameToolResult, c.lim.tool)
	if !ok {
		return
	}
	var kinds []string
	for i, b := range msg.Content {
		switch b.Type {
		case "text":
			kinds = append(kinds, "text")
		case "image":
			if _, err := base64.StdEncoding.DecodeString(b.Data); err != nil || !strings.HasPrefix(b.MimeType, "image/") {
				c.add("tool", "fail", ms, "%s: block %d is an invalid image: it needs mime_type image/… and standard base64 data", tool.Name, i)
				return
			}
			kinds = append(kinds, "image")
		default:
			c.add("tool", "fail", ms, "%s: block %d has unknown type %q (zot skips it)", tool.Name, i, b.Type)
			return
		}
	}
	what := fmt.Sprintf("%d block(s) [%s]", len(kinds), strings.Join(kinds, ", "))
	if len(kinds) == 0 {
		what = "no content (the model sees \"(no output)\")"
	}
	if msg.IsError {
		what += ", is_error: " + strconv.Quote(truncate((Message{Content: extBlocksText(msg.Content)}).Text(), 120))
	}
	c.add("tool", "ok", ms, "%s %s → %s (%d ms)", tool.Name, args, what, *ms)
}

func extBlocksText(blocks []extBlock) []Block {
	var out []Block
	for _, b := range blocks {
		if b.Type == "text" {
			out = append(out, TextBlock(b.Text))
		}
	}
	return out
}

// intercept sends one synthetic event_intercept and checks the decision.
func (c *extChecker) intercept(ev extEventName) {
	e := extEvent{Name: ev}
	subject := ""
	switch ev {
	case extEventToolCall:
		e.ToolID, e.ToolName, e.ToolArgs = "toolu_check", ToolBash, json.RawMessage(`{"command":"echo zot ext check"}`)
		subject = `bash {"command":"echo zot ext check"}`
	case extEventTurnStart:
		e.Step = 1
		subject = "step 1"
	case extEventAssistantMessage:
		e.Text = "zot ext check: a sample answer from the assistant."
		subject = strconv.Quote(e.Text)
	}
	check := "intercept"
	subject = string(ev) + ": " + subject
	msg, ms, ok := c.await(check, string(ev), func(id string) any {
		e.Frame, e.ID = frameEventIntercept, id
		return e
	}, frameInterceptResponse, c.lim.intercept)
	if !ok {
		return
	}
	decision := "allow"
	switch {
	case msg.Block:
		decision = "block"
		if msg.Reason != "" {
			decision += " " + strconv.Quote(truncate(msg.Reason, 80))
		}
	case ev == extEventToolCall && len(msg.ModifiedArgs) > 0 && string(msg.ModifiedArgs) != "null":
		if !isJSONObject(msg.ModifiedArgs) {
			c.add(check, "fail", ms, "%s: modified_args is not a JSON object: %s (zot ignores it; a fail_closed extension blocks)", ev, excerpt(msg.ModifiedArgs))
			return
		}
		decision = "rewrite to " + string(msg.ModifiedArgs)
	case ev == extEventAssistantMessage && msg.ReplaceText != "":
		decision = "replace with " + strconv.Quote(truncate(msg.ReplaceText, 80))
	}
	if ev != extEventToolCall && len(msg.ModifiedArgs) > 0 && string(msg.ModifiedArgs) != "null" {
		c.warn(check, "%s: modified_args only applies to tool_call; ignored", ev)
	}
	if ev != extEventAssistantMessage && msg.ReplaceText != "" {
		c.warn(check, "%s: replace_text only applies to assistant_message; ignored", ev)
	}
	status := "ok"
	if time.Duration(*ms)*time.Millisecond > time.Second {
		status = "warn"
		decision += "; slow: every " + string(ev) + " waits for this answer"
	}
	c.add(check, status, ms, "%s → %s (%d ms)", subject, decision, *ms)
}

// shutdown sends shutdown, closes stdin, and checks that the extension
// exits within the grace period; then it stops it as zot would.
func (c *extChecker) shutdown() {
	if c.proc == nil {
		return
	}
	sent := time.Now()
	if !c.gone {
		c.send(hostShutdown{Type: frameShutdown})
	}
	c.child.closeStdin()
	deadline := sent.Add(c.lim.grace)
	for !c.gone {
		f, got := c.next(max(time.Until(deadline), 0))
		if !got {
			break
		}
		if f.err == nil && f.msg.Type == frameShutdownAck {
			if c.acked.IsZero() {
				c.acked = f.at
			}
			continue
		}
		c.handle(f)
	}
	exited := false
	select {
	case <-c.exited:
		exited = true
	case <-time.After(max(time.Until(deadline), 0)):
	}
	ms := msSince(sent)
	ack := "no shutdown_ack (optional)"
	if !c.acked.IsZero() {
		ack = fmt.Sprintf("acked after %d ms", c.acked.Sub(sent).Milliseconds())
	}
	if !exited {
		c.add("shutdown", "fail", ms, "%s, but still running %s after shutdown: zot would send SIGTERM now", ack, c.lim.grace)
		// Not child.stop: its reader may wait on frames, drained below.
		c.proc.Stop(c.lim.term)
		<-c.exited
	} else {
		state := c.child.state
		status := "ok"
		if !state.Success() {
			status = "warn"
		}
		c.add("shutdown", status, ms, "%s; exited (%s) after %d ms", ack, state, *ms)
	}
	// What it wrote while exiting; the frames end soon after the exit.
	for f := range c.frames {
		if c.spoke && (f.err != nil || f.msg.Type != frameShutdownAck) {
			c.handle(f)
		}
	}
	c.gone = true
}

// maxCheckLines bounds the report of an extension that floods stdout.
const maxCheckLines = 200

// finish writes the summary lines and decides conformance.
func (c *extChecker) finish() {
	if c.proc != nil {
		if c.strayCount > 3 {
			c.fail("stdout", "%d more lines of stray output", c.strayCount-3)
		}
		if c.badFrames > 3 {
			c.fail("frame", "%d more malformed frames", c.badFrames-3)
		}
		if c.strayCount == 0 {
			c.ok("stdout", "every line was a JSON frame")
		}
		<-c.stderrDone // soon: the session is gone, and the pipe has a read deadline
		lines := c.stderr.lines(10)
		c.report.Stderr = lines
		if n := c.stderr.count; n > 0 {
			c.info("stderr", "%d line(s) (zot appends them to $ZOT_HOME/logs/ext-%s.log)", n, c.mf.Name)
		}
	}
	if c.dropped > 0 {
		c.report.Lines = append(c.report.Lines, checkLine{Check: "report", Status: "info",
			Message: fmt.Sprintf("%d more lines not shown, %d of them violations", c.dropped, c.droppedFails)})
		if c.droppedFails > 0 {
			c.report.Violations = append(c.report.Violations, fmt.Sprintf("report: %d more violations not shown", c.droppedFails))
		}
	}
	c.report.Conformant = len(c.report.Violations) == 0
}

// text is the report for a terminal.
func (r checkReport) text() string {
	var b strings.Builder
	name := r.Extension
	if name == "" {
		name = "?"
	}
	fmt.Fprintf(&b, "zot ext check: %s (%s)\n", name, r.Dir)
	for _, l := range r.Lines {
		fmt.Fprintf(&b, "  %-4s  %-16s %s\n", l.Status, l.Check, l.Message)
	}
	if len(r.Stderr) > 0 && !r.Conformant {
		b.WriteString("last lines of its stderr:\n")
		for _, l := range r.Stderr {
			fmt.Fprintf(&b, "  | %s\n", l)
		}
	}
	if r.Conformant {
		fmt.Fprintf(&b, "conformant (%d warning(s))\n", len(r.Warnings))
		return b.String()
	}
	fmt.Fprintf(&b, "not conformant: %d violation(s)\n", len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  - %s\n", v)
	}
	return b.String()
}

func frameExcerpt(f checkFrame) string {
	if f.tooLong {
		return "a line too long to read"
	}
	return excerpt(f.line)
}

// cappedTail keeps the last max bytes written to it and counts lines.
type cappedTail struct {
	buf   []byte
	max   int
	count int
}

func (t *cappedTail) Write(p []byte) (int, error) {
	t.count += bytes.Count(p, []byte("\n"))
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// lines returns the last n lines, safe for a terminal.
func (t *cappedTail) lines(n int) []string {
	all := strings.Split(strings.TrimRight(string(t.buf), "\n"), "\n")
	if len(all) == 1 && all[0] == "" {
		return []string{}
	}
	if len(all) > n {
		all = all[len(all)-n:]
	}
	for i := range all {
		all[i] = sanitize(all[i])
	}
	return all
}

// sampleArgs makes arguments for a tool from its schema: every property,
// each a plausible value of its type (const, enum, default, examples
// first).
func sampleArgs(schema json.RawMessage) json.RawMessage {
	v := sampleValue(schema, 0)
	if _, ok := v.(map[string]any); !ok {
		v = map[string]any{}
	}
	b, _ := json.Marshal(v)
	return b
}

func sampleValue(raw json.RawMessage, depth int) any {
	var s struct {
		Type       json.RawMessage            `json:"type"`
		Const      json.RawMessage            `json:"const"`
		Enum       []json.RawMessage          `json:"enum"`
		Default    json.RawMessage            `json:"default"`
		Examples   []json.RawMessage          `json:"examples"`
		Properties map[string]json.RawMessage `json:"properties"`
		Items      json.RawMessage            `json:"items"`
		Minimum    *float64                   `json:"minimum"`
		AnyOf      []json.RawMessage          `json:"anyOf"`
		OneOf      []json.RawMessage          `json:"oneOf"`
	}
	if depth > 6 || json.Unmarshal(raw, &s) != nil {
		return "zot-ext-check"
	}
	switch {
	case len(s.Const) > 0:
		return s.Const
	case len(s.Enum) > 0:
		return s.Enum[0]
	case len(s.Default) > 0:
		return s.Default
	case len(s.Examples) > 0:
		return s.Examples[0]
	case len(s.AnyOf) > 0:
		return sampleValue(s.AnyOf[0], depth+1)
	case len(s.OneOf) > 0:
		return sampleValue(s.OneOf[0], depth+1)
	}
	typ := ""
	var types []string
	if json.Unmarshal(s.Type, &typ) != nil && json.Unmarshal(s.Type, &types) == nil {
		for _, t := range types {
			if t != "null" {
				typ = t
				break
			}
		}
	}
	if typ == "" && s.Properties != nil {
		typ = "object"
	}
	switch typ {
	case "object":
		obj := map[string]any{}
		for name, p := range s.Properties {
			obj[name] = sampleValue(p, depth+1)
		}
		return obj
	case "array":
		if len(s.Items) == 0 {
			return []any{}
		}
		return []any{sampleValue(s.Items, depth+1)}
	case "integer", "number":
		if s.Minimum != nil {
			return *s.Minimum
		}
		return 1
	case "boolean":
		return true
	case "null":
		return nil
	}
	return "zot-ext-check"
}
