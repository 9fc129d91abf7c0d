package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// responsesEvents builds a Responses stream shaped like the recorded ones:
// each event framed as `event: <type>` and its JSON.
func responsesEvents(events ...obj) []string {
	var out []string
	for _, e := range events {
		out = append(out, sseEventText(e["type"].(string), e))
	}
	return out
}

// completed is a response.completed event with usage.
func completed(input, cached, output int) obj {
	return obj{"type": "response.completed", "response": obj{"status": "completed",
		"usage": obj{"input_tokens": input, "output_tokens": output, "input_tokens_details": obj{"cached_tokens": cached}}}}
}

const codexModel = "gpt-5.1-codex-max"

func TestResponsesParsesRecordedStreams(t *testing.T) {
	t.Parallel()
	summary := "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then multiply the result by 3, and finally multiply that by 10, reporting the final product."
	tests := []struct {
		file string
		want wantReply
	}{
		{"openai_responses_text.sse", wantReply{text: "The final result is **570**.", stop: StopEndTurn, usage: Usage{Input: 299, Output: 12}}},
		{"openai_responses_reasoning_function_call.sse", wantReply{thinking: summary, stop: StopToolUse,
			tools: []ToolCall{{ID: "call_AB6AaRZ1FYZB2RwS6A5vbdqn", Name: "calculator", Args: json.RawMessage(`{"a":12,"b":7,"op":"add"}`)}}, usage: Usage{Input: 134, Output: 28}}},
		{"openai_responses_error_event.sse", wantReply{err: "openai: insufficient_quota: You exceeded your current quota"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			srv := startReplay(t, fixtureStep(t, tt.file))
			p, _ := testProvider(t, "openai", srv.URL)
			got := callProvider(t, p, Request{Model: codexModel})
			checkReply(t, got, tt.want)
			if r := srv.Requests()[0]; r.Path != "/v1/responses" {
				t.Errorf("path = %s, want /v1/responses", r.Path)
			}
		})
	}
}

// The reasoning item keeps its id and the encrypted content of the
// finished item, which is what goes back to the API.
func TestResponsesKeepsTheReasoningItem(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, fixtureStep(t, "openai_responses_reasoning_function_call.sse"))
	p, _ := testProvider(t, "openai", srv.URL)
	got := callProvider(t, p, Request{Model: codexModel})
	if got.err != nil {
		t.Fatal(got.err)
	}
	b := got.reply.Content[0]
	if b.Type != BlockThinking || b.ID != "rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9" ||
		!strings.HasPrefix(b.Data, "gAAAAABpPDIVOKrsHNZ0GwsoEKA_") || b.Signature != "" {
		t.Fatalf("reasoning block = %+v", b)
	}
}

// A tool round trip: the second request carries the reasoning item (with
// its encrypted content, without the id a store:false request cannot look
// up), the function call and its output, in the order the API requires.
func TestResponsesToolRoundTrip(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, fixtureStep(t, "openai_responses_reasoning_function_call.sse"), fixtureStep(t, "openai_responses_text.sse"))
	p, _ := testProvider(t, "openai", srv.URL)
	calc := &funcTool{name: "calculator", run: func(context.Context, json.RawMessage) ToolResult { return textResult("19") }}
	reg := NewToolRegistry()
	reg.SetSource("builtin", []Tool{calc})
	a := NewAgent(p, codexModel, reg)
	a.System, a.Reasoning = "be exact", "high"
	var log eventLog
	if err := a.Prompt(context.Background(), "what is (12+7)*3*10?", nil, log.sink); err != nil {
		t.Fatal(err)
	}
	if text := a.Messages()[3].Text(); text != "The final result is **570**." {
		t.Errorf("final text = %q", text)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d", len(reqs))
	}
	var first struct {
		Model        string            `json:"model"`
		Instructions string            `json:"instructions"`
		Store        *bool             `json:"store"`
		Stream       bool              `json:"stream"`
		Include      []string          `json:"include"`
		Reasoning    map[string]string `json:"reasoning"`
		Tools        []map[string]any  `json:"tools"`
		Input        []map[string]any  `json:"input"`
	}
	if err := json.Unmarshal(reqs[0].Body, &first); err != nil {
		t.Fatal(err)
	}
	if first.Model != codexModel || first.Instructions != "be exact" || first.Store == nil || *first.Store || !first.Stream ||
		strings.Join(first.Include, ",") != "reasoning.encrypted_content" || first.Reasoning["effort"] != "high" {
		t.Errorf("first request = %s", reqs[0].Body)
	}
	if len(first.Tools) != 1 || first.Tools[0]["type"] != "function" || first.Tools[0]["name"] != "calculator" || first.Tools[0]["strict"] != false {
		t.Errorf("tools = %v", first.Tools)
	}
	var second struct {
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(reqs[1].Body, &second); err != nil {
		t.Fatal(err)
	}
	var encrypted string
	for _, b := range a.Messages()[1].Content {
		if b.Type == BlockThinking {
			encrypted = b.Data
		}
	}
	want := []string{
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"what is (12+7)*3*10?"}]}`,
		`{"type":"reasoning","summary":[{"type":"summary_text","text":"**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then multiply the result by 3, and finally multiply that by 10, reporting the final product."}],"encrypted_content":"` + encrypted + `"}`,
		`{"type":"function_call","call_id":"call_AB6AaRZ1FYZB2RwS6A5vbdqn","name":"calculator","arguments":"{\"a\":12,\"b\":7,\"op\":\"add\"}"}`,
		`{"type":"function_call_output","call_id":"call_AB6AaRZ1FYZB2RwS6A5vbdqn","output":"19"}`,
	}
	if encrypted == "" || len(second.Input) != len(want) {
		t.Fatalf("second request input = %s", reqs[1].Body)
	}
	for i, w := range want {
		if compactJSON(second.Input[i]) != w {
			t.Errorf("input item %d:\n got %s\nwant %s", i, compactJSON(second.Input[i]), w)
		}
	}
}

// response.failed ends the run with the API's message.
func TestResponsesFailedEndsTheRun(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: responsesEvents(
		obj{"type": "response.created", "response": obj{"status": "in_progress"}},
		obj{"type": "response.output_item.added", "output_index": 0, "item": obj{"type": "message", "id": "msg_1"}},
		obj{"type": "response.output_text.delta", "output_index": 0, "delta": "Start"},
		obj{"type": "response.failed", "response": obj{"status": "failed", "error": obj{"code": "server_error", "message": "The model crashed."}}},
	)})
	z := newZotRun(t)
	_, stderr, code := z.run("-p", "--no-session", "--provider", "openai", "--model", "gpt-5.3-codex", "--base-url", srv.URL, "--api-key", "k", "hi")
	if code != 1 || !strings.Contains(stderr, "server_error: The model crashed.") {
		t.Fatalf("exit %d, stderr %q: want the failure's code and message", code, stderr)
	}
	if p := srv.Requests()[0].Path; p != "/v1/responses" {
		t.Errorf("path = %s: the catalogue says gpt-5.3-codex needs the Responses API whatever the base URL", p)
	}
}

// response.incomplete is an error naming the reason, and keeps the text
// that arrived.
func TestResponsesIncompleteNamesItsReason(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: responsesEvents(
		obj{"type": "response.output_item.added", "output_index": 0, "item": obj{"type": "message", "id": "msg_1"}},
		obj{"type": "response.output_text.delta", "output_index": 0, "delta": "The answer is"},
		obj{"type": "response.incomplete", "response": obj{"status": "incomplete", "incomplete_details": obj{"reason": "max_output_tokens"},
			"usage": obj{"input_tokens": 10, "output_tokens": 5}}},
	)})
	p, _ := testProvider(t, "openai", srv.URL)
	got := callProvider(t, p, Request{Model: codexModel})
	if got.err == nil || !strings.Contains(got.err.Error(), "max_output_tokens") {
		t.Fatalf("err = %v, want the incomplete reason", got.err)
	}
	if replyText(got.reply) != "The answer is" || got.reply.Usage.Output != 5 {
		t.Errorf("reply = %+v", got.reply)
	}
}

// Refusals stream as the text the user sees, and stop the turn as a
// refusal; cached tokens are read out
// of input_tokens; parallel function calls keep their order; a stream
// that stops before response.completed is cut short.
func TestResponsesRefusalUsageAndParallelCalls(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		replayStep{Events: responsesEvents(
			obj{"type": "response.output_item.added", "output_index": 0, "item": obj{"type": "message", "id": "msg_1"}},
			obj{"type": "response.refusal.delta", "output_index": 0, "delta": "I can't help with that."},
			completed(1000, 800, 7),
		)},
		replayStep{Events: responsesEvents(
			obj{"type": "response.output_item.added", "output_index": 0, "item": obj{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read"}},
			obj{"type": "response.output_item.added", "output_index": 1, "item": obj{"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "read"}},
			obj{"type": "response.function_call_arguments.delta", "output_index": 1, "delta": `{"path":"b"}`},
			obj{"type": "response.function_call_arguments.delta", "output_index": 0, "delta": `{"path":"a"}`},
			obj{"type": "response.output_item.done", "output_index": 0, "item": obj{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": `{"path":"a"}`}},
			obj{"type": "response.output_item.done", "output_index": 1, "item": obj{"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "read", "arguments": `{"path":"b"}`}},
			completed(50, 0, 9),
		)},
		replayStep{Events: responsesEvents(
			obj{"type": "response.output_item.added", "output_index": 0, "item": obj{"type": "message", "id": "msg_1"}},
			obj{"type": "response.output_text.delta", "output_index": 0, "delta": "half"},
		)})
	p, _ := testProvider(t, "openai", srv.URL)
	checkReply(t, callProvider(t, p, Request{Model: codexModel}), wantReply{text: "I can't help with that.", stop: StopRefusal, usage: Usage{Input: 200, Output: 7, CacheRead: 800}})
	checkReply(t, callProvider(t, p, Request{Model: codexModel}), wantReply{stop: StopToolUse, usage: Usage{Input: 50, Output: 9},
		tools: []ToolCall{{ID: "call_1", Name: "read", Args: json.RawMessage(`{"path":"a"}`)}, {ID: "call_2", Name: "read", Args: json.RawMessage(`{"path":"b"}`)}}})
	if got := callProvider(t, p, Request{Model: codexModel}); got.err == nil || !strings.Contains(got.err.Error(), "ended early") || replyText(got.reply) != "half" {
		t.Errorf("cut stream: err %v, reply %+v", got.err, got.reply)
	}
}

// The Responses path retries like the others: the same code posts it.
func TestResponsesRetriesLikeChat(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Status: 503, Body: `{"error":{"message":"busy","type":"server_error"}}`}, fixtureStep(t, "openai_responses_text.sse"))
	p, sleeps := testProvider(t, "openai", srv.URL)
	got := callProvider(t, p, Request{Model: codexModel})
	if got.err != nil || replyText(got.reply) != "The final result is **570**." || len(sleeps.d) != 1 {
		t.Fatalf("err %v reply %+v sleeps %v", got.err, got.reply, sleeps.d)
	}
}

// Which API a model goes to: the catalogue's word, overridden by
// models.json's "api", and Chat Completions for a model neither knows.
// Not parallel: the user's models are process-wide.
func TestResponsesAPIChosenPerModel(t *testing.T) {
	home := t.TempDir()
	writeModelsFile(t, home, `{"providers": {
		"openai": {"models": [{"id": "gpt-5.3-codex", "api": "chat"}, {"id": "my-gateway-model", "api": "responses"}]},
		"ollama": {"models": [{"id": "gpt-oss:20b", "api": "openai-responses", "reasoning": true}]}}}`)
	if notes := useUserModels(home); len(notes) != 0 {
		t.Fatalf("notes = %q", notes)
	}
	t.Cleanup(func() { SetUserModels(nil) })
	for _, tc := range []struct {
		provider, base, model, path string
	}{
		{"openai", "", "gpt-5.2-codex", "/v1/responses"},
		{"openai", "/v1", "gpt-5.1-codex-mini", "/v1/responses"},
		{"openai", "", "gpt-5.5", "/v1/chat/completions"},
		{"openai", "", "somebody-elses-model", "/v1/chat/completions"},
		{"openai", "", "gpt-5.3-codex", "/v1/chat/completions"},
		{"openai", "", "my-gateway-model", "/v1/responses"},
		{"ollama", "/v1", "gpt-oss:20b", "/v1/responses"},
	} {
		step := replayStep{Events: openaiEvents(gen{Text: "ok"})}
		if strings.HasSuffix(tc.path, "responses") {
			step = fixtureStep(t, "openai_responses_text.sse")
		}
		srv := startReplay(t, step)
		p, err := NewProvider(ProviderConfig{Name: tc.provider, BaseURL: srv.URL + tc.base, APIKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		got := callProvider(t, p, Request{Model: tc.model})
		if got.err != nil || srv.Requests()[0].Path != tc.path {
			t.Errorf("%s %s: path %s err %v, want %s", tc.provider, tc.model, srv.Requests()[0].Path, got.err, tc.path)
		}
	}
}

// Images a tool returned go back inside its function_call_output; an
// error result says so; thinking of another provider, and a reasoning
// item with nothing after it, stay out.
func TestResponsesInputShape(t *testing.T) {
	t.Parallel()
	msgs := []Message{
		{Role: RoleUser, Content: []Block{TextBlock("look"), {Type: BlockImage, MimeType: "image/png", Data: "aGVsbG8="}}},
		{Role: RoleAssistant, Content: []Block{
			{Type: BlockThinking, Text: "claude thought", Signature: "sig"},
			{Type: BlockThinking, ID: "rs_1", Text: "", Data: "enc-1"},
			{Type: BlockToolCall, ID: "c1", Name: "read", Args: json.RawMessage(`{"path":"x.png"}`)},
			{Type: BlockToolCall, ID: "c2", Name: "bash", Args: json.RawMessage(`{"command":`)}}},
		{Role: RoleUser, Content: []Block{
			{Type: BlockToolResult, CallID: "c1", Content: []Block{TextBlock("an image"), {Type: BlockImage, MimeType: "image/png", Data: "aGk="}}},
			{Type: BlockToolResult, CallID: "c2", IsError: true, Content: []Block{TextBlock("bad arguments")}}}},
		{Role: RoleAssistant, Content: []Block{TextBlock("Seen."), {Type: BlockThinking, ID: "rs_2", Data: "enc-2"}}},
	}
	var got []string
	for _, it := range respInput(msgs) {
		b, _ := json.Marshal(it)
		got = append(got, string(b))
	}
	want := []string{
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,aGVsbG8="}]}`,
		`{"type":"reasoning","summary":[],"encrypted_content":"enc-1"}`,
		`{"type":"function_call","call_id":"c1","name":"read","arguments":"{\"path\":\"x.png\"}"}`,
		`{"type":"function_call","call_id":"c2","name":"bash","arguments":"{}"}`,
		`{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"an image"},{"type":"input_image","image_url":"data:image/png;base64,aGk="}]}`,
		`{"type":"function_call_output","call_id":"c2","output":"Error: bad arguments"}`,
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Seen."}]}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("input:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A broken stream is an error naming the source, never a crash.
func FuzzResponsesStream(f *testing.F) {
	for _, name := range []string{"openai_responses_text.sse", "openai_responses_reasoning_function_call.sse", "openai_responses_error_event.sse"} {
		f.Add([]byte(fixture(f, name)))
	}
	f.Add([]byte("data: {\"type\":\"response.output_text.delta\",\"output_index\":99999999,\"delta\":\"x\"}\n\n"))
	f.Add([]byte("data: {\"type\":\"response.output_item.done\",\"output_index\":3,\"item\":{\"type\":\"function_call\"}}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &respStream{name: "openai", on: func(StreamEvent) {}}
		readSSE(strings.NewReader(string(data)), s.handle)
		s.reply()
	})
}
