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
