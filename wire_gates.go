package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The modes' gates. Every mode that runs tools — -p and --json, rpc, the
// TUI, and the prompt templates' !`commands`, which run through the same
// agent — gets its plugins and its gates from arm, and only from it: what
// a mode brings is a modeHost (where notes go, who answers asks, its own
// gates). Until arm has checked that the agent holds every stage of
// requiredStages, the agent's first tool gate denies every call, so a mode
// that forgets to arm runs no tool at all rather than one without its
// checks and its audit line. /btw runs no tools.

// modeHost is what a mode gives the wiring: where the plugins' notes and
// failures go, who answers the gates' questions, and the mode's own tool
// gates. askPlan says who approves a plan now (nil, or a nil asker:
// nobody); outside whether a command the sandbox refused may be offered a
// run outside it (nil: never).
type modeHost struct {
	name      string // for messages: "-p", "rpc", "the TUI"
	ext       ExtConfig
	mcpStatus func(server, level, msg string)
	hookNote  func(level, msg string)
	confirm   ConfirmFunc
	gates     []modeGate
	askPlan   func() approvalAsker
	outside   func() bool
	// elicit answers the MCP servers' questions; the zero value answers
	// none, and a server asking anyway is told elicitRefusal (a default
	// naming the mode when empty).
	elicit        Elicitor
	elicitRefusal string
	// mcpLogin lets an MCP server's OAuth login happen in a browser while
	// the mode waits: the TUI's. Modes without one fail such a server,
	// naming `zot mcp login`.
	mcpLogin *MCPLogin
}

type modeGate struct {
	stage Stage
	gate  ToolGate
}

// armedStage is the setup's own first tool gate (armedGate).
var armedStage = Stage{Name: "zot:armed", Order: OrderPrepare}

// armedGate denies every call until arm has run and found the pipeline
// whole.
func (s *setup) armedGate(ctx context.Context, call ToolCall) GateResult {
	if s.armed.Load() {
		return GateResult{}
	}
	why := "zot's gates were not set up for this mode (a bug in zot; please report it)"
	return GateResult{Verdict: GateDeny, Reason: "not run: " + why, Notes: []GateNote{{By: armedStage.Name, Decision: DecisionDeny, Reason: why}}}
}

// arm starts the plugins (MCP servers, extensions, hooks, whose stages
// join the agent's pipeline), adds the command validators and the audit
// log, the mode's own gates and its confirm, and checks the result against
// requiredStages. On error the agent stays unarmed: it runs no tool.
// stop shuts the plugins down, also after an error.
func (s *setup) arm(ctx context.Context, h modeHost) (exts *ExtManager, stop func(), err error) {
	exts, stop = s.startPlugins(ctx, h)
	s.guardTools()
	for _, g := range h.gates {
		s.agent.Pipeline.AddToolGate(g.stage, g.gate)
	}
	s.agent.Pipeline.SetConfirm(h.confirm)
	s.planAsk, s.agent.OfferOutside = h.askPlan, h.outside
	if problems := s.armProblems(h.gates); len(problems) > 0 {
		return exts, stop, fmt.Errorf("%s: the agent's gates are incomplete, so no tool will run: %s (a bug in zot; please report it)", h.name, strings.Join(problems, "; "))
	}
	s.armed.Store(true)
	return exts, stop, nil
}

// requiredStages are the stages no mode may run tools without, per hook
// point, in the order they must run: the extensions' interceptors, the
// hooks, the command validators, the session's mode (plan mode's
// refusals, the sandbox of each call), and the audit log last (unless
// --no-audit).
func (s *setup) requiredStages() map[HookPoint][]Stage {
	req := map[HookPoint][]Stage{
		HookBeforePrompt:           {HookStage, ModeStage},
		HookBeforeTurn:             {ExtStage, HookStage},
		HookBeforeToolExecute:      {armedStage, ExtStage, HookStage, ValidatorStage, ModeStage},
		HookAfterToolExecute:       {HookStage},
		HookBeforeAssistantMessage: {ExtStage},
		HookOnStop:                 {HookStage},
	}
	if !s.opts.noAudit {
		req[HookAfterToolExecute] = append(req[HookAfterToolExecute], AuditStage)
	}
	return req
}

// armProblems says what the agent's pipeline lacks of requiredStages and
// the mode's own gates, or holds in another order, and whether nobody
// answers asks.
func (s *setup) armProblems(own []modeGate) []string {
	var problems []string
	req := s.requiredStages()
	for _, g := range own {
		req[HookBeforeToolExecute] = append(req[HookBeforeToolExecute], g.stage)
	}
	for _, point := range HookPoints {
		have := s.agent.Pipeline.Stages(point)
		next := 0 // where the next required stage may be
		for _, want := range req[point] {
			i := slices.IndexFunc(have, func(st Stage) bool { return st.Name == want.Name })
			switch {
			case i < 0:
				problems = append(problems, fmt.Sprintf("%s: no %q stage", point, want.Name))
			case have[i].Order != want.Order:
				problems = append(problems, fmt.Sprintf("%s: %q has order %d, want %d", point, want.Name, have[i].Order, want.Order))
			case i < next:
				problems = append(problems, fmt.Sprintf("%s: %q is out of order", point, want.Name))
			default:
				next = i + 1
			}
		}
	}
	if !s.agent.Pipeline.HasConfirm() {
		problems = append(problems, "nobody answers the gates' questions (no confirm)")
	}
	return problems
}

// onceHost is the host of -p and --json: notes on stderr, and nobody to
// ask (--approve-asks says yes, also to a run outside the sandbox). Nobody
// approves a plan: it is the run's answer.
func onceHost(o zotOptions, stderr io.Writer) modeHost {
	name := "-p"
	if o.json {
		name = "--json"
	}
	return modeHost{name: name, ext: stderrExtHooks(stderr), mcpStatus: mcpStderrStatus(stderr), hookNote: hooksStderrNotes(stderr),
		confirm: NonInteractiveConfirm(o.approveAsks), outside: func() bool { return o.approveAsks }}
}

// rpcHost is the host of rpc: notes and failures of the plugins reach the
// client as ext_notify events; a client that said hello with "approvals":
// true answers asks, for any other they are refused (or --approve-asks).
func rpcHost(o zotOptions, srv *rpcServer, hostLog func(format string, args ...any)) modeHost {
	return modeHost{
		name: "rpc",
		ext:  ExtConfig{OnNote: func(n ExtNote) { srv.Notify(rpcNote(n)) }, Log: hostLog},
		mcpStatus: func(server, level, msg string) {
			srv.Notify(rpcNote{Extension: "mcp:" + server, Level: extLevel(level), Message: msg})
		},
		hookNote: func(level, msg string) { srv.Notify(rpcNote{Extension: "hooks", Level: level, Message: msg}) },
		confirm:  srv.Confirm(NonInteractiveConfirm(o.approveAsks)),
		askPlan:  srv.Asker,
		outside:  func() bool { return o.approveAsks || srv.Asker() != nil },
		// Offered in both modes: a client may say hello after the servers
		// started; until one opts in, the questions are declined.
		elicit: Elicitor{Form: true, URL: true, Ask: srv.Elicit},
	}
}

// tuiHost is the host of the TUI: notes in its transcript (MCP servers
// report only trouble there: a ready server is not news), its dialog
// answers asks, and its --no-yolo gate comes last.
func tuiHost(t *TUI) modeHost {
	yolo, confirm := t.Gates()
	return modeHost{
		name: "the TUI",
		ext: ExtConfig{
			OnNote:           func(n ExtNote) { t.Note(tuiNote(n)) },
			OnPanel:          func(u PanelUpdate) { t.Panel(tuiPanelUpdate{Kind: u.Kind, Panel: tuiPanel(u.Panel)}) },
			Log:              t.Logf,
			ReservedCommands: tuiCommandNames(),
		},
		mcpStatus: func(server, level, msg string) {
			if level != "info" {
				t.Note(tuiNote{Extension: "mcp:" + server, Level: extLevel(level), Message: msg})
			}
		},
		mcpLogin: &MCPLogin{Show: func(server, url string) {
			t.Note(tuiNote{Extension: "mcp:" + server, Level: "info", Message: "to authorize zot for this server, open: " + url})
		}},
		hookNote: func(level, msg string) { t.Note(tuiNote{Extension: "hooks", Level: level, Message: msg}) },
		confirm:  confirm,
		gates:    []modeGate{{YoloStage, yolo}},
		askPlan:  func() approvalAsker { return t.ask },
		outside:  func() bool { return true },
		elicit:   Elicitor{Form: true, URL: true, Ask: t.Elicit},
	}
}

// sessionApprovals are a mode's "don't ask again" answers: in its working
// directory, starting from those saved for it, with previews through its
// file tools' path rules and command lines read by the validators'
// splitter; "file edits here" never covers the guarded paths.
func (s *setup) sessionApprovals() *sessionApprovals {
	a := newSessionApprovals(s.cwd, func(call ToolCall) string { return previewFileChange(s.toolEnv, call) }, splitForApproval)
	a.guarded = guardedBy(s.guarded)
	return a.withSaved(savedApprovalsPath(s.home), s.savedApprovals)
}
