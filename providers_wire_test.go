package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
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
	// Each format from a provider of its own, which lays out only what is
	// new (wireLog); from one provider switching format at every step,
	// which starts its layout afresh each time; and from a new provider
	// given copies without encodings.
	own := map[string]func(Request) ([]byte, error){}
	for _, format := range []string{"anthropic", "chat", "responses"} {
		own[format] = wireBodies[format]()
	}
	switching := &openaiProvider{name: "openai"}
	switched := map[string]func(Request) ([]byte, error){
		"chat":      func(r Request) ([]byte, error) { return sent(switching.requestBody(r, "")) },
		"responses": func(r Request) ([]byte, error) { return sent(switching.responsesBody(r)) },
	}
	models := map[string]string{"anthropic": "claude-sonnet-4-6", "chat": "gpt-4o", "responses": "gpt-5.5"}
	for k := 0; k <= len(history); k++ {
		for _, format := range []string{"anthropic", "chat", "responses"} {
			req := Request{Model: models[format], System: strings.Repeat("You are a coding agent. ", 200), Tools: wireTools, Reasoning: "high"}
			req.Messages = history[:k]
			kept, err := own[format](req)
			if err != nil {
				t.Fatal(err)
			}
			if switched[format] != nil {
				if body, _ := switched[format](req); !bytes.Equal(kept, body) {
					t.Fatalf("%s, %d messages: the body after a format switch differs:\n%s\n%s", format, k, kept, body)
				}
			}
			req.Messages = withoutWire(history[:k])
			fresh, _ := wireBodies[format]()(req)
			if !bytes.Equal(kept, fresh) {
				t.Fatalf("%s, %d messages: the body from encodings kept differs from one encoded afresh:\n%s\n%s", format, k, kept, fresh)
			}
			if got := fmt.Sprintf("%x", sha256.Sum256(kept)); got != want[fmt.Sprintf("%s %d", format, k)] {
				t.Fatalf("%s, %d messages: the body differs from the one sent before:\n%s", format, k, kept)
			}
		}
	}
}

// wireBodies makes, per format, a new provider's request encoder.
var wireBodies = map[string]func() func(Request) ([]byte, error){
	"anthropic": func() func(Request) ([]byte, error) {
		p := &anthropicProvider{}
		return func(r Request) ([]byte, error) { return sent(p.requestBody(p.buildRequest(r), r.Messages)) }
	},
	"chat": func() func(Request) ([]byte, error) {
		p := &openaiProvider{name: "openai"}
		return func(r Request) ([]byte, error) { return sent(p.requestBody(r, "")) }
	},
	"responses": func() func(Request) ([]byte, error) {
		p := &openaiProvider{name: "openai"}
		return func(r Request) ([]byte, error) { return sent(p.responsesBody(r)) }
	},
	"ollama": func() func(Request) ([]byte, error) {
		p := &ollamaProvider{openai: &openaiProvider{name: "ollama"}}
		return func(r Request) ([]byte, error) { return sent(p.requestBody(r, localPlan{})) }
	},
}

// A provider's layout of the transcript it was sent last is used only for
// the messages it was made from: a transcript cut back and grown
// otherwise, compacted, holding a message without an encoding or a copy
// given new content, or a last turn that can no longer carry a cache
// breakpoint, is sent as if encoded afresh.
func TestWireLogFollowsTheTranscript(t *testing.T) {
	t.Parallel()
	history := withWire(wireHistory(30))
	other := withWire(wireHistory(12))[3:]
	summary := withWire([]Message{{Role: RoleUser, Content: []Block{TextBlock("Summary of what came before.")}}})
	noWire := append([]Message(nil), history[:40]...)
	noWire[15].wire = nil
	changed := append([]Message(nil), history[:40]...)
	changed[0].Content = []Block{TextBlock("something else")}
	// A user message merged into a last turn ending in a result, which
	// can then carry no breakpoint.
	userEnd := 40
	for history[userEnd-1].Role != RoleUser {
		userEnd--
	}
	unmarkable := append(history[:userEnd:userEnd], withWire([]Message{{Role: RoleUser, Content: []Block{{Type: BlockThinking, Text: "t", Signature: "s"}}}})...)
	// A caller's own copy, without encodings, which it may change in place.
	mutable := withoutWire(history[:40])
	transcripts := []func() []Message{
		func() []Message { return history[:10] },
		func() []Message { return history[:40] },
		func() []Message { return history },
		func() []Message { return history[:20] },
		func() []Message { return append(history[:20:20], other...) },
		func() []Message { return append(summary, history[25:]...) },
		func() []Message { return history[:40] },
		func() []Message { return noWire },
		func() []Message { return history[:40] },
		func() []Message { return changed },
		func() []Message { return history[:userEnd] },
		func() []Message { return unmarkable },
		func() []Message { return mutable },
		func() []Message { mutable[0].Content[0].Text = "changed in place"; return mutable },
	}
	for format, bodies := range wireBodies {
		send := bodies()
		mutable[0].Content[0].Text = history[0].Content[0].Text
		for i, msgs := range transcripts {
			req := Request{Model: "m", System: "You are a coding agent.", Tools: wireTools, Messages: msgs()}
			kept, err := send(req)
			if err != nil {
				t.Fatal(err)
			}
			req.Messages = withoutWire(req.Messages)
			fresh, _ := bodies()(req)
			if !bytes.Equal(kept, fresh) {
				t.Fatalf("%s, transcript %d: the body from the layout kept differs from one made afresh:\n%s\n%s", format, i, kept, fresh)
			}
		}
	}
	// And the layout is kept: the 61st message adds to it.
	p := &anthropicProvider{}
	for k := 1; k <= len(history); k++ {
		sent(p.requestBody(anthRequest{}, history[:k]))
	}
	if logged := len(p.log.msgs); logged < len(history)-8 {
		t.Fatalf("the log holds %d of %d messages", logged, len(history))
	}
	// A transcript that shares exactly the messages logged and goes on in
	// the role of the last turn logged merges into that turn.
	p = &anthropicProvider{}
	sent(p.requestBody(anthRequest{}, history[:40]))
	logged := len(p.log.msgs)
	if logged == 0 || p.log.lastRole != RoleAssistant {
		t.Fatalf("the log holds %d messages ending in a %q turn", logged, p.log.lastRole)
	}
	more := append(history[:logged:logged], withWire([]Message{
		{Role: RoleAssistant, Content: []Block{TextBlock("and one more thing")}},
		{Role: RoleUser, Content: []Block{TextBlock("go on")}},
		{Role: RoleAssistant, Content: []Block{TextBlock("done")}},
		{Role: RoleUser, Content: []Block{TextBlock("thanks")}},
	})...)
	kept, _ := sent(p.requestBody(anthRequest{}, more))
	fresh, _ := sent((&anthropicProvider{}).requestBody(anthRequest{}, withoutWire(more)))
	if !bytes.Equal(kept, fresh) {
		t.Fatalf("a transcript going on in the role of the log's last turn:\n%s\n%s", kept, fresh)
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
			"chat+reasoning_content": func(r Request) ([]byte, error) { return sent(chat.requestBody(r, "reasoning_content")) },
			"ollama":                 func(r Request) ([]byte, error) { return sent(ollama.requestBody(r, localPlan{})) },
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
	body, _ := sent(chat.requestBody(Request{Model: "qwen3", Messages: []Message{changed}}, "reasoning_content"))
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
	before, _ := sent((&anthropicProvider{}).requestBody(anthRequest{}, a.messages))
	got := a.Messages()
	got[0].Content[0].Text = "changed"
	got[1].Content[0].Args[2] = 'X'
	after, _ := sent((&anthropicProvider{}).requestBody(anthRequest{}, a.messages))
	if !bytes.Equal(before, after) || a.Messages()[0].Content[0].Text == "changed" {
		t.Fatalf("a change to what Messages returned reached the transcript:\n%s\n%s", before, after)
	}
}

// sent is body as the server reads it, checked against the length the
// request announces.
func sent(body wireBody, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	var out []byte
	r := body.reader()
	buf := make([]byte, 7) // small reads cross the pieces' boundaries
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			break
		}
	}
	if len(out) != body.size {
		return nil, fmt.Errorf("the body has %d bytes but announces %d", len(out), body.size)
	}
	return out, nil
}
