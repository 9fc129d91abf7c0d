package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// localEvents is openaiEvents with the usage a server reports: prompt
// tokens, or none at all (promptTokens < 0), as llama-server without
// include_usage.
func localEvents(promptTokens int, blocks ...gen) []string {
	ev := openaiEvents(blocks...)
	usage := ev[len(ev)-2]
	if promptTokens < 0 {
		return append(ev[:len(ev)-2:len(ev)-2], ev[len(ev)-1])
	}
	ev[len(ev)-2] = strings.Replace(strings.Replace(usage, `"prompt_tokens":120`, `"prompt_tokens":`+itoa(promptTokens), 1), `"cached_tokens":20`, `"cached_tokens":0`, 1)
	return ev
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func localFlags(srv *replayServer) []string {
	return []string{"--provider", "openai", "--base-url", srv.URL + "/v1", "--model", "local"}
}

// chatText is the text of a Chat Completions request's messages.
func chatText(t *testing.T, r capturedRequest) string {
	t.Helper()
	var body struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range body.Messages {
		var s string
		json.Unmarshal(m.Content, &s)
		b.WriteString(s + "\n")
	}
	return b.String()
}

// llama-server's 400 overflow mid-task: zot compacts and asks again; a
// prompt alone too long for the context fails with one line that names
// the context and how to raise it.
func TestOverflowCompactsAndRetriesThenFailsInOneLine(t *testing.T) {
	t.Parallel()
	overflow := replayStep{Status: 400, Body: recordedBody(t, "llama-server/overflow_stream.sse")}
	read := func(id string) replayStep {
		return replayStep{Events: localEvents(300, gen{ToolID: id, ToolName: "read", ToolArgs: `{"path":"notes.txt"}`})}
	}
	srv := startReplay(t, read("t1"), read("t2"), read("t3"), overflow,
		replayStep{Events: localEvents(300, gen{Text: "- read notes.txt three times"})},
		replayStep{Events: localEvents(300, gen{Text: "The notes say hello."})})
	z := newZotRun(t)
	os.WriteFile(filepath.Join(z.cwd, "notes.txt"), []byte("hello"), 0o600)
	stdout, stderr, code := z.run(append(localFlags(srv), "--json", "read the notes")...)
	if code != 0 || !strings.Contains(stdout, `"type":"compact_done"`) || !strings.Contains(stdout, "The notes say hello.") {
		t.Fatalf("exit %d, stderr %s\n%s", code, stderr, truncate(stdout, 2000))
	}
	reqs := srv.Requests()
	if len(reqs) != 6 || !strings.Contains(chatText(t, reqs[4]), "Summarise the conversation above") || !strings.Contains(chatText(t, reqs[5]), "[Summary of the earlier conversation]") {
		t.Errorf("%d requests; the 5th should compact, the 6th start from the summary", len(reqs))
	}

	srv = startReplay(t, overflow)
	z = newZotRun(t)
	_, stderr, code = z.run(append(localFlags(srv), "-p", "summarise this")...)
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "exceeds the available context size (512 tokens)") ||
		!strings.Contains(stderr, "the server's context is 512 tokens") || !strings.Contains(stderr, "--ctx-size") || !strings.Contains(stderr, "the prompt alone does not fit") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func recordedBody(t *testing.T, stem string) string {
	_, _, body := recordedResponse(t, stem)
	return string(body)
}

// A tool call the output limit cut (llama-server's recording: arguments
// "{") is not run; the model is told it was cut.
func TestCutToolCallIsToldNotRun(t *testing.T) {
	t.Parallel()
	_, _, cut := recordedResponse(t, "llama-server/tools_auto_truncated_stream.sse")
	srv := startReplay(t, replayStep{Events: splitSSE(string(cut))}, replayStep{Events: localEvents(100, gen{Text: "ok"})})
	z := newZotRun(t)
	if _, stderr, code := z.run(append(localFlags(srv), "-p", "list")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	text := chatText(t, srv.Requests()[1])
	if !strings.Contains(text, "cut off at the output limit before its arguments were complete, so nothing ran") {
		t.Errorf("the model was told %q", text)
	}
	if lines := auditLines(t, z.home); len(lines) != 1 || lines[0].Outcome != "error" || lines[0].Tool != "list_dir" {
		t.Errorf("audit %+v", lines)
	}
}

// ollama cut the prompt without a word (its recording's 1026 prompt tokens
// of ~3700 sent): zot says so at once — an error event marked truncated,
// one stderr line in -p — and compacts before the next request.
func TestSilentTruncationIsReportedAndCompacted(t *testing.T) {
	t.Parallel()
	long := "Summarize: " + strings.Repeat("word1234 ", 1500)
	read := func(id string, prompt int) replayStep {
		return replayStep{Events: localEvents(prompt, gen{ToolID: id, ToolName: "read", ToolArgs: `{"path":"notes.txt"}`})}
	}
	srv := startReplay(t, read("t1", 4200), read("t2", 4300), read("t3", 1026),
		replayStep{Events: localEvents(300, gen{Text: "- read notes"})},
		replayStep{Events: localEvents(900, gen{Text: "done"})})
	z := newZotRun(t)
	z.stdin = long
	os.WriteFile(filepath.Join(z.cwd, "notes.txt"), []byte("hello"), 0o600)
	stdout, stderr, code := z.run(append(localFlags(srv), "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var warning struct {
		Message   string `json:"message"`
		Truncated bool   `json:"truncated"`
	}
	for _, line := range strings.Split(stdout, "\n") {
		if strings.Contains(line, `"type":"error"`) {
			json.Unmarshal([]byte(line), &warning)
		}
	}
	if !warning.Truncated || !strings.Contains(warning.Message, "read only 1026 of the about") || !strings.Contains(warning.Message, "compacts the conversation before the next request") {
		t.Errorf("warning %+v\n%s", warning, truncate(stdout, 2000))
	}
	reqs := srv.Requests()
	if len(reqs) != 5 || !strings.Contains(chatText(t, reqs[3]), "Summarise the conversation above") {
		t.Errorf("%d requests; the 4th should compact", len(reqs))
	}
	if i, j := strings.Index(stdout, `"truncated":true`), strings.Index(stdout, `"type":"compact_done"`); i < 0 || j < i {
		t.Errorf("the warning should come before the compaction:\n%s", truncate(stdout, 2000))
	}

	srv = startReplay(t, replayStep{Events: splitSSE(recordedBody(t, "ollama/overflow_v1_stream.sse"))})
	z = newZotRun(t)
	z.stdin = long
	stdout, stderr, code = z.run(append(localFlags(srv), "-p", "--no-tools")...)
	// The recorded answer stops at ollama's output limit too: it is
	// printed, and the run fails for it.
	if code != 1 || stdout == "" || strings.Count(stderr, "\n") != 2 || !strings.Contains(stderr, "zot: openai read only 1026 of the about") ||
		!strings.Contains(stderr, "\nzot: the model's answer is incomplete: the output limit cut it (stop: length, 16 output tokens)") {
		t.Errorf("-p: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// A server that reports no usage (llama-server without include_usage,
// gateways that strip it) still gets the conversation compacted: zot's
// own count fills the window.
func TestAutoCompactionWithoutUsage(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a line of a long file\n", 700) // ~3,900 tokens by zot's count
	srv := startReplay(t,
		replayStep{Events: localEvents(-1, gen{ToolID: "t1", ToolName: "read", ToolArgs: `{"path":"big.txt"}`})},
		replayStep{Events: localEvents(-1, gen{ToolID: "t2", ToolName: "read", ToolArgs: `{"path":"small.txt"}`})},
		replayStep{Events: localEvents(-1, gen{ToolID: "t3", ToolName: "read", ToolArgs: `{"path":"small.txt"}`})},
		replayStep{Events: localEvents(-1, gen{Text: "- read big.txt"})},
		replayStep{Events: localEvents(-1, gen{Text: "done"})})
	z := newZotRun(t)
	os.WriteFile(filepath.Join(z.cwd, "big.txt"), []byte(big), 0o600)
	os.WriteFile(filepath.Join(z.cwd, "small.txt"), []byte("x"), 0o600)
	writeModelsFile(t, z.home, `{"providers": {"openai": {"models": [{"id": "local", "contextWindow": 4096}]}}}`)
	stdout, stderr, code := z.run(append(localFlags(srv), "--json", "read")...)
	if code != 0 || !strings.Contains(stdout, `"type":"compact_done"`) || !strings.Contains(stdout, `"estimated":true`) {
		t.Fatalf("exit %d, stderr %s\n%s", code, stderr, truncate(stdout, 2000))
	}
}

// "tools": false gives the model its tools as text from the first request;
// the call it writes runs like a native one.
func TestToolsFalseDescribesTheToolsAsText(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		replayStep{Events: localEvents(900, gen{Text: "<tool_call>\n{\"name\": \"write\", \"arguments\": {\"path\": \"out.txt\", \"content\": \"hi\"}}\n</tool_call>"})},
		replayStep{Events: localEvents(900, gen{Text: "written"})})
	z := newZotRun(t)
	writeModelsFile(t, z.home, `{"providers": {"openai": {"models": [{"id": "local", "tools": false}]}}}`)
	stdout, stderr, code := z.run(append(localFlags(srv), "-p", "write it")...)
	if code != 0 || stdout != "written\n" || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(z.cwd, "out.txt")); string(b) != "hi" {
		t.Errorf("out.txt = %q", b)
	}
	reqs := srv.Requests()
	if strings.Contains(string(reqs[0].Body), `"tools":`) || !strings.Contains(chatText(t, reqs[0]), "## write") {
		t.Errorf("first request %s", reqs[0].Body)
	}
	if second := chatText(t, reqs[1]); !strings.Contains(second, "<tool_response>\n") || strings.Contains(string(reqs[1].Body), `"role":"tool"`) {
		t.Errorf("second request %s", reqs[1].Body)
	}
}
