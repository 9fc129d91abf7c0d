package main

import (
	"net/http"
	"strings"
	"testing"
)

// overloaded529 is Anthropic's answer when it is overloaded, asking for a
// retry after secs seconds.
func overloaded529(secs string) replayStep {
	return replayStep{Status: 529, Header: http.Header{"Retry-After": {secs}},
		Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}
}

const overloadedReason = `anthropic: HTTP 529: overloaded_error: Overloaded`

// A retry is visible in every mode: a retry event in --json and rpc
// (between assistant_start and the answer), a line on stderr with -p.
func TestRetriesAreEventsAndStderrLines(t *testing.T) {
	t.Parallel()
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		srv := startReplay(t, overloaded529("0"), replayStep{Events: anthropicEvents(gen{Text: "after the retry"})})
		stdout, stderr, code := newZotRun(t).run(append(anthropicFlags(srv), "--json", "hi")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var retry string
		for _, line := range strings.Split(stdout, "\n") {
			if strings.Contains(line, `"type":"retry"`) {
				retry = line
			}
		}
		if !strings.HasPrefix(retry, `{"type":"retry","attempt":2,"attempts":4,"wait_ms":`) || !strings.HasSuffix(retry, `,"error":"`+overloadedReason+`"}`) {
			t.Errorf("retry event %q in:\n%s", retry, stdout)
		}
		if i, j := strings.Index(stdout, `"type":"assistant_start"`), strings.Index(stdout, `"type":"retry"`); i < 0 || j < i || !strings.Contains(stdout[j:], "after the retry") {
			t.Errorf("events out of order:\n%s", stdout)
		}
	})
	t.Run("print", func(t *testing.T) {
		t.Parallel()
		srv := startReplay(t, overloaded529("0"), replayStep{Events: anthropicEvents(gen{Text: "after the retry"})})
		stdout, stderr, code := newZotRun(t).run(append(anthropicFlags(srv), "-p", "hi")...)
		if code != 0 || stdout != "after the retry\n" || !strings.Contains(stderr, "zot: retrying in ") ||
			!strings.Contains(stderr, " (attempt 2 of 4): "+overloadedReason+"\n") {
			t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
		}
	})
	t.Run("rpc", func(t *testing.T) {
		t.Parallel()
		srv := startReplay(t, overloaded529("0"), replayStep{Events: anthropicEvents(gen{Text: "after the retry"})})
		p := startRPCProc(t, newZotRun(t), append([]string{"rpc"}, anthropicFlags(srv)...)...)
		p.send(`{"id":"p","type":"prompt","message":"hi"}`)
		events := p.until(isType("done"))
		if got := eventTypesWithResponses(events); !strings.Contains(got, "assistant_start retry text_delta") {
			t.Errorf("events: %s", got)
		}
		for _, e := range events {
			if e.Type == "retry" && !strings.HasPrefix(e.Raw, `{"type":"retry","attempt":2,"attempts":4,"wait_ms":`) {
				t.Errorf("retry event: %s", e.Raw)
			}
		}
	})
}
