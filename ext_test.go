package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// extHarness runs a manager over real extension processes and records what
// it reports to its host.
type extHarness struct {
	t    *testing.T
	m    *ExtManager
	home string
	cwd  string

	track func() // remembers the running processes for the cleanup checks

	mu     sync.Mutex
	notes  []ExtNote
	panels []PanelUpdate
	logs   []string
}

// newExtHarness makes a manager with a private ZOT_HOME and cwd; tune
// shortens its limits. Cleanup shuts it down and checks that every process
// is reaped and every goroutine serving one has ended.
func newExtHarness(t *testing.T, tune func(*extLimits), paths ...string) *extHarness {
	t.Helper()
	return newExtHarnessReserving(t, nil, tune, paths...)
}

// onlyExtPaths discovers the directories given and nothing else, as
// zot --no-ext --ext DIR… does.
func onlyExtPaths(dirs []string) func() []*extFound {
	return func() []*extFound { return discoverExtensions("", "", dirs, true, nil) }
}

// newExtHarnessReserving is newExtHarness for a host whose UI has the slash
// commands reserved.
func newExtHarnessReserving(t *testing.T, reserved []string, tune func(*extLimits), paths ...string) *extHarness {
	t.Helper()
	h := &extHarness{t: t, home: t.TempDir(), cwd: t.TempDir()}
	h.m = NewExtManager(ExtConfig{
		Home: h.home, Cwd: h.cwd, Provider: "anthropic", Model: "claude-test",
		ReservedCommands: reserved,
		OnNote:           func(n ExtNote) { h.mu.Lock(); h.notes = append(h.notes, n); h.mu.Unlock() },
		OnPanel:          func(u PanelUpdate) { h.mu.Lock(); h.panels = append(h.panels, u); h.mu.Unlock() },
		Log: func(format string, args ...any) {
			h.mu.Lock()
			h.logs = append(h.logs, fmt.Sprintf(format, args...))
			h.mu.Unlock()
		},
	})
	h.m.cfg.Discover = onlyExtPaths(paths)
	// A loaded CI machine can take seconds to start a few interpreters,
	// and pause one for longer than the idle watchdog between two frames;
	// tests of these limits set their own.
	h.m.lim.hello, h.m.lim.startup, h.m.lim.idle = 20*time.Second, 20*time.Second, 5*time.Second
	if tune != nil {
		tune(&h.m.lim)
	}
	var seen []*extProc
	var seenMu sync.Mutex
	t.Cleanup(func() {
		h.m.Shutdown(context.Background())
		seenMu.Lock()
		defer seenMu.Unlock()
		for _, p := range seen {
			assertProcGone(t, p)
		}
	})
	// Remember every process the manager ever ran, across reloads.
	h.track = func() {
		seenMu.Lock()
		defer seenMu.Unlock()
		for _, p := range h.m.snapshot() {
			known := false
			for _, q := range seen {
				known = known || q == p
			}
			if !known {
				seen = append(seen, p)
			}
		}
	}
	return h
}

func assertProcGone(t *testing.T, p *extProc) {
	t.Helper()
	if !p.started() {
		return // a stand-in: no process, no goroutine
	}
	for name, ch := range map[string]chan struct{}{"exited": p.child.reaped, "reader": p.readerDone, "writer": p.writerDone, "copier": p.child.copierDone} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Errorf("extension %s: %s still running after shutdown", p.name(), name)
		}
	}
	// Orphaned children become zombies of an init that may never reap
	// them; groupAlive does not count those. A member killed a moment ago
	// may still be exiting on a busy machine, so this waits a while.
	for deadline := time.Now().Add(10 * time.Second); groupAlive(p.proc.pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("extension %s: its process group %d outlived it", p.name(), p.proc.pid)
			break
		}
	}
}

func (h *extHarness) start() ReloadStats {
	h.t.Helper()
	st := h.m.Start(context.Background())
	h.track()
	return st
}

func (h *extHarness) reload() ReloadStats {
	h.t.Helper()
	h.track()
	st := h.m.Reload(context.Background())
	h.track()
	return st
}

func (h *extHarness) proc(name string) *extProc {
	h.t.Helper()
	for _, p := range h.m.snapshot() {
		if p.name() == name {
			return p
		}
	}
	h.t.Fatalf("no running extension %q", name)
	return nil
}

func (h *extHarness) gotNotes() []ExtNote {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]ExtNote(nil), h.notes...)
}

func (h *extHarness) gotPanels() []PanelUpdate {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]PanelUpdate(nil), h.panels...)
}

func (h *extHarness) gotLogs() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.logs, "\n")
}

// extLogText is an extension's log file.
func (h *extHarness) extLogText(name string) string {
	b, _ := os.ReadFile(filepath.Join(h.home, "logs", "ext-"+name+".log"))
	return string(b)
}

func (h *extHarness) waitLog(name, want string) {
	h.t.Helper()
	waitFor(h.t, fmt.Sprintf("%q in the log of %s", want, name), func() bool { return strings.Contains(h.extLogText(name), want) })
}

func writeManifest(t testing.TB, dir string, manifest obj) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(manifest, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "extension.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func testdataPath(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "ext", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// scriptedBin is testdata/ext/scripted, built: an extension whose
// behaviour the JSON spec in its argument describes.
func scriptedBin(t testing.TB) string {
	t.Helper()
	return buildGo(t, testdataPath(t, "scripted"))
}

// scriptedExt is a directory holding a manifest that runs scripted with
// spec; extra fields go into the manifest.
func scriptedExt(t testing.TB, name string, spec obj, extra ...obj) string {
	t.Helper()
	b, _ := json.Marshal(spec)
	mf := obj{"name": name, "version": "1.0.0", "exec": scriptedBin(t), "args": []string{string(b)}, "language": "go"}
	for _, e := range extra {
		for k, v := range e {
			mf[k] = v
		}
	}
	return writeManifest(t, filepath.Join(t.TempDir(), name), mf)
}

// scriptExt runs one of the scripts in testdata/ext.
func scriptExt(t testing.TB, name, script string, extra ...obj) string {
	t.Helper()
	mf := obj{"name": name, "exec": testdataPath(t, script)}
	for _, e := range extra {
		for k, v := range e {
			mf[k] = v
		}
	}
	return writeManifest(t, filepath.Join(t.TempDir(), name), mf)
}

// recordedFrames reads what scripted recorded.
func recordedFrames(t *testing.T, path string) []obj {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []obj
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var o obj
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatalf("recorded line %q: %v", sc.Text(), err)
		}
		out = append(out, o)
	}
	return out
}

func framesOfType(frames []obj, typ string) []obj {
	var out []obj
	for _, f := range frames {
		if f["type"] == typ {
			out = append(out, f)
		}
	}
	return out
}

func TestExtHandshakeRegistersCommandsToolsAndSubscriptions(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "frames.jsonl")
	dir := scriptedExt(t, "basic", obj{
		"record":   rec,
		"wait_ack": true,
		"frames": []obj{
			{"type": "register_command", "name": "greet", "description": "say hi"},
			{"type": "register_tool", "name": "lookup", "description": "look up", "schema": obj{"type": "object", "properties": obj{"q": obj{"type": "string"}}}},
			{"type": "subscribe", "events": []string{"turn_start"}},
			{"type": "subscribe", "events": []string{"turn_end"}, "intercept": []string{"tool_call"}},
		},
	})
	h := newExtHarness(t, nil, dir)
	st := h.start()
	if st.Loaded != 1 || st.Ready != 1 || len(st.Errors) != 0 {
		t.Fatalf("stats = %+v, logs %s", st, h.gotLogs())
	}
	if got := h.m.Commands(); len(got) != 1 || got[0] != (ExtCommand{Name: "greet", Description: "say hi", Extension: "basic"}) {
		t.Errorf("commands = %+v", got)
	}
	a := NewAgent(nil, "m", NewToolRegistry())
	a.Tools.SetSource("builtin", BuiltinTools(NewToolEnv(t.TempDir(), false)))
	h.m.Attach(a)
	tool, ok := a.Tools.Lookup("lookup")
	if !ok || tool.Description() != "look up" || !strings.Contains(string(tool.Schema()), `"q"`) {
		t.Fatalf("tool lookup = %v %v", tool, ok)
	}
	p := h.proc("basic")
	if !p.subscribed("turn_start") || !p.subscribed("turn_end") || !p.intercepts("tool_call") || p.subscribed("tool_call") {
		t.Errorf("subscriptions do not accumulate: events %v intercept %v", p.events, p.intercept)
	}
	acks := framesOfType(recordedFrames(t, rec), "hello_ack")
	if len(acks) != 1 {
		t.Fatalf("hello_ack frames = %v", acks)
	}
	ack := acks[0]
	want := obj{"protocol_version": 1.0, "zot_version": version, "provider": "anthropic", "model": "claude-test", "cwd": h.cwd, "extension_dir": dir}
	for k, v := range want {
		if ack[k] != v {
			t.Errorf("hello_ack %s = %v, want %v", k, ack[k], v)
		}
	}
	dataDir, _ := ack["data_dir"].(string)
	if st, err := os.Stat(dataDir); err != nil || !st.IsDir() || !strings.HasPrefix(dataDir, h.home) {
		t.Errorf("data_dir %q is not a directory under ZOT_HOME: %v", dataDir, err)
	}
}

func TestExtRegistrationsBeforeReadingHelloAck(t *testing.T) {
	t.Parallel()
	h := newExtHarness(t, nil, scriptExt(t, "eager", "eager.sh"))
	if st := h.start(); st.Ready != 1 {
		t.Fatalf("stats = %+v", st)
	}
	if c := h.m.Commands(); len(c) != 1 || c[0].Name != "eager" {
		t.Errorf("commands = %+v", c)
	}
	h.waitLog("eager", "got ack")
}

func TestExtIdleCountsAsReady(t *testing.T) {
	t.Parallel()
	h := newExtHarness(t, func(l *extLimits) { l.idle = defaultExtLimits.idle }, scriptExt(t, "noready", "noready.sh"))
	if st := h.start(); st.Ready != 1 {
		t.Fatalf("stats = %+v, logs %s", st, h.gotLogs())
	}
	if c := h.m.Commands(); len(c) != 1 || c[0].Name != "late" {
		t.Errorf("commands = %+v", c)
	}
	h.waitLog("noready", "no ready frame; counted as ready after 250ms")
}

func TestExtWithoutHelloIsStoppedAndReported(t *testing.T) {
	t.Parallel()
	h := newExtHarness(t, func(l *extLimits) { l.hello = 300 * time.Millisecond }, scriptExt(t, "silent", "nohello.sh"))
	st := h.start()
	if st.Ready != 0 || len(st.Errors) != 1 || !strings.Contains(st.Errors[0], `extension "silent" no hello within 300ms; see `+filepath.Join(h.home, "logs", "ext-silent.log")) {
		t.Fatalf("stats = %+v", st)
	}
	p := h.proc("silent")
	waitFor(t, "the process to be stopped", func() bool {
		select {
		case <-p.child.reaped:
			return true
		default:
			return false
		}
	})
	if !strings.Contains(h.gotLogs(), "no hello within 300ms") {
		t.Errorf("not reported to the user: %s", h.gotLogs())
	}
	h.waitLog("silent", "thinking about it")
}

func TestExtFirstFrameMustBeHello(t *testing.T) {
	t.Parallel()
	h := newExtHarness(t, nil, scriptedExt(t, "rude", obj{"first_line": `{"type":"register_command","name":"x"}`}))
	st := h.start()
	if st.Ready != 0 || len(st.Errors) != 1 || !strings.Contains(st.Errors[0], "first frame must be hello") {
		t.Fatalf("stats = %+v", st)
	}
	if len(h.m.Commands()) != 0 {
		t.Errorf("registered without hello: %+v", h.m.Commands())
	}
}

func TestExtStartsAllTogether(t *testing.T) {
	t.Parallel()
	var dirs []string
	for i := range 8 {
		dirs = append(dirs, scriptExt(t, fmt.Sprintf("idle%d", i), "noready.sh"))
	}
	dirs = append(dirs, scriptExt(t, "silent", "nohello.sh"))
	h := newExtHarness(t, func(l *extLimits) { l.startup, l.idle = 1500*time.Millisecond, defaultExtLimits.idle }, dirs...)
	st := h.start()
	if st.Loaded != 9 || st.Ready != 8 {
		t.Fatalf("stats = %+v", st)
	}
	if !strings.Contains(h.gotLogs(), `extension "silent" is not ready after 1.5s; going on without it`) {
		t.Errorf("logs: %s", h.gotLogs())
	}
}

func TestExtCommandResponses(t *testing.T) {
	t.Parallel()
	dir := scriptedExt(t, "cmds", obj{
		"commands": obj{
			"p":     obj{"action": "prompt", "prompt": "do {args}"},
			"i":     obj{"action": "insert", "insert": "text"},
			"d":     obj{"action": "display", "display": "shown"},
			"n":     obj{"action": "noop"},
			"e":     obj{"action": "display", "display": "x", "error": "it failed"},
			"weird": obj{"action": "dance"},
			"mute":  obj{"silent": true},
		},
		"frames": []obj{
			{"type": "register_command", "name": "p"}, {"type": "register_command", "name": "i"},
			{"type": "register_command", "name": "d"}, {"type": "register_command", "name": "n"},
			{"type": "register_command", "name": "e"}, {"type": "register_command", "name": "weird"},
			{"type": "register_command", "name": "mute"},
		},
	})
	h := newExtHarness(t, nil, dir)
	h.start()
	ctx := context.Background()
	tests := []struct {
		name, args string
		want       CommandResponse
	}{
		{"p", "  the thing  ", CommandResponse{Action: "prompt", Prompt: "do the thing"}},
		{"/i", "", CommandResponse{Action: "insert", Insert: "text"}},
		{"d", "", CommandResponse{Action: "display", Display: "shown"}},
		{"n", "", CommandResponse{Action: "noop"}},
		{"e", "", CommandResponse{Action: "display", Display: "x", Error: "it failed"}},
		{"weird", "", CommandResponse{Action: "noop", Error: `extension "cmds" answered /weird with unknown action "dance"`}},
	}
	for _, tt := range tests {
		got, err := h.m.InvokeCommand(ctx, tt.name, tt.args)
		if err != nil || got.Action != tt.want.Action || got.Prompt != tt.want.Prompt || got.Insert != tt.want.Insert ||
			got.Display != tt.want.Display || got.Error != tt.want.Error || got.Panel != nil {
			t.Errorf("/%s: %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
	// Short only for the call meant to run out of time, so that a loaded
	// machine cannot make the others late.
	h.m.lim.command = 300 * time.Millisecond
	if _, err := h.m.InvokeCommand(ctx, "mute", ""); err == nil || !strings.Contains(err.Error(), `extension "cmds" did not answer within 300ms`) {
		t.Errorf("silent command: %v", err)
	}
	if _, err := h.m.InvokeCommand(ctx, "nope", ""); err == nil || !strings.Contains(err.Error(), "no extension has a command /nope") {
		t.Errorf("unknown command: %v", err)
	}
}

func TestExtToolCallsAndResults(t *testing.T) {
	t.Parallel()
	dir := scriptedExt(t, "tools", obj{
		"tools": obj{
			"echo":  obj{"echo": true, "image": true},
			"fails": obj{"text": "no such city", "is_error": true},
			"mute":  obj{"silent": true},
			"junk":  obj{"raw": `{"type":"tool_result","id":"{id}","content":[{"type":"image","mime_type":"image/png","data":"%%%"},{"type":"video"}]}`},
		},
		"frames": []obj{
			{"type": "register_tool", "name": "echo", "schema": obj{"type": "object"}},
			{"type": "register_tool", "name": "fails"},
			{"type": "register_tool", "name": "mute", "schema": obj{"type": "object"}},
			{"type": "register_tool", "name": "junk", "schema": obj{"type": "object"}},
			{"type": "register_tool", "name": "arrayschema", "schema": []int{1}},
		},
	})
	h := newExtHarness(t, nil, dir)
	h.start()
	a := NewAgent(nil, "m", NewToolRegistry())
	h.m.Attach(a)
	run := func(name, args string) ToolResult {
		tool, ok := a.Tools.Lookup(name)
		if !ok {
			t.Fatalf("no tool %s", name)
		}
		return tool.Run(context.Background(), json.RawMessage(args), func(string) {})
	}
	r := run("echo", `{"city":"Berlin"}`)
	if r.IsError || len(r.Content) != 2 || r.Content[0].Text != `args={"city":"Berlin"}` || r.Content[1].Type != "image" || r.Content[1].MimeType != "image/png" || r.Details != "extension tools" {
		t.Errorf("echo = %+v", r)
	}
	if tool, _ := a.Tools.Lookup("fails"); string(tool.Schema()) != `{"type":"object","properties":{}}` {
		t.Errorf("a tool without a schema gets an empty object schema, not %s", tool.Schema())
	}
	if r := run("fails", `{}`); !r.IsError || r.Content[0].Text != "no such city" {
		t.Errorf("fails = %+v", r)
	}
	h.m.lim.tool = 300 * time.Millisecond // as for commands above
	if r := run("mute", `{}`); !r.IsError || !strings.Contains(r.Content[0].Text, `extension "tools" did not answer within 300ms`) || r.Details != "extension tools" {
		t.Errorf("mute = %+v", r)
	}
	if r := run("junk", `{}`); r.IsError || len(r.Content) != 1 || r.Content[0].Text != "[extension tools sent an invalid image]" {
		t.Errorf("junk = %+v", r)
	}
	if _, ok := a.Tools.Lookup("arrayschema"); ok {
		t.Error("a tool whose schema is not an object was registered")
	}
	h.waitLog("tools", `refused tool "arrayschema": schema must be a JSON object`)
	h.waitLog("tools", `unknown type "video" skipped`)
}

// TestExtToolSchemaMustBeOfTypeObject: providers refuse a tool whose
// arguments are not an object (and then every request fails), so such a
// registration is refused, and a schema without "type" gets "object".
func TestExtToolSchemaMustBeOfTypeObject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema string
		want         string // the schema offered to the model; "" for refused
	}{
		{"stringy", `{"type":"string"}`, ""},
		{"nullable", `{"type":["object","null"]}`, ""},
		{"typeless", `{"properties":{"a":{"type":"string"}},"required":["a"]}`, `{"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"}`},
		{"nulltype", `{"type":null}`, `{"type":"object"}`},
		{"object", `{"type":"object","properties":{"b":{"type":"integer"}}}`, `{"type":"object","properties":{"b":{"type":"integer"}}}`},
	}
	var frames []obj
	for _, tt := range tests {
		frames = append(frames, obj{"type": "register_tool", "name": tt.name, "schema": json.RawMessage(tt.schema)})
	}
	h := newExtHarness(t, nil, scriptedExt(t, "schemas", obj{"frames": frames}))
	h.start()
	a := NewAgent(nil, "m", NewToolRegistry())
	h.m.Attach(a)
	for _, tt := range tests {
		tool, ok := a.Tools.Lookup(tt.name)
		var schema bytes.Buffer
		if ok {
			json.Compact(&schema, tool.Schema()) // as the extension spaced it
		}
		switch {
		case tt.want == "" && ok:
			t.Errorf("%s: registered with %s", tt.name, tool.Schema())
		case tt.want == "":
			h.waitLog("schemas", fmt.Sprintf(`refused tool %q: schema "type" must be "object", got `, tt.name))
		case !ok:
			t.Errorf("%s: not registered", tt.name)
		case schema.String() != tt.want:
			t.Errorf("%s: schema %s, want %s", tt.name, schema.String(), tt.want)
		}
	}
}

func TestExtNotifyAndClearNotes(t *testing.T) {
	t.Parallel()
	dir := scriptedExt(t, "noisy", obj{"frames": []obj{
		{"type": "notify", "level": "warn", "message": "careful"},
		{"type": "notify", "level": "shout", "message": "loud"},
		{"type": "clear_notes"},
		{"type": "notify", "level": "success", "message": "done"},
	}})
	h := newExtHarness(t, nil, dir)
	h.start()
	want := []ExtNote{
		{Extension: "noisy", Level: "warn", Message: "careful"},
		{Extension: "noisy", Level: "info", Message: "loud"},
		{Extension: "noisy", Clear: true},
		{Extension: "noisy", Level: "success", Message: "done"},
	}
	waitFor(t, "four notes", func() bool { return len(h.gotNotes()) == 4 })
	for i, n := range h.gotNotes() {
		if n != want[i] {
			t.Errorf("note %d = %+v, want %+v", i, n, want[i])
		}
	}
}

func TestExtPanels(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "frames.jsonl")
	dir := scriptedExt(t, "paneled", obj{
		"record": rec,
		"panels": true,
		"commands": obj{
			"open":  obj{"action": "noop", "open_panel": obj{"id": "p1", "title": "Pick", "lines": []string{"a", "b"}, "footer": "esc closes"}},
			"open2": obj{"action": "noop", "open_panel": obj{"id": "p2", "title": "Other"}},
		},
		"frames": []obj{{"type": "register_command", "name": "open"}, {"type": "register_command", "name": "open2"}},
	})
	h := newExtHarness(t, nil, dir)
	h.start()
	resp, err := h.m.InvokeCommand(context.Background(), "open", "")
	if err != nil || resp.Panel == nil || resp.Panel.ID != "p1" || resp.Panel.Extension != "paneled" || len(resp.Panel.Lines) != 2 {
		t.Fatalf("open = %+v %v", resp, err)
	}
	// The open reached the UI before InvokeCommand returned.
	if got := h.gotPanels(); len(got) != 1 || got[0].Kind != "open" || got[0].Panel.Title != "Pick" || got[0].Panel.Footer != "esc closes" {
		t.Fatalf("panel updates = %+v", got)
	}
	if err := h.m.PanelKey("p1", "rune", "x"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a render", func() bool { return len(h.gotPanels()) == 2 })
	if u := h.gotPanels()[1]; u.Kind != "render" || u.Panel.ID != "p1" || u.Panel.Lines[0] != "key=rune text=x" || u.Panel.Extension != "paneled" {
		t.Errorf("render = %+v", u)
	}
	h.m.PanelKey("p1", "rune", "q")
	waitFor(t, "the extension closing its panel", func() bool { return len(h.gotPanels()) == 3 })
	if u := h.gotPanels()[2]; u.Kind != "close" || u.Panel.ID != "p1" {
		t.Errorf("close = %+v", u)
	}
	if err := h.m.PanelKey("p1", "down", ""); err == nil {
		t.Error("a key for a closed panel was accepted")
	}
	h.m.InvokeCommand(context.Background(), "open2", "")
	if err := h.m.ClosePanel("p2"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "panel_close to reach the extension", func() bool {
		c := framesOfType(recordedFrames(t, rec), "panel_close")
		return len(c) == 1 && c[0]["panel_id"] == "p2"
	})
	keys := framesOfType(recordedFrames(t, rec), "panel_key")
	if len(keys) != 2 || keys[0]["panel_id"] != "p1" || keys[0]["key"] != "rune" || keys[0]["text"] != "x" {
		t.Errorf("panel_key frames = %v", keys)
	}
}

func TestExtEventsReachSubscribersInOrder(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "frames.jsonl")
	dir := scriptedExt(t, "watcher", obj{"record": rec, "frames": []obj{
		{"type": "subscribe", "events": []string{"session_start", "turn_start", "tool_call", "turn_end", "assistant_message", "no_such_event"}},
	}})
	deafRec := filepath.Join(t.TempDir(), "deaf.jsonl")
	other := scriptedExt(t, "deaf", obj{"record": deafRec})
	h := newExtHarness(t, nil, dir, other)
	h.start()
	h.m.SessionStart()
	h.m.SessionStart()
	for _, e := range []Event{
		{Type: "user_message"},
		{Type: "turn_start", Step: 1},
		{Type: "text_delta", Delta: "hi"},
		{Type: "assistant_message", Content: []Block{TextBlock("hello "), {Type: "tool_call", ID: "c1"}, TextBlock("there")}},
		{Type: "tool_call", ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)},
		{Type: "tool_result", ID: "c1"},
		{Type: "turn_end", Stop: "error", Error: "boom"},
		{Type: "done"},
	} {
		h.m.Observe(e)
	}
	var got []string
	waitFor(t, "the events", func() bool {
		got = nil
		for _, f := range framesOfType(recordedFrames(t, rec), "event") {
			b, _ := json.Marshal(f)
			got = append(got, string(b))
		}
		return len(got) >= 5
	})
	want := []string{
		`{"event":"session_start","type":"event"}`,
		`{"event":"turn_start","step":1,"type":"event"}`,
		`{"event":"assistant_message","text":"hello there","type":"event"}`,
		`{"event":"tool_call","tool_args":{"command":"ls"},"tool_id":"c1","tool_name":"bash","type":"event"}`,
		`{"error":"boom","event":"turn_end","stop":"error","type":"event"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	h.waitLog("watcher", "subscribe: ignored event no_such_event")
	h.m.Shutdown(context.Background())
	if f := framesOfType(recordedFrames(t, deafRec), "event"); len(f) != 0 {
		t.Errorf("an extension that did not subscribe got events: %v", f)
	}
}

// TestExtEventOrderUnderLoad floods a subscriber that is not reading: the
// agent never waits, the oldest events are dropped (and logged), and what
// arrives arrives in order, ending with the newest.
func TestExtEventOrderUnderLoad(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "events.jsonl")
	hold := filepath.Join(t.TempDir(), "go")
	dir := writeManifest(t, filepath.Join(t.TempDir(), "recorder"), obj{"name": "recorder", "exec": "node", "args": []string{testdataPath(t, "recorder.js"), out, hold}})
	h := newExtHarness(t, func(l *extLimits) { l.queue = 200 }, dir)
	if st := h.start(); st.Ready != 1 {
		t.Fatalf("stats %+v", st)
	}
	const n = 20000
	for i := 1; i <= n; i++ {
		h.m.Observe(Event{Type: "turn_start", Step: i})
	}
	os.WriteFile(hold, nil, 0o644)
	var steps []int
	waitFor(t, "the newest event", func() bool {
		steps = steps[:0]
		b, _ := os.ReadFile(out)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var ev struct{ Step int }
			if json.Unmarshal([]byte(line), &ev) == nil {
				steps = append(steps, ev.Step)
			}
		}
		return len(steps) > 0 && steps[len(steps)-1] == n
	})
	for i := 1; i < len(steps); i++ {
		if steps[i] <= steps[i-1] {
			t.Fatalf("event %d (step %d) after step %d: out of order", i, steps[i], steps[i-1])
		}
	}
	if len(steps) >= n {
		t.Errorf("nothing was dropped: %d events", len(steps))
	}
	h.waitLog("recorder", "oldest events: the extension reads too slowly")
}

// diedOf is the error of an extension whose stdout ended as its process
// exited with status: which of the two came first to zot decides whether
// the exit status is in the error or (later) only in the log.
func diedOf(h *extHarness, name, status string) []string {
	logPath := filepath.Join(h.home, "logs", "ext-"+name+".log")
	return []string{
		fmt.Sprintf("extension %q exited (%s); see %s", name, status, logPath),
		fmt.Sprintf("extension %q closed its stdout; see %s", name, logPath),
	}
}

func TestExtCrashMidCallFailsAtOnce(t *testing.T) {
	t.Parallel()
	h := newExtHarness(t, nil, scriptExt(t, "crash", "crash.sh"))
	h.start()
	a := NewAgent(nil, "m", NewToolRegistry())
	h.m.Attach(a)
	tool, _ := a.Tools.Lookup("boom")
	r := tool.Run(context.Background(), json.RawMessage(`{}`), func(string) {})
	want := r.Content[0].Text
	if !r.IsError || !slices.Contains(diedOf(h, "crash", "exit status 3"), want) {
		t.Fatalf("result = %+v, want one of %q", r, diedOf(h, "crash", "exit status 3"))
	}
	h.waitLog("crash", "exited (exit status 3)")
	// Until a reload, the tool and the command answer with the same error.
	if r := tool.Run(context.Background(), json.RawMessage(`{}`), func(string) {}); r.Content[0].Text != want {
		t.Errorf("second call = %+v", r)
	}
	if _, err := h.m.InvokeCommand(context.Background(), "boom", ""); err == nil || err.Error() != want {
		t.Errorf("command = %v", err)
	}
	waitFor(t, "the crash to be reported", func() bool { return strings.Contains(h.gotLogs(), want) })
	h.waitLog("crash", "crashing on purpose")
}

// TestExtStdoutClosedFailsCallsAtOnce: an extension that closes its
// stdout but keeps running can no longer answer; the call waiting on it
// fails then, not at its timeout nor after a grace period. Its exit status,
// which comes later, goes to its log.
func TestExtStdoutClosedFailsCallsAtOnce(t *testing.T) {
	t.Parallel()
	// Only the end of its stdout can end the call with this error: the
	// tool timeout ends it with another, and the wait for a process whose
	// stdin is not read never ends it.
	h := newExtHarness(t, func(l *extLimits) { l.tool, l.gone = 20*time.Second, time.Hour }, scriptExt(t, "hangup", "hangup.sh"))
	h.start()
	a := NewAgent(nil, "m", NewToolRegistry())
	h.m.Attach(a)
	tool, _ := a.Tools.Lookup("hangup")
	r := tool.Run(context.Background(), json.RawMessage(`{}`), func(string) {})
	want := `extension "hangup" closed its stdout; see ` + filepath.Join(h.home, "logs", "ext-hangup.log")
	if !r.IsError || r.Content[0].Text != want {
		t.Fatalf("result = %+v, want %q", r, want)
	}
	// It exits only when its stdin is closed, which zot does once it is
	// dead; and its exit status then goes to its log.
	h.waitLog("hangup", "closing stdout, still running")
	h.waitLog("hangup", "exited (exit status 0)")
}

func TestExtReplyJustBeforeExitArrives(t *testing.T) {
	t.Parallel()
	dir := scriptedExt(t, "oneshot", obj{
		"tools":  obj{"bye": obj{"text": "last words", "exit_after": 0}},
		"frames": []obj{{"type": "register_tool", "name": "bye"}},
	})
	h := newExtHarness(t, nil, dir)
	h.start()
	a := NewAgent(nil, "m", NewToolRegistry())
	h.m.Attach(a)
	tool, _ := a.Tools.Lookup("bye")
	if r := tool.Run(context.Background(), json.RawMessage(`{}`), func(string) {}); r.IsError || r.Content[0].Text != "last words" {
		t.Fatalf("result = %+v", r)
	}
	if r := tool.Run(context.Background(), json.RawMessage(`{}`), func(string) {}); !r.IsError || !slices.Contains(diedOf(h, "oneshot", "exit status 0"), r.Content[0].Text) {
		t.Errorf("after the exit: %+v", r)
	}
}

func TestExtSkipsGarbageAndHugeLines(t *testing.T) {
	t.Parallel()
	big := scriptedExt(t, "big", obj{"big_line": 9 << 20, "frames": []obj{{"type": "register_tool", "name": "after_big", "schema": obj{"type": "object"}}}})
	h := newExtHarness(t, nil, scriptExt(t, "garbage", "garbage.sh"), big)
	if st := h.start(); st.Ready != 2 {
		t.Fatalf("stats = %+v %s", st, h.gotLogs())
	}
	a := NewAgent(nil, "m", NewToolRegistry())
	h.m.Attach(a)
	// Writing the oversize line can take longer than the idle watchdog, so
	// "big" may count as ready before its registration arrives.
	for _, name := range []string{"after_garbage", "after_big"} {
		waitFor(t, "tool "+name+" registered after the junk", func() bool {
			_, ok := a.Tools.Lookup(name)
			return ok
		})
	}
	for _, want := range []string{`skipped a bad frame "this is not json"`, `unknown type "no_such_frame"`, `unknown id "999999999"`,
		`skipped a bad frame "[1,2,3]"`, `refused tool "badschema"`, `refused register_tool: name "bad name!"`} {
		h.waitLog("garbage", want)
	}
	h.waitLog("big", "skipped a frame longer than 8388608 bytes")
	if len(h.gotNotes()) != 0 {
		t.Errorf("the oversize notify got through: %d notes", len(h.gotNotes()))
	}
}

func TestExtShutdownEscalatesToSIGKILL(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	before := runtime.NumGoroutine()
	h := newExtHarness(t, func(l *extLimits) { l.grace, l.term = 200*time.Millisecond, 200*time.Millisecond }, scriptExt(t, "stubborn", "stubborn.sh"))
	h.start()
	p := h.proc("stubborn")
	h.m.Shutdown(context.Background())
	assertProcGone(t, p)
	log := h.extLogText("stubborn")
	for _, want := range []string{"no exit 200ms after shutdown; sending SIGTERM", "no exit 200ms after SIGTERM; sending SIGKILL", "stopped (signal: killed)"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

func TestExtShutdownIsGracefulForWellBehavedOnes(t *testing.T) {
	t.Parallel()
	h := newExtHarness(t, nil, scriptedExt(t, "polite", obj{}))
	h.start()
	h.m.Shutdown(context.Background())
	log := h.extLogText("polite")
	if !strings.Contains(log, "shutdown acknowledged") || !strings.Contains(log, "stopped (exit status 0)") || strings.Contains(log, "SIGTERM") {
		t.Errorf("log:\n%s", log)
	}
}

func TestExtReloadRespawnsAndRebuildsTools(t *testing.T) {
	t.Parallel()
	dir := scriptedExt(t, "live", obj{"frames": []obj{{"type": "register_tool", "name": "v1", "schema": obj{"type": "object"}}}})
	h := newExtHarness(t, nil, dir)
	h.start()
	a := NewAgent(nil, "m", NewToolRegistry())
	h.m.Attach(a)
	old := h.proc("live")
	oldTool, ok := a.Tools.Lookup("v1")
	if !ok {
		t.Fatal("no v1")
	}
	// The author edits the extension; a reload picks the change up.
	b, _ := json.Marshal(obj{"frames": []obj{{"type": "register_tool", "name": "v2", "schema": obj{"type": "object"}}}})
	writeManifest(t, dir, obj{"name": "live", "exec": scriptedBin(t), "args": []string{string(b)}})
	st := h.reload()
	if st.Stopped != 1 || st.Loaded != 1 || st.Ready != 1 || len(st.Errors) != 0 {
		t.Fatalf("stats = %+v", st)
	}
	if _, ok := a.Tools.Lookup("v1"); ok {
		t.Error("v1 survived the reload")
	}
	if _, ok := a.Tools.Lookup("v2"); !ok {
		t.Error("v2 missing after the reload")
	}
	assertProcGone(t, old)
	if r := oldTool.Run(context.Background(), json.RawMessage(`{}`), func(string) {}); !r.IsError || !strings.Contains(r.Content[0].Text, "was stopped") {
		t.Errorf("a call on the old process = %+v", r)
	}
}

func TestExtConflictsFirstInLoadOrderWins(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	reg := func(name string, tools, cmds []string) {
		var frames []obj
		for _, n := range tools {
			frames = append(frames, obj{"type": "register_tool", "name": n, "schema": obj{"type": "object"}})
		}
		for _, n := range cmds {
			frames = append(frames, obj{"type": "register_command", "name": n})
		}
		b, _ := json.Marshal(obj{"frames": frames, "tools": obj{"dup": obj{"text": "from " + name}}})
		writeManifest(t, filepath.Join(home, "extensions", name), obj{"name": name, "exec": scriptedBin(t), "args": []string{string(b)}})
	}
	reg("alpha", []string{"read", "dup", "mine"}, []string{"help", "dup"})
	reg("beta", []string{"dup", "skill"}, []string{"dup", "own"})
	h := newExtHarnessReserving(t, []string{"/help", "model"}, nil)
	h.m.cfg.Home, h.home = home, home
	h.m.cfg.Discover = func() []*extFound { return discoverExtensions(home, h.cwd, nil, false, nil) }
	h.start()
	a := NewAgent(nil, "m", NewToolRegistry())
	a.Tools.SetSource("builtin", BuiltinTools(NewToolEnv(t.TempDir(), false)))
	h.m.Attach(a)
	if tool, _ := a.Tools.Lookup("read"); tool.Description() != (readTool{}).Description() {
		t.Error("an extension replaced the built-in read")
	}
	dup, _ := a.Tools.Lookup("dup")
	if r := dup.Run(context.Background(), json.RawMessage(`{}`), func(string) {}); r.Content[0].Text != "from alpha" {
		t.Errorf("dup answered by %+v", r)
	}
	var cmds []string
	for _, c := range h.m.Commands() {
		cmds = append(cmds, c.Extension+":"+c.Name)
	}
	if strings.Join(cmds, " ") != "alpha:dup beta:own" {
		t.Errorf("commands = %v", cmds)
	}
	h.waitLog("alpha", "shadowed: tool read (the built-in tool wins)")
	h.waitLog("alpha", "shadowed: command /help (a built-in command wins)")
	h.waitLog("beta", `shadowed: tool dup (extension "alpha" loads first)`)
	h.waitLog("beta", `shadowed: command /dup (extension "alpha" loads first)`)
	h.waitLog("beta", "shadowed: tool skill (the built-in tool wins)")

	// zot ext list shows them.
	var out strings.Builder
	c := &extCLI{home: home, cwd: t.TempDir(), stdout: &out}
	if err := c.list(true); err != nil {
		t.Fatal(err)
	}
	var rows []extListRow
	json.Unmarshal([]byte(out.String()), &rows)
	if len(rows) != 2 || strings.Join(rows[1].Shadowed, "; ") != `command /dup (extension "alpha" loads first); tool dup (extension "alpha" loads first); tool skill (the built-in tool wins)` {
		t.Errorf("list = %s", out.String())
	}
	// The state files behind it are written whole, private, with nothing
	// left beside them.
	entries, _ := os.ReadDir(filepath.Join(home, "logs"))
	for _, e := range entries {
		info, err := e.Info()
		switch {
		case err != nil:
			t.Error(err)
		case !strings.HasSuffix(e.Name(), ".log") && !strings.HasSuffix(e.Name(), ".state.json"):
			t.Errorf("left in logs: %s", e.Name())
		case info.Mode().Perm() != 0o600:
			t.Errorf("%s has mode %v, want 0600", e.Name(), info.Mode().Perm())
		}
	}
}

// TestExtReservedCommandsComeFromTheHost: only the slash commands the host
// UI reserves are kept from extensions; a mode without slash commands of
// its own (-p, --json, rpc) reserves none.
func TestExtReservedCommandsComeFromTheHost(t *testing.T) {
	t.Parallel()
	dir := scriptedExt(t, "cmds", obj{"frames": []obj{
		{"type": "register_command", "name": "help"},
		{"type": "register_command", "name": "model"},
	}})
	names := func(h *extHarness) string {
		var out []string
		for _, c := range h.m.Commands() {
			out = append(out, c.Name)
		}
		return strings.Join(out, " ")
	}
	h := newExtHarness(t, nil, dir)
	h.start()
	if got := names(h); got != "help model" {
		t.Errorf("with nothing reserved, commands = %q", got)
	}
	h = newExtHarnessReserving(t, []string{"/help"}, nil, dir)
	h.start()
	if got := names(h); got != "model" {
		t.Errorf("with /help reserved, commands = %q", got)
	}
	h.waitLog("cmds", "shadowed: command /help (a built-in command wins)")
}

// TestExtShadowedExtIsReported: of two --ext paths with the same manifest
// name the first runs, and the second is reported, not dropped silently.
func TestExtShadowedExtIsReported(t *testing.T) {
	t.Parallel()
	first := scriptedExt(t, "same", obj{"frames": []obj{{"type": "register_command", "name": "first"}}})
	second := scriptedExt(t, "same", obj{"frames": []obj{{"type": "register_command", "name": "second"}}})
	h := newExtHarness(t, nil, first, second)
	st := h.start()
	want := fmt.Sprintf(`extension "same" in %s is shadowed by the --ext %s of the same name; not started`, second, first)
	if st.Loaded != 1 || len(st.Errors) != 1 || st.Errors[0] != want || h.gotLogs() != want {
		t.Errorf("stats %+v, logs %q; want %q", st, h.gotLogs(), want)
	}
	if cmds := h.m.Commands(); len(cmds) != 1 || cmds[0].Name != "first" {
		t.Errorf("commands %+v", cmds)
	}
}

func TestExtDiscoveryPrecedenceAndBadManifests(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	global := filepath.Join(home, "extensions")
	project := filepath.Join(cwd, ".zot", "extensions")
	writeManifest(t, filepath.Join(global, "a-dup"), obj{"name": "dup", "exec": "/bin/true", "version": "global"})
	writeManifest(t, filepath.Join(project, "z-dup"), obj{"name": "dup", "exec": "/bin/true", "version": "project"})
	flag := writeManifest(t, filepath.Join(t.TempDir(), "mine"), obj{"name": "dup", "exec": "/bin/true", "version": "flag"})
	writeManifest(t, filepath.Join(global, "off"), obj{"name": "off", "exec": "/bin/true", "enabled": false})
	writeManifest(t, filepath.Join(project, "off"), obj{"name": "off2", "exec": "/bin/true"})
	os.MkdirAll(filepath.Join(global, "empty"), 0o755)
	os.MkdirAll(filepath.Join(global, ".install-123"), 0o755)
	for name, body := range map[string]string{
		"noname":  `{"exec":"x"}`,
		"noexec":  `{"name":"noexec"}`,
		"badargs": `{"name":"badargs","exec":"x","args":"--flag"}`,
		"badname": `{"name":"../evil","exec":"x"}`,
		"notjson": `{"name":`,
	} {
		os.MkdirAll(filepath.Join(global, name), 0o755)
		os.WriteFile(filepath.Join(global, name, "extension.json"), []byte(body), 0o644)
	}
	found := discoverExtensions(home, cwd, []string{flag}, false, nil)
	var got []string
	for _, f := range found {
		s := f.Scope + " " + filepath.Base(f.Dir)
		switch {
		case f.Err != nil:
			s += " error: " + strings.TrimPrefix(strings.TrimPrefix(f.Err.Error(), f.Dir+"/extension.json: "), f.Dir+": ")
		case f.ShadowedBy != nil:
			s += " shadowed by " + f.ShadowedBy.Scope
		default:
			s += fmt.Sprintf(" %s enabled=%v", f.Manifest.Version, f.Manifest.Enabled)
		}
		got = append(got, s)
	}
	want := []string{
		"--ext mine flag enabled=true",
		"project off  enabled=true",
		"project z-dup shadowed by --ext",
		"global a-dup shadowed by --ext",
		`global badargs error: field "args" must be a list of strings`,
		`global badname error: field "name" "../evil" may only hold letters, digits, '.', '_' and '-' (at most 64, not starting with '.' or '-')`,
		"global empty error: no extension.json in this directory",
		`global noexec error: field "exec" is required`,
		`global noname error: field "name" is required`,
		"global notjson error: not a JSON object: unexpected end of JSON input",
		"global off  enabled=false",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("discovery:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// --no-ext keeps --ext.
	if f := discoverExtensions(home, cwd, []string{flag}, true, nil); len(f) != 1 || f[0].Scope != "--ext" {
		t.Errorf("--no-ext: %+v", f)
	}
}

func TestExtExecResolution(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tt := range []struct{ exec, want string }{
		{"/usr/bin/env", "/usr/bin/env"},
		{"./bin/run", filepath.Join(dir, "bin", "run")},
		{"bin/run", filepath.Join(dir, "bin", "run")},
		{"../shared/run", filepath.Join(filepath.Dir(dir), "shared", "run")},
	} {
		if got, err := resolveExec(&extManifest{Exec: tt.exec, Dir: dir}); err != nil || got != tt.want {
			t.Errorf("%s → %s, %v; want %s", tt.exec, got, err, tt.want)
		}
	}
	if got, err := resolveExec(&extManifest{Exec: "sh", Dir: dir}); err != nil || !filepath.IsAbs(got) {
		t.Errorf("sh → %q %v", got, err)
	}
	if _, err := resolveExec(&extManifest{Exec: "no-such-program-zot", Dir: dir}); err == nil || !strings.Contains(err.Error(), `exec "no-such-program-zot" is not in $PATH`) {
		t.Errorf("missing: %v", err)
	}
	// A script without the execute bit says how to fix it.
	os.WriteFile(filepath.Join(dir, "script.sh"), []byte("#!/bin/sh\n"), 0o644)
	h := newExtHarness(t, nil, writeManifest(t, dir, obj{"name": "noexec", "exec": "./script.sh"}))
	if st := h.start(); len(st.Errors) != 1 || !strings.Contains(st.Errors[0], "permission denied (is it executable? chmod +x)") {
		t.Errorf("stats = %+v", st)
	}
}

// TestExtDefaultLimitsAreTheProtocols keeps the limits the tests shorten at
// the values docs/extensions.md promises.
func TestExtDefaultLimitsAreTheProtocols(t *testing.T) {
	t.Parallel()
	want := extLimits{hello: 5 * time.Second, idle: 250 * time.Millisecond, startup: 3 * time.Second,
		command: 30 * time.Second, tool: 60 * time.Second, intercept: 5 * time.Second,
		grace: 2 * time.Second, term: time.Second, gone: time.Second, queue: 1024, maxFrame: 8 << 20, maxLog: 5 << 20}
	if defaultExtLimits != want {
		t.Errorf("limits = %+v, want %+v", defaultExtLimits, want)
	}
	if m := NewExtManager(ExtConfig{}); m.lim != want {
		t.Errorf("a new manager has %+v", m.lim)
	}
}

// TestExtCallsDuringAReloadAndAfterShutdown: while a reload has begun, the
// old processes still answer commands; after shutdown every call fails
// with an error naming the extension, and a fail_closed guard blocks.
func TestExtCallsDuringAReloadAndAfterShutdown(t *testing.T) {
	t.Parallel()
	svc := scriptedExt(t, "svc", obj{
		"frames":   []obj{{"type": "register_command", "name": "hi"}, {"type": "register_tool", "name": "work"}},
		"commands": obj{"hi": obj{"action": "display", "display": "hello"}},
	})
	guard := interceptor(t, "guard", "", []obj{{"reply": obj{}}}, obj{"fail_closed": true})
	h := newExtHarness(t, nil, svc, guard)
	if st := h.start(); st.Ready != 2 {
		t.Fatalf("stats %+v", st)
	}
	a := NewAgent(nil, "m", NewToolRegistry())
	h.m.Attach(a)
	ctx := context.Background()

	stopping, release := make(chan struct{}), make(chan struct{})
	h.m.onReloadStop = func() { close(stopping); <-release }
	reloaded := make(chan ReloadStats, 1)
	// Ends when Reload returns, which is after release.
	go func() { reloaded <- h.m.Reload(ctx) }()
	<-stopping
	if resp, err := h.m.InvokeCommand(ctx, "hi", ""); err != nil || resp.Display != "hello" {
		t.Errorf("/hi once the reload began: %+v %v", resp, err)
	}
	close(release)
	if st := <-reloaded; st.Stopped != 2 || st.Ready != 2 {
		t.Errorf("reload stats %+v", st)
	}
	h.m.onReloadStop = nil
	h.track()

	h.m.Shutdown(ctx)
	if _, err := h.m.InvokeCommand(ctx, "hi", ""); err == nil || !strings.Contains(err.Error(), `extension "svc" was stopped`) {
		t.Errorf("/hi after shutdown: %v", err)
	}
	tool, ok := a.Tools.Lookup("work")
	if !ok {
		t.Fatal("no tool work")
	}
	if r := tool.Run(ctx, json.RawMessage(`{}`), func(string) {}); !r.IsError || !strings.Contains(r.Content[0].Text, `extension "svc" was stopped`) {
		t.Errorf("tool after shutdown: %+v", r)
	}
	r := h.m.ToolGate(ctx, ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)})
	if r.Verdict != GateDeny || !strings.Contains(r.Reason, `extension "guard" is fail_closed`) || !strings.Contains(r.Reason, `extension "guard" was stopped`) {
		t.Errorf("tool call after shutdown: %+v", r)
	}
	if st := h.m.Reload(ctx); st.Loaded != 0 || strings.Join(st.Errors, "; ") != "extensions were shut down" {
		t.Errorf("reload after shutdown: %+v", st)
	}
}

// TestExtReloadsAreSerialised: two reloads at once run one after the
// other: the second stops what the first started.
func TestExtReloadsAreSerialised(t *testing.T) {
	t.Parallel()
	h := newExtHarness(t, nil, scriptedExt(t, "one", obj{}))
	h.start()
	var mu sync.Mutex
	var stopped []*extProc
	h.m.onReloadStop = func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = append(stopped, h.m.snapshot()...)
	}
	var stats [2]ReloadStats
	var wg sync.WaitGroup
	for i := range stats {
		wg.Add(1)
		// Ends when its Reload returns.
		go func() {
			defer wg.Done()
			stats[i] = h.m.Reload(context.Background())
		}()
	}
	wg.Wait()
	h.track()
	for _, st := range stats {
		if st.Stopped != 1 || st.Loaded != 1 || st.Ready != 1 || len(st.Errors) != 0 {
			t.Errorf("stats %+v", st)
		}
	}
	final := h.proc("one")
	if len(stopped) != 2 || stopped[0] == stopped[1] || stopped[1] == final || stopped[0] == final {
		var pids []int
		for _, p := range stopped {
			pids = append(pids, p.proc.pid)
		}
		t.Fatalf("the reloads stopped the processes %v, and %d runs", pids, final.proc.pid)
	}
	for _, p := range stopped {
		assertProcGone(t, p)
	}
}

// TestExtEnvironmentHasNoSecrets: an extension process gets zot's
// environment without zot's secrets.
func TestExtEnvironmentHasNoSecrets(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-not-for-extensions")
	t.Setenv("ZOT_EXT_TEST_GIVEN", "yes")
	out := filepath.Join(t.TempDir(), "env.json")
	h := newExtHarness(t, nil, scriptedExt(t, "env", obj{"env_file": out}))
	if st := h.start(); st.Ready != 1 {
		t.Fatalf("stats %+v, logs %s", st, h.gotLogs())
	}
	assertEnvHasNoSecrets(t, out)
}

// assertEnvHasNoSecrets reads the environment an extension wrote to path
// (scripted's env_file) and checks that it is zot's without the key.
func assertEnvHasNoSecrets(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got["ANTHROPIC_API_KEY"]; ok {
		t.Error("the extension got ANTHROPIC_API_KEY")
	}
	if got["ZOT_EXT_TEST_GIVEN"] != "yes" {
		t.Error("the extension lacks ZOT_EXT_TEST_GIVEN, which is in zot's environment")
	}
}

// escapingExt is an extension whose start leaves a process that left its
// process group but not its session (setpgid); the pid goes to pidFile.
func escapingExt(t *testing.T, pidFile string) string {
	t.Helper()
	cmd := escapeCommand(t, "setpgid", pidFile) + " && exec " + strconv.Quote(scriptedBin(t)) + " '{}'"
	return writeManifest(t, filepath.Join(t.TempDir(), "escaping"), obj{"name": "escaping", "exec": "/bin/sh", "args": []string{"-c", cmd}})
}

// TestExtStopKillsWhatTheExtensionLeftInItsSession: stopping an extension
// stops what left its process group but not its session.
func TestExtStopKillsWhatTheExtensionLeftInItsSession(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	h := newExtHarness(t, nil, escapingExt(t, pidFile))
	if st := h.start(); st.Ready != 1 {
		t.Fatalf("stats %+v, logs %s", st, h.gotLogs())
	}
	pid := readPid(t, pidFile)
	h.m.Shutdown(context.Background())
	if !processGone(pid) {
		t.Errorf("process %d outlived the extension", pid)
	}
}

// An extension written against seed 000 knows five stops: a model's
// refusal reaches it as end_turn with "refusal": true, the others as they
// are.
func TestExtensionTurnEndKeepsTheSeedsStops(t *testing.T) {
	t.Parallel()
	for stop, want := range map[string]string{
		StopRefusal: `{"type":"event","event":"turn_end","stop":"end_turn","refusal":true}`,
		StopEndTurn: `{"type":"event","event":"turn_end","stop":"end_turn"}`,
		StopError:   `{"type":"event","event":"turn_end","stop":"error"}`,
	} {
		b, err := json.Marshal(extEvent{Frame: frameEvent, Name: extEventTurnEnd, Stop: stop})
		if err != nil || string(b) != want {
			t.Errorf("%s: %s %v, want %s", stop, b, err, want)
		}
	}
}
