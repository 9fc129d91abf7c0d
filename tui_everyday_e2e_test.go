package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The everyday pieces of issue 38 under tmux, through the real binary.

// TestTUIShellCommandAndHistorySearch: !ls lists the directory with no
// model turn, and the listing reaches the model with the next prompt;
// ctrl+r finds an earlier prompt by a word of it and puts it back in the
// editor.
func TestTUIShellCommandAndHistorySearch(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	if err := os.WriteFile(filepath.Join(z.cwd, "kumquat.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "noted"})})
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("no jail")
	tm.typeText("!ls")
	tm.keys("Enter")
	tm.waitFor("kumquat.txt")
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("!ls called the model (%d requests)", n)
	}
	tm.typeText("what about the papaya")
	tm.keys("Enter")
	tm.waitFor("noted")
	reqs := srv.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), `$ ls\nkumquat.txt`) || !strings.Contains(string(reqs[0].Body), "what about the papaya") {
		t.Fatalf("the prompt after !ls should carry its output: %d requests\n%s", len(reqs), reqs)
	}

	tm.typeText("another prompt")
	tm.keys("Enter")
	tm.waitScreen("the second answer", func(s string) bool { return strings.Count(s, "noted") == 2 })
	tm.keys("C-r")
	tm.waitFor("search the prompt history")
	tm.typeText("papa")
	tm.waitScreen("the filter to leave one prompt", func(s string) bool {
		return strings.Contains(s, "│ › what about the papaya") && !strings.Contains(s, "│   another prompt")
	})
	tm.keys("Enter")
	tm.waitScreen("the prompt in the editor", func(s string) bool {
		return !strings.Contains(s, "search the prompt history") && strings.Contains(s, "› what about the papaya")
	})
	tm.exitAndCheck()
}
