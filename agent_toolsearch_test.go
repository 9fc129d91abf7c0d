package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The tools go whole while they fit their share of the window; past it,
// zot's own whole and the MCP and extension tools as tool_search's list,
// those the conversation loaded (or called) whole again.
func TestPlanTools(t *testing.T) {
	t.Parallel()
	spec := func(name, source string, size int) ToolSpec {
		return ToolSpec{Name: name, Source: source, Description: strings.Repeat("d", size), Schema: json.RawMessage(`{}`)}
	}
	all := []ToolSpec{spec("read", "builtin", 400), spec("mcp__t__list_issues", "mcp:t", 2000), spec("mcp__t__get_issue", "mcp:t", 2000), spec("greet", "ext", 400)}
	names := func(ts []ToolSpec) string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return strings.Join(out, " ")
	}
	call := func(name, args string) Message {
		return Message{Role: RoleAssistant, Content: []Block{{Type: BlockToolCall, ID: "c", Name: name, Args: json.RawMessage(args)}}}
	}
	for _, c := range []struct {
		name   string
		tools  []ToolSpec
		window int
		share  float64
		msgs   []Message
		send   string
	}{
		{"all fit a quarter", all, 8000, 0, nil, "read mcp__t__list_issues mcp__t__get_issue greet"},
		{"over a quarter", all, 4000, 0, nil, "read tool_search"},
		{"a larger share fits them", all, 4000, 0.5, nil, "read mcp__t__list_issues mcp__t__get_issue greet"},
		{"nothing to list", []ToolSpec{spec("read", "builtin", 9000)}, 4000, 0, nil, "read"},
		{"a registered tool_search", append([]ToolSpec{spec("tool_search", "ext", 10)}, all...), 4000, 0, nil, "tool_search read mcp__t__list_issues mcp__t__get_issue greet"},
		{"loaded by name, without the prefix", all, 4000, 0, []Message{call("tool_search", `{"names": ["LIST_ISSUES"]}`)}, "read mcp__t__list_issues tool_search"},
		{"loaded by words", all, 4000, 0, []Message{call("tool_search", `{"query": "greet someone"}`)}, "read greet tool_search"},
		{"called without loading", all, 4000, 0, []Message{call("mcp__t__get_issue", `{}`)}, "read mcp__t__get_issue tool_search"},
		{"arguments that ask for nothing", all, 4000, 0, []Message{call("tool_search", `{"names": 3}`)}, "read tool_search"},
	} {
		p := planTools(c.tools, c.window, c.share, c.msgs)
		if got := names(p.send); got != c.send {
			t.Errorf("%s: sends %q, want %q", c.name, got, c.send)
		}
	}
	p := planTools(all, 4000, 0, []Message{call("tool_search", `{"names": ["greet"]}`)})
	desc := p.send[len(p.send)-1].Description
	for _, want := range []string{"\n- mcp__t__list_issues: dddd", "\n- greet (loaded): dddd"} {
		if !strings.Contains(desc, want) {
			t.Errorf("tool_search's list lacks %q:\n%s", want, truncate(desc, 600))
		}
	}
}

// A trusted project's 14-tool MCP server against a 2,048-token context:
// the first request carries zot's tools whole and the server's as
// tool_search's list; the model loads one, it goes whole in the next
// request, and the call runs on the server. With the search off the
// first request carries all fourteen.
func TestToolSearchAtASmallContext(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	srv := startReplay(t,
		replayStep{Events: localEvents(900, gen{ToolID: "s1", ToolName: "tool_search", ToolArgs: `{"names": ["list_issues"]}`})},
		replayStep{Events: localEvents(1100, gen{ToolID: "c1", ToolName: "mcp__tracker__list_issues", ToolArgs: `{"project": "CORE", "state": "open"}`})},
		replayStep{Events: localEvents(1200, gen{Text: "CORE has no open issues."})})
	z := newZotRun(t)
	script, _ := filepath.Abs("testdata/mcp/tracker_server.py")
	writeFile(t, filepath.Join(z.cwd, ".mcp.json"), fmt.Sprintf(`{"mcpServers": {"tracker": {"command": "python3", "args": ["-S", %q, %q]}}}`, script, state), 0o644)
	writeModelsFile(t, z.home, `{"providers": {"openai": {"models": [{"id": "local", "contextWindow": 2048}]}}}`)
	stdout, stderr, code := z.run(append(localFlags(srv), "--trust-project", "-p", "list the open issues of CORE")...)
	if code != 0 || stdout != "CORE has no open issues.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	reqs := srv.Requests()
	first, second := requestTools(t, reqs[0]), requestTools(t, reqs[1])
	if first["read"] == "" || first["tool_search"] == "" || first["mcp__tracker__list_issues"] != "" || len(first) != 6 {
		t.Errorf("first request's tools: %v", keys(first))
	}
	if !strings.Contains(first["tool_search"], "\n- mcp__tracker__list_issues: List the issues of a project, newest first, filtered by state, assignee or label.") {
		t.Errorf("tool_search's description:\n%s", first["tool_search"])
	}
	if second["mcp__tracker__list_issues"] == "" || second["mcp__tracker__create_issue"] != "" || len(second) != 7 {
		t.Errorf("second request's tools: %v", keys(second))
	}
	if calls := readState(state, "calls"); !strings.Contains(calls, `"arguments": {"project": "CORE", "state": "open"}, "name": "list_issues"`) {
		t.Errorf("the server's calls: %q", calls)
	}

	srv = startReplay(t, replayStep{Events: localEvents(900, gen{Text: "ok"})})
	writeFile(t, filepath.Join(z.home, "config.json"), `{"tool_search_threshold": 1}`, 0o600)
	if _, stderr, code := z.run(append(localFlags(srv), "--trust-project", "-p", "hi")...); code != 0 || len(requestTools(t, srv.Requests()[0])) != 19 {
		t.Errorf("search off: exit %d, stderr %s, tools %v", code, stderr, keys(requestTools(t, srv.Requests()[0])))
	}
	if len(reqs[0].Body) > len(srv.Requests()[0].Body)*2/3 {
		t.Errorf("with tool search the first request is %d bytes, without %d", len(reqs[0].Body), len(srv.Requests()[0].Body))
	}

	// The server's refusal names what filled the request and what shrinks it.
	srv = startReplay(t, replayStep{Status: 400, Body: recordedBody(t, "llama-server/overflow_stream.sse")})
	_, stderr, code = z.run(append(localFlags(srv), "--trust-project", "-p", "hi")...)
	filled := regexp.MustCompile(`zot sent about \d+ tokens: system prompt \d+, tools \d+ \(built-in \d+, MCP server tracker \d+\), conversation \d+; start llama-server with a larger --ctx-size`)
	if code != 1 || !filled.MatchString(stderr) || !strings.Contains(stderr, "--tools with only the tools the task needs") ||
		!strings.Contains(stderr, "--no-mcp") || !strings.Contains(stderr, `a lower "tool_search_threshold" in config.json`) {
		t.Errorf("overflow: exit %d, stderr %s", code, stderr)
	}
}

// requestTools are a Chat Completions request's tools: name to
// description.
func requestTools(t *testing.T, r capturedRequest) map[string]string {
	t.Helper()
	var body struct {
		Tools []struct {
			Function struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tl := range body.Tools {
		out[tl.Function.Name] = tl.Function.Description
	}
	return out
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
