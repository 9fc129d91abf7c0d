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
	"time"
)

// The agent loop, where providers, tools and sessions meet (see "Inside
// the core" in docs/architecture.md). An Agent holds one conversation and
// runs it: a prompt, a reply streamed from its Provider, the reply's tool
// calls run through the gate pipeline (agent_pipeline.go), each message
// recorded, again until the model stops calling tools. Here too: the
// transcript's edits (Clear, Rewind, Restore from a loaded session), model
// and reasoning switches, compaction near the context window, and the
// system prompt with the project's context files. Tool search is
// agent_toolsearch.go's; the approvals a confirm asks for, approvals*.go's.

// ErrBusy is returned when a prompt, compaction or transcript change is asked
// for while another prompt runs.
var ErrBusy = errors.New("agent is busy with another prompt")

// ErrBlocked is returned when a hook refused to let a turn or prompt run.
var ErrBlocked = errors.New("blocked")

// ErrEmptyPrompt is a prompt with neither text nor images: the APIs refuse
// an empty message, and one in the transcript would fail every later turn.
var ErrEmptyPrompt = errors.New("nothing to send: the prompt is empty")

// maxStepsError is a prompt stopped after MaxSteps turns (errors.As
// tells it from other failures: zot acp answers it max_turn_requests).
type maxStepsError int

func (e maxStepsError) Error() string {
	return fmt.Sprintf("stopped after --max-steps %d turns; raise it or split the task", int(e))
}

// Agent runs the loop of one conversation: prompt, stream, tools, repeat.
// Its exported fields are configuration, set before the first Prompt;
// the transcript and totals are guarded by mu.
type Agent struct {
	Provider  Provider
	Model     string
	Tools     *ToolRegistry
	System    string
	MaxSteps  int
	Reasoning string

	// Pipeline holds the stages that run at the loop's hook points: the
	// gates before each tool call, the hooks after it, and the rest
	// (agent_pipeline.go).
	Pipeline Pipeline
	// AroundToolRun is called just before a tool runs, once the gates
	// and the confirm allowed the call, with the arguments it runs with;
	// after, when not nil, is called once the tool returned (checkpoints
	// record the files before and after each call). It is not a stage:
	// it decides nothing, and its two halves pair around the one run
	// (docs/choices.md).
	AroundToolRun func(ctx context.Context, call ToolCall) (after func())
	// OfferOutside says whether someone may be asked to run a command the
	// sandbox refused (ToolResult.Confined) once outside it; nil: never.
	// The run outside is decided like a call of its own: every gate
	// judges it again, and it always asks.
	OfferOutside func() bool

	Recorder Recorder
	Log      func(format string, args ...any)

	// CompactThreshold is the share of the context window whose use
	// compacts the conversation before the next turn; 0 is
	// defaultCompactThreshold. A model's own (models.json) wins.
	CompactThreshold float64
	// BeforeCompact, when set, runs before each compaction with its
	// trigger, "manual" (Compact) or "auto" (Claude Code's PreCompact).
	BeforeCompact func(ctx context.Context, trigger string)
	// ToolSearchShare is the share of the context window the tools'
	// definitions may take before MCP and extension tools go as a list
	// the model loads from with tool_search (agent_toolsearch.go); 0 is
	// DefaultToolSearchShare.
	ToolSearchShare float64

	mu sync.Mutex
	// listed are the tools the last request listed in tool_search, which
	// its calls load from.
	listed     []ToolSpec
	busy       bool
	messages   []Message
	cumulative Usage
	lastInput  int
	usageOdd   bool // a usage below zero was reported
	// mustCompact: the server cut the last prompt, so the next turn
	// compacts whatever its size looks like.
	mustCompact bool
}

// NewAgent returns an agent with the defaults a user expects.
func NewAgent(p Provider, model string, tools *ToolRegistry) *Agent {
	if tools == nil {
		tools = NewToolRegistry()
	}
	return &Agent{Provider: p, Model: model, Tools: tools, MaxSteps: 100}
}

// Messages returns a copy of the transcript.
func (a *Agent) Messages() []Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return withoutWire(a.messages)
}

// lastPrompt is the text the user typed last and when: what a checkpoint
// is labelled with. It reads the transcript in place, since Messages
// copies the whole of it, at every tool call of a long session.
func (a *Agent) lastPrompt() (typed string, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := len(a.messages) - 1; i >= 0; i-- {
		if m := a.messages[i]; m.isPrompt() {
			typed, _ = splitPrompt(m)
			return typed, m.Time
		}
	}
	return "", time.Time{}
}

// SetMessages replaces the transcript, e.g. with a loaded session.
func (a *Agent) SetMessages(msgs []Message, total Usage) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.busy {
		return ErrBusy
	}
	a.messages = withWire(msgs)
	a.cumulative = total
	a.lastInput = 0
	return nil
}

// SetLastContext restores the input size of the last provider call, which
// SetMessages forgets: after loading a session the context gauge and
// auto-compaction then see how full the conversation already is.
func (a *Agent) SetLastContext(tokens int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lastInput = tokens
}

// Restore gives the agent a loaded session's conversation: its messages,
// its usage and how full its context was, as if it had never stopped.
func (a *Agent) Restore(l *LoadedSession) error {
	if err := a.SetMessages(l.Messages, l.Usage); err != nil {
		return err
	}
	a.SetLastContext(l.LastContext)
	return nil
}

// Clear drops the transcript; it refuses while a prompt runs.
func (a *Agent) Clear() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.busy {
		return ErrBusy
	}
	a.messages = nil
	a.lastInput = 0
	if a.Recorder != nil {
		return a.Recorder.Reset(nil)
	}
	return nil
}

// Rewind keeps the first n messages of the transcript — a cut before a
// prompt, so that no tool call loses its result — and records it as a
// reset; it refuses while a prompt runs. The usage totals stay: those
// calls were made.
func (a *Agent) Rewind(n int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.busy {
		return ErrBusy
	}
	if n < 0 || n > len(a.messages) {
		return fmt.Errorf("cannot keep %d messages of %d", n, len(a.messages))
	}
	if n < len(a.messages) && !a.messages[n].isPrompt() {
		return fmt.Errorf("message %d is not a prompt; rewind to before a prompt so that no tool call loses its result", n+1)
	}
	a.messages = append([]Message(nil), a.messages[:n]...)
	a.lastInput = 0
	if a.Recorder != nil {
		return a.Recorder.Reset(a.messages)
	}
	return nil
}

// SetModel switches the model; it refuses while a prompt runs.
func (a *Agent) SetModel(model string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.busy {
		return ErrBusy
	}
	a.Model = model
	if r, ok := a.Recorder.(interface{ SetModel(string) error }); ok {
		return r.SetModel(model)
	}
	return nil
}

// SetReasoning sets the thinking level (Reasoning) for the next prompts;
// it refuses while a prompt runs.
func (a *Agent) SetReasoning(level string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.busy {
		return ErrBusy
	}
	a.Reasoning = level
	return nil
}

// CurrentReasoning reads the thinking level under the lock.
func (a *Agent) CurrentReasoning() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.Reasoning
}

// SetProvider switches the provider and the model together, so that no
// prompt starts with one and not the other; it refuses while a prompt
// runs. The model is recorded as SetModel records it.
func (a *Agent) SetProvider(p Provider, model string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.busy {
		return ErrBusy
	}
	a.Provider, a.Model = p, model
	if r, ok := a.Recorder.(interface{ SetModel(string) error }); ok {
		return r.SetModel(model)
	}
	return nil
}

// CurrentModel reads the model under the lock, for hosts that show it.
func (a *Agent) CurrentModel() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.Model
}

// Busy reports whether a prompt or compaction is running.
func (a *Agent) Busy() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.busy
}

// Totals returns the cumulative usage and the input size of the last call.
func (a *Agent) Totals() (cumulative Usage, lastContext int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cumulative, a.lastInput
}

func (a *Agent) begin() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.busy {
		return false
	}
	a.busy = true
	return true
}

func (a *Agent) end() {
	a.mu.Lock()
	a.busy = false
	a.mu.Unlock()
}

// append adds m to the transcript and records it; what names m for the
// error when it could not be recorded.
func (a *Agent) append(m Message, what string) error {
	m.wire = new(messageWire)
	a.mu.Lock()
	a.messages = append(a.messages, m)
	a.mu.Unlock()
	if a.Recorder != nil {
		if err := a.Recorder.Append(m); err != nil {
			return &recordError{what, err}
		}
	}
	return nil
}

// recordError is a Recorder failure, which ends the run.
type recordError struct {
	what string // what was not saved
	err  error
}

func (e *recordError) Error() string {
	return fmt.Sprintf("could not save %s: %v; stopped the run here, so the saved conversation ends before it (nothing after it was saved)", e.what, e.err)
}

func (e *recordError) Unwrap() error { return e.err }

func (a *Agent) logf(format string, args ...any) {
	if a.Log != nil {
		a.Log(format, args...)
	}
}

// TeeSinks sends each event to every non-nil sink in order.
func TeeSinks(sinks ...Sink) Sink {
	return func(e Event) {
		for _, s := range sinks {
			if s != nil {
				s(e)
			}
		}
	}
}

// serialSink makes a sink safe to call from tool goroutines too.
func serialSink(sink Sink) Sink {
	if sink == nil {
		return func(Event) {}
	}
	var mu sync.Mutex
	return func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		sink(e)
	}
}

// Prompt runs one user prompt to completion: as many model turns and tool
// calls as it takes, up to MaxSteps. Every call ends with exactly one done
// event; a failure is also reported as an error event (but an abort, which is
// the user's wish, is not). It returns ErrBusy when another prompt runs.
func (a *Agent) Prompt(ctx context.Context, text string, images []Block, sink Sink) error {
	return a.work(ctx, sink, func(emit Sink) error { return a.run(ctx, text, images, emit) })
}

// Continue asks the model again from the transcript as it stands, with no
// new prompt: after a turn failed (a provider that was down; a host that
// switched to another one), the prompt it was answering gets its answer
// without being sent twice. The transcript must end on the user's side, a
// prompt or tool results, as a failed model call leaves it. Events and
// errors are those of Prompt.
func (a *Agent) Continue(ctx context.Context, sink Sink) error {
	return a.work(ctx, sink, func(emit Sink) error {
		a.mu.Lock()
		n := len(a.messages)
		last := Message{}
		if n > 0 {
			last = a.messages[n-1]
		}
		a.mu.Unlock()
		if last.Role != RoleUser {
			return errors.New("nothing to continue: the conversation does not end with a prompt or tool results")
		}
		return a.loop(ctx, emit)
	})
}

// work runs one prompt's worth of work (see Prompt) while holding the
// agent busy.
func (a *Agent) work(ctx context.Context, sink Sink, run func(emit Sink) error) error {
	if !a.begin() {
		return ErrBusy
	}
	defer a.end()
	emit := serialSink(sink)
	err := run(emit)
	if serr := a.sync(); err == nil {
		err = serr
	}
	var rerr *recordError
	if ctx.Err() != nil && errors.As(err, &rerr) {
		a.logf("session: %v", err) // the interruption is what gets reported
	}
	if err != nil && ctx.Err() == nil && !errors.Is(err, ErrBlocked) {
		emit(Event{Type: EventError, Message: err.Error()})
	}
	emit(Event{Type: EventDone})
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return err
}

func (a *Agent) sync() error {
	if a.Recorder != nil {
		if err := a.Recorder.Sync(); err != nil {
			return &recordError{"the conversation to disk", err}
		}
	}
	return nil
}

func (a *Agent) run(ctx context.Context, text string, images []Block, emit Sink) error {
	if strings.TrimSpace(text) == "" && len(images) == 0 {
		return ErrEmptyPrompt
	}
	block, reason, extra := a.Pipeline.beforePrompt(ctx, text)
	if block {
		emit(Event{Type: EventTurnEnd, Stop: StopError, Error: reason})
		return fmt.Errorf("%w: prompt refused: %s", ErrBlocked, reason)
	}
	if extra != "" {
		// First, so that the last block stays what the user typed
		// (splitPrompt), even for a prompt of images alone.
		images = append([]Block{TextBlock(extra)}, images...)
	}
	content := append([]Block{}, images...)
	if text != "" || len(content) == 0 {
		content = append(content, TextBlock(text))
	}
	user := Message{Role: RoleUser, Content: content, Time: time.Now().UTC()}
	if err := a.append(user, "the prompt"); err != nil {
		return err
	}
	emit(Event{Type: EventUserMessage, Content: user.Content, Time: user.Time})
	return a.loop(ctx, emit)
}

// loop asks the model and runs its tools until it stops.
func (a *Agent) loop(ctx context.Context, emit Sink) error {
	maxSteps := a.MaxSteps
	if maxSteps <= 0 {
		maxSteps = 100
	}
	retriedTooLong := false
	// compactedBefore: the last step compacted and sent nothing since, so
	// a conversation still over the threshold is sent as it is rather than
	// compacted again (the server's overflow error is the last word).
	compactedBefore := false
	stopContinues := 0
	for step := 1; ; step++ {
		if step > maxSteps {
			return maxStepsError(maxSteps)
		}
		if err := a.maybeAutoCompact(ctx, emit, compactedBefore); err != nil {
			a.logf("auto-compact: %v", err)
		}
		compactedBefore = false
		if block, reason := a.Pipeline.beforeTurn(ctx, step); block {
			emit(Event{Type: EventTurnEnd, Stop: StopError, Error: reason})
			return fmt.Errorf("%w: turn %d refused: %s", ErrBlocked, step, reason)
		}
		emit(Event{Type: EventTurnStart, Step: step})
		hold := a.Pipeline.holdsText()
		reply, err := a.turn(ctx, hold, emit)
		if ctx.Err() != nil {
			a.finishAborted(reply, emit)
			return ctx.Err()
		}
		if err != nil {
			if errors.Is(err, ErrContextTooLong) && !retriedTooLong {
				retriedTooLong = true
				emit(Event{Type: EventTurnEnd, Stop: StopError, Error: err.Error()})
				if cerr := a.compact(ctx, emit, "auto"); errors.Is(cerr, errNothingToCompact) {
					return fmt.Errorf("%w; nothing earlier to compact: the prompt alone does not fit", err)
				} else if cerr != nil {
					return fmt.Errorf("%v; compaction failed too: %w", err, cerr)
				}
				compactedBefore = true
				step--
				continue
			}
			emit(Event{Type: EventTurnEnd, Stop: StopError, Error: err.Error()})
			return err
		}
		a.heed(reply, emit)
		msg := Message{Role: RoleAssistant, Content: reply.Content, Time: time.Now().UTC()}
		a.emitAssistant(ctx, msg, hold, emit)
		// The tools do not run when their calls could not be saved.
		if err := cmp.Or(a.append(msg, "the assistant's message"), a.recordUsage(reply.Usage, emit)); err != nil {
			emit(Event{Type: EventTurnEnd, Stop: StopError, Error: err.Error()})
			return err
		}

		calls := msg.ToolCalls()
		if len(calls) > 0 {
			results, aborted := a.runTools(ctx, calls, reply.Stop == StopLength, emit)
			err := a.append(Message{Role: RoleUser, Content: results, Time: time.Now().UTC()}, "the tool results")
			if aborted {
				emit(Event{Type: EventTurnEnd, Stop: StopAborted})
				return cmp.Or(err, ctx.Err())
			}
			if err = cmp.Or(err, a.sync()); err != nil {
				emit(Event{Type: EventTurnEnd, Stop: StopError, Error: err.Error()})
				return err
			}
			emit(Event{Type: EventTurnEnd, Stop: StopToolUse})
			continue
		}
		emit(Event{Type: EventTurnEnd, Stop: reply.Stop})
		if err := a.sync(); err != nil {
			return err
		}
		if stopContinues < 3 {
			if cont, message := a.Pipeline.onStop(ctx, msg); cont {
				stopContinues++
				m := Message{Role: RoleUser, Content: []Block{TextBlock(message)}, Time: time.Now().UTC()}
				if err := a.append(m, "the hook's follow-up prompt"); err != nil {
					return err
				}
				emit(Event{Type: EventUserMessage, Content: m.Content, Time: m.Time})
				continue
			}
		}
		return nil
	}
}

// turn makes one provider call and streams its pieces as events.
func (a *Agent) turn(ctx context.Context, holdText bool, emit Sink) (Reply, error) {
	emit(Event{Type: EventAssistantStart})
	a.mu.Lock()
	// The transcript itself, not a copy: the agent only appends to it or
	// replaces it whole, and the capacity cut to its length keeps an
	// append by the provider off it.
	n := len(a.messages)
	tools := a.toolsFor(a.messages)
	a.listed = tools.listed
	req := Request{
		Model:     a.Model,
		System:    a.System,
		Messages:  a.messages[:n:n],
		Tools:     tools.send,
		Reasoning: a.Reasoning,
	}
	a.mu.Unlock()
	return a.Provider.Stream(withRetryEvents(ctx, emit), req, func(se StreamEvent) {
		switch se.Type {
		case "text":
			if !holdText {
				emit(Event{Type: EventTextDelta, Delta: se.Delta})
			}
		case "thinking":
			// Reasoning can repeat what a redacting hook would hide.
			if !holdText {
				emit(Event{Type: EventThinkingDelta, Delta: se.Delta})
			}
		case "tool_start":
			emit(Event{Type: EventToolUseStart, ID: se.ID, Name: se.Name})
		case "tool_args":
			emit(Event{Type: EventToolUseArgs, ID: se.ID, Delta: se.Delta})
		case "tool_end":
			emit(Event{Type: EventToolUseEnd, ID: se.ID})
		}
	})
}

// withRetryEvents makes the provider's retries of a call events.
func withRetryEvents(ctx context.Context, emit Sink) context.Context {
	return WithRetryHook(ctx, func(n RetryNotice) {
		emit(Event{Type: EventRetry, Attempt: n.Attempt, Attempts: n.Attempts, Wait: n.Wait, Error: n.Err.Error()})
	})
}

// emitAssistant shows the finished message, after the message gates have
// had their say. While they hold the text, its deltas were held back so
// that a redacting gate can keep the original text off the screen; the
// text the user may see is sent as one delta here.
func (a *Agent) emitAssistant(ctx context.Context, msg Message, held bool, emit Sink) {
	shown := msg
	if held {
		text := msg.Text()
		replacement, block := a.Pipeline.beforeAssistantMessage(ctx, text)
		if block {
			if replacement != "" && ctx.Err() == nil {
				emit(Event{Type: EventMessageBlocked, Reason: replacement})
			}
			replacement = ""
		}
		shown.Content = nil
		for _, b := range msg.Content {
			if b.Type != BlockText && b.Type != BlockThinking {
				shown.Content = append(shown.Content, b)
			}
		}
		if replacement != "" {
			shown.Content = append([]Block{TextBlock(replacement)}, shown.Content...)
			emit(Event{Type: EventTextDelta, Delta: replacement})
		}
	}
	emit(Event{Type: EventAssistantMessage, Content: shown.Content, Time: shown.Time})
}

func (a *Agent) recordUsage(u Usage, emit Sink) (err error) {
	u, odd := u.clamped()
	a.mu.Lock()
	if odd != "" && !a.usageOdd {
		a.usageOdd = true
		defer a.logf("%s: %s; counted as sent, not below zero (the server's inconsistency, reported once)", a.Provider.Name(), odd)
	}
	u.CostUSD = USD(lookupModel(a.Provider.Name(), a.Model).Cost(u))
	a.cumulative.Add(u)
	a.lastInput = u.ContextTokens()
	cum := a.cumulative
	a.mu.Unlock()
	if a.Recorder != nil {
		if rerr := a.Recorder.AppendUsage(u); rerr != nil {
			err = &recordError{"the usage of the last call", rerr}
		}
	}
	emit(Event{Type: EventUsage, Usage: u, Cumulative: cum})
	return err
}

// heed passes on what the provider said of a reply beside its content: a
// notice once, and a prompt the server cut, which the next turn compacts.
func (a *Agent) heed(reply Reply, emit Sink) {
	if reply.Notice != "" {
		a.logf("%s", reply.Notice)
	}
	if reply.Truncated != "" {
		a.mu.Lock()
		a.mustCompact = true
		a.mu.Unlock()
		emit(Event{Type: EventError, Message: reply.Truncated, Truncated: true})
	}
}

// runTools runs the calls in the model's order. When ctx is cancelled the
// remaining calls are answered with "aborted" so the transcript stays valid.
// cut says the reply ended at the output limit: a call whose arguments are
// not a whole JSON object was cut there, and is answered as such.
func (a *Agent) runTools(ctx context.Context, calls []ToolCall, cut bool, emit Sink) (results []Block, aborted bool) {
	for _, call := range calls {
		if ctx.Err() != nil {
			block := abortedResult(call.ID)
			results = append(results, block)
			aborted = true
			// Never run, but a call the model made: the audit trail has it.
			a.Pipeline.afterTool(ctx, &ToolRecord{Call: call, Result: ToolResult{IsError: true, Content: block.Content}})
			continue
		}
		emit(Event{Type: EventToolCall, ID: call.ID, Name: call.Name, Args: call.Args})
		var origin *GateNote
		if call.FromText {
			origin = &GateNote{By: "model", Decision: DecisionCall, Reason: "parsed from text: the model wrote the call in its reply's text"}
		}
		var res ToolResult
		if cut && (len(call.Args) == 0 || !json.Valid(call.Args) || !isJSONObject(call.Args)) {
			res = a.refuseCutCall(ctx, call, origin)
		} else {
			res = a.runTool(ctx, call, origin, emit)
		}
		emit(Event{Type: EventToolResult, ID: call.ID, Name: call.Name, IsError: res.IsError, Content: res.Content, Details: res.Details})
		results = append(results, Block{Type: BlockToolResult, CallID: call.ID, IsError: res.IsError, Content: res.Content})
		if ctx.Err() != nil {
			aborted = true
		}
	}
	return results, aborted
}

// refuseCutCall answers a call the output limit cut before its arguments
// were whole: it does not run with half of them, and the model is told.
func (a *Agent) refuseCutCall(ctx context.Context, call ToolCall, origin *GateNote) ToolResult {
	rec := ToolRecord{Call: call, Result: errorResult("the tool call was cut off at the output limit before its arguments were complete, so nothing ran (arguments so far: %s); call it again with shorter arguments, or split the work", truncate(string(call.Args), 200))}
	if origin != nil {
		rec.Decision.Trail = []GateNote{*origin}
	}
	a.Pipeline.afterTool(ctx, &rec)
	return rec.Result
}

func abortedResult(callID string) Block {
	return Block{Type: BlockToolResult, CallID: callID, IsError: true, Content: []Block{TextBlock("aborted by the user before it ran")}}
}

// RunTool runs one tool call that no model asked for (a prompt template's
// !`command`) through the pipeline's tool gates and after-tool stages like
// the model's own calls: the same gates decide, the same audit trail records
// it. origin, first in the decision trail, names who asked.
func (a *Agent) RunTool(ctx context.Context, call ToolCall, origin GateNote) ToolResult {
	return a.runTool(ctx, call, &origin, func(Event) {})
}

func (a *Agent) runTool(ctx context.Context, call ToolCall, origin *GateNote, emit Sink) (result ToolResult) {
	rec := ToolRecord{Call: call}
	if origin != nil {
		rec.Decision.Trail = []GateNote{*origin}
	}
	defer func() {
		a.Pipeline.afterTool(ctx, &rec)
		result = rec.Result
	}()
	tool, ok := a.Tools.Lookup(call.Name)
	if !ok && call.Name == toolSearchName {
		a.mu.Lock()
		if a.listed != nil {
			tool, ok = toolSearchTool{a.listed}, true
		}
		a.mu.Unlock()
	}
	if !ok {
		var names []string
		for _, t := range a.Tools.List() {
			names = append(names, t.Name())
		}
		rec.Result = errorResult("unknown tool %q; available tools: %s", call.Name, strings.Join(names, ", "))
		return rec.Result
	}
	args := call.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) || !isJSONObject(args) {
		rec.Result = errorResult("invalid arguments for %s: not a JSON object (the output may have been cut off at the token limit): %s", call.Name, truncate(string(args), 200))
		return rec.Result
	}
	d := a.Pipeline.Decide(ctx, ToolCall{ID: call.ID, Name: call.Name, Args: args})
	d.Trail = append(rec.Decision.Trail, d.Trail...)
	rec.Decision = d
	if rec.Decision.Args != nil {
		args = rec.Decision.Args
		rec.Executed = args
	}
	if rec.Decision.Block {
		rec.Result = errorResult("%s", rec.Decision.Reason)
		return rec.Result
	}
	rec.Ran = true
	var after func()
	if a.AroundToolRun != nil {
		after = a.AroundToolRun(ctx, ToolCall{ID: call.ID, Name: call.Name, Args: args})
	}
	progress := func(line string) { emit(Event{Type: EventToolProgress, ID: call.ID, Text: line}) }
	ctx = context.WithValue(ctx, toolCallKey{}, call.ID)
	rec.Result = tool.Run(WithConfinement(ctx, rec.Decision.Confine), args, progress)
	if c := rec.Decision.Confine; rec.Result.Confined != "" && (c == nil || !c.Fixed) && a.OfferOutside != nil && a.OfferOutside() && ctx.Err() == nil {
		rec.Result = a.runOutside(ctx, ToolCall{ID: call.ID, Name: call.Name, Args: args}, tool, &rec, after == nil, progress)
	}
	if after != nil {
		after()
	}
	return rec.Result
}

// runOutside asks whether a command the sandbox refused may run once
// outside it, and runs it there when the answer is yes. The question is
// a call of its own: every gate judges the command again, a deny ends it,
// and it always asks (the sandbox's ask, which no "don't ask again"
// covers). The model is told what happened either way. A call that took
// no checkpoint (its line only read) takes one for the run outside when
// it needs one: the gates may have changed the line.
func (a *Agent) runOutside(ctx context.Context, call ToolCall, tool Tool, rec *ToolRecord, noCheckpoint bool, progress func(string)) ToolResult {
	first := rec.Result
	ask := GateNote{By: "sandbox", Decision: DecisionAsk, Reason: strings.TrimSpace(first.Confined) + "\nRun this one command again, outside the sandbox, with your rights?"}
	d := a.Pipeline.decide(ctx, call, []GateNote{ask})
	rec.Decision.Trail = append(rec.Decision.Trail, d.Trail...)
	if d.Block {
		first.Content = append(slices.Clone(first.Content), TextBlock("[not run outside the sandbox: "+d.Reason+"]"))
		first.Confined = ""
		return first
	}
	args := call.Args
	if d.Args != nil {
		args, rec.Executed = d.Args, d.Args
	}
	rec.Decision.Confine = &Confinement{Name: "off"}
	var after func()
	if noCheckpoint && a.AroundToolRun != nil {
		after = a.AroundToolRun(ctx, ToolCall{ID: call.ID, Name: call.Name, Args: args})
	}
	res := tool.Run(WithConfinement(ctx, rec.Decision.Confine), args, progress)
	if after != nil {
		after()
	}
	by := "the approver"
	if n := len(d.Trail); n > 0 {
		by = d.Trail[n-1].By
	}
	note := TextBlock("[the sandbox refused this command, and " + by + " let it run once outside the sandbox; what follows is that run]")
	res.Content = append([]Block{note}, res.Content...)
	res.Confined = ""
	return res
}

// finishAborted keeps what the model said before the abort and answers its
// tool calls, so the transcript stays one a provider accepts. A failure to
// save it is only logged: the abort is what the run reports.
func (a *Agent) finishAborted(partial Reply, emit Sink) {
	var errs []error
	if partial.Usage != (Usage{}) {
		errs = append(errs, a.recordUsage(partial.Usage, emit))
	}
	var content []Block
	var calls []ToolCall
	for _, b := range partial.Content {
		switch b.Type {
		case BlockText:
			if b.Text != "" {
				content = append(content, b)
			}
		case BlockThinking:
			// A finished, signed thinking block must stay before the tool
			// calls that follow it, or Anthropic rejects the transcript.
			if b.Signature != "" || b.Redacted {
				content = append(content, b)
			}
		case BlockToolCall:
			content = append(content, b)
			calls = append(calls, ToolCall{ID: b.ID})
		}
	}
	if len(content) > 0 && content[len(content)-1].Type != BlockThinking {
		errs = append(errs, a.append(Message{Role: RoleAssistant, Content: content, Time: time.Now().UTC()}, "the interrupted message"))
		if len(calls) > 0 {
			var results []Block
			for _, c := range calls {
				results = append(results, abortedResult(c.ID))
			}
			errs = append(errs, a.append(Message{Role: RoleUser, Content: results, Time: time.Now().UTC()}, "the answers to its tool calls"))
		}
	}
	if err := cmp.Or(errs...); err != nil {
		a.logf("session: %v", err)
	}
	emit(Event{Type: EventTurnEnd, Stop: StopAborted})
}

// Compact summarises all but the last few prompts into one message, to free
// context. It emits compact_done and, as every run does, done.
func (a *Agent) Compact(ctx context.Context, sink Sink) error {
	if !a.begin() {
		return ErrBusy
	}
	defer a.end()
	emit := serialSink(sink)
	err := a.compact(ctx, emit, "manual")
	switch {
	case err != nil && ctx.Err() != nil:
		emit(Event{Type: EventTurnEnd, Stop: StopAborted})
	case err != nil:
		emit(Event{Type: EventError, Message: "compact: " + err.Error()})
	}
	emit(Event{Type: EventDone})
	return err
}

// keepPrompts is how many of the latest user prompts (with everything after
// them) survive a compaction verbatim; keepSteps is how many of the latest
// model turns do when the last prompt's tool loop alone is long.
const (
	keepPrompts = 2
	keepSteps   = 2
)

// defaultCompactThreshold is the share of the context window whose use
// triggers an automatic compaction before the next turn, unless config.json
// or the model's models.json entry says otherwise.
const defaultCompactThreshold = 0.85

// errNothingToCompact is a conversation too short to compact: its last
// prompts are kept whole.
var errNothingToCompact = errors.New("nothing to compact yet")

const compactInstruction = `Summarise the conversation above for your own later use: it will replace the conversation. Keep what the user asked for, decisions made, files read or changed (with paths), commands run and their outcome, errors still open, and the next steps. Be concise and concrete; use bullet points. Do not call tools.`

func (a *Agent) compact(ctx context.Context, emit Sink, trigger string) error {
	a.mu.Lock()
	msgs := append([]Message(nil), a.messages...)
	model, system := a.Model, a.System
	a.mu.Unlock()
	cut := compactCut(msgs)
	if cut <= 0 {
		return errNothingToCompact
	}
	if a.BeforeCompact != nil {
		a.BeforeCompact(ctx, trigger)
	}
	// The same system prompt and tools as a normal turn keep the request's
	// prefix cacheable, and the API wants tools defined when the messages
	// hold tool calls.
	req := Request{
		Model:    model,
		System:   system,
		Tools:    a.Tools.Specs(),
		Messages: append(append([]Message(nil), msgs[:cut]...), Message{Role: RoleUser, Content: []Block{TextBlock(compactInstruction)}}),
	}
	reply, err := a.Provider.Stream(withRetryEvents(ctx, emit), req, func(StreamEvent) {})
	if err != nil {
		return err
	}
	summary := strings.TrimSpace(Message{Content: reply.Content}.Text())
	if summary == "" {
		return errors.New("the model returned an empty summary")
	}
	usageErr := a.recordUsage(reply.Usage, emit)
	head := Message{Role: RoleUser, Time: time.Now().UTC(), Content: []Block{TextBlock("[Summary of the earlier conversation]\n\n" + summary)}, wire: new(messageWire)}
	kept := append([]Message{head}, msgs[cut:]...)
	a.mu.Lock()
	// A prompt cannot have run meanwhile (we hold busy), so msgs is current.
	a.messages = kept
	a.lastInput = 0
	a.mustCompact = false
	a.mu.Unlock()
	if usageErr != nil {
		return usageErr
	}
	if a.Recorder != nil {
		if err := a.Recorder.Reset(kept); err != nil {
			return &recordError{"the compacted conversation", err}
		}
	}
	emit(Event{Type: EventCompactDone, Summary: summary})
	return nil
}

// compactCut picks where the verbatim tail starts: at the keepPrompts-th
// prompt from the end — or, when the latest prompt's own tool loop has
// more than keepSteps steps, at the keepSteps-th step from the end, so one
// long task (a whole -p run is one prompt) can be compacted too. A cut
// falls on a prompt or on an assistant message, never between a tool call
// and its result.
func compactCut(msgs []Message) int {
	steps, stepCut := 0, 0
	seen := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		switch {
		case msgs[i].isPrompt():
			if seen == 0 && steps > keepSteps {
				return stepCut
			}
			seen++
			if seen == keepPrompts {
				return i
			}
		case seen == 0 && msgs[i].Role == RoleAssistant:
			steps++
			if steps == keepSteps {
				stepCut = i
			}
		}
	}
	return 0
}

// toolsFor is how the tools go with a request of msgs: whole, or by
// tool search when they would fill too much of the window. Called with
// a.mu held.
func (a *Agent) toolsFor(msgs []Message) toolPlan {
	return planTools(a.Tools.Specs(), lookupModel(a.Provider.Name(), a.Model).ContextWindow, a.ToolSearchShare, msgs)
}

// windowProber is a provider that can ask its server for the model's
// context window before the first request (a local server: see
// providers_local.go), so the first turn of a resumed conversation is
// measured against the real window.
type windowProber interface {
	ProbeWindow(ctx context.Context, model string) int
}

// ServerWindow asks the server of the model in use for the context it
// gives the model, once, and returns it (0 when the provider has no such
// question or the server did not say). The host calls it at start, so the
// status shows the real window before the first request.
func (a *Agent) ServerWindow(ctx context.Context) int {
	a.mu.Lock()
	p, model := a.Provider, a.Model
	a.mu.Unlock()
	if p, ok := p.(windowProber); ok {
		return p.ProbeWindow(ctx, model)
	}
	return 0
}

// maybeAutoCompact compacts before a turn when the conversation fills the
// threshold's share of the model's window — as the last call's usage said,
// or as zot counts the request about to go (EstimateTokens: the tool
// results since then, a server that reports no usage) — or when the
// server cut the last prompt. It does not compact twice without a turn
// between (justCompacted).
func (a *Agent) maybeAutoCompact(ctx context.Context, emit Sink, justCompacted bool) error {
	a.mu.Lock()
	last, model, must := a.lastInput, a.Model, a.mustCompact
	req := Request{System: a.System, Messages: a.messages, Tools: a.toolsFor(a.messages).send}
	estimate := EstimateTokens(req, true)
	a.mu.Unlock()
	if justCompacted {
		return nil
	}
	a.ServerWindow(ctx)
	info := lookupModel(a.Provider.Name(), model)
	threshold := cmp.Or(info.CompactThreshold, a.CompactThreshold, defaultCompactThreshold)
	used := max(last, estimate)
	if !must && (used == 0 || float64(used) < threshold*float64(info.ContextWindow)) {
		return nil
	}
	err := a.compact(ctx, emit, "auto")
	if errors.Is(err, errNothingToCompact) {
		// The prompt alone fills the window: it goes as it is, and the
		// server has the last word.
		a.mu.Lock()
		a.mustCompact = false
		a.mu.Unlock()
		return nil
	}
	return err
}

// SystemPromptOptions are the pieces a system prompt is built from.
type SystemPromptOptions struct {
	Cwd      string
	Home     string   // $ZOT_HOME, where SYSTEM.md may replace the default
	Override string   // --system-prompt
	Append   []string // --append-system-prompt, in order
	Tools    []string
	Extra    []string // sections other parts add (skills manifest)
}

const defaultSystemPrompt = `You are zot, a coding agent working in a terminal on the user's machine.
Work in the current directory: %s`

// promptAdvice is the built-in prompt's advice, each line given only when
// the model has the tools it speaks of: advice about a tool the model
// lacks sends it looking for one.
var promptAdvice = []struct {
	when func(has func(string) bool) bool
	text string
}{
	{func(has func(string) bool) bool { return has(ToolRead) && (has(ToolEdit) || has(ToolWrite)) }, "read files before you change them."},
	{func(has func(string) bool) bool { return has(ToolEdit) && has(ToolWrite) }, "prefer edit for changes to existing files and write for new ones."},
	{func(has func(string) bool) bool { return has(ToolBash) }, "run commands with bash to build, test and inspect; keep output small (use head, grep, -q)."},
	{func(has func(string) bool) bool { return has(ToolEdit) || has(ToolWrite) || has(ToolBash) }, "show the user what changed and how you checked it."},
	{func(func(string) bool) bool { return true }, "be concise."},
}

// defaultPrompt is the built-in system prompt for the tools the model has.
func defaultPrompt(cwd string, tools []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, defaultSystemPrompt, cwd)
	if len(tools) == 0 {
		b.WriteString("\nYou have no tools in this session: you cannot read or change files or run commands, so answer from what the user gives you.")
	} else {
		fmt.Fprintf(&b, "\nTools: %s.", strings.Join(tools, ", "))
	}
	has := func(name string) bool { return slices.Contains(tools, name) }
	for _, a := range promptAdvice {
		if a.when(has) {
			b.WriteString("\n- " + a.text)
		}
	}
	return b.String()
}

// BuildSystemPrompt assembles the system prompt: the built-in default (or
// $ZOT_HOME/SYSTEM.md, or --system-prompt), then appended text, then the
// user's $ZOT_HOME/AGENTS.md and the project's AGENTS.md / CLAUDE.md files
// (contextFiles).
func BuildSystemPrompt(o SystemPromptOptions) string {
	base := defaultPrompt(o.Cwd, o.Tools)
	if o.Home != "" {
		if b, err := readUntrustedFile(filepath.Join(o.Home, "SYSTEM.md"), systemFileLimit); err == nil {
			base = string(b)
		}
	}
	if o.Override != "" {
		base = o.Override
	}
	parts := append([]string{strings.TrimSpace(base)}, o.Append...)
	parts = append(parts, o.Extra...)
	for _, c := range contextFiles(o.Cwd, o.Home) {
		parts = append(parts, fmt.Sprintf("%s from %s:\n\n%s", c.label, c.path, strings.TrimSpace(c.text)))
	}
	return strings.Join(parts, "\n\n")
}

// Limits of the files the system prompt takes: a context file longer
// than contextFileLimit is cut there, with a line that says so.
const (
	systemFileLimit  = 1 << 20
	contextFileLimit = 64 << 10
)

// contextFile is one file of context for the system prompt.
type contextFile struct{ label, path, text string }

// contextFiles are the user's own $ZOT_HOME/AGENTS.md, then the AGENTS.md
// and CLAUDE.md of every directory from the project's root (projectRoot)
// down to cwd, outermost first — never of a directory above the project.
// A repository's file is its text, not a way to other files: only a
// regular file, reached without a symlink that leads out of the project
// or into $ZOT_HOME (OpenProjectFile), and at most contextFileLimit of it.
func contextFiles(cwd, home string) []contextFile {
	var out []contextFile
	if home != "" {
		path := filepath.Join(home, "AGENTS.md")
		if f, _, err := OpenProjectFile(home, path, nil); err == nil && f != nil {
			if text, ok := readContextFile(f, path); ok {
				out = append(out, contextFile{"User context", path, text})
			}
		}
	}
	real, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return out
	}
	root := projectRoot(real)
	var hidden []string
	if home != "" {
		hidden = []string{home}
	}
	rel, _ := filepath.Rel(root, real)
	dirs := []string{root}
	if rel != "." {
		for _, step := range splitPath(rel) {
			dirs = append(dirs, filepath.Join(dirs[len(dirs)-1], step))
		}
	}
	for _, dir := range dirs {
		for _, name := range []string{"AGENTS.md", "CLAUDE.md"} {
			path := filepath.Join(dir, name)
			f, _, err := OpenProjectFile(root, path, hidden)
			if err != nil || f == nil {
				continue
			}
			if text, ok := readContextFile(f, path); ok {
				out = append(out, contextFile{"Project context", path, text})
			}
		}
	}
	return out
}

// readContextFile reads an opened context file (and closes it): a
// regular file, cut at contextFileLimit.
func readContextFile(f *os.File, path string) (string, bool) {
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return "", false
	}
	limit := int64(contextFileLimit)
	if st.Size() <= limit {
		b, err := readUntrustedOpen(f, path, limit)
		return string(b), err == nil
	}
	b := make([]byte, limit)
	n, _ := io.ReadFull(f, b)
	return fmt.Sprintf("%s\n[… %s is %s; only its first %s are given here: read the rest with the read tool]",
		utf8Prefix(b[:n], n), filepath.Base(path), sizeString(st.Size()), sizeString(limit)), true
}

// projectRoot is the project that cwd (absolute, symlinks resolved) is
// in: the nearest directory at or above it that holds a .git of the
// user's own — one another user made (/tmp/.git) does not count, as git
// itself refuses it — else cwd.
func projectRoot(cwd string) string {
	for d := cwd; ; d = filepath.Dir(d) {
		if st, err := os.Lstat(filepath.Join(d, ".git")); err == nil && ownedByUser(st) {
			return d
		}
		if filepath.Dir(d) == d {
			return cwd
		}
	}
}

// sortedKeys lists a map's keys in order, for output that is the same
// every time.
func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
