package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pipeOutput copies what the pane's program writes from now on to a
// file, raw: the escapes tmux itself would swallow (OSC 9, OSC 777).
func (tm *tmuxTerm) pipeOutput() (read func() string) {
	tm.t.Helper()
	path := filepath.Join(tm.dir, "output")
	tm.tmux("pipe-pane", "-O", "-t", "t", "cat >> "+shq(path))
	return func() string {
		b, _ := os.ReadFile(path)
		return string(b)
	}
}

// focus sends the focus report a terminal sends when it gains (in) or
// loses the focus.
func (tm *tmuxTerm) focus(in bool) {
	final := "4f" // O
	if in {
		final = "49" // I
	}
	tm.tmux("send-keys", "-t", "t", "-H", "1b", "5b", final)
}

// TestTUINotifiesWhenUnfocused: with "notify": "osc9", a run that ends
// while the terminal reported focus out sends OSC 9; one that ends after
// focus in sends nothing (a third, unfocused again, shows the second sent
// nothing: the output is in order). The reports never reach the editor,
// and focus reporting is off again when zot exits.
func TestTUINotifiesWhenUnfocused(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	mustWrite(t, filepath.Join(z.home, "config.json"), `{"notify": "osc9"}`, 0o600)
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(gen{Text: "first answer"})},
		replayStep{Events: anthropicEvents(gen{Text: "second answer"})},
		replayStep{Events: anthropicEvents(gen{Text: "third answer"})})
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("ctx 0%")
	output := tm.pipeOutput()
	const done = "\x1b]9;zot is done\a"
	waitOutput := func(what string, n int) {
		tm.waitScreen(what, func(string) bool { return strings.Count(output(), done) >= n })
		if got := strings.Count(output(), done); got != n {
			t.Fatalf("%s: %d notifications, want %d", what, got, n)
		}
	}

	tm.focus(false)
	tm.typeText("one")
	tm.keys("Enter")
	tm.waitFor("first answer")
	waitOutput("the notification of an unfocused run", 1)

	tm.focus(true)
	tm.typeText("two")
	tm.keys("Enter")
	tm.waitFor("second answer")
	// The answer's text is on screen before its run ends; the focus may
	// change only once the end was handled (and found the terminal
	// focused), or under load the run ends unfocused.
	tm.waitIdle()
	tm.focus(false)
	tm.typeText("three")
	tm.keys("Enter")
	tm.waitFor("third answer")
	waitOutput("the third run's notification, and none for the focused second", 2)
	tm.focus(true)
	tm.typeText("typed")
	s := tm.waitFor("› typed")
	if strings.Contains(s, "[I") || strings.Contains(s, "[O") {
		t.Fatalf("a focus report reached the screen:\n%s", s)
	}
	tm.exitAndCheck()
	if !strings.Contains(output(), focusReportOff) {
		t.Errorf("focus reporting was not turned off on exit: %q", output())
	}
}

// TestTUIBellByDefault: a notify value zot does not know is named, and the
// default, the bell, rings for an approval that waits while the terminal
// has said nothing of its focus (the prompt comes from the command line,
// so no key was pressed).
func TestTUIBellByDefault(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	mustWrite(t, filepath.Join(z.home, "config.json"), `{"notify": "chime"}`, 0o600)
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(gen{ToolID: "t1", ToolName: "bash", ToolArgs: `{"command":"echo hi"}`})},
		replayStep{Events: anthropicEvents(gen{Text: "ran it"})})
	tm := startTUI(t, z, append(anthropicFlags(srv), "--no-yolo", "run echo")...)
	tm.waitFor(`notify "chime" is not one of`)
	tm.waitFor("allow this tool call?")
	tm.waitScreen("the bell", func(string) bool {
		return strings.TrimSpace(tm.tmux("display", "-p", "-t", "t", "#{window_bell_flag}")) == "1"
	})
	tm.keys("y")
	tm.waitFor("ran it")
	tm.exitAndCheck()
}
