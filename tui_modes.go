package main

import "strings"

// The session's mode in the TUI: the status bar shows it and what
// commands run in, shift+tab and /mode change it, and each change is a
// line in the transcript. A plan the model presents is a confirmation
// (tui_approvals.go).

// addModeStatus adds the mode and what commands run in to the status
// bar: the sandbox, or "not confined" (with the jail, when on).
func (t *TUI) addModeStatus(add func(string, style)) {
	mode := t.cfg.Modes.Current()
	sb := t.cfg.Sandbox
	if t.cfg.Modes != nil {
		sb = t.cfg.Modes.Sandbox(mode)
	}
	if mode != "" {
		add(string(mode), modeStyle(mode))
	}
	switch sb {
	case "", "off":
		if t.cfg.ToolEnv.Jailed() {
			add("jail", fgYellow)
		}
		st := sDim
		if mode == ModeAuto {
			st = fgYellow // runs without asking, unconfined
		}
		add("commands not confined", st)
	case "ask":
		add("commands asked (no sandbox)", fgYellow)
	default:
		add("sandbox "+sb, fgGreen)
	}
}

func modeStyle(m Mode) style {
	switch m {
	case ModePlan:
		return fgCyan | sBold
	case ModeAuto:
		return fgYellow | sBold
	case ModeSandboxedAuto:
		return fgGreen | sBold
	}
	return sBold
}

// cycleMode is shift+tab: the next mode of the cycle this session can be
// in (ask, accept-edits, plan, auto, sandboxed-auto).
func (t *TUI) cycleMode() {
	if t.cfg.Modes == nil {
		return
	}
	t.setMode(t.cfg.Modes.Next())
}

func (t *TUI) setMode(m Mode) {
	if err := t.cfg.Modes.Set(m); err != nil {
		t.logf(fgRed, "mode %s: %v", m, err)
	}
}

// ModeChanged shows a change of mode, however it came (shift+tab, a plan
// approved); any goroutine may call it.
func (t *TUI) ModeChanged(m Mode) { t.post(msgMode{m}) }

func (t *TUI) modeChanged(m Mode) {
	t.logf(modeStyle(m), "mode %s: %s (commands: %s) · shift+tab changes it", m, m.About(), t.cfg.Modes.Confinement(m))
}

// cmdMode is /mode: without a name it lists the modes, with one it
// switches to it.
func (t *TUI) cmdMode(args string) {
	if t.cfg.Modes == nil {
		t.logf(sDim, "this session has no modes")
		return
	}
	name := strings.TrimSpace(args)
	if name == "" {
		cur := t.cfg.Modes.Current()
		for _, m := range modeTable {
			mark, st := "  ", sDim
			if m.mode == cur {
				mark, st = "› ", modeStyle(cur)
			}
			why := ""
			if err := t.cfg.Modes.Check(m.mode); err != nil {
				why = " (not here: " + err.Error() + ")"
			}
			t.logf(st, "%s%-15s %s%s", mark, m.mode, m.about, why)
		}
		return
	}
	m, err := ParseMode(name)
	if err != nil {
		t.logf(fgRed, "/mode: %v", err)
		return
	}
	t.setMode(m)
}
