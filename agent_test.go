package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// funcTool is a tool whose behaviour a test supplies; it records the
// arguments it was run with.
type funcTool struct {
	name string
	run  func(ctx context.Context, args json.RawMessage) ToolResult
	mu   sync.Mutex
	seen []string
}

func (f *funcTool) Name() string        { return f.name }
func (f *funcTool) Description() string { return "test tool " + f.name }
func (f *funcTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{}}`)
}
func (f *funcTool) Run(ctx context.Context, args json.RawMessage, progress func(string)) ToolResult {
	f.mu.Lock()
	f.seen = append(f.seen, string(args))
	f.mu.Unlock()
	progress("working")
	if f.run != nil {
		return f.run(ctx, args)
	}
	return textResult("ran " + string(args))
}

func (f *funcTool) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// eventLog collects events; safe for the agent's tool goroutines.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) sink(e Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *eventLog) all() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// types lists event types, collapsing runs of deltas into one entry.
func (l *eventLog) types() string {
	var out []string
	for _, e := range l.all() {
		t := string(e.Type)
		if t == "turn_end" {
			t += ":" + e.Stop
		}
		if n := len(out); n > 0 && out[n-1] == t && strings.HasSuffix(t, "_delta") || n > 0 && out[n-1] == t && t == "tool_use_args" {
			continue
		}
		out = append(out, t)
	}
	return strings.Join(out, " ")
}

func (l *eventLog) ofType(typ EventType) []Event {
	var out []Event
	for _, e := range l.all() {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func newTestAgent(t *testing.T, srv *replayServer, tools ...Tool) *Agent {
	t.Helper()
	p, _ := testProvider(t, "anthropic", srv.URL)
	reg := NewToolRegistry()
	reg.SetSource("builtin", tools)
	a := NewAgent(p, "claude-sonnet-4-5", reg)
	a.System = "test"
	return a
}

func TestAgentToolLoopEventOrder(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(gen{Text: "Let me look."}, gen{ToolID: "t1", ToolName: "echo", ToolArgs: `{"x":1}`})},
		replayStep{Events: anthropicEvents(gen{Text: "Done."})})
	echo := &funcTool{name: "echo"}
	a := newTestAgent(t, srv, echo)
	var log eventLog
	if err := a.Prompt(context.Background(), "go", nil, log.sink); err != nil {
		t.Fatal(err)
	}
	want := "user_message turn_start assistant_start text_delta tool_use_start tool_use_args tool_use_end assistant_message usage " +
		"tool_call tool_progress tool_result turn_end:tool_use turn_start assistant_start text_delta assistant_message usage turn_end:end_turn done"
	if got := log.types(); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	msgs := a.Messages()
	roles := []string{}
	for _, m := range msgs {
		roles = append(roles, string(m.Role))
	}
	if strings.Join(roles, ",") != "user,assistant,user,assistant" {
		t.Fatalf("transcript roles = %v", roles)
	}
	if r := msgs[2].Content[0]; r.Type != "tool_result" || r.CallID != "t1" || r.Content[0].Text != `ran {"x":1}` {
		t.Errorf("tool result = %+v", r)
	}
	// The second request carries the tool result back to the model.
	if body := string(srv.Requests()[1].Body); !strings.Contains(body, `"tool_use_id":"t1"`) || !strings.Contains(body, `ran {\"x\":1}`) {
		t.Errorf("second request lacks the tool result: %s", body)
	}
	cum, _ := a.Totals()
	if cum.Input != 200 || cum.Output != 40 || cum.CostUSD <= 0 {
		t.Errorf("cumulative usage = %+v", cum)
	}
	usage := log.ofType("usage")
	if len(usage) != 2 || usage[1].Cumulative != cum || usage[0].Usage.CacheRead != 50 {
		t.Errorf("usage events = %+v", usage)
	}
}

func TestEventJSONMatchesTheSchema(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 4, 19, 11, 30, 0, 0, time.UTC)
	tests := []struct {
		ev   Event
		want string
	}{
		{Event{Type: "turn_start", Step: 1}, `{"type":"turn_start","step":1}`},
		{Event{Type: "user_message", Time: ts, Content: []Block{{Type: "image", MimeType: "image/png", Data: "aGVsbG8="}, TextBlock("hi")}},
			`{"type":"user_message","content":[{"type":"image","mime_type":"image/png","bytes":5},{"type":"text","text":"hi"}],"time":"2026-04-19T11:30:00Z"}`},
		{Event{Type: "assistant_start"}, `{"type":"assistant_start"}`},
		{Event{Type: "text_delta", Delta: "Hel"}, `{"type":"text_delta","delta":"Hel"}`},
		{Event{Type: "tool_call", ID: "t1", Name: "read", Args: json.RawMessage(`{"path":"a"}`)}, `{"type":"tool_call","id":"t1","name":"read","args":{"path":"a"}}`},
		{Event{Type: "tool_call", ID: "t2", Name: "write", Args: json.RawMessage(`{"path": "cut`)}, `{"type":"tool_call","id":"t2","name":"write","args":"{\"path\": \"cut"}`},
		{Event{Type: "tool_progress", ID: "t1", Text: "line"}, `{"type":"tool_progress","id":"t1","text":"line"}`},
		{Event{Type: "tool_result", ID: "t1", Content: []Block{TextBlock("ok")}}, `{"type":"tool_result","id":"t1","is_error":false,"content":[{"type":"text","text":"ok"}]}`},
		{Event{Type: "assistant_message", Time: ts, Content: []Block{TextBlock("a"), {Type: "tool_call", ID: "t1", Name: "bash", Args: json.RawMessage(`{}`)}}},
			`{"type":"assistant_message","content":[{"type":"text","text":"a"},{"type":"tool_call","id":"t1","name":"bash","args":{}}],"time":"2026-04-19T11:30:00Z"}`},
		{Event{Type: "usage", Usage: Usage{Input: 1, Output: 2, CacheRead: 3, CacheWrite: 4, CostUSD: 0.5}, Cumulative: Usage{Input: 10}},
			`{"type":"usage","input":1,"output":2,"cache_read":3,"cache_write":4,"cost_usd":0.5,"cumulative":{"input":10,"output":0,"cache_read":0,"cache_write":0,"cost_usd":0}}`},
		{Event{Type: "turn_end", Stop: "end_turn"}, `{"type":"turn_end","stop":"end_turn"}`},
		{Event{Type: "turn_end", Stop: "error", Error: "boom"}, `{"type":"turn_end","stop":"error","error":"boom"}`},
		// Seed 004's five stops hold: a refusal is end_turn, flagged.
		{Event{Type: "turn_end", Stop: StopRefusal}, `{"type":"turn_end","stop":"end_turn","refusal":true}`},
		{Event{Type: "done"}, `{"type":"done"}`},
		{Event{Type: "error", Message: "bad"}, `{"type":"error","message":"bad"}`},
		{Event{Type: "compact_done", Summary: "s"}, `{"type":"compact_done","summary":"s"}`},
		{Event{Type: "tool_use_start", ID: "t1", Name: "bash"}, `{"type":"tool_use_start","id":"t1","name":"bash"}`},
		{Event{Type: "tool_use_args", ID: "t1", Delta: `{"c`}, `{"type":"tool_use_args","id":"t1","delta":"{\"c"}`},
		{Event{Type: "tool_use_end", ID: "t1"}, `{"type":"tool_use_end","id":"t1"}`},
		{Event{Type: "ext_notify", Extension: "guard", Level: "warn", Message: "m"}, `{"type":"ext_notify","extension":"guard","level":"warn","message":"m"}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.ev)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.ev.Type, b, tt.want)
		}
	}
	nested := WireMessages([]Message{{Role: "user", Time: ts, Content: []Block{{Type: "tool_result", CallID: "t1", IsError: true, Content: []Block{TextBlock("no")}}}}})
	b, _ := json.Marshal(nested)
	if want := `[{"role":"user","content":[{"type":"tool_result","call_id":"t1","is_error":true,"content":[{"type":"text","text":"no"}]}],"time":"2026-04-19T11:30:00Z"}]`; string(b) != want {
		t.Errorf("message:\n got %s\nwant %s", b, want)
	}
}

func TestBeforeToolExecuteBlocksAndRewrites(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(
			gen{ToolID: "a", ToolName: "echo", ToolArgs: `{"cmd":"rm -rf /"}`},
			gen{ToolID: "b", ToolName: "echo", ToolArgs: `{"cmd":"ls"}`})},
		replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	echo := &funcTool{name: "echo"}
	a := newTestAgent(t, srv, echo)
	var records []ToolRecord
	a.Pipeline.AddToolGate(testStage, func(ctx context.Context, call ToolCall) GateResult {
		if strings.Contains(string(call.Args), "rm -rf") {
			return GateResult{Verdict: GateDeny, Reason: "refused: dangerous"}
		}
		return GateResult{Args: json.RawMessage(`{"cmd":"echo GUARDED: ls"}`)}
	})
	a.Pipeline.AddAfterTool(testStage, func(ctx context.Context, rec *ToolRecord) { records = append(records, *rec) })
	var log eventLog
	if err := a.Prompt(context.Background(), "go", nil, log.sink); err != nil {
		t.Fatal(err)
	}
	if got := echo.calls(); len(got) != 1 || got[0] != `{"cmd":"echo GUARDED: ls"}` {
		t.Fatalf("tool ran with %v, want only the rewritten second call", got)
	}
	results := log.ofType("tool_result")
	if !results[0].IsError || results[0].Content[0].Text != "refused: dangerous" || results[1].IsError {
		t.Errorf("results = %+v", results)
	}
	// The model never sees the rewrite: its own arguments stay in the transcript.
	if args := string(a.Messages()[1].Content[1].Args); args != `{"cmd":"ls"}` {
		t.Errorf("transcript args = %s", args)
	}
	if len(records) != 2 || records[0].Ran || !records[1].Ran || string(records[1].Executed) != `{"cmd":"echo GUARDED: ls"}` {
		t.Errorf("records = %+v", records)
	}
}

func TestBeforeTurnBlockEndsThePrompt(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "never"})})
	a := newTestAgent(t, srv)
	a.Pipeline.AddTurnGate(testStage, func(ctx context.Context, step int) (bool, string) { return true, "outside business hours" })
	var log eventLog
	err := a.Prompt(context.Background(), "go", nil, log.sink)
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("err = %v", err)
	}
	if got := log.types(); got != "user_message turn_end:error done" {
		t.Fatalf("events = %s", got)
	}
	if log.ofType("turn_end")[0].Error != "outside business hours" || len(srv.Requests()) != 0 {
		t.Errorf("turn_end %+v, requests %d", log.ofType("turn_end"), len(srv.Requests()))
	}
}

func TestBeforeAssistantMessageRewritesWhatTheUserSees(t *testing.T) {
	t.Parallel()
	for _, block := range []bool{false, true} {
		srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "the key is SECRET"})})
		a := newTestAgent(t, srv)
		a.Pipeline.AddMessageGate(testStage, func(ctx context.Context, text string) (string, bool) {
			return strings.ReplaceAll(text, "SECRET", "[redacted]"), block
		}, nil)
		var log eventLog
		if err := a.Prompt(context.Background(), "go", nil, log.sink); err != nil {
			t.Fatal(err)
		}
		var shown strings.Builder
		for _, e := range log.ofType("text_delta") {
			shown.WriteString(e.Delta)
		}
		msg := log.ofType("assistant_message")[0]
		want := "the key is [redacted]"
		if block {
			want = ""
		}
		if shown.String() != want || (Message{Content: msg.Content}).Text() != want {
			t.Errorf("block=%v: deltas %q, message %q, want %q", block, shown.String(), Message{Content: msg.Content}.Text(), want)
		}
		if a.Messages()[1].Text() != "the key is SECRET" {
			t.Errorf("transcript lost the original: %q", a.Messages()[1].Text())
		}
	}
}

func TestAbortMidStreamKeepsPartialText(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "partial text then much more"}), HangAfter: 4})
	a := newTestAgent(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	var log eventLog
	err := a.Prompt(ctx, "go", nil, func(e Event) {
		log.sink(e)
		if e.Type == "text_delta" {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if got := log.types(); got != "user_message turn_start assistant_start text_delta usage turn_end:aborted done" {
		t.Fatalf("events = %s", got)
	}
	// The prompt was sent and read: its tokens count, aborted or not.
	if cum, _ := a.Totals(); cum.Input != 100 || cum.CacheRead != 50 {
		t.Errorf("totals after abort = %+v", cum)
	}
	msgs := a.Messages()
	full := "partial text then much more"
	if len(msgs) != 2 || msgs[1].Role != "assistant" || msgs[1].Text() == "" || msgs[1].Text() == full || !strings.HasPrefix(full, msgs[1].Text()) {
		t.Fatalf("transcript = %+v", msgs)
	}
}

func TestAbortDuringToolsAnswersEveryCall(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(
		gen{ToolID: "a", ToolName: "slow", ToolArgs: `{}`},
		gen{ToolID: "b", ToolName: "slow", ToolArgs: `{}`})})
	ctx, cancel := context.WithCancel(context.Background())
	slow := &funcTool{name: "slow", run: func(ctx context.Context, _ json.RawMessage) ToolResult {
		cancel()
		<-ctx.Done()
		return errorResult("aborted")
	}}
	a := newTestAgent(t, srv, slow)
	var log eventLog
	a.Prompt(ctx, "go", nil, log.sink)
	if got := log.types(); !strings.HasSuffix(got, "tool_call tool_progress tool_result turn_end:aborted done") {
		t.Fatalf("events = %s", got)
	}
	if len(slow.calls()) != 1 {
		t.Errorf("the second call ran after the abort")
	}
	msgs := a.Messages()
	last := msgs[len(msgs)-1]
	if len(last.Content) != 2 || last.Content[1].CallID != "b" || !last.Content[1].IsError {
		t.Fatalf("every tool call needs a result: %+v", last)
	}
	if log.ofType("error") != nil {
		t.Errorf("an abort is not an error: %+v", log.ofType("error"))
	}
}

func TestMaxStepsEndsWithAnError(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{ToolID: "a", ToolName: "echo", ToolArgs: `{}`})})
	a := newTestAgent(t, srv, &funcTool{name: "echo"})
	a.MaxSteps = 2
	var log eventLog
	err := a.Prompt(context.Background(), "loop", nil, log.sink)
	if err == nil || !strings.Contains(err.Error(), "--max-steps 2") {
		t.Fatalf("err = %v", err)
	}
	if len(srv.Requests()) != 2 || len(log.ofType("error")) != 1 || log.all()[len(log.all())-1].Type != "done" {
		t.Errorf("requests %d, events %s", len(srv.Requests()), log.types())
	}
}

func TestUnknownToolAndBadArgsBecomeErrorResults(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(gen{ToolID: "a", ToolName: "nope", ToolArgs: `{}`}, gen{ToolID: "b", ToolName: "echo", ToolArgs: `[1,2]`})},
		replayStep{Events: anthropicEvents(gen{Text: "sorry"})})
	echo := &funcTool{name: "echo"}
	a := newTestAgent(t, srv, echo)
	var log eventLog
	if err := a.Prompt(context.Background(), "go", nil, log.sink); err != nil {
		t.Fatal(err)
	}
	res := log.ofType("tool_result")
	if !res[0].IsError || !strings.Contains(res[0].Content[0].Text, `unknown tool "nope"; available tools: echo`) {
		t.Errorf("unknown tool result = %+v", res[0])
	}
	if !res[1].IsError || !strings.Contains(res[1].Content[0].Text, "not a JSON object") || len(echo.calls()) != 0 {
		t.Errorf("bad args result = %+v", res[1])
	}
}

func TestTruncatedToolCallIsAnsweredAndTheLoopGoesOn(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, fixtureStep(t, "anthropic_tool_use_max_tokens_truncated.sse"), replayStep{Events: anthropicEvents(gen{Text: "retrying smaller"})})
	a := newTestAgent(t, srv, &funcTool{name: "make_file"})
	var log eventLog
	if err := a.Prompt(context.Background(), "go", nil, log.sink); err != nil {
		t.Fatal(err)
	}
	res := log.ofType("tool_result")
	if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Content[0].Text, "cut off") {
		t.Fatalf("result = %+v", res)
	}
	// The cut-off arguments go back to Anthropic as an empty object.
	if body := string(srv.Requests()[1].Body); !strings.Contains(body, `"name":"make_file","input":{}`) {
		t.Errorf("second request: %s", truncate(body, 2000))
	}
}

func TestBusyAgentRefusesOverlaps(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "slow"}), HangAfter: 2})
	a := newTestAgent(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- a.Prompt(ctx, "first", nil, func(e Event) {
			if e.Type == "assistant_start" {
				close(started)
			}
		})
	}()
	<-started
	if !a.Busy() {
		t.Error("Busy() = false while a prompt runs")
	}
	if err := a.Prompt(context.Background(), "second", nil, nil); !errors.Is(err, ErrBusy) {
		t.Errorf("second prompt: %v", err)
	}
	if err := a.Clear(); !errors.Is(err, ErrBusy) {
		t.Errorf("clear: %v", err)
	}
	if err := a.SetModel("x"); !errors.Is(err, ErrBusy) {
		t.Errorf("set model: %v", err)
	}
	cancel()
	<-done
	if err := a.SetModel("claude-haiku-4-5"); err != nil || a.CurrentModel() != "claude-haiku-4-5" {
		t.Errorf("set model when idle: %v", err)
	}
}

// TestSetProviderSwitchesBothOrNeither: while a prompt runs the agent
// keeps its provider and model; when idle it takes both at once and the
// session records the model.
func TestSetProviderSwitchesBothOrNeither(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "slow"}), HangAfter: 2})
	a := newTestAgent(t, srv)
	sess := NewSession(t.TempDir(), t.TempDir(), "anthropic", "claude-sonnet-4-5")
	a.Recorder = sess
	before := a.Provider
	other, err := NewProvider(ProviderConfig{Name: "openai", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- a.Prompt(ctx, "first", nil, func(e Event) {
			if e.Type == "assistant_start" {
				close(started)
			}
		})
	}()
	<-started
	if err := a.SetProvider(other, "gpt-5"); !errors.Is(err, ErrBusy) {
		t.Errorf("set provider while busy: %v", err)
	}
	cancel()
	<-done
	if a.Provider != before || a.CurrentModel() != "claude-sonnet-4-5" {
		t.Errorf("a refused switch changed the agent: %s/%s", a.Provider.Name(), a.CurrentModel())
	}
	if err := a.SetProvider(other, "gpt-5"); err != nil || a.Provider != other || a.CurrentModel() != "gpt-5" || sess.Meta.Model != "gpt-5" {
		t.Errorf("set provider when idle: %v; %s/%s, session %q", err, a.Provider.Name(), a.CurrentModel(), sess.Meta.Model)
	}
}

// history builds a transcript of n prompts, each with a tool round trip.
func history(n int) []Message {
	var msgs []Message
	for i := 0; i < n; i++ {
		id := "h" + string(rune('a'+i))
		msgs = append(msgs,
			Message{Role: "user", Content: []Block{TextBlock("prompt " + id)}},
			Message{Role: "assistant", Content: []Block{{Type: "tool_call", ID: id, Name: "echo", Args: json.RawMessage(`{}`)}}},
			Message{Role: "user", Content: []Block{{Type: "tool_result", CallID: id, Content: []Block{TextBlock("r")}}}},
			Message{Role: "assistant", Content: []Block{TextBlock("answer " + id)}})
	}
	return msgs
}

func TestCompactSummarisesAllButTheLastPrompts(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "- did things"})})
	a := newTestAgent(t, srv)
	a.SetMessages(history(4), Usage{})
	var log eventLog
	if err := a.Compact(context.Background(), log.sink); err != nil {
		t.Fatal(err)
	}
	if got := log.types(); got != "usage compact_done done" {
		t.Fatalf("events = %s", got)
	}
	msgs := a.Messages()
	if len(msgs) != 9 || !strings.Contains(msgs[0].Text(), "- did things") || msgs[1].Text() != "prompt hc" {
		t.Fatalf("after compaction: %d messages, first %q, second %q", len(msgs), msgs[0].Text(), msgs[1].Text())
	}
	body := string(srv.Requests()[0].Body)
	if !strings.Contains(body, "prompt hb") || strings.Contains(body, "prompt hc") || !strings.Contains(body, "Summarise the conversation") {
		t.Errorf("summary request should cover only the older prompts: %s", truncate(body, 3000))
	}
}

// One prompt whose tool loop fills the context window — a long -p run —
// is compacted between its steps: all but the last two steps are
// summarised, and the loop goes on.
func TestAutoCompactInsideOneLongToolLoop(t *testing.T) {
	t.Parallel()
	step := func(id string, input int) replayStep {
		ev := anthropicEvents(gen{ToolID: id, ToolName: "echo", ToolArgs: `{}`})
		ev[0] = strings.Replace(ev[0], `"input_tokens":100`, `"input_tokens":`+strconv.Itoa(input), 1)
		return replayStep{Events: ev}
	}
	srv := startReplay(t, step("t1", 100), step("t2", 100), step("t3", 180000),
		replayStep{Events: anthropicEvents(gen{Text: "- ran t1"})},
		replayStep{Events: anthropicEvents(gen{Text: "finished"})})
	a := newTestAgent(t, srv, &funcTool{name: "echo"})
	var log eventLog
	if err := a.Prompt(context.Background(), "the only prompt", nil, log.sink); err != nil {
		t.Fatal(err)
	}
	if n := len(log.ofType("compact_done")); n != 1 {
		t.Fatalf("compactions = %d; events %s", n, log.types())
	}
	summaryReq := string(srv.Requests()[3].Body)
	if !strings.Contains(summaryReq, "the only prompt") || strings.Contains(summaryReq, `"t2"`) {
		t.Errorf("the summary should cover the prompt and step 1 only: %s", truncate(summaryReq, 3000))
	}
	msgs := a.Messages()
	if len(msgs) != 6 || !strings.Contains(msgs[0].Text(), "- ran t1") || msgs[1].ToolCalls()[0].ID != "t2" || msgs[5].Text() != "finished" {
		t.Fatalf("after compaction: %d messages, first %q", len(msgs), msgs[0].Text())
	}
}

func TestCompactCut(t *testing.T) {
	t.Parallel()
	prompt := Message{Role: "user", Content: []Block{TextBlock("p")}}
	call := Message{Role: "assistant", Content: []Block{{Type: "tool_call", ID: "c", Name: "echo"}}}
	result := Message{Role: "user", Content: []Block{{Type: "tool_result", CallID: "c"}}}
	answer := Message{Role: "assistant", Content: []Block{TextBlock("a")}}
	for _, tc := range []struct {
		name string
		msgs []Message
		want int
	}{
		{"empty", nil, 0},
		{"one short prompt", []Message{prompt, answer}, 0},
		{"one prompt, two steps", []Message{prompt, call, result, answer}, 0},
		{"one prompt, three steps", []Message{prompt, call, result, call, result, answer}, 3},
		{"two prompts", []Message{prompt, answer, prompt, answer}, 0},
		{"three prompts", []Message{prompt, answer, prompt, answer, prompt, answer}, 2},
		{"long loop after older prompts", []Message{prompt, answer, prompt, answer, prompt, call, result, call, result, call, result}, 7},
	} {
		if got := compactCut(tc.msgs); got != tc.want {
			t.Errorf("%s: cut at %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A hook's extra context never passes for what the user typed, even in a
// prompt of images alone.
func TestHookContextIsNotTheTypedText(t *testing.T) {
	t.Parallel()
	a := newTestAgent(t, startReplay(t, textStep("ok")))
	a.Pipeline.AddPromptGate(testStage, func(context.Context, string) (bool, string, string) { return false, "", "context from a hook" })
	img := Block{Type: "image", MimeType: "image/png", Data: "aGVsbG8="}
	if err := a.Prompt(context.Background(), "", []Block{img}, nil); err != nil {
		t.Fatal(err)
	}
	typed, added := splitPrompt(a.Messages()[0])
	if typed != "" || len(added) != 2 || added[0].Text != "context from a hook" || added[1].Type != "image" {
		t.Errorf("splitPrompt = %q, %+v", typed, added)
	}
}

func TestAbortedCompactionEndsLikeAnAbortedTurn(t *testing.T) {
	t.Parallel()
	a := newTestAgent(t, startReplay(t, slowStep("never ends")))
	a.SetMessages(history(4), Usage{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var log eventLog
	if err := a.Compact(ctx, log.sink); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if got := log.types(); got != "turn_end:aborted done" {
		t.Errorf("events = %s", got)
	}
	if len(a.Messages()) != len(history(4)) {
		t.Errorf("an aborted compaction changed the transcript")
	}
}

// An abort that comes once the compaction is done changes nothing: it
// finished, and says so.
func TestAbortAfterACompactionFinishedIsNoAbort(t *testing.T) {
	t.Parallel()
	a := newTestAgent(t, startReplay(t, textStep("the summary")))
	a.SetMessages(history(4), Usage{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log eventLog
	err := a.Compact(ctx, func(e Event) {
		log.sink(e)
		if e.Type == "compact_done" {
			cancel()
		}
	})
	if err != nil || log.types() != "usage compact_done done" {
		t.Errorf("err %v, events %s", err, log.types())
	}
}

func TestPromptTooLongCompactsAndRetriesOnce(t *testing.T) {
	t.Parallel()
	tooLong := replayStep{Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 300000 tokens > 200000 maximum"}}`}
	srv := startReplay(t, tooLong, replayStep{Events: anthropicEvents(gen{Text: "summary"})}, replayStep{Events: anthropicEvents(gen{Text: "answer"})})
	a := newTestAgent(t, srv)
	a.SetMessages(history(3), Usage{})
	var log eventLog
	if err := a.Prompt(context.Background(), "next", nil, log.sink); err != nil {
		t.Fatal(err)
	}
	want := "user_message turn_start assistant_start turn_end:error usage compact_done turn_start assistant_start text_delta assistant_message usage turn_end:end_turn done"
	if got := log.types(); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	// A second refusal is not retried again.
	srv2 := startReplay(t, tooLong, replayStep{Events: anthropicEvents(gen{Text: "summary"})}, tooLong)
	b := newTestAgent(t, srv2)
	b.SetMessages(history(3), Usage{})
	if err := b.Prompt(context.Background(), "next", nil, nil); !errors.Is(err, ErrContextTooLong) {
		t.Fatalf("err = %v", err)
	}
}

func TestAutoCompactNearTheContextWindow(t *testing.T) {
	t.Parallel()
	big := anthropicEvents(gen{Text: "first"})
	big[0] = strings.Replace(big[0], `"input_tokens":100`, `"input_tokens":180000`, 1)
	srv := startReplay(t, replayStep{Events: big}, replayStep{Events: anthropicEvents(gen{Text: "summary"})}, replayStep{Events: anthropicEvents(gen{Text: "second"})})
	a := newTestAgent(t, srv)
	a.SetMessages(history(2), Usage{})
	if err := a.Prompt(context.Background(), "one", nil, nil); err != nil {
		t.Fatal(err)
	}
	var log eventLog
	if err := a.Prompt(context.Background(), "two", nil, log.sink); err != nil {
		t.Fatal(err)
	}
	if len(log.ofType("compact_done")) != 1 || len(srv.Requests()) != 3 {
		t.Fatalf("events %s, requests %d", log.types(), len(srv.Requests()))
	}
}

func TestOnStopContinuesAtMostThreeTimes(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "done?"})})
	a := newTestAgent(t, srv)
	asked := 0
	a.Pipeline.AddStopHook(testStage, func(ctx context.Context, last Message) (bool, string) {
		asked++
		return true, "keep going"
	})
	if err := a.Prompt(context.Background(), "go", nil, nil); err != nil {
		t.Fatal(err)
	}
	if asked != 3 || len(srv.Requests()) != 4 {
		t.Errorf("asked %d times, %d requests; want 3 and 4", asked, len(srv.Requests()))
	}
}

func TestBuildSystemPrompt(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	sub := filepath.Join(root, "project")
	os.MkdirAll(sub, 0o755)
	os.Mkdir(filepath.Join(root, ".git"), 0o755) // the project's root
	os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("outer rules"), 0o644)
	os.WriteFile(filepath.Join(sub, "CLAUDE.md"), []byte("inner rules"), 0o644)
	home := t.TempDir()

	p := BuildSystemPrompt(SystemPromptOptions{Cwd: sub, Home: home, Tools: []string{"read", "bash"}, Append: []string{"extra one", "extra two"}})
	if !strings.Contains(p, sub) || !strings.Contains(p, "Tools: read, bash.") {
		t.Errorf("default prompt lacks cwd or tools:\n%s", p)
	}
	order := []string{"extra one", "extra two", "outer rules", "inner rules"}
	last := -1
	for _, s := range order {
		i := strings.Index(p, s)
		if i < last {
			t.Errorf("%q out of order in:\n%s", s, p)
		}
		last = i
	}
	for _, tt := range []struct {
		tools    []string
		has, not []string
	}{
		{nil, []string{"no tools"}, []string{"Tools:", "read files", "edit", "write", "bash"}},
		{[]string{"read"}, []string{"Tools: read.", "be concise"}, []string{"before you change", "edit", "bash", "what changed"}},
		{[]string{"bash", "edit", "read", "write"}, []string{"read files before", "prefer edit", "run commands with bash", "what changed"}, []string{"no tools"}},
	} {
		p := BuildSystemPrompt(SystemPromptOptions{Cwd: sub, Tools: tt.tools})
		for _, s := range tt.has {
			if !strings.Contains(p, s) {
				t.Errorf("tools %q: the prompt lacks %q:\n%s", tt.tools, s, p)
			}
		}
		base, _, _ := strings.Cut(p, "Project context")
		for _, s := range tt.not {
			if strings.Contains(base, s) {
				t.Errorf("tools %q: the prompt speaks of %q:\n%s", tt.tools, s, p)
			}
		}
	}
	os.WriteFile(filepath.Join(home, "SYSTEM.md"), []byte("custom base"), 0o644)
	if p := BuildSystemPrompt(SystemPromptOptions{Cwd: sub, Home: home}); !strings.HasPrefix(p, "custom base") {
		t.Errorf("SYSTEM.md did not replace the default:\n%s", p)
	}
	if p := BuildSystemPrompt(SystemPromptOptions{Cwd: sub, Home: home, Override: "flag base"}); !strings.HasPrefix(p, "flag base") {
		t.Errorf("--system-prompt did not win:\n%s", p)
	}
}

func TestChainGatesOrderRewriteAskDeny(t *testing.T) {
	t.Parallel()
	var seen []string
	rewrite := func(ctx context.Context, c ToolCall) GateResult {
		seen = append(seen, "rewrite:"+string(c.Args))
		return GateResult{Args: json.RawMessage(`{"cmd":"safe"}`), Notes: []GateNote{{By: "extension:a", Decision: DecisionRewrite}}}
	}
	ask := func(ctx context.Context, c ToolCall) GateResult {
		seen = append(seen, "ask:"+string(c.Args))
		return GateResult{Verdict: GateAsk, Reason: "sure?", Notes: []GateNote{{By: "validator:v", Decision: DecisionAsk, Reason: "sure?"}}}
	}
	deny := func(ctx context.Context, c ToolCall) GateResult {
		return GateResult{Verdict: GateDeny, Reason: "no", Notes: []GateNote{{By: "hook:h", Decision: DecisionDeny, Reason: "no"}}}
	}
	call := ToolCall{Name: "bash", Args: json.RawMessage(`{"cmd":"x"}`)}

	d := decideWith(func(ctx context.Context, c ToolCall, asks []GateNote) (bool, string) {
		if string(c.Args) != `{"cmd":"safe"}` || len(asks) != 1 || asks[0].By != "validator:v" {
			t.Errorf("confirm saw %s %+v", c.Args, asks)
		}
		return true, "user"
	}, rewrite, ask)(context.Background(), call)
	if d.Block || string(d.Args) != `{"cmd":"safe"}` || len(d.Trail) != 3 || d.Trail[2] != (GateNote{By: "user", Decision: DecisionApprove}) {
		t.Errorf("approved: %+v", d)
	}
	if strings.Join(seen, " ") != `rewrite:{"cmd":"x"} ask:{"cmd":"safe"}` {
		t.Errorf("gates saw %v", seen)
	}

	d = decideWith(nil, ask)(context.Background(), call)
	if !d.Block || !strings.Contains(d.Reason, "validator:v: sure?") {
		t.Errorf("unconfirmed ask: %+v", d)
	}
	d = decideWith(func(context.Context, ToolCall, []GateNote) (bool, string) {
		t.Error("confirm asked although a gate denied")
		return true, ""
	}, deny, ask)(context.Background(), call)
	if !d.Block || d.Reason != "no" {
		t.Errorf("deny: %+v", d)
	}
}

func TestAbortKeepsSignedThinkingBeforeToolCalls(t *testing.T) {
	t.Parallel()
	events := anthropicEvents(gen{Thinking: "plan the call"}, gen{ToolID: "t1", ToolName: "slow", ToolArgs: `{"a":1}`})
	srv := startReplay(t, replayStep{Events: events, HangAfter: len(events) - 2})
	a := newTestAgent(t, srv, &funcTool{name: "slow"})
	ctx, cancel := context.WithCancel(context.Background())
	a.Prompt(ctx, "go", nil, func(e Event) {
		if e.Type == "tool_use_end" {
			cancel()
		}
	})
	msgs := a.Messages()
	if len(msgs) != 3 {
		t.Fatalf("transcript = %+v", msgs)
	}
	asst := msgs[1].Content
	if len(asst) != 2 || asst[0].Type != "thinking" || asst[0].Signature == "" || asst[1].Type != "tool_call" {
		t.Errorf("assistant = %+v, want the signed thinking kept before the call", asst)
	}
	if r := msgs[2].Content[0]; r.Type != "tool_result" || r.CallID != "t1" || !r.IsError {
		t.Errorf("result = %+v", r)
	}
}

func TestHeldTextHoldsThinkingToo(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Thinking: "the key is SECRET"}, gen{Text: "done"})})
	a := newTestAgent(t, srv)
	a.Pipeline.AddMessageGate(testStage, func(ctx context.Context, text string) (string, bool) { return text, false }, nil)
	var log eventLog
	if err := a.Prompt(context.Background(), "go", nil, log.sink); err != nil {
		t.Fatal(err)
	}
	if d := log.ofType("thinking_delta"); len(d) != 0 {
		t.Errorf("thinking streamed while text was held: %+v", d)
	}
	for _, b := range log.ofType("assistant_message")[0].Content {
		if b.Type == "thinking" {
			t.Errorf("thinking shown while text was held")
		}
	}
	if a.Messages()[1].Content[0].Type != "thinking" {
		t.Errorf("the transcript must keep the thinking")
	}
}

// TestContinueAnswersAFailedPromptWithoutSendingItTwice: a prompt whose
// model call failed is answered by Continue, from the transcript as the
// failure left it, and the request carries the prompt once.
func TestContinueAnswersAFailedPromptWithoutSendingItTwice(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Status: 400, Body: `{"error":{"type":"invalid_request_error","message":"no"}}`},
		replayStep{Events: anthropicEvents(gen{Text: "answered"})})
	a := newTestAgent(t, srv)
	if err := a.Continue(context.Background(), nil); err == nil {
		t.Error("Continue on an empty conversation did not fail")
	}
	if err := a.Prompt(context.Background(), "the question", nil, nil); err == nil {
		t.Fatal("the first call should fail")
	}
	var log eventLog
	if err := a.Continue(context.Background(), log.sink); err != nil {
		t.Fatal(err)
	}
	msgs := a.Messages()
	if len(msgs) != 2 || msgs[0].Text() != "the question" || msgs[1].Text() != "answered" {
		t.Errorf("transcript: %+v", msgs)
	}
	if got := log.types(); strings.Contains(got, "user_message") || !strings.HasSuffix(got, "done") {
		t.Errorf("events: %s", got)
	}
	if body := string(srv.Requests()[1].Body); strings.Count(body, "the question") != 1 {
		t.Errorf("the retried request: %s", body)
	}
	if err := a.Continue(context.Background(), nil); err == nil {
		t.Error("Continue after the answer did not fail")
	}
}
