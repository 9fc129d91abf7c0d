package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// /session tree, export and import in a real terminal: switch to a fork
// from the tree, export it, import the reference zot's session.
func TestTUISessionTreeExportAndImport(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "Parent answer."})})
	z := newZotRun(t)
	if _, errOut, code := z.run(append(anthropicFlags(srv), "-p", "the parent prompt")...); code != 0 {
		t.Fatal(errOut)
	}
	list, _ := ListSessions(z.home, z.cwd)
	parent, loaded, err := OpenSession(list[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	fork, err := parent.Fork(len(loaded.Messages), loaded.Messages)
	if err != nil {
		t.Fatal(err)
	}
	fork.Append(Message{Role: RoleUser, Content: []Block{TextBlock("the fork's own prompt")}})
	fork.Append(Message{Role: RoleAssistant, Content: []Block{TextBlock("Fork answer.")}})
	fork.Close()
	parent.Close()
	// The parent is the newest: the fork is listed under it all the same.
	os.Chtimes(list[0].Path, fileTimeAfter(t, fork.Path), fileTimeAfter(t, fork.Path))

	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("/session tree")
	tm.keys("Enter")
	screen := tm.waitFor("(fork after message 2)")
	if !strings.Contains(screen, "the parent prompt") || !strings.Contains(screen, "└ ") || !strings.Contains(screen, "the fork's own prompt") {
		t.Fatalf("tree:\n%s", screen)
	}
	tm.keys("Down", "Enter")
	screen = tm.waitFor("end of the resumed transcript")
	if !strings.Contains(screen, "resumed session "+filepath.Base(fork.Path)) || !strings.Contains(screen, "Fork answer.") {
		t.Fatalf("switching to the fork:\n%s", screen)
	}
	tm.typeText("/session tree")
	tm.keys("Enter")
	tm.waitFor("(current)")
	tm.keys("Escape")
	// Typing on before the picker closed would send ESC and "/" together:
	// alt+/.
	tm.waitScreen("the picker closed", func(s string) bool { return !strings.Contains(s, "(current)") })

	tm.typeText("/session export fork.zotsession")
	tm.keys("Enter")
	tm.waitFor("exported to " + filepath.Join(z.cwd, "fork.zotsession"))
	exported, err := os.ReadFile(filepath.Join(z.cwd, "fork.zotsession"))
	if err != nil || strings.Contains(string(exported), z.cwd) || !strings.Contains(string(exported), "Fork answer.") {
		t.Errorf("export (%v):\n%s", err, exported)
	}

	fixture, _ := filepath.Abs("testdata/sessions/reference-zot.jsonl")
	tm.typeText("/session import " + fixture)
	tm.keys("Enter")
	screen = tm.waitScreen("the imported transcript", func(s string) bool {
		return strings.Contains(s, "A tiny PNG header.") && strings.Contains(s, "end of the resumed transcript")
	})
	for _, want := range []string{"line 9: not a whole JSON row; skipped it", "imported " + fixture, "› list the go files"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	tm.exitAndCheck()
	if list, _ := ListSessions(z.home, z.cwd); len(list) != 3 {
		t.Errorf("%d sessions after the import, want 3", len(list))
	}
}

// fileTimeAfter is a modification time later than path's.
func fileTimeAfter(t *testing.T, path string) time.Time {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.ModTime().Add(2e9)
}
