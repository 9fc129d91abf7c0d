//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The modes in the TUI under tmux (linux: the sandboxes of plan and
// sandboxed-auto are the kernel's, which these tests need).

// statusLine is the screen's last line that is not blank: the status bar.
func statusLine(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	return lines[len(lines)-1]
}

// waitWithStatus waits for text on screen with each of status in the
// status bar. One capture can show a frame half drawn, text there and the
// status bar not yet, so the two are waited for together.
func (tm *tmuxTerm) waitWithStatus(text string, status ...string) string {
	tm.t.Helper()
	return tm.waitScreen(fmt.Sprintf("%q on screen and %q in the status bar", text, status), func(s string) bool {
		st := statusLine(s)
		for _, want := range status {
			if !strings.Contains(st, want) {
				return false
			}
		}
		return strings.Contains(s, text)
	})
}

// A first start with no configuration names the mode and says commands
// are not confined (once per $ZOT_HOME); shift+tab then cycles the modes,
// the status bar showing each and what its commands run in.
func TestTUIShiftTabCyclesTheModes(t *testing.T) {
	t.Parallel()
	z := newZotRun(t).unnoted()
	srv := startReplay(t, textStep("unused"))
	tm := startTUI(t, z, anthropicFlags(srv)...)
	screen := tm.waitFor("/help for keys")
	screen = tm.waitWithStatus("Nobody chose this mode", "· auto ·", "commands not confined")
	if !strings.Contains(screen, "commands are not confined") || !strings.Contains(screen, "shift+tab") || !strings.Contains(screen, "--mode NAME") {
		t.Errorf("the first start's note:\n%s", screen)
	}
	for _, want := range []struct{ mode, confined string }{
		{"sandboxed-auto", "sandbox workspace"},
		{"ask", "commands not confined"},
		{"accept-edits", "commands not confined"},
		{"plan", "sandbox read-only"},
		{"auto", "commands not confined"},
	} {
		tm.keys("BTab")
		// The status bar shows the mode and what its commands run in, and
		// the transcript the change.
		tm.waitScreen("mode "+want.mode+" in the status bar and the transcript", func(s string) bool {
			st := statusLine(s)
			return strings.Contains(st, "· "+want.mode+" ·") && strings.Contains(st, want.confined) && strings.Contains(s, "mode "+want.mode+":")
		})
	}
	tm.exitAndCheck()

	// The note is shown once per $ZOT_HOME.
	tm = startTUI(t, z, anthropicFlags(srv)...)
	screen = tm.waitFor("/help for keys")
	if strings.Contains(screen, "Nobody chose this mode") {
		t.Errorf("the note came again:\n%s", screen)
	}
	tm.exitAndCheck()
}

// Plan mode: a write is refused with a reason the model reads, a touch
// fails in the read-only sandbox, ls and grep run; the plan is put to the
// user, whose approval switches to accept-edits, where the next edit runs
// without a question.
func TestTUIPlanModeRefusesChangesUntilThePlanIsApproved(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("w1", "write", obj{"path": "plan.txt", "content": "x"}),
		toolStep("b1", "bash", obj{"command": "touch made.txt"}),
		toolStep("b2", "bash", obj{"command": "ls"}),
		toolStep("b3", "bash", obj{"command": "grep -n beta notes.txt"}),
		toolStep("p1", "present_plan", obj{"plan": "1. Change beta to gamma in notes.txt\n2. Check it"}),
		toolStep("e1", "edit", obj{"path": "notes.txt", "edits": []any{obj{"oldText": "beta", "newText": "gamma"}}}),
		textStep("Done."))
	z := newZotRun(t)
	z.env = append(z.env, "TMPDIR="+t.TempDir()) // the read-only sandbox's one writable directory, away from the project
	os.WriteFile(filepath.Join(z.cwd, "notes.txt"), []byte("alpha\nbeta\n"), 0o644)
	tm := startTUI(t, z, append(anthropicFlags(srv), "--mode", "plan")...)
	tm.waitWithStatus("/help for keys", "· plan ·", "sandbox read-only")
	tm.typeText("change beta")
	tm.keys("Enter")
	tm.waitFor("approve this plan?")
	screen := tm.waitFor("enter, or the letter")
	for _, want := range []string{"Change beta to gamma", "carry it out in accept-edits mode", "no, keep planning"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the plan's dialog lacks %q:\n%s", want, screen)
		}
	}
	sent := toolResultTexts(srv)
	for _, want := range []string{
		"not run: zot is in plan mode, and write can change things",
		"[sandbox read-only refused this",
		"notes.txt",  // ls
		"2:beta",     // grep
		"plan mode.", // what the model is told with the prompt
	} {
		if !strings.Contains(sent, want) {
			t.Errorf("the model was not told %q:\n%s", want, sent)
		}
	}
	for _, f := range []string{"plan.txt", "made.txt"} {
		if _, err := os.Stat(filepath.Join(z.cwd, f)); err == nil {
			t.Errorf("%s was made in plan mode", f)
		}
	}
	tm.typeText("a")
	screen = tm.waitWithStatus("Done.", "· accept-edits ·")
	if strings.Contains(screen, "allow this tool call?") {
		t.Errorf("the edit asked in accept-edits:\n%s", screen)
	}
	if data, _ := os.ReadFile(filepath.Join(z.cwd, "notes.txt")); string(data) != "alpha\ngamma\n" {
		t.Errorf("notes.txt = %q: the edit after the approval did not run", data)
	}
	if sent := toolResultTexts(srv); !strings.Contains(sent, "The plan was approved (user)") || !strings.Contains(sent, "now in accept-edits mode") {
		t.Errorf("the model was not told of the approval:\n%s", sent)
	}
	tm.exitAndCheck()
}

// sandboxed-auto: a command the workspace sandbox refused is offered one
// run outside it, which happens only when the user takes it.
func TestTUISandboxRefusalOffersOneRunOutside(t *testing.T) {
	t.Parallel()
	for _, letter := range []string{"y", "n"} {
		t.Run(letter, func(t *testing.T) {
			t.Parallel()
			outside := t.TempDir()
			target := filepath.Join(outside, "f")
			srv := startReplay(t, toolStep("t1", "bash", obj{"command": "touch " + target}), textStep("Over."))
			z := newZotRun(t)
			z.env = append(z.env, "TMPDIR="+t.TempDir()) // so that outside is outside
			tm := startTUI(t, z, append(anthropicFlags(srv), "--mode", "sandboxed-auto")...)
			tm.waitFor("/help for keys")
			tm.typeText("touch it")
			tm.keys("Enter")
			tm.waitFor("allow this tool call?")
			screen := tm.waitFor("enter, or the letter")
			if !strings.Contains(screen, "outside the sandbox") || !strings.Contains(screen, "sandbox workspace refused this") {
				t.Errorf("the offer:\n%s", screen)
			}
			if _, err := os.Stat(target); err == nil {
				t.Fatal("the command wrote outside the sandbox before anyone was asked")
			}
			tm.typeText(letter)
			tm.waitFor("Over.")
			_, err := os.Stat(target)
			sent := toolResultTexts(srv)
			switch letter {
			case "y":
				if err != nil {
					t.Errorf("taken, the run outside did not happen: %v", err)
				}
				if !strings.Contains(sent, "let it run once outside the sandbox") {
					t.Errorf("the model was not told of the run outside:\n%s", sent)
				}
			case "n":
				if err == nil {
					t.Error("declined, the command still ran outside")
				}
				if !strings.Contains(sent, "not run outside the sandbox") {
					t.Errorf("the model was not told:\n%s", sent)
				}
			}
			tm.exitAndCheck()
		})
	}
}

// A plan the user sends back with a reason keeps plan mode, and the model
// reads the reason; the next plan, approved with changes typed, switches
// to the first mode offered (accept-edits), and the model reads the
// changes with the approval and the plan in its conversation.
func TestTUIPlanSentBackThenApprovedWithChanges(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("p1", "present_plan", obj{"plan": "1. Delete notes.txt"}),
		toolStep("p2", "present_plan", obj{"plan": "1. Change beta to gamma in notes.txt"}),
		textStep("Done."))
	z := newZotRun(t)
	tm := startTUI(t, z, append(anthropicFlags(srv), "--mode", "plan")...)
	tm.waitFor("/help for keys")
	tm.typeText("tidy the notes")
	tm.keys("Enter")
	tm.waitFor("Delete notes.txt")
	tm.waitFor("enter, or the letter")
	tm.typeText("m")
	tm.waitFor("message to the model:")
	tm.typeText("keep the file")
	tm.keys("Enter")

	tm.waitWithStatus("Change beta to gamma", "· plan ·")
	if sent := toolResultTexts(srv); !strings.Contains(sent, "The plan was not approved (user), who said: keep the file") || !strings.Contains(sent, "zot stays in plan mode") {
		t.Errorf("the model was not told why:\n%s", sent)
	}
	tm.waitFor("enter, or the letter")
	tm.typeText("e")
	tm.waitFor("changes to the plan:")
	tm.typeText("also check the spelling")
	tm.keys("Enter")
	tm.waitWithStatus("Done.", "· accept-edits ·")
	if sent := toolResultTexts(srv); !strings.Contains(sent, "They add: also check the spelling") || !strings.Contains(sent, "now in accept-edits mode") {
		t.Errorf("the model was not told the changes:\n%s", sent)
	}
	// The plan stays in the conversation the model carries it out from.
	reqs := srv.Requests()
	if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "Change beta to gamma in notes.txt") {
		t.Errorf("the approved plan is not in the conversation:\n%s", last)
	}
	tm.exitAndCheck()
}

// A !command is the user's: no rule or question stands in its way, but
// --sandbox confines it as it confines the model's commands.
func TestTUIShellCommandRunsInTheSandbox(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	z.env = append(z.env, "TMPDIR="+t.TempDir()) // so that outside is outside
	target := filepath.Join(t.TempDir(), "f")
	userSettings(t, z, perms("deny", []string{"Bash(touch:*)"}))
	srv := startReplay(t, textStep("unused"))
	tm := startTUI(t, z, append(anthropicFlags(srv), "--sandbox", "workspace")...)
	tm.waitFor("/help for keys")
	tm.typeText("!touch inside.txt " + target)
	tm.keys("Enter")
	tm.waitFor("sandbox workspace refused this")
	if !fileExists(filepath.Join(z.cwd, "inside.txt")) {
		t.Error("the user's command, denied only by a rule for the model, did not run")
	}
	if fileExists(target) {
		t.Error("the user's command wrote outside the sandbox")
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("a !command called the model (%d requests)", n)
	}
	tm.exitAndCheck()
}
