package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// End-to-end tests, through the built binary under tmux, of what a user
// new to zot trips on: stopping and leaving, retries, trust, the first
// run without a key, folded results.

// waitIdle waits until no spinner is on screen: the agent's run is over
// (the UI loop has handled its end), and no command is pending.
func (tm *tmuxTerm) waitIdle() string {
	tm.t.Helper()
	return tm.waitScreen("the agent to be idle", func(s string) bool {
		return !strings.ContainsAny(s, strings.Join(spinnerFrames, ""))
	})
}

// After an answer, ctrl+c on the idle, empty editor says "press ctrl+c
// again to exit" and leaves nothing; once the window passed the hint goes
// and a ctrl+c asks again. How long the windows last (and that ctrl+c
// mashed as the answer ends does not leave) is TestCtrlCDuringARunOnlyStops',
// on a clock it sets: here a loaded machine may take seconds between two
// keys, so no assertion rests on a key's timing.
func TestTUICtrlCAsTheAnswerEndsDoesNotExit(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "A quick answer."})})
	z := newZotRun(t)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("be quick")
	tm.keys("Enter")
	tm.waitFor("A quick answer.")
	tm.waitIdle()
	tm.keys("C-c") // in the grace it is dropped, after it it arms: neither leaves
	tm.typeText("still here")
	screen := tm.waitFor("› still here")
	if strings.Contains(screen, "[zot exited]") || strings.Contains(screen, ctrlCExitHint) {
		t.Fatalf("ctrl+c as the answer ended left or kept the exit armed:\n%s", screen)
	}
	tm.keys("C-u", "C-c")
	tm.waitFor(ctrlCExitHint)
	tm.waitScreen("the exit hint to expire", func(s string) bool { return !strings.Contains(s, ctrlCExitHint) })
	tm.keys("C-c")
	tm.waitFor(ctrlCExitHint)
	if s := tm.screen(); strings.Contains(s, "[zot exited]") {
		t.Fatalf("a ctrl+c after the window left zot:\n%s", s)
	}
	// One write: the second press is in the window, or (the machine slow)
	// the first re-arms and the second leaves; either way zot exits.
	tm.keys("C-c", "C-c")
	tm.checkExit(0)
}

// A prompt sent right after a ctrl+c stopped the run, while the stopped
// run still winds down, runs once it has: it is not left queued.
func TestTUIPromptSentRightAfterAStopRuns(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(gen{Text: "The answer begins here and then the model stalls forever"}), HangAfter: 4},
		replayStep{Events: anthropicEvents(gen{Text: "Second answer."})})
	z := newZotRun(t)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("go slow")
	tm.keys("Enter")
	tm.waitFor("The answer")
	// One write: the prompt arrives before the stopped run has ended.
	tm.keys("C-c", "again", "Enter")
	screen := tm.waitFor("Second answer.")
	if !strings.Contains(screen, "› again") || strings.Contains(screen, "queued") {
		t.Errorf("screen:\n%s", screen)
	}
	tm.exitAndCheck()
}

// While the provider retries an overloaded model, the live region says
// so, counting down, with the attempt and the reason; ctrl+c stops the
// wait and the line goes with it. The server asks for a long wait (zot
// caps it at 30 s), so the countdown stays on screen on a slow machine;
// a retry that completes is TestRetriesAreEventsAndStderrLines'.
func TestTUIShowsRetries(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t, overloaded529("600"), replayStep{Events: anthropicEvents(gen{Text: "Answered the next prompt."})})
	z := newZotRun(t)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("hello")
	tm.keys("Enter")
	tm.waitScreen("the retry's countdown", func(s string) bool {
		return strings.Contains(s, "s (attempt 2 of 4): "+overloadedReason) && strings.Contains(s, "retrying in ")
	})
	tm.keys("C-c")
	screen := tm.waitFor("■ aborted")
	if strings.Contains(screen, "retrying in") {
		t.Errorf("the retry line outlived the stopped retry:\n%s", screen)
	}
	tm.typeText("again")
	tm.keys("Enter")
	tm.waitFor("Answered the next prompt.")
	tm.exitAndCheck()
}

// The shipped examples that open panels take their keys in the real TUI:
// todo-py's up, down, enter, d and q, the clock's q. (Keys reach a panel
// as docs/extensions.md says: a character as key "rune".)
func TestTUIExamplePanelsTakeTheirKeys(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	t.Run("todo-py", func(t *testing.T) {
		t.Parallel()
		z := newZotRun(t)
		tm := startTUI(t, z, append(anthropicFlags(srv), "--ext", exampleExt(t, "todo-py"))...)
		tm.waitFor("/help for keys")
		for _, item := range []string{"water the plants", "call mum"} {
			tm.typeText("/todo add " + item)
			tm.keys("Enter")
			tm.waitFor("┃ added")
		}
		tm.typeText("/todo")
		tm.keys("Enter")
		tm.waitFor("│ > 1. [ ] water the plants")
		tm.keys("Down")
		tm.waitFor("│ > 2. [ ] call mum")
		tm.keys("Enter")
		tm.waitFor("│ > 2. [x] call mum")
		tm.keys("Up")
		tm.waitFor("│ > 1. [ ] water the plants")
		tm.typeText("d")
		tm.waitScreen("d to delete the first item", func(s string) bool {
			return strings.Contains(s, "│ > 1. [x] call mum") && !strings.Contains(s, "water the plants │")
		})
		tm.typeText("q")
		tm.waitScreen("q to close the panel", func(s string) bool { return !strings.Contains(s, "q closes") })
		tm.exitAndCheck()
	})
	t.Run("clock", func(t *testing.T) {
		t.Parallel()
		z := newZotRun(t)
		tm := startTUI(t, z, append(anthropicFlags(srv), "--ext", exampleExt(t, "clock"))...)
		tm.waitFor("/help for keys")
		tm.typeText("/clock live")
		tm.keys("Enter")
		tm.waitFor("q or esc closes")
		tm.typeText("q")
		tm.waitScreen("q to close the panel", func(s string) bool { return !strings.Contains(s, "q or esc closes") })
		tm.exitAndCheck()
	})
}

// /model saves what the user chose in it and says so; a --base-url given
// for this run stays this run's, and the base URL config.json had for the
// provider is kept.
func TestTUIModelSavesOnlyWhatWasChosen(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "Answered by the flag's server."})})
	for _, saved := range []string{"", "http://saved.example"} {
		z := newZotRun(t)
		if saved != "" {
			os.WriteFile(filepath.Join(z.home, "config.json"), []byte(`{"provider":"anthropic","base_url":"`+saved+`","claude_hooks":false}`), 0o600)
		}
		tm := startTUI(t, z, anthropicFlags(srv)...)
		tm.waitFor("/help for keys")
		tm.typeText("/model claude-haiku-4-5")
		tm.keys("Enter")
		tm.waitFor("model: anthropic/claude-haiku-4-5")
		want := "saved anthropic/claude-haiku-4-5 as the default; --base-url is this run's, not saved"
		if saved != "" {
			want = "saved anthropic/claude-haiku-4-5 as the default with the base URL saved before; --base-url is this run's, not saved"
		}
		tm.waitFor(want)
		var cfg map[string]any
		b, _ := os.ReadFile(filepath.Join(z.home, "config.json"))
		json.Unmarshal(b, &cfg)
		wantCfg := map[string]any{"provider": "anthropic", "model": "claude-haiku-4-5"}
		if saved != "" {
			wantCfg["base_url"], wantCfg["claude_hooks"] = saved, false
		}
		if !reflect.DeepEqual(cfg, wantCfg) {
			t.Errorf("config.json = %s, want %v", b, wantCfg)
		}
		tm.typeText("hello")
		tm.keys("Enter")
		tm.waitFor("Answered by the flag's server.") // the run still uses its --base-url
		tm.exitAndCheck()
	}
}

// ctrl+o shows the last folded result whole, and pressed again the one
// before, skipping results shown whole; past the first it says so. A
// command's result is folded to its last lines, and every finished tool
// says how long it ran.
func TestTUICtrlOStepsBackThroughFoldedResults(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "printf 'alpha-%d\\n' $(seq 1 10)"}),
		toolStep("t2", "bash", obj{"command": "echo short"}),
		toolStep("t3", "bash", obj{"command": "printf 'beta-%d\\n' $(seq 1 8)"}),
		replayStep{Events: anthropicEvents(gen{Text: "Three commands ran."})})
	z := newZotRun(t)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("run three")
	tm.keys("Enter")
	screen := tm.waitFor("Three commands ran.")
	// A command's preview is its tail, and says how long it ran.
	if strings.Contains(screen, "alpha-2") || strings.Contains(screen, "beta-2") || !strings.Contains(screen, "│ alpha-10") ||
		!regexp.MustCompile(`✓ bash  echo short  \d+\.\ds`).MatchString(screen) {
		t.Fatalf("the results were not folded to their tails, with run times:\n%s", screen)
	}
	tm.keys("C-o")
	screen = tm.waitFor("in full: folded result 2 of 2 (ctrl+o again: the one before)")
	if !strings.Contains(screen, "│ beta-2") {
		t.Errorf("the last folded result is not whole:\n%s", screen)
	}
	tm.keys("C-o")
	screen = tm.waitFor("in full: folded result 1 of 2")
	if !strings.Contains(screen, "│ alpha-2") {
		t.Errorf("the first folded result is not whole:\n%s", screen)
	}
	tm.keys("C-o")
	tm.waitFor("that was the first folded result")
	tm.exitAndCheck()
}

// "Continue without them" in the trust dialog is remembered for exactly
// the programs shown: the next session does not ask (and says why nothing
// runs), a changed program asks again, and zot trust --revoke forgets the
// answer.
func TestTUITrustNotNowIsRememberedUntilTheProgramsChange(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	z := newZotRun(t)
	layTrustFixture(t, z.cwd)
	args := append(anthropicFlags(srv), "--claude-hooks")
	answer := func(keys ...string) {
		t.Helper()
		tm := startTUI(t, z, args...)
		tm.waitFor("continue without them")
		tm.keys(keys...)
		tm.waitFor("will not ask again until they change")
		tm.exitAndCheck()
	}
	answer("Enter")
	tm := startTUI(t, z, args...)
	screen := tm.waitFor("you chose to continue without them")
	if strings.Contains(screen, "trust this directory and run them") {
		t.Errorf("asked again:\n%s", screen)
	}
	tm.exitAndCheck()
	if m := markers(z.cwd); len(m) > 0 {
		t.Errorf("programs ran after \"continue without them\": %v", m)
	}
	if out, _, code := z.run("trust", "--list"); code != 0 || !strings.Contains(out, "continued without its programs") {
		t.Errorf("zot trust --list: exit %d\n%s", code, out)
	}

	// A changed hook is a set the user has not seen.
	os.WriteFile(filepath.Join(z.cwd, ".claude", "settings.json"), []byte(`{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "sh ./mark.sh hook; true"}]}]}}`), 0o644)
	answer("Escape")

	if out, _, code := z.run("trust", "--revoke", z.cwd); code != 0 || !strings.Contains(out, "the next session there asks again") {
		t.Errorf("zot trust --revoke: exit %d\n%s", code, out)
	}
	tm = startTUI(t, z, args...)
	tm.waitFor("continue without them")
	tm.keys("Down", "Enter") // quit
	tm.checkExit(0)
	if m := markers(z.cwd); len(m) > 0 {
		t.Errorf("programs ran: %v", m)
	}
}

// The first prompt of a user without a key asks for the key at once; the
// prompt waits in the history (esc) or comes back into the editor once
// the key is saved, so a /login typed after it is never glued to it.
func TestTUIFirstPromptWithoutAKeyAsksForIt(t *testing.T) {
	t.Parallel()
	needTmux(t)
	z := newZotRun(t)
	tm := startTUI(t, z)
	tm.waitFor("No API key for anthropic")
	tm.typeText("hello")
	tm.keys("Enter")
	tm.waitFor("API key for anthropic (typing is not shown)")
	tm.keys("Escape")
	screen := tm.waitFor("not sent: no key yet (↑ brings the prompt back)")
	if strings.Contains(screen, "› hello") {
		t.Errorf("the prompt stayed in the editor:\n%s", screen)
	}
	tm.keys("Up")
	tm.waitFor("› hello")
	tm.keys("C-u")
	tm.typeText("/login")
	tm.keys("Enter")
	tm.waitFor("log in to which provider?")
	tm.keys("Escape")
	tm.waitScreen("the picker to close", func(s string) bool { return !strings.Contains(s, "log in to which provider?") })
	tm.typeText("hello again")
	tm.keys("Enter")
	tm.waitFor("API key for anthropic (typing is not shown)")
	tm.typeText("sk-test-key")
	tm.keys("Enter")
	tm.waitFor("saved the anthropic key")
	tm.waitFor("your prompt is back: enter sends it")
	tm.waitFor("› hello again")
	tm.exitAndCheck()
}

// NO_COLOR takes every colour out of the TUI and leaves the layout as it
// was; a locale that is not UTF-8 gets ASCII, again in the same layout.
func TestTUIHonoursNoColorAndAnASCIILocale(t *testing.T) {
	t.Parallel()
	needTmux(t)
	colour := regexp.MustCompile(`\x1b\[([0-9;]*;)?(3[0-8]|9[0-7]|4[0-8])[;m]`) // 39 and 49 are the defaults
	run := func(env ...string) (plain, styled string) {
		srv := startReplay(t,
			toolStep("t1", "bash", obj{"command": "echo from-bash"}),
			replayStep{Events: anthropicEvents(gen{Text: "# Heading\n\nSome **bold** and `code`, then a list:\n\n- one\n- two\n"})})
		z := newZotRun(t)
		z.env = env
		tm := startTUI(t, z, anthropicFlags(srv)...)
		tm.waitFor("/help for keys")
		tm.typeText("show me")
		tm.keys("Enter")
		tm.waitFor("two")
		tm.waitIdle()
		plain, styled = tm.screen(), tm.tmux("capture-pane", "-p", "-e", "-t", "t")
		tm.exitAndCheck()
		return plain, styled
	}
	// The run time of the tool and the directory differ from run to run.
	stable := regexp.MustCompile(`\d+\.\ds|…/\d+`)
	plain, styled := run()
	if !colour.MatchString(styled) {
		t.Fatalf("no colour without NO_COLOR, so the test proves nothing:\n%q", styled)
	}
	noColorPlain, noColorStyled := run("NO_COLOR=1")
	if m := colour.FindString(noColorStyled); m != "" {
		t.Errorf("NO_COLOR: a colour was drawn (%q):\n%q", m, noColorStyled)
	}
	if stable.ReplaceAllString(noColorPlain, "") != stable.ReplaceAllString(plain, "") {
		t.Errorf("NO_COLOR changed the layout:\n%s\nwithout it:\n%s", noColorPlain, plain)
	}
	asciiPlain, _ := run("LANG=C")
	for i, r := range asciiPlain {
		if r >= 0x80 {
			t.Fatalf("LANG=C: %q at %d:\n%s", r, i, asciiPlain)
		}
	}
	for _, want := range []string{"> show me", "+ bash  echo from-bash", "| from-bash", "* one", "-----", "| [exit code 0]"} {
		if !strings.Contains(asciiPlain, want) {
			t.Errorf("LANG=C: the screen lacks %q:\n%s", want, asciiPlain)
		}
	}
	if got, want := len(strings.Split(asciiPlain, "\n")), len(strings.Split(plain, "\n")); got != want {
		t.Errorf("LANG=C: %d rows, want %d", got, want)
	}
}

// The /model picker narrows to what is typed; /help says that choosing in
// /sessions, not opening it, stops a running turn.
func TestTUIModelPickerFiltersAndHelpSaysWhatStops(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	z := newZotRun(t)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("/help")
	tm.keys("Enter")
	screen := tm.waitFor("/sessions")
	if !regexp.MustCompile(`/sessions +resume a saved session of this directory \(choosing one stops a running`).MatchString(screen) {
		t.Errorf("/help on /sessions:\n%s", screen)
	}
	tm.keys("C-l")
	tm.typeText("/model")
	tm.keys("Enter")
	tm.waitFor("type to filter")
	tm.typeText("haiku 4-5")
	screen = tm.waitFor("filter: haiku 4-5")
	if !strings.Contains(screen, "anthropic/claude-haiku-4-5") || strings.Contains(screen, "claude-opus-4-5") || strings.Contains(screen, "claude-3-5-haiku") {
		t.Errorf("the picker did not narrow:\n%s", screen)
	}
	tm.keys("Enter")
	tm.waitFor("model: anthropic/claude-haiku-4-5")
	tm.exitAndCheck()
}
