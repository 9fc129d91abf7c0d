package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnavailableTellsProviderFailuresFromBadRequests calls a real
// provider client against servers that fail in each way: the provider's
// failures may be rescued by another provider, the request's may not.
func TestUnavailableTellsProviderFailuresFromBadRequests(t *testing.T) {
	t.Parallel()
	closed := startReplay(t, replayStep{})
	closedURL := closed.URL
	closed.Close()
	errBody := func(typ, msg string) string {
		b, _ := json.Marshal(obj{"type": "error", "error": obj{"type": typ, "message": msg}})
		return string(b)
	}
	for _, c := range []struct {
		name string
		step replayStep
		url  string
		want bool
	}{
		{"529 overloaded", replayStep{Status: 529, Body: errBody("overloaded_error", "busy")}, "", true},
		{"503", replayStep{Status: 503, Body: "unavailable"}, "", true},
		{"429 rate limit", replayStep{Status: 429, Body: errBody("rate_limit_error", "slow down")}, "", true},
		{"401 bad key", replayStep{Status: 401, Body: errBody("authentication_error", "invalid x-api-key")}, "", true},
		{"403", replayStep{Status: 403, Body: errBody("permission_error", "no")}, "", true},
		{"overloaded inside the stream", replayStep{Events: []string{sseEventText("error", obj{"type": "error", "error": obj{"type": "overloaded_error", "message": "Overloaded"}})}}, "", true},
		{"dropped connection", replayStep{Events: anthropicEvents(gen{Text: "cut off in the middle"}), DropAfter: 3}, "", true},
		{"connection refused", replayStep{}, closedURL, true},
		{"400 bad request", replayStep{Status: 400, Body: errBody("invalid_request_error", "messages: field required")}, "", false},
		{"400 context length", replayStep{Status: 400, Body: errBody("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")}, "", false},
		{"404 no such model", replayStep{Status: 404, Body: errBody("not_found_error", "model: nope")}, "", false},
		{"413 too large", replayStep{Status: 413, Body: errBody("request_too_large", "too large")}, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := c.url
			if url == "" {
				url = startReplay(t, c.step).URL
			}
			p, err := NewProvider(ProviderConfig{Name: "anthropic", BaseURL: url, APIKey: "k", Retries: -1})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Stream(context.Background(), Request{Model: "claude-sonnet-4-5", Messages: []Message{{Role: RoleUser, Content: []Block{TextBlock("hi")}}}}, func(StreamEvent) {})
			if err == nil {
				t.Fatal("the call did not fail")
			}
			if got := Unavailable(err); got != c.want {
				t.Errorf("Unavailable(%v) = %v, want %v", err, got, c.want)
			}
		})
	}
	if Unavailable(context.Canceled) || Unavailable(nil) {
		t.Error("an abort is not the provider's failure")
	}
}

// rescueTUI is a TUI whose anthropic provider answers with failStep, and
// whose config.json remembers an OpenAI-compatible server (ok) with a
// model: the other provider a rescue can switch to.
func rescueTUI(t *testing.T, failStep replayStep) (*TUI, *vt, *replayServer, *replayServer) {
	t.Helper()
	tui, v := newTestTUI(t, 120, 30)
	fail := startReplay(t, failStep)
	ok := startReplay(t, replayStep{Events: openaiEvents(gen{Text: "Rescued answer."})})
	p, _ := testProvider(t, "anthropic", fail.URL)
	tui.agent.Provider = p
	if err := saveConfig(tui.cfg.Home, userConfig{Provider: "openai", Model: "local-coder", BaseURL: ok.URL}); err != nil {
		t.Fatal(err)
	}
	return tui, v, fail, ok
}

// TestRescueRetriesTheFailedPromptWithAnotherProvider: a prompt that
// failed with 529 after the retries offers the other provider's models,
// the one used last first; choosing it asks that provider once, from the
// transcript as it was, and the prompt is in the conversation once.
func TestRescueRetriesTheFailedPromptWithAnotherProvider(t *testing.T) {
	t.Parallel()
	tui, v, fail, ok := rescueTUI(t, replayStep{Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`})
	tui.startPrompt(queuedPrompt{display: "fix the bug", text: "fix the bug"})
	tui.queue = []queuedPrompt{{display: "queued after", text: "queued after"}}
	handleUntil(t, tui, func(m any) bool { _, ok := m.(msgRunDone); return ok })
	tui.render()
	if len(fail.Requests()) != 4 {
		t.Errorf("the failing provider was asked %d times, want 1 and 3 retries", len(fail.Requests()))
	}
	if len(tui.dialogs) != 1 || tui.run != nil || len(tui.queue) != 1 {
		t.Fatalf("after the failure: %d dialogs, run %v, %d queued", len(tui.dialogs), tui.run, len(tui.queue))
	}
	pick := tui.dialogs[0].(*pickerDialog)
	if !strings.Contains(pick.title, "anthropic is unavailable") || !strings.HasPrefix(pick.items[0], "openai/local-coder") {
		t.Fatalf("picker %q: %q", pick.title, pick.items)
	}
	for _, it := range pick.items {
		if strings.HasPrefix(it, "anthropic/") {
			t.Errorf("the failed provider is offered: %q", it)
		}
	}
	tui.input([]byte("\r"), false)
	handleUntil(t, tui, func(m any) bool { d, ok := m.(msgRunDone); return ok && d.err == nil })
	tui.render()
	if tui.provider != "openai" || tui.agent.CurrentModel() != "local-coder" {
		t.Errorf("now on %s/%s", tui.provider, tui.agent.CurrentModel())
	}
	reqs := ok.Requests()
	if len(reqs) < 1 || strings.Count(string(reqs[0].Body), "fix the bug") != 1 {
		t.Fatalf("the rescuing provider got %d requests: %s", len(reqs), reqs)
	}
	msgs := tui.agent.Messages()
	if msgs[0].Text() != "fix the bug" || msgs[1].Text() != "Rescued answer." {
		t.Errorf("transcript: %+v", msgs)
	}
	s := v.String()
	for _, want := range []string{"HTTP 529", "↻ retrying with openai/local-coder", "Rescued answer."} {
		if !strings.Contains(s, want) {
			t.Errorf("the screen lacks %q:\n%s", want, s)
		}
	}
	// The queued prompt waited for the choice, then ran.
	handleUntil(t, tui, func(m any) bool { _, ok := m.(msgRunDone); return ok })
	if n := len(ok.Requests()); n != 2 || !strings.Contains(string(ok.Requests()[1].Body), "queued after") {
		t.Errorf("the queued prompt did not run after the rescue: %d requests", n)
	}
	var cfg userConfig
	b, _ := os.ReadFile(filepath.Join(tui.cfg.Home, "config.json"))
	if json.Unmarshal(b, &cfg); cfg.Model != "local-coder" {
		t.Errorf("config.json changed: %s", b)
	}
}

// TestRescueIsNotOfferedForBadRequestsOrAborts: a failure another
// provider would share stays a plain error; so does a stop.
func TestRescueIsNotOfferedForBadRequestsOrAborts(t *testing.T) {
	t.Parallel()
	tui, v, _, ok := rescueTUI(t, replayStep{Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 300000 tokens > 200000 maximum"}}`})
	tui.startPrompt(queuedPrompt{display: "big", text: "big"})
	handleUntil(t, tui, func(m any) bool { _, ok := m.(msgRunDone); return ok })
	tui.render()
	if len(tui.dialogs) != 0 || !strings.Contains(v.String(), "prompt is too long") {
		t.Errorf("%d dialogs after a bad request:\n%s", len(tui.dialogs), v.String())
	}

	tui.agent.Provider = &hangProvider{"anthropic"}
	tui.startPrompt(queuedPrompt{display: "stop me", text: "stop me"})
	handleUntil(t, tui, func(m any) bool { e, ok := m.(msgEvent); return ok && e.ev.Type == "assistant_start" })
	stopRun(t, tui)
	if len(tui.dialogs) != 0 || len(ok.Requests()) != 0 {
		t.Errorf("an abort offered a rescue: %d dialogs, %d requests", len(tui.dialogs), len(ok.Requests()))
	}
}
