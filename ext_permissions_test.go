package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// installGreedy installs testdata/ext/greedy, an extension that asks for
// every event, every intercept, a tool and a command, under home with a
// manifest whose "permissions" is perms (none when nil), and returns its
// directory.
func installGreedy(t *testing.T, home string, perms any, extra ...obj) string {
	t.Helper()
	dir := filepath.Join(home, "extensions", "greedy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(testdataPath(t, filepath.Join("greedy", "greedy.py")), filepath.Join(dir, "greedy.py"), 0o755); err != nil {
		t.Fatal(err)
	}
	// -S skips site-packages: the extension needs only the standard
	// library, a developer's .pth files stay out of the test, and the
	// interpreter starts several times faster.
	mf := obj{"name": "greedy", "version": "1.0.0", "exec": "python3", "args": []string{"-S", "greedy.py"}}
	if perms != nil {
		mf["permissions"] = perms
	}
	for _, e := range extra {
		for k, v := range e {
			mf[k] = v
		}
	}
	return writeManifest(t, dir, mf)
}

// greedyHarness runs greedy, installed with perms, and waits until it is
// ready.
func greedyHarness(t *testing.T, perms any, extra ...obj) *extHarness {
	t.Helper()
	h := newExtHarness(t, nil)
	installGreedy(t, h.home, perms, extra...)
	h.m.cfg.Discover = func() []*extFound { return discoverExtensions(h.home, h.cwd, nil, false, nil) }
	if st := h.start(); st.Ready != 1 {
		t.Fatalf("greedy did not start: %+v", st)
	}
	return h
}

// greedyFrames is what greedy received, in order.
func (h *extHarness) greedyFrames() []obj {
	return recordedFrames(h.t, filepath.Join(h.home, "ext-data", "greedy", "frames.jsonl"))
}

// listExtensions runs `zot ext list` over h's ZOT_HOME.
func (h *extHarness) listExtensions(asJSON bool) string {
	h.t.Helper()
	var out strings.Builder
	c := &extCLI{home: h.home, cwd: h.cwd, stdout: &out}
	if err := c.list(asJSON); err != nil {
		h.t.Fatal(err)
	}
	return out.String()
}

// TestExtPermissionsGrantDecidesRegistrations gives greedy, which asks for
// everything, grants from nothing to everything: what the grant allows is
// taken, the rest is refused, logged with the grant and listed.
func TestExtPermissionsGrantDecidesRegistrations(t *testing.T) {
	t.Parallel()
	everything := `event session_start, event turn_start, event tool_call, event turn_end, event assistant_message, ` +
		`intercept tool_call, intercept turn_start, intercept assistant_message, tool greedy_tool, command greedy`
	tests := []struct {
		name    string
		perms   any
		grant   string // as zot ext list shows it
		granted string // what greedy got
		refused string // what the log and zot ext list say was refused
	}{
		{name: "no permissions allows everything", perms: nil,
			grant: "all (no permissions in manifest)", granted: everything},
		{name: "an empty object grants nothing", perms: obj{},
			grant: "events=none intercept=none tools=no commands=no", refused: everything},
		{name: "events and commands only", perms: obj{"events": []string{"turn_end", "turn_start"}, "commands": true},
			grant:   "events=turn_start,turn_end intercept=none tools=no commands=yes",
			granted: "event turn_start, event turn_end, command greedy",
			refused: "event session_start, event tool_call, event assistant_message, intercept tool_call, intercept turn_start, intercept assistant_message, tool greedy_tool"},
		{name: "an interceptor with a tool", perms: obj{"intercept": []string{"tool_call"}, "tools": true, "commands": false, "events": nil},
			grant:   "events=none intercept=tool_call tools=yes commands=no",
			granted: "intercept tool_call, tool greedy_tool",
			refused: "event session_start, event turn_start, event tool_call, event turn_end, event assistant_message, intercept turn_start, intercept assistant_message, command greedy"},
		{name: "everything spelt out", perms: obj{"events": extEventList, "intercept": extInterceptList, "tools": true, "commands": true},
			grant:   "events=session_start,turn_start,tool_call,turn_end,assistant_message intercept=tool_call,turn_start,assistant_message tools=yes commands=yes",
			granted: everything},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := greedyHarness(t, tt.perms)
			a := NewAgent(nil, "m", NewToolRegistry())
			h.m.Attach(a)
			p := h.proc("greedy")
			var granted []string
			for _, ev := range extEventList {
				if p.subscribed(ev) {
					granted = append(granted, "event "+string(ev))
				}
			}
			for _, ev := range extInterceptList {
				if p.intercepts(ev) {
					granted = append(granted, "intercept "+string(ev))
				}
			}
			if _, ok := a.Tools.Lookup("greedy_tool"); ok {
				granted = append(granted, "tool greedy_tool")
			}
			for _, c := range h.m.Commands() {
				granted = append(granted, "command "+c.Name)
			}
			if got := strings.Join(granted, ", "); got != tt.granted {
				t.Errorf("granted:\n %s\nwant\n %s", got, tt.granted)
			}

			log := h.extLogText("greedy")
			if tt.refused == "" && strings.Contains(log, "refused") {
				t.Errorf("refusals logged though everything is granted:\n%s", log)
			}
			// One line per frame refused, each naming the grant.
			for _, want := range strings.Split(tt.refused, ", ") {
				if tt.refused != "" && !strings.Contains(log, want) {
					t.Errorf("the log does not name %q:\n%s", want, log)
				}
			}
			if tt.refused != "" && !strings.Contains(log, ": not granted by the manifest's permissions ("+tt.grant+")\n") {
				t.Errorf("the log does not name the grant %q:\n%s", tt.grant, log)
			}

			text := h.listExtensions(false)
			if want := "  permissions: " + tt.grant + "; fail_closed=no\n"; !strings.Contains(text, want) {
				t.Errorf("zot ext list lacks %q:\n%s", want, text)
			}
			refusedLine := "  refused at the last run (outside its permissions): " + tt.refused + "\n"
			if strings.Contains(text, refusedLine) != (tt.refused != "") || (tt.refused == "" && strings.Contains(text, "refused")) {
				t.Errorf("zot ext list, refusals (want %q):\n%s", tt.refused, text)
			}
			var rows []extListRow
			if err := json.Unmarshal([]byte(h.listExtensions(true)), &rows); err != nil || len(rows) != 1 {
				t.Fatalf("zot ext list --json: %v %d rows", err, len(rows))
			}
			r := rows[0]
			if got := strings.Join(r.Refused, ", "); got != tt.refused {
				t.Errorf("--json refused = %q, want %q", got, tt.refused)
			}
			var g extPermissions
			if tt.perms != nil {
				b, _ := json.Marshal(tt.perms)
				gp, err := parsePermissions(b)
				if err != nil {
					t.Fatal(err)
				}
				g = *gp
			} else {
				g = (*extPermissions)(nil).effective()
			}
			if r.Permissions == nil || r.Permissions.Declared != (tt.perms != nil) || r.Permissions.String() != g.String() {
				t.Errorf("--json permissions = %+v, want declared=%v %s", r.Permissions, tt.perms != nil, g.String())
			}
		})
	}
}

// TestExtPermissionsEventsOutsideTheGrantNeverArrive: greedy subscribes to
// every event but is granted turn_start and turn_end; it receives those
// only, even when its subscription table is forced to hold the others (the
// sending side checks the grant again).
func TestExtPermissionsEventsOutsideTheGrantNeverArrive(t *testing.T) {
	t.Parallel()
	h := greedyHarness(t, obj{"events": []string{"turn_start", "turn_end"}})
	turn := []Event{
		{Type: "turn_start", Step: 1},
		{Type: "assistant_message", Content: []Block{TextBlock("hello")}},
		{Type: "tool_call", ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)},
		{Type: "tool_result", ID: "c1"},
		{Type: "turn_end", Stop: "end_turn"},
	}
	h.m.SessionStart()
	for _, e := range turn {
		h.m.Observe(e)
	}
	// Past subscribe: as if it had admitted everything.
	p := h.proc("greedy")
	p.mu.Lock()
	for _, ev := range extEventList {
		p.events[ev] = true
	}
	p.mu.Unlock()
	h.m.broadcast(extEvent{Name: "session_start"})
	for _, e := range turn {
		h.m.Observe(e)
	}
	// Events to one extension arrive in order: once the second turn_end is
	// there, whatever came before it has too.
	var got []string
	waitFor(t, "two turns", func() bool {
		got = nil
		for _, f := range framesOfType(h.greedyFrames(), "event") {
			got = append(got, f["event"].(string))
		}
		return len(got) >= 4
	})
	h.m.Shutdown(context.Background())
	if strings.Join(got, " ") != "turn_start turn_end turn_start turn_end" {
		t.Errorf("greedy received events %v", got)
	}
	if f := framesOfType(h.greedyFrames(), "event_intercept"); len(f) != 0 {
		t.Errorf("greedy was asked to intercept: %v", f)
	}
}

// TestExtPermissionsInterceptOutsideTheGrantIsNeverRequested runs the agent
// loop with greedy, which blocks whatever it intercepts, granted events but
// no intercepts: the turns run, the tool runs with the model's arguments,
// the text is shown as written, and greedy is never asked.
func TestExtPermissionsInterceptOutsideTheGrantIsNeverRequested(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(gen{Text: "running it"}, gen{ToolID: "t1", ToolName: "bash", ToolArgs: `{"command":"ls"}`})},
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	h := greedyHarness(t, obj{"events": []string{"tool_call"}})
	bash := &funcTool{name: "bash"}
	a := newTestAgent(t, srv, bash)
	h.m.Attach(a)
	if a.Pipeline.holdsText() {
		t.Error("holdsText: the text is held for an interceptor that may not intercept")
	}
	var log eventLog
	if err := a.Prompt(context.Background(), "go", nil, TeeSinks(h.m.Observe, log.sink)); err != nil {
		t.Fatal(err)
	}
	if got := bash.calls(); len(got) != 1 || got[0] != `{"command":"ls"}` {
		t.Errorf("bash ran with %v", got)
	}
	var shown []string
	for _, e := range log.ofType("assistant_message") {
		shown = append(shown, Message{Content: e.Content}.Text())
	}
	if strings.Join(shown, "|") != "running it|done" {
		t.Errorf("shown %q", shown)
	}
	// Past subscribe and register: the gates and the publisher check the
	// grant again.
	p := h.proc("greedy")
	p.mu.Lock()
	for _, ev := range extInterceptList {
		p.intercept[ev] = true
	}
	p.tools = append(p.tools, extRegistration{Name: "greedy_tool", Schema: json.RawMessage(`{}`)})
	p.commands = append(p.commands, extRegistration{Name: "greedy"})
	p.mu.Unlock()
	h.m.syncRegistrations()
	if _, ok := a.Tools.Lookup("greedy_tool"); ok || len(h.m.Commands()) != 0 {
		t.Errorf("published a tool or command outside the grant: %v", h.m.Commands())
	}
	if r := h.m.ToolGate(context.Background(), ToolCall{ID: "t2", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}); r.Verdict != GateAllow || len(r.Notes) != 0 {
		t.Errorf("gate = %+v", r)
	}
	if block, reason := h.m.beforeTurn(context.Background(), 3); block {
		t.Errorf("turn blocked: %s", reason)
	}
	if shown, hidden := h.m.beforeAssistantMessage(context.Background(), "text"); hidden || shown != "text" {
		t.Errorf("message: %q hidden=%v", shown, hidden)
	}
	waitFor(t, "the tool_call event", func() bool { return len(framesOfType(h.greedyFrames(), "event")) == 1 })
	h.m.Shutdown(context.Background())
	if f := framesOfType(h.greedyFrames(), "event_intercept"); len(f) != 0 {
		t.Errorf("greedy was asked to intercept: %v", f)
	}
	h.waitLog("greedy", "event assistant_message, intercept tool_call, intercept turn_start, intercept assistant_message: not granted by the manifest's permissions (events=tool_call intercept=none tools=no commands=no)")
}

// TestExtPermissionsScopeFailClosed: a fail_closed extension that never
// started blocks only what its grant lets it intercept.
func TestExtPermissionsScopeFailClosed(t *testing.T) {
	t.Parallel()
	dir := scriptExt(t, "guard", "nohello.sh", obj{"fail_closed": true, "permissions": obj{"intercept": []string{"turn_start"}}})
	h := newExtHarness(t, func(l *extLimits) { l.hello, l.startup = 200*time.Millisecond, 100*time.Millisecond }, dir)
	h.start()
	if r := h.m.ToolGate(context.Background(), ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{}`)}); r.Verdict != GateAllow {
		t.Errorf("tool call outside its grant: %+v", r)
	}
	if block, reason := h.m.beforeTurn(context.Background(), 1); !block || !strings.Contains(reason, `extension "guard" is fail_closed`) {
		t.Errorf("turn, inside its grant: %v %q", block, reason)
	}
}

func TestExtPermissionsMalformedManifestIsReportedAndSkipped(t *testing.T) {
	t.Parallel()
	tests := []struct{ perms, want string }{
		{`"all"`, `field "permissions" must be an object like {"events": ["turn_start"], "intercept": ["tool_call"], "tools": false, "commands": true}`},
		{`[]`, `field "permissions" must be an object`},
		{`{"events":"turn_start"}`, `field "permissions.events" must be a list of event names (session_start, turn_start, tool_call, turn_end, assistant_message)`},
		{`{"events":[1]}`, `field "permissions.events" must be a list of event names`},
		{`{"events":["turn_stop"]}`, `field "permissions.events": "turn_stop" is not one of session_start, turn_start, tool_call, turn_end, assistant_message`},
		{`{"intercept":["turn_end"]}`, `field "permissions.intercept": "turn_end" is not one of tool_call, turn_start, assistant_message`},
		{`{"tools":"yes"}`, `field "permissions.tools" must be true or false`},
		{`{"commands":1}`, `field "permissions.commands" must be true or false`},
		{`{"event":["turn_start"]}`, `field "permissions" has an unknown key "event" (known: events, intercept, tools, commands)`},
		{`{"tools":true,"zzz":1,"aaa":2}`, `field "permissions" has an unknown key "aaa"`},
	}
	home := t.TempDir()
	for i, tt := range tests {
		dir := filepath.Join(home, "extensions", "bad"+string(rune('a'+i)))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "extension.json"), []byte(`{"name":"bad","exec":"/bin/true","permissions":`+tt.perms+`}`), 0o644)
		_, err := readManifest(dir, "global")
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "extension.json")+": "+tt.want) {
			t.Errorf("%s: %v\nwant %s", tt.perms, err, tt.want)
		}
	}
	// null counts as absent, as everywhere in a manifest.
	dir := writeManifest(t, filepath.Join(t.TempDir(), "x"), obj{"name": "x", "exec": "/bin/true", "permissions": nil})
	if mf, err := readManifest(dir, "--ext"); err != nil || mf.Permissions != nil || mf.Extra["permissions"] != nil {
		t.Errorf("null permissions: %+v %v", mf, err)
	}

	// The manager reports it and starts the others; zot ext list shows it.
	good := scriptedExt(t, "good", obj{})
	bad := filepath.Join(home, "extensions", "bada")
	h := newExtHarness(t, nil, bad, good)
	st := h.start()
	if st.Ready != 1 || len(st.Errors) != 1 || !strings.Contains(st.Errors[0], `field "permissions" must be an object`) || !strings.Contains(h.gotLogs(), "extension skipped: "+bad) {
		t.Errorf("stats %+v logs %s", st, h.gotLogs())
	}
	c := &extCLI{home: home, cwd: t.TempDir()}
	var out strings.Builder
	c.stdout = &out
	c.list(false)
	if !strings.Contains(out.String(), "  error: "+filepath.Join(bad, "extension.json")+`: field "permissions" must be an object`) {
		t.Errorf("list:\n%s", out.String())
	}
}

// TestExtPermissionsEndToEnd installs greedy with the binary, runs a prompt
// in which the model calls bash, and reads zot ext list and the log.
func TestExtPermissionsEndToEnd(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "echo ran > out.txt"}),
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	z := newZotRun(t)
	if _, stderr, code := z.run("ext", "install", testdataPath(t, "greedy")); code != 0 {
		t.Fatalf("install: %d %s", code, stderr)
	}
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "go")...)
	if code != 0 || stdout != "done\n" || stderr != "" {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(z.cwd, "out.txt")); err != nil || string(b) != "ran\n" {
		t.Errorf("bash did not run: %q %v", b, err)
	}
	var events []string
	for _, f := range recordedFrames(t, filepath.Join(z.home, "ext-data", "greedy", "frames.jsonl")) {
		switch f["type"] {
		case "event":
			events = append(events, f["event"].(string))
		case "event_intercept", "tool_call":
			t.Errorf("greedy received %v", f)
		}
	}
	if strings.Join(events, " ") != "turn_start turn_end turn_start turn_end" {
		t.Errorf("events = %v", events)
	}

	stdout, _, _ = z.run("ext", "list")
	refused := "event session_start, event tool_call, event assistant_message, intercept tool_call, intercept turn_start, intercept assistant_message, tool greedy_tool"
	for _, want := range []string{
		"global  greedy  1.0.0    yes      python    " + filepath.Join(z.home, "extensions", "greedy") + "\n" +
			"  permissions: events=turn_start,turn_end intercept=none tools=no commands=yes; fail_closed=no\n" +
			"  refused at the last run (outside its permissions): " + refused + "\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("zot ext list lacks\n%s\ngot\n%s", want, stdout)
		}
	}
	stdout, _, _ = z.run("ext", "list", "--json")
	var rows []map[string]any
	json.Unmarshal([]byte(stdout), &rows)
	if len(rows) != 1 {
		t.Fatalf("list --json: %s", stdout)
	}
	perms, _ := json.Marshal(rows[0]["permissions"])
	ref, _ := json.Marshal(rows[0]["refused"])
	if string(perms) != `{"commands":true,"declared":true,"events":["turn_start","turn_end"],"intercept":[],"tools":false}` ||
		rows[0]["fail_closed"] != false || string(ref) != `["`+strings.ReplaceAll(refused, ", ", `","`)+`"]` {
		t.Errorf("list --json: permissions %s fail_closed %v refused %s", perms, rows[0]["fail_closed"], ref)
	}
	stdout, _, _ = z.run("ext", "logs", "greedy")
	for _, want := range []string{
		"[zot] refused event session_start, event tool_call, event assistant_message, intercept tool_call, intercept turn_start, intercept assistant_message: not granted by the manifest's permissions (events=turn_start,turn_end intercept=none tools=no commands=yes)",
		"[zot] refused tool greedy_tool: not granted by the manifest's permissions (events=turn_start,turn_end intercept=none tools=no commands=yes)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("log lacks %q:\n%s", want, stdout)
		}
	}
}

// FuzzExtPermissions: parsePermissions never panics, and a grant it accepts
// survives a round trip through its JSON unchanged.
func FuzzExtPermissions(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, `[]`, `"x"`,
		`{"events":["turn_start","turn_start"],"intercept":["tool_call"],"tools":true,"commands":false}`,
		`{"events":null,"tools":null}`, `{"events":["nope"]}`, `{"intercept":[1]}`, `{"x":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := parsePermissions(b)
		if err != nil {
			return
		}
		again, _ := json.Marshal(g)
		g2, err := parsePermissions(again)
		if err != nil || g2.String() != g.String() {
			t.Errorf("round trip of %s: %s → %v %v", b, again, g2, err)
		}
	})
}
