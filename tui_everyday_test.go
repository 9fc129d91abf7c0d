package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Renderer-level tests of the everyday pieces of issue 38: /logout's
// answers, the slash commands that describe the session, history search,
// notifications and !commands, each through the TUI's own loop functions
// into an emulated terminal.

func TestLogoutWithoutASavedKeySaysNothingWasRemoved(t *testing.T) {
	t.Parallel()
	tui, v := newTestTUI(t, 100, 20)
	tui.command("logout", "openai")
	tui.render()
	if s := flatText(v); strings.Contains(s, "removed the") || !strings.Contains(s, "holds no openai key; nothing removed") {
		t.Errorf("/logout with no auth.json:\n%s", s)
	}
	if err := saveAuthKey(tui.cfg.Home, "openai", "sk-o"); err != nil {
		t.Fatal(err)
	}
	tui.command("logout", "openai")
	tui.render()
	if s := flatText(v); !strings.Contains(s, "removed the openai key from") {
		t.Errorf("/logout with a saved key:\n%s", s)
	}
	if a, err := loadAuth(tui.cfg.Home); err != nil || a["openai"].APIKey != "" {
		t.Errorf("the key is still there: %v %v", a, err)
	}
}

// flatText is everything the terminal shows, scrollback too, as one line
// of words: what wraps where does not matter to the test.
func flatText(v *vt) string { return strings.Join(strings.Fields(v.String()), " ") }

func TestApprovalSaysAModelsTimeoutIsCapped(t *testing.T) {
	t.Parallel()
	rows := func(args string) string {
		return strings.Join(strings.Fields(plain(strings.Join(callRows(ToolCall{Name: ToolBash, Args: json.RawMessage(args)}, 100), "\n"))), " ")
	}
	if s := rows(`{"command":"make","timeout":7402722194037851}`); !strings.Contains(s, "timeout: 7402722194037851 (above the maximum: the command is stopped after 600s)") {
		t.Errorf("a timeout above the maximum:\n%s", s)
	}
	if s := rows(`{"command":"make","timeout":600}`); !strings.Contains(s, "timeout: 600") || strings.Contains(s, "maximum") {
		t.Errorf("a timeout within the maximum:\n%s", s)
	}
}

func TestStatusAndCostDescribeTheSession(t *testing.T) {
	t.Parallel()
	tui, v := newTestTUI(t, 120, 40)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "hi there"})})
	tui.agent.Provider, _ = testProvider(t, "anthropic", srv.URL)
	tui.startPrompt(queuedPrompt{display: "hello", text: "hello"})
	handleUntil(t, tui, func(m any) bool { _, ok := m.(msgRunDone); return ok })
	total, _ := tui.agent.Totals()
	if total.Input == 0 || total.CostUSD == 0 {
		t.Fatalf("the recorded stream reported no usage: %+v", total)
	}
	tui.command("cost", "")
	tui.render()
	s := flatText(v)
	for _, want := range []string{fmt.Sprintf("input %d tokens", total.Input), fmt.Sprintf("output %d tokens", total.Output), fmt.Sprintf("cost $%.4f", total.CostUSD), "of 200000 tokens"} {
		if !strings.Contains(s, want) {
			t.Errorf("/cost lacks %q:\n%s", want, s)
		}
	}
	tui.command("status", "")
	tui.render()
	s = flatText(v)
	for _, want := range []string{"model anthropic/claude-sonnet-4-5", "directory " + tui.cfg.Cwd, "session none (--no-session)", "sandbox off: commands run with your rights, unconfined", "jail off"} {
		if !strings.Contains(s, want) {
			t.Errorf("/status lacks %q:\n%s", want, s)
		}
	}
}
