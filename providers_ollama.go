package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// ollamaHostURL is the base URL an OLLAMA_HOST value names, read as
// ollama's own client reads it: host, host:port or scheme://host:port,
// maybe with a path, quotes and spaces around it dropped. Without a scheme
// the port is 11434; with one, the scheme's (80, 443). No host is
// 127.0.0.1.
func ollamaHostURL(v string) (string, error) {
	v = strings.TrimSpace(strings.Trim(strings.TrimSpace(v), `"'`))
	scheme, hostport, ok := strings.Cut(v, "://")
	port := "11434"
	switch {
	case !ok:
		scheme, hostport = "http", v
	case scheme == "http":
		port = "80"
	case scheme == "https":
		port = "443"
	default:
		return "", fmt.Errorf("OLLAMA_HOST %q: the scheme must be http or https", v)
	}
	hostport, path, _ := strings.Cut(hostport, "/")
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	} else {
		port = p
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strings.ContainsAny(host, "?#@ ") {
		return "", fmt.Errorf("OLLAMA_HOST %q is not host, host:port or http://host:port", v)
	}
	base := scheme + "://" + net.JoinHostPort(cmp.Or(host, "127.0.0.1"), port)
	if path = strings.Trim(path, "/"); path != "" {
		base += "/" + path
	}
	return base + "/v1", nil
}

// ollamaProvider speaks to ollama through its own /api/chat, the one path
// that takes num_ctx: its OpenAI path ignores num_ctx (checked against
// ollama 0.33: "options" and a top-level "num_ctx" leave the runner's
// context as it was), so a prompt longer than ollama's default context
// would be cut without a word. A server at the configured base that does
// not answer ollama's /api/version (another OpenAI-compatible server
// behind --provider ollama) is spoken to through the OpenAI client.
type ollamaProvider struct {
	openai *openaiProvider
	local  *localServer
	log    wireLog // the transcript laid out for /api/chat's last request
}

func (p *ollamaProvider) Name() string { return "ollama" }

func (p *ollamaProvider) Stream(ctx context.Context, req Request, on func(StreamEvent)) (Reply, error) {
	if err := checkConversation(p.Name(), req.Messages); err != nil {
		return Reply{}, err
	}
	// A model models.json sends to the Responses API goes there: ollama
	// serves it only on its OpenAI path.
	if p.openai.usesResponses(req.Model) || p.local.info(ctx, req.Model).Kind != "ollama" {
		return p.openai.Stream(ctx, req, on)
	}
	return p.local.converse(ctx, req, on, func(req Request, plan localPlan, on func(StreamEvent)) (Reply, bool, error) {
		return p.chat(ctx, req, plan, on)
	})
}

type ollamaRequest struct {
	Model    string          `json:"model"`
	Messages []ollamaMessage `json:"messages"`
	Tools    []oaiTool       `json:"tools,omitempty"`
	Stream   bool            `json:"stream"`
	Think    bool            `json:"think,omitempty"`
	Options  *ollamaOptions  `json:"options,omitempty"`
}

type ollamaOptions struct {
	NumCtx     int `json:"num_ctx,omitempty"`
	NumPredict int `json:"num_predict,omitempty"`
}

type ollamaMessage struct {
	Role       string           `json:"role"`
	Content    string           `json:"content"`
	Images     []string         `json:"images,omitempty"`
	ToolCalls  []ollamaToolCall `json:"tool_calls,omitempty"`
	ToolName   string           `json:"tool_name,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

type ollamaToolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// buildRequest is req for /api/chat, with num_ctx the context zot chose
// for the model (ollamaNumCtx) and num_predict the output limit a
// models.json entry gives.
func (p *ollamaProvider) buildRequest(req Request, plan localPlan) ollamaRequest {
	out := ollamaRequest{Model: req.Model, Stream: true, Think: req.Reasoning != "" && reasoningFor(lookupModel("ollama", req.Model), req.Reasoning) != ""}
	limit := req.MaxTokens
	if info := lookupModel("ollama", req.Model); limit == 0 && info.Source == SourceUser {
		limit = info.MaxOutput
	}
	if plan.info.Window > 0 || limit > 0 {
		out.Options = &ollamaOptions{NumCtx: plan.info.Window, NumPredict: limit}
	}
	out.Tools = oaiTools(req.Tools)
	return out
}

// callName is the name of the tool call id among msgs, the last one of
// that id (local models reuse ids turn after turn): a tool message names
// the tool it answers. Its call is nearly always in the message just
// before it.
func callName(msgs []Message, id string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != RoleAssistant {
			continue
		}
		calls := msgs[i].ToolCalls()
		for j := len(calls) - 1; j >= 0; j-- {
			if calls[j].ID == id {
				return calls[j].Name
			}
		}
	}
	return ""
}

// ollamaMessagesOf converts one message; name gives the tool of a call
// made in the messages before it.
func ollamaMessagesOf(m Message, name func(callID string) string) []ollamaMessage {
	if m.Role == RoleAssistant {
		om := ollamaMessage{Role: "assistant", Content: m.Text()}
		for _, c := range m.ToolCalls() {
			var tc ollamaToolCall
			tc.ID, tc.Function.Name, tc.Function.Arguments = c.ID, c.Name, c.Args
			if !json.Valid(c.Args) || !isJSONObject(c.Args) {
				tc.Function.Arguments = json.RawMessage("{}")
			}
			om.ToolCalls = append(om.ToolCalls, tc)
		}
		return []ollamaMessage{om}
	}
	var out []ollamaMessage
	user := ollamaMessage{Role: "user"}
	var text []string
	var toolImages []string
	for _, b := range m.Content {
		switch b.Type {
		case BlockText:
			text = append(text, b.Text)
		case BlockImage:
			user.Images = append(user.Images, b.Data)
		case BlockToolResult:
			var body []string
			for _, c := range b.Content {
				switch c.Type {
				case BlockText:
					body = append(body, c.Text)
				case BlockImage:
					toolImages = append(toolImages, c.Data)
				}
			}
			content := strings.Join(body, "\n")
			if b.IsError && !strings.HasPrefix(content, "Error") {
				content = "Error: " + content
			}
			out = append(out, ollamaMessage{Role: "tool", Content: content, ToolName: name(b.CallID), ToolCallID: b.CallID})
		}
	}
	if len(toolImages) > 0 {
		text = append([]string{"Images returned by the tool calls above:"}, text...)
		user.Images = append(toolImages, user.Images...)
	}
	if len(text) == 0 && len(user.Images) == 0 {
		return out
	}
	user.Content = strings.Join(text, "\n\n")
	return append(out, user)
}

// requestBody is the /api/chat request with the transcript spliced in,
// each message encoded once for the whole session (Message.wireEncoded).
// A tool message's encoding names its call's tool from the messages
// before it, which never change, so it stays right.
func (p *ollamaProvider) requestBody(req Request, plan localPlan) (wireBody, error) {
	frame, err := json.Marshal(p.buildRequest(req, plan))
	if err != nil {
		return wireBody{}, err
	}
	var list jsonList
	if req.System != "" {
		system, err := jsonItems([]ollamaMessage{{Role: "system", Content: req.System}})
		if err != nil {
			return wireBody{}, err
		}
		list.add(system)
	}
	err = p.log.addEach(&list, "ollama-chat", req.Messages, func(i int, m Message) wireEncoding {
		data, err := jsonItems(ollamaMessagesOf(m, func(id string) string { return callName(req.Messages[:i], id) }))
		return wireEncoding{data: data, err: err}
	})
	if err != nil {
		return wireBody{}, err
	}
	return list.splice(frame, "messages")
}

// chat sends one request to /api/chat and reads its NDJSON stream.
func (p *ollamaProvider) chat(ctx context.Context, req Request, plan localPlan, on func(StreamEvent)) (reply Reply, sawUsage bool, err error) {
	body, err := p.requestBody(req, plan)
	if err != nil {
		return Reply{}, false, fmt.Errorf("ollama: encode request: %w", err)
	}
	header := http.Header{}
	if p.openai.key != "" {
		header.Set("Authorization", "Bearer "+p.openai.key)
	}
	url := endpointURL(serverRoot(cmp.Or(p.local.base, ollamaDefaultBase)), "/api/chat")
	resp, err := p.openai.http.post(ctx, url, header, body)
	if err != nil {
		return Reply{}, false, err
	}
	s := &ollamaStream{on: on}
	maxTokens := cmp.Or(req.MaxTokens, lookupModel("ollama", req.Model).MaxOutput)
	events, err := streamFrames(ctx, "ollama", resp.Body, p.openai.http.idle, maxReplyBytes(maxTokens), s, readNDJSON)
	reply = Reply{Stop: s.stop, Usage: s.usage}
	if s.thinking != nil {
		reply.Content = append(reply.Content, s.thinking.block())
	}
	reply.Content = append(reply.Content, assemble([]*partialBlock{s.text})...)
	reply.Content = append(reply.Content, s.calls...)
	if err == nil && !s.done {
		err = streamEndedEarly("ollama", events)
	}
	return reply, s.sawUsage, err
}

// ollamaStream is the state of one /api/chat stream: text and thinking in
// pieces, each tool call whole, counts in the final object.
type ollamaStream struct {
	on       func(StreamEvent)
	text     *partialBlock
	thinking *partialBlock
	calls    []Block
	stop     string
	usage    Usage
	sawUsage bool
	done     bool
	size     int64
}

func (s *ollamaStream) received() int64 { return s.size }

type ollamaChunk struct {
	Message struct {
		Content   string           `json:"content"`
		Thinking  string           `json:"thinking"`
		ToolCalls []ollamaToolCall `json:"tool_calls"`
	} `json:"message"`
	Done            bool            `json:"done"`
	DoneReason      string          `json:"done_reason"`
	PromptEvalCount *int            `json:"prompt_eval_count"`
	EvalCount       int             `json:"eval_count"`
	Error           json.RawMessage `json:"error"`
}

func (s *ollamaStream) handle(ev sseEvent) error {
	var c ollamaChunk
	if err := json.Unmarshal(ev.Data, &c); err != nil {
		return fmt.Errorf("bad line %q: %w", truncate(string(ev.Data), 120), err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		typ, msg := decodeErrorValue(c.Error)
		return &ProviderError{Provider: "ollama", Type: typ, Message: msg}
	}
	m := c.Message
	streamPiece(&s.thinking, "thinking", m.Thinking, &s.size, s.on)
	streamPiece(&s.text, "text", m.Content, &s.size, s.on)
	for _, tc := range m.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", len(s.calls))
		}
		args := tc.Function.Arguments
		if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		s.size += blockCost + int64(len(id)+len(tc.Function.Name)+len(args))
		s.calls = append(s.calls, Block{Type: BlockToolCall, ID: id, Name: tc.Function.Name, Args: args})
		s.on(StreamEvent{Type: "tool_start", ID: id, Name: tc.Function.Name})
		s.on(StreamEvent{Type: "tool_args", ID: id, Delta: string(args)})
		s.on(StreamEvent{Type: "tool_end", ID: id})
	}
	if !c.Done {
		return nil
	}
	s.done = true
	switch {
	case len(s.calls) > 0:
		s.stop = StopToolUse
	case c.DoneReason == "length":
		s.stop = StopLength
	default:
		s.stop = StopEndTurn
	}
	if c.PromptEvalCount != nil {
		s.sawUsage = true
		s.usage = Usage{Input: *c.PromptEvalCount, Output: c.EvalCount}
	}
	return errStopSSE
}

// readNDJSON reads newline-delimited JSON and calls fn with each line that
// is not blank, as readSSE does with events: the same bound on a line,
// the same error for a last line the connection cut.
func readNDJSON(r io.Reader, fn func(sseEvent) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, line...)
			if len(long) > maxSSELine {
				return fmt.Errorf("stream line longer than %d bytes", maxSSELine)
			}
			continue
		}
		if long != nil {
			line = append(long, line...)
			long = nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		if data := bytes.TrimSpace(line); len(data) > 0 {
			if ferr := fn(sseEvent{Data: append([]byte(nil), data...)}); ferr != nil {
				var cut *json.SyntaxError
				if err == io.EOF && errors.As(ferr, &cut) {
					return errCutEvent
				}
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}
