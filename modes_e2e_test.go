package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What the modes ask about, through the binary in -p, where nobody
// answers: an ask is a refusal the model is told of, and --approve-asks
// says yes.

// ask asks before a file change and a command; accept-edits runs the file
// change and asks before the command, unless a rule allows it.
func TestAskAndAcceptEditsAskWhatTheyShould(t *testing.T) {
	t.Parallel()
	const asked = "non-interactive mode (pass --approve-asks to allow)"
	write := obj{"path": "notes.txt", "content": "x\n"}
	touch := obj{"command": "touch made.txt"}
	for _, c := range []struct {
		mode, tool string
		args       obj
		runs       bool
	}{
		{"ask", "write", write, false},
		{"ask", "bash", touch, false},
		{"accept-edits", "write", write, true},
		{"accept-edits", "bash", touch, false},
	} {
		t.Run(c.mode+"/"+c.tool, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			result, stderr := toolResultSent(t, z, c.tool, c.args, "--mode", c.mode)
			made := "notes.txt"
			if c.tool == "bash" {
				made = "made.txt"
			}
			if ran := fileExists(filepath.Join(z.cwd, made)); ran != c.runs {
				t.Errorf("%s in %s: ran %v, want %v; the model was told:\n%s\nstderr: %s", c.tool, c.mode, ran, c.runs, result, stderr)
			}
			if !c.runs && !strings.Contains(result, asked) {
				t.Errorf("the model was not told the call waits for an answer:\n%s", result)
			}
		})
	}
	t.Run("accept-edits/bash allowed by a rule", func(t *testing.T) {
		t.Parallel()
		z := newZotRun(t)
		userSettings(t, z, perms("allow", []string{"Bash(touch:*)"}))
		if result, stderr := toolResultSent(t, z, "bash", touch, "--mode", "accept-edits"); !fileExists(filepath.Join(z.cwd, "made.txt")) {
			t.Errorf("the allowed command did not run:\n%s\nstderr: %s", result, stderr)
		}
	})
}

// Where the kernel offers no read-only sandbox, plan mode asks before a
// command rather than running it unconfined: -p refuses it, saying why,
// and --approve-asks lets it run.
func TestPlanModeAsksBeforeCommandsWithoutAReadOnlySandbox(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	z.env = append(z.env, sandboxForceEnv+"=unavailable")
	if err := os.WriteFile(filepath.Join(z.cwd, "kumquat.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	result, stderr := toolResultSent(t, z, "bash", obj{"command": "ls"}, "--mode", "plan")
	if strings.Contains(result, "kumquat.txt") || !strings.Contains(result, "this system has no read-only sandbox") || !strings.Contains(result, "non-interactive mode") {
		t.Errorf("plan mode without a sandbox, nobody to ask: the model was told:\n%s\nstderr: %s", result, stderr)
	}
	result, stderr = toolResultSent(t, z, "bash", obj{"command": "ls"}, "--mode", "plan", "--approve-asks")
	if !strings.Contains(result, "kumquat.txt") {
		t.Errorf("plan mode without a sandbox, --approve-asks: the model was told:\n%s\nstderr: %s", result, stderr)
	}
}
