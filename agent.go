package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Role says who wrote a message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one entry of the transcript. Tool results travel in user
// messages, as both provider APIs expect.
type Message struct {
	Role    Role      `json:"role"`
	Content []Block   `json:"content"`
	Time    time.Time `json:"time"`

	// wire keeps the message's encoding for the provider that sent it
	// last, so that each request encodes only what is new. Only the
	// agent's own transcript has one (see wireEncoded).
	wire *messageWire
}

// messageWire is a message's encoding for one wire format. The agent makes
// a new one for each message it adds to its transcript and never changes
// a message there in place; a transcript replaced (SetMessages, compaction)
// gets new ones, and Messages hands out copies without, so an encoding
// cannot outlive the content it was made from.
type messageWire struct{ cached atomic.Pointer[wireEncoding] }

// wireEncoding is one message as a provider's wire format has it: data is
// the JSON of its items (several, comma-separated, or none), and tail what
// the provider needs to know of the last one without decoding it.
type wireEncoding struct {
	format  string
	content []Block // what was encoded: a copy given new content is encoded again
	data    []byte
	tail    string
	err     error
}

// wireEncoded returns m's encoding for format, made by encode the first
// time the agent's transcript sends m in that format.
func (m Message) wireEncoded(format string, encode func(Message) wireEncoding) wireEncoding {
	if m.wire != nil {
		if e := m.wire.cached.Load(); e != nil && e.format == format && sameBlocks(e.content, m.Content) {
			return *e
		}
	}
	e := encode(m)
	e.format, e.content = format, m.Content
	if m.wire != nil && e.err == nil {
		m.wire.cached.Store(&e)
	}
	return e
}

// sameBlocks says whether a and b are the same slice, not equal ones.
func sameBlocks(a, b []Block) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// withWire gives each message a place of its own for its encoding.
func withWire(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.wire = new(messageWire)
		out[i] = m
	}
	return out
}

// withoutWire copies msgs, blocks and all, without their encodings, for
// callers outside the agent: what they change of their copy is theirs and
// cannot make an encoding the agent keeps disagree with its message.
func withoutWire(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.wire = nil
		m.Content = copyBlocks(m.Content)
		out[i] = m
	}
	return out
}

func copyBlocks(blocks []Block) []Block {
	if blocks == nil {
		return nil
	}
	out := make([]Block, len(blocks))
	for i, b := range blocks {
		b.Args = append(json.RawMessage(nil), b.Args...)
		b.Content = copyBlocks(b.Content)
		out[i] = b
	}
	return out
}

// BlockType names a kind of content block, in session files and events.
type BlockType string

const (
	BlockText       BlockType = "text"
	BlockImage      BlockType = "image"
	BlockThinking   BlockType = "thinking"
	BlockToolCall   BlockType = "tool_call"
	BlockToolResult BlockType = "tool_result"
)

// Block is one piece of a message. Type selects the fields that matter:
//
//	text        Text
//	image       MimeType, Data (base64)
//	thinking    Text, Signature; Redacted with the opaque payload in Data
//	tool_call   ID, Name, Args (raw, possibly invalid JSON when the model was cut off)
//	tool_result CallID, IsError, Content
//
// This is the session-file encoding; events use wireBlock instead.
type Block struct {
	Type      BlockType       `json:"type"`
	Text      string          `json:"text,omitempty"`
	MimeType  string          `json:"mime_type,omitempty"`
	Data      string          `json:"data,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Redacted  bool            `json:"redacted,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Args      json.RawMessage `json:"args,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Content   []Block         `json:"content,omitempty"`
	// FromText marks a tool call the model wrote as text, which zot read
	// back into a call (providers_texttools.go).
	FromText bool `json:"from_text,omitempty"`
}

func TextBlock(text string) Block { return Block{Type: BlockText, Text: text} }

// Text joins the text blocks of a message.
func (m Message) Text() string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == BlockText {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// ToolCalls returns the tool_call blocks of a message in the model's order.
func (m Message) ToolCalls() []ToolCall {
	var calls []ToolCall
	for _, c := range m.Content {
		if c.Type == BlockToolCall {
			calls = append(calls, ToolCall{ID: c.ID, Name: c.Name, Args: c.Args, FromText: c.FromText})
		}
	}
	return calls
}

// thinkingText joins the readable thinking of a message.
func (m Message) thinkingText() string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == BlockThinking && !c.Redacted {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// isPrompt tells a message the user typed from one that carries tool results.
func (m Message) isPrompt() bool {
	if m.Role != RoleUser {
		return false
	}
	for _, c := range m.Content {
		if c.Type == BlockToolResult {
			return false
		}
	}
	return true
}

// Usage counts tokens of one provider call or of a whole session.
type Usage struct {
	Input      int `json:"input"`
	Output     int `json:"output"`
	CacheRead  int `json:"cache_read"`
	CacheWrite int `json:"cache_write"`
	CostUSD    USD `json:"cost_usd"`
	// CacheWrite1h is the part of CacheWrite kept for an hour, which
	// costs more than a 5-minute write; it only prices the call.
	CacheWrite1h int `json:"-"`
	// Estimated marks counts zot made itself from the bytes it sent and
	// got (providers_overflow.go), for a server that reported none.
	Estimated bool `json:"estimated,omitempty"`
}

// USD is an amount of dollars. Sums of prices carry binary noise
// (0.000376 + … = 0.00037600000000000003); in JSON it is rounded to a
// billionth of a dollar, far below any price, and written as the shortest
// decimal that reads back as that value.
type USD float64

func (d USD) MarshalJSON() ([]byte, error) {
	v := math.Round(float64(d)*1e9) / 1e9
	if math.IsInf(v, 0) || math.IsNaN(v) {
		v = 0 // no price makes either; JSON has no way to say them
	}
	return strconv.AppendFloat(nil, v, 'f', -1, 64), nil
}

func (u *Usage) Add(o Usage) {
	u.Input += o.Input
	u.Output += o.Output
	u.CacheRead += o.CacheRead
	u.CacheWrite += o.CacheWrite
	u.CacheWrite1h += o.CacheWrite1h
	u.CostUSD += o.CostUSD
	u.Estimated = u.Estimated || o.Estimated
}

// clamped is u with no count below zero, and what was wrong when one was.
// Providers count the input as the prompt minus its cached part, so a
// server that reports more cached tokens than the prompt had makes it
// negative: the cached part is cut to the prompt.
func (u Usage) clamped() (Usage, string) {
	var odd string
	if u.Input < 0 && u.CacheRead > 0 {
		prompt := max(u.Input+u.CacheRead, 0)
		odd = fmt.Sprintf("it reported %d cached tokens of a %d-token prompt", u.CacheRead, prompt)
		u.Input, u.CacheRead = 0, prompt
	}
	for _, n := range []*int{&u.Input, &u.Output, &u.CacheRead, &u.CacheWrite, &u.CacheWrite1h} {
		if *n < 0 {
			odd = cmp.Or(odd, fmt.Sprintf("it reported a token count of %d", *n))
			*n = 0
		}
	}
	return u, odd
}

// ContextTokens is how much of the context window the request used.
func (u Usage) ContextTokens() int { return u.Input + u.CacheRead + u.CacheWrite }

// Stop reasons of a turn, as turn_end reports them.
const (
	StopEndTurn = "end_turn"
	StopToolUse = "tool_use"
	StopLength  = "length"
	StopError   = "error"
	StopAborted = "aborted"
)

// EventType names an event of the --json / rpc schema (seed 004). Every
// event zot emits is one of these constants.
type EventType string

const (
	EventSessionStart     EventType = "session_start"
	EventTurnStart        EventType = "turn_start"
	EventUserMessage      EventType = "user_message"
	EventAssistantStart   EventType = "assistant_start"
	EventTextDelta        EventType = "text_delta"
	EventThinkingDelta    EventType = "thinking_delta"
	EventToolUseStart     EventType = "tool_use_start"
	EventToolUseArgs      EventType = "tool_use_args"
	EventToolUseEnd       EventType = "tool_use_end"
	EventToolCall         EventType = "tool_call"
	EventToolProgress     EventType = "tool_progress"
	EventToolResult       EventType = "tool_result"
	EventAssistantMessage EventType = "assistant_message"
	EventUsage            EventType = "usage"
	EventTurnEnd          EventType = "turn_end"
	EventDone             EventType = "done"
	EventError            EventType = "error"
	EventCompactDone      EventType = "compact_done"
	EventExtNotify        EventType = "ext_notify"
	// EventMessageBlocked says that an interceptor withheld the assistant's
	// message from the user, and why (the message stays in the transcript).
	EventMessageBlocked EventType = "assistant_message_blocked"
	// EventApprovalRequest asks a client that answers approvals about a
	// tool call (approvals_client.go); only such clients receive it.
	EventApprovalRequest EventType = "approval_request"
	// EventRetry says that the model call failed in a way worth retrying
	// (overloaded, rate-limited, cut off before the answer began) and when
	// the next attempt goes out.
	EventRetry EventType = "retry"
)

// Event is one thing that happened while the agent worked. Its JSON encoding
// is the --json / rpc event schema; every host (TUI, RPC, extensions, print
// mode) reads the same stream.
type Event struct {
	Type       EventType
	Step       int
	Delta      string
	ID         string
	Name       string
	Args       json.RawMessage
	Text       string
	IsError    bool
	Details    string
	Content    []Block
	Time       time.Time
	Usage      Usage
	Cumulative Usage
	Stop       string
	Error      string
	Message    string
	Summary    string
	Extension  string
	Level      string
	Cwd        string // session_start
	Sandbox    string // session_start
	Reason     string
	// retry: the attempt about to be made, the most there are, the wait.
	Attempt, Attempts int
	Wait              time.Duration
	// Truncated marks an error event that is a warning: the server cut the
	// prompt (Reply.Truncated); the run goes on.
	Truncated bool
}

// Sink receives events. The agent calls it from one goroutine at a time.
type Sink func(Event)

// MarshalJSON writes exactly the fields each event type has in the schema.
func (e Event) MarshalJSON() ([]byte, error) {
	type typ struct {
		Type EventType `json:"type"`
	}
	t := typ{e.Type}
	switch e.Type {
	case EventSessionStart:
		return json.Marshal(struct {
			typ
			Cwd     string `json:"cwd"`
			Sandbox string `json:"sandbox"`
		}{t, e.Cwd, e.Sandbox})
	case EventTurnStart:
		return json.Marshal(struct {
			typ
			Step int `json:"step"`
		}{t, e.Step})
	case EventUserMessage, EventAssistantMessage:
		return json.Marshal(struct {
			typ
			Content []wireBlock `json:"content"`
			Time    time.Time   `json:"time"`
		}{t, wireBlocks(e.Content), e.Time})
	case EventTextDelta, EventThinkingDelta:
		return json.Marshal(struct {
			typ
			Delta string `json:"delta"`
		}{t, e.Delta})
	case EventToolUseStart:
		return json.Marshal(struct {
			typ
			ID   string `json:"id"`
			Name string `json:"name"`
		}{t, e.ID, e.Name})
	case EventToolUseArgs:
		return json.Marshal(struct {
			typ
			ID    string `json:"id"`
			Delta string `json:"delta"`
		}{t, e.ID, e.Delta})
	case EventToolUseEnd:
		return json.Marshal(struct {
			typ
			ID string `json:"id"`
		}{t, e.ID})
	case EventToolCall:
		return json.Marshal(struct {
			typ
			ID   string          `json:"id"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		}{t, e.ID, e.Name, argsJSON(e.Args)})
	case EventToolProgress:
		return json.Marshal(struct {
			typ
			ID   string `json:"id"`
			Text string `json:"text"`
		}{t, e.ID, e.Text})
	case EventToolResult:
		return json.Marshal(struct {
			typ
			ID      string      `json:"id"`
			Name    string      `json:"name,omitempty"`
			IsError bool        `json:"is_error"`
			Content []wireBlock `json:"content"`
			Details string      `json:"details,omitempty"`
		}{t, e.ID, e.Name, e.IsError, wireBlocks(e.Content), e.Details})
	case EventUsage:
		return json.Marshal(struct {
			typ
			Usage
			Cumulative Usage `json:"cumulative"`
		}{t, e.Usage, e.Cumulative})
	case EventTurnEnd:
		return json.Marshal(struct {
			typ
			Stop  string `json:"stop"`
			Error string `json:"error,omitempty"`
		}{t, e.Stop, e.Error})
	case EventError:
		return json.Marshal(struct {
			typ
			Message   string `json:"message"`
			Truncated bool   `json:"truncated,omitempty"`
		}{t, e.Message, e.Truncated})
	case EventMessageBlocked:
		return json.Marshal(struct {
			typ
			Reason string `json:"reason"`
		}{t, e.Reason})
	case EventRetry:
		return json.Marshal(struct {
			typ
			Attempt  int    `json:"attempt"`
			Attempts int    `json:"attempts"`
			WaitMS   int64  `json:"wait_ms"`
			Error    string `json:"error"`
		}{t, e.Attempt, e.Attempts, e.Wait.Milliseconds(), e.Error})
	case EventCompactDone:
		return json.Marshal(struct {
			typ
			Summary string `json:"summary"`
		}{t, e.Summary})
	case EventExtNotify:
		return json.Marshal(struct {
			typ
			Extension string `json:"extension"`
			Level     string `json:"level"`
			Message   string `json:"message"`
		}{t, e.Extension, e.Level, e.Message})
	default: // assistant_start, done, and anything without fields
		return json.Marshal(t)
	}
}

// wireBlock is a content block as events and get_messages show it: images
// as a byte count rather than their data, so transcript dumps stay small.
type wireBlock struct {
	Type     BlockType       `json:"type"`
	Text     *string         `json:"text,omitempty"`
	MimeType string          `json:"mime_type,omitempty"`
	Bytes    *int            `json:"bytes,omitempty"`
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name,omitempty"`
	Args     json.RawMessage `json:"args,omitempty"`
	CallID   string          `json:"call_id,omitempty"`
	IsError  *bool           `json:"is_error,omitempty"`
	Content  []wireBlock     `json:"content,omitempty"`
}

func wireBlocks(blocks []Block) []wireBlock {
	out := make([]wireBlock, 0, len(blocks))
	for _, b := range blocks {
		w := wireBlock{Type: b.Type}
		switch b.Type {
		case BlockText, BlockThinking:
			text := b.Text
			w.Text = &text
		case BlockImage:
			n := base64Len(b.Data)
			w.MimeType, w.Bytes = b.MimeType, &n
		case BlockToolCall:
			w.ID, w.Name, w.Args = b.ID, b.Name, argsJSON(b.Args)
		case BlockToolResult:
			isErr := b.IsError
			w.CallID, w.IsError = b.CallID, &isErr
			w.Content = wireBlocks(b.Content)
		}
		out = append(out, w)
	}
	return out
}

// WireMessage is a message in the event schema (get_messages, user_message).
type WireMessage struct {
	Role    Role        `json:"role"`
	Content []wireBlock `json:"content"`
	Time    time.Time   `json:"time"`
}

func WireMessages(msgs []Message) []WireMessage {
	out := make([]WireMessage, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, WireMessage{Role: m.Role, Content: wireBlocks(m.Content), Time: m.Time})
	}
	return out
}

func base64Len(s string) int {
	n := len(s) / 4 * 3
	if strings.HasSuffix(s, "==") {
		n -= 2
	} else if strings.HasSuffix(s, "=") {
		n--
	}
	return n
}

// argsJSON makes tool arguments safe to embed: arguments cut off mid-stream
// are not valid JSON and are shown as a JSON string instead.
func argsJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(raw) {
		return raw
	}
	quoted, _ := json.Marshal(string(raw))
	return quoted
}

// ToolCall is one call the model asked for.
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage
	// FromText: the model wrote the call as text and zot read it back.
	FromText bool
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

// Recorder persists the transcript as it grows (a session file). Append and
// AppendUsage are called as the turn goes, Sync at the end of each turn, and
// Reset when the transcript is replaced wholesale (compaction, clear). A
// failure ends the run with a recordError: going on would leave turns out
// of the saved transcript. A Recorder should then refuse every later row
// (Session does), so that a smaller row is not saved after a bigger one was
// lost.
type Recorder interface {
	Append(m Message) error
	AppendUsage(u Usage) error
	Reset(msgs []Message) error
	Sync() error
}

// ErrBusy is returned when a prompt, compaction or transcript change is asked
// for while another prompt runs.
var ErrBusy = errors.New("agent is busy with another prompt")

// ErrBlocked is returned when a hook refused to let a turn or prompt run.
var ErrBlocked = errors.New("blocked")

// ErrEmptyPrompt is a prompt with neither text nor images: the APIs refuse
// an empty message, and one in the transcript would fail every later turn.
var ErrEmptyPrompt = errors.New("nothing to send: the prompt is empty")

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

	Recorder Recorder
	Log      func(format string, args ...any)

	// CompactThreshold is the share of the context window whose use
	// compacts the conversation before the next turn; 0 is
	// defaultCompactThreshold. A model's own (models.json) wins.
	CompactThreshold float64

	mu         sync.Mutex
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
			return fmt.Errorf("stopped after --max-steps %d turns; raise it or split the task", maxSteps)
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
				if cerr := a.compact(ctx, emit); errors.Is(cerr, errNothingToCompact) {
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
	req := Request{
		Model:     a.Model,
		System:    a.System,
		Messages:  append([]Message(nil), a.messages...),
		Tools:     a.Tools.Specs(),
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
	rec.Result = tool.Run(ctx, args, func(line string) {
		emit(Event{Type: EventToolProgress, ID: call.ID, Text: line})
	})
	if after != nil {
		after()
	}
	return rec.Result
}

func isJSONObject(raw json.RawMessage) bool {
	s := strings.TrimLeft(string(raw), " \t\r\n")
	return strings.HasPrefix(s, "{")
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
	err := a.compact(ctx, emit)
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

func (a *Agent) compact(ctx context.Context, emit Sink) error {
	a.mu.Lock()
	msgs := append([]Message(nil), a.messages...)
	model, system := a.Model, a.System
	a.mu.Unlock()
	cut := compactCut(msgs)
	if cut <= 0 {
		return errNothingToCompact
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

// windowProber is a provider that can ask its server for the model's
// context window before the first request (a local server: see
// providers_local.go), so the first turn of a resumed conversation is
// measured against the real window.
type windowProber interface {
	ProbeWindow(ctx context.Context, model string)
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
	req := Request{System: a.System, Messages: a.messages, Tools: a.Tools.Specs()}
	estimate := EstimateTokens(req, true)
	a.mu.Unlock()
	if justCompacted {
		return nil
	}
	if p, ok := a.Provider.(windowProber); ok {
		p.ProbeWindow(ctx, model)
	}
	info := lookupModel(a.Provider.Name(), model)
	threshold := cmp.Or(info.CompactThreshold, a.CompactThreshold, defaultCompactThreshold)
	used := max(last, estimate)
	if !must && (used == 0 || float64(used) < threshold*float64(info.ContextWindow)) {
		return nil
	}
	err := a.compact(ctx, emit)
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

// joinNames joins protocol names for a message.
func joinNames[S ~string](names []S, sep string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = string(n)
	}
	return strings.Join(out, sep)
}
