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
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Local servers and gateways: what zot does differently for a server that
// is not one of the vendors' own APIs — llama.cpp's llama-server, ollama,
// vLLM, LM Studio, TGI, a company gateway. Where their base URLs lead, how
// their error pages read, their overflow wordings, and how zot counts
// tokens when they do not.

// checkBaseURL refuses a base URL zot cannot send a request to: one
// without http:// or https:// (a bare "localhost:8080" parses as the
// scheme "localhost"), or without a host.
func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL (%v); give one such as http://localhost:8080/v1", shownURL(raw), err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q is not an http:// or https:// URL; give one such as http://localhost:8080/v1", shownURL(raw))
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host; give one such as http://localhost:8080/v1", shownURL(raw))
	}
	return nil
}

// endpointURL is base with path appended to its path, its query kept. A
// base URL whose path ends in a slash gets no second one.
func endpointURL(base, path string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimRight(base, "/") + path
	}
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	return u.String()
}

// withQuery is u with key=value added to its query.
func withQuery(u, key, value string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	q.Set(key, value)
	p.RawQuery = q.Encode()
	return p.String()
}

// hasPath says whether a base URL names a path beyond its host. Such a
// base is used as given, as the OpenAI SDKs do (…/v1, …/v1beta/openai/,
// a gateway's /llm/openai); a bare host gets /v1.
func hasPath(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.Trim(u.Path, "/") != ""
}

// openaiURL is where an OpenAI-compatible request for path (/chat/completions,
// /models) goes on base.
func openaiURL(base, path string) string {
	if hasPath(base) {
		return endpointURL(base, path)
	}
	return endpointURL(base, "/v1"+path)
}

// serverRoot is base without a trailing /v1: where a server's own API
// lives beside its OpenAI one (llama-server's /props, ollama's /api/chat).
func serverRoot(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1")
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	u.RawPath = ""
	return u.String()
}

// shownURL is a URL without what it may carry of credentials — user and
// password, a query (?key=…) — for messages.
func shownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		// Not a URL anyone can send to: what is before the first @ or ?
		// may still be a secret.
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			raw = raw[i+1:]
		}
		raw, _, _ = strings.Cut(raw, "?")
		return sanitize(raw)
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return sanitize(u.String())
}

// errorPageLine is the one line a user needs of a body that is not a
// provider's JSON error — a proxy's HTML page, a server's "404 page not
// found": its <title>, else its text without tags, whitespace folded.
func errorPageLine(body []byte) string {
	s := string(body)
	if m := htmlTitle().FindStringSubmatch(s); m != nil {
		s = m[1]
	} else {
		s = htmlTag().ReplaceAllString(s, " ")
	}
	return truncate(sanitize(strings.Join(strings.Fields(s), " ")), 160)
}

var (
	htmlTitle = lazyRegexp(`(?is)<title[^>]*>(.*?)</title>`)
	htmlTag   = lazyRegexp(`(?s)<[^>]*>`)
)

// pageError fills perr for a body that is not a provider's JSON error: the
// request that got it, the body's type and its one line. A page at a wrong
// path (404, 405) or a 4xx page (a login portal, a proxy's refusal) means
// the base URL leads somewhere else than the API.
func pageError(perr *ProviderError, resp *http.Response, body []byte) {
	if resp.Request != nil {
		perr.Request = resp.Request.Method + " " + shownURL(resp.Request.URL.String())
	}
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	perr.ContentType = strings.ToLower(strings.TrimSpace(ct))
	perr.Message = errorPageLine(body)
	switch s := resp.StatusCode; {
	// 501: a server that takes no POST at all (a static file server).
	case s == 404 || s == 405 || s == 501, s >= 400 && s < 500 && s != 401 && s != 403 && strings.Contains(perr.ContentType, "html"):
		perr.Hint = "check --base-url"
	}
}

// LocalOptions are what differs for a server that is not one of the
// vendors' APIs. models.json gives them per provider and model.
type LocalOptions struct {
	// Headers are sent with every request, over zot's own (a gateway's
	// tenant or auth header).
	Headers map[string]string
	// TextToolCalls, when false, never reads tool calls from the text;
	// when true, reads every format from any reply without a native call.
	// nil reads them as replyFormats says (providers_textreply.go). Never
	// on OpenAI's own API or the Anthropic path.
	TextToolCalls *bool
	// Tools, when false, sends the model no native tools: they are
	// described in the system prompt and called as text.
	Tools  *bool
	Compat Compat
	// Cache keeps what a server said of itself (its context, whether it
	// takes tools) between runs; nil keeps it for the provider's life.
	Cache ServerCache
}

// Compat are the switches where OpenAI-compatible servers differ, named
// as pi's models.json "compat" keys. A switch left out takes the default
// for the server: max_completion_tokens for api.openai.com and max_tokens
// elsewhere, the system role, usage asked for in the stream, reasoning
// not sent back.
type Compat struct {
	MaxTokensField           string `json:"maxTokensField,omitempty"` // max_tokens or max_completion_tokens
	SupportsDeveloperRole    *bool  `json:"supportsDeveloperRole,omitempty"`
	SupportsUsageInStreaming *bool  `json:"supportsUsageInStreaming,omitempty"`
	// RequiresReasoningContent sends a reply's reasoning back as the
	// assistant message's reasoning_content (DeepSeek-style servers that
	// want it on tool-call turns).
	RequiresReasoningContent *bool `json:"requiresReasoningContentOnAssistantMessages,omitempty"`
}

// Check says what is wrong with the switches, for models.json's notes.
func (c Compat) Check() error {
	switch c.MaxTokensField {
	case "", "max_tokens", "max_completion_tokens":
		return nil
	}
	return fmt.Errorf("compat.maxTokensField must be \"max_tokens\" or \"max_completion_tokens\", not %q", c.MaxTokensField)
}

// Over is c with what o sets.
func (c Compat) Over(o Compat) Compat {
	c.MaxTokensField = cmp.Or(o.MaxTokensField, c.MaxTokensField)
	for _, f := range []struct{ dst, src **bool }{
		{&c.SupportsDeveloperRole, &o.SupportsDeveloperRole},
		{&c.SupportsUsageInStreaming, &o.SupportsUsageInStreaming},
		{&c.RequiresReasoningContent, &o.RequiresReasoningContent},
	} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
	return c
}

func isTrue(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// ServerInfo is what a server said of itself and a model: how many tokens
// it gives a request, the model's own trained length, whether its chat
// template takes tools.
type ServerInfo struct {
	Kind        string    `json:"kind"`             // llama.cpp, ollama, vllm, lmstudio, or "" when it did not say
	Window      int       `json:"window,omitempty"` // what the server gives one request, 0 unknown
	TrainWindow int       `json:"train_window,omitempty"`
	NumCtx      int       `json:"num_ctx,omitempty"` // ollama: the Modelfile's num_ctx parameter
	Tools       *bool     `json:"tools,omitempty"`
	Fetched     time.Time `json:"fetched"`
	// Refused is the server's refusal of the model's native tools
	// (ollama's "tools param requires --jinja flag"), kept for
	// serverInfoTTL from when it came whether or not the rest is asked
	// again: the next run sends the tools as text at once.
	Refused *toolsRefusal `json:"tools_refused,omitempty"`
}

type toolsRefusal struct {
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// refusal is the refusal info keeps, nil once it is older than
// serverInfoTTL.
func (info ServerInfo) refusal(now time.Time) *toolsRefusal {
	if r := info.Refused; r != nil && now.Sub(r.At) < serverInfoTTL && !r.At.After(now) {
		return r
	}
	return nil
}

// ServerCache keeps ServerInfo by a key that names the provider, the
// server (without credentials) and the model.
type ServerCache interface {
	Load(key string) (ServerInfo, bool)
	Store(key string, info ServerInfo)
}

// serverInfoTTL is how long a server's report is used without asking again:
// as long as a model list (models_server.go).
const serverInfoTTL = 6 * time.Hour

// probeTimeout bounds the questions zot asks a server about itself; a
// server that does not answer in time is spoken to without the answers.
const probeTimeout = 5 * time.Second

// localServer is what the OpenAI and ollama clients know of a server that
// is not a vendor's API: the user's options for it, what it said of
// itself, and what zot learned of it in this run. Safe for concurrent use.
type localServer struct {
	name   string // the provider, for messages and cache keys
	base   string // the base URL as configured ("" is ollama's default)
	opts   LocalOptions
	http   *httpStreamer
	key    string
	ollama bool // ask ollama's own API first

	mu      sync.Mutex
	infos   map[string]ServerInfo // by model, once asked in this run
	noTools map[string]bool       // models whose server refused tools in this run
	told    map[string]bool       // notices given
	replies replyMemory
}

func newLocalServer(name, base, key string, h *httpStreamer, opts LocalOptions) *localServer {
	return &localServer{name: name, base: base, key: key, http: h, opts: opts, ollama: name == "ollama",
		infos: map[string]ServerInfo{}, noTools: map[string]bool{}, told: map[string]bool{}}
}

func (l *localServer) cacheKey(model string) string {
	return l.name + " " + shownURL(l.base) + " " + model
}

// info is what the server said of model: asked once per run, or taken
// from the cache while it is fresh.
func (l *localServer) info(ctx context.Context, model string) ServerInfo {
	l.mu.Lock()
	info, asked := l.infos[model]
	l.mu.Unlock()
	if asked {
		return info
	}
	now := time.Now()
	var cached ServerInfo
	if l.opts.Cache != nil {
		cached, _ = l.opts.Cache.Load(l.cacheKey(model))
	}
	if now.Sub(cached.Fetched) < serverInfoTTL && !cached.Fetched.After(now) {
		info = cached
	} else {
		pctx, cancel := context.WithTimeout(ctx, min(probeTimeout, l.http.headerTimeout))
		info = l.probe(pctx, model)
		cancel()
		info.Fetched = now.UTC()
		info.Refused = cached.refusal(now)
		if l.opts.Cache != nil && (info.Kind != "" || info.Window > 0 || info.Refused != nil) {
			l.opts.Cache.Store(l.cacheKey(model), info)
		}
	}
	info.Refused = info.refusal(now)
	if info.Kind == "ollama" {
		info.Window = ollamaNumCtx(l.name, model, info)
	}
	if info.Window > 0 {
		SetMeasuredWindow(l.name, model, info.Window)
	}
	l.mu.Lock()
	l.infos[model] = info
	l.mu.Unlock()
	return info
}

// forget drops what the server said of model, so the next request asks
// again: after an overflow or a cut prompt the server's context may not
// be what it was.
func (l *localServer) forget(model string) {
	l.mu.Lock()
	old := l.infos[model]
	delete(l.infos, model)
	l.mu.Unlock()
	if l.opts.Cache != nil {
		// A refusal of the tools does not change with the context.
		l.opts.Cache.Store(l.cacheKey(model), ServerInfo{Refused: old.Refused})
	}
}

// probe asks the server about itself and model: ollama's /api/version and
// /api/show for the ollama provider, else llama-server's /props, else
// the OpenAI model list (vLLM's max_model_len, llama-server's meta.n_ctx,
// LM Studio's and gateways' context_length). What does not answer is left
// unknown.
func (l *localServer) probe(ctx context.Context, model string) ServerInfo {
	base := cmp.Or(l.base, ollamaDefaultBase)
	root := serverRoot(base)
	if l.ollama {
		var version struct {
			Version string `json:"version"`
		}
		if l.getJSON(ctx, "GET", endpointURL(root, "/api/version"), nil, &version) == nil && version.Version != "" {
			info := ServerInfo{Kind: "ollama"}
			body, _ := json.Marshal(map[string]string{"model": model})
			var show ollamaShow
			if l.getJSON(ctx, "POST", endpointURL(root, "/api/show"), body, &show) == nil {
				show.read(&info)
			}
			return info
		}
	}
	var props llamaProps
	router := false
	if l.getJSON(ctx, "GET", endpointURL(root, "/props"), nil, &props) == nil {
		if props.Settings.NCtx > 0 {
			return ServerInfo{Kind: "llama.cpp", Window: props.Settings.NCtx, Tools: props.Caps.SupportsTools}
		}
		router = props.Role == "router"
	}
	var models struct {
		Data []struct {
			ID                  string        `json:"id"`
			OwnedBy             string        `json:"owned_by"`
			MaxModelLen         int           `json:"max_model_len"`
			ContextLength       int           `json:"context_length"`
			LoadedContextLength int           `json:"loaded_context_length"`
			Status              *routerStatus `json:"status"`
			Meta                struct {
				NCtx      int `json:"n_ctx"`
				NCtxTrain int `json:"n_ctx_train"`
			} `json:"meta"`
		} `json:"data"`
	}
	if l.getJSON(ctx, "GET", openaiURL(base, "/models"), nil, &models) != nil {
		return ServerInfo{}
	}
	for _, m := range models.Data {
		// llama-server serves one model under its path, whatever the
		// request names; its router, the one named.
		if m.ID != model && (len(models.Data) != 1 || router) {
			continue
		}
		switch {
		case router && m.Status != nil && m.Status.Value == "loaded":
			// A router says what a loaded model was given in its /props;
			// of one not loaded it says nothing (and asking an autoloading
			// router would load it).
			props = llamaProps{}
			l.getJSON(ctx, "GET", withQuery(endpointURL(root, "/props"), "model", model), nil, &props)
			return ServerInfo{Kind: "llama.cpp", Window: cmp.Or(props.Settings.NCtx, m.Status.ctxSize()), Tools: props.Caps.SupportsTools}
		case router:
			return ServerInfo{Kind: "llama.cpp", Window: m.Status.ctxSize()}
		case m.Meta.NCtx > 0:
			return ServerInfo{Kind: "llama.cpp", Window: m.Meta.NCtx, TrainWindow: m.Meta.NCtxTrain}
		case m.MaxModelLen > 0:
			return ServerInfo{Kind: "vllm", Window: m.MaxModelLen}
		case m.LoadedContextLength > 0:
			return ServerInfo{Kind: "lmstudio", Window: m.LoadedContextLength}
		case m.ContextLength > 0:
			return ServerInfo{Window: m.ContextLength}
		case m.OwnedBy == "vllm":
			return ServerInfo{Kind: "vllm"}
		}
	}
	if router {
		return ServerInfo{Kind: "llama.cpp"}
	}
	return ServerInfo{}
}

// llamaProps is what zot reads of llama-server's /props.
type llamaProps struct {
	Role     string `json:"role"` // "router" for a router
	Settings struct {
		NCtx int `json:"n_ctx"`
	} `json:"default_generation_settings"`
	Caps struct {
		SupportsTools *bool `json:"supports_tools"`
	} `json:"chat_template_caps"`
}

// maxProbeBytes bounds one answer about a server (ollama's /api/show lists
// every tensor of the model).
const maxProbeBytes = 16 << 20

// getJSON asks the server one question with the key and the user's
// headers, and decodes the JSON answer into v. Sizes and values are
// bounded; a field of an unexpected type leaves v as far as it got.
func (l *localServer) getJSON(ctx context.Context, method, u string, body []byte, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if l.key != "" {
		req.Header.Set("Authorization", "Bearer "+l.key)
	}
	for k, val := range l.opts.Headers {
		req.Header.Set(k, val)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := l.http.client.Do(req)
	if err != nil {
		return scrubURLError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", req.URL.Path, resp.StatusCode)
	}
	// An answer that does not begin as an object is refused at its first
	// byte, not after the bound: a server that streams something else to
	// every path (an endless reply) costs one read, not 16 MiB.
	answer := bufio.NewReader(resp.Body)
	object, err := beginsAsObject(answer)
	if err != nil {
		return err
	}
	if !object {
		return fmt.Errorf("%s: not a JSON object", req.URL.Path)
	}
	data, err := readUntrustedBody(answer, maxProbeBytes)
	if err != nil {
		return fmt.Errorf("%s: %w", req.URL.Path, err)
	}
	json.Unmarshal(data, v)
	return nil
}

// beginsAsObject skips the JSON white space that opens r and says whether
// what follows opens an object; that byte stays in r.
func beginsAsObject(r *bufio.Reader) (bool, error) {
	for {
		c, err := r.ReadByte()
		switch {
		case err == io.EOF:
			return false, nil
		case err != nil:
			return false, err
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			continue
		}
		return c == '{', r.UnreadByte()
	}
}

// ollamaShow is what zot reads of ollama's /api/show.
type ollamaShow struct {
	ModelInfo    map[string]json.RawMessage `json:"model_info"`
	Parameters   string                     `json:"parameters"`
	Capabilities []string                   `json:"capabilities"`
}

// read takes the model's trained length (model_info's *.context_length),
// a num_ctx its Modelfile sets, and whether it takes tools.
func (s ollamaShow) read(info *ServerInfo) {
	for k, v := range s.ModelInfo {
		var n int
		if strings.HasSuffix(k, ".context_length") && json.Unmarshal(v, &n) == nil && n > 0 {
			info.TrainWindow = n
		}
	}
	for _, line := range strings.Split(s.Parameters, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "num_ctx" {
			if n, err := strconv.Atoi(f[1]); err == nil && n > 0 {
				info.NumCtx = n
			}
		}
	}
	if s.Capabilities != nil {
		tools := slices.Contains(s.Capabilities, "tools")
		info.Tools = &tools
	}
}

// ollamaDefaultBase is where ollama listens unless told otherwise.
const ollamaDefaultBase = "http://localhost:11434/v1"

// ollamaNumCtx is the context zot asks ollama to give model: the user's
// contextWindow in models.json, else the Modelfile's num_ctx, else the
// model's own trained length — never more than that length. 0 leaves it
// to ollama (its default, 4096 or what OLLAMA_CONTEXT_LENGTH says).
func ollamaNumCtx(provider, model string, info ServerInfo) int {
	n := cmp.Or(userWindow(provider, model), info.NumCtx, info.TrainWindow)
	if info.TrainWindow > 0 {
		n = min(n, info.TrainWindow)
	}
	return n
}

// localPlan is how one request goes to a local server: what it said of
// itself, whether the tools go as text, and zot's count of the prompt.
type localPlan struct {
	info      ServerInfo
	textTools bool // the tools are described in the system prompt, none go natively
	readText  bool // tool calls are read from the reply's text
	estimate  int  // the prompt's tokens without the tools (see looksTruncated)
	sent      int  // the prompt's tokens as sent, tools included
	notice    string
	tools     map[string]bool // the names of the tools the model has
	read      replyPlan       // how the reply's text is read
}

// converse is one request to a local server through send (which reports
// whether the server gave usage): shaped for the model (prepare), sent
// again with the tools as text if the server refuses them, a failure
// explained, a reply finished as the plan says.
//
// What the server streams passes through a replyReader, which shows the
// reasoning the reply's text holds as thinking and holds back a tool call
// being written as text.
func (l *localServer) converse(ctx context.Context, req Request, on func(StreamEvent), send func(Request, localPlan, func(StreamEvent)) (Reply, bool, error)) (Reply, error) {
	asked := req
	req, plan := l.prepare(ctx, req)
	rr := newReplyReader(plan.read, on)
	reply, sawUsage, err := send(req, plan, rr.event)
	if again, ok := l.refused(err, req, &plan); ok {
		req = again
		rr = newReplyReader(plan.read, on)
		reply, sawUsage, err = send(req, plan, rr.event)
	}
	if err != nil {
		rr.settle(&reply)
		l.explain(err, asked, plan)
		reply.Notice = plan.notice
		return reply, err
	}
	l.finish(plan, req.Model, &reply, sawUsage, rr)
	return reply, nil
}

// prepare asks the server about the model (once) and shapes req for it:
// without native tools when the user said so, the server's template takes
// none, or the server refused them earlier in the run.
func (l *localServer) prepare(ctx context.Context, req Request) (Request, localPlan) {
	plan := localPlan{info: l.info(ctx, req.Model), readText: isTrue(l.opts.TextToolCalls, true), tools: map[string]bool{}}
	for _, t := range req.Tools {
		plan.tools[t.Name] = true
	}
	l.mu.Lock()
	refused := l.noTools[req.Model]
	l.mu.Unlock()
	switch {
	case len(req.Tools) == 0:
	case !isTrue(l.opts.Tools, true):
		plan.textTools = true
	case refused:
		plan.textTools = true
	case plan.info.Refused != nil:
		plan.textTools = true
		plan.notice = l.noticeOnce(req.Model, fmt.Sprintf("%s: %s refused the tools in an earlier run (%s): zot describes them in the system prompt and reads the calls from the reply's text (remembered in models-cache.json for 6 hours; \"tools\": false in models.json says so for good)", l.name, req.Model, plan.info.Refused.Message))
	case plan.info.Tools != nil && !*plan.info.Tools:
		plan.textTools = true
		plan.notice = l.noticeOnce(req.Model, fmt.Sprintf("%s: the chat template of %s takes no tools: zot describes them in the system prompt and reads the calls from the reply's text (\"tools\": false in models.json says so up front)", l.name, req.Model))
	}
	plan.read = l.replyPlan(req, plan)
	if plan.textTools {
		req = withTextTools(req, plan.readText)
	}
	plan.estimate = EstimateTokens(req, false)
	plan.sent = EstimateTokens(req, true)
	return req, plan
}

// refused says whether err is the server refusing the tools of req; the
// model then gets them as text from now on, and the caller sends req
// again as the returned one.
func (l *localServer) refused(err error, req Request, plan *localPlan) (Request, bool) {
	if plan.textTools || len(req.Tools) == 0 || !refusesTools(err) {
		return req, false
	}
	l.mu.Lock()
	l.noTools[req.Model] = true
	info := l.infos[req.Model]
	info.Refused = &toolsRefusal{Message: truncate(err.Error(), 200), At: time.Now().UTC()}
	l.infos[req.Model] = info
	l.mu.Unlock()
	if l.opts.Cache != nil {
		l.opts.Cache.Store(l.cacheKey(req.Model), info)
	}
	plan.textTools = true
	plan.notice = l.noticeOnce(req.Model, fmt.Sprintf("%s: %s refused the tools (%s): zot describes them in the system prompt and reads the calls from the reply's text (\"tools\": false in models.json says so up front)", l.name, req.Model, truncate(err.Error(), 200)))
	plan.read = l.replyPlan(req, *plan)
	req = withTextTools(req, plan.readText)
	plan.estimate = EstimateTokens(req, false)
	plan.sent = EstimateTokens(req, true)
	return req, true
}

func (l *localServer) noticeOnce(model, text string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.told[model] {
		return ""
	}
	l.told[model] = true
	return text
}

// withTextTools is req for a model that gets no native tools: the tools
// described in the system prompt (when calls are read from text at all),
// the history's tool calls and results written as the text the prompt
// asks for.
func withTextTools(req Request, describe bool) Request {
	if describe {
		req.System = strings.TrimSpace(req.System + "\n\n" + textToolsPrompt(req.Tools))
	}
	req.Tools = nil
	msgs := make([]Message, 0, len(req.Messages))
	for _, m := range req.Messages {
		var text []string
		var rest []Block
		for _, b := range m.Content {
			switch b.Type {
			case BlockToolCall:
				text = append(text, textCallEnvelope(b.Name, b.Args))
			case BlockToolResult:
				var body []string
				for _, c := range b.Content {
					if c.Type == BlockText {
						body = append(body, c.Text)
					} else {
						rest = append(rest, c)
					}
				}
				text = append(text, textToolResponse(strings.Join(body, "\n"), b.IsError))
			case BlockText:
				if m.Role == RoleAssistant {
					text = append([]string{b.Text}, text...)
				} else {
					rest = append(rest, b)
				}
			default:
				rest = append(rest, b)
			}
		}
		if len(text) > 0 {
			rest = append([]Block{TextBlock(strings.Join(text, "\n\n"))}, rest...)
		}
		msgs = append(msgs, Message{Role: m.Role, Content: rest, Time: m.Time})
	}
	req.Messages = msgs
	return req
}

// finish completes a reply of a local server: its text read (the
// reasoning it holds, the tool calls written as text, a call the output
// limit cut), zot's counts where the server gave none, and a prompt the
// server cut reported.
func (l *localServer) finish(plan localPlan, model string, reply *Reply, sawUsage bool, rr *replyReader) {
	parts := rr.finish(reply)
	if parts.lone {
		l.replies.learnThinksFirst(model)
	}
	reply.Notice = strings.Join(slices.DeleteFunc([]string{plan.notice, echoNotice(l.name, parts)}, func(s string) bool { return s == "" }), "; ")
	if !sawUsage {
		reply.Usage = Usage{Input: plan.sent, Output: EstimateOutputTokens(reply.Content), Estimated: true}
		return
	}
	if reported := reply.Usage.ContextTokens(); looksTruncated(reported, plan.estimate) {
		reply.Truncated = truncationMessage(l.name, model, reported, plan.estimate, plan.info)
		l.forget(model)
	}
}

// explain adds to an overflow error the server's context, what filled
// the request (req as the agent asked for it) and how to make room, and
// forgets what the server said of the model (it was wrong). An error of a
// model the server cannot serve gets what to do about that.
func (l *localServer) explain(err error, req Request, plan localPlan) {
	var perr *ProviderError
	if !errors.As(err, &perr) || perr.Hint != "" {
		return
	}
	model := req.Model
	if perr.Hint = l.modelHint(perr.Message, model); perr.Hint != "" || !errors.Is(err, ErrContextTooLong) {
		return
	}
	kind, window := plan.info.Kind, overflowContext(perr.Message)
	if kind == "" && perr.Type == "exceed_context_size_error" {
		kind = "llama.cpp"
	}
	window = cmp.Or(window, plan.info.Window)
	raise := raiseContextHint(kind)
	if atTrainedLength(plan.info) && window >= plan.info.TrainWindow {
		raise = trainedLengthHint
	}
	filled := fmt.Sprintf("zot sent about %d tokens: %s", plan.sent, requestParts(req))
	if window > 0 {
		SetMeasuredWindow(l.name, model, window)
		filled = fmt.Sprintf("the server's context is %d tokens and %s", window, filled)
	}
	perr.Hint = filled + "; " + raise + shrinkHint(req.Tools)
	l.forget(model)
}

// requestParts says what a request's tokens went to, by zot's count: the
// system prompt, the tools by where they came from, the conversation.
func requestParts(req Request) string {
	parts := []string{fmt.Sprintf("system prompt %d", EstimateTokens(Request{System: req.System}, false))}
	if len(req.Tools) > 0 {
		var sources []string
		by := map[string][]ToolSpec{}
		for _, t := range req.Tools {
			src := toolSourceName(t.Source)
			if by[src] == nil {
				sources = append(sources, src)
			}
			by[src] = append(by[src], t)
		}
		var each []string
		for _, src := range sources {
			each = append(each, fmt.Sprintf("%s %d", src, toolTokens(by[src])))
		}
		parts = append(parts, fmt.Sprintf("tools %d (%s)", toolTokens(req.Tools), strings.Join(each, ", ")))
	}
	return strings.Join(append(parts, fmt.Sprintf("conversation %d", EstimateTokens(Request{Messages: req.Messages}, false))), ", ")
}

// toolSourceName names where tools came from for the user.
func toolSourceName(source string) string {
	switch {
	case source == "builtin" || source == "skill" || source == "":
		return "built-in"
	case source == "ext":
		return "extensions"
	case strings.HasPrefix(source, "mcp:"):
		return "MCP server " + strings.TrimPrefix(source, "mcp:")
	}
	return source
}

// shrinkHint is how to send fewer tokens of tools: the flags that leave
// tools out, and tool search when it was not in use.
func shrinkHint(tools []ToolSpec) string {
	if len(tools) == 0 {
		return ""
	}
	ways := []string{"--tools with only the tools the task needs (e.g. --tools read,edit,bash)"}
	mcp, ext, search := false, false, false
	for _, t := range tools {
		mcp = mcp || strings.HasPrefix(t.Source, "mcp:")
		ext = ext || t.Source == "ext"
		search = search || t.Name == toolSearchName
	}
	if mcp {
		ways = append(ways, "--no-mcp")
	}
	if ext {
		ways = append(ways, "--no-ext")
	}
	if (mcp || ext) && !search {
		ways = append(ways, `a lower "tool_search_threshold" in config.json (MCP and extension tools then go as a list the model loads from)`)
	}
	return "; or send less: " + strings.Join(ways, ", ")
}

// modelHint is what to do about a server that cannot serve model, from
// its words: llama-server's router has not loaded it and will not, or
// could not load it; the server has no such model. "" for other errors.
func (l *localServer) modelHint(message, model string) string {
	m := strings.ToLower(message)
	switch {
	case strings.Contains(m, "model is not loaded"):
		root := shownURL(serverRoot(cmp.Or(l.base, ollamaDefaultBase)))
		return fmt.Sprintf(`llama-server's router has not loaded %s, and loads no model on request (--no-models-autoload): load it with curl -X POST %s/models/load -d '{"model": %q}', or start the router without --no-models-autoload`, model, root, model)
	case strings.Contains(m, "failed to load"):
		return fmt.Sprintf("the server could not load %s: its log says why; zot --list-models shows each model's state", model)
	case strings.Contains(m, "not found") && strings.Contains(m, "model"):
		return fmt.Sprintf("the server has no model %s: zot --list-models lists the ones it has", model)
	}
	return ""
}

// refusedLocally is what to do about err when it is a connection this
// machine refused — no server listens at the port — and "" for any other
// error: start the server, or point zot at the one that runs.
func refusedLocally(provider string, u *url.URL, err error) string {
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return ""
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback() && !ip.IsUnspecified()) {
		return ""
	}
	server := "the server"
	switch {
	case provider == "ollama":
		server = "ollama (ollama serve)"
	case u.Port() == "8080":
		server = "llama-server"
	case u.Port() == "8000":
		server = "vLLM"
	case u.Port() == "1234":
		server = "LM Studio's server"
	}
	where := u.Scheme + "://" + u.Host
	if provider == "ollama" {
		return fmt.Sprintf("nothing listens at %s: start %s, or give its address with --base-url or OLLAMA_HOST", where, server)
	}
	return fmt.Sprintf("nothing listens at %s: start %s, or give its address with --base-url", where, server)
}

// isOpenAIAPI says whether base is OpenAI's own API, which gets none of
// what this file does for other servers.
func isOpenAIAPI(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// ProbeWindow asks the server about model (once), so that the window is
// known before the first request, and returns the context the server
// gives model (0 when it does not say).
func (p *openaiProvider) ProbeWindow(ctx context.Context, model string) int {
	if p.local == nil {
		return 0
	}
	return p.local.info(ctx, model).Window
}

func (p *ollamaProvider) ProbeWindow(ctx context.Context, model string) int {
	return p.local.info(ctx, model).Window
}

// routerStatus is what llama-server's router says of a model it serves:
// whether it is loaded, and the command line it is (or would be) loaded
// with.
type routerStatus struct {
	Value  string   `json:"value"`
	Args   []string `json:"args"`
	Failed bool     `json:"failed"`
}

// state is the load state to show: loaded, loading, unloaded, or failed
// (the last load's process exited).
func (s *routerStatus) state() string {
	switch {
	case s == nil:
		return ""
	case s.Failed && s.Value != "loaded":
		return "failed"
	}
	return sanitize(truncate(s.Value, 20))
}

// ctxSize is the context the router gives the model: its --ctx-size (-c),
// 0 when the command line does not say.
func (s *routerStatus) ctxSize() int {
	if s == nil {
		return 0
	}
	for i, a := range s.Args {
		if (a == "--ctx-size" || a == "-c") && i+1 < len(s.Args) {
			if n, err := strconv.Atoi(s.Args[i+1]); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}
