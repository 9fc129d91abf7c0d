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
	tm.waitFor("ctx 0%")
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

// TestTUIRenameThenResumeByName: /rename x names the session; zot -r x
// resumes it in the TUI, in -p (the conversation reaches the model), and
// zot sessions rename renames it by its old name. The name survives in the
// session file: every step is a new process.
func TestTUIRenameThenResumeByName(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "noted"})})
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("ctx 0%")
	tm.typeText("remember the quince")
	tm.keys("Enter")
	tm.waitFor("noted")
	tm.typeText("/rename x")
	tm.keys("Enter")
	tm.waitFor("this session is named x")
	tm.exitAndCheck()

	tm = startTUI(t, z, append(anthropicFlags(srv), "-r", "x")...)
	tm.waitFor("continuing session x (")
	tm.waitFor("remember the quince")
	tm.exitAndCheck()

	out, errOut, code := z.run(append(anthropicFlags(srv), "-p", "-r", "x", "what fruit")...)
	if code != 0 || !strings.Contains(out, "noted") {
		t.Fatalf("zot -p -r x: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	reqs := srv.Requests()
	if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "remember the quince") || !strings.Contains(last, "what fruit") {
		t.Fatalf("-p -r x did not carry the named conversation:\n%s", last)
	}

	if out, errOut, code := z.run("sessions", "rename", "x", "quince talk"); code != 0 || !strings.Contains(out, "is now named quince talk") {
		t.Fatalf("zot sessions rename: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, _ := z.run("sessions", "list"); !strings.Contains(out, "[quince talk] remember the quince") {
		t.Errorf("zot sessions list does not show the name:\n%s", out)
	}
	if _, errOut, code := z.run(append(anthropicFlags(srv), "-p", "-r", "x", "again")...); code != 1 || !strings.Contains(errOut, `no session "x" (by name or id)`) {
		t.Errorf("-r with the old name: exit %d, stderr %s", code, errOut)
	}
	if _, errOut, code := z.run("sessions", "rename", "quince talk", " "); code != 1 || !strings.Contains(errOut, "cannot be empty") {
		t.Errorf("an empty name: exit %d, stderr %s", code, errOut)
	}
}

// TestResumeByNameInJSONAndRPC: -r NAME in --json and zot rpc carries the
// named conversation to the model, as in the TUI and -p.
func TestResumeByNameInJSONAndRPC(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "noted"})})
	if _, errOut, code := z.run(append(anthropicFlags(srv), "-p", "remember the quince")...); code != 0 {
		t.Fatalf("zot -p: exit %d: %s", code, errOut)
	}
	if out, errOut, code := z.run("sessions", "rename", "latest", "fruit"); code != 0 {
		t.Fatalf("zot sessions rename: exit %d\n%s%s", code, out, errOut)
	}
	carried := func(how, prompt string) {
		t.Helper()
		reqs := srv.Requests()
		if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "remember the quince") || !strings.Contains(last, prompt) {
			t.Errorf("%s -r fruit did not carry the named conversation:\n%s", how, last)
		}
	}
	if _, errOut, code := z.run(append(anthropicFlags(srv), "--json", "-r", "fruit", "what fruit")...); code != 0 {
		t.Fatalf("zot --json -r fruit: exit %d: %s", code, errOut)
	}
	carried("--json", "what fruit")

	p := startRPCProc(t, z, append([]string{"rpc", "-r", "fruit"}, anthropicFlags(srv)...)...)
	p.send(`{"type":"prompt","message":"what fruit now"}`)
	p.until(isType("done"))
	carried("rpc", "what fruit now")
}
