package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// interceptor is a scripted extension that intercepts tool_call with rules.
func interceptor(t *testing.T, name, record string, rules []obj, extra ...obj) string {
	return scriptedExt(t, name, obj{
		"record":    record,
		"frames":    []obj{{"type": "subscribe", "intercept": []string{"tool_call"}}},
		"intercept": obj{"tool_call": rules},
	}, extra...)
}

func TestExtToolCallInterceptChain(t *testing.T) {
	t.Parallel()
	failClosed := obj{"fail_closed": true}
	tests := []struct {
		name          string
		first, second []obj
		firstExtra    []obj
		verdict       GateVerdict
		reason        string // a regular expression
		args          string // the arguments the tool would get; "" for unchanged
		decisions     string
		secondSaw     string // the tool_args the second interceptor got; "" for never asked
	}{
		{name: "rewrite then block",
			first:   []obj{{"reply": obj{"modified_args": obj{"command": "echo safe"}}}},
			second:  []obj{{"match": "echo safe", "reply": obj{"block": true, "reason": "refused: echo"}}},
			verdict: GateDeny, reason: "refused: echo", args: `{"command":"echo safe"}`,
			decisions: "extension:first=rewrite extension:second=block", secondSaw: `{"command": "echo safe"}`},
		{name: "rewrite then rewrite",
			first:   []obj{{"reply": obj{"modified_args": obj{"command": "A"}}}},
			second:  []obj{{"match": `"A"`, "reply": obj{"modified_args": obj{"command": "A B"}}}},
			verdict: GateAllow, args: `{"command":"A B"}`,
			decisions: "extension:first=rewrite extension:second=rewrite", secondSaw: `{"command": "A"}`},
		{name: "first block wins",
			first:   []obj{{"reply": obj{"block": true, "reason": "no"}}},
			verdict: GateDeny, reason: "no",
			decisions: "extension:first=block"},
		{name: "block without a reason names the extension",
			first:   []obj{{"reply": obj{"block": true}}},
			verdict: GateDeny, reason: `blocked by extension "first"`,
			decisions: "extension:first=block"},
		{name: "modified_args that is not an object is ignored",
			first:     []obj{{"reply": obj{"modified_args": []int{1}}}},
			verdict:   GateAllow,
			decisions: "extension:first=allow extension:second=allow", secondSaw: `{"command": "rm -rf /"}`},
		{name: "timeout allows",
			first:     []obj{{"silent": true}},
			verdict:   GateAllow,
			decisions: "extension:first=allow extension:second=allow", secondSaw: `{"command": "rm -rf /"}`},
		{name: "fail_closed timeout blocks",
			first: []obj{{"silent": true}}, firstExtra: []obj{failClosed},
			verdict: GateDeny, reason: `blocked: extension "first" is fail_closed and gave no valid answer about tool_call: extension "first" did not answer within 300ms`,
			decisions: "extension:first=block"},
		{name: "crash allows",
			first:     []obj{{"exit": 1}},
			verdict:   GateAllow,
			decisions: "extension:first=allow extension:second=allow", secondSaw: `{"command": "rm -rf /"}`},
		{name: "fail_closed crash blocks",
			first: []obj{{"exit": 1}}, firstExtra: []obj{failClosed},
			verdict: GateDeny, reason: `extension "first" (exited \(exit status 1\)|closed its stdout)`,
			decisions: "extension:first=block"},
		{name: "fail_closed invalid answer blocks",
			first:      []obj{{"raw": `{"type":"event_intercept_response","id":"{id}","block":"yes"}`}},
			firstExtra: []obj{failClosed},
			verdict:    GateDeny, reason: `extension "first": invalid event_intercept_response`,
			decisions: "extension:first=block"},
		{name: "fail_closed wrong reply type blocks",
			first:      []obj{{"raw": `{"type":"tool_result","id":"{id}","content":[]}`}},
			firstExtra: []obj{failClosed},
			verdict:    GateDeny, reason: "answered a request with tool_result instead of event_intercept_response",
			decisions: "extension:first=block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rec1, rec2 := filepath.Join(dir, "first.jsonl"), filepath.Join(dir, "second.jsonl")
			second := tt.second
			if second == nil {
				second = []obj{{"reply": obj{}}}
			}
			// The limit is short only where it is meant to run out, so
			// that a loaded machine cannot make an answer late.
			limit := 20 * time.Second
			if tt.first[0]["silent"] == true {
				limit = 300 * time.Millisecond
			}
			h := newExtHarness(t, func(l *extLimits) { l.intercept = limit },
				interceptor(t, "first", rec1, tt.first, tt.firstExtra...), interceptor(t, "second", rec2, second))
			if st := h.start(); st.Ready != 2 {
				t.Fatalf("stats %+v", st)
			}
			call := ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"rm -rf /"}`)}
			r := h.m.ToolGate(context.Background(), call)
			if r.Verdict != tt.verdict || !regexp.MustCompile(tt.reason).MatchString(r.Reason) || (tt.reason == "" && r.Reason != "") {
				t.Errorf("verdict %v reason %q; want %v %q", r.Verdict, r.Reason, tt.verdict, tt.reason)
			}
			if string(r.Args) != tt.args {
				t.Errorf("args = %s, want %s", r.Args, tt.args)
			}
			var decisions []string
			for _, n := range r.Notes {
				decisions = append(decisions, n.By+"="+string(n.Decision))
			}
			if strings.Join(decisions, " ") != tt.decisions {
				t.Errorf("notes = %+v, want %s", r.Notes, tt.decisions)
			}
			asked := framesOfType(recordedFrames(t, rec2), "event_intercept")
			switch {
			case tt.secondSaw == "" && len(asked) != 0:
				t.Errorf("second was asked: %v", asked)
			case tt.secondSaw != "":
				if len(asked) != 1 {
					t.Fatalf("second was asked %d times", len(asked))
				}
				b, _ := json.Marshal(asked[0]["tool_args"])
				want := strings.ReplaceAll(tt.secondSaw, `": "`, `":"`)
				if string(b) != want || asked[0]["tool_name"] != "bash" || asked[0]["tool_id"] != "c1" || asked[0]["event"] != "tool_call" {
					t.Errorf("second saw %v", asked[0])
				}
			}
		})
	}
}

func TestExtFailClosedThatNeverStartedBlocks(t *testing.T) {
	t.Parallel()
	dir := scriptExt(t, "guard", "nohello.sh", obj{"fail_closed": true})
	h := newExtHarness(t, func(l *extLimits) { l.hello, l.startup = 200*time.Millisecond, 100*time.Millisecond }, dir)
	h.start()
	r := h.m.ToolGate(context.Background(), ToolCall{ID: "c", Name: "read", Args: json.RawMessage(`{}`)})
	if r.Verdict != GateDeny || !strings.Contains(r.Reason, `extension "guard" is fail_closed`) || !strings.Contains(r.Reason, "no hello within 200ms") {
		t.Errorf("tool call: %+v", r)
	}
	if block, reason := h.m.beforeTurn(context.Background(), 1); !block || !strings.Contains(reason, "fail_closed") {
		t.Errorf("turn: %v %q", block, reason)
	}
}

// TestExtFailClosedThatCannotStartBlocks: a fail_closed extension whose
// program cannot be started, or whose manifest is broken, blocks what it
// may intercept, naming itself and the failure, until a reload; one that
// is not fail_closed is skipped and blocks nothing.
func TestExtFailClosedThatCannotStartBlocks(t *testing.T) {
	t.Parallel()
	guard := func(t *testing.T, fields obj) string {
		mf := obj{"name": "guard", "exec": "python3", "args": []string{"guard.py"}, "fail_closed": true}
		for k, v := range fields {
			mf[k] = v
		}
		dir := writeManifest(t, filepath.Join(t.TempDir(), "guard"), mf)
		os.WriteFile(filepath.Join(dir, "guard.sh"), []byte("#!/bin/sh\nexit 0\n"), 0o644) // no execute bit
		return dir
	}
	tests := []struct {
		name   string
		fields obj
		named  string // how the reason names the extension
		why    string
		turn   bool // whether turns are blocked too
	}{
		{"exec not in $PATH", obj{"exec": "zot-no-such-interpreter"}, `extension "guard"`, `exec "zot-no-such-interpreter" is not in $PATH`, true},
		{"script without execute bit", obj{"exec": "./guard.sh", "args": nil}, `extension "guard"`, "permission denied (is it executable? chmod +x)", true},
		{"missing binary", obj{"exec": "./guard-bin", "args": nil}, `extension "guard"`, "guard-bin is missing", true},
		{"args of the wrong type", obj{"args": "guard.py"}, `extension "guard"`, `field "args" must be a list of strings`, true},
		{"fail_closed of the wrong type", obj{"fail_closed": "yes"}, `extension "guard"`, `field "fail_closed" must be true or false`, true},
		{"no name", obj{"name": nil, "args": "guard.py"}, "guard", `field "args" must be a list of strings`, true},
		{"broken, with a grant", obj{"args": 7, "permissions": obj{"intercept": []string{"tool_call"}}}, `extension "guard"`, `field "args" must be a list of strings`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := guard(t, tt.fields)
			h := newExtHarness(t, nil, dir)
			if st := h.start(); st.Loaded != 0 || len(st.Errors) != 1 || !strings.Contains(st.Errors[0], tt.why) || !strings.Contains(st.Errors[0], "it is fail_closed: until it is fixed") {
				t.Errorf("stats %+v", st)
			}
			r := h.m.ToolGate(context.Background(), ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"rm -rf /"}`)})
			if r.Verdict != GateDeny || !strings.Contains(r.Reason, "is fail_closed") || !strings.Contains(r.Reason, tt.named) || !strings.Contains(r.Reason, tt.why) {
				t.Errorf("tool call: %+v", r)
			}
			if block, reason := h.m.beforeTurn(context.Background(), 1); block != tt.turn || (block && !strings.Contains(reason, tt.why)) {
				t.Errorf("turn: %v %q", block, reason)
			}
			if _, hidden := h.m.beforeAssistantMessage(context.Background(), "hi"); hidden != tt.turn {
				t.Errorf("message hidden: %v", hidden)
			}
		})
	}
	t.Run("not fail_closed", func(t *testing.T) {
		t.Parallel()
		h := newExtHarness(t, nil, guard(t, obj{"exec": "zot-no-such-interpreter", "fail_closed": false}), guard(t, obj{"args": "guard.py", "fail_closed": nil}))
		if st := h.start(); len(st.Errors) != 2 || strings.Contains(strings.Join(st.Errors, "\n"), "it is fail_closed") {
			t.Errorf("stats %+v", st)
		}
		if r := h.m.ToolGate(context.Background(), ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{}`)}); r.Verdict != GateAllow {
			t.Errorf("tool call: %+v", r)
		}
	})
	t.Run("until a reload", func(t *testing.T) {
		t.Parallel()
		dir := guard(t, obj{"args": "guard.py"})
		h := newExtHarness(t, nil, dir)
		h.start()
		if r := h.m.ToolGate(context.Background(), ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{}`)}); r.Verdict != GateDeny {
			t.Errorf("before the fix: %+v", r)
		}
		fixed := interceptor(t, "guard", "", []obj{{"reply": obj{}}}, obj{"fail_closed": true})
		os.Rename(filepath.Join(fixed, "extension.json"), filepath.Join(dir, "extension.json"))
		if st := h.reload(); st.Ready != 1 || len(st.Errors) != 0 {
			t.Fatalf("reload %+v", st)
		}
		if r := h.m.ToolGate(context.Background(), ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{}`)}); r.Verdict != GateAllow {
			t.Errorf("after the fix and a reload: %+v", r)
		}
	})
}

func TestExtFailClosedStillStartingIsWaitedFor(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "frames.jsonl")
	// The guard takes its time registering; Start stops waiting first.
	dir := scriptedExt(t, "slowguard", obj{
		"record": rec,
		"frames": []obj{
			{"type": "notify", "message": "warming up"},
			{"type": "subscribe", "intercept": []string{"tool_call"}},
		},
		"ready":     true,
		"intercept": obj{"tool_call": []obj{{"reply": obj{"block": true, "reason": "guarded"}}}},
	}, obj{"fail_closed": true})
	h := newExtHarness(t, func(l *extLimits) { l.startup = time.Millisecond }, dir)
	h.start()
	r := h.m.ToolGate(context.Background(), ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"x"}`)})
	if r.Verdict != GateDeny || r.Reason != "guarded" {
		t.Errorf("gate = %+v", r)
	}
}

// TestExtInterceptsInTheAgentLoop runs a real agent against the replay
// provider with a guard that blocks rm -rf, rewrites ls and redacts
// assistant text.
func TestExtInterceptsInTheAgentLoop(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(gen{Text: "the key is SECRET"}, gen{ToolID: "t1", ToolName: "bash", ToolArgs: `{"command":"rm -rf /"}`})},
		replayStep{Events: anthropicEvents(gen{ToolID: "t2", ToolName: "bash", ToolArgs: `{"command":"ls"}`})},
		replayStep{Events: anthropicEvents(gen{Text: "done with SECRET"})})
	guard := scriptedExt(t, "guard", obj{
		"frames": []obj{{"type": "subscribe", "intercept": []string{"tool_call", "turn_start", "assistant_message"}}},
		"intercept": obj{
			"tool_call": []obj{
				{"match": "rm -rf", "reply": obj{"block": true, "reason": "refused: rm -rf"}},
				{"match": `"ls"`, "reply": obj{"modified_args": obj{"command": "echo GUARDED"}}},
			},
			"assistant_message": []obj{{"match": "SECRET", "reply": obj{"replace_text": "[redacted]"}}},
		},
	})
	h := newExtHarness(t, nil, guard)
	h.start()
	bash := &funcTool{name: "bash"}
	a := newTestAgent(t, srv, bash)
	h.m.Attach(a)
	if !a.Pipeline.holdsText() {
		t.Fatal("holdsText is false while an extension intercepts assistant_message")
	}
	var log eventLog
	if err := a.Prompt(context.Background(), "go", nil, TeeSinks(h.m.Observe, log.sink)); err != nil {
		t.Fatal(err)
	}
	if got := bash.calls(); len(got) != 1 || got[0] != `{"command":"echo GUARDED"}` {
		t.Errorf("bash ran with %v", got)
	}
	results := log.ofType("tool_result")
	if len(results) != 2 || !results[0].IsError || results[0].Content[0].Text != "refused: rm -rf" || results[1].IsError {
		t.Errorf("tool results = %+v", results)
	}
	var shown, deltas []string
	for _, e := range log.ofType("assistant_message") {
		shown = append(shown, Message{Content: e.Content}.Text())
	}
	for _, e := range log.ofType("text_delta") {
		deltas = append(deltas, e.Delta)
	}
	if strings.Join(shown, "|") != "[redacted]||[redacted]" || strings.Join(deltas, "|") != "[redacted]|[redacted]" {
		t.Errorf("shown %q deltas %q", shown, deltas)
	}
	// The transcript, and so the model, keeps the original text and args.
	msgs := a.Messages()
	if msgs[1].Text() != "the key is SECRET" || msgs[len(msgs)-1].Text() != "done with SECRET" {
		t.Errorf("transcript lost the original text: %q %q", msgs[1].Text(), msgs[len(msgs)-1].Text())
	}
	if body := string(srv.Requests()[2].Body); !strings.Contains(body, `"name":"bash","input":{"command":"ls"}`) {
		t.Errorf("the model saw the rewrite: %s", truncate(body, 2000))
	}
}

func TestExtTurnStartBlockEndsThePrompt(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(gen{ToolID: "t1", ToolName: "echo", ToolArgs: `{}`})},
		replayStep{Events: anthropicEvents(gen{Text: "never"})})
	gate := scriptedExt(t, "hours", obj{
		"frames":    []obj{{"type": "subscribe", "intercept": []string{"turn_start"}}},
		"intercept": obj{"turn_start": []obj{{"match": `"step":2`, "reply": obj{"block": true, "reason": "outside business hours"}}}},
	})
	h := newExtHarness(t, nil, gate)
	h.start()
	a := newTestAgent(t, srv, &funcTool{name: "echo"})
	h.m.Attach(a)
	if a.Pipeline.holdsText() {
		t.Error("holdsText is true though nothing intercepts assistant_message")
	}
	var log eventLog
	err := a.Prompt(context.Background(), "go", nil, log.sink)
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("err = %v", err)
	}
	ends := log.ofType("turn_end")
	last := ends[len(ends)-1]
	if last.Stop != StopError || last.Error != "outside business hours" || len(srv.Requests()) != 1 {
		t.Errorf("turn_end = %+v, requests %d", last, len(srv.Requests()))
	}
	if got := log.types(); !strings.HasSuffix(got, "turn_end:tool_use turn_end:error done") {
		t.Errorf("events = %s", got)
	}
}

func TestExtAttachAddsStagesBesideOthers(t *testing.T) {
	t.Parallel()
	h := newExtHarness(t, nil)
	h.start()
	a := NewAgent(nil, "m", NewToolRegistry())
	var turns []int
	mine := Stage{Name: "mine", Order: OrderHooks}
	a.Pipeline.AddTurnGate(mine, func(_ context.Context, step int) (bool, string) {
		turns = append(turns, step)
		return step == 2, "mine"
	})
	a.Pipeline.AddMessageGate(mine, func(_ context.Context, text string) (string, bool) { return strings.ToUpper(text), false }, nil)
	h.m.Attach(a)
	for _, point := range []HookPoint{HookBeforeTurn, HookBeforeAssistantMessage, HookBeforeToolExecute} {
		if got := a.Pipeline.Stages(point); got[0] != ExtStage {
			t.Errorf("%s: %v, want the extensions first", point, got)
		}
	}
	if b, _ := a.Pipeline.beforeTurn(context.Background(), 1); b {
		t.Error("blocked step 1")
	}
	if b, r := a.Pipeline.beforeTurn(context.Background(), 2); !b || r != "mine" || len(turns) != 2 {
		t.Errorf("step 2: %v %q %v", b, r, turns)
	}
	if shown, _ := a.Pipeline.beforeAssistantMessage(context.Background(), "hi"); shown != "HI" || !a.Pipeline.holdsText() {
		t.Errorf("shown %q hold %v", shown, a.Pipeline.holdsText())
	}
}

// TestExtInterceptsWaitWhileExtensionsReload: with a fail_closed guard that
// blocks every tool call and turn and a redactor of the answers, a tool
// call, a turn and a finished message that come while Reload is stopping
// the old processes wait for the new ones and are decided by them: never
// allowed, never shown unredacted, and the answer's text is held.
func TestExtInterceptsWaitWhileExtensionsReload(t *testing.T) {
	t.Parallel()
	guard := scriptedExt(t, "guard", obj{
		"frames": []obj{{"type": "subscribe", "intercept": []string{"tool_call", "turn_start"}}},
		"intercept": obj{
			"tool_call":  []obj{{"reply": obj{"block": true, "reason": "guarded"}}},
			"turn_start": []obj{{"reply": obj{"block": true, "reason": "closed"}}},
		},
	}, obj{"fail_closed": true})
	redact := scriptedExt(t, "redact", obj{
		"frames":    []obj{{"type": "subscribe", "intercept": []string{"assistant_message"}}},
		"intercept": obj{"assistant_message": []obj{{"reply": obj{"replace_text": "[redacted]"}}}},
	})
	h := newExtHarness(t, nil, guard, redact)
	if st := h.start(); st.Ready != 2 {
		t.Fatalf("stats %+v, logs %s", st, h.gotLogs())
	}
	a := NewAgent(nil, "m", NewToolRegistry())
	h.m.Attach(a)

	stopping, release := make(chan struct{}), make(chan struct{})
	h.m.onReloadStop = func() { close(stopping); <-release }
	reloaded := make(chan ReloadStats, 1)
	// Ends when Reload returns, which is after release.
	go func() { reloaded <- h.m.Reload(context.Background()) }()
	<-stopping

	ctx := context.Background()
	if !a.Pipeline.holdsText() {
		t.Error("holdsText is false while the extensions reload: the answer would stream unredacted")
	}
	gate, turn, shown := make(chan GateResult, 1), make(chan string, 1), make(chan string, 1)
	// Each ends when its intercept chain has decided.
	go func() {
		gate <- h.m.ToolGate(ctx, ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"rm -rf /"}`)})
	}()
	go func() {
		block, reason := a.Pipeline.beforeTurn(ctx, 1)
		if !block {
			reason = "(allowed)"
		}
		turn <- reason
	}()
	go func() {
		text, hidden := a.Pipeline.beforeAssistantMessage(ctx, "the key is sk-secret")
		if hidden {
			text = "(hidden)"
		}
		shown <- text
	}()
	waitFor(t, "the intercepts to wait for the reload, or to be decided without it", func() bool {
		return h.m.gate.waiters() == 3 || len(gate)+len(turn)+len(shown) > 0
	})
	close(release)
	if r := <-gate; r.Verdict != GateDeny || r.Reason != "guarded" {
		t.Errorf("a tool call during the reload: %+v", r)
	}
	if reason := <-turn; reason != "closed" {
		t.Errorf("a turn during the reload: %s", reason)
	}
	if text := <-shown; text != "[redacted]" {
		t.Errorf("a message during the reload was shown as %q", text)
	}
	if st := <-reloaded; st.Stopped != 2 || st.Ready != 2 {
		t.Errorf("reload stats %+v", st)
	}
	h.track()
	if !a.Pipeline.holdsText() {
		t.Error("holdsText is false after the reload")
	}
}

// waiters is how many chains wait for Reload (tests wait for them).
func (g *interceptGate) waiters() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting
}
