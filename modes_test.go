package main

import "testing"

// Each of Claude Code's permission modes (defaultMode) reads as the zot
// mode of the same meaning, and back; sandboxed-auto has none.
func TestModesMeetClaudeCodesModes(t *testing.T) {
	t.Parallel()
	for claude, want := range map[string]Mode{
		"default":           ModeAsk,
		"acceptEdits":       ModeAcceptEdits,
		"plan":              ModePlan,
		"bypassPermissions": ModeAuto,
		"dontAsk":           ModeDontAsk,
	} {
		if m, err := ParseMode(claude); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", claude, m, err, want)
		}
		if back := want.Claude(); back != claude {
			t.Errorf("%s.Claude() = %q, want %q", want, back, claude)
		}
	}
	if c := ModeSandboxedAuto.Claude(); c != "" {
		t.Errorf("sandboxed-auto.Claude() = %q, want none", c)
	}
	if _, err := ParseMode("yolo"); err == nil {
		t.Error("ParseMode(yolo) is no error")
	}
}
