package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// The Anthropic Messages API: the request and its stream, how the model
// thinks (thinking, output_config.effort) and where the prompt cache may
// keep the request's prefix (cache_control breakpoints).

// anthropicProvider speaks the Anthropic Messages API.
type anthropicProvider struct {
	http *httpStreamer
	url  string
	key  string
	// cacheTTL is the lifetime asked of prompt cache entries: "" for
	// Anthropic's default of 5 minutes, or "1h".
	cacheTTL string
	log      wireLog // the transcript laid out for the last request
}

func (p *anthropicProvider) Name() string { return "anthropic" }

type anthBlock struct {
	Type         string           `json:"type"`
	Text         *string          `json:"text,omitempty"`
	Source       *anthImageSource `json:"source,omitempty"`
	Thinking     *string          `json:"thinking,omitempty"`
	Signature    string           `json:"signature,omitempty"`
	Data         string           `json:"data,omitempty"`
	ID           string           `json:"id,omitempty"`
	Name         string           `json:"name,omitempty"`
	Input        json.RawMessage  `json:"input,omitempty"`
	ToolUseID    string           `json:"tool_use_id,omitempty"`
	Content      []anthBlock      `json:"content,omitempty"`
	IsError      bool             `json:"is_error,omitempty"`
	CacheControl *cacheControl    `json:"cache_control,omitempty"`
}

type anthImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type anthMessage struct {
	Role    string      `json:"role"`
	Content []anthBlock `json:"content"`
}

type anthTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type anthRequest struct {
	Model        string            `json:"model"`
	MaxTokens    int               `json:"max_tokens"`
	System       []anthBlock       `json:"system,omitempty"`
	Messages     []anthMessage     `json:"messages"`
	Tools        []anthTool        `json:"tools,omitempty"`
	Thinking     *anthThinking     `json:"thinking,omitempty"`
	OutputConfig *anthOutputConfig `json:"output_config,omitempty"`
	Stream       bool              `json:"stream"`
}

func (p *anthropicProvider) buildRequest(req Request) anthRequest {
	info := lookupModel("anthropic", req.Model)
	out := anthRequest{Model: req.Model, MaxTokens: req.MaxTokens, Stream: true}
	if out.MaxTokens == 0 {
		out.MaxTokens = info.MaxOutput
	}
	askThinking(&out, info, req.Reasoning, req.MaxTokens == 0)
	if req.System != "" {
		sys := req.System
		out.System = []anthBlock{{Type: "text", Text: &sys}}
	}
	for _, t := range sortedTools(req.Tools) {
		out.Tools = append(out.Tools, anthTool{Name: t.Name, Description: t.Description, InputSchema: schemaOrEmpty(t.Schema)})
	}
	placeCacheBreakpoints(&out, cmp.Or(info.CacheMinTokens, defaultCacheMinTokens), p.cacheMark())
	return out
}

func schemaOrEmpty(s json.RawMessage) json.RawMessage {
	if len(s) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return s
}

// anthBlocks converts one message's blocks, dropping thinking that carries
// no signature (from another provider), which the API would reject.
func anthBlocks(m Message) []anthBlock {
	var blocks []anthBlock
	for _, b := range m.Content {
		if ab, ok := anthConvert(b); ok {
			blocks = append(blocks, ab)
		}
	}
	return blocks
}

// anthWire is one message as the Messages API has it: its blocks, and the
// type of the last one, which decides where a cache breakpoint may go.
func anthWire(m Message) wireEncoding {
	blocks := anthBlocks(m)
	if len(blocks) == 0 {
		return wireEncoding{}
	}
	data, err := jsonItems(blocks)
	return wireEncoding{data: data, tail: blocks[len(blocks)-1].Type, err: err}
}

func anthConvert(b Block) (anthBlock, bool) {
	switch b.Type {
	case BlockText:
		if b.Text == "" {
			return anthBlock{}, false
		}
		text := b.Text
		return anthBlock{Type: "text", Text: &text}, true
	case BlockImage:
		return anthBlock{Type: "image", Source: &anthImageSource{Type: "base64", MediaType: b.MimeType, Data: b.Data}}, true
	case BlockThinking:
		if b.Redacted {
			return anthBlock{Type: "redacted_thinking", Data: b.Data}, true
		}
		if b.Signature == "" {
			return anthBlock{}, false
		}
		text := b.Text
		return anthBlock{Type: "thinking", Thinking: &text, Signature: b.Signature}, true
	case BlockToolCall:
		input := b.Args
		if !json.Valid(input) || !isJSONObject(input) {
			input = json.RawMessage("{}")
		}
		return anthBlock{Type: "tool_use", ID: b.ID, Name: b.Name, Input: input}, true
	case BlockToolResult:
		var content []anthBlock
		for _, c := range b.Content {
			if cb, ok := anthConvert(c); ok && (cb.Type == "text" || cb.Type == "image") {
				content = append(content, cb)
			}
		}
		return anthBlock{Type: "tool_result", ToolUseID: b.CallID, Content: content, IsError: b.IsError}, true
	}
	return anthBlock{}, false
}

func (p *anthropicProvider) Stream(ctx context.Context, req Request, on func(StreamEvent)) (Reply, error) {
	if err := checkConversation("anthropic", req.Messages); err != nil {
		return Reply{}, err
	}
	built := p.buildRequest(req)
	body, err := p.requestBody(built, req.Messages)
	if err != nil {
		return Reply{}, fmt.Errorf("anthropic: encode request: %w", err)
	}
	header := http.Header{}
	if p.key != "" {
		// A server behind --base-url may need none; an empty header is
		// one some proxies reject.
		header.Set("x-api-key", p.key)
	}
	header.Set("anthropic-version", "2023-06-01")
	resp, err := p.http.post(ctx, p.url, header, body)
	if err != nil {
		return Reply{}, err
	}
	s := &anthStream{on: on}
	events, err := streamBody(ctx, "anthropic", resp.Body, p.http.idle, maxReplyBytes(built.MaxTokens), s)
	reply := Reply{Content: assemble(s.blocks), Stop: s.stop, Usage: s.usage}
	if err == nil && !s.done {
		err = streamEndedEarly("anthropic", events)
	}
	return reply, err
}

// anthStream is the state of one Anthropic stream.
type anthStream struct {
	on     func(StreamEvent)
	blocks []*partialBlock
	stop   string
	usage  Usage
	done   bool
	size   int64     // for received
	event  anthEvent // the one being handled
}

// blockCost is what received counts for a block beside its text, so that
// a stream of empty blocks is bounded too.
const blockCost = 64

func (s *anthStream) received() int64 { return s.size }

type anthUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheCreation            struct {
		Ephemeral1h *int `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

type anthEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message struct {
		Usage anthUsage `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
		Data     string `json:"data"`
		ID       string `json:"id"`
		Name     string `json:"name"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage anthUsage       `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// applyUsage takes each count the event carries; message_delta repeats some
// of message_start's counts and may update them.
func (s *anthStream) applyUsage(u anthUsage) {
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	set(&s.usage.Input, u.InputTokens)
	set(&s.usage.Output, u.OutputTokens)
	set(&s.usage.CacheRead, u.CacheReadInputTokens)
	set(&s.usage.CacheWrite, u.CacheCreationInputTokens)
	set(&s.usage.CacheWrite1h, u.CacheCreation.Ephemeral1h)
}

func (s *anthStream) block(i int) *partialBlock {
	if i < 0 || i >= len(s.blocks) {
		return nil
	}
	return s.blocks[i]
}

func (s *anthStream) handle(ev sseEvent) error {
	s.event = anthEvent{} // one for the stream, not one per event
	e := &s.event
	if err := json.Unmarshal(ev.Data, e); err != nil {
		return fmt.Errorf("bad event %q: %w", truncate(string(ev.Data), 120), err)
	}
	switch e.Type {
	case "message_start":
		s.applyUsage(e.Message.Usage)
	case "content_block_start":
		if e.Index < 0 || e.Index > 1<<16 {
			return fmt.Errorf("content block index %d out of range", e.Index)
		}
		for len(s.blocks) <= e.Index {
			s.blocks = append(s.blocks, nil)
		}
		cb := e.ContentBlock
		s.size += blockCost + int64(len(cb.Text)+len(cb.Thinking)+len(cb.Data)+len(cb.ID)+len(cb.Name))
		var pb *partialBlock
		switch cb.Type {
		case "text":
			pb = &partialBlock{typ: "text"}
			pb.text.WriteString(cb.Text)
			if cb.Text != "" {
				s.on(StreamEvent{Type: "text", Delta: cb.Text})
			}
		case "thinking":
			pb = &partialBlock{typ: "thinking"}
			pb.text.WriteString(cb.Thinking)
		case "redacted_thinking":
			pb = &partialBlock{typ: "redacted_thinking", data: cb.Data}
		case "tool_use":
			pb = &partialBlock{typ: "tool_call", id: cb.ID, name: cb.Name, open: true}
			s.on(StreamEvent{Type: "tool_start", ID: cb.ID, Name: cb.Name})
		default:
			// server_tool_use, web_search_tool_result and block types
			// newer than this client: not ours to run or show.
		}
		s.blocks[e.Index] = pb
	case "content_block_delta":
		pb := s.block(e.Index)
		if pb == nil {
			return nil
		}
		d := e.Delta
		s.size += int64(len(d.Text) + len(d.Thinking) + len(d.Signature) + len(d.PartialJSON))
		switch d.Type {
		case "text_delta":
			pb.text.WriteString(d.Text)
			s.on(StreamEvent{Type: "text", Delta: d.Text})
		case "thinking_delta":
			pb.text.WriteString(d.Thinking)
			if d.Thinking != "" {
				s.on(StreamEvent{Type: "thinking", Delta: d.Thinking})
			}
		case "signature_delta":
			pb.signature += d.Signature
		case "input_json_delta":
			pb.args.WriteString(d.PartialJSON)
			if d.PartialJSON != "" {
				s.on(StreamEvent{Type: "tool_args", ID: pb.id, Delta: d.PartialJSON})
			}
		}
	case "content_block_stop":
		s.closeBlock(s.block(e.Index))
	case "message_delta":
		if e.Delta.StopReason != "" {
			s.stop = anthStopReason(e.Delta.StopReason)
		}
		s.applyUsage(e.Usage)
	case "message_stop":
		for _, pb := range s.blocks {
			s.closeBlock(pb)
		}
		s.done = true
		return errStopSSE
	case "error":
		typ, msg := decodeErrorValue(e.Error)
		return &ProviderError{Provider: "anthropic", Type: typ, Message: msg}
	}
	return nil
}

func (s *anthStream) closeBlock(pb *partialBlock) {
	if pb != nil && pb.typ == "tool_call" && pb.open {
		pb.open = false
		s.on(StreamEvent{Type: "tool_end", ID: pb.id})
	}
}

func anthStopReason(r string) string {
	switch r {
	case "tool_use":
		return StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return StopLength
	case "refusal":
		return StopRefusal
	}
	return StopEndTurn
}

type anthThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
	// Display "summarized" asks for the thinking text: Opus 4.7 and later
	// send only the signature unless asked, and the user would watch a
	// model think without seeing any of it.
	Display string `json:"display,omitempty"`
}

type anthOutputConfig struct {
	Effort string `json:"effort,omitempty"`
}

// thinkingBudget is the budget_tokens of each --reasoning level for the
// models that take a budget (ThinkingBudget); for adaptive thinking, the
// room a model of unknown limits is given.
var thinkingBudget = map[string]int{"low": 4096, "medium": 16384, "high": 32768, "xhigh": 49152, "max": 63999}

// Thinking shares max_tokens with the answer: answerRoom is what is left
// for the answer at least, and the API takes no budget below
// minThinkingBudget.
const (
	answerRoom        = 8192
	minThinkingBudget = 1024
)

// askThinking sets how r asks the model to think at the --reasoning level:
// adaptive thinking with the level as output_config.effort, or a token
// budget, as the catalogue says the model takes it (thinkingStyle). A
// model that cannot reason, and level off, are sent neither. defaultMax
// says that max_tokens is the model's limit rather than the caller's, and
// may be raised for a model whose limit zot does not know.
func askThinking(r *anthRequest, info ModelInfo, level string, defaultMax bool) {
	level = reasoningFor(info, level)
	if level == "" {
		return
	}
	switch thinkingStyle("anthropic", info) {
	case ThinkingAdaptive:
		r.Thinking = &anthThinking{Type: "adaptive", Display: "summarized"}
		r.OutputConfig = &anthOutputConfig{Effort: level}
		if room := thinkingBudget[level] + answerRoom; !info.Known && defaultMax && r.MaxTokens < room {
			r.MaxTokens = room
		}
	case ThinkingBudget:
		budget, ok := thinkingBudget[level]
		if !ok {
			return
		}
		switch {
		case r.MaxTokens >= budget+answerRoom:
		case !info.Known:
			r.MaxTokens = budget + answerRoom
		default:
			// The model's output limit is firm: the budget gives way.
			budget = max(minThinkingBudget, r.MaxTokens-answerRoom)
		}
		if budget < r.MaxTokens {
			r.Thinking = &anthThinking{Type: "enabled", BudgetTokens: budget}
		}
	}
}

type cacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// CacheRetention1h asks Anthropic to keep prompt cache entries for an
// hour instead of five minutes: writes cost 2× the input price instead of
// 1.25×, and a session with long pauses reads its prefix instead of
// writing it again.
const CacheRetention1h = "1h"

func (p *anthropicProvider) cacheMark() *cacheControl {
	return &cacheControl{Type: "ephemeral", TTL: p.cacheTTL}
}

// cacheBytesPerToken estimates tokens from bytes on the generous side
// (JSON and code run at about 3 bytes a token), so that a prefix that may
// reach the cache minimum gets its breakpoint.
const cacheBytesPerToken = 3

// placeCacheBreakpoints marks where the prompt cache may keep r's prefix,
// within Anthropic's four breakpoints: the tools and the system prompt,
// when they are long enough to be cached on their own (minTokens: below
// the model's minimum a breakpoint caches nothing). The other two go on
// the messages (anthTurns).
func placeCacheBreakpoints(r *anthRequest, minTokens int, mark *cacheControl) {
	if prefixTokens(r) >= minTokens {
		if n := len(r.Tools); n > 0 {
			r.Tools[n-1].CacheControl = mark
		}
		if n := len(r.System); n > 0 {
			r.System[n-1].CacheControl = mark
		}
	}
}

// requestBody is r's JSON with msgs as its messages, each message encoded
// once for the whole session (Message.wireEncoded) and laid out once
// (wireLog).
func (p *anthropicProvider) requestBody(r anthRequest, msgs []Message) (wireBody, error) {
	frame, err := json.Marshal(r)
	if err != nil {
		return wireBody{}, err
	}
	turns, err := anthTurns(&p.log, msgs, p.cacheMark())
	if err != nil {
		return wireBody{}, err
	}
	return turns.splice(frame, "messages")
}

// anthTurn is one item of the messages array: consecutive messages of one
// role, merged (the API wants the roles alternating).
type anthTurn struct {
	role  Role
	first int // the turn's first message with blocks
	last  int // the message its last block comes from
	tail  string
}

// markable says whether a cache breakpoint can go at the end of t.
func (t anthTurn) markable() bool {
	return t.role == RoleUser && slices.Contains([]string{"text", "image", "tool_result"}, t.tail)
}

// anthTurns is the transcript as the items of the messages array, with a
// cache breakpoint at the end of each of the last two user turns: the
// last, which the next request reads; and the one before, which this
// request reads back exactly — from the last one Anthropic looks for an
// earlier entry only 20 blocks back, and a turn of many parallel tool calls
// adds more blocks than that, so without it the whole prefix would be
// written again at 1.25× instead of read at 0.1×. The two marked messages
// are encoded afresh. The turns before the two are the same in every later
// request while the transcript grows, so log keeps them.
func anthTurns(log *wireLog, msgs []Message, mark *cacheControl) (jsonList, error) {
	log.mu.Lock()
	defer log.mu.Unlock()
	from := log.resume("anthropic", msgs)
	turns, encoded, err := anthSplitTurns(msgs, from)
	if err != nil {
		return jsonList{}, err
	}
	marks := lastMarkable(turns)
	if from > 0 && (len(marks) < 2 || len(turns) > 0 && turns[0].role == log.lastRole) {
		// A message added to the last turn made it unmarkable, so a mark
		// goes further back than the log leaves; or the transcript goes on
		// after the log in the role of its last turn, which would merge
		// into it: lay it all out.
		log.restart("anthropic")
		from = 0
		if turns, encoded, err = anthSplitTurns(msgs, from); err != nil {
			return jsonList{}, err
		}
		marks = lastMarkable(turns)
	}
	keep := 0 // the turns the log takes: those before the earlier mark
	if len(marks) == 2 {
		keep = marks[1]
	}
	end := from // the messages they cover, with the empty ones after them
	if keep > 0 {
		end = turns[keep].first
	}
	for i := from; i < end; i++ {
		if !loggable(msgs[i]) {
			for keep > 0 && turns[keep-1].last >= i {
				keep--
			}
			end = min(i, turns[keep].first)
		}
	}
	turnItems := func(t anthTurn) [][]byte { return encoded[t.first-from : t.last-from+1] }
	for _, t := range turns[:keep] {
		anthLayTurn(&log.list, t, turnItems(t), nil)
	}
	for i := from; keep > 0 && i < end; i++ {
		log.note(msgs[i])
	}
	if keep > 0 {
		log.lastRole = turns[keep-1].role
	}
	var list jsonList
	list.adopt(&log.list)
	for i := keep; i < len(turns); i++ {
		t := turns[i]
		var marked []byte
		if slices.Contains(marks, i) {
			blocks := anthBlocks(msgs[t.last])
			blocks[len(blocks)-1].CacheControl = mark
			if marked, err = jsonItems(blocks); err != nil {
				return jsonList{}, err
			}
		}
		anthLayTurn(&list, t, turnItems(t), marked)
	}
	return list, nil
}

// anthSplitTurns is msgs[from:] as turns, and the encoding of each of
// those messages.
func anthSplitTurns(msgs []Message, from int) ([]anthTurn, [][]byte, error) {
	var turns []anthTurn
	encoded := make([][]byte, len(msgs)-from)
	for i := from; i < len(msgs); i++ {
		m := msgs[i]
		e := m.wireEncoded("anthropic", anthWire)
		if e.err != nil {
			return nil, nil, e.err
		}
		encoded[i-from] = e.data
		if len(e.data) == 0 {
			continue
		}
		if n := len(turns); n > 0 && turns[n-1].role == m.Role {
			turns[n-1].last, turns[n-1].tail = i, e.tail
			continue
		}
		turns = append(turns, anthTurn{role: m.Role, first: i, last: i, tail: e.tail})
	}
	return turns, encoded, nil
}

// lastMarkable is the indices of the last two turns a breakpoint can end,
// the last first.
func lastMarkable(turns []anthTurn) []int {
	var marks []int
	for i := len(turns) - 1; i >= 0 && len(marks) < 2; i-- {
		if turns[i].markable() {
			marks = append(marks, i)
		}
	}
	return marks
}

// anthLayTurn adds turn t to list: its messages' items, the last message's
// replaced by marked when there is one.
func anthLayTurn(list *jsonList, t anthTurn, items [][]byte, marked []byte) {
	head, ok := anthTurnHeads[t.role]
	if !ok {
		head = []byte(`{"role":` + string(jsonString(string(t.role))) + `,"content":[`)
	}
	list.open(head)
	for i, data := range items {
		if i == len(items)-1 && marked != nil {
			data = marked
		}
		list.inner(data)
	}
	list.close(anthTurnTail)
}

// anthTurnHeads and anthTurnTail frame a turn's blocks.
var (
	anthTurnHeads = map[Role][]byte{
		RoleUser:      []byte(`{"role":"user","content":[`),
		RoleAssistant: []byte(`{"role":"assistant","content":[`),
	}
	anthTurnTail = []byte("]}")
)

// prefixTokens estimates the tokens of r's tools and system prompt from
// their text (names, descriptions, schemas), not from a second encoding of
// the request: the frame is encoded once, after the breakpoints are set.
func prefixTokens(r *anthRequest) int {
	n := 0
	for _, t := range r.Tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	for _, s := range r.System {
		if s.Text != nil {
			n += len(*s.Text)
		}
	}
	return n / cacheBytesPerToken
}
