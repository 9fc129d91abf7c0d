package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// tuiClocks are the durations the TUI shows (a run's, a thought's, a
// tool's): they depend on the machine's speed, and nothing else does.
var tuiClocks = regexp.MustCompile(`\b(\d+m)?\d+(\.\d)?s\b`)

// tuiLiveTotals are the tokens and cost of the status bar while a run
// goes on: it reads them from the agent, which may be a turn ahead of the
// messages the UI loop has handled. Each turn of the reference
// conversation costs the same, so the figures of any turn are as wide and
// the row's layout does not change.
var tuiLiveTotals = regexp.MustCompile(`↑\d+ ↓\d+ · \$\d+\.\d+`)

// TestGoldenTUIFrames keeps what the terminal shows of the reference
// conversation. The prompt is typed into the TUI, whose agent runs it
// against the replay server with the real tools; each message the agent
// posts is handled as the UI loop handles it and drawn into the test's
// terminal emulator: no tmux, and nothing waits on a clock. A frame is
// the screen as each tool is called and as it returns; the last is the
// whole scrollback once the run is done.
func TestGoldenTUIFrames(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, referenceConversation()...)
	p, err := NewProvider(ProviderConfig{Name: "anthropic", BaseURL: srv.URL, APIKey: "test-key"})
	if err != nil {
		t.Fatal(err)
	}
	tui, v := newTestTUI(t, 80, 14)
	tui.agent.SetProvider(p, "claude-sonnet-4-5")
	tui.cfg.Cwd = "/src/notes" // the status bar shows it; a temporary name would change
	tui.input([]byte("make notes\r"), false)

	var frames strings.Builder
	for done := false; !done; {
		<-tui.wake
		tui.inboxMu.Lock()
		msgs := tui.inbox
		tui.inbox = nil
		tui.inboxMu.Unlock()
		for _, m := range msgs {
			tui.handle(m)
			tui.render()
			switch m := m.(type) {
			case msgEvent:
				if m.ev.Type == EventToolCall || m.ev.Type == EventToolResult {
					screen := tuiLiveTotals.ReplaceAllLiteralString(strings.Join(v.screen(), "\n"), "↑N ↓N · $N")
					fmt.Fprintf(&frames, "── screen after %s %s ──\n%s\n", m.ev.Type, m.ev.Name, screen)
				}
			case msgRunDone:
				if m.err != nil {
					t.Fatal(m.err)
				}
				done = true
			}
		}
	}
	fmt.Fprintf(&frames, "── scrollback and screen at the end ──\n%s\n", v.String())
	checkGolden(t, "tui_frames", tuiClocks.ReplaceAllLiteralString(frames.String(), "Ns"))
}
