package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// recordedSleeps replaces the backoff sleep so retry tests run at once and
// can check how long the client would have waited.
type recordedSleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (r *recordedSleeps) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.d = append(r.d, d)
	r.mu.Unlock()
	return ctx.Err()
}

func testProvider(t testing.TB, name, url string) (Provider, *recordedSleeps) {
	t.Helper()
	p, err := NewProvider(ProviderConfig{Name: name, BaseURL: url, APIKey: "test-key", KeySource: "ANTHROPIC_API_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordedSleeps{}
	switch p := p.(type) {
	case *anthropicProvider:
		p.http.sleep = rec.sleep
	case *openaiProvider:
		p.http.sleep = rec.sleep
	case *ollamaProvider:
		p.openai.http.sleep = rec.sleep
	}
	return p, rec
}

// streamed is one provider call's outcome, with the pieces it streamed.
type streamed struct {
	reply  Reply
	err    error
	pieces []StreamEvent
}

func (s streamed) text(typ string) string {
	var b strings.Builder
	for _, p := range s.pieces {
		if p.Type == typ {
			b.WriteString(p.Delta)
		}
	}
	return b.String()
}

func callProvider(t testing.TB, p Provider, req Request) streamed {
	t.Helper()
	if req.Model == "" {
		req.Model = "claude-sonnet-4-5"
	}
	if len(req.Messages) == 0 {
		req.Messages = []Message{{Role: "user", Content: []Block{TextBlock("hi")}}}
	}
	var s streamed
	s.reply, s.err = p.Stream(context.Background(), req, func(e StreamEvent) { s.pieces = append(s.pieces, e) })
	return s
}

type wantReply struct {
	text, thinking, signature string
	tools                     []ToolCall
	stop                      string
	usage                     Usage
	err                       string
}

func checkReply(t *testing.T, got streamed, want wantReply) {
	t.Helper()
	if want.err != "" {
		if got.err == nil || !strings.Contains(got.err.Error(), want.err) {
			t.Fatalf("error = %v, want it to contain %q", got.err, want.err)
		}
		return
	}
	if got.err != nil {
		t.Fatalf("unexpected error: %v", got.err)
	}
	msg := Message{Content: got.reply.Content}
	if msg.Text() != want.text {
		t.Errorf("text = %q, want %q", msg.Text(), want.text)
	}
	if got.text("text") != want.text {
		t.Errorf("streamed text = %q, want %q", got.text("text"), want.text)
	}
	var thinking, sig string
	for _, b := range got.reply.Content {
		if b.Type == "thinking" {
			thinking, sig = thinking+b.Text, sig+b.Signature
		}
	}
	if thinking != want.thinking || got.text("thinking") != want.thinking {
		t.Errorf("thinking = %q (streamed %q), want %q", thinking, got.text("thinking"), want.thinking)
	}
	if sig != want.signature {
		t.Errorf("signature = %q, want %q", sig, want.signature)
	}
	calls := msg.ToolCalls()
	if len(calls) != len(want.tools) {
		t.Fatalf("tool calls = %+v, want %+v", calls, want.tools)
	}
	for i, c := range calls {
		if c.Name != want.tools[i].Name || string(c.Args) != string(want.tools[i].Args) {
			t.Errorf("tool call %d = %s %s, want %s %s", i, c.Name, c.Args, want.tools[i].Name, want.tools[i].Args)
		}
		if want.tools[i].ID != "" && c.ID != want.tools[i].ID {
			t.Errorf("tool call %d id = %s, want %s", i, c.ID, want.tools[i].ID)
		}
		if got.text("tool_args") != "" && !strings.Contains(got.text("tool_args"), string(c.Args)) {
			t.Errorf("streamed tool args %q lack %s", got.text("tool_args"), c.Args)
		}
	}
	if got.reply.Stop != want.stop {
		t.Errorf("stop = %q, want %q", got.reply.Stop, want.stop)
	}
	if got.reply.Usage != want.usage {
		t.Errorf("usage = %+v, want %+v", got.reply.Usage, want.usage)
	}
}

func toolCall(name, args string) ToolCall { return ToolCall{Name: name, Args: json.RawMessage(args)} }

func TestAnthropicParsesRecordedStreams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want wantReply
	}{
		{"anthropic_text_basic.sse", wantReply{text: "Hello there!", stop: StopEndTurn, usage: Usage{Input: 11, Output: 6}}},
		{"anthropic_docs_basic.sse", wantReply{text: "Hello!", stop: StopEndTurn, usage: Usage{Input: 25, Output: 15}}},
		{"anthropic_tool_use_stream.sse", wantReply{text: "I'll check the current weather in Paris for you.", stop: StopToolUse,
			tools: []ToolCall{{ID: "toolu_01NRLabsLyVHZPKxbKvkfSMn", Name: "get_weather", Args: json.RawMessage(`{"location": "Paris"}`)}}, usage: Usage{Input: 377, Output: 65}}},
		{"anthropic_docs_tool_use.sse", wantReply{text: "Okay, let's check the weather for San Francisco, CA:", stop: StopToolUse,
			tools: []ToolCall{toolCall("get_weather", `{"location": "San Francisco, CA", "unit": "fahrenheit"}`)}, usage: Usage{Input: 472, Output: 89}}},
		{"anthropic_recorded_text_then_tool_use.sse", wantReply{text: "I'll get the current weather in San Francisco for you in Fahrenheit.", stop: StopToolUse,
			tools: []ToolCall{toolCall("get_weather", `{"city": "San Francisco", "units": "fahrenheit"}`)}, usage: Usage{Input: 397, Output: 89}}},
		{"anthropic_recorded_final_text_after_tool_result.sse", wantReply{text: "The current weather in San Francisco is 68 degrees Fahrenheit.", stop: StopEndTurn, usage: Usage{Input: 509, Output: 19}}},
		{"anthropic_server_tool_use_web_search_refusal.sse", wantReply{text: "Here's a summary of this year's solar eclipses and how", stop: StopRefusal, usage: Usage{Input: 28, Output: 106}}},
		{"anthropic_docs_error_overloaded.sse", wantReply{err: "anthropic: overloaded_error: Overloaded"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			srv := startReplay(t, fixtureStep(t, tt.file))
			p, _ := testProvider(t, "anthropic", srv.URL)
			checkReply(t, callProvider(t, p, Request{}), tt.want)
		})
	}
}

func TestAnthropicThinkingKeepsSignature(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"anthropic_recorded_thinking_then_text.sse", "anthropic_docs_extended_thinking.sse", "anthropic_thinking_signature_refusal.sse"} {
		t.Run(file, func(t *testing.T) {
			srv := startReplay(t, fixtureStep(t, file))
			p, _ := testProvider(t, "anthropic", srv.URL)
			got := callProvider(t, p, Request{})
			if got.err != nil {
				t.Fatal(got.err)
			}
			b := got.reply.Content[0]
			if b.Type != "thinking" || b.Signature == "" || b.Text == "" || b.Text != got.text("thinking") {
				t.Fatalf("first block = %+v, want thinking with text and signature", b)
			}
			if got.reply.Content[1].Type != "text" || got.reply.Content[1].Text == "" {
				t.Fatalf("second block = %+v, want text", got.reply.Content[1])
			}
		})
	}
}

func TestAnthropicTruncatedToolCallKeepsPartialArgs(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, fixtureStep(t, "anthropic_tool_use_max_tokens_truncated.sse"))
	p, _ := testProvider(t, "anthropic", srv.URL)
	got := callProvider(t, p, Request{})
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.reply.Stop != StopLength {
		t.Errorf("stop = %q, want length", got.reply.Stop)
	}
	calls := Message{Content: got.reply.Content}.ToolCalls()
	if len(calls) != 1 || json.Valid(calls[0].Args) || !strings.HasPrefix(string(calls[0].Args), `{"filename": "taxes.txt"`) {
		t.Fatalf("calls = %+v, want one make_file call with cut-off args", calls)
	}
	var ends int
	for _, e := range got.pieces {
		if e.Type == "tool_end" {
			ends++
		}
	}
	if ends != 1 {
		t.Errorf("tool_end pieces = %d, want 1 even without content_block_stop", ends)
	}
}

func TestOpenAIParsesRecordedStreams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want wantReply
	}{
		{"openai_chat_text_usage.sse", wantReply{text: "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app.", stop: StopEndTurn, usage: Usage{Input: 14, Output: 30}}},
		{"openai_chat_tool_call.sse", wantReply{stop: StopToolUse, tools: []ToolCall{{ID: "call_4XzlGBLtUe9dy3GVNV4jhq7h", Name: "get_weather", Args: json.RawMessage(`{"city":"New York City"}`)}}, usage: Usage{Input: 44, Output: 16}}},
		{"openai_chat_parallel_tool_calls.sse", wantReply{stop: StopToolUse, tools: []ToolCall{
			toolCall("GetWeatherArgs", `{"city": "Edinburgh", "country": "GB", "units": "c"}`),
			toolCall("get_stock_price", `{"ticker": "AAPL", "exchange": "NASDAQ"}`)}, usage: Usage{Input: 149, Output: 60}}},
		{"openai_chat_finish_length.sse", wantReply{text: `{"`, stop: StopLength, usage: Usage{Input: 79, Output: 1}}},
		{"openai_chat_refusal.sse", wantReply{text: "I'm sorry, I can't assist with that request.", stop: StopRefusal, usage: Usage{Input: 79, Output: 11}}},
		{"openai_chat_handwritten_content_filter.sse", wantReply{text: "Sure, the story goes on:", stop: StopRefusal, usage: Usage{Input: 21, Output: 4}}},
		{"openai_chat_logprobs.sse", wantReply{text: "Foo!", stop: StopEndTurn, usage: Usage{Input: 9, Output: 2}}},
		{"openai_chat_n3_choices.sse", wantReply{text: `{"city":"San Francisco","temperature":65,"units":"f"}`, stop: StopEndTurn, usage: Usage{Input: 79, Output: 42}}},
		{"openai_compat_deepseek_reasoning_tool_call.sse", wantReply{stop: StopToolUse, tools: []ToolCall{toolCall("weather", `{"location": "San Francisco"}`)}, usage: Usage{Input: 19, Output: 83, CacheRead: 320}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			srv := startReplay(t, fixtureStep(t, tt.file))
			p, _ := testProvider(t, "openai", srv.URL)
			got := callProvider(t, p, Request{Model: "gpt-4o"})
			if tt.file == "openai_compat_deepseek_reasoning_tool_call.sse" {
				// Reasoning text comes back as thinking without a signature.
				tt.want.thinking = got.text("thinking")
				if len(tt.want.thinking) < 100 {
					t.Fatalf("reasoning_content not streamed as thinking: %q", tt.want.thinking)
				}
			}
			checkReply(t, got, tt.want)
		})
	}
}

func TestOpenAITextThenToolCall(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, fixtureStep(t, "openai_chat_text_then_tool_call_logprobs.sse"))
	p, _ := testProvider(t, "openai", srv.URL)
	got := callProvider(t, p, Request{Model: "gpt-4o"})
	if got.err != nil {
		t.Fatal(got.err)
	}
	msg := Message{Content: got.reply.Content}
	if !strings.HasPrefix(msg.Text(), "Let's take a journey to the beautiful island of Santorini") || len(msg.Text()) != 823 {
		t.Errorf("text = %q (%d bytes)", truncate(msg.Text(), 60), len(msg.Text()))
	}
	calls := msg.ToolCalls()
	if len(calls) != 1 || string(calls[0].Args) != `{"location":"Santorini, Greece"}` {
		t.Errorf("calls = %+v", calls)
	}
	if got.reply.Content[len(got.reply.Content)-1].Type != "tool_call" {
		t.Errorf("tool call should follow the text")
	}
}

// --reasoning never makes a request the model cannot take: each model is
// asked the way the catalogue says it thinks (adaptive with an effort, or
// a budget that fits under its output limit), a level it lacks becomes the
// nearest one below, and a model that cannot reason is sent nothing.
func TestReasoningFitsTheModel(t *testing.T) {
	t.Parallel()
	anth := &anthropicProvider{}
	for _, tc := range []struct {
		model, level string
		maxTokens    int
		thinking     string // type sent, "" for none
		budget       int
		effort       string
	}{
		{"claude-opus-4-7", "high", 128000, "adaptive", 0, "high"},
		{"claude-opus-4-8", "xhigh", 128000, "adaptive", 0, "xhigh"},
		{"claude-opus-4-6", "xhigh", 128000, "adaptive", 0, "high"},
		{"claude-sonnet-4-6", "max", 64000, "adaptive", 0, "max"},
		{"claude-sonnet-4-6", "low", 64000, "adaptive", 0, "low"},
		{"claude-opus-5", "medium", defaultMaxOutput + answerRoom, "adaptive", 0, "medium"},
		{"my-local-model", "high", 32768 + answerRoom, "adaptive", 0, "high"},
		{"claude-sonnet-4-5", "high", 64000, "enabled", 32768, ""},
		{"claude-sonnet-4-5", "max", 64000, "enabled", 32768, ""},
		{"claude-sonnet-4-5-20250929", "low", 64000, "enabled", 4096, ""},
		{"claude-opus-4-20250514", "medium", 32000, "enabled", 16384, ""},
		{"claude-3-7-sonnet-20250219", "low", 64000, "enabled", 4096, ""},
		{"claude-opus-4-1", "high", 32000, "enabled", 32000 - answerRoom, ""},
		{"claude-3-5-haiku-latest", "high", 8192, "", 0, ""},
		{"claude-opus-4-7", "off", 128000, "", 0, ""},
		{"claude-sonnet-4-5", "", 64000, "", 0, ""},
	} {
		r := anth.buildRequest(Request{Model: tc.model, Reasoning: tc.level})
		var thinking, effort string
		budget := 0
		if r.Thinking != nil {
			thinking, budget = r.Thinking.Type, r.Thinking.BudgetTokens
		}
		if r.OutputConfig != nil {
			effort = r.OutputConfig.Effort
		}
		if r.MaxTokens != tc.maxTokens || thinking != tc.thinking || budget != tc.budget || effort != tc.effort {
			t.Errorf("%s --reasoning %q: max_tokens %d thinking %q budget %d effort %q, want %d %q %d %q",
				tc.model, tc.level, r.MaxTokens, thinking, budget, effort, tc.maxTokens, tc.thinking, tc.budget, tc.effort)
		}
	}
	oai := &openaiProvider{name: "openai"}
	for _, tc := range []struct{ model, level, want string }{
		{"gpt-5", "high", "high"}, {"o3", "high", "high"}, {"gpt-4o", "high", ""}, {"qwen3-coder", "high", "high"},
		{"gpt-5.5", "xhigh", "xhigh"}, {"gpt-5.5", "max", "xhigh"}, {"gpt-5", "xhigh", "high"}, {"gpt-5.5", "off", ""},
		{"qwen3-coder", "max", "max"},
	} {
		if got := oai.buildRequest(Request{Model: tc.model, Reasoning: tc.level}).ReasoningEffort; got != tc.want {
			t.Errorf("%s --reasoning %s: reasoning_effort %q, want %q", tc.model, tc.level, got, tc.want)
		}
	}
}

func TestAnthropicRequestShape(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	p, _ := testProvider(t, "anthropic", srv.URL)
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
	req := Request{
		Model:     "claude-sonnet-4-5",
		System:    "be brief",
		Reasoning: "low",
		Tools:     []ToolSpec{{Name: "write", Schema: schema}, {Name: "bash", Schema: schema}, {Name: "read", Schema: schema}},
		Messages: []Message{
			{Role: "user", Content: []Block{TextBlock("look"), {Type: "image", MimeType: "image/png", Data: "aGVsbG8="}}},
			{Role: "assistant", Content: []Block{
				{Type: "thinking", Text: "hmm", Signature: "sig-1"},
				{Type: "thinking", Text: "from another provider"},
				TextBlock("reading"),
				{Type: "tool_call", ID: "t1", Name: "read", Args: json.RawMessage(`{"path":"a"}`)}}},
			{Role: "user", Content: []Block{{Type: "tool_result", CallID: "t1", Content: []Block{TextBlock("data")}}}},
		},
	}
	if got := callProvider(t, p, req); got.err != nil {
		t.Fatal(got.err)
	}
	r := srv.Requests()[0]
	if r.Path != "/v1/messages" || r.Header.Get("x-api-key") != "test-key" || r.Header.Get("anthropic-version") != "2023-06-01" {
		t.Fatalf("path %s headers %v", r.Path, r.Header)
	}
	var body struct {
		Stream    bool `json:"stream"`
		MaxTokens int  `json:"max_tokens"`
		System    []struct {
			Text         string          `json:"text"`
			CacheControl json.RawMessage `json:"cache_control"`
		} `json:"system"`
		Tools []struct {
			Name         string          `json:"name"`
			CacheControl json.RawMessage `json:"cache_control"`
		} `json:"tools"`
		Thinking struct {
			Type   string `json:"type"`
			Budget int    `json:"budget_tokens"`
		} `json:"thinking"`
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type         string          `json:"type"`
				Signature    string          `json:"signature"`
				Source       json.RawMessage `json:"source"`
				ToolUseID    string          `json:"tool_use_id"`
				CacheControl json.RawMessage `json:"cache_control"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if !body.Stream || body.MaxTokens <= body.Thinking.Budget || body.Thinking.Type != "enabled" || body.Thinking.Budget != 4096 {
		t.Errorf("stream %v max_tokens %d thinking %+v", body.Stream, body.MaxTokens, body.Thinking)
	}
	// Tools and system prompt this short are under the model's cache
	// minimum: a breakpoint on them would cache nothing.
	if len(body.System) != 1 || body.System[0].Text != "be brief" || body.System[0].CacheControl != nil {
		t.Errorf("system = %+v", body.System)
	}
	var names []string
	for i, tool := range body.Tools {
		names = append(names, tool.Name)
		if tool.CacheControl != nil {
			t.Errorf("cache_control on tool %d (%s): %s", i, tool.Name, tool.CacheControl)
		}
	}
	if strings.Join(names, ",") != "bash,read,write" {
		t.Errorf("tools sent as %v, want sorted by name", names)
	}
	asst := body.Messages[1].Content
	if len(asst) != 3 || asst[0].Type != "thinking" || asst[0].Signature != "sig-1" || asst[2].Type != "tool_use" {
		t.Errorf("assistant content = %+v: want the signed thinking kept, the unsigned one dropped", asst)
	}
	if body.Messages[0].Content[1].Type != "image" || !strings.Contains(string(body.Messages[0].Content[1].Source), `"media_type":"image/png"`) {
		t.Errorf("image block = %+v", body.Messages[0].Content[1])
	}
	last := body.Messages[2].Content
	if last[0].Type != "tool_result" || last[0].ToolUseID != "t1" || last[0].CacheControl == nil {
		t.Errorf("last user block = %+v, want tool_result with cache_control", last[0])
	}
	if body.Messages[0].Content[0].CacheControl != nil || string(body.Messages[0].Content[1].CacheControl) != `{"type":"ephemeral"}` {
		t.Errorf("cache_control belongs on the last block of the last two user messages: %+v", body.Messages[0].Content)
	}
}

func TestOpenAIRequestShape(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"", "/v1"} {
		srv := startReplay(t, replayStep{Events: openaiEvents(gen{Text: "ok"})})
		p, _ := testProvider(t, "openai", srv.URL+base)
		req := Request{
			Model: "gpt-5", System: "sys", Reasoning: "high",
			Tools: []ToolSpec{{Name: "read"}},
			Messages: []Message{
				{Role: "user", Content: []Block{TextBlock("look"), {Type: "image", MimeType: "image/png", Data: "aGVsbG8="}}},
				{Role: "assistant", Content: []Block{{Type: "thinking", Text: "hidden"}, {Type: "tool_call", ID: "c1", Name: "read", Args: json.RawMessage(`{"path":"x.png"}`)}}},
				{Role: "user", Content: []Block{{Type: "tool_result", CallID: "c1", Content: []Block{TextBlock("an image"), {Type: "image", MimeType: "image/png", Data: "aGk="}}}}},
			},
		}
		if got := callProvider(t, p, req); got.err != nil {
			t.Fatal(got.err)
		}
		r := srv.Requests()[0]
		if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
			t.Fatalf("base %q: path %s auth %q", base, r.Path, r.Header.Get("Authorization"))
		}
		var body struct {
			Stream        bool `json:"stream"`
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
			ReasoningEffort string `json:"reasoning_effort"`
			Messages        []struct {
				Role       string          `json:"role"`
				Content    json.RawMessage `json:"content"`
				ToolCallID string          `json:"tool_call_id"`
				ToolCalls  []oaiToolCall   `json:"tool_calls"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if !body.Stream || !body.StreamOptions.IncludeUsage || body.ReasoningEffort != "high" {
			t.Errorf("body = %s", r.Body)
		}
		var roles []string
		for _, m := range body.Messages {
			roles = append(roles, m.Role)
		}
		if strings.Join(roles, ",") != "system,user,assistant,tool,user" {
			t.Fatalf("roles = %v, want the tool image moved into a user message after the tool message", roles)
		}
		if !strings.Contains(string(body.Messages[1].Content), "data:image/png;base64,aGVsbG8=") {
			t.Errorf("user image = %s", body.Messages[1].Content)
		}
		if body.Messages[2].ToolCalls[0].Function.Arguments != `{"path":"x.png"}` || string(body.Messages[2].Content) != "null" {
			t.Errorf("assistant = %+v", body.Messages[2])
		}
		if body.Messages[3].ToolCallID != "c1" || !strings.Contains(string(body.Messages[4].Content), "data:image/png;base64,aGk=") {
			t.Errorf("tool/user = %+v %+v", body.Messages[3], body.Messages[4])
		}
	}
}

func TestOllamaNeedsNoKey(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: openaiEvents(gen{Text: "local"})})
	p, err := NewProvider(ProviderConfig{Name: "ollama", BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	got := callProvider(t, p, Request{Model: "qwen3"})
	if got.err != nil || replyText(got.reply) != "local" {
		t.Fatalf("got %+v", got)
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q, want none", h)
	}
	// Not an ollama (no /api/version): its OpenAI path.
	if path := srv.Requests()[0].Path; path != "/v1/chat/completions" {
		t.Errorf("path = %s", path)
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		replayStep{Status: 429, Header: http.Header{"Retry-After": {"7"}}, Body: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`},
		replayStep{Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`},
		replayStep{Events: anthropicEvents(gen{Text: "finally"})})
	p, sleeps := testProvider(t, "anthropic", srv.URL)
	got := callProvider(t, p, Request{})
	if got.err != nil || replyText(got.reply) != "finally" {
		t.Fatalf("got %v %+v", got.err, got.reply)
	}
	if len(srv.Requests()) != 3 {
		t.Fatalf("requests = %d, want 3", len(srv.Requests()))
	}
	if len(sleeps.d) != 2 || sleeps.d[0] != 7*time.Second {
		t.Fatalf("sleeps = %v, want 7s (Retry-After) then a backoff", sleeps.d)
	}
	if sleeps.d[1] <= 0 || sleeps.d[1] > time.Second {
		t.Errorf("backoff = %v, want (0, 1s] for the second attempt", sleeps.d[1])
	}
}

func TestRetryGivesUpAfterThreeRetries(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Status: 500, Body: `{"error":{"message":"boom","type":"server_error"}}`})
	p, sleeps := testProvider(t, "openai", srv.URL)
	got := callProvider(t, p, Request{Model: "gpt-4o"})
	if got.err == nil || !strings.Contains(got.err.Error(), "HTTP 500") || !strings.Contains(got.err.Error(), "gave up after 3 retries") {
		t.Fatalf("err = %v", got.err)
	}
	if len(srv.Requests()) != 4 || len(sleeps.d) != 3 {
		t.Fatalf("requests %d sleeps %v", len(srv.Requests()), sleeps.d)
	}
	for i := 1; i < len(sleeps.d); i++ {
		if sleeps.d[i] > 30*time.Second {
			t.Errorf("sleep %v above the cap", sleeps.d[i])
		}
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if d := retryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now); d != 90*time.Second {
		t.Errorf("date: %v", d)
	}
	if d := retryAfter("1.5", now); d != 1500*time.Millisecond {
		t.Errorf("seconds: %v", d)
	}
	if d := retryAfter("soon", now); d != 0 {
		t.Errorf("garbage: %v", d)
	}
}

func TestUnauthorizedSaysWhereTheKeyCameFrom(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Status: 401, Body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`})
	p, sleeps := testProvider(t, "anthropic", srv.URL)
	got := callProvider(t, p, Request{})
	want := "anthropic: HTTP 401: authentication_error: invalid x-api-key (the key came from ANTHROPIC_API_KEY; give a valid key with --api-key, the ANTHROPIC_API_KEY environment variable or /login)"
	if got.err == nil || got.err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", got.err, want)
	}
	if len(srv.Requests()) != 1 || len(sleeps.d) != 0 {
		t.Errorf("401 must not be retried")
	}
	if strings.Contains(got.err.Error(), "test-key") {
		t.Errorf("the key leaked into the error")
	}
}

func TestConnectionDroppedMidStreamIsAnErrorNotRetried(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "a long answer that gets cut"}), DropAfter: 4})
	p, _ := testProvider(t, "anthropic", srv.URL)
	got := callProvider(t, p, Request{})
	if got.err == nil {
		t.Fatal("want an error")
	}
	if !strings.Contains(got.err.Error(), "after 4 events") {
		t.Errorf("err = %v, want it to say how far it got", got.err)
	}
	if len(srv.Requests()) != 1 {
		t.Errorf("a started stream was retried")
	}
	if replyText(got.reply) == "" {
		t.Errorf("partial text lost")
	}
}

func TestErrorEventAfterDeltas(t *testing.T) {
	t.Parallel()
	events := anthropicEvents(gen{Text: "partial answer here"})
	events = append(events[:4], fixture(t, "anthropic_docs_error_overloaded.sse")+"\n\n")
	srv := startReplay(t, replayStep{Events: events})
	p, _ := testProvider(t, "anthropic", srv.URL)
	got := callProvider(t, p, Request{})
	var perr *ProviderError
	if !errors.As(got.err, &perr) || perr.Type != "overloaded_error" || perr.Message != "Overloaded" {
		t.Fatalf("err = %v", got.err)
	}
	if got.text("text") == "" {
		t.Errorf("deltas before the error were not streamed")
	}
}

func TestStreamWithoutTerminalEventIsAnError(t *testing.T) {
	t.Parallel()
	full := anthropicEvents(gen{Text: "hello"})
	oai := openaiEvents(gen{Text: "hello"})
	tests := []struct {
		provider string
		events   []string
	}{
		{"anthropic", full[:len(full)-1]},
		{"openai", oai[:2]},
	}
	for _, tt := range tests {
		srv := startReplay(t, replayStep{Events: tt.events})
		p, _ := testProvider(t, tt.provider, srv.URL)
		got := callProvider(t, p, Request{Model: "m"})
		want := tt.provider + ": stream ended early after " + strconv.Itoa(len(tt.events)) + " events"
		if got.err == nil || got.err.Error() != want {
			t.Errorf("%s: err = %v, want %q", tt.provider, got.err, want)
		}
	}
}

// A connection dropped in the middle of an event is an early end too, and
// says so, rather than a JSON error about half an event.
func TestStreamCutInsideAnEventEndedEarly(t *testing.T) {
	t.Parallel()
	full := anthropicEvents(gen{Text: "hello"})
	oai := openaiEvents(gen{Text: "hello"})
	for _, tt := range []struct {
		provider string
		events   []string
	}{
		{"anthropic", append(full[:3:3], full[3][:len(full[3])/2])},
		{"openai", append(oai[:1:1], oai[1][:len(oai[1])/2])},
	} {
		srv := startReplay(t, replayStep{Events: tt.events})
		p, _ := testProvider(t, tt.provider, srv.URL)
		got := callProvider(t, p, Request{Model: "m"})
		want := tt.provider + ": stream ended early after " + strconv.Itoa(len(tt.events)-1) + " events (the last event was cut off)"
		if got.err == nil || got.err.Error() != want {
			t.Errorf("%s: err = %v, want %q", tt.provider, got.err, want)
		}
	}
}

func TestOpenAIErrorInDataLine(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: []string{
		openaiEvents(gen{Text: "x"})[0],
		`data: {"error":{"message":"model overloaded","type":"server_error","code":"overloaded"}}` + "\n\n"}})
	p, _ := testProvider(t, "openai", srv.URL)
	got := callProvider(t, p, Request{Model: "m"})
	if got.err == nil || got.err.Error() != "openai: server_error: model overloaded" {
		t.Fatalf("err = %v", got.err)
	}
}

func TestPromptTooLongIsRecognised(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`})
	p, _ := testProvider(t, "anthropic", srv.URL)
	got := callProvider(t, p, Request{})
	if !errors.Is(got.err, ErrContextTooLong) {
		t.Fatalf("err = %v, want ErrContextTooLong", got.err)
	}
}

func TestStreamAbortStopsPromptly(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "slow words arriving"}), HangAfter: 4})
	p, _ := testProvider(t, "anthropic", srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	var text strings.Builder
	reply, err := p.Stream(ctx, Request{Model: "m", Messages: []Message{{Role: "user", Content: []Block{TextBlock("x")}}}}, func(e StreamEvent) {
		text.WriteString(e.Delta)
		cancel()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if replyText(reply) != text.String() || text.Len() == 0 {
		t.Errorf("partial reply %q, streamed %q", replyText(reply), text.String())
	}
}

func TestLookupModel(t *testing.T) {
	t.Parallel()
	m := lookupModel("anthropic", "claude-sonnet-4-5-20250929")
	if !m.Known || m.Input != 3 || m.ID != "claude-sonnet-4-5-20250929" {
		t.Errorf("dated snapshot: %+v", m)
	}
	u := lookupModel("ollama", "qwen3-coder")
	if u.Known || u.Cost(Usage{Input: 1e6, Output: 1e6}) != 0 || u.ContextWindow != defaultContextWindow {
		t.Errorf("unknown model: %+v", u)
	}
	c := lookupModel("anthropic", "claude-opus-4-5").Cost(Usage{Input: 1e6, Output: 1e6, CacheRead: 1e6, CacheWrite: 1e6})
	if c != 5+25+0.5+6.25 {
		t.Errorf("cost = %v", c)
	}
}

func TestReadSSEFraming(t *testing.T) {
	t.Parallel()
	in := ": comment\r\nevent: a\r\ndata: one\r\ndata:two\r\n\r\ndata: {\"x\": 1}   \n\nevent: tail\ndata: last"
	var got []string
	err := readSSE(strings.NewReader(in), func(ev sseEvent) error {
		got = append(got, ev.Event+"|"+string(ev.Data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a|one\ntwo", `|{"x": 1}   `, "tail|last"}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestReadSSECursorKeepsTheLastIDAndRetry: an id counts once its event is
// dispatched, with or without data (the priming event of a Streamable
// HTTP stream has none), and stays until another replaces it; a retry: of
// digits counts at once, any other is ignored.
func TestReadSSECursorKeepsTheLastIDAndRetry(t *testing.T) {
	t.Parallel()
	var cur sseCursor
	var seen []string
	in := "id: prime\nretry: 500\ndata: \n\ndata: one\n\nid: e2\nretry: 1x\ndata: two\n\nid: e\x003\ndata: three\n\nretry: 99999999999999999999\nid: cut"
	readSSEFrom(strings.NewReader(in), &cur, func(ev sseEvent) error {
		seen = append(seen, cur.LastID+":"+string(ev.Data))
		return nil
	})
	if strings.Join(seen, ",") != "prime:,prime:one,e2:two,e2:three" {
		t.Errorf("ids at each event = %q", seen)
	}
	// The stream ends inside an event: its id may be cut short ("cut" of
	// "cutoff"), and it is not counted; a whole retry: line counts at once.
	if cur.LastID != "e2" || cur.Retry != 1e12*time.Millisecond {
		t.Errorf("cursor at the end = %+v", cur)
	}
}

// BenchmarkSSEParse decodes a recorded stream of each API, through the
// provider's own handler.
func BenchmarkSSEParse(b *testing.B) {
	for _, c := range []struct {
		name, fixture string
		handler       func() func(sseEvent) error
	}{
		{"openai", "openai_chat_text_then_tool_call_logprobs.sse", func() func(sseEvent) error {
			return (&oaiStream{name: "openai", on: func(StreamEvent) {}}).handle
		}},
		{"anthropic", "anthropic_tool_use_stream.sse", func() func(sseEvent) error {
			return (&anthStream{on: func(StreamEvent) {}}).handle
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			data := fixture(b, c.fixture)
			events := 0
			readSSE(strings.NewReader(data), func(sseEvent) error { events++; return nil })
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := readSSE(strings.NewReader(data), c.handler()); err != nil && err != errStopSSE {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

func FuzzReadSSE(f *testing.F) {
	for _, name := range []string{"anthropic_tool_use_stream.sse", "openai_chat_tool_call.sse", "anthropic_docs_error_overloaded.sse"} {
		f.Add([]byte(fixture(f, name)))
	}
	f.Add([]byte("data: x\r\n\r\n:c\nevent:\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var total int
		readSSE(strings.NewReader(string(data)), func(ev sseEvent) error {
			total += len(ev.Data)
			return nil
		})
		if total > len(data) {
			t.Fatalf("more data out (%d) than in (%d)", total, len(data))
		}
		a := &anthStream{on: func(StreamEvent) {}}
		readSSE(strings.NewReader(string(data)), a.handle)
		assemble(a.blocks)
		o := &oaiStream{name: "openai", on: func(StreamEvent) {}}
		readSSE(strings.NewReader(string(data)), o.handle)
	})
}

// FuzzToolArgAssembly streams tool arguments cut at arbitrary points: the
// pieces must reassemble to exactly the original, whichever provider.
func FuzzToolArgAssembly(f *testing.F) {
	f.Add(`{"path": "a.go", "content": "x\ny"}`)
	f.Add(`{"unicode": "日本語 ✓", "n": [1,2,3]}`)
	f.Fuzz(func(t *testing.T, args string) {
		if !utf8.ValidString(args) {
			t.Skip("providers stream valid UTF-8 only")
		}
		for _, provider := range []string{"anthropic", "openai"} {
			var events []string
			if provider == "anthropic" {
				events = anthropicEvents(gen{ToolID: "t1", ToolName: "write", ToolArgs: args})
			} else {
				events = openaiEvents(gen{ToolID: "t1", ToolName: "write", ToolArgs: args})
			}
			var got Reply
			var err error
			if provider == "anthropic" {
				s := &anthStream{on: func(StreamEvent) {}}
				err = readSSE(strings.NewReader(strings.Join(events, "")), s.handle)
				got.Content = assemble(s.blocks)
			} else {
				s := &oaiStream{name: "openai", on: func(StreamEvent) {}}
				err = readSSE(strings.NewReader(strings.Join(events, "")), s.handle)
				for _, c := range s.calls {
					got.Content = append(got.Content, c.block())
				}
			}
			if err != nil && err != errStopSSE {
				t.Fatalf("%s: %v", provider, err)
			}
			calls := Message{Content: got.Content}.ToolCalls()
			want := args
			if strings.TrimSpace(want) == "" {
				want = "{}"
			}
			if len(calls) != 1 || string(calls[0].Args) != want {
				t.Fatalf("%s: args %+v, want %q", provider, calls, want)
			}
		}
	})
}

func replyText(r Reply) string { return Message{Content: r.Content}.Text() }

// The server sends three events and then nothing: the stream ends in an
// error that says so and how far it got. How far is three, unless the
// machine was too slow to hand zot the first events within the 50 ms: the
// count is what zot had received, so it is at most three, never the test's
// clock.
func TestStalledStreamIsAnError(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "then silence"}), HangAfter: 3})
	p, _ := testProvider(t, "anthropic", srv.URL)
	p.(*anthropicProvider).http.idle = 50 * time.Millisecond
	got := callProvider(t, p, Request{})
	stalled := regexp.MustCompile(`^anthropic: nothing new for 50ms after ([0-3]) events \(keep-alives do not count\); the server stalled$`)
	if got.err == nil || !stalled.MatchString(got.err.Error()) {
		t.Fatalf("err = %v", got.err)
	}
}

func TestNonStreamAnswerIsNamed(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Header: http.Header{"Content-Type": {"application/json"}}, Events: []string{`{"id":"x","choices":[]}`}})
	p, _ := testProvider(t, "openai", srv.URL)
	got := callProvider(t, p, Request{Model: "m"})
	if got.err == nil || !strings.Contains(got.err.Error(), "POST "+srv.URL+`/v1/chat/completions → 200 (application/json): expected an event stream (text/event-stream); the server said: {"id":"x"`) {
		t.Fatalf("err = %v", got.err)
	}
}

func TestEventWithoutDataIsDropped(t *testing.T) {
	t.Parallel()
	var n int
	readSSE(strings.NewReader("event: ping\n\nevent: a\ndata: x\n\n"), func(ev sseEvent) error {
		n++
		if ev.Event != "a" {
			t.Errorf("event %+v", ev)
		}
		return nil
	})
	if n != 1 {
		t.Errorf("%d events", n)
	}
	if d := retryAfter("1e20", time.Now()); d <= 0 {
		t.Errorf("huge Retry-After = %v", d)
	}
}

// endlessServer streams head, then body over and over until the client
// goes away: a server that never ends its reply.
func endlessServer(t *testing.T, head, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, head)
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, body); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// streamWithin calls the provider with a deadline, so a stream that is
// never cut fails the test instead of hanging it.
func streamWithin(t *testing.T, p Provider, req Request) (Reply, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if req.Model == "" {
		req.Model = "claude-sonnet-4-5"
	}
	req.Messages = []Message{{Role: "user", Content: []Block{TextBlock("hi")}}}
	reply, err := p.Stream(ctx, req, func(StreamEvent) {})
	if ctx.Err() != nil {
		t.Fatalf("the stream was not cut: %v", err)
	}
	return reply, err
}

// A server streaming text without end must not grow zot's memory without
// end: one reply is capped at a multiple of the model's output limit.
func TestEndlessReplyIsCut(t *testing.T) {
	t.Parallel()
	chunk := strings.Repeat("y", 4096)
	for _, c := range []struct{ provider, head, body string }{
		{"anthropic",
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n" +
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
			fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", chunk)},
		{"openai", "",
			fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", chunk)},
		{"openai", "",
			fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"write\",\"arguments\":%q}}]}}]}\n\n", chunk)},
	} {
		srv := endlessServer(t, c.head, c.body)
		p, _ := testProvider(t, c.provider, srv.URL)
		reply, err := streamWithin(t, p, Request{MaxTokens: 1000})
		want := fmt.Sprintf("%s: the reply grew past 1.0 MiB (32 bytes per token of the model's output limit) without ending", c.provider)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v", c.provider, err)
		}
		size := len(replyText(reply))
		for _, b := range reply.Content {
			size += len(b.Args)
		}
		if size > minReplyBytes+len(chunk) {
			t.Errorf("%s: the reply held %d bytes", c.provider, size)
		}
	}
	if got, want := maxReplyBytes(64000), int64(64000*32); got != want {
		t.Errorf("maxReplyBytes(64000) = %d, want %d", got, want)
	}
}

// Keep-alive comments and pings are not progress: a server that sends
// only those is stalled, however busy it looks.
func TestKeepAlivesDoNotHoldAStreamOpen(t *testing.T) {
	t.Parallel()
	srv := endlessServer(t,
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n",
		": keep-alive\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n")
	p, _ := testProvider(t, "anthropic", srv.URL)
	p.(*anthropicProvider).http.idle = 100 * time.Millisecond
	_, err := streamWithin(t, p, Request{})
	if err == nil || !strings.Contains(err.Error(), "anthropic: nothing new for 100ms after") || !strings.Contains(err.Error(), "the server stalled") {
		t.Fatalf("err = %v", err)
	}
}

// A server that accepts the request and never answers must not hang a
// run: the wait for the response headers is bounded, and not retried. The
// wait is a second, not less: the handler must have run within it to be
// counted, on a loaded machine too.
func TestResponseHeadersTimeOut(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost { // not the questions about the server (providers_local.go)
			requests.Add(1)
		}
		io.Copy(io.Discard, r.Body) // the server notices the client leave only after the body
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	for _, name := range []string{"anthropic", "openai"} {
		p, err := NewProvider(ProviderConfig{Name: name, BaseURL: srv.URL, APIKey: "k", ResponseTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, err = streamWithin(t, p, Request{})
		want := name + ": no response within 1s of sending the request"
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--response-timeout") {
			t.Errorf("err = %v", err)
		}
	}
	// At most: under load the client may give up before the server's
	// handler has counted a request it was sent.
	if n := requests.Load(); n > 2 {
		t.Errorf("%d requests, want at most one per provider (no retries)", n)
	}
	if p, _ := NewProvider(ProviderConfig{Name: "anthropic"}); p.(*anthropicProvider).http.headerTimeout != DefaultResponseTimeout {
		t.Errorf("the default wait for headers is not DefaultResponseTimeout")
	}
}

// One event's data lines are bounded like one line: a server sending data
// lines without the blank line that ends the event cannot grow memory.
func TestEndlessEventIsAnError(t *testing.T) {
	t.Parallel()
	line := "data: " + strings.Repeat("z", 64<<10) + "\n"
	r := io.MultiReader(strings.NewReader("event: x\n"), strings.NewReader(strings.Repeat(line, maxSSELine/len(line)+2)))
	err := readSSE(r, func(sseEvent) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "stream event longer than") {
		t.Fatalf("err = %v", err)
	}
}
