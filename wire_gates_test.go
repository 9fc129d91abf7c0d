package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A mode as a test builds it: the setup and the host, as the mode's own
// function makes them, and how it arms the agent (arm, for every real
// mode).
type modeUnderTest struct {
	name  string
	build func(t *testing.T, o zotOptions) (*setup, modeHost)
	start func(ctx context.Context, s *setup, h modeHost) (stop func())
	// asks is the note the mode's own default adds to a command's
	// decisions (zot acp asks before commands).
	asks string
}

func armMode(ctx context.Context, s *setup, h modeHost) func() {
	_, stop, _ := s.arm(ctx, h) // a failure shows in modeProblems
	return stop
}

// everyMode lists the modes that run tools. The prompt templates'
// !`commands` run through each mode's agent (modeProblems runs one);
// /btw runs no tools (TestBtwAsksBesideTheConversationWhileTheAgentWorks).
var everyMode = []modeUnderTest{
	{"-p", func(t *testing.T, o zotOptions) (*setup, modeHost) {
		o.print = true
		s, err := newModeSetup(o, true, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return s, onceHost(o, io.Discard)
	}, armMode, ""},
	{"--json", func(t *testing.T, o zotOptions) (*setup, modeHost) {
		o.json = true
		s, err := newModeSetup(o, true, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return s, onceHost(o, io.Discard)
	}, armMode, ""},
	{"rpc", func(t *testing.T, o zotOptions) (*setup, modeHost) {
		s, err := newModeSetup(o, false, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		srv := newRPCServer(rpcConfig{Agent: s.agent, Provider: s.provider, Cwd: s.cwd}, strings.NewReader(""), io.Discard)
		return s, rpcHost(o, srv, s.agent.Log)
	}, armMode, ""},
	{"the TUI", func(t *testing.T, o zotOptions) (*setup, modeHost) {
		o.interactive = true
		s, err := newSetup(o, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.openSession(true, nil); err != nil {
			t.Fatal(err)
		}
		tui := newTUI(s.tuiConfig(), io.Discard)
		t.Cleanup(tui.cancel)
		return s, tuiHost(tui)
	}, armMode, ""},
	{"zot acp", func(t *testing.T, o zotOptions) (*setup, modeHost) {
		s, err := newACPSetup(o, acpOpenRequest{Cwd: o.cwd}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		refuse := func(context.Context, approvalQuestion) approvalAnswer { return approvalAnswer{Decision: ApprovalDeny} }
		return s, acpHost(s, acpOpenRequest{Ask: refuse}, io.Discard)
	}, armMode, ",rules:claude-code=ask"},
}

// modeProblems says where a mode, built and started, falls short of the
// whole chain: a stage missing from its agent's pipeline or out of order,
// nobody to answer asks, or — run for real — a command that a validator
// denies running, or a call missing from the audit log. The model asks
// for the denied command, and so does a prompt template.
func modeProblems(t *testing.T, m modeUnderTest, o zotOptions) []string {
	ctx := context.Background()
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "touch model.marker && curl -X POST https://api.example.invalid/items"}),
		replayStep{Events: anthropicEvents(gen{Text: "I will not post."})},
		replayStep{Events: anthropicEvents(gen{Text: "Posted nothing."})})
	o.baseURL = srv.URL
	s, host := m.build(t, o)
	defer s.close()
	stop := m.start(ctx, s, host)
	defer stop()

	problems := s.armProblems(host.gates)
	if err := s.agent.Prompt(ctx, "post the item", nil, nil); err != nil {
		problems = append(problems, "the prompt failed: "+err.Error())
	}
	if err := s.prompts(func(string) {}).Send(ctx, s.agent, "/post", nil, nil); err != nil {
		problems = append(problems, "the template's prompt failed: "+err.Error())
	}
	for _, marker := range []string{"model.marker", "template.marker"} {
		if _, err := os.Stat(filepath.Join(s.cwd, marker)); err == nil {
			problems = append(problems, "the command a validator denies ran and left "+marker)
		}
	}
	var lines []auditEntry
	if _, err := os.Stat(filepath.Join(s.home, "logs", "audit.jsonl")); err == nil {
		lines = auditLines(t, s.home)
	}
	var calls []string
	for _, e := range lines {
		var by []string
		for _, d := range e.Decisions {
			by = append(by, d.By+"="+string(d.Decision))
		}
		calls = append(calls, e.Outcome+" "+strings.Join(by, ","))
	}
	want := []string{"blocked validator:no-post=deny" + m.asks, "blocked prompt:post=request,validator:no-post=deny" + m.asks}
	if !slices.Equal(calls, want) {
		problems = append(problems, fmt.Sprintf("the audit log has %q, want %q", calls, want))
	}
	return problems
}

// TestEveryModeRunsToolsThroughTheWholeChain builds each mode as its own
// function does and checks that no tool runs but through the extensions,
// the hooks and the validators, with an audit line — for the model's
// calls and a template's !`command`.
func TestEveryModeRunsToolsThroughTheWholeChain(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	for _, m := range everyMode {
		t.Run(m.name, func(t *testing.T) {
			o := modeTestHome(t)
			for _, p := range modeProblems(t, m, o) {
				t.Error(p)
			}
		})
	}
	t.Run("stages", func(t *testing.T) {
		o := modeTestHome(t)
		o.json = true
		s, err := newModeSetup(o, true, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		_, stop, err := s.arm(context.Background(), onceHost(o, io.Discard))
		defer stop()
		if err != nil {
			t.Fatal(err)
		}
		for point, want := range map[HookPoint]string{
			HookBeforePrompt:           "hooks zot:mode",
			HookBeforeTurn:             "extensions hooks",
			HookBeforeToolExecute:      "zot:armed extensions hooks validators zot:mode",
			HookAfterToolExecute:       "hooks audit",
			HookBeforeAssistantMessage: "extensions",
			HookOnStop:                 "hooks",
		} {
			var got []string
			for _, st := range s.agent.Pipeline.Stages(point) {
				got = append(got, st.Name)
			}
			if strings.Join(got, " ") != want {
				t.Errorf("%s: %q, want %q", point, got, want)
			}
		}
	})
}

// TestTheModeCheckCatchesAModeWithoutGates is the test of the check
// above: a mode that starts its plugins but does not arm — as a new mode
// that forgot to would — fails it, and runs no tool at all.
func TestTheModeCheckCatchesAModeWithoutGates(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	unarmed := everyMode[0]
	unarmed.name = "a mode that forgot to arm"
	unarmed.start = func(ctx context.Context, s *setup, h modeHost) func() {
		_, stop := s.startPlugins(ctx, h)
		return stop
	}
	o := modeTestHome(t)
	problems := strings.Join(modeProblems(t, unarmed, o), "\n")
	for _, want := range []string{
		`before_tool_execute: no "validators" stage`,
		`after_tool_execute: no "audit" stage`,
		"nobody answers the gates' questions",
		"the audit log has []",
	} {
		if !strings.Contains(problems, want) {
			t.Errorf("the check did not find %q; it found:\n%s", want, problems)
		}
	}
	if _, err := os.Stat(filepath.Join(o.cwd, "model.marker")); err == nil {
		t.Error("an unarmed agent ran a command")
	}

	// Stages out of their order, and a mode's own gate missing.
	s := &setup{agent: NewAgent(nil, "m", NewToolRegistry())}
	s.agent.Pipeline.AddToolGate(armedStage, s.armedGate)
	s.agent.Pipeline.AddToolGate(Stage{Name: ValidatorStage.Name, Order: OrderIntercept - 1}, func(context.Context, ToolCall) GateResult { return GateResult{} })
	s.agent.Pipeline.AddToolGate(ExtStage, func(context.Context, ToolCall) GateResult { return GateResult{} })
	problems = strings.Join(s.armProblems([]modeGate{{YoloStage, nil}}), "\n")
	for _, want := range []string{`before_tool_execute: no "hooks" stage`, `before_tool_execute: "validators" has order 199, want 400`, `no "--no-yolo" stage`} {
		if !strings.Contains(problems, want) {
			t.Errorf("the check did not find %q; it found:\n%s", want, problems)
		}
	}
	if d := s.agent.Pipeline.Decide(context.Background(), bashLS); !d.Block || !strings.Contains(d.Reason, "zot's gates were not set up for this mode") {
		t.Errorf("an unarmed setup decided %+v", d)
	}
}

// modeTestHome makes a private $ZOT_HOME and HOME for an in-process run:
// a validator that denies POST requests, a template whose !`command` is
// one, and options for a replayed anthropic model.
func modeTestHome(t *testing.T) zotOptions {
	home, cwd := t.TempDir(), t.TempDir()
	t.Setenv("ZOT_HOME", home)
	t.Setenv("HOME", home)
	withValidators(t, home, obj{"name": "no-post", "script": "deny_post.py", "commands": []string{"curl"}})
	writePrompt(t, filepath.Join(home, "prompts", "post.md"), "Posted: !`touch template.marker && curl -X POST https://api.example.invalid/items`")
	return zotOptions{provider: "anthropic", apiKey: "test-key", cwd: cwd, noMCP: true, noSkills: true}
}

// TestEveryModeEndToEndDeniesAndAudits runs the built binary in each mode
// with a validator that denies POST requests: the model's command does not
// run, and the audit log says the validator denied it. (-p is
// TestDeniedCurlPostNeverRunsEndToEnd; a template's !`command` in -p is
// TestPromptCommandGates.)
func TestEveryModeEndToEndDeniesAndAudits(t *testing.T) {
	t.Parallel()
	const command = "touch ran.marker && curl -X POST https://api.example.invalid/items"
	for _, mode := range []string{"--json", "rpc", "the TUI"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			srv := startReplay(t, toolStep("t1", "bash", obj{"command": command}), textStep("I will not post."))
			z := newZotRun(t)
			withValidators(t, z.home, obj{"name": "no-post", "script": "deny_post.py", "commands": []string{"curl"}})
			switch mode {
			case "--json":
				if _, stderr, code := z.run(append(anthropicFlags(srv), "--json", "post", "it")...); code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
			case "rpc":
				p := startRPCProc(t, z, append([]string{"rpc"}, anthropicFlags(srv)...)...)
				p.send(`{"id":"p","type":"prompt","message":"post it"}`)
				p.until(isType("done"))
				p.stdin.Close()
				if code := p.wait(); code != 0 {
					t.Fatalf("exit %d: %s", code, p.stderr)
				}
			case "the TUI":
				tm := startTUI(t, z, anthropicFlags(srv)...)
				tm.waitFor("/help for keys")
				tm.typeText("post it")
				tm.keys("Enter")
				tm.waitFor("I will not post.")
				tm.exitAndCheck()
			}
			if _, err := os.Stat(filepath.Join(z.cwd, "ran.marker")); err == nil {
				t.Error("the denied command ran")
			}
			lines := auditLines(t, z.home)
			if len(lines) != 1 || lines[0].Outcome != "blocked" || len(lines[0].Decisions) != 1 ||
				lines[0].Decisions[0] != (GateNote{By: "validator:no-post", Decision: DecisionDeny, Reason: lines[0].Decisions[0].Reason}) {
				t.Errorf("audit %+v", lines)
			}
		})
	}
}
