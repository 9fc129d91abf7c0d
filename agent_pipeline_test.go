package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// testStage is the stage tests add their one function as.
var testStage = Stage{Name: "test", Order: OrderPolicy}

// decideWith is a pipeline of gates (one stage each, "gate 1", "gate 2",
// …, in order) and confirm, as the agent decides on a call.
func decideWith(confirm ConfirmFunc, gates ...ToolGate) func(ctx context.Context, call ToolCall) ToolDecision {
	var p Pipeline
	for i, g := range gates {
		p.AddToolGate(Stage{Name: fmt.Sprintf("gate %d", i+1), Order: OrderPolicy}, g)
	}
	p.SetConfirm(confirm)
	return p.Decide
}

var bashLS = ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}

// A gate that answers ask and says nothing else is asking: it does not
// pass as an allow, and with nobody to answer it the call is denied, the
// gate named.
func TestPipelineAskWithNoNoteAndNoConfirmIsDenied(t *testing.T) {
	t.Parallel()
	bare := func(context.Context, ToolCall) GateResult { return GateResult{Verdict: GateAsk} }
	d := decideWith(nil, bare)(context.Background(), bashLS)
	if !d.Block || d.Reason != "not run: confirmation required (gate 1: asks for confirmation); declined by nobody could confirm" {
		t.Errorf("decision %+v", d)
	}
	want := []GateNote{{By: "gate 1", Decision: DecisionAsk, Reason: "asks for confirmation"}, {By: "nobody could confirm", Decision: DecisionDeny}}
	if fmt.Sprint(d.Trail) != fmt.Sprint(want) {
		t.Errorf("trail %+v, want %+v", d.Trail, want)
	}

	var asked []GateNote
	withReason := func(context.Context, ToolCall) GateResult {
		return GateResult{Verdict: GateAsk, Reason: "is this fine?"}
	}
	d = decideWith(func(_ context.Context, _ ToolCall, asks []GateNote) (bool, string) {
		asked = asks
		return true, "user"
	}, withReason)(context.Background(), bashLS)
	if d.Block || len(asked) != 1 || asked[0] != (GateNote{By: "gate 1", Decision: DecisionAsk, Reason: "is this fine?"}) {
		t.Errorf("decision %+v, confirm asked %+v", d, asked)
	}
}

// What zot cannot read denies: a decision spelt another way, a word it
// does not know, a verdict out of range, a rewrite that is not an object.
// A note that says more than the verdict is taken at its word.
func TestPipelineUnknownDecisionsDeny(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		answer GateResult
		block  bool
		reason string
	}{
		{"ASK in capitals", GateResult{Verdict: GateAsk, Notes: []GateNote{{By: "mine", Decision: "ASK"}}}, true, `mine answered "ASK", which zot does not know`},
		{"an unknown word under allow", GateResult{Notes: []GateNote{{By: "mine", Decision: "permit"}}}, true, `mine answered "permit"`},
		{"a verdict out of range", GateResult{Verdict: GateVerdict(7)}, true, "gate 1 answered with verdict 7, which zot does not know"},
		{"a negative verdict", GateResult{Verdict: GateVerdict(-1)}, true, "verdict -1"},
		{"a rewrite to an array", GateResult{Args: json.RawMessage(`["rm","-rf","/"]`)}, true, "gate 1 rewrote the call to arguments that are not a JSON object"},
		{"a rewrite that is not JSON", GateResult{Args: json.RawMessage(`{"command":`)}, true, "not a JSON object"},
		{"a deny note under an allow", GateResult{Notes: []GateNote{{By: "mine", Decision: DecisionDeny, Reason: "no"}}}, true, "no"},
		{"a block note without a reason", GateResult{Notes: []GateNote{{By: "mine", Decision: DecisionBlock}}}, true, "not run: denied by gate 1"},
		{"an ask note under an allow", GateResult{Notes: []GateNote{{By: "mine", Decision: DecisionAsk, Reason: "sure?"}}}, true, "confirmation required (mine: sure?)"},
		{"allow", GateResult{Notes: []GateNote{{By: "mine", Decision: DecisionAllow}}}, false, ""},
		{"a rewrite", GateResult{Args: json.RawMessage(`{"command":"ls -l"}`), Notes: []GateNote{{By: "mine", Decision: DecisionRewrite}}}, false, ""},
	} {
		gate := func(context.Context, ToolCall) GateResult { return tt.answer }
		d := decideWith(nil, gate)(context.Background(), bashLS)
		if d.Block != tt.block || !strings.Contains(d.Reason, tt.reason) {
			t.Errorf("%s: %+v, want block %v with %q", tt.name, d, tt.block, tt.reason)
		}
	}
}

// A gate after a denying one is not asked; an allowing gate after an asking
// one does not undo the ask.
func TestPipelineFirstDenyWinsAndAsksStay(t *testing.T) {
	t.Parallel()
	allow := func(context.Context, ToolCall) GateResult { return GateResult{} }
	ask := func(context.Context, ToolCall) GateResult {
		return GateResult{Verdict: GateAsk, Notes: []GateNote{{By: "v", Decision: DecisionAsk, Reason: "sure?"}}}
	}
	deny := func(context.Context, ToolCall) GateResult { return GateResult{Verdict: GateDeny, Reason: "no"} }
	never := func(context.Context, ToolCall) GateResult {
		t.Error("a gate after a deny was asked")
		return GateResult{}
	}
	if d := decideWith(nil, ask, allow)(context.Background(), bashLS); !d.Block || !strings.Contains(d.Reason, "v: sure?") {
		t.Errorf("ask then allow: %+v", d)
	}
	if d := decideWith(nil, allow, deny, never)(context.Background(), bashLS); !d.Block || d.Reason != "no" {
		t.Errorf("deny: %+v", d)
	}
	if d := decideWith(nil)(context.Background(), bashLS); d.Block || len(d.Trail) != 0 {
		t.Errorf("no gates: %+v", d)
	}
}

// Stages run in the order of their role, whatever order they were added
// in; stages of one role keep the order they came in.
func TestPipelineStagesRunInTheirOrder(t *testing.T) {
	t.Parallel()
	var p Pipeline
	var ran []string
	for _, s := range []Stage{{"audit", OrderRecord}, {"validators", OrderPolicy}, {"extensions", OrderIntercept}, {"mine", OrderPolicy}, {"hooks", OrderHooks}} {
		p.AddToolGate(s, func(context.Context, ToolCall) GateResult { ran = append(ran, s.Name); return GateResult{} })
	}
	p.Decide(context.Background(), bashLS)
	if got := strings.Join(ran, " "); got != "extensions hooks validators mine audit" {
		t.Errorf("ran %s", got)
	}
	if got := fmt.Sprint(p.Stages(HookBeforeToolExecute)); got != "[{extensions 200} {hooks 300} {validators 400} {mine 400} {audit 900}]" {
		t.Errorf("stages %s", got)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `stage "hooks" added twice to before_tool_execute`) {
			t.Errorf("a second stage of one name: %v", r)
		}
	}()
	p.AddToolGate(Stage{"hooks", OrderHooks}, func(context.Context, ToolCall) GateResult { return GateResult{} })
}

// Each hook point's rule, through the agent's loop.
func TestPipelineRulesOfTheOtherHookPoints(t *testing.T) {
	t.Parallel()
	t.Run("before prompt: first block wins, extras in order", func(t *testing.T) {
		t.Parallel()
		var p Pipeline
		p.AddPromptGate(Stage{"b", OrderHooks}, func(context.Context, string) (bool, string, string) { return false, "", "second" })
		p.AddPromptGate(Stage{"a", OrderIntercept}, func(context.Context, string) (bool, string, string) { return false, "", "first" })
		if block, _, extra := p.beforePrompt(context.Background(), "hi"); block || extra != "first\n\nsecond" {
			t.Errorf("block %v extra %q", block, extra)
		}
		p.AddPromptGate(Stage{"c", OrderPolicy}, func(context.Context, string) (bool, string, string) { return true, "no", "lost" })
		p.AddPromptGate(Stage{"d", OrderRecord}, func(context.Context, string) (bool, string, string) {
			t.Error("asked after a block")
			return false, "", ""
		})
		if block, reason, extra := p.beforePrompt(context.Background(), "hi"); !block || reason != "no" || extra != "" {
			t.Errorf("block %v reason %q extra %q", block, reason, extra)
		}
	})
	t.Run("before assistant message: rewrites flow forward, first block wins", func(t *testing.T) {
		t.Parallel()
		var p Pipeline
		p.AddMessageGate(Stage{"upper", OrderIntercept}, func(_ context.Context, text string) (string, bool) { return strings.ToUpper(text), false }, func() bool { return false })
		p.AddMessageGate(Stage{"mark", OrderHooks}, func(_ context.Context, text string) (string, bool) { return text + "!", false }, func() bool { return false })
		if p.holdsText() {
			t.Error("held, though no gate holds")
		}
		if shown, block := p.beforeAssistantMessage(context.Background(), "hi"); block || shown != "HI!" {
			t.Errorf("shown %q block %v", shown, block)
		}
		p.AddMessageGate(Stage{"hide", OrderPolicy}, func(_ context.Context, text string) (string, bool) { return "withheld: " + text, true }, nil)
		if !p.holdsText() {
			t.Error("a gate without a hold func does not hold")
		}
		if shown, block := p.beforeAssistantMessage(context.Background(), "hi"); !block || shown != "withheld: HI!" {
			t.Errorf("shown %q block %v", shown, block)
		}
	})
	t.Run("after tool: every stage sees what the one before left", func(t *testing.T) {
		t.Parallel()
		var p Pipeline
		p.AddAfterTool(Stage{"record", OrderRecord}, func(_ context.Context, rec *ToolRecord) {
			if got := (Message{Content: rec.Result.Content}).Text(); got != "outfeedback" {
				t.Errorf("the record saw %q", got)
			}
		})
		p.AddAfterTool(Stage{"feedback", OrderHooks}, func(_ context.Context, rec *ToolRecord) {
			rec.Result.Content = append(rec.Result.Content, TextBlock("feedback"))
		})
		p.afterTool(context.Background(), &ToolRecord{Result: ToolResult{Content: []Block{TextBlock("out")}}})
	})
	t.Run("turn and stop: the first block or continue wins", func(t *testing.T) {
		t.Parallel()
		var p Pipeline
		p.AddTurnGate(Stage{"a", OrderIntercept}, func(context.Context, int) (bool, string) { return false, "" })
		p.AddTurnGate(Stage{"b", OrderHooks}, func(_ context.Context, step int) (bool, string) { return step > 1, "enough" })
		if block, _ := p.beforeTurn(context.Background(), 1); block {
			t.Error("step 1 blocked")
		}
		if block, reason := p.beforeTurn(context.Background(), 2); !block || reason != "enough" {
			t.Errorf("step 2: %v %q", block, reason)
		}
		p.AddStopHook(Stage{"quiet", OrderIntercept}, func(context.Context, Message) (bool, string) { return false, "ignored" })
		p.AddStopHook(Stage{"more", OrderHooks}, func(context.Context, Message) (bool, string) { return true, "go on" })
		if cont, msg := p.onStop(context.Background(), Message{}); !cont || msg != "go on" {
			t.Errorf("stop: %v %q", cont, msg)
		}
	})
}

// ChainGates makes one stage of several gates with the tool rule: the
// second sees the first's rewrite, asks pass on, the first deny ends it.
func TestChainGatesIsOneStage(t *testing.T) {
	t.Parallel()
	rewrite := func(context.Context, ToolCall) GateResult {
		return GateResult{Args: json.RawMessage(`{"command":"ls -l"}`), Notes: []GateNote{{By: "r", Decision: DecisionRewrite}}}
	}
	var saw string
	ask := func(_ context.Context, c ToolCall) GateResult {
		saw = string(c.Args)
		return GateResult{Verdict: GateAsk}
	}
	r := ChainGates(rewrite, ask)(context.Background(), bashLS)
	if r.Verdict != GateAsk || string(r.Args) != `{"command":"ls -l"}` || saw != `{"command":"ls -l"}` || len(r.Notes) != 2 || r.Notes[1].Decision != DecisionAsk {
		t.Errorf("chain: %+v (the second gate saw %s)", r, saw)
	}
	d := decideWith(nil, ChainGates(rewrite, ask))(context.Background(), bashLS)
	if !d.Block || string(d.Args) != `{"command":"ls -l"}` {
		t.Errorf("as a stage: %+v", d)
	}
}

func TestWorseDecisionRanksTheUnknownAboveDeny(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ a, b, want GateDecision }{
		{DecisionAllow, DecisionAsk, DecisionAsk},
		{DecisionDeny, DecisionAsk, DecisionDeny},
		{DecisionAllow, "Deny", "Deny"},
		{DecisionDeny, "maybe", "maybe"},
		{"", DecisionAllow, ""},
	} {
		if got := WorseDecision(tt.a, tt.b); got != tt.want {
			t.Errorf("WorseDecision(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}

// The checkpoint's point, AroundToolRun, sees only calls that will run:
// not one a gate denied, not one the confirm declined; it gets the
// arguments that run, and its after half comes once the tool returned,
// before the after-tool stages.
func TestAroundToolRunComesAfterTheGatesAndTheConfirm(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(
			gen{ToolID: "denied", ToolName: "echo", ToolArgs: `{"cmd":"rm -rf /"}`},
			gen{ToolID: "declined", ToolName: "echo", ToolArgs: `{"cmd":"curl x"}`},
			gen{ToolID: "runs", ToolName: "echo", ToolArgs: `{"cmd":"ls"}`})},
		replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	echo := &funcTool{name: "echo"}
	a := newTestAgent(t, srv, echo)
	var order []string
	a.Pipeline.AddToolGate(testStage, func(ctx context.Context, call ToolCall) GateResult {
		switch {
		case strings.Contains(string(call.Args), "rm -rf"):
			return GateResult{Verdict: GateDeny, Reason: "refused"}
		case strings.Contains(string(call.Args), "curl"):
			return GateResult{Verdict: GateAsk, Reason: "network?"}
		}
		return GateResult{Args: json.RawMessage(`{"cmd":"ls -l"}`)}
	})
	a.Pipeline.SetConfirm(func(context.Context, ToolCall, []GateNote) (bool, string) { return false, "user" })
	a.Pipeline.AddAfterTool(Stage{Name: "audit", Order: OrderRecord}, func(ctx context.Context, rec *ToolRecord) {
		order = append(order, "audit "+rec.Call.ID)
	})
	a.AroundToolRun = func(ctx context.Context, call ToolCall) func() {
		order = append(order, "before "+call.ID+" "+string(call.Args)+" ran "+fmt.Sprint(len(echo.calls())))
		return func() { order = append(order, "after "+call.ID+" ran "+fmt.Sprint(len(echo.calls()))) }
	}
	var log eventLog
	if err := a.Prompt(context.Background(), "go", nil, log.sink); err != nil {
		t.Fatal(err)
	}
	want := []string{"audit denied", "audit declined", `before runs {"cmd":"ls -l"} ran 0`, "after runs ran 1", "audit runs"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("order:\n got %q\nwant %q", order, want)
	}
}
