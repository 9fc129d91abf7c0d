package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The SDKs (sdk/python, sdk/js, sdk/go) are tested by one extension
// written with each (testdata/sdk, whose README is the behaviour), driven
// through zot: the extension host in-process for the whole protocol, and
// the built binary end to end.

var sdkLangs = []string{"python", "js", "go"}

// sdkManifest is the manifest running the test extension of lang, with
// absolute paths so it works from any directory; extra fields join it.
func sdkManifest(t testing.TB, lang string, extra obj) obj {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("testdata", "sdk", lang))
	if err != nil {
		t.Fatal(err)
	}
	mf := obj{"name": "sdk-" + lang, "version": "1.0.0"}
	switch lang {
	case "python":
		mf["exec"], mf["args"] = "python3", []string{filepath.Join(src, "ext.py")}
	case "js":
		mf["exec"], mf["args"] = "node", []string{filepath.Join(src, "ext.mjs")}
	case "go":
		mf["exec"] = buildGo(t, src)
	}
	for k, v := range extra {
		mf[k] = v
	}
	return mf
}

func sdkExt(t testing.TB, lang string, extra obj) string {
	t.Helper()
	return writeManifest(t, filepath.Join(t.TempDir(), "sdk-"+lang), sdkManifest(t, lang, extra))
}

func TestSDKProtocol(t *testing.T) {
	t.Parallel()
	for _, lang := range sdkLangs {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			name := "sdk-" + lang
			h := newExtHarness(t, nil, sdkExt(t, lang, nil))
			if st := h.start(); st.Ready != 1 || len(st.Errors) != 0 {
				t.Fatalf("start: %+v %s", st, h.gotLogs())
			}
			if log := h.extLogText(name); strings.Contains(log, "counted as ready") {
				t.Errorf("the SDK did not send ready:\n%s", log)
			}
			ctx := context.Background()
			invoke := func(cmd, args string) CommandResponse {
				t.Helper()
				r, err := h.m.InvokeCommand(ctx, cmd, args)
				if err != nil {
					t.Fatalf("/%s: %v", cmd, err)
				}
				return r
			}

			if r := invoke("echo", "hi there"); r.Action != "prompt" || r.Prompt != "echo: hi there" {
				t.Errorf("/echo: %+v", r)
			}
			waited := make(chan CommandResponse, 1)
			// Ends when /wait is answered (at most 10 s, the extension's limit).
			go func() {
				r, _ := h.m.InvokeCommand(ctx, "wait", "")
				waited <- r
			}()
			waitFor(t, "/wait to be running", func() bool { return hasNote(h, "waiting") })
			invoke("release", "")
			if r := <-waited; r.Display != "released" {
				t.Errorf("/wait answered %+v: a handler blocked the frame loop", r)
			}
			if r := invoke("boom", ""); r.Action != "noop" || !strings.Contains(r.Error, "boom") {
				t.Errorf("/boom: %+v", r)
			}
			if r := invoke("info", ""); r.Display != "1 "+name {
				t.Errorf("/info: %+v", r)
			}
			invoke("notes", "")
			waitFor(t, "the note and its retraction", func() bool { n := h.gotNotes(); return len(n) >= 3 && n[len(n)-1].Clear })
			if n := h.gotNotes(); n[len(n)-2] != (ExtNote{Extension: name, Level: "warn", Message: "hello"}) {
				t.Errorf("notes %+v", n)
			}

			r := invoke("panel", "")
			if r.Panel == nil || r.Panel.ID != "p1" || r.Panel.Title != "counter" || jsonOf(r.Panel.Lines) != `["0"]` || r.Panel.Footer != "+ adds, q closes" {
				t.Fatalf("/panel: %+v", r.Panel)
			}
			h.m.PanelKey("p1", "rune", "+")
			h.m.PanelKey("p1", "rune", "+")
			waitFor(t, "two renders", func() bool { return len(h.gotPanels()) >= 3 })
			if p := h.gotPanels()[2]; p.Kind != "render" || jsonOf(p.Panel.Lines) != `["2"]` {
				t.Errorf("render %+v", p)
			}
			h.m.PanelKey("p1", "rune", "q")
			waitFor(t, "the panel to close", func() bool { p := h.gotPanels(); return p[len(p)-1].Kind == "close" })
			invoke("panel", "")
			h.m.ClosePanel("p1")
			waitFor(t, "the close note", func() bool { return hasNote(h, "closed p1") })

			a := NewAgent(nil, "m", NewToolRegistry())
			h.m.Attach(a)
			run := func(tool, args string) ToolResult {
				tl, ok := a.Tools.Lookup(tool)
				if !ok {
					t.Fatalf("no tool %s", tool)
				}
				return tl.Run(ctx, json.RawMessage(args), func(string) {})
			}
			if r := run("add", `{"a":2,"b":3}`); r.IsError || (Message{Content: r.Content}).Text() != "5" {
				t.Errorf("add: %+v", r)
			}
			if r := run("fail", `{}`); !r.IsError || !strings.Contains((Message{Content: r.Content}).Text(), "tool broke") {
				t.Errorf("fail: %+v", r)
			}
			if r := run("pic", `{}`); r.IsError || len(r.Content) != 1 || r.Content[0].Type != "image" || r.Content[0].MimeType != "image/png" {
				t.Errorf("pic: %+v", r)
			}

			gate := func(cmd string) GateResult {
				return h.m.ToolGate(ctx, ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(jsonOf(obj{"command": cmd}))})
			}
			if g := gate("rm -rf /"); g.Verdict != GateDeny || g.Reason != "no rm -rf" {
				t.Errorf("rm -rf: %+v", g)
			}
			if g := gate("ls"); g.Verdict != GateAllow || string(g.Args) != `{"command":"ls -la"}` {
				t.Errorf("ls: %+v %s", g, g.Args)
			}
			if g := gate("throw"); g.Verdict != GateAllow || !strings.Contains(g.Notes[0].Reason, "interceptor broke") {
				t.Errorf("throw: %+v", g)
			}
			if g := h.m.ToolGate(ctx, ToolCall{ID: "c", Name: "read", Args: json.RawMessage(`{"path":"x"}`)}); g.Verdict != GateAllow || g.Args != nil {
				t.Errorf("read: %+v", g)
			}
			if block, reason := h.m.beforeTurn(ctx, 5); !block || reason != "turn budget: 4" {
				t.Errorf("turn 5: %v %q", block, reason)
			}
			if block, _ := h.m.beforeTurn(ctx, 1); block {
				t.Errorf("turn 1 blocked")
			}
			for text, want := range map[string]string{"the SECRET is out": "the [redacted] is out", "HIDE me": "", "throw it": "throw it", "plain": "plain"} {
				// A blocked message's text is replaced by the reason the user is told.
				if want == "" {
					want = fmt.Sprintf("the assistant's message was blocked by extension %q", "sdk-"+lang)
				}
				if shown, block := h.m.beforeAssistantMessage(ctx, text); shown != want || block != (text == "HIDE me") {
					t.Errorf("%q shown as %q (block %v)", text, shown, block)
				}
			}

			h.m.SessionStart()
			h.m.Observe(Event{Type: "turn_end", Stop: "end_turn"})
			waitFor(t, "the event notes", func() bool { return hasNote(h, "session started") && hasNote(h, "turn_end end_turn") })

			h.m.Shutdown(ctx)
			if b, _ := os.ReadFile(filepath.Join(h.home, "ext-data", name, "shutdown.txt")); string(b) != "bye" {
				t.Errorf("on_shutdown did not run: %q", b)
			}
			// The ack itself is checked by TestSDKExtensionsPassTheChecker: the
			// host may stop reading once the process has exited.
			if log := h.extLogText(name); !strings.Contains(log, "stopped (exit status 0)") || strings.Contains(log, "SIGTERM") {
				t.Errorf("shutdown was not clean:\n%s", log)
			}
		})
	}
}

func hasNote(h *extHarness, msg string) bool {
	for _, n := range h.gotNotes() {
		if n.Message == msg {
			return true
		}
	}
	return false
}

// TestSDKThrowingInterceptorHonoursFailClosed: with "fail_closed": true in
// the manifest, an interceptor that throws blocks instead of allowing.
func TestSDKThrowingInterceptorHonoursFailClosed(t *testing.T) {
	t.Parallel()
	for _, lang := range sdkLangs {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			h := newExtHarness(t, nil, sdkExt(t, lang, obj{"fail_closed": true}))
			h.start()
			g := h.m.ToolGate(context.Background(), ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"throw"}`)})
			if g.Verdict != GateDeny || !strings.Contains(g.Reason, "interceptor broke") {
				t.Errorf("%+v", g)
			}
			if shown, block := h.m.beforeAssistantMessage(context.Background(), "throw"); !block || !strings.Contains(shown, "redactor broke") {
				t.Errorf("assistant_message: %q %v", shown, block)
			}
		})
	}
}

func TestSDKExtensionsPassTheChecker(t *testing.T) {
	t.Parallel()
	for _, lang := range sdkLangs {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			r := checkExt(t, sdkExt(t, lang, nil), nil)
			if !r.Conformant || len(untimedWarnings(r)) != 0 || !strings.Contains(r.text(), "ok    shutdown         acked after") {
				t.Errorf("%s", r.text())
			}
		})
	}
}

// TestSDKEndToEnd runs each SDK's extension in the built binary: the model
// calls its tool, its interceptor rewrites a bash call, it redacts the
// answer, and its event handlers' notes reach stderr.
func TestSDKEndToEnd(t *testing.T) {
	t.Parallel()
	for _, lang := range sdkLangs {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			srv := startReplay(t,
				toolStep("t1", "add", obj{"a": 2, "b": 3}),
				toolStep("t2", "bash", obj{"command": "ls"}),
				toolStep("t3", "bash", obj{"command": "rm -rf ."}),
				replayStep{Events: anthropicEvents(gen{Text: "The SECRET is 5."})})
			z := newZotRun(t)
			os.WriteFile(filepath.Join(z.cwd, "marker.txt"), []byte("x"), 0o644)
			stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--ext", sdkExt(t, lang, nil), "add", "things")...)
			if code != 0 || stdout != "The [redacted] is 5.\n" {
				t.Fatalf("exit %d stdout %q stderr:\n%s", code, stdout, stderr)
			}
			name := "sdk-" + lang
			// (The last turn_end's note races zot's exit, so it is not asked for.)
			for _, want := range []string{"[" + name + "] info: session started", "[" + name + "] info: turn_end tool_use"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			reqs := srv.Requests()
			if len(reqs) != 4 {
				t.Fatalf("requests = %d", len(reqs))
			}
			for i, want := range []string{
				`"tool_use_id":"t1","content":[{"type":"text","text":"5"}]`,
				`marker.txt`, // ls -la ran
				`"tool_use_id":"t3","content":[{"type":"text","text":"no rm -rf"}],"is_error":true`,
			} {
				if body := string(reqs[i+1].Body); !strings.Contains(body, want) {
					t.Errorf("request %d lacks %s:\n%s", i+1, want, truncate(body, 3000))
				}
			}
			if !strings.Contains(string(reqs[2].Body), `"text":"total `) {
				t.Errorf("bash ran ls, not the rewritten ls -la")
			}
			if _, err := os.Stat(filepath.Join(z.cwd, "marker.txt")); err != nil {
				t.Errorf("rm -rf ran")
			}
		})
	}
}

// goExampleExt is a Go example extension, built, in a directory of its own
// with its manifest (whose exec is ./<bin>).
func goExampleExt(t testing.TB, name, bin string) string {
	t.Helper()
	src := exampleExt(t, name)
	built := buildGo(t, src)
	dir := filepath.Join(t.TempDir(), name)
	os.MkdirAll(dir, 0o755)
	mf, err := os.ReadFile(filepath.Join(src, "extension.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "extension.json"), mf, 0o644)
	if err := copyFile(built, filepath.Join(dir, bin), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sdkCopies are the SDK files the script examples carry beside them, so
// that they work wherever they are installed.
var sdkCopies = map[string]string{
	"examples/extensions/todo-py/zot_ext.py":     "sdk/python/zot_ext.py",
	"examples/extensions/turn-timer/zot-ext.mjs": "sdk/js/zot-ext.mjs",
}

func TestSDKExampleCopiesAreTheSDK(t *testing.T) {
	t.Parallel()
	for copied, sdk := range sdkCopies {
		a, errA := os.ReadFile(copied)
		b, errB := os.ReadFile(sdk)
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s is not a copy of %s (%v, %v): cp %[2]s %[1]s", copied, sdk, errA, errB)
		}
	}
}

// TestSDKExamplesWorkOnceInstalled installs the script examples as their
// README says and checks the installed copies, which have no zot
// repository around them.
func TestSDKExamplesWorkOnceInstalled(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	for example, name := range map[string]string{"todo-py": "todo", "turn-timer": "turn-timer"} {
		if stdout, stderr, code := z.run("ext", "install", exampleExt(t, example)); code != 0 {
			t.Fatalf("install %s: exit %d %s %s", example, code, stdout, stderr)
		}
		installed := filepath.Join(z.home, "extensions", name)
		if stdout, stderr, code := z.run("ext", "check", installed); code != 0 {
			t.Errorf("check of the installed %s: exit %d\n%s%s", example, code, stdout, stderr)
		}
	}
}

func TestSDKExamplesPassTheChecker(t *testing.T) {
	t.Parallel()
	for name, dir := range map[string]string{
		"todo-py":    exampleExt(t, "todo-py"),
		"turn-timer": exampleExt(t, "turn-timer"),
		"calc-go":    goExampleExt(t, "calc-go", "calc"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := checkExt(t, dir, nil)
			if !r.Conformant || len(untimedWarnings(r)) != 0 {
				t.Errorf("%s", r.text())
			}
			want := map[string]string{
				"todo-py":    `tool             todo_done {"number":1} → 1 block(s) [text]`,
				"turn-timer": `intercept        turn_start: step 1 → allow`,
				"calc-go":    `command          /calc "" → display "usage: /calc <expression>`,
			}[name]
			if !strings.Contains(r.text(), want) {
				t.Errorf("report lacks %q:\n%s", want, r.text())
			}
		})
	}
}

func TestSDKExampleTodo(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("t1", "todo_add", obj{"text": "buy milk"}),
		toolStep("t2", "todo_list", obj{}),
		replayStep{Events: anthropicEvents(gen{Text: "Noted."})})
	z := newZotRun(t)
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--ext", exampleExt(t, "todo-py"), "remind me to buy milk")...)
	if code != 0 || stdout != "Noted.\n" || !strings.Contains(stderr, "[todo] info: the model added #1: buy milk") {
		t.Fatalf("exit %d stdout %q stderr %s", code, stdout, stderr)
	}
	if body := string(srv.Requests()[2].Body); !strings.Contains(body, `"text":"  1. [ ] buy milk"`) {
		t.Errorf("todo_list result: %s", truncate(body, 3000))
	}

	h := newExtHarness(t, nil, exampleExt(t, "todo-py"))
	h.start()
	ctx := context.Background()
	for _, args := range []string{"add water the plants", "add call mum"} {
		h.m.InvokeCommand(ctx, "todo", args)
	}
	r, err := h.m.InvokeCommand(ctx, "todo", "")
	if err != nil || r.Panel == nil || jsonOf(r.Panel.Lines) != `["\u003e 1. [ ] water the plants","  2. [ ] call mum"]` {
		t.Fatalf("%+v %v", r.Panel, err)
	}
	h.m.PanelKey("todo", "down", "")
	h.m.PanelKey("todo", "enter", "")
	waitFor(t, "the ticked render", func() bool {
		p := h.gotPanels()
		return len(p) >= 3 && jsonOf(p[len(p)-1].Panel.Lines) == `["  1. [ ] water the plants","\u003e 2. [x] call mum"]`
	})
	if r, _ := h.m.InvokeCommand(ctx, "todo", "list"); r.Display != "  1. [ ] water the plants\n  2. [x] call mum" {
		t.Errorf("/todo list: %q", r.Display)
	}
}

func TestSDKExampleTurnTimer(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "echo one"}),
		toolStep("t2", "bash", obj{"command": "echo two"}))
	z := newZotRun(t)
	z.env = append(z.env, "TURN_BUDGET=1")
	_, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--ext", exampleExt(t, "turn-timer"), "work")...)
	if code != 1 || !strings.Contains(stderr, "turn budget of 1 reached") || len(srv.Requests()) != 1 {
		t.Fatalf("exit %d requests %d stderr %s", code, len(srv.Requests()), stderr)
	}
	if !strings.Contains(stderr, "[turn-timer] info: turn 1: ") || !strings.Contains(stderr, " s, 1 tool call") {
		t.Errorf("no timing note: %s", stderr)
	}

	h := newExtHarness(t, nil, exampleExt(t, "turn-timer"))
	h.start()
	ctx := context.Background()
	if r, _ := h.m.InvokeCommand(ctx, "budget", "3"); r.Display != "at most 3 turns per prompt" {
		t.Errorf("/budget 3: %+v", r)
	}
	if block, _ := h.m.beforeTurn(ctx, 4); !block {
		t.Errorf("turn 4 was not refused")
	}
	if r, _ := h.m.InvokeCommand(ctx, "budget", "lots"); !strings.Contains(r.Error, `want a positive number or "off"`) {
		t.Errorf("/budget lots: %+v", r)
	}
}

func TestSDKExampleCalc(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("t1", "calc", obj{"expression": "2*(3+4)^2"}),
		toolStep("t2", "calc", obj{"expression": "1/0"}),
		replayStep{Events: anthropicEvents(gen{Text: "98."})})
	z := newZotRun(t)
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--ext", goExampleExt(t, "calc-go", "calc"), "compute")...)
	if code != 0 || stdout != "98.\n" {
		t.Fatalf("exit %d stdout %q stderr %s", code, stdout, stderr)
	}
	reqs := srv.Requests()
	if body := string(reqs[1].Body); !strings.Contains(body, `"tool_use_id":"t1","content":[{"type":"text","text":"98"}]`) {
		t.Errorf("calc result: %s", truncate(body, 3000))
	}
	if body := string(reqs[2].Body); !strings.Contains(body, `"text":"division by zero"}],"is_error":true`) {
		t.Errorf("calc error: %s", truncate(body, 3000))
	}
}
