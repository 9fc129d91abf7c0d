package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --reasoning high as the real binary sends it: adaptive thinking with
// the effort for Claude 4.6 and later, no budget; the budget for older
// models, no effort.
func TestAnthropicThinkingOnTheWire(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ model, thinking, effort string }{
		{"claude-opus-4-7", `{"type":"adaptive","display":"summarized"}`, `{"effort":"high"}`},
		{"claude-sonnet-4-5", `{"type":"enabled","budget_tokens":32768}`, ``},
	} {
		srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
		z := newZotRun(t)
		if _, stderr, code := z.run("-p", "--no-session", "--provider", "anthropic", "--model", tc.model, "--reasoning", "high",
			"--base-url", srv.URL, "--api-key", "k", "hi"); code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.model, code, stderr)
		}
		var body struct {
			Thinking     json.RawMessage `json:"thinking"`
			OutputConfig json.RawMessage `json:"output_config"`
		}
		if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		if compactJSON(body.Thinking) != tc.thinking || compactJSON(body.OutputConfig) != tc.effort {
			t.Errorf("%s: thinking %s output_config %s, want %s and %q", tc.model, body.Thinking, body.OutputConfig, tc.thinking, tc.effort)
		}
	}
}

// A thinking block and its signature go back on the next request exactly
// as the stream delivered them: Anthropic checks the signature against
// the text.
func TestAnthropicThinkingReplayedExactly(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"anthropic_recorded_thinking_then_text.sse", "anthropic_thinking_signature_refusal.sse"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			// What the stream says, read here without zot's parser.
			var thinking, signature strings.Builder
			for _, ev := range splitSSE(fixture(t, file)) {
				_, data, ok := strings.Cut(ev, "data: ")
				if !ok {
					continue
				}
				var e struct {
					Delta struct{ Type, Thinking, Signature string } `json:"delta"`
				}
				json.Unmarshal([]byte(data), &e)
				thinking.WriteString(e.Delta.Thinking)
				signature.WriteString(e.Delta.Signature)
			}
			srv := startReplay(t, fixtureStep(t, file), replayStep{Events: anthropicEvents(gen{Text: "again"})})
			p, _ := testProvider(t, "anthropic", srv.URL)
			a := NewAgent(p, "claude-opus-4-7", NewToolRegistry())
			a.Reasoning = "high"
			for _, prompt := range []string{"first", "second"} {
				if err := a.Prompt(context.Background(), prompt, nil, func(Event) {}); err != nil {
					t.Fatal(err)
				}
			}
			var body struct {
				Messages []struct {
					Role    string            `json:"role"`
					Content []json.RawMessage `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(srv.Requests()[1].Body, &body); err != nil {
				t.Fatal(err)
			}
			var block struct{ Type, Thinking, Signature string }
			json.Unmarshal(body.Messages[1].Content[0], &block)
			if block.Type != "thinking" || block.Thinking != thinking.String() || block.Signature != signature.String() || signature.Len() == 0 {
				t.Fatalf("replayed %s\nwant thinking %q\nsignature %q", body.Messages[1].Content[0], thinking.String(), signature.String())
			}
		})
	}
}

// sentRequest is the request p sends for req, as the server reads it.
func sentRequest(t *testing.T, p *anthropicProvider, req Request) anthRequest {
	t.Helper()
	body, err := sent(p.requestBody(p.buildRequest(req), req.Messages))
	if err != nil {
		t.Fatal(err)
	}
	var r anthRequest
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	return r
}

// breakpoints lists the blocks of a built request that carry
// cache_control, as "tools", "system" or "messages[i]".
func breakpoints(t *testing.T, r anthRequest) []string {
	t.Helper()
	var out []string
	for _, tool := range r.Tools {
		if tool.CacheControl != nil {
			out = append(out, "tool "+tool.Name)
		}
	}
	for _, s := range r.System {
		if s.CacheControl != nil {
			out = append(out, "system")
		}
	}
	for i, m := range r.Messages {
		for j, b := range m.Content {
			if b.CacheControl != nil {
				out = append(out, fmt.Sprintf("messages[%d][%d]", i, j))
			}
		}
	}
	return out
}

// A turn of 12 parallel tool calls adds more than the 20 blocks Anthropic
// looks back from a breakpoint. The breakpoint on the previous user
// message finds the prefix the last request wrote, so this request reads
// it and writes only what is new.
func TestCacheBreakpointsReadThePrefixAfterManyParallelCalls(t *testing.T) {
	t.Parallel()
	p := &anthropicProvider{}
	tools := []ToolSpec{{Name: "read", Description: "Read a file."}, {Name: "bash", Description: "Run a command."}}
	msgs := []Message{{Role: RoleUser, Content: []Block{TextBlock("Read every file under pkg/ and tell me what they do. " + strings.Repeat("Be thorough. ", 400))}}}
	first := sentRequest(t, p, Request{Model: "claude-sonnet-4-6", System: "You are a coding agent.", Tools: tools, Messages: msgs})
	var calls, results []Block
	for i := 0; i < 12; i++ {
		id := fmt.Sprintf("toolu_%02d", i)
		calls = append(calls, Block{Type: BlockToolCall, ID: id, Name: "read", Args: json.RawMessage(fmt.Sprintf(`{"path":"pkg/f%d.go"}`, i))})
		results = append(results, Block{Type: BlockToolResult, CallID: id, Content: []Block{TextBlock(strings.Repeat("package pkg\n", 40))}})
	}
	msgs = append(msgs, Message{Role: RoleAssistant, Content: append([]Block{TextBlock("Reading them all.")}, calls...)},
		Message{Role: RoleUser, Content: results})
	second := sentRequest(t, p, Request{Model: "claude-sonnet-4-6", System: "You are a coding agent.", Tools: tools, Messages: msgs})

	if got := strings.Join(breakpoints(t, second), ", "); got != "messages[0][0], messages[2][11]" {
		t.Fatalf("breakpoints = %s, want the ends of the last two user messages", got)
	}
	var bodies [][]byte
	for _, r := range []anthRequest{first, second} {
		b, _ := json.Marshal(r)
		bodies = append(bodies, b)
	}
	bill := simulateCaching(t, bodies, 1024)
	firstBill := simulateCaching(t, bodies[:1], 1024)
	if read := bill.read - firstBill.read; read < firstBill.written || firstBill.written == 0 {
		t.Fatalf("second request read %d cached tokens, want the %d the first one wrote", read, firstBill.written)
	}
	// Today's placement, the last user message alone, finds nothing.
	second.Messages[0].Content[0].CacheControl = nil
	b, _ := json.Marshal(second)
	if old := simulateCaching(t, [][]byte{bodies[0], b}, 1024); old.read != 0 {
		t.Fatalf("the simulation finds the prefix %d tokens back through 24 blocks; the test would prove nothing", old.read)
	}
}

// Tools and a system prompt long enough to be cached on their own get
// their breakpoints too, within Anthropic's four.
func TestCacheBreakpointsOnALongPrefix(t *testing.T) {
	t.Parallel()
	p := &anthropicProvider{}
	msgs := []Message{
		{Role: RoleUser, Content: []Block{TextBlock("one")}},
		{Role: RoleAssistant, Content: []Block{TextBlock("two")}},
		{Role: RoleUser, Content: []Block{TextBlock("three")}},
		{Role: RoleAssistant, Content: []Block{TextBlock("four")}},
		{Role: RoleUser, Content: []Block{TextBlock("five")}},
	}
	tools := []ToolSpec{{Name: "read"}, {Name: "write"}}
	long := strings.Repeat("Follow the project's conventions. ", 150)
	r := sentRequest(t, p, Request{Model: "claude-sonnet-4-6", System: long, Tools: tools, Messages: msgs})
	if got := strings.Join(breakpoints(t, r), ", "); got != "tool write, system, messages[2][0], messages[4][0]" {
		t.Errorf("breakpoints = %s", got)
	}
	// Haiku 4.5 caches nothing under 4,096 tokens: the same prefix is
	// too short for it.
	r = sentRequest(t, p, Request{Model: "claude-haiku-4-5", System: long, Tools: tools, Messages: msgs})
	if got := strings.Join(breakpoints(t, r), ", "); got != "messages[2][0], messages[4][0]" {
		t.Errorf("haiku breakpoints = %s", got)
	}
}

// "cacheRetention": "1h" in config.json asks for the hour on every
// breakpoint; the hour's writes are read from the usage and priced at
// twice the input price; a value zot does not know is reported and left
// at the default.
func TestCacheRetentionFromConfig(t *testing.T) {
	t.Parallel()
	events := anthropicEvents(gen{Text: "ok"})
	events[0] = sseEventText("message_start", obj{"type": "message_start", "message": obj{"id": "m", "type": "message", "role": "assistant", "content": []any{},
		"usage": obj{"input_tokens": 10, "cache_creation_input_tokens": 3000, "cache_read_input_tokens": 0, "output_tokens": 1,
			"cache_creation": obj{"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 3000}}}})
	for _, tc := range []struct{ setting, ttl, stderr string }{
		{`"1h"`, `{"type":"ephemeral","ttl":"1h"}`, ""},
		{`"5m"`, `{"type":"ephemeral"}`, ""},
		{`"2h"`, `{"type":"ephemeral"}`, `cacheRetention "2h" is not "5m" or "1h" (ignored)`},
	} {
		srv := startReplay(t, replayStep{Events: events})
		z := newZotRun(t)
		os.WriteFile(filepath.Join(z.home, "config.json"), []byte(`{"cacheRetention": `+tc.setting+`}`), 0o600)
		stdout, stderr, code := z.run("--json", "--no-session", "--provider", "anthropic", "--model", "claude-sonnet-4-6", "--base-url", srv.URL, "--api-key", "k", "hi")
		if code != 0 || !strings.Contains(stderr, tc.stderr) {
			t.Fatalf("%s: exit %d stderr %q", tc.setting, code, stderr)
		}
		var body struct {
			Messages []struct {
				Content []struct {
					CacheControl json.RawMessage `json:"cache_control"`
				} `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal(srv.Requests()[0].Body, &body)
		if got := compactJSON(body.Messages[0].Content[0].CacheControl); got != tc.ttl {
			t.Errorf("%s: cache_control %s, want %s", tc.setting, got, tc.ttl)
		}
		// 10 input at $3, 20 output at $15, 3,000 written for an hour at
		// $6 per million.
		if tc.setting == `"1h"` && !strings.Contains(stdout, `"cost_usd":0.01833`) {
			t.Errorf("usage priced wrong: %s", stdout)
		}
	}
}

// models.json may name a model's thinking style; a value zot does not know
// is reported with its file and entry, and the catalogue's flag is used.
func TestUserModelsNameTheThinkingStyle(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeModelsFile(t, home, `{"providers": {"anthropic": {"models": [
		{"id": "claude-in-house", "reasoning": "budget"},
		{"id": "claude-opus-5", "reasoning": "adaptive"},
		{"id": "claude-plain", "reasoning": true},
		{"id": "claude-sonnet-4-5", "reasoning": "deep"},
		{"id": "claude-off", "reasoning": false}]}}}`)
	models, notes, err := loadUserModels(home)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "anthropic/claude-sonnet-4-5") || !strings.Contains(notes[0], `"deep"`) || !strings.Contains(notes[0], "models.json") {
		t.Errorf("notes = %q, want one naming the entry and its value", notes)
	}
	want := map[string]string{"claude-in-house": ThinkingBudget, "claude-opus-5": ThinkingAdaptive, "claude-plain": ThinkingAdaptive,
		"claude-sonnet-4-5": ThinkingBudget, "claude-off": ""}
	for _, m := range models {
		base, _ := catalogueModel(m.Provider, m.ID)
		if got := thinkingStyle("anthropic", overlayModel(base, m)); got != want[m.ID] {
			t.Errorf("%s: style %q, want %q", m.ID, got, want[m.ID])
		}
	}
}
