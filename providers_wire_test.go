package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// wireHistory is a long scripted session with every kind of block and the
// shapes the encoders treat specially: consecutive messages of one role,
// messages that encode to nothing, thinking with and without a signature,
// redacted thinking, tool calls with invalid arguments, tool results with
// images and errors, text that JSON escapes.
func wireHistory(steps int) []Message {
	msgs := []Message{{Role: RoleUser, Content: []Block{TextBlock("Fix the <failing> test & tell me \"why\".\u2028")}}}
	for i := 0; i < steps; i++ {
		id := fmt.Sprintf("call_%03d", i)
		args := json.RawMessage(fmt.Sprintf(`{"command":"go test ./pkg%d/..."}`, i))
		if i%17 == 5 {
			args = json.RawMessage(`{"command": "unterminated`)
		}
		assistant := Message{Role: RoleAssistant, Content: []Block{{Type: BlockToolCall, ID: id, Name: "bash", Args: args}}}
		switch i % 5 {
		case 1:
			assistant.Content = append([]Block{TextBlock(fmt.Sprintf("Step %d: running the tests.", i))}, assistant.Content...)
		case 2:
			assistant.Content = append([]Block{{Type: BlockThinking, Text: "thinking " + strings.Repeat("x", i), Signature: "sig" + id}}, assistant.Content...)
		case 3:
			assistant.Content = append([]Block{{Type: BlockThinking, Text: "unsigned"}, {Type: BlockThinking, Redacted: true, Data: "redacted" + id}}, assistant.Content...)
		}
		result := Block{Type: BlockToolResult, CallID: id, Content: []Block{TextBlock(fmt.Sprintf("ok  \tpkg%d\t0.%03ds\n", i, i))}}
		if i%7 == 3 {
			result.IsError = true
			result.Content = []Block{TextBlock("exit status 1\n--- FAIL: TestX")}
		}
		if i%11 == 4 {
			result.Content = append(result.Content, Block{Type: BlockImage, MimeType: "image/png", Data: "iVBORw0KGgo="})
		}
		msgs = append(msgs, assistant, Message{Role: RoleUser, Content: []Block{result}})
		switch i % 13 {
		case 6:
			msgs = append(msgs, Message{Role: RoleUser, Content: []Block{TextBlock("Also check the docs.")}})
		case 9:
			msgs = append(msgs, Message{Role: RoleUser, Content: []Block{TextBlock("")}}) // encodes to nothing for Anthropic
		case 12:
			msgs = append(msgs, Message{Role: RoleAssistant, Content: []Block{TextBlock("Done with that part.")}},
				Message{Role: RoleUser, Content: []Block{TextBlock("Go on."), {Type: BlockImage, MimeType: "image/jpeg", Data: "/9j/4AAQ"}}})
		}
	}
	return msgs
}

var wireTools = []ToolSpec{
	{Name: "read", Description: "Read a file.", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	{Name: "bash", Description: "Run a command.", Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
}

// TestRequestBodiesEncodeTheHistoryOnce sends a growing 60-step history
// the way the agent does — the same messages, each encoded once — in all
// three wire formats in turn (a model switch at every step), and holds
// every body to the bytes the encoders made before the history was
// encoded once (testdata/wire/bodies.sha256, written by the code of
// 47e3cb5 over the same history), and to a body encoded from scratch.
func TestRequestBodiesEncodeTheHistoryOnce(t *testing.T) {
	t.Parallel()
	golden, err := os.ReadFile("testdata/wire/bodies.sha256")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(golden)), "\n") {
		f := strings.Fields(line)
		want[f[0]+" "+f[1]] = f[2]
	}
	history := withWire(wireHistory(60))
	anth := &anthropicProvider{}
	oai := &openaiProvider{name: "openai"}
	bodies := map[string]func(Request) ([]byte, error){
		"anthropic": func(r Request) ([]byte, error) { return anth.requestBody(anth.buildRequest(r), r.Messages) },
		"chat":      oai.requestBody,
		"responses": oai.responsesBody,
	}
	models := map[string]string{"anthropic": "claude-sonnet-4-6", "chat": "gpt-4o", "responses": "gpt-5.5"}
	for k := 0; k <= len(history); k++ {
		for _, format := range []string{"anthropic", "chat", "responses"} {
			req := Request{Model: models[format], System: strings.Repeat("You are a coding agent. ", 200), Tools: wireTools, Reasoning: "high"}
			req.Messages = history[:k]
			cached, err := bodies[format](req)
			if err != nil {
				t.Fatal(err)
			}
			req.Messages = withoutWire(history[:k])
			fresh, _ := bodies[format](req)
			if !bytes.Equal(cached, fresh) {
				t.Fatalf("%s, %d messages: the body from encodings kept differs from one encoded afresh:\n%s\n%s", format, k, cached, fresh)
			}
			if got := fmt.Sprintf("%x", sha256.Sum256(cached)); got != want[fmt.Sprintf("%s %d", format, k)] {
				t.Fatalf("%s, %d messages: the body differs from the one sent before:\n%s", format, k, cached)
			}
		}
	}
}

// The encodings kept for ollama's /api/chat and for a server that wants
// reasoning_content back are those made afresh, step after step; and a
// copy of a message given other content is encoded again, not served the
// encoding of the message it was copied from.
func TestRequestBodiesOfLocalServersEncodeTheHistoryOnce(t *testing.T) {
	t.Parallel()
	history := withWire(wireHistory(40))
	reasoning := true
	chat := &openaiProvider{name: "llamacpp", compat: Compat{RequiresReasoningContent: &reasoning}}
	ollama := &ollamaProvider{openai: &openaiProvider{name: "ollama"}}
	for k := 0; k <= len(history); k++ {
		req := Request{Model: "qwen3", System: "You are a coding agent.", Tools: wireTools}
		for name, body := range map[string]func(Request) ([]byte, error){
			"chat+reasoning_content": chat.requestBody,
			"ollama":                 func(r Request) ([]byte, error) { return ollama.requestBody(r, localPlan{}) },
		} {
			req.Messages = history[:k]
			cached, err := body(req)
			if err != nil {
				t.Fatal(err)
			}
			req.Messages = withoutWire(history[:k])
			fresh, _ := body(req)
			if !bytes.Equal(cached, fresh) {
				t.Fatalf("%s, %d messages: the body from encodings kept differs from one encoded afresh:\n%s\n%s", name, k, cached, fresh)
			}
		}
	}
	changed := history[0]
	changed.Content = []Block{TextBlock("something else")}
	body, _ := chat.requestBody(Request{Model: "qwen3", Messages: []Message{changed}})
	if !bytes.Contains(body, []byte("something else")) {
		t.Fatalf("a copy given new content was sent as the message it was copied from: %s", body)
	}
}

// What Messages returns is the caller's to change: the transcript, and so
// the encodings the agent keeps of it, stay as they were.
func TestMessagesAreTheCallersToChange(t *testing.T) {
	t.Parallel()
	a := NewAgent(nil, "m", NewToolRegistry())
	a.SetMessages(wireHistory(3), Usage{})
	before, _ := (&anthropicProvider{}).requestBody(anthRequest{}, a.messages)
	got := a.Messages()
	got[0].Content[0].Text = "changed"
	got[1].Content[0].Args[2] = 'X'
	after, _ := (&anthropicProvider{}).requestBody(anthRequest{}, a.messages)
	if !bytes.Equal(before, after) || a.Messages()[0].Content[0].Text == "changed" {
		t.Fatalf("a change to what Messages returned reached the transcript:\n%s\n%s", before, after)
	}
}
