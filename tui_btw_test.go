package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestBtwAsksBesideTheConversationWhileTheAgentWorks: a side question
// asked while a prompt runs goes to the provider with the conversation
// and the side exchange so far; the running prompt goes on, and nothing
// of the exchange reaches the transcript or the session file.
func TestBtwAsksBesideTheConversationWhileTheAgentWorks(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(gen{Text: "main answer streams"}), HangAfter: 3},
		replayStep{Events: anthropicEvents(gen{Text: "It is **main.go**."})},
		replayStep{Events: anthropicEvents(gen{Text: "Line 12."}, gen{ToolID: "x", ToolName: "read", ToolArgs: `{"path":"main.go"}`})})
	tui, v := newTestTUI(t, 100, 40)
	p, _ := testProvider(t, "anthropic", srv.URL)
	tui.agent.Provider = p
	tui.swapSession(NewSession(tui.cfg.Home, tui.cfg.Cwd, "anthropic", "claude-sonnet-4-5"))
	tui.agent.SetMessages([]Message{
		{Role: RoleUser, Content: []Block{TextBlock("where is the bug?")}},
		{Role: RoleAssistant, Content: []Block{TextBlock("looking"), {Type: BlockToolCall, ID: "c1", Name: "read", Args: json.RawMessage(`{"path":"main.go"}`)}}},
		{Role: RoleUser, Content: []Block{{Type: BlockToolResult, CallID: "c1", Content: []Block{TextBlock("package main")}}}},
		{Role: RoleAssistant, Content: []Block{TextBlock("In main.go.")}},
	}, Usage{})
	tui.startPrompt(queuedPrompt{display: "fix it", text: "fix it"})
	handleUntil(t, tui, func(m any) bool { e, ok := m.(msgEvent); return ok && e.ev.Type == "text_delta" })
	before := tui.agent.Messages()
	sessionBefore, _ := os.ReadFile(tui.session.Path)

	tui.submitText("/btw which file?", "/btw which file?")
	handleUntil(t, tui, func(m any) bool { _, ok := m.(msgBtwDone); return ok })
	tui.input([]byte("and the line?\r"), false)
	handleUntil(t, tui, func(m any) bool { _, ok := m.(msgBtwDone); return ok })
	tui.render()
	screen := v.String()
	for _, want := range []string{"btw: a side question", "› which file?", "It is main.go.", "› and the line?", "Line 12.", "side questions run no tools"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the overlay lacks %q:\n%s", want, screen)
		}
	}
	if tui.run == nil || tui.run.aborted {
		t.Error("the side question stopped the running prompt")
	}
	reqs := srv.Requests()
	first, second := string(reqs[1].Body), string(reqs[2].Body)
	if !strings.Contains(first, "where is the bug?") || !strings.Contains(first, "fix it") || !strings.Contains(first, "which file?") || !strings.Contains(first, "side question") {
		t.Errorf("the side call lacks the conversation or the question: %s", first)
	}
	if !strings.Contains(second, "which file?") || !strings.Contains(second, "It is **main.go**.") || !strings.Contains(second, "and the line?") {
		t.Errorf("the second side call lacks the exchange so far: %s", second)
	}
	tui.input([]byte("\x1b"), true)
	if len(tui.dialogs) != 0 {
		t.Fatal("esc did not close the overlay")
	}
	stopRun(t, tui)
	after := tui.agent.Messages()
	for _, m := range after {
		if strings.Contains(m.Text(), "which file") || strings.Contains(m.Text(), "Line 12") {
			t.Errorf("the side exchange reached the transcript: %+v", m)
		}
	}
	if len(after) < len(before) {
		t.Errorf("the transcript lost messages: %d → %d", len(before), len(after))
	}
	sessionAfter, _ := os.ReadFile(tui.session.Path)
	if !strings.HasPrefix(string(sessionAfter), string(sessionBefore)) || strings.Contains(string(sessionAfter), "which file") {
		t.Errorf("the side exchange reached the session file:\n%s", sessionAfter)
	}
}

// TestBtwEscCancelsTheCallThenCloses: esc stops a side call in flight
// (the provider sees the request cancelled) and keeps the overlay; the
// next esc closes it.
func TestBtwEscCancelsTheCallThenCloses(t *testing.T) {
	t.Parallel()
	tui, v := newTestTUI(t, 100, 30)
	tui.agent.Provider = &hangProvider{"anthropic"}
	tui.cmdBtw("slow?")
	d := tui.dialogs[0].(*btwDialog)
	if !d.asking {
		t.Fatal("the question was not asked")
	}
	tui.input([]byte("\x1b"), true)
	handleUntil(t, tui, func(m any) bool { _, ok := m.(msgBtwDone); return ok })
	tui.render()
	if d.asking || len(tui.dialogs) != 1 || !strings.Contains(v.String(), "cancelled") {
		t.Fatalf("after esc: asking %v, %d dialogs:\n%s", d.asking, len(tui.dialogs), v.String())
	}
	tui.input([]byte("\x1b"), true)
	if len(tui.dialogs) != 0 {
		t.Error("the second esc did not close the overlay")
	}
}

// TestSideContextLeavesOutCallsWithoutResults: while the agent runs a
// tool, the transcript ends with its call; a provider would refuse that.
func TestSideContextLeavesOutCallsWithoutResults(t *testing.T) {
	t.Parallel()
	msgs := []Message{
		{Role: RoleUser, Content: []Block{TextBlock("go")}},
		{Role: RoleAssistant, Content: []Block{{Type: BlockToolCall, ID: "c", Name: "bash"}}},
	}
	if got := sideContext(msgs); len(got) != 1 || got[0].Role != RoleUser {
		t.Errorf("sideContext = %+v", got)
	}
	if got := sideContext(msgs[:1]); len(got) != 1 {
		t.Errorf("a prompt alone was cut: %+v", got)
	}
}
