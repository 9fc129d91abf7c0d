package main

import (
	"os"
	"path/filepath"
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

// A provider that keeps answering 529 fails the prompt after its retries;
// zot offers the other provider the user set up, and choosing it answers
// the same prompt there.
func TestTUIRescueAfterAProviderFailure(t *testing.T) {
	t.Parallel()
	needTmux(t)
	fail := startReplay(t, replayStep{Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`})
	ok := startReplay(t, replayStep{Events: openaiEvents(gen{Text: "Answered by the local server."})})
	z := newZotRun(t)
	if err := saveConfig(z.home, userConfig{Provider: "openai", Model: "qwen-local", BaseURL: ok.URL}); err != nil {
		t.Fatal(err)
	}
	tm := startTUI(t, z, "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--base-url", fail.URL, "--api-key", "k")
	tm.waitFor("/help for keys")
	tm.typeText("summarise the repo")
	tm.keys("Enter")
	screen := tm.waitFor("anthropic is unavailable")
	if !strings.Contains(screen, "HTTP 529") || !strings.Contains(screen, "openai/qwen-local") {
		t.Fatalf("no error or no rescue offered:\n%s", screen)
	}
	tm.keys("Enter")
	screen = tm.waitFor("Answered by the local server.")
	if !strings.Contains(screen, "↻ retrying with openai/qwen-local") || !strings.Contains(screen, "openai/qwen-local ·") {
		t.Errorf("screen:\n%s", screen)
	}
	if reqs := ok.Requests(); len(reqs) != 1 || strings.Count(string(reqs[0].Body), "summarise the repo") != 1 {
		t.Errorf("the local server got %d requests", len(reqs))
	}
	tm.exitAndCheck()
}

// /btw opens an overlay that answers from the conversation; esc closes
// it, and the next prompt's request carries nothing of the side exchange.
func TestTUIBtwSideQuestion(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(gen{Text: "The bug is in parse.go."})},
		replayStep{Events: anthropicEvents(gen{Text: "Side answer: it was parse.go."})},
		replayStep{Events: anthropicEvents(gen{Text: "Main thread goes on."})})
	z := newZotRun(t)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("find the bug")
	tm.keys("Enter")
	tm.waitFor("The bug is in parse.go.")
	tm.typeText("/btw which file was it?")
	tm.keys("Enter")
	screen := tm.waitFor("Side answer: it was parse.go.")
	if !strings.Contains(screen, "btw: a side question") || !strings.Contains(screen, "› which file was it?") {
		t.Errorf("no overlay:\n%s", screen)
	}
	tm.keys("Escape")
	screen = tm.waitScreen("the overlay closed", func(s string) bool { return !strings.Contains(s, "btw: a side question") })
	if strings.Contains(screen, "Side answer") || strings.Contains(screen, "which file was it?") {
		t.Errorf("the side exchange stayed in the transcript:\n%s", screen)
	}
	tm.typeText("go on")
	tm.keys("Enter")
	tm.waitFor("Main thread goes on.")
	if body := string(srv.Requests()[2].Body); strings.Contains(body, "which file") || strings.Contains(body, "Side answer") {
		t.Errorf("the main thread read the side exchange: %s", body)
	}
	tm.exitAndCheck()
}

// Under tmux, which passes no pictures through, an image the model reads
// and one attached with @path show as placeholders read from their bytes;
// a ZOT_INLINE_IMAGES zot does not know is reported.
func TestTUIImagePlaceholders(t *testing.T) {
	t.Parallel()
	needTmux(t)
	z := newZotRun(t)
	z.env = append(z.env, "ZOT_INLINE_IMAGES=sixel")
	if err := os.WriteFile(filepath.Join(z.cwd, "shot.png"), testImage(t, "png", 64, 48), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startReplay(t,
		toolStep("r1", "read", obj{"path": "shot.png"}),
		replayStep{Events: anthropicEvents(gen{Text: "A picture of noise."})})
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("ZOT_INLINE_IMAGES=sixel is not off, kitty or iterm")
	tm.typeText("what is in @shot.png")
	tm.keys("Enter")
	screen := tm.waitFor("A picture of noise.")
	if !strings.Contains(screen, "+ @shot.png [image PNG 64×48,") || strings.Count(screen, "[image PNG 64×48,") != 2 {
		t.Errorf("placeholders missing:\n%s", screen)
	}
	tm.exitAndCheck()
}
