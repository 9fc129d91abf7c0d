package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The core's data model, the lowest layer with untrusted.go (see "Inside
// the core" in docs/architecture.md): messages and their blocks as the
// transcript and session files hold them (each with its encoding for the
// provider, kept once made); tool calls, their results and the tools as a
// provider describes them (ToolSpec); usage and cost; the events of the
// event schema; and the Recorder that keeps the transcript.

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
type messageWire struct {
	cached atomic.Pointer[wireEncoding]
	tally  atomic.Pointer[messageTally]
}

// messageTally is what requests check and count of a message's content:
// whether it is blank (checkConversation) and its size (EstimateTokens).
type messageTally struct {
	content       []Block // what was tallied
	blank         bool    // no block but text of white space
	bytes, images int
}

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

// Stop reasons of a turn. StopRefusal, the model declining to answer
// (Anthropic's refusal, OpenAI's content filter or refusal), is one more
// than seed 004 lists: on the wire (turn_end to --json, rpc and
// extensions) it is end_turn with "refusal": true (wireStop), so that a
// client written against the seed meets only the stops it knows.
const (
	StopEndTurn = "end_turn"
	StopToolUse = "tool_use"
	StopLength  = "length"
	StopRefusal = "refusal"
	StopError   = "error"
	StopAborted = "aborted"
)

// wireStop is the stop turn_end carries for stop, and whether the model
// refused (StopRefusal goes out as end_turn).
func wireStop(stop string) (string, bool) {
	if stop == StopRefusal {
		return StopEndTurn, true
	}
	return stop, false
}

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
	// EventModeChanged says that the session's mode changed (an rpc
	// client's set_mode, a plan approved), and what commands run in now.
	EventModeChanged EventType = "mode_changed"
	// EventElicitationRequest puts an MCP server's question to a client
	// that answers them (rpc_elicit.go); only such clients receive it.
	EventElicitationRequest EventType = "elicitation_request"
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
	Sandbox    string // session_start, mode_changed
	Mode       string // session_start, mode_changed
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
			Mode    string `json:"mode,omitempty"`
		}{t, e.Cwd, e.Sandbox, e.Mode})
	case EventModeChanged:
		return json.Marshal(struct {
			typ
			Mode    string `json:"mode"`
			Sandbox string `json:"sandbox"`
		}{t, e.Mode, e.Sandbox})
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
		stop, refusal := wireStop(e.Stop)
		return json.Marshal(struct {
			typ
			Stop    string `json:"stop"`
			Refusal bool   `json:"refusal,omitempty"`
			Error   string `json:"error,omitempty"`
		}{t, stop, refusal, e.Error})
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

// joinNames joins protocol names for a message.
func joinNames[S ~string](names []S, sep string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = string(n)
	}
	return strings.Join(out, sep)
}

// ToolCall is one call the model asked for.
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage
	// FromText: the model wrote the call as text and zot read it back.
	FromText bool
}

// ToolResult is what a tool gives back to the model. Details is shown to the
// user and recorded but never sent to the model (e.g. which extension ran it).
type ToolResult struct {
	Content  []Block
	IsError  bool
	Details  string
	ExitCode *int
	// Confined, set by bash, says that the sandbox refused what the
	// command tried (a write outside the writable set, the network
	// offline) and why: a run outside the sandbox might do it. The agent
	// may offer that run (Agent.OfferOutside).
	Confined string
}

// ToolSpec is a tool as a provider describes it to the model. Source is
// where it came from (the registry's source: "builtin", "skill", "ext",
// "mcp:NAME"), which is not sent.
type ToolSpec struct {
	Name        string
	Description string
	Schema      json.RawMessage
	Source      string
}

func errorResult(format string, args ...any) ToolResult {
	return ToolResult{Content: []Block{TextBlock(fmt.Sprintf(format, args...))}, IsError: true}
}

func textResult(text string) ToolResult {
	return ToolResult{Content: []Block{TextBlock(text)}}
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
