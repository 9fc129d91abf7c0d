package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTextToolCallFormats(t *testing.T) {
	t.Parallel()
	known := func(name string) bool { return name == "read" || name == "bash" }
	for _, c := range []struct {
		name, text, prefix, format string
		calls                      []string // name args
	}{
		{"hermes", "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.go\"}}\n</tool_call>", "", "hermes", []string{`read {"path":"a.go"}`}},
		{"hermes after text, two calls", "Let me look.\n\n<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}</tool_call>\n<tool_call>{\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"ls\\\"}\"}</tool_call>\n", "Let me look.", "hermes", []string{`read {"path":"a"}`, `bash {"command":"ls"}`}},
		{"llama python_tag", "<|python_tag|>{\"name\": \"read\", \"parameters\": {\"path\": \"a\"}}", "", "llama", []string{`read {"path":"a"}`}},
		{"llama calls joined by ;", "<|python_tag|>{\"name\": \"read\", \"parameters\": {\"path\": \"a\"}}; {\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}", "", "llama", []string{`read {"path":"a"}`, `bash {"command":"ls"}`}},
		{"llama bare JSON, the whole reply", " {\"type\": \"function\", \"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}\n", "", "json", []string{`bash {"command":"ls"}`}},
		{"mistral array", "[TOOL_CALLS][{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}, {\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}]", "", "mistral", []string{`read {"path":"a"}`, `bash {"command":"ls"}`}},
		{"mistral name[ARGS]", "[TOOL_CALLS]read[ARGS]{\"path\": \"a\"}", "", "mistral", []string{`read {"path":"a"}`}},
		{"no arguments", "<tool_call>{\"name\": \"bash\"}</tool_call>", "", "hermes", []string{`bash {}`}},
	} {
		prefix, calls, format, ok := parseTextToolCalls(c.text, known)
		var got []string
		for _, tc := range calls {
			got = append(got, tc.Name+" "+string(tc.Args))
		}
		if !ok || prefix != c.prefix || format != c.format || strings.Join(got, "|") != strings.Join(c.calls, "|") {
			t.Errorf("%s: ok %v, prefix %q, format %s, calls %q", c.name, ok, prefix, format, got)
		}
	}
}

// What looks like a call but is not one at the end of the reply, outside
// a code block, whole, stays text.
func TestTextThatIsNotAToolCall(t *testing.T) {
	t.Parallel()
	known := func(name string) bool { return name == "bash" }
	for _, c := range []struct{ name, text string }{
		{"inside a fence", "The template writes:\n\n```\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"rm -rf /\"}}\n</tool_call>\n```\n"},
		{"inside an open fence at the end", "Like this:\n~~~xml\n<tool_call>{\"name\": \"bash\", \"arguments\": {}}</tool_call>"},
		{"text after the call", "<tool_call>{\"name\": \"bash\", \"arguments\": {}}</tool_call> and then I would stop."},
		{"cut JSON", "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"</tool_call>"},
		{"arguments not an object", "<tool_call>{\"name\": \"bash\", \"arguments\": [1]}</tool_call>"},
		{"a name no tool has", "<tool_call>{\"name\": \"rm -rf\", \"arguments\": {}}</tool_call>"},
		{"extra fields", "<tool_call>{\"name\": \"bash\", \"arguments\": {}, \"run_as\": \"root\"}</tool_call>"},
		{"bare JSON naming no tool the model has", "{\"name\": \"Ada\", \"parameters\": {\"age\": 36}}"},
		{"bare JSON after prose", "Here it is: {\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}"},
		{"both arguments and parameters", "<tool_call>{\"name\": \"bash\", \"arguments\": {}, \"parameters\": {}}</tool_call>"},
		{"a close without its open", "{\"name\": \"bash\", \"arguments\": {}}</tool_call>"},
		{"plain prose", "All done."},
	} {
		if prefix, calls, _, ok := parseTextToolCalls(c.text, known); ok {
			t.Errorf("%s: read as calls %+v after %q", c.name, calls, prefix)
		}
	}
}

func TestCutTextToolCallNamesItsTool(t *testing.T) {
	t.Parallel()
	name, partial, ok := cutTextToolCall("I'll write it.\n<tool_call>\n{\"name\": \"write\", \"arguments\": {\"path\": \"a.go\", \"content\": \"package ma")
	if !ok || name != "write" || !strings.HasPrefix(partial, `{"name": "write"`) {
		t.Errorf("ok %v name %q partial %q", ok, name, partial)
	}
	if _, _, ok := cutTextToolCall("```\n<tool_call>{\"name\": \"write\", \"arguments\": {\"pa"); ok {
		t.Error("a cut call inside a fence counted")
	}
}

// The tools described as text come back as calls the parser reads, and
// the history written for such a model reads back the same.
func TestTextToolsPromptAndHistoryRoundTrip(t *testing.T) {
	t.Parallel()
	env := textCallEnvelope("bash", json.RawMessage(`{"command": "ls -l"}`))
	_, calls, format, ok := parseTextToolCalls("Listing.\n"+env, nil)
	if !ok || format != "hermes" || len(calls) != 1 || string(calls[0].Args) != `{"command":"ls -l"}` {
		t.Fatalf("envelope %q read as %v %s %+v", env, ok, format, calls)
	}
	prompt := textToolsPrompt([]ToolSpec{{Name: "bash", Description: "Run a command.", Schema: json.RawMessage(`{"type":"object"}`)}})
	if !strings.Contains(prompt, "<tool_call>") || !strings.Contains(prompt, "## bash\nRun a command.\nArguments: {\"type\":\"object\"}") {
		t.Errorf("prompt %q", prompt)
	}
	req := withTextTools(Request{System: "sys", Tools: []ToolSpec{{Name: "bash"}}, Messages: []Message{
		{Role: RoleUser, Content: []Block{TextBlock("list")}},
		{Role: RoleAssistant, Content: []Block{TextBlock("Listing."), {Type: BlockToolCall, ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}}},
		{Role: RoleUser, Content: []Block{{Type: BlockToolResult, CallID: "c1", IsError: true, Content: []Block{TextBlock("no such dir")}}}},
	}}, true)
	if req.Tools != nil || !strings.HasPrefix(req.System, "sys\n\n# Tools") {
		t.Errorf("tools %v, system %q", req.Tools, req.System)
	}
	got := []string{req.Messages[1].Content[0].Text, req.Messages[2].Content[0].Text}
	want := []string{"Listing.\n\n<tool_call>\n{\"name\":\"bash\",\"arguments\":{\"command\":\"ls\"}}\n</tool_call>", "<tool_response>\nError: no such dir\n</tool_response>"}
	if got[0] != want[0] || got[1] != want[1] || len(req.Messages[1].Content) != 1 {
		t.Errorf("history %q, want %q", got, want)
	}
}

// A reply that ends in a call written as text becomes a real call on a
// local server, streamed like a native one; on OpenAI's own API, or with
// "textToolCalls": false, it stays text.
func TestTextToolCallsFromALocalServer(t *testing.T) {
	t.Parallel()
	text := "Let me see.\n<tool_call>\n{\"name\": \"list_dir\", \"arguments\": {\"dir\": \".\"}}\n</tool_call>"
	srv := startReplay(t, replayStep{Events: openaiEvents(gen{Text: text})})
	p := localProvider(t, "openai", srv.URL+"/v1", LocalOptions{})
	got := callProvider(t, p, Request{Model: "m", Messages: hello, Tools: []ToolSpec{listDirTool}})
	calls := Message{Content: got.reply.Content}.ToolCalls()
	if got.err != nil || len(calls) != 1 || !calls[0].FromText || calls[0].Name != "list_dir" || string(calls[0].Args) != `{"dir":"."}` ||
		replyText(got.reply) != "Let me see." || got.reply.Stop != StopToolUse || !strings.HasPrefix(calls[0].ID, "call_text_") {
		t.Fatalf("err %v, reply %+v", got.err, got.reply)
	}
	if got.text("tool_args") != `{"dir":"."}` {
		t.Errorf("streamed args %q", got.text("tool_args"))
	}
	off := false
	p = localProvider(t, "openai", srv.URL+"/v1", LocalOptions{TextToolCalls: &off})
	if got := callProvider(t, p, Request{Model: "m", Messages: hello, Tools: []ToolSpec{listDirTool}}); replyText(got.reply) != text || len(Message{Content: got.reply.Content}.ToolCalls()) != 0 {
		t.Errorf("textToolCalls false: %+v", got.reply)
	}
	vendor, _ := NewProvider(ProviderConfig{Name: "openai", BaseURL: "https://api.openai.com/v1"})
	if vendor.(*openaiProvider).local != nil {
		t.Error("OpenAI's own API is treated as a local server")
	}
}

// A call the model wrote as text meets the same validator as a native one
// and is refused the same way; the audit log says it was read from text.
func TestTextToolCallIsRefusedByTheValidatorLikeANativeOne(t *testing.T) {
	t.Parallel()
	const cmd = "touch ran.marker && curl -X POST https://api.example.invalid/v1/items"
	args, _ := json.Marshal(obj{"command": cmd})
	native := replayStep{Events: openaiEvents(gen{ToolID: "n1", ToolName: "bash", ToolArgs: string(args)})}
	text := replayStep{Events: openaiEvents(gen{Text: "I'll post it.\n<tool_call>\n{\"name\": \"bash\", \"arguments\": " + string(args) + "}\n</tool_call>"})}
	seen := map[string]string{}
	for name, first := range map[string]replayStep{"native": native, "text": text} {
		srv := startReplay(t, first, replayStep{Events: openaiEvents(gen{Text: "I will not post."})})
		z := newZotRun(t)
		withValidators(t, z.home, obj{"name": "no-post", "script": "deny_post.py", "commands": []string{"curl"}})
		stdout, stderr, code := z.run("-p", "--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "local", "create the item")
		if code != 0 || stdout != "I will not post.\n" {
			t.Fatalf("%s: exit %d stdout %q stderr %s", name, code, stdout, stderr)
		}
		if _, err := os.Stat(filepath.Join(z.cwd, "ran.marker")); err == nil {
			t.Fatalf("%s: the denied command ran", name)
		}
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal(srv.Requests()[1].Body, &body)
		last := body.Messages[len(body.Messages)-1]
		seen[name] = last.Role + ": " + last.Content
		lines := auditLines(t, z.home)
		if len(lines) != 1 || lines[0].Outcome != "blocked" || lines[0].Decisions[len(lines[0].Decisions)-1].By != "validator:no-post" {
			t.Fatalf("%s: audit %+v", name, lines)
		}
		fromText := lines[0].Decisions[0].Reason == "parsed from text: the model wrote the call in its reply's text"
		if fromText != (name == "text") {
			t.Errorf("%s: audit decisions %+v", name, lines[0].Decisions)
		}
	}
	if seen["native"] != seen["text"] || !strings.Contains(seen["text"], "POST requests are not allowed") {
		t.Errorf("the model was told\nnative: %q\ntext:   %q", seen["native"], seen["text"])
	}
}

func FuzzParseTextToolCalls(f *testing.F) {
	for _, s := range []string{
		"<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}</tool_call>",
		"x\n```\n<tool_call>{\"name\": \"read\", \"arguments\": {}}</tool_call>\n```",
		"<|python_tag|>{\"name\": \"read\", \"parameters\": {}}; {\"name\": \"bash\", \"parameters\": {}}",
		"[TOOL_CALLS][{\"name\": \"read\", \"arguments\": {}}]",
		"[TOOL_CALLS]read[ARGS]{}[TOOL_CALLS]bash[ARGS]{\"command\":\"ls\"}",
		"{\"name\": \"read\", \"arguments\": \"{\\\"path\\\": 1}\"}",
		"<tool_call><tool_call></tool_call></tool_call>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		prefix, calls, _, ok := parseTextToolCalls(text, func(string) bool { return true })
		if !ok {
			if prefix != text || calls != nil {
				t.Fatalf("not calls, but prefix %q calls %v", prefix, calls)
			}
			return
		}
		if len(calls) == 0 || len(calls) > maxTextCalls || len(prefix) > len(text) || !strings.HasPrefix(text, prefix) {
			t.Fatalf("calls %d, prefix %q of %q", len(calls), prefix, text)
		}
		for _, c := range calls {
			if !validCallName(c.Name) || !json.Valid(c.Args) || !isJSONObject(c.Args) {
				t.Fatalf("call %q %s", c.Name, c.Args)
			}
		}
		cutTextToolCall(text)
	})
}
