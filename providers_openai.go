package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The OpenAI Chat Completions client: its request, its messages and the
// stream of chunks it answers with. The servers that copy the API are
// providers_local.go's; the Responses API is providers_responses.go's.

// openaiProvider speaks OpenAI Chat Completions, and with another base URL
// the servers that copy it: ollama, llama.cpp, vLLM.
type openaiProvider struct {
	http *httpStreamer
	name string
	url  string
	key  string
	// plainMaxTokens sends the output limit as max_tokens, which every
	// compatible server reads; OpenAI's own API wants
	// max_completion_tokens (and refuses max_tokens for reasoning models).
	plainMaxTokens bool
	compat         Compat
	// local is what zot knows of a server that is not api.openai.com
	// (providers_local.go); nil for OpenAI's own API.
	local *localServer
	// log is the transcript laid out for the last request, in Chat
	// Completions' format or the Responses API's.
	log wireLog
}

func (p *openaiProvider) Name() string { return p.name }

type oaiMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Reasoning        string          `json:"reasoning,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []oaiToolCall   `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
}

type oaiToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaiPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url,omitempty"`
}

type oaiTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type oaiRequest struct {
	Model         string       `json:"model"`
	Messages      []oaiMessage `json:"messages"`
	Tools         []oaiTool    `json:"tools,omitempty"`
	Stream        bool         `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
	ReasoningEffort     string `json:"reasoning_effort,omitempty"`
	MaxCompletionTokens int    `json:"max_completion_tokens,omitempty"`
	MaxTokens           int    `json:"max_tokens,omitempty"`
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func (p *openaiProvider) buildRequest(req Request) oaiRequest {
	info := lookupModel(p.name, req.Model)
	out := oaiRequest{Model: req.Model, Stream: true, ReasoningEffort: reasoningFor(info, req.Reasoning)}
	// The catalogue's limits are the API's defaults anyway; a limit the
	// user wrote in models.json is sent, since a local server's default
	// may be far from it.
	limit := req.MaxTokens
	if limit == 0 && info.Source == SourceUser {
		limit = info.MaxOutput
	}
	if p.compat.MaxTokensField == "max_tokens" || p.plainMaxTokens && p.compat.MaxTokensField == "" {
		out.MaxTokens = limit
	} else {
		out.MaxCompletionTokens = limit
	}
	if isTrue(p.compat.SupportsUsageInStreaming, true) {
		out.StreamOptions = &struct {
			IncludeUsage bool `json:"include_usage"`
		}{true}
	}
	out.Tools = oaiTools(req.Tools)
	return out
}

// requestBody is the Chat Completions request: the system prompt and the
// transcript, each message encoded once for the whole session
// (Message.wireEncoded), spliced into the rest. reasoningKey names the
// field each reply's reasoning goes back in; "" sends none.
func (p *openaiProvider) requestBody(req Request, reasoningKey string) (wireBody, error) {
	frame, err := json.Marshal(p.buildRequest(req))
	if err != nil {
		return wireBody{}, err
	}
	var list jsonList
	if req.System != "" {
		role := "system"
		if isTrue(p.compat.SupportsDeveloperRole, false) {
			role = "developer"
		}
		system, err := jsonItems([]oaiMessage{{Role: role, Content: jsonString(req.System)}})
		if err != nil {
			return wireBody{}, err
		}
		list.add(system)
	}
	format := "openai-chat"
	if reasoningKey != "" {
		format += "+" + reasoningKey
	}
	err = p.log.addEach(&list, format, req.Messages, func(_ int, m Message) wireEncoding {
		data, err := jsonItems(oaiMessages([]Message{m}, reasoningKey))
		return wireEncoding{data: data, err: err}
	})
	if err != nil {
		return wireBody{}, err
	}
	return list.splice(frame, "messages")
}

// oaiMessages converts the transcript. Tool messages cannot carry images,
// so images a tool returned follow its results in one user message.
// reasoningKey, reasoning or reasoning_content, sends each reply's
// reasoning back in that field.
func oaiMessages(msgs []Message, reasoningKey string) []oaiMessage {
	var out []oaiMessage
	for _, m := range msgs {
		if m.Role == RoleAssistant {
			// content may be null only beside tool_calls; a reply that was
			// all reasoning (or cut off) has neither, and goes as "".
			om := oaiMessage{Role: "assistant", Content: jsonString(m.Text())}
			switch reasoningKey {
			case "reasoning":
				om.Reasoning = m.thinkingText()
			case "reasoning_content":
				om.ReasoningContent = m.thinkingText()
			}
			if len(m.ToolCalls()) > 0 && m.Text() == "" {
				om.Content = json.RawMessage("null")
			}
			for _, c := range m.ToolCalls() {
				var tc oaiToolCall
				args := string(c.Args)
				if !json.Valid(c.Args) || !isJSONObject(c.Args) {
					args = "{}"
				}
				tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments = c.ID, "function", c.Name, args
				om.ToolCalls = append(om.ToolCalls, tc)
			}
			out = append(out, om)
			continue
		}
		var parts []oaiPart
		var toolImages []oaiPart
		for _, b := range m.Content {
			switch b.Type {
			case BlockText:
				parts = append(parts, oaiPart{Type: "text", Text: b.Text})
			case BlockImage:
				parts = append(parts, imagePart(b))
			case BlockToolResult:
				var text []string
				for _, c := range b.Content {
					switch c.Type {
					case BlockText:
						text = append(text, c.Text)
					case BlockImage:
						toolImages = append(toolImages, imagePart(c))
					}
				}
				body := strings.Join(text, "\n")
				if b.IsError && !strings.HasPrefix(body, "Error") {
					body = "Error: " + body
				}
				out = append(out, oaiMessage{Role: "tool", ToolCallID: b.CallID, Content: jsonString(body)})
			}
		}
		if len(toolImages) > 0 {
			parts = append([]oaiPart{{Type: "text", Text: "Images returned by the tool calls above:"}}, append(toolImages, parts...)...)
		}
		if len(parts) == 0 {
			continue
		}
		if len(parts) == 1 && parts[0].Type == "text" {
			out = append(out, oaiMessage{Role: "user", Content: jsonString(parts[0].Text)})
			continue
		}
		raw, _ := json.Marshal(parts)
		out = append(out, oaiMessage{Role: "user", Content: raw})
	}
	return out
}

func imagePart(b Block) oaiPart {
	p := oaiPart{Type: "image_url"}
	p.ImageURL = &struct {
		URL string `json:"url"`
	}{URL: "data:" + b.MimeType + ";base64," + b.Data}
	return p
}

func (p *openaiProvider) Stream(ctx context.Context, req Request, on func(StreamEvent)) (Reply, error) {
	if err := checkConversation(p.name, req.Messages); err != nil {
		return Reply{}, err
	}
	if p.usesResponses(req.Model) {
		return p.streamResponses(ctx, req, on)
	}
	if p.local == nil {
		reply, _, err := p.stream(ctx, req, p.compat.reasoningKey(), on)
		return reply, err
	}
	return p.local.converse(ctx, req, on, func(req Request, plan localPlan, on func(StreamEvent)) (Reply, bool, error) {
		reply, s, err := p.stream(ctx, req, p.local.reasoningKey(req.Model, plan.info.Kind, p.compat), on)
		if s == nil {
			return reply, false, err
		}
		p.local.replies.learnReasoningField(req.Model, s.reasoningField)
		return reply, s.sawUsage, err
	})
}

// stream sends one request and reads its stream, which it returns for
// what the server showed of itself (usage, its reasoning's field); nil
// when no stream began.
func (p *openaiProvider) stream(ctx context.Context, req Request, reasoningKey string, on func(StreamEvent)) (reply Reply, s *oaiStream, err error) {
	body, err := p.requestBody(req, reasoningKey)
	if err != nil {
		return Reply{}, nil, fmt.Errorf("%s: encode request: %w", p.name, err)
	}
	header := http.Header{}
	if p.key != "" {
		header.Set("Authorization", "Bearer "+p.key)
	}
	resp, err := p.http.post(ctx, p.url, header, body)
	if err != nil {
		return Reply{}, nil, err
	}
	s = &oaiStream{name: p.name, on: on}
	maxTokens := cmp.Or(req.MaxTokens, lookupModel(p.name, req.Model).MaxOutput)
	events, err := streamBody(ctx, p.name, resp.Body, p.http.idle, maxReplyBytes(maxTokens), s)
	reply = Reply{Stop: s.stop, Usage: s.usage}
	if s.thinking != nil {
		reply.Content = append(reply.Content, s.thinking.block())
	}
	reply.Content = append(reply.Content, assemble([]*partialBlock{s.text})...)
	for _, tc := range s.calls {
		s.endCall(tc)
		b := tc.block()
		if s.stop == StopLength && strings.TrimSpace(tc.args.String()) == "" {
			b.Args = nil // cut before its arguments began: not a call without any
		}
		reply.Content = append(reply.Content, b)
	}
	if err == nil && !s.done && s.stop == "" {
		err = streamEndedEarly(p.name, events)
	}
	return reply, s, err
}

// oaiStream is the state of one Chat Completions stream. Only choice 0 is
// read: we never ask for more, and a server that sends more is ignored.
type oaiStream struct {
	name     string
	on       func(StreamEvent)
	text     *partialBlock
	thinking *partialBlock
	calls    []*partialBlock
	byIndex  map[int]*partialBlock
	stop     string
	refused  bool // a refusal was streamed
	usage    Usage
	sawUsage bool
	done     bool
	size     int64    // for received
	chunk    oaiChunk // the one being handled
	// reasoningField is the field the reasoning came in: vLLM 0.17 and
	// later write "reasoning", llama-server and older vLLM
	// "reasoning_content".
	reasoningField string
}

func (s *oaiStream) received() int64 { return s.size }

type oaiChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			Reasoning        *string `json:"reasoning"`
			Refusal          *string `json:"refusal"`
			ToolCalls        []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

func (s *oaiStream) handle(ev sseEvent) error {
	data := bytes.TrimSpace(ev.Data)
	if string(data) == "[DONE]" {
		s.done = true
		return errStopSSE
	}
	s.chunk = oaiChunk{} // one for the stream, not one per chunk
	c := &s.chunk
	if err := json.Unmarshal(data, c); err != nil {
		return fmt.Errorf("bad chunk %q: %w", truncate(string(data), 120), err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		typ, msg := decodeErrorValue(c.Error)
		return &ProviderError{Provider: s.name, Type: typ, Message: msg}
	}
	if c.Usage != nil {
		s.sawUsage = true
		cached := 0
		if c.Usage.PromptTokensDetails != nil {
			cached = c.Usage.PromptTokensDetails.CachedTokens
		}
		s.usage = Usage{Input: c.Usage.PromptTokens - cached, Output: c.Usage.CompletionTokens, CacheRead: cached}
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		switch {
		case d.Reasoning != nil && *d.Reasoning != "":
			s.reasoningField = "reasoning"
		case d.ReasoningContent != nil && *d.ReasoningContent != "":
			s.reasoningField = "reasoning_content"
		}
		streamPiece(&s.thinking, "thinking", firstNonEmpty(d.ReasoningContent, d.Reasoning), &s.size, s.on)
		streamPiece(&s.text, "text", firstNonEmpty(d.Content, d.Refusal), &s.size, s.on)
		s.refused = s.refused || (d.Refusal != nil && *d.Refusal != "")
		for _, tc := range d.ToolCalls {
			s.toolPiece(tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.stop = oaiStopReason(*ch.FinishReason, s.refused)
		}
	}
	return nil
}

func firstNonEmpty(ps ...*string) string {
	for _, p := range ps {
		if p != nil && *p != "" {
			return *p
		}
	}
	return ""
}

// toolPiece adds one streamed piece of a tool call. Calls are keyed by index;
// servers that leave the index out get one call per new id.
func (s *oaiStream) toolPiece(index *int, id, name, args string) {
	if s.byIndex == nil {
		s.byIndex = map[int]*partialBlock{}
	}
	i := len(s.calls) - 1
	if index != nil {
		i = *index
	}
	tc := s.byIndex[i]
	if tc == nil || (id != "" && tc.id != "" && id != tc.id) {
		if index == nil {
			i = len(s.calls)
		}
		if id == "" {
			id = fmt.Sprintf("call_%d", len(s.calls))
		}
		tc = &partialBlock{typ: "tool_call", id: id, open: true}
		s.size += blockCost + int64(len(id))
		s.byIndex[i] = tc
		s.calls = append(s.calls, tc)
	}
	if name != "" && tc.name == "" {
		s.size += int64(len(name))
		tc.name = name
		s.on(StreamEvent{Type: "tool_start", ID: tc.id, Name: name})
	}
	if args != "" {
		s.size += int64(len(args))
		tc.args.WriteString(args)
		s.on(StreamEvent{Type: "tool_args", ID: tc.id, Delta: args})
	}
}

func (s *oaiStream) endCall(tc *partialBlock) {
	if tc.open {
		tc.open = false
		s.on(StreamEvent{Type: "tool_end", ID: tc.id})
	}
}

// oaiStopReason reads a finish_reason; refused says the model streamed a
// refusal, which ends with "stop" like an answer.
func oaiStopReason(r string, refused bool) string {
	switch {
	case r == "tool_calls" || r == "function_call":
		return StopToolUse
	case r == "length":
		return StopLength
	case r == "content_filter" || refused:
		return StopRefusal
	}
	return StopEndTurn
}
