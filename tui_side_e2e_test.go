package main

import (
	"strings"
	"testing"
)

// End-to-end tests, under tmux, of what the TUI does beside the main
// conversation: commands while the agent works, side questions, rescue
// after a provider failure (see tui_e2e_test.go for the harness).

// While a slow model streams, /help and /jail act at once and the answer
// goes on; /clear stops it, says so, and then clears.
func TestTUICommandsWhileTheAgentWorks(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(gen{Text: "The slow answer begins and then it stalls"}), HangAfter: 4},
		replayStep{Events: anthropicEvents(gen{Text: "A fresh answer."})})
	z := newZotRun(t)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("slow one")
	tm.keys("Enter")
	tm.waitFor("The slow answer")
	tm.typeText("/help")
	tm.keys("Enter")
	tm.waitFor("Commands")
	tm.typeText("/jail")
	tm.keys("Enter")
	screen := tm.waitFor("jail on:")
	if strings.Contains(screen, "■ aborted") || !strings.Contains(screen, "esc to stop") {
		t.Fatalf("a read-only command stopped the answer:\n%s", screen)
	}
	tm.typeText("/clear")
	tm.keys("Enter")
	screen = tm.waitFor("conversation cleared")
	stop, aborted, cleared := strings.Index(screen, "/clear: stopped the running turn first"), strings.Index(screen, "■ aborted"), strings.Index(screen, "conversation cleared")
	if stop < 0 || aborted < 0 || !(stop < cleared && aborted < cleared) {
		t.Errorf("/clear did not stop, say so, then clear:\n%s", screen)
	}
	tm.typeText("again")
	tm.keys("Enter")
	tm.waitFor("A fresh answer.")
	reqs := srv.Requests()
	if n := len(reqs); n != 2 || strings.Contains(string(reqs[1].Body), "slow one") {
		t.Errorf("%d requests; the one after /clear still carries the old prompt: %s", n, reqs[len(reqs)-1].Body)
	}
	tm.exitAndCheck()
}
