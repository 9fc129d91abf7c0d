package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// A session's mode (modes.go), wired: which one it starts in and who chose
// it, the sandbox each runs commands in, the mode's own gate (plan mode's
// refusals, the sandbox of the call), what the model is told, present_plan
// and what becomes of a plan, and the note a user gets when nobody chose
// the mode.

// ModeStage is the mode's stage: its tool gate, after the rules and the
// validators, and what it tells the model before each prompt.
var ModeStage = Stage{Name: "zot:mode", Order: OrderPolicy}

// chooseMode is the mode a session starts in and who chose it: --mode,
// else "mode" in config.json, else the Claude Code settings' defaultMode,
// else ask where a Claude Code settings file holds rules (Claude Code's
// default mode, as before), else def — auto, or ask in zot acp. by is ""
// when nobody chose it: no --mode, no "mode" in config.json, no
// defaultMode, no Claude Code rules. A mode the managed settings forbid
// (auto, under disableBypassPermissionsMode) is an error for the flag and
// ask, with a note, otherwise.
func chooseMode(flag Mode, cfg userConfig, rules *PermissionRules, def Mode) (m Mode, by string, notes []string, err error) {
	cfgMode, cerr := cfg.str("mode")
	settings, settingsFile := rules.SettingsMode()
	switch {
	case flag != "":
		m, by = flag, "--mode"
	case cerr != nil:
		m, by = ModeAsk, "config.json"
		notes = append(notes, cerr.Error()+": zot starts in ask mode")
	case cfgMode != "":
		m, by = ModeAsk, "config.json"
		if m, err = ParseMode(cfgMode); err != nil {
			m = ModeAsk
			notes = append(notes, fmt.Sprintf("%s: \"mode\": %v: zot starts in ask mode", cfg.path, err))
		}
	case settings != "":
		m, by = ModeAsk, settingsFile
		if pm, err := ParseMode(settings); err == nil {
			m = pm
		}
	case rules.HasClaudeRules():
		m, by = ModeAsk, "Claude Code's default mode"
	default:
		m = def
	}
	if m == ModeAuto && rules.BypassDisabled() {
		if flag != "" {
			return "", "", nil, usageError{"--mode auto: the managed Claude Code settings disable bypassPermissions (disableBypassPermissionsMode), which auto is"}
		}
		if by != "" {
			notes = append(notes, fmt.Sprintf("mode auto (%s) is disabled by the managed Claude Code settings (disableBypassPermissionsMode): zot starts in ask mode", by))
		}
		m, by = ModeAsk, "the managed settings"
	}
	return m, by, notes, nil
}

// startModes makes the session's modes: the mode it starts in, what each
// needs (a sandbox), and present_plan's place among the tools. def is the
// mode nobody choosing one gives.
func (s *setup) startModes(cfg userConfig, def Mode, stderr io.Writer) error {
	src := s.permissionSources(func(l PermissionLoosening) bool { return s.approved(rulesTrustEntry(l, s.cwd)) })
	src.HostMode = true // a settings file with a defaultMode and no rule counts
	rules := LoadPermissionRules(src)
	start, by, notes, err := chooseMode(s.opts.mode, cfg, rules, def)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "zot: %s\n", sanitize(n))
	}
	s.modeFrom, s.modeStart, s.modeDef = by, start, def
	s.modes, err = NewModes(ModesConfig{Start: start, Check: s.checkMode, Sandbox: s.modeSandboxName, Apply: s.applyMode})
	if err != nil && s.opts.mode != "" {
		return usageError{fmt.Sprintf("--mode %s: %v", start, err)}
	}
	if err != nil {
		fmt.Fprintf(stderr, "zot: mode %s (%s): %v: zot starts in ask mode\n", start, by, err)
		s.modeFrom, s.modeStart = "", ModeAsk
		s.modes, err = NewModes(ModesConfig{Start: ModeAsk, Check: s.checkMode, Sandbox: s.modeSandboxName, Apply: s.applyMode})
	}
	return err
}

// applyMode makes m take effect: the rules' fallback, and present_plan
// offered in plan mode only.
func (s *setup) applyMode(m Mode) error {
	if s.rules != nil {
		if err := s.rules.SetMode(m); err != nil {
			return err
		}
	}
	s.planTool(m == ModePlan)
	return nil
}

// planTool offers present_plan to the model, or takes it away; with it go
// grep, find and ls, off by default for their token cost but what plan
// mode reads with when bash is confined or asks (--tools still filters
// them out).
func (s *setup) planTool(on bool) {
	var tools []Tool
	if on {
		tools = append([]Tool{PresentPlanTool(s.presentPlan)}, SearchTools(s.toolEnv)...)
	}
	s.agent.Tools.SetSource("plan", tools)
}

// armModes gives the rules loaded for the gates the session's mode and
// adds the mode's stage. Where the mode is still the one the session began
// in and neither --mode nor config.json chose it, it is chosen again: the
// project trusted since (the TUI's dialog) may bring a defaultMode.
func (s *setup) armModes() {
	if s.modes != nil {
		target := s.modes.Current()
		if target == s.modeStart && s.modeFrom != "--mode" && s.modeFrom != "config.json" {
			if m, by, _, err := chooseMode("", s.config, s.rules, s.modeDef); err == nil && s.modes.Check(m) == nil {
				s.modeFrom, s.modeStart, target = by, m, m
			}
		}
		if s.modes.Set(target) != nil {
			s.modes.Set(ModeAsk)
		}
	}
	s.agent.Pipeline.AddToolGate(ModeStage, s.modeGate)
	s.agent.Pipeline.AddPromptGate(ModeStage, s.modePrompt())
}

// modeBoxes are the sandboxes modes run commands in beyond the run's own
// (plan: read-only, sandboxed-auto: workspace), each made when first
// needed; a mode the kernel cannot give keeps its error.
type modeBoxes struct {
	mu    sync.Mutex
	boxes map[sandboxMode]*modeBox
}

type modeBox struct {
	sb  *Sandbox
	err error
}

// strictness orders the sandbox modes from off to read-only.
func strictness(m sandboxMode) int { return slices.Index(sandboxModes, m) }

// modeSandbox is the sandbox commands run in under m, and its mode: the
// run's own unless the mode needs a stricter one (plan: read-only;
// sandboxed-auto: at least workspace). An error says the kernel cannot
// give it.
func (s *setup) modeSandbox(m Mode) (*Sandbox, sandboxMode, error) {
	need := sandboxOff
	switch m {
	case ModePlan:
		need = sandboxReadOnly
	case ModeSandboxedAuto:
		need = sandboxWorkspace
	}
	if strictness(s.sandbox.Mode()) >= strictness(need) {
		return s.sandbox, s.sandbox.Mode(), nil
	}
	s.boxes.mu.Lock()
	defer s.boxes.mu.Unlock()
	if s.boxes.boxes == nil {
		s.boxes.boxes = map[sandboxMode]*modeBox{}
	}
	b := s.boxes.boxes[need]
	if b == nil {
		sb, _, err := sandboxFromSettings(string(need), s.cwd, s.home, s.guarded)
		b = &modeBox{sb, err}
		s.boxes.boxes[need] = b
	}
	return b.sb, need, b.err
}

// closeBoxes stops what the modes' sandboxes keep ready.
func (s *setup) closeBoxes() {
	s.boxes.mu.Lock()
	defer s.boxes.mu.Unlock()
	for _, b := range s.boxes.boxes {
		if b.sb != nil {
			b.sb.Close()
		}
	}
}

// checkMode says why m cannot be had here: auto where the managed
// settings disable bypassPermissions, sandboxed-auto where the kernel
// offers no workspace sandbox.
func (s *setup) checkMode(m Mode) error {
	switch m {
	case ModeAuto:
		if s.rules.BypassDisabled() {
			return errors.New("the managed Claude Code settings disable bypassPermissions (disableBypassPermissionsMode), which auto is")
		}
	case ModeSandboxedAuto:
		if _, _, err := s.modeSandbox(m); err != nil {
			return fmt.Errorf("it runs commands in the workspace sandbox, and %v", err)
		}
	}
	return nil
}

// modeSandboxName is Modes.Sandbox: the sandbox mode commands run in
// under m, "off", or "ask" (plan mode without a read-only sandbox).
func (s *setup) modeSandboxName(m Mode) string {
	_, mode, err := s.modeSandbox(m)
	switch {
	case err != nil && m == ModePlan:
		return "ask"
	case err != nil:
		return string(s.sandbox.Mode())
	}
	return string(mode)
}

// modeGate is the mode's tool gate. Plan mode lets through what reads
// (tools that say they change nothing, present_plan) and commands, held
// to the read-only sandbox — asked about where there is none — and
// refuses the rest, saying why to the model. sandboxed-auto runs
// commands, write and edit in the workspace sandbox. The other modes add
// nothing here: their asks are the rules' fallback.
func (s *setup) modeGate(ctx context.Context, call ToolCall) GateResult {
	mode := s.modes.Current()
	switch {
	case mode == ModePlan && call.Name == ToolBash:
		sb, _, err := s.modeSandbox(ModePlan)
		if err != nil {
			why := fmt.Sprintf("plan mode runs only commands that change nothing, and this system has no read-only sandbox to hold a command to that (%v): confirm that this one only reads", err)
			return GateResult{Verdict: GateAsk, Notes: []GateNote{{By: "mode:plan", Decision: DecisionAsk, Reason: why}}}
		}
		return GateResult{Confine: &Confinement{Sandbox: sb, Name: string(sandboxReadOnly), Fixed: true}}
	case mode == ModePlan:
		t, ok := s.agent.Tools.Lookup(call.Name)
		if !ok || IsReadOnly(t) {
			return GateResult{} // the tool says it is unknown itself
		}
		what := call.Name + " can change things"
		if strings.HasPrefix(call.Name, "mcp__") {
			what = call.Name + " is not marked read-only by its MCP server (readOnlyHint)"
		}
		why := fmt.Sprintf("not run: zot is in plan mode, and %s. Nothing changes until the user approves a plan: read, search and run read-only commands, then call %s with the plan.", what, ToolPresentPlan)
		return GateResult{Verdict: GateDeny, Reason: why, Notes: []GateNote{{By: "mode:plan", Decision: DecisionDeny, Reason: why}}}
	case mode == ModeSandboxedAuto && (call.Name == ToolBash || call.Name == ToolWrite || call.Name == ToolEdit):
		sb, sm, err := s.modeSandbox(mode)
		if err != nil {
			return GateResult{Verdict: GateDeny, Reason: "not run: sandboxed-auto has no sandbox here: " + err.Error()}
		}
		if sb == s.sandbox {
			return GateResult{}
		}
		return GateResult{Confine: &Confinement{Sandbox: sb, Name: string(sm)}}
	}
	return GateResult{}
}

// modePrompt tells the model, with each prompt in plan mode, what plan
// mode allows, and with the first prompt after a change of mode what the
// mode is now.
func (s *setup) modePrompt() PromptGate {
	var mu sync.Mutex
	told := s.modes.Current()
	if told == ModePlan {
		told = "" // the first prompt hears of it
	}
	return func(ctx context.Context, text string) (bool, string, string) {
		mode := s.modes.Current()
		mu.Lock()
		changed := mode != told
		told = mode
		mu.Unlock()
		switch {
		case mode == ModePlan:
			return false, "", fmt.Sprintf("[zot: plan mode. You may read, search and run commands that only read (they run in a read-only sandbox); write, edit and tools that change things are refused. Investigate, then call %s with your plan; nothing changes until the user approves it.]", ToolPresentPlan)
		case changed:
			return false, "", fmt.Sprintf("[zot: the mode is now %s: %s.]", mode, mode.About())
		}
		return false, "", ""
	}
}

// presentPlan is present_plan: the plan goes to whoever approves plans
// here; an approval switches to the mode chosen and tells the model to
// carry the plan out, a rejection keeps plan mode. Where nobody approves
// plans (-p), the plan is the run's answer and nothing is carried out.
func (s *setup) presentPlan(ctx context.Context, plan string) ToolResult {
	if mode := s.modes.Current(); mode != ModePlan {
		return textResult(fmt.Sprintf("zot is not in plan mode (the mode is %s): no approval is needed; go on with the work.", mode))
	}
	var ask approvalAsker
	if s.planAsk != nil {
		ask = s.planAsk()
	}
	if ask == nil {
		s.lastPlan.Store(&plan)
		return textResult("Nobody approves plans in this run (zot -p, or an rpc client that does not answer approvals): the plan is the run's answer as it stands, and nothing of it is carried out. End your turn now.")
	}
	var offer []string
	for _, m := range []Mode{ModeAcceptEdits, ModeAsk, ModeAuto, ModeSandboxedAuto} {
		if s.modes.Check(m) == nil {
			offer = append(offer, string(m))
		}
	}
	args, _ := json.Marshal(map[string]string{"plan": plan})
	q := approvalQuestion{Call: ToolCall{ID: ToolCallID(ctx), Name: ToolPresentPlan, Args: args},
		Asks: []GateNote{{By: "mode:plan", Decision: DecisionAsk, Reason: "approve the plan, and the mode to carry it out in"}},
		Plan: &planQuestion{Text: plan, Modes: offer}}
	a := ask(ctx, q)
	by := cmp.Or(a.By, "the approver")
	if a.Decision != ApprovalAllow && a.Decision != ApprovalAlways {
		msg := "The plan was not approved (" + by + ")"
		if a.Message != "" {
			msg += ", who said: " + a.Message
		}
		return errorResult("%s. zot stays in plan mode: revise the plan and present it again, or ask the user what they want.", msg)
	}
	to := Mode(cmp.Or(a.Mode, offer[0]))
	if !slices.Contains(offer, string(to)) {
		return errorResult("The plan was approved (%s) with mode %q, which is not one zot offered (%s); zot stays in plan mode: present the plan again.", by, a.Mode, strings.Join(offer, ", "))
	}
	if err := s.modes.Set(to); err != nil {
		return errorResult("The plan was approved (%s), but zot could not switch to %s: %v; it stays in plan mode.", by, to, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The plan was approved (%s).", by)
	if a.Plan != "" && a.Plan != plan {
		fmt.Fprintf(&b, " They changed it; the plan to carry out is:\n\n%s\n", a.Plan)
	}
	if a.Message != "" {
		fmt.Fprintf(&b, "\nThey add: %s\n", a.Message)
	}
	fmt.Fprintf(&b, "\nzot is now in %s mode: %s. Carry the plan out.", to, to.About())
	return textResult(b.String())
}

// The note when nobody chose the mode: the TUI's first start shows it,
// and -p and --json say it on stderr, each once per $ZOT_HOME (a file
// under $ZOT_HOME/noted/ remembers).

// modeNote is the note, or "" when someone chose the mode.
func (s *setup) modeNote() string {
	if s.modeFrom != "" {
		return ""
	}
	m := s.modes.Current()
	confined := "commands are not confined (no sandbox)"
	if sb := s.modes.Sandbox(m); sb != "off" {
		confined = "commands run in the " + sb + " sandbox"
	}
	return fmt.Sprintf("mode %s: %s; %s. Nobody chose this mode: change it with shift+tab (in the TUI), --mode NAME, or \"mode\" in %s (docs/permissions.md#modes).",
		m, m.About(), confined, filepath.Join(s.home, "config.json"))
}

// noteOnce says whether the note for kind ("mode-tui", "mode-print") is
// yet to be shown in this $ZOT_HOME, and remembers that it now is. A
// ZOT_HOME zot cannot write shows it every time.
func noteOnce(home, kind string) bool {
	dir := filepath.Join(home, "noted")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(dir, kind), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return !errors.Is(err, os.ErrExist)
	}
	f.Close()
	return true
}
