package main

import (
	"strings"
	"testing"
)

// What a newcomer to a local server hit in the first hour (issue 37),
// each replayed against the built binary.

// cutAtLimit makes a stream's finish reason "length": the output limit
// cut the reply (a tool call's arguments stop where it fell).
func cutAtLimit(events []string) []string {
	out := append([]string(nil), events...)
	for i, e := range out {
		out[i] = strings.Replace(strings.Replace(e, `"finish_reason":"tool_calls"`, `"finish_reason":"length"`, 1), `"finish_reason":"stop"`, `"finish_reason":"length"`, 1)
	}
	return out
}

// A call the output limit cut goes back to the server with {} for its
// arguments; zot counts what it sent, so the server's smaller count of the
// next prompt is no cut conversation (it was "openai read only 913 of the
// about 2311 prompt tokens zot sent", after every such turn).
func TestCutCallIsNoFalseCutAlarm(t *testing.T) {
	t.Parallel()
	args := `{"path":"a.go","content":"` + strings.Repeat("package main // more ", 600) // ~12,600 bytes, never closed
	srv := startReplay(t,
		replayStep{Events: cutAtLimit(localEvents(900, gen{ToolID: "c1", ToolName: "write", ToolArgs: args}))},
		replayStep{Events: localEvents(960, gen{Text: "I will write it in parts."})})
	z := newZotRun(t)
	stdout, stderr, code := z.run(append(localFlags(srv), "--json", "write a.go")...)
	if code != 0 || strings.Contains(stdout, "read only") || !strings.Contains(stdout, "write it in parts") {
		t.Fatalf("exit %d, stderr %s\n%s", code, stderr, truncate(stdout, 3000))
	}
	if second := string(srv.Requests()[1].Body); !strings.Contains(second, `"arguments":"{}"`) {
		t.Errorf("the cut call's arguments went back: %s", truncate(second, 2000))
	}
}

// An answer that never came — ollama's Go template swallowed the tool
// calls of a looping model until its output limit, so the reply is empty
// with done_reason "length" — is a failure in -p and --json: one stderr
// line and exit 1, not silence and exit 0. An answer the limit cut is
// printed, and fails the same way.
func TestEmptyOrCutFinalAnswerFailsTheRun(t *testing.T) {
	t.Parallel()
	rs := startRecorded(t, map[string][]string{
		"GET /api/version": {"ollama/api_version.json"},
		"POST /api/show":   {"ollama/api_show_tiny.json"},
		"POST /api/chat":   {"ollama/api_chat_tools_stream.ndjson"},
	})
	flags := []string{"--provider", "ollama", "--base-url", rs.URL, "--model", "tiny"}
	z := newZotRun(t)
	stdout, stderr, code := z.run(append(flags, "-p", "add a test")...)
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "zot: the model's answer is empty: the output limit came before any text (stop: length, 200 output tokens)") {
		t.Errorf("-p: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	stdout, stderr, code = z.run(append(flags, "--json", "add a test")...)
	if code != 1 || !strings.Contains(stdout, `{"type":"error","message":"the model's answer is empty`) || !strings.Contains(stderr, "answer is empty") {
		t.Errorf("--json: exit %d, stderr %q\n%s", code, stderr, stdout)
	}

	srv := startReplay(t, replayStep{Events: cutAtLimit(localEvents(100, gen{Text: "The first half of the answer"}))})
	stdout, stderr, code = newZotRun(t).run(append(localFlags(srv), "-p", "explain")...)
	if code != 1 || stdout != "The first half of the answer\n" || !strings.Contains(stderr, "the model's answer is incomplete: the output limit cut it (stop: length, 30 output tokens)") {
		t.Errorf("cut answer: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
