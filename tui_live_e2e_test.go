package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// End-to-end tests of what a newcomer meets first, in a real terminal
// under tmux (see tui_e2e_test.go for the harness).

// While the model has not answered, the live region says so; a double
// ctrl+c stops the answer and leaves zot open, whether the model was
// silent or streaming; two ctrl+c on the idle, empty editor then exit.
// (tui_usability_e2e_test.go has ctrl+c just as an answer ends.)
func TestTUIWaitingLineAndCtrlCThatOnlyStops(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(gen{Text: "never seen"}), HangAfter: 1},
		replayStep{Events: anthropicEvents(gen{Text: "The answer streams and then the model stalls"}), HangAfter: 4})
	z := newZotRun(t)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("slow one")
	tm.keys("Enter")
	// The counter counts; which second the screen is caught at is the
	// machine's speed.
	tm.waitScreen("the waiting line to count", func(s string) bool {
		return regexp.MustCompile(`waiting for the model  [1-9][0-9]*s`).MatchString(s)
	})
	tm.keys("C-c", "C-c")
	screen := tm.waitFor("■ aborted")
	if strings.Contains(screen, "waiting for the model") {
		t.Errorf("the waiting line outlived the run:\n%s", screen)
	}
	tm.typeText("streaming one")
	tm.keys("Enter")
	tm.waitFor("The answer streams")
	tm.keys("C-c")
	tm.waitScreen("the second abort", func(s string) bool { return strings.Count(s, "■ aborted") == 2 })
	tm.waitIdle()
	tm.keys("x", "C-u", "C-c") // a key other than ctrl+c ends the grace after a stop
	tm.waitFor(ctrlCExitHint)
	if s := tm.screen(); strings.Contains(s, "[zot exited]") {
		t.Fatalf("a double ctrl+c while the agent streamed quit zot:\n%s", s)
	}
	// One write: in the exit window, or (the machine slow) the first
	// press re-arms and the second leaves.
	tm.keys("C-c", "C-c")
	tm.checkExit(0)
}

// An edit shows its changes numbered with a line of context, a second
// edit far from the first included; ctrl+o prints the whole diff.
func TestTUIEditDiffIsNumberedAndCtrlOShowsItAll(t *testing.T) {
	t.Parallel()
	needTmux(t)
	z := newZotRun(t)
	var file strings.Builder
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&file, "line %d\n", i)
	}
	os.WriteFile(filepath.Join(z.cwd, "a.txt"), []byte(file.String()), 0o644)
	srv := startReplay(t,
		toolStep("t1", "edit", obj{"path": "a.txt", "edits": []obj{
			{"oldText": "line 5\nline 6\nline 7\nline 8\nline 9\n", "newText": "five\nsix\nseven\nEIGHT\nnine\n"},
			{"oldText": "line 50\n", "newText": "fifty\n"}}}),
		replayStep{Events: anthropicEvents(gen{Text: "Edited."})})
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("edit it")
	tm.keys("Enter")
	screen := tm.waitFor("Edited.")
	for _, want := range []string{"✓ edit  a.txt (2 edits)", "│  4   line 4", "│  5 - line 5", "│  9 + nine", "│ 10   line 10", "│  ⋮", "│ 50 - line 50", "│ 50 + fifty", "│ 51   line 51"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	tm.keys("C-o")
	screen = tm.waitFor("── in full")
	for _, want := range []string{"│  2   line 2", "│ 53   line 53"} {
		if !strings.Contains(screen, want) {
			t.Errorf("ctrl+o did not show %q (all the context the tool sent):\n%s", want, screen)
		}
	}
	tm.exitAndCheck()
}

// A pasted block keeps its tabs in what is sent, and shows them as
// spaces; the editor wraps between words; boxes have both edges; /help
// names shift+enter.
func TestTUIPastedTabsWordWrapBoxesAndHelp(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "Got the code."})})
	z := newZotRun(t)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.tmux("set-buffer", "-b", "code", "func main() {\n\tfmt.Println(\"hi\")\n}")
	tm.tmux("paste-buffer", "-p", "-b", "code", "-t", "t")
	tm.waitFor("\n      fmt.Println(\"hi\")\n")
	tm.keys("Enter")
	tm.waitFor("Got the code.")
	reqs := srv.Requests()
	var body struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if len(reqs) != 1 || json.Unmarshal(reqs[0].Body, &body) != nil || !strings.Contains(string(body.Messages[0].Content), `{\n\tfmt.Println(\"hi\")\n}`) {
		t.Errorf("the tabs were not sent: %s", reqs[0].Body)
	}

	tm.tmux("resize-window", "-t", "t", "-x", "40", "-y", "30")
	sentence := "the quick brown fox jumps over the lazy dog and then keeps running far away"
	tm.typeText(sentence)
	screen := tm.waitScreen("the sentence in the editor", func(s string) bool { return strings.Contains(s, "\n  away") })
	var rows []string
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "› the quick") || len(rows) > 0 && strings.HasPrefix(l, "  ") {
			rows = append(rows, strings.TrimSpace(strings.TrimPrefix(l, "›")))
		}
	}
	if strings.Join(rows, " ") != sentence {
		t.Errorf("the editor rows %q do not hold the words whole:\n%s", rows, screen)
	}
	tm.keys("C-u", "C-u")
	tm.typeText("/model")
	tm.keys("Enter")
	screen = tm.waitFor("choose a model")
	inBox := false
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "┌") {
			inBox = true
		}
		if inBox && stringWidth(strings.TrimRight(l, " ")) != 40 {
			t.Errorf("a box row does not reach the right edge: %q", l)
		}
		if strings.HasPrefix(l, "└") {
			inBox = false
		}
	}
	tm.keys("Escape")
	tm.waitScreen("the picker closed", func(s string) bool { return !strings.Contains(s, "choose a model") })
	tm.typeText("/help")
	tm.keys("Enter")
	tm.waitFor("/exit")
	if all := tm.tmux("capture-pane", "-p", "-S", "-200", "-t", "t"); !strings.Contains(all, "shift+enter, alt+enter") {
		t.Errorf("/help does not name shift+enter:\n%s", all)
	}
	tm.exitAndCheck()
}

// A reply with a Go block and a table: the block is coloured by the
// lexer (keywords, strings, comments), the table drawn as a box.
func TestTUIHighlightsCodeAndDrawsTables(t *testing.T) {
	t.Parallel()
	needTmux(t)
	reply := "Here:\n\n```go\nfunc main() {\n\tfmt.Println(\"hi\") // greet\n}\n```\n\n| name | size |\n|:--|--:|\n| a.go | 12 |\n| b.go | 3400 |\n\nDone.\n"
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: reply})})
	z := newZotRun(t)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("show me")
	tm.keys("Enter")
	screen := tm.waitFor("Done.")
	for _, want := range []string{"┌──────┬──────┐", "│ name │ size │", "│ a.go │   12 │", "│ b.go │ 3400 │", "└──────┴──────┘", "    fmt.Println(\"hi\") // greet"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	colours := tm.tmux("capture-pane", "-p", "-e", "-t", "t")
	for colour, text := range map[string]string{"35": "func", "32": `"hi"`, "90": "// greet"} {
		// tmux writes the colour as an escape of its own, maybe beside others.
		if !regexp.MustCompile(`\x1b\[` + colour + `m(\x1b\[[0-9;]*m)*` + regexp.QuoteMeta(text)).MatchString(colours) {
			t.Errorf("the code is not highlighted: %q is not in colour %s in\n%q", text, colour, colours)
		}
	}
	tm.exitAndCheck()
}
