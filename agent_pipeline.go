package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The gate pipeline: what runs at each hook point of the agent's loop, in
// one order that the stages themselves state, and one rule per point for
// putting their answers together. Plugins and hosts add stages; none wraps
// another's function, so who blocks first, whose rewrite wins and what the
// audit log sees are written here once.
//
//	hook point               rule
//	before prompt            in order; the first block wins; each stage's extra context is added, in order
//	before turn              in order; the first block wins
//	before tool execute      in order; the first deny wins; a rewrite flows forward (the next stage sees
//	                         the rewritten call); asks are gathered, and after the last stage the
//	                         confirm decides (no confirm: deny)
//	after tool execute       every stage, in order, on the record as the one before left it: what ran
//	                         (the rewritten arguments), and the result as changed so far
//	before assistant message in order; the first block wins; a rewrite flows forward
//	on stop                  in order; the first stage that goes on wins (three times in a row at most)
//
// Every decision about a tool call is a GateDecision. One zot does not know
// denies, as does a gate that answers ask when nobody can be asked: gates
// fail closed.

// HookPoint names a point of the agent's loop where stages run.
type HookPoint string

const (
	HookBeforePrompt           HookPoint = "before_prompt"
	HookBeforeTurn             HookPoint = "before_turn"
	HookBeforeToolExecute      HookPoint = "before_tool_execute"
	HookAfterToolExecute       HookPoint = "after_tool_execute"
	HookBeforeAssistantMessage HookPoint = "before_assistant_message"
	HookOnStop                 HookPoint = "on_stop"
)

// HookPoints lists the hook points in the order a prompt meets them.
var HookPoints = []HookPoint{HookBeforePrompt, HookBeforeTurn, HookBeforeToolExecute, HookAfterToolExecute, HookBeforeAssistantMessage, HookOnStop}

// StageOrder places a stage at its hook point: lower runs first, and stages
// of one order run in the order they were added. The orders are roles, so
// that a stage added late still runs where its role says.
type StageOrder int

const (
	// OrderPrepare: the host readies what the turn needs (zot waits for
	// MCP servers here).
	OrderPrepare StageOrder = 100
	// OrderIntercept: interceptors that may block or rewrite (extensions).
	// They come first so that every later check sees the call as it will
	// run.
	OrderIntercept StageOrder = 200
	// OrderHooks: the user's hook commands (Claude Code hooks).
	OrderHooks StageOrder = 300
	// OrderPolicy: rules about the call as it will run (command
	// validators).
	OrderPolicy StageOrder = 400
	// OrderConfirm: the host's own asks (the TUI's --no-yolo).
	OrderConfirm StageOrder = 500
	// OrderRecord: records of what happened (the audit log), after every
	// stage that may change the result, so they see what the model sees.
	OrderRecord StageOrder = 900
)

// Stage names one step of a hook point and places it. The name is who
// decided in the audit trail when a gate does not say, and in errors.
type Stage struct {
	Name  string
	Order StageOrder
}

// GateDecision is one say about a tool call, as the audit log records it
// and the confirm dialog reads it.
type GateDecision string

const (
	DecisionAllow GateDecision = "allow"
	DecisionAsk   GateDecision = "ask"
	DecisionDeny  GateDecision = "deny"
	// DecisionBlock is an extension interceptor's deny, in the word of its
	// protocol.
	DecisionBlock GateDecision = "block"
	// DecisionRewrite: the gate changed the call's arguments.
	DecisionRewrite GateDecision = "rewrite"
	// DecisionApprove: whoever answered the asks said yes.
	DecisionApprove GateDecision = "approve"
	// DecisionRequest names who asked for a call no model made (a prompt
	// template's !`command`).
	DecisionRequest GateDecision = "request"
	// DecisionCall names a call zot read from the model's text rather
	// than from a tool-use block, so the audit log says where it came from.
	DecisionCall GateDecision = "call"
)

// Known says whether d is one of the decisions above.
func (d GateDecision) Known() bool { return d.rank() < rankUnknown }

const (
	rankAllow = iota
	rankAsk
	rankDeny
	rankUnknown
)

// rank orders decisions by how much they hold a call back. A decision zot
// does not know (a misspelt "ASK", a new word) ranks above deny: it can
// never let a call through.
func (d GateDecision) rank() int {
	switch d {
	case DecisionAllow, DecisionRewrite, DecisionApprove, DecisionRequest, DecisionCall:
		return rankAllow
	case DecisionAsk:
		return rankAsk
	case DecisionDeny, DecisionBlock:
		return rankDeny
	}
	return rankUnknown
}

// WorseDecision is the one of a and b that holds a call back more: deny
// beats ask beats allow, and an unknown decision beats them all.
func WorseDecision(a, b GateDecision) GateDecision {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// GateNote is one say about a tool call: who ("extension:guard",
// "validator:curl", "user"), what, and why.
type GateNote struct {
	By       string       `json:"by"`
	Decision GateDecision `json:"decision"`
	Reason   string       `json:"reason,omitempty"`
	// AllowEnds marks an ask that an allow can end: it came from a
	// default (Claude Code's default mode, --no-yolo), not from a rule, a
	// validator, a hook or an extension. Only such asks are offered "yes,
	// and don't ask again" (approvals.go).
	AllowEnds bool `json:"allow_ends,omitempty"`
}

// GateVerdict is one gate's answer about a tool call. The zero value
// allows; a value other than these three denies.
type GateVerdict int

const (
	GateAllow GateVerdict = iota
	GateAsk
	GateDeny
)

// GateResult is one gate's answer. Args, when non-nil, rewrites the call
// (a JSON object) for the gates after it and for the tool. Notes are what
// the gate decided, for the audit trail; an asking gate puts its question
// there (when it does not, the stage's name and Reason ask). A note that
// says more than Verdict (a deny note under an allow) is taken at its word.
type GateResult struct {
	Verdict GateVerdict
	Reason  string
	Args    json.RawMessage
	Notes   []GateNote
	// Confine, when set, is the sandbox the call runs in (the mode's);
	// a later gate's replaces an earlier one's.
	Confine *Confinement
}

// ToolGate is one check before a tool runs: the extension interceptor
// chain, a hook command, a command validator, a confirmation policy.
type ToolGate func(ctx context.Context, call ToolCall) GateResult

// ConfirmFunc asks whoever can answer about a call that a gate wants
// confirmed; asks are the asking gates' notes. by names who answered, for
// the audit trail.
type ConfirmFunc func(ctx context.Context, call ToolCall, asks []GateNote) (approved bool, by string)

// ToolDecision is what the tool gates and the confirm say about one call:
// run it (with Args replacing the model's arguments when non-nil) or block
// it, the reason becoming the error result the model sees. Trail records
// each say, for the audit log.
type ToolDecision struct {
	Block   bool
	Reason  string
	Args    json.RawMessage
	Trail   []GateNote
	Confine *Confinement // the sandbox a gate chose; nil: the ToolEnv's
}

// ToolRecord is one finished tool call, given to the after-tool stages of
// the pipeline. What they leave in Result (feedback appended, say) is what
// the model and the tool_result event get.
type ToolRecord struct {
	Call     ToolCall
	Executed json.RawMessage // arguments after a gate rewrote them: what ran, or what a later gate blocked
	Decision ToolDecision
	Ran      bool
	Result   ToolResult
}

// The functions of the other hook points.
type (
	// PromptGate may refuse a prompt (the reason is the user's to read) or
	// add context that goes to the model with it.
	PromptGate func(ctx context.Context, text string) (block bool, reason, extra string)
	// TurnGate may refuse a turn, ending the prompt.
	TurnGate func(ctx context.Context, step int) (block bool, reason string)
	// AfterToolHook sees each finished call; what it leaves in rec.Result
	// is what the model gets.
	AfterToolHook func(ctx context.Context, rec *ToolRecord)
	// MessageGate may rewrite the text the user sees of the assistant's
	// message, or block it; when it blocks, shown is the reason the user
	// is told. The transcript keeps the original.
	MessageGate func(ctx context.Context, text string) (shown string, block bool)
	// StopHook runs when the model ends its work; going on makes message
	// the next user prompt.
	StopHook func(ctx context.Context, last Message) (cont bool, message string)
)

// stageFunc is one stage and its function.
type stageFunc[F any] struct {
	Stage
	run F
	// hold, for a message gate, says whether this turn's text waits for
	// it (nil: always).
	hold func() bool
}

// Pipeline holds the agent's stages. Its zero value has none: every call
// runs, nobody is asked. Stages are added before the first prompt, or
// while none runs; the lists are copied on write, so a prompt in flight
// keeps the ones it started with.
type Pipeline struct {
	mu      sync.Mutex
	prompt  []stageFunc[PromptGate]
	turn    []stageFunc[TurnGate]
	tool    []stageFunc[ToolGate]
	after   []stageFunc[AfterToolHook]
	message []stageFunc[MessageGate]
	stop    []stageFunc[StopHook]
	confirm ConfirmFunc
	ask     askHooks
}

// addStage puts s into list after every stage of its order or lower. A name
// twice at one hook point is a wiring mistake: it panics.
func addStage[F any](mu *sync.Mutex, list *[]stageFunc[F], point HookPoint, s stageFunc[F]) {
	if s.Name == "" {
		panic(fmt.Sprintf("zot: a %s stage without a name", point))
	}
	mu.Lock()
	defer mu.Unlock()
	old := *list
	if slices.ContainsFunc(old, func(o stageFunc[F]) bool { return o.Name == s.Name }) {
		panic(fmt.Sprintf("zot: stage %q added twice to %s", s.Name, point))
	}
	i := len(old)
	for i > 0 && old[i-1].Order > s.Order {
		i--
	}
	*list = slices.Insert(slices.Clone(old), i, s)
}

func (p *Pipeline) AddPromptGate(s Stage, g PromptGate) {
	addStage(&p.mu, &p.prompt, HookBeforePrompt, stageFunc[PromptGate]{Stage: s, run: g})
}

func (p *Pipeline) AddTurnGate(s Stage, g TurnGate) {
	addStage(&p.mu, &p.turn, HookBeforeTurn, stageFunc[TurnGate]{Stage: s, run: g})
}

func (p *Pipeline) AddToolGate(s Stage, g ToolGate) {
	addStage(&p.mu, &p.tool, HookBeforeToolExecute, stageFunc[ToolGate]{Stage: s, run: g})
}

func (p *Pipeline) AddAfterTool(s Stage, h AfterToolHook) {
	addStage(&p.mu, &p.after, HookAfterToolExecute, stageFunc[AfterToolHook]{Stage: s, run: h})
}

// AddMessageGate adds a gate on the assistant's messages. While one is
// there, the text of a turn is held back from the user until the gates
// have seen the whole message — when hold says so (nil: always), so that a
// gate that intercepts only sometimes does not cost streaming always.
func (p *Pipeline) AddMessageGate(s Stage, g MessageGate, hold func() bool) {
	addStage(&p.mu, &p.message, HookBeforeAssistantMessage, stageFunc[MessageGate]{Stage: s, run: g, hold: hold})
}

func (p *Pipeline) AddStopHook(s Stage, h StopHook) {
	addStage(&p.mu, &p.stop, HookOnStop, stageFunc[StopHook]{Stage: s, run: h})
}

// SetConfirm sets who answers the tool gates' asks. Without one, an ask is
// a deny.
func (p *Pipeline) SetConfirm(c ConfirmFunc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.confirm = c
}

// AskDecider settles a call's asks before anyone is asked: GateAllow
// approves, GateDeny refuses with reason, GateAsk leaves it to the
// confirm. by names who decided, for the trail.
type AskDecider func(ctx context.Context, call ToolCall, asks []GateNote) (verdict GateVerdict, by, reason string)

// SetAskHooks sets what runs where a call waits for approval: decide
// (Claude Code's PermissionRequest hooks) first, and notify (its
// Notification hooks) beside the confirm when someone is asked. Either
// may be nil.
func (p *Pipeline) SetAskHooks(decide AskDecider, notify func(ctx context.Context, call ToolCall)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ask = askHooks{decide: decide, notify: notify}
}

// askHooks are what a Pipeline runs where a call waits for approval
// (SetAskHooks).
type askHooks struct {
	decide AskDecider
	notify func(ctx context.Context, call ToolCall)
}

// notifyBeside runs notify beside confirm, so that a slow Notification
// hook does not hold the question back, and returns once both are done.
func (a askHooks) notifyBeside(ctx context.Context, call ToolCall, confirm func()) {
	if a.notify == nil {
		confirm()
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // ends with the hooks, bounded by their timeout
		defer wg.Done()
		a.notify(ctx, call)
	}()
	confirm()
	wg.Wait()
}

// HasConfirm says whether someone answers asks.
func (p *Pipeline) HasConfirm() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.confirm != nil
}

// Stages lists a hook point's stages in the order they run.
func (p *Pipeline) Stages(point HookPoint) []Stage {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch point {
	case HookBeforePrompt:
		return stagesOf(p.prompt)
	case HookBeforeTurn:
		return stagesOf(p.turn)
	case HookBeforeToolExecute:
		return stagesOf(p.tool)
	case HookAfterToolExecute:
		return stagesOf(p.after)
	case HookBeforeAssistantMessage:
		return stagesOf(p.message)
	case HookOnStop:
		return stagesOf(p.stop)
	}
	return nil
}

func stagesOf[F any](list []stageFunc[F]) []Stage {
	out := make([]Stage, len(list))
	for i, s := range list {
		out[i] = s.Stage
	}
	return out
}

// snapshot reads a list under the lock; the list itself is never changed
// in place.
func snapshot[F any](mu *sync.Mutex, list *[]stageFunc[F]) []stageFunc[F] {
	mu.Lock()
	defer mu.Unlock()
	return *list
}

func (p *Pipeline) beforePrompt(ctx context.Context, text string) (block bool, reason, extra string) {
	var extras []string
	for _, s := range snapshot(&p.mu, &p.prompt) {
		block, reason, e := s.run(ctx, text)
		if block {
			return true, reason, ""
		}
		if e != "" {
			extras = append(extras, e)
		}
	}
	return false, "", strings.Join(extras, "\n\n")
}

func (p *Pipeline) beforeTurn(ctx context.Context, step int) (block bool, reason string) {
	for _, s := range snapshot(&p.mu, &p.turn) {
		if block, reason := s.run(ctx, step); block {
			return true, reason
		}
	}
	return false, ""
}

func (p *Pipeline) afterTool(ctx context.Context, rec *ToolRecord) {
	for _, s := range snapshot(&p.mu, &p.after) {
		s.run(ctx, rec)
	}
}

// holdsText says whether this turn's text waits for the message gates.
func (p *Pipeline) holdsText() bool {
	for _, s := range snapshot(&p.mu, &p.message) {
		if s.hold == nil || s.hold() {
			return true
		}
	}
	return false
}

func (p *Pipeline) beforeAssistantMessage(ctx context.Context, text string) (shown string, block bool) {
	for _, s := range snapshot(&p.mu, &p.message) {
		shown, block := s.run(ctx, text)
		if block {
			return shown, true
		}
		text = shown
	}
	return text, false
}

func (p *Pipeline) onStop(ctx context.Context, last Message) (cont bool, message string) {
	for _, s := range snapshot(&p.mu, &p.stop) {
		if cont, message := s.run(ctx, last); cont {
			return true, message
		}
	}
	return false, ""
}

// Decide runs the tool gates on call and, when one asked and none denied,
// the confirm: what the agent does before every tool call.
func (p *Pipeline) Decide(ctx context.Context, call ToolCall) ToolDecision {
	return p.decide(ctx, call, nil)
}

// decide is Decide with asks of the caller's own, which the confirm
// answers whatever the gates say, unless one denies.
func (p *Pipeline) decide(ctx context.Context, call ToolCall, extra []GateNote) ToolDecision {
	p.mu.Lock()
	gates, confirm, ask := p.tool, p.confirm, p.ask
	p.mu.Unlock()
	r := judgeToolGates(ctx, call, gates)
	if len(extra) > 0 && r.Verdict == GateAllow {
		r.Verdict = GateAsk
	}
	r.Notes = append(r.Notes, extra...)
	d := ToolDecision{Args: r.Args, Trail: r.Notes, Confine: r.Confine}
	switch r.Verdict {
	case GateAllow:
		return d
	case GateAsk:
	default:
		d.Block, d.Reason = true, r.Reason
		return d
	}
	if r.Args != nil {
		call.Args = r.Args
	}
	var asks []GateNote
	for _, n := range r.Notes {
		if n.Decision == DecisionAsk {
			asks = append(asks, n)
		}
	}
	if ask.decide != nil {
		switch v, by, reason := ask.decide(ctx, call, asks); v {
		case GateAllow:
			d.Trail = append(d.Trail, GateNote{By: by, Decision: DecisionApprove})
			return d
		case GateDeny:
			d.Trail = append(d.Trail, GateNote{By: by, Decision: DecisionDeny, Reason: reason})
			d.Block, d.Reason = true, "not run: "+reason
			return d
		}
	}
	approved, by := false, "nobody could confirm"
	if confirm != nil {
		ask.notifyBeside(ctx, call, func() { approved, by = confirm(ctx, call, asks) })
		by = cmp.Or(by, "the confirm")
	}
	if approved {
		d.Trail = append(d.Trail, GateNote{By: by, Decision: DecisionApprove})
		return d
	}
	d.Trail = append(d.Trail, GateNote{By: by, Decision: DecisionDeny})
	var why []string
	for _, a := range asks {
		why = append(why, a.By+": "+a.Reason)
	}
	d.Block = true
	d.Reason = fmt.Sprintf("not run: confirmation required (%s); declined by %s", strings.Join(why, "; "), by)
	return d
}

// ChainGates makes one gate of several, by the rule of the tool hook
// point: in order, each seeing the call as the ones before it left it; the
// first deny ends the chain; asks are passed on, for the confirm. An
// embedder with gates of its own adds the chain as one stage.
func ChainGates(gates ...ToolGate) ToolGate {
	list := make([]stageFunc[ToolGate], len(gates))
	for i, g := range gates {
		list[i] = stageFunc[ToolGate]{Stage: Stage{Name: fmt.Sprintf("gate %d of a chain", i+1)}, run: g}
	}
	return func(ctx context.Context, call ToolCall) GateResult { return judgeToolGates(ctx, call, list) }
}

// judgeToolGates runs gates by the rule of the tool hook point. The answer
// denies with the first deny's reason, else asks when one asked (the asks
// among the notes), else allows; Args is the call as the last rewrite left
// it.
func judgeToolGates(ctx context.Context, call ToolCall, gates []stageFunc[ToolGate]) GateResult {
	var out GateResult
	for _, g := range gates {
		r := readGateResult(g.Stage, g.run(ctx, call))
		out.Notes = append(out.Notes, r.Notes...)
		if r.Args != nil {
			call.Args, out.Args = r.Args, r.Args
		}
		if r.Confine != nil {
			out.Confine = r.Confine
		}
		switch r.Verdict {
		case GateDeny:
			out.Verdict, out.Reason = GateDeny, r.Reason
			return out
		case GateAsk:
			out.Verdict = GateAsk
		}
	}
	return out
}

// readGateResult checks one gate's answer and says it plainly: Verdict is
// the worst of what the gate said anywhere (an unknown verdict or decision
// denies), an ask always has its note, a deny always its reason, and a
// rewrite is a JSON object or a deny.
func readGateResult(s Stage, r GateResult) GateResult {
	deny := func(why string) GateResult {
		r.Notes = append(r.Notes, GateNote{By: s.Name, Decision: DecisionDeny, Reason: why})
		r.Verdict, r.Reason = GateDeny, "not run: "+why
		return r
	}
	worst := DecisionAllow
	switch r.Verdict {
	case GateAllow:
	case GateAsk:
		worst = DecisionAsk
	case GateDeny:
		worst = DecisionDeny
	default:
		return deny(fmt.Sprintf("%s answered with verdict %d, which zot does not know (a fault in that gate; zot denies what it cannot read)", s.Name, r.Verdict))
	}
	var denyNote, askNote *GateNote
	for i, n := range r.Notes {
		if !n.Decision.Known() {
			return deny(fmt.Sprintf("%s answered %q, which zot does not know (want %s; zot denies what it cannot read)", cmp.Or(n.By, s.Name), n.Decision, joinNames(knownDecisions, ", ")))
		}
		worst = WorseDecision(worst, n.Decision)
		switch n.Decision.rank() {
		case rankDeny:
			if denyNote == nil {
				denyNote = &r.Notes[i]
			}
		case rankAsk:
			askNote = &r.Notes[i]
		}
	}
	if r.Args != nil && (!json.Valid(r.Args) || !isJSONObject(r.Args)) {
		return deny(fmt.Sprintf("%s rewrote the call to arguments that are not a JSON object", s.Name))
	}
	switch worst.rank() {
	case rankDeny:
		r.Verdict = GateDeny
		if r.Reason == "" && denyNote != nil {
			r.Reason = denyNote.Reason
		}
		if r.Reason == "" {
			r.Reason = "not run: denied by " + s.Name
		}
	case rankAsk:
		r.Verdict = GateAsk
		if askNote == nil {
			r.Notes = append(r.Notes, GateNote{By: s.Name, Decision: DecisionAsk, Reason: cmp.Or(r.Reason, "asks for confirmation")})
		}
	}
	return r
}

var knownDecisions = []GateDecision{DecisionAllow, DecisionAsk, DecisionDeny, DecisionBlock, DecisionRewrite, DecisionApprove, DecisionRequest, DecisionCall}
