package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Modes: one notion of how much zot does without asking, the same in the
// TUI (shift+tab), -p and --json (--mode), rpc (set_mode), zot acp (the
// session modes) and config.json ("mode"). A mode decides what the calls
// no rule of the user's decides get (the permission rules' fallback,
// permissions_claude.go), and the sandbox commands run in (wire_modes.go);
// the user's rules, validators and hooks still decide first.

// Mode is one of zot's modes.
type Mode string

const (
	ModeAsk           Mode = "ask"
	ModeAcceptEdits   Mode = "accept-edits"
	ModePlan          Mode = "plan"
	ModeAuto          Mode = "auto"
	ModeSandboxedAuto Mode = "sandboxed-auto"
	ModeDontAsk       Mode = "dont-ask"
)

// modeInfo is what zot says of a mode and how it meets Claude Code's.
type modeInfo struct {
	mode Mode
	// claude is Claude Code's permission mode (defaultMode) of the same
	// meaning; "" for none.
	claude string
	name   string // for menus: "Accept edits"
	about  string
	// cycle: shift+tab visits it.
	cycle bool
}

// modeTable lists the modes in the order shift+tab visits them and menus
// list them.
var modeTable = []modeInfo{
	{ModeAsk, "default", "Ask", "ask before every command, file change and MCP tool your rules do not allow", true},
	{ModeAcceptEdits, "acceptEdits", "Accept edits", "change files in the project without asking; ask before commands and MCP tools your rules do not allow", true},
	{ModePlan, "plan", "Plan", "read, search and run read-only commands only, then present a plan for you to approve; nothing changes until you do", true},
	{ModeAuto, "bypassPermissions", "Auto", "run what no rule of yours denies or asks about, without asking", true},
	{ModeSandboxedAuto, "", "Sandboxed auto", "run commands and file changes without asking, inside the workspace sandbox; ask before MCP tools your rules do not allow", true},
	{ModeDontAsk, "dontAsk", "Don't ask", "refuse, without asking, what would be asked about", false},
}

func modeOf(m Mode) modeInfo {
	for _, i := range modeTable {
		if i.mode == m {
			return i
		}
	}
	return modeInfo{mode: m, name: string(m)}
}

// ParseMode reads a mode by zot's name, or by Claude Code's
// (acceptEdits, bypassPermissions, default, dontAsk, plan).
func ParseMode(s string) (Mode, error) {
	for _, i := range modeTable {
		if string(i.mode) == s || i.claude != "" && i.claude == s {
			return i.mode, nil
		}
	}
	var names []string
	for _, i := range modeTable {
		names = append(names, string(i.mode))
	}
	return "", fmt.Errorf("unknown mode %q (want %s)", s, strings.Join(names, ", "))
}

// Claude is Claude Code's permission mode of the same meaning, "" for
// none (sandboxed-auto).
func (m Mode) Claude() string { return modeOf(m).claude }

// Name is the mode for a menu ("Accept edits").
func (m Mode) Name() string { return modeOf(m).name }

// About says what the mode does, in a line.
func (m Mode) About() string { return modeOf(m).about }

// Executes says whether the mode carries a plan out: every mode but plan
// and dont-ask, which changes nothing without a rule allowing it.
func (m Mode) Executes() bool { return m != ModePlan && m != ModeDontAsk && m != "" }

// Modes is a session's mode: the current one, which may change while
// calls are judged, and those who hear of a change. Its methods are safe
// from any goroutine; a nil *Modes is a session without modes (an
// embedder's), whose mode is "".
type Modes struct {
	mu   sync.Mutex
	cur  Mode
	hear []func(Mode)
	// check says why a mode cannot be had in this session, nil when it
	// can; it may build what the mode needs (the sandbox of
	// sandboxed-auto) and is asked again until it says yes.
	check func(Mode) error
	// apply makes a mode take effect (the permission rules' fallback);
	// an error keeps the old one.
	apply func(Mode) error
	// sandbox names what commands run in under a mode (Sandbox).
	sandbox func(Mode) string
}

// ModesConfig is what a session's modes are made from.
type ModesConfig struct {
	Start   Mode
	Check   func(Mode) error
	Apply   func(Mode) error
	Sandbox func(Mode) string
}

// NewModes starts a session's modes in c.Start, applying it.
func NewModes(c ModesConfig) (*Modes, error) {
	m := &Modes{check: c.Check, apply: c.Apply, sandbox: c.Sandbox}
	if err := m.Set(c.Start); err != nil {
		return nil, err
	}
	return m, nil
}

// Current is the mode now.
func (m *Modes) Current() Mode {
	if m == nil {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur
}

// Set switches to mode, telling those who listen; the mode stays as it was
// when the mode cannot be had here (the error says why).
func (m *Modes) Set(to Mode) error {
	if m == nil {
		return errors.New("this session has no modes")
	}
	if _, err := ParseMode(string(to)); err != nil {
		return err
	}
	if err := m.Check(to); err != nil {
		return err
	}
	m.mu.Lock()
	if m.apply != nil {
		if err := m.apply(to); err != nil {
			m.mu.Unlock()
			return err
		}
	}
	changed := m.cur != to
	m.cur = to
	hear := slices.Clone(m.hear)
	m.mu.Unlock()
	if changed {
		for _, h := range hear {
			h(to)
		}
	}
	return nil
}

// Check says why mode cannot be had in this session, nil when it can.
func (m *Modes) Check(mode Mode) error {
	if m == nil || m.check == nil {
		return nil
	}
	return m.check(mode)
}

// Next is the mode shift+tab goes to from the current one: the next of
// the cycle that can be had here.
func (m *Modes) Next() Mode {
	cur := m.Current()
	var cycle []Mode
	for _, i := range modeTable {
		if i.cycle {
			cycle = append(cycle, i.mode)
		}
	}
	at := slices.Index(cycle, cur)
	for step := 1; step <= len(cycle); step++ {
		next := cycle[(at+step+len(cycle))%len(cycle)]
		if m.Check(next) == nil {
			return next
		}
	}
	return cur
}

// Available are the modes this session can be in, in the table's order.
func (m *Modes) Available() []Mode {
	var out []Mode
	for _, i := range modeTable {
		if m.Check(i.mode) == nil {
			out = append(out, i.mode)
		}
	}
	return out
}

// Sandbox names what commands run in under mode: a sandbox mode
// (docs/sandbox.md), "off" when they are not confined, "ask" when each is
// asked about instead (plan mode where the kernel offers no read-only
// sandbox).
func (m *Modes) Sandbox(mode Mode) string {
	if m == nil || m.sandbox == nil {
		return "off"
	}
	return m.sandbox(mode)
}

// Hear calls f with the new mode after each change, on the goroutine
// that made it.
func (m *Modes) Hear(f func(Mode)) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hear = append(m.hear, f)
}

// Confinement says in words what commands run in under mode: "not
// confined", "sandbox workspace".
func (m *Modes) Confinement(mode Mode) string {
	switch sb := m.Sandbox(mode); sb {
	case "off", "":
		return "not confined"
	case "ask":
		return "each asked (no read-only sandbox here)"
	default:
		return "sandbox " + sb
	}
}
