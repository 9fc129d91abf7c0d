package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Tool calls written as text. A model whose server does not parse its
// tool calls (a chat template without tool support, a server that drops
// the tools, ollama's Go templates) writes them into its answer in its
// training's format. Such a call at the very end of a reply — the whole
// reply, or what follows its text — is read back into a real tool call,
// which then meets every gate a native one meets. A call inside a fenced
// code block is a model showing a format, not using it, and stays text.
//
// The formats read:
//
//	hermes   <tool_call>{"name": "read", "arguments": {"path": "a"}}</tool_call>   (Qwen, Hermes; one block per call)
//	llama    <|python_tag|>{"name": "read", "parameters": {"path": "a"}}             (Llama 3.x; calls joined by ";")
//	json     {"name": "read", "parameters": {"path": "a"}}                            (Llama 3.x: the whole reply, nothing else)
//	mistral  [TOOL_CALLS][{"name": "read", "arguments": {"path": "a"}}]               (also [TOOL_CALLS]read[ARGS]{…})

// textCall is one tool call read from text.
type textCall struct {
	Name string
	Args json.RawMessage
}

// Bounds on what is read as calls: a reply that ends in a thousand calls
// is not a model using its tools.
const (
	maxTextCalls    = 16
	maxTextCallName = 128
)

// parseTextToolCalls reads the tool calls that end text. prefix is the
// text before them; format names the envelope. ok is false when text does
// not end in complete calls of one format outside a code fence. A reply
// that is a bare JSON object is read as calls only when each names one of
// the tools the model has (known): without an envelope, a JSON answer the
// user asked for would look the same.
func parseTextToolCalls(text string, known func(name string) bool) (prefix string, calls []textCall, format string, ok bool) {
	trimmed := strings.TrimRight(text, " \t\r\n")
	for _, f := range textCallFormats {
		start, calls, ok := f.parse(trimmed)
		if !ok || len(calls) == 0 || len(calls) > maxTextCalls || inCodeFence(trimmed[:start]) {
			continue
		}
		if f.name == "json" && !allKnown(calls, known) {
			continue
		}
		return strings.TrimRight(trimmed[:start], " \t\r\n"), calls, f.name, true
	}
	return text, nil, "", false
}

func allKnown(calls []textCall, known func(string) bool) bool {
	for _, c := range calls {
		if known == nil || !known(c.Name) {
			return false
		}
	}
	return true
}

var textCallFormats = []struct {
	name  string
	parse func(text string) (start int, calls []textCall, ok bool)
}{
	{"hermes", parseHermes},
	{"llama", parseLlamaTag},
	{"mistral", parseMistral},
	{"json", parseBareJSON},
}

// parseHermes reads the <tool_call> blocks that end text, separated by
// nothing but white space.
func parseHermes(text string) (int, []textCall, bool) {
	const open, close = "<tool_call>", "</tool_call>"
	end := len(text)
	var calls []textCall
	for strings.HasSuffix(text[:end], close) {
		body := text[:end-len(close)]
		i := strings.LastIndex(body, open)
		if i < 0 {
			return 0, nil, false
		}
		c, ok := decodeTextCall([]byte(body[i+len(open):]))
		if !ok {
			return 0, nil, false
		}
		calls = append([]textCall{c}, calls...)
		end = len(strings.TrimRight(text[:i], " \t\r\n"))
		if len(calls) > maxTextCalls {
			return 0, nil, false
		}
	}
	return end, calls, len(calls) > 0
}

// parseLlamaTag reads "<|python_tag|>" and the calls after it.
func parseLlamaTag(text string) (int, []textCall, bool) {
	const tag = "<|python_tag|>"
	i := strings.LastIndex(text, tag)
	if i < 0 {
		return 0, nil, false
	}
	calls, ok := decodeCallSequence(text[i+len(tag):])
	return i, calls, ok
}

// parseBareJSON reads a reply that is nothing but one call object (or
// calls joined by ";"), as Llama 3.x writes them without the tag.
func parseBareJSON(text string) (int, []textCall, bool) {
	s := strings.TrimLeft(text, " \t\r\n")
	if !strings.HasPrefix(s, "{") {
		return 0, nil, false
	}
	calls, ok := decodeCallSequence(s)
	return 0, calls, ok
}

// parseMistral reads "[TOOL_CALLS]" and the JSON array after it, or the
// newer "[TOOL_CALLS]name[ARGS]{…}" pairs.
func parseMistral(text string) (int, []textCall, bool) {
	const tag, argsTag = "[TOOL_CALLS]", "[ARGS]"
	i := strings.Index(text, tag)
	if i < 0 {
		return 0, nil, false
	}
	rest := strings.TrimSpace(text[i+len(tag):])
	if strings.HasPrefix(rest, "[") {
		var list []json.RawMessage
		if json.Unmarshal([]byte(rest), &list) != nil {
			return 0, nil, false
		}
		var calls []textCall
		for _, raw := range list {
			c, ok := decodeTextCall(raw)
			if !ok {
				return 0, nil, false
			}
			calls = append(calls, c)
		}
		return i, calls, true
	}
	var calls []textCall
	for _, part := range strings.Split(rest, tag) {
		name, args, found := strings.Cut(part, argsTag)
		name = strings.TrimSpace(name)
		if !found || !validCallName(name) {
			return 0, nil, false
		}
		var compact bytes.Buffer
		if json.Compact(&compact, []byte(args)) != nil || !isJSONObject(compact.Bytes()) {
			return 0, nil, false
		}
		calls = append(calls, textCall{Name: name, Args: compact.Bytes()})
	}
	return i, calls, true
}

// decodeCallSequence reads one call object, or several joined by ";".
func decodeCallSequence(s string) ([]textCall, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	var calls []textCall
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		c, ok := decodeTextCall(raw)
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
		rest := strings.TrimLeft(s[dec.InputOffset():], " \t\r\n")
		if rest == "" {
			return calls, true
		}
		if !strings.HasPrefix(rest, ";") || len(calls) >= maxTextCalls {
			return nil, false
		}
		s = strings.TrimPrefix(rest, ";")
		dec = json.NewDecoder(strings.NewReader(s))
	}
}

// decodeTextCall reads {"name": …, "arguments"|"parameters": {…}}: the
// arguments an object, or a string that holds one (as the OpenAI wire
// format has them). Anything else in the object is no call.
func decodeTextCall(raw []byte) (textCall, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimSpace(raw), &obj) != nil {
		return textCall{}, false
	}
	var name string
	if json.Unmarshal(obj["name"], &name) != nil || !validCallName(name) {
		return textCall{}, false
	}
	args, hasArgs := obj["arguments"]
	if p, ok := obj["parameters"]; ok {
		if hasArgs {
			return textCall{}, false
		}
		args, hasArgs = p, true
	}
	for k := range obj {
		if k != "name" && k != "arguments" && k != "parameters" && k != "type" && k != "id" {
			return textCall{}, false
		}
	}
	if !hasArgs || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var s string
	if json.Unmarshal(args, &s) == nil {
		args = json.RawMessage(s)
	}
	if !json.Valid(args) || !isJSONObject(args) {
		return textCall{}, false
	}
	var compact bytes.Buffer
	if json.Compact(&compact, args) != nil {
		return textCall{}, false
	}
	return textCall{Name: name, Args: compact.Bytes()}, true
}

// validCallName is a tool name as the APIs allow them.
func validCallName(name string) bool {
	return name != "" && len(name) <= maxTextCallName && toolNameChars().MatchString(name)
}

var toolNameChars = lazyRegexp(`^[A-Za-z0-9_.:-]+$`)

// inCodeFence says whether text ends inside a fenced code block: an odd
// number of fence lines (``` or ~~~) before it.
func inCodeFence(text string) bool {
	open := ""
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimLeft(line, " ")
		for _, f := range []string{"```", "~~~"} {
			if strings.HasPrefix(l, f) && (open == "" || open == f) {
				if open == "" {
					open = f
				} else if strings.TrimSpace(strings.TrimLeft(l, f[:1])) == "" {
					open = ""
				}
			}
		}
	}
	return open != ""
}

// cutTextToolCall finds a call the output limit cut off: text that ends
// inside an envelope whose tool name was already written. The call is
// answered with an error, so the model learns that it was cut.
func cutTextToolCall(text string) (name string, partial string, ok bool) {
	for _, open := range []string{"<tool_call>", "<|python_tag|>", "[TOOL_CALLS]"} {
		i := strings.LastIndex(text, open)
		if i < 0 || inCodeFence(text[:i]) {
			continue
		}
		rest := text[i+len(open):]
		if strings.Contains(rest, "</tool_call>") {
			continue
		}
		if m := partialCallName().FindStringSubmatch(rest); m != nil && validCallName(m[1]) {
			return m[1], strings.TrimSpace(rest), true
		}
	}
	return "", "", false
}

var partialCallName = lazyRegexp(`"name"\s*:\s*"([^"]{1,128})"`)

// textCallID is a fresh id for a call read from text; the tool result
// answers it.
func textCallID() string {
	var b [8]byte
	rand.Read(b[:])
	return "call_text_" + hex.EncodeToString(b[:])
}

// textToolsPrompt describes the tools for a model that gets none natively
// and asks for the hermes envelope, which parseTextToolCalls reads back.
func textToolsPrompt(tools []ToolSpec) string {
	if len(tools) == 0 {
		return ""
	}
	sorted := append([]ToolSpec(nil), tools...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var b strings.Builder
	b.WriteString("# Tools\n\nYou can call the tools below. To call one, end your message with this block, one per call, and write nothing after it:\n\n<tool_call>\n{\"name\": \"TOOL NAME\", \"arguments\": {ARGUMENTS AS JSON}}\n</tool_call>\n\nEach result comes back in a <tool_response> block. The tools, with the JSON schema of their arguments:\n")
	for _, t := range sorted {
		fmt.Fprintf(&b, "\n## %s\n%s\nArguments: %s\n", t.Name, strings.TrimSpace(t.Description), schemaOrEmpty(t.Schema))
	}
	return b.String()
}

// textCallEnvelope writes a call back the way textToolsPrompt asked for
// it, for the history sent to a model without native tools.
func textCallEnvelope(name string, args json.RawMessage) string {
	if !json.Valid(args) || !isJSONObject(args) {
		args = json.RawMessage("{}")
	}
	b, _ := json.Marshal(struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{name, args})
	return "<tool_call>\n" + string(b) + "\n</tool_call>"
}

// textToolResponse is a tool result as a model without native tools reads
// it.
func textToolResponse(body string, isError bool) string {
	if isError && !strings.HasPrefix(body, "Error") {
		body = "Error: " + body
	}
	return "<tool_response>\n" + body + "\n</tool_response>"
}
