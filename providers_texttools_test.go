package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// textCase is one case of testdata/texttools/cases.json: a model's text
// and what it holds, from a public parser's tests.
type textCase struct {
	Name          string
	Source        string
	Model         string
	Text          string
	Content       string
	Thinking      string
	Calls         []wantCall
	Lone          bool
	TextToolCalls *bool
}

type wantCall struct {
	Name string
	Args json.RawMessage
}

type textCases struct {
	Tools map[string]json.RawMessage
	Cases []textCase
}

func loadTextCases(t testing.TB) textCases {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "texttools", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c textCases
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// specs are the cases' tools, by name.
func (c textCases) specs() []ToolSpec {
	var out []ToolSpec
	for name, schema := range c.Tools {
		out = append(out, ToolSpec{Name: name, Description: "test tool " + name, Schema: schema})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// sameJSON says whether two JSON texts hold the same value, numbers,
// booleans and null told apart from strings.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// planFor is the reply plan a case's model gets from a server that does
// not parse its format (vLLM without the right --tool-call-parser).
func planFor(c textCase, specs []ToolSpec) replyPlan {
	names := map[string]bool{}
	for _, s := range specs {
		names[s.Name] = true
	}
	return replyPlan{
		formats:     replyFormats(c.TextToolCalls, false, "vllm", c.Model),
		types:       schemaTypes(specs),
		known:       func(n string) bool { return names[n] },
		thinksFirst: opensThinking(c.Model),
	}
}

// Each case of the parsers' tests, read whole: the reasoning, the text
// and the calls, typed by the tools' schemas.
func TestTextToolCallFormatsOfTheParsersTests(t *testing.T) {
	t.Parallel()
	cases := loadTextCases(t)
	specs := cases.specs()
	seen := textFormat(0)
	for _, c := range cases.Cases {
		plan := planFor(c, specs)
		parts := plan.read(c.Text, false, true, true)
		seen |= parts.format
		if parts.text != c.Content || parts.thinking != c.Thinking || parts.lone != c.Lone || parts.cut != nil {
			t.Errorf("%s:\n text %q, want %q\n thinking %q, want %q\n lone %v, cut %v", c.Name, parts.text, c.Content, parts.thinking, c.Thinking, parts.lone, parts.cut)
		}
		if len(parts.calls) != len(c.Calls) {
			t.Errorf("%s: calls %+v, want %+v", c.Name, parts.calls, c.Calls)
			continue
		}
		for i, call := range parts.calls {
			if call.Name != c.Calls[i].Name || !sameJSON(call.Args, c.Calls[i].Args) {
				t.Errorf("%s: call %d %s %s, want %s %s", c.Name, i, call.Name, call.Args, c.Calls[i].Name, c.Calls[i].Args)
			}
		}
	}
	if want := allTextFormats &^ fmtLlama; seen != want {
		t.Errorf("the cases read the formats %v, not all of %v", seen, want)
	}
}

// A stream holds a call back from its marker on until it plainly is none:
// no beginning of a call of the parsers' cases may be judged none, or the
// stream would show the call as text and the reply then run it.
func TestNoBeginningOfACallIsJudgedNone(t *testing.T) {
	t.Parallel()
	cases := loadTextCases(t)
	specs := cases.specs()
	for _, c := range cases.Cases {
		plan := planFor(c, specs)
		if len(plan.read(c.Text, false, true, true).calls) == 0 {
			continue
		}
		at := firstCallMarker(c.Text, 0, plan.formats)
		if at < 0 {
			at = strings.IndexByte(c.Text, '{') // a bare JSON call
		}
		held := c.Text[at:]
		for n := 1; n <= len(held); n++ {
			if none, _ := heldIsNoCall(held[:n], plan); none {
				t.Errorf("%s: its first %d bytes from the call on are judged no call: %q", c.Name, n, held[:n])
				break
			}
		}
	}
}

// The forms zot read before the parsers' cases: the Llama tag, and the
// hermes envelope's details.
func TestTextToolCallFormats(t *testing.T) {
	t.Parallel()
	known := func(name string) bool { return name == "read" || name == "bash" }
	for _, c := range []struct {
		name, text, prose string
		calls             []string // name args
	}{
		{"hermes", "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.go\"}}\n</tool_call>", "", []string{`read {"path":"a.go"}`}},
		{"hermes, arguments as a string", "Let me look.\n\n<tool_call>{\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"ls\\\"}\"}</tool_call>\n", "Let me look.", []string{`bash {"command":"ls"}`}},
		{"llama python_tag", "<|python_tag|>{\"name\": \"read\", \"parameters\": {\"path\": \"a\"}}", "", []string{`read {"path":"a"}`}},
		{"llama calls joined by ;", "<|python_tag|>{\"name\": \"read\", \"parameters\": {\"path\": \"a\"}}; {\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}", "", []string{`read {"path":"a"}`, `bash {"command":"ls"}`}},
		{"bare JSON with type", " {\"type\": \"function\", \"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}\n", "", []string{`bash {"command":"ls"}`}},
		{"no arguments", "<tool_call>{\"name\": \"bash\"}</tool_call>", "", []string{`bash {}`}},
		{"a call inside a fence, then a real one", "Like this:\n```\n<tool_call>{\"name\": \"bash\", \"arguments\": {}}</tool_call>\n```\nNow:\n<tool_call>{\"name\": \"read\", \"arguments\": {}}</tool_call>", "Like this:\n```\n<tool_call>{\"name\": \"bash\", \"arguments\": {}}</tool_call>\n```\nNow:", []string{`read {}`}},
	} {
		got := scanTextCalls(c.text, scanOptions{allow: allTextFormats, known: known, ended: true})
		var calls []string
		for _, tc := range got.calls {
			calls = append(calls, tc.Name+" "+string(tc.Args))
		}
		if got.cut || got.prose != c.prose || strings.Join(calls, "|") != strings.Join(c.calls, "|") {
			t.Errorf("%s: prose %q, calls %q, cut %v", c.name, got.prose, calls, got.cut)
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
		{"text after an XML call", "<tool_call>\n<function=bash>\n<parameter=command>\nls\n</parameter>\n</function>\n</tool_call>\n<tool_response>\na.go\n</tool_response>"},
		{"cut JSON", "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"</tool_call>"},
		{"arguments not an object", "<tool_call>{\"name\": \"bash\", \"arguments\": [1]}</tool_call>"},
		{"a name no tool has", "<tool_call>{\"name\": \"rm -rf\", \"arguments\": {}}</tool_call>"},
		{"a GLM name with a space", "<tool_call>rm -rf<arg_key>a</arg_key><arg_value>b</arg_value></tool_call>"},
		{"extra fields", "<tool_call>{\"name\": \"bash\", \"arguments\": {}, \"run_as\": \"root\"}</tool_call>"},
		{"bare JSON naming no tool the model has", "{\"name\": \"Ada\", \"parameters\": {\"age\": 36}}"},
		{"bare JSON after prose", "Here it is: {\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}"},
		{"both arguments and parameters", "<tool_call>{\"name\": \"bash\", \"arguments\": {}, \"parameters\": {}}</tool_call>"},
		{"a close without its open", "{\"name\": \"bash\", \"arguments\": {}}</tool_call>"},
		{"a mention of the tag", "Qwen wraps its calls in <tool_call> tags."},
		{"a harmony-looking line in prose", "The format is <|channel|>commentary to=functions.bash<|message|>{}"},
		{"plain prose", "All done."},
	} {
		got := scanTextCalls(c.text, scanOptions{allow: allTextFormats, known: known, ended: true})
		if len(got.calls) > 0 || got.cut && got.name != "" {
			t.Errorf("%s: read as calls %+v (cut %v %q) after %q", c.name, got.calls, got.cut, got.name, got.prose)
		}
	}
}

// A reply the output limit cut inside a call names the call's tool, once
// the name was written whole, for each envelope.
func TestACutCallNamesItsTool(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ text, name string }{
		{"I'll write it.\n<tool_call>\n{\"name\": \"write\", \"arguments\": {\"path\": \"a.go\", \"content\": \"package ma", "write"},
		{"<tool_call>\n<function=write>\n<parameter=path>\na.go\n</parameter>\n<parameter=content>\npackage ma", "write"},
		{"<tool_call>write\n<arg_key>path</arg_key>\n<arg_value>a.go", "write"},
		{"[TOOL_CALLS]write[ARGS]{\"path\": \"a", "write"},
		{kimiSection + kimiCall + "functions.write:0" + kimiArgs + "{\"path\": \"a", "write"},
		{dsCalls + dsCall + "write" + dsSep + "{\"path\": \"a", "write"},
		{dsmlCalls + "\n<｜DSML｜invoke name=\"write\">\n<｜DSML｜parameter name=\"path\" string=\"true\">a.g", "write"},
		{"<tool_call>\n{\"na", ""},
		{"<tool_call>wri", ""},
	} {
		got := scanTextCalls(c.text, scanOptions{allow: allTextFormats})
		if !got.cut || got.name != c.name || len(got.calls) != 0 {
			t.Errorf("%q: cut %v, name %q, calls %v", c.text, got.cut, got.name, got.calls)
		}
	}
	if got := scanTextCalls("```\n<tool_call>{\"name\": \"write\", \"arguments\": {\"pa", scanOptions{allow: allTextFormats}); got.cut {
		t.Error("a cut call inside a fence counted")
	}
	plan := replyPlan{formats: fmtHarmony}
	if p := plan.read("<|channel|>commentary to=functions.write <|constrain|>json<|message|>{\"path\": \"a", false, true, false); p.cut == nil || p.cut.Name != "write" || json.Valid(p.cut.Args) {
		t.Errorf("harmony cut: %+v", p.cut)
	}
}

// Which formats are read from which reply: none from llama-server, which
// parses every family's format itself, the family's own from other
// servers, all of them when the tools went as text or models.json says so.
func TestWhichFormatsAreReadFromWhichServer(t *testing.T) {
	t.Parallel()
	on, off := true, false
	for _, c := range []struct {
		setting   *bool
		textTools bool
		kind      string
		model     string
		want      textFormat
	}{
		{nil, false, "llama.cpp", "Qwen3-Coder-30B-A3B", 0},
		{nil, false, "vllm", "Qwen/Qwen3-Coder-30B-A3B-Instruct", fmtQwenXML},
		{nil, false, "", "qwen3-coder:30b", fmtQwenXML},
		{nil, false, "ollama", "hf.co/unsloth/GLM-4.6-GGUF:Q4_K_M", fmtGLM},
		{nil, false, "vllm", "moonshotai/Kimi-K2-Instruct", fmtKimi},
		{nil, false, "vllm", "deepseek-ai/DeepSeek-V3.2", fmtDeepSeek | fmtDSML},
		{nil, false, "vllm", "openai/gpt-oss-120b", fmtHarmony},
		{nil, false, "lmstudio", "qwen2.5-coder-7b-instruct", fmtHermes},
		{nil, false, "vllm", "meta-llama/Llama-3.3-70B-Instruct", fmtLlama | fmtJSON},
		{nil, false, "vllm", "mistralai/Devstral-Small-2507", fmtMistral},
		{nil, false, "vllm", "local", 0},
		{nil, true, "llama.cpp", "local", allTextFormats},
		{&on, false, "llama.cpp", "local", allTextFormats},
		{&off, true, "vllm", "Qwen3-Coder", 0},
	} {
		if got := replyFormats(c.setting, c.textTools, c.kind, c.model); got != c.want {
			t.Errorf("%v %v %q %q: %v, want %v", c.setting, c.textTools, c.kind, c.model, got, c.want)
		}
	}
}

// The tools described as text come back as calls the parser reads, and
// the history written for such a model reads back the same.
func TestTextToolsPromptAndHistoryRoundTrip(t *testing.T) {
	t.Parallel()
	env := textCallEnvelope("bash", json.RawMessage(`{"command": "ls -l"}`))
	got := scanTextCalls("Listing.\n"+env, scanOptions{allow: allTextFormats, ended: true})
	if got.format != fmtHermes || len(got.calls) != 1 || string(got.calls[0].Args) != `{"command":"ls -l"}` {
		t.Fatalf("envelope %q read as %+v", env, got)
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
	hist := []string{req.Messages[1].Content[0].Text, req.Messages[2].Content[0].Text}
	want := []string{"Listing.\n\n<tool_call>\n{\"name\":\"bash\",\"arguments\":{\"command\":\"ls\"}}\n</tool_call>", "<tool_response>\nError: no such dir\n</tool_response>"}
	if hist[0] != want[0] || hist[1] != want[1] || len(req.Messages[1].Content) != 1 {
		t.Errorf("history %q, want %q", hist, want)
	}
}

// The XML forms' arguments are typed by the tool's schema; what the
// schema does not allow stays the text it was.
func TestXMLArgumentsAreTypedByTheSchema(t *testing.T) {
	t.Parallel()
	types := schemaTypes([]ToolSpec{{Name: "t", Schema: json.RawMessage(`{"properties": {
		"n": {"type": "integer"}, "f": {"type": "number"}, "b": {"type": "boolean"}, "o": {"type": "object"},
		"a": {"type": "array"}, "s": {"type": "string"}, "ns": {"anyOf": [{"type": "string"}, {"type": "null"}]},
		"e": {"enum": [1, 2]}}}`)}})
	for _, c := range []struct{ param, text, want string }{
		{"n", "42", `42`}, {"n", "forty", `"forty"`}, {"f", "3.14", `3.14`}, {"b", "True", `true`}, {"b", "yes", `"yes"`},
		{"o", `{"k": [1, 2]}`, `{"k":[1,2]}`}, {"o", "{", `"{"`}, {"a", `["x"]`, `["x"]`}, {"s", "42", `"42"`},
		{"s", "a <b> & c\n", "\"a <b> & c\\n\""}, {"ns", "null", `null`}, {"ns", "None", `"None"`}, {"e", "2", `2`},
		{"unknown", "7", `"7"`},
	} {
		if got := types.value("t", c.param, c.text); string(got) != c.want {
			t.Errorf("%s %q: %s, want %s", c.param, c.text, got, c.want)
		}
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
		stdout, stderr, code := z.run("-p", "--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "qwen2.5-coder:7b", "create the item")
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
	cases := loadTextCases(f)
	for _, c := range cases.Cases {
		f.Add(c.Text)
	}
	for _, s := range []string{
		"x\n```\n<tool_call>{\"name\": \"read\", \"arguments\": {}}</tool_call>\n```",
		"<|python_tag|>{\"name\": \"read\", \"parameters\": {}}; {\"name\": \"bash\", \"parameters\": {}}",
		"<tool_call><tool_call></tool_call></tool_call>",
		"<function=a>\n<parameter=b>\n<parameter=c>\nx\n</parameter>\n</parameter>\n</function>",
		"<think>a</think><think>b</think>",
	} {
		f.Add(s)
	}
	specs := cases.specs()
	plan := replyPlan{formats: allTextFormats, types: schemaTypes(specs), known: func(string) bool { return true }}
	f.Fuzz(func(t *testing.T, text string) {
		got := scanTextCalls(text, scanOptions{allow: allTextFormats, types: plan.types, known: plan.known, ended: true})
		if len(got.calls) > maxTextCalls {
			t.Fatalf("%d calls", len(got.calls))
		}
		for _, c := range got.calls {
			if !validCallName(c.Name) || !json.Valid(c.Args) || !isJSONObject(c.Args) || !strings.Contains(text, c.src) {
				t.Fatalf("call %q %s from %q", c.Name, c.Args, c.src)
			}
		}
		if len(got.calls) == 0 && !got.cut && got.prose != strings.TrimRight(text, " \t\r\n") && !strings.HasSuffix(strings.TrimRight(text, " \t\r\n"), dsEndOfText) {
			t.Fatalf("no calls, but the text became %q", got.prose)
		}
		// Streamed in any pieces, the reply shows one text and one
		// reasoning, and holds the same calls as when read whole.
		if !utf8.ValidString(text) {
			return
		}
		whole := streamThrough(plan, []string{text})
		bytewise := streamThrough(plan, strings.SplitAfter(text, ""))
		if whole.text != bytewise.text || whole.thinking != bytewise.thinking || whole.calls != bytewise.calls {
			t.Fatalf("whole: %+v\nrune by rune: %+v", whole, bytewise)
		}
		// With no call read, the answer shown is the answer kept.
		if whole.calls == "" && whole.answer != whole.kept {
			t.Fatalf("shown %q, kept %q", whole.answer, whole.kept)
		}
	})
}

// streamed sums up what a replyReader showed of a reply and read from it:
// answer is the text shown less the reasoning it began with when the
// reply, read whole, ends its reasoning in a lone </think> (what came
// before that is shown as text: the stream cannot know it for reasoning
// until then); kept is the answer the reply keeps. White space aside.
type streamedReply struct{ text, thinking, calls, answer, kept string }

func streamThrough(plan replyPlan, pieces []string) streamedReply {
	var s streamedReply
	on := func(e StreamEvent) {
		switch e.Type {
		case "text":
			s.text += e.Delta
		case "thinking":
			s.thinking += e.Delta
		case "tool_start":
			s.calls += e.Name + " "
		case "tool_args":
			s.calls += e.Delta + "\n"
		}
	}
	r := newReplyReader(plan, on)
	var raw string
	for _, p := range pieces {
		raw += p
		r.event(StreamEvent{Type: "text", Delta: p})
	}
	reply := Reply{Content: []Block{TextBlock(raw)}, Stop: StopEndTurn}
	parts := r.finish(&reply)
	s.answer, s.kept = strings.TrimSpace(s.text), strings.TrimSpace(parts.text)
	if before, ok := strings.CutSuffix(s.answer, s.kept); ok && parts.lone && strings.HasPrefix(parts.thinking, strings.TrimSpace(before)) {
		s.answer = s.kept
	}
	return s
}
