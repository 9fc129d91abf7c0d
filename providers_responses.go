package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// OpenAI's Responses API (POST /v1/responses), which the openai provider
// uses for the models the catalogue or models.json says need it
// (usesResponses): instructions and typed input items go up; a stream of
// response.* events comes back, ending with response.completed,
// response.incomplete or response.failed and no [DONE]. The request goes
// through the same httpStreamer (retries, timeouts) and the stream through
// the same SSE reader and limits as Chat Completions.
//
// Nothing is stored at OpenAI (store: false): the whole conversation is
// sent each time, and a reasoning item goes back with the encrypted
// content the API returned for it, which is all a stateless request can
// give the model of its earlier reasoning. Item ids are not sent: with
// store false the API cannot look them up.

// usesResponses reports whether model goes to the Responses API: what
// models.json says of it ("api"), else what the catalogue says, else
// Chat Completions, which every OpenAI-compatible server speaks.
func (p *openaiProvider) usesResponses(model string) bool {
	return lookupModel(p.name, model).API == APIResponses
}

// responsesURL is the Responses endpoint beside the Chat Completions one.
func (p *openaiProvider) responsesURL() string {
	return strings.TrimSuffix(p.url, "/chat/completions") + "/responses"
}

type respRequest struct {
	Model           string         `json:"model"`
	Instructions    string         `json:"instructions,omitempty"`
	Input           []respItem     `json:"input"`
	Tools           []respTool     `json:"tools,omitempty"`
	Reasoning       *respReasoning `json:"reasoning,omitempty"`
	Include         []string       `json:"include,omitempty"`
	MaxOutputTokens int            `json:"max_output_tokens,omitempty"`
	Store           bool           `json:"store"`
	Stream          bool           `json:"stream"`
}

type respReasoning struct {
	Effort string `json:"effort"`
}

// respItem is one input item: a message, a reasoning item, a function
// call or a function call's output.
type respItem struct {
	Type             string          `json:"type"`
	Role             string          `json:"role,omitempty"`
	Content          []respPart      `json:"content,omitempty"`
	Summary          *[]respPart     `json:"summary,omitempty"` // required on reasoning, even empty
	EncryptedContent string          `json:"encrypted_content,omitempty"`
	CallID           string          `json:"call_id,omitempty"`
	Name             string          `json:"name,omitempty"`
	Arguments        string          `json:"arguments,omitempty"`
	Output           json.RawMessage `json:"output,omitempty"`
}

type respPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
}

type respTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	// Strict false: zot's and extensions' schemas are not written for
	// strict mode, which the API may otherwise assume.
	Strict bool `json:"strict"`
}

// encryptedReasoning asks for each reasoning item's encrypted content.
const encryptedReasoning = "reasoning.encrypted_content"

func (p *openaiProvider) buildResponsesRequest(req Request) respRequest {
	info := lookupModel(p.name, req.Model)
	out := respRequest{Model: req.Model, Instructions: req.System, Stream: true}
	if level := reasoningFor(info, req.Reasoning); level != "" {
		out.Reasoning = &respReasoning{Effort: level}
	}
	// A model that reasons makes reasoning items whether asked to or not;
	// a server's own model may not know the field.
	if info.Reasoning {
		out.Include = []string{encryptedReasoning}
	}
	out.MaxOutputTokens = req.MaxTokens
	if out.MaxOutputTokens == 0 && info.Source == SourceUser {
		out.MaxOutputTokens = info.MaxOutput
	}
	for _, t := range sortedTools(req.Tools) {
		out.Tools = append(out.Tools, respTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: schemaOrEmpty(t.Schema)})
	}
	return out
}

// respInput converts the transcript into input items. Tool results become
// function_call_output items ahead of the rest of their user message.
// Thinking from another provider, and a reasoning item without encrypted
// content or without an item after it (the API refuses one alone), are
// left out.
func respInput(msgs []Message) []respItem {
	var out []respItem
	for _, m := range msgs {
		if m.Role == RoleAssistant {
			out = append(out, respAssistantItems(m.Content)...)
			continue
		}
		var parts []respPart
		for _, b := range m.Content {
			switch b.Type {
			case BlockText:
				if b.Text != "" {
					parts = append(parts, respPart{Type: "input_text", Text: b.Text})
				}
			case BlockImage:
				parts = append(parts, respPart{Type: "input_image", ImageURL: "data:" + b.MimeType + ";base64," + b.Data})
			case BlockToolResult:
				out = append(out, respItem{Type: "function_call_output", CallID: b.CallID, Output: respToolOutput(b)})
			}
		}
		if len(parts) > 0 {
			out = append(out, respItem{Type: "message", Role: "user", Content: parts})
		}
	}
	return out
}

// respWire is one message as input items, encoded once for the session.
func respWire(m Message) wireEncoding {
	data, err := jsonItems(respInput([]Message{m}))
	return wireEncoding{data: data, err: err}
}

func respAssistantItems(blocks []Block) []respItem {
	var out []respItem
	for i, b := range blocks {
		switch b.Type {
		case BlockThinking:
			if b.ID == "" || b.Data == "" || b.Redacted || i == len(blocks)-1 {
				continue
			}
			summary := []respPart{}
			if b.Text != "" {
				summary = append(summary, respPart{Type: "summary_text", Text: b.Text})
			}
			out = append(out, respItem{Type: "reasoning", Summary: &summary, EncryptedContent: b.Data})
		case BlockText:
			if b.Text != "" {
				out = append(out, respItem{Type: "message", Role: "assistant", Content: []respPart{{Type: "output_text", Text: b.Text}}})
			}
		case BlockToolCall:
			args := string(b.Args)
			if !json.Valid(b.Args) {
				args = "{}"
			}
			out = append(out, respItem{Type: "function_call", CallID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	// A reasoning item must be followed by the item it led to.
	if n := len(out); n > 0 && out[n-1].Type == "reasoning" {
		out = out[:n-1]
	}
	return out
}

// respToolOutput is a tool result as function_call_output's output: its
// text, or, when it carries images, a list of input parts.
func respToolOutput(b Block) json.RawMessage {
	var text []string
	var parts []respPart
	for _, c := range b.Content {
		switch c.Type {
		case BlockText:
			text = append(text, c.Text)
			parts = append(parts, respPart{Type: "input_text", Text: c.Text})
		case BlockImage:
			parts = append(parts, respPart{Type: "input_image", ImageURL: "data:" + c.MimeType + ";base64," + c.Data})
		}
	}
	body := strings.Join(text, "\n")
	if b.IsError && !strings.HasPrefix(body, "Error") {
		body = "Error: " + body
		if len(parts) > 0 && parts[0].Type == "input_text" {
			parts[0].Text = "Error: " + parts[0].Text
		}
	}
	if len(parts) == len(text) {
		return jsonString(body)
	}
	raw, _ := json.Marshal(parts)
	return raw
}

func (p *openaiProvider) streamResponses(ctx context.Context, req Request, on func(StreamEvent)) (Reply, error) {
	body, err := p.responsesBody(req)
	if err != nil {
		return Reply{}, fmt.Errorf("%s: encode request: %w", p.name, err)
	}
	header := http.Header{}
	if p.key != "" {
		header.Set("Authorization", "Bearer "+p.key)
	}
	resp, err := p.http.post(ctx, p.responsesURL(), header, body)
	if err != nil {
		return Reply{}, err
	}
	s := &respStream{name: p.name, on: on}
	maxTokens := cmp.Or(req.MaxTokens, lookupModel(p.name, req.Model).MaxOutput)
	events, err := streamBody(ctx, p.name, resp.Body, p.http.idle, maxReplyBytes(maxTokens), s)
	reply := s.reply()
	if err == nil && !s.done {
		err = streamEndedEarly(p.name, events)
	}
	return reply, err
}

// responsesBody is the request with the transcript as its input items,
// each message encoded once for the whole session (Message.wireEncoded).
func (p *openaiProvider) responsesBody(req Request) (wireBody, error) {
	frame, err := json.Marshal(p.buildResponsesRequest(req))
	if err != nil {
		return wireBody{}, err
	}
	var list jsonList
	err = p.log.addEach(&list, "openai-responses", req.Messages, func(_ int, m Message) wireEncoding { return respWire(m) })
	if err != nil {
		return wireBody{}, err
	}
	return list.splice(frame, "input")
}

// respStream is the state of one Responses stream: the output items by
// their output_index.
type respStream struct {
	name  string
	on    func(StreamEvent)
	items []*respOutput
	usage Usage
	done  bool
	size  int64 // for received
	// refused: the model's answer was a refusal, its stop StopRefusal.
	refused bool
}

// respOutput is one output item while it streams.
type respOutput struct {
	typ  string // message, reasoning, function_call; others are skipped
	id   string // the item's id; a function call's call_id
	name string
	text strings.Builder // message text, reasoning summary, call arguments
	// encrypted is a reasoning item's encrypted content; summaryPart the
	// summary part its text has reached, so parts are kept apart.
	encrypted   string
	summaryPart int
	open        bool
}

func (s *respStream) received() int64 { return s.size }

type respItemEvent struct {
	Type             string `json:"type"`
	ID               string `json:"id"`
	CallID           string `json:"call_id"`
	Name             string `json:"name"`
	Arguments        string `json:"arguments"`
	EncryptedContent string `json:"encrypted_content"`
	Content          []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
}

type respResponse struct {
	Status string          `json:"status"`
	Error  json.RawMessage `json:"error"`
	// IncompleteDetails says why a response stopped short.
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Usage *struct {
		InputTokens        int `json:"input_tokens"`
		OutputTokens       int `json:"output_tokens"`
		InputTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	} `json:"usage"`
}

type respEvent struct {
	Type         string          `json:"type"`
	OutputIndex  *int            `json:"output_index"`
	SummaryIndex int             `json:"summary_index"`
	Delta        string          `json:"delta"`
	Arguments    string          `json:"arguments"`
	Item         *respItemEvent  `json:"item"`
	Response     *respResponse   `json:"response"`
	Error        json.RawMessage `json:"error"`
	Code         string          `json:"code"`
	Message      string          `json:"message"`
}

func (s *respStream) handle(ev sseEvent) error {
	var e respEvent
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		return fmt.Errorf("bad event %q: %w", truncate(string(ev.Data), 120), err)
	}
	if e.OutputIndex != nil && (*e.OutputIndex < 0 || *e.OutputIndex > 1<<16) {
		return fmt.Errorf("output index %d out of range", *e.OutputIndex)
	}
	s.size += int64(len(e.Delta))
	switch e.Type {
	case "response.output_item.added":
		if e.Item != nil && e.OutputIndex != nil {
			s.start(*e.OutputIndex, e.Item)
		}
	case "response.output_text.delta", "response.refusal.delta":
		// A refusal is the model's answer to show, as Chat Completions'
		// refusal is.
		if it := s.item(e.OutputIndex, "message"); it != nil && e.Delta != "" {
			s.refused = s.refused || e.Type == "response.refusal.delta"
			it.text.WriteString(e.Delta)
			s.on(StreamEvent{Type: "text", Delta: e.Delta})
		}
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		if it := s.item(e.OutputIndex, "reasoning"); it != nil && e.Delta != "" {
			delta := e.Delta
			if e.SummaryIndex != it.summaryPart && it.text.Len() > 0 {
				delta = "\n\n" + delta
			}
			it.summaryPart = e.SummaryIndex
			it.text.WriteString(delta)
			s.on(StreamEvent{Type: "thinking", Delta: delta})
		}
	case "response.function_call_arguments.delta":
		if it := s.item(e.OutputIndex, "function_call"); it != nil && e.Delta != "" {
			it.text.WriteString(e.Delta)
			s.on(StreamEvent{Type: "tool_args", ID: it.id, Delta: e.Delta})
		}
	case "response.function_call_arguments.done":
		if it := s.item(e.OutputIndex, "function_call"); it != nil && it.text.Len() == 0 && e.Arguments != "" {
			s.size += int64(len(e.Arguments))
			it.text.WriteString(e.Arguments)
			s.on(StreamEvent{Type: "tool_args", ID: it.id, Delta: e.Arguments})
		}
	case "response.output_item.done":
		if e.Item != nil && e.OutputIndex != nil {
			s.finish(*e.OutputIndex, e.Item)
		}
	case "response.completed":
		s.takeUsage(e.Response)
		s.done = true
		return errStopSSE
	case "response.incomplete":
		s.takeUsage(e.Response)
		reason := "no reason given"
		if e.Response != nil && e.Response.IncompleteDetails != nil && e.Response.IncompleteDetails.Reason != "" {
			reason = e.Response.IncompleteDetails.Reason
		}
		return &ProviderError{Provider: s.name, Type: "incomplete", Message: "the response stopped short: " + reason}
	case "response.failed":
		s.takeUsage(e.Response)
		perr := &ProviderError{Provider: s.name, Type: "failed", Message: "the response failed"}
		if e.Response != nil && len(e.Response.Error) > 0 && string(e.Response.Error) != "null" {
			perr.Type, perr.Message = decodeErrorValue(e.Response.Error)
		}
		return perr
	case "error":
		typ, msg := e.Code, e.Message
		if len(e.Error) > 0 && string(e.Error) != "null" {
			typ, msg = decodeErrorValue(e.Error)
		}
		return &ProviderError{Provider: s.name, Type: typ, Message: msg}
	}
	return nil
}

// start opens the output item at index i.
func (s *respStream) start(i int, item *respItemEvent) {
	for len(s.items) <= i {
		s.items = append(s.items, nil)
	}
	it := &respOutput{typ: item.Type, id: item.ID, name: item.Name, encrypted: item.EncryptedContent}
	s.size += blockCost + int64(len(item.ID)+len(item.CallID)+len(item.Name)+len(item.EncryptedContent))
	switch item.Type {
	case "function_call":
		it.id, it.open = item.CallID, true
		s.on(StreamEvent{Type: "tool_start", ID: it.id, Name: it.name})
	case "message", "reasoning":
	default:
		// web_search_call and the other hosted tools' items: zot asked
		// for none, and has nothing to run or show of them.
		it = nil
	}
	s.items[i] = it
}

// finish takes what only the finished item carries: the final encrypted
// content, arguments or text that came without deltas.
func (s *respStream) finish(i int, item *respItemEvent) {
	if i >= len(s.items) || s.items[i] == nil {
		s.start(i, item)
		if i >= len(s.items) || s.items[i] == nil {
			return
		}
	}
	it := s.items[i]
	switch it.typ {
	case "reasoning":
		if item.EncryptedContent != "" {
			s.size += int64(len(item.EncryptedContent))
			it.encrypted = item.EncryptedContent
		}
	case "function_call":
		if it.text.Len() == 0 && item.Arguments != "" {
			s.size += int64(len(item.Arguments))
			it.text.WriteString(item.Arguments)
			s.on(StreamEvent{Type: "tool_args", ID: it.id, Delta: item.Arguments})
		}
		s.closeCall(it)
	case "message":
		if it.text.Len() == 0 {
			for _, c := range item.Content {
				t := c.Text + c.Refusal
				s.refused = s.refused || c.Refusal != ""
				s.size += int64(len(t))
				it.text.WriteString(t)
				if t != "" {
					s.on(StreamEvent{Type: "text", Delta: t})
				}
			}
		}
	}
}

// item is the open item at index, when it is of type typ.
func (s *respStream) item(index *int, typ string) *respOutput {
	if index == nil || *index >= len(s.items) {
		return nil
	}
	if it := s.items[*index]; it != nil && it.typ == typ {
		return it
	}
	return nil
}

func (s *respStream) closeCall(it *respOutput) {
	if it.open {
		it.open = false
		s.on(StreamEvent{Type: "tool_end", ID: it.id})
	}
}

// takeUsage reads the usage of a finished response. input_tokens counts
// the cached tokens too.
func (s *respStream) takeUsage(r *respResponse) {
	if r == nil || r.Usage == nil {
		return
	}
	cached := 0
	if r.Usage.InputTokensDetails != nil {
		cached = r.Usage.InputTokensDetails.CachedTokens
	}
	s.usage = Usage{Input: r.Usage.InputTokens - cached, Output: r.Usage.OutputTokens, CacheRead: cached}
}

// reply is what the stream built, in output order.
func (s *respStream) reply() Reply {
	r := Reply{Usage: s.usage, Stop: StopEndTurn}
	if s.refused {
		r.Stop = StopRefusal
	}
	for _, it := range s.items {
		if it == nil {
			continue
		}
		switch it.typ {
		case "reasoning":
			if it.encrypted != "" || it.text.Len() > 0 {
				r.Content = append(r.Content, Block{Type: BlockThinking, ID: it.id, Text: it.text.String(), Data: it.encrypted})
			}
		case "message":
			if it.text.Len() > 0 {
				r.Content = append(r.Content, TextBlock(it.text.String()))
			}
		case "function_call":
			s.closeCall(it)
			args := it.text.String()
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			r.Content = append(r.Content, Block{Type: BlockToolCall, ID: it.id, Name: it.name, Args: json.RawMessage(args)})
			r.Stop = StopToolUse
		}
	}
	return r
}
