package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The TUI's approvals under tmux: an edit asks with its diff, and "don't
// ask again for `go test *`" ends the next go test's question — saved for
// the directory in $ZOT_HOME/approvals.json when that answer is taken,
// with nothing written into the project.
func TestTUIApprovalsShowTheDiffAndRememberAPrefix(t *testing.T) {
	t.Parallel()
	needTmux(t)
	for _, letter := range []string{"p", "s"} {
		t.Run(letter, func(t *testing.T) {
			t.Parallel()
			srv := startReplay(t,
				toolStep("t1", "edit", obj{"path": "notes.txt", "edits": []any{obj{"oldText": "beta", "newText": "gamma"}}}),
				toolStep("t2", "bash", obj{"command": "go test ./... 2>&1"}),
				toolStep("t3", "bash", obj{"command": "go test -run X ./... >/dev/null"}),
				replayStep{Events: anthropicEvents(gen{Text: "All done."})})
			z := newZotRun(t)
			userSettings(t, z, perms("allow", []string{"Bash(echo:*)"}))
			os.WriteFile(filepath.Join(z.cwd, "notes.txt"), []byte("alpha\nbeta\n"), 0o644)
			tm := startTUI(t, z, anthropicFlags(srv)...)
			tm.waitFor("/help for keys")
			tm.typeText("change things")
			tm.keys("Enter")
			screen := tm.waitFor("allow this tool call?")
			screen = tm.waitFor("enter, or the letter")
			// The diff, numbered, not the edit's JSON.
			if !regexp.MustCompile(`2 *│? *- *beta`).MatchString(screen) || !regexp.MustCompile(`2 *│? *\+ *gamma`).MatchString(screen) || strings.Contains(screen, "oldText") {
				t.Errorf("the edit's question does not show its diff:\n%s", screen)
			}
			if !strings.Contains(screen, "rules:claude-code asks") || !strings.Contains(screen, "don't ask again for file edits") {
				t.Errorf("who asked, or the session's answer, is missing:\n%s", screen)
			}
			tm.typeText("y")
			screen = tm.waitFor("go test ./... 2>&1")
			screen = tm.waitFor("enter, or the letter")
			for _, want := range []string{"rules:claude-code asks", "don't ask again for `go test *` this session", "don't ask again for `go test *` in this directory (saved)"} {
				if !strings.Contains(screen, want) {
					t.Errorf("the command's question lacks %q:\n%s", want, screen)
				}
			}
			tm.typeText(letter)
			tm.waitFor("All done.") // the second go test did not ask: a question would wait for an answer
			if lines := auditLines(t, z.home); len(lines) != 3 || lines[1].Outcome != "ran" || lines[2].Outcome != "ran" {
				t.Errorf("the two go tests did not both run: %+v", lines)
			}
			if data, _ := os.ReadFile(filepath.Join(z.cwd, "notes.txt")); string(data) != "alpha\ngamma\n" {
				t.Errorf("notes.txt = %q", data)
			}
			if _, err := os.Stat(filepath.Join(z.cwd, ".claude")); err == nil {
				t.Error("the answer was written into the project")
			}
			saved, _ := readSavedApprovals(filepath.Join(z.home, "approvals.json"), z.cwd)
			switch {
			case letter == "p" && saved != nil:
				t.Errorf("a session's answer was saved: %q", saved)
			case letter == "s" && (len(saved) != 1 || strings.Join(saved[0], " ") != "go test"):
				t.Errorf("saved %q, want go test", saved)
			}
			tm.exitAndCheck()
		})
	}
}

// A no with a message: the model reads the message with the refusal. A
// validator-free ask rule offers no "don't ask again".
func TestTUIApprovalsNoWithAMessage(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "touch made.txt"}), replayStep{Events: anthropicEvents(gen{Text: "Understood."})})
	z := newZotRun(t)
	userSettings(t, z, perms("ask", []string{"Bash(touch:*)"}))
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("make it")
	tm.keys("Enter")
	tm.waitFor("allow this tool call?")
	screen := tm.waitFor("enter, or the letter")
	if strings.Contains(screen, "don't ask again") || !strings.Contains(screen, "ask Bash(touch:*)") {
		t.Errorf("an ask rule's question:\n%s", screen)
	}
	tm.typeText("m")
	tm.waitFor("message to the model:")
	tm.typeText("use echo instead")
	tm.keys("Enter")
	tm.waitFor("Understood.")
	if _, err := os.Stat(filepath.Join(z.cwd, "made.txt")); err == nil {
		t.Error("the refused command ran")
	}
	if sent := toolResultTexts(srv); !strings.Contains(sent, "declined by user, who said: use echo instead") {
		t.Errorf("the model was told:\n%s", sent)
	}
	tm.exitAndCheck()
}
