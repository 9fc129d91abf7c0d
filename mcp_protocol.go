package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The two eras of MCP. 2026-07-28 ("modern") is stateless: no initialize,
// every request carries its revision and the client's capabilities in
// _meta (over HTTP also Mcp-Method, Mcp-Name and Mcp-Param-* headers), a
// server that needs input returns an input_required result and the call
// is sent again with the answers, and tool lists say how long they stay
// fresh (ttlMs). 2025-11-25 and before ("legacy") open a session with
// initialize, and the server asks its questions as requests of its own.
//
// zot probes every server with server/discover naming 2026-07-28: a
// DiscoverResult that lists a revision zot speaks, or an
// UnsupportedProtocolVersion error whose list has one, makes it modern;
// any other answer, or none within mcpProbeWait, makes it legacy, and
// initialize follows, as the specification's compatibility rules ask of a
// client that speaks both.

// mcpModernVersions and mcpLegacyVersions are the revisions zot speaks,
// newest first; the first of each is the one it asks for.
var (
	mcpModernVersions = []string{"2026-07-28"}
	mcpLegacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
)

const (
	// mcpProbeWait bounds the wait for server/discover on stdio: a legacy
	// server may not answer a request that comes before initialize at
	// all. Over HTTP every request gets an answer (a status at least),
	// and the probe may be where an OAuth login happens, so it has the
	// whole startup timeout.
	mcpProbeWait = 3 * time.Second
	// mcpMaxRounds bounds the input_required rounds of one call.
	mcpMaxRounds = 8
	// mcpMaxInputRequests bounds the questions of one round.
	mcpMaxInputRequests = 16

	// The JSON-RPC errors of the specification zot acts on.
	mcpUnsupportedVersion   = -32022
	mcpURLElicitationNeeded = -32042 // 2025-11-25

	// The per-request _meta fields of 2026-07-28.
	mcpMetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	mcpMetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	mcpMetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// negotiate finds the revision the server speaks and opens it: the probe
// (above), then for a legacy server the initialize handshake.
func (s *mcpServer) negotiate(ctx context.Context, conn *mcpConn) error {
	version, err := s.discover(ctx, conn)
	if err != nil {
		return err
	}
	if version == "" {
		return s.handshake(ctx, conn)
	}
	s.mu.Lock()
	s.protocol, s.modern = version, true
	s.mu.Unlock()
	return nil
}

// discover is the probe: the modern revision the server speaks, or "" for
// a legacy server.
func (s *mcpServer) discover(ctx context.Context, conn *mcpConn) (string, error) {
	ht, _ := conn.t.(*httpTransport)
	ask := mcpModernVersions[0]
	for tries := 0; tries < 2; tries++ {
		if ht != nil {
			ht.setProtocol(ask, true)
		}
		conn.streamCancels = ht != nil
		wait := s.startupTimeout()
		if ht == nil {
			wait = min(mcpProbeWait, wait)
		}
		pctx, cancel := context.WithTimeout(ctx, wait)
		raw, err := conn.request(pctx, "server/discover", s.meta(nil, ask), nil, nil)
		cancel()
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		var rerr *jsonrpcError
		if errors.As(err, &rerr) && rerr.Code == mcpUnsupportedVersion {
			var d struct {
				Supported []string `json:"supported"`
			}
			json.Unmarshal(rerr.Data, &d)
			if v := firstShared(mcpModernVersions, d.Supported); v != "" && tries == 0 {
				ask = v // another revision, or the same refused once
				continue
			}
			if firstShared(mcpLegacyVersions, d.Supported) == "" {
				return "", fmt.Errorf("the server speaks MCP %s; zot speaks %s", mcpVersionList(d.Supported), strings.Join(append(slices.Clone(mcpModernVersions), mcpLegacyVersions...), ", "))
			}
			err = errors.New("it supports no modern revision zot speaks")
		}
		var r struct {
			SupportedVersions []string `json:"supportedVersions"`
			Capabilities      struct {
				Tools *struct {
					ListChanged bool `json:"listChanged"`
				} `json:"tools"`
			} `json:"capabilities"`
			Instructions string `json:"instructions"`
			Meta         struct {
				ServerInfo struct {
					Name    string `json:"name"`
					Version string `json:"version"`
				} `json:"io.modelcontextprotocol/serverInfo"`
			} `json:"_meta"`
		}
		if err == nil {
			if json.Unmarshal(raw, &r) != nil || len(r.SupportedVersions) == 0 {
				err = errors.New("not a DiscoverResult")
			}
		}
		v := firstShared(mcpModernVersions, r.SupportedVersions)
		if err == nil && v == "" {
			if firstShared(mcpLegacyVersions, r.SupportedVersions) == "" {
				return "", fmt.Errorf("the server speaks MCP %s; zot speaks %s", mcpVersionList(r.SupportedVersions), strings.Join(append(slices.Clone(mcpModernVersions), mcpLegacyVersions...), ", "))
			}
			err = errors.New("it lists no modern revision zot speaks")
		}
		if err != nil {
			s.log.printf("server/discover: %s: speaking the initialize-based revisions", truncate(err.Error(), 300))
			if ht != nil {
				ht.setProtocol("", false)
				ht.resetSession()
			}
			conn.streamCancels = false
			return "", nil
		}
		if ht != nil {
			ht.setProtocol(v, true)
		}
		s.mu.Lock()
		s.listChanged = r.Capabilities.Tools != nil && r.Capabilities.Tools.ListChanged
		s.mu.Unlock()
		s.log.printf("discovered: %s %s, protocol %s", truncate(r.Meta.ServerInfo.Name, 80), truncate(r.Meta.ServerInfo.Version, 40), v)
		if r.Instructions != "" {
			s.log.printf("instructions (not given to the model): %s", truncate(r.Instructions, 2000))
		}
		return v, nil
	}
	return "", fmt.Errorf("server/discover: the server refused %s twice", ask)
}

// firstShared is the first of ours that theirs lists.
func firstShared(ours, theirs []string) string {
	for _, v := range ours {
		if slices.Contains(theirs, v) {
			return v
		}
	}
	return ""
}

func mcpVersionList(vs []string) string {
	var q []string
	for _, v := range vs[:min(len(vs), 8)] {
		q = append(q, strconv.Quote(truncate(v, 40)))
	}
	if len(q) == 0 {
		return "no version it names"
	}
	return strings.Join(q, ", ")
}

// meta is params with the per-request fields of revision rev: the
// revision, zot's name and version, and the capabilities the mode can
// answer.
func (s *mcpServer) meta(params map[string]any, rev string) map[string]any {
	params = withMeta(params, mcpMetaProtocolVersion, rev)
	params = withMeta(params, mcpMetaClientInfo, map[string]any{"name": "zot", "version": version})
	return withMeta(params, mcpMetaClientCapabilities, s.capabilities(true))
}

// capabilities are what zot offers the server: roots (the session's
// working directory), and elicitation in the modes the mode can answer.
func (s *mcpServer) capabilities(modern bool) map[string]any {
	roots := map[string]any{}
	if !modern {
		roots["listChanged"] = false
	}
	caps := map[string]any{"roots": roots}
	el := map[string]any{}
	for _, m := range []ElicitMode{ElicitForm, ElicitURL} {
		if s.m.cfg.Elicit.Offers(m) {
			el[string(m)] = map[string]any{}
		}
	}
	if len(el) > 0 {
		caps["elicitation"] = el
	}
	return caps
}

// handshake is initialize, the version check, initialized, and the GET
// stream, open before any other request.
func (s *mcpServer) handshake(ctx context.Context, conn *mcpConn) error {
	tctx, cancel := context.WithTimeout(ctx, s.startupTimeout())
	defer cancel()
	params := map[string]any{
		"protocolVersion": mcpLegacyVersions[0],
		"capabilities":    s.capabilities(false),
		"clientInfo":      map[string]any{"name": "zot", "version": version},
	}
	raw, err := conn.request(tctx, "initialize", params, nil, nil)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("no answer to initialize within %s (raise startup_timeout_ms in %s)", s.startupTimeout(), s.cfg.Source)
		}
		return fmt.Errorf("initialize: %w", err)
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
		Instructions string `json:"instructions"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("initialize: bad result: %v", err)
	}
	if !slices.Contains(mcpLegacyVersions, r.ProtocolVersion) {
		return fmt.Errorf("the server speaks MCP protocol version %q; zot speaks %s", truncate(r.ProtocolVersion, 40), strings.Join(append(slices.Clone(mcpModernVersions), mcpLegacyVersions...), ", "))
	}
	s.log.printf("initialized: %s %s, protocol %s", truncate(r.ServerInfo.Name, 80), truncate(r.ServerInfo.Version, 40), r.ProtocolVersion)
	if r.Instructions != "" {
		s.log.printf("instructions (not given to the model): %s", truncate(r.Instructions, 2000))
	}
	s.mu.Lock()
	s.protocol, s.modern = r.ProtocolVersion, false
	s.mu.Unlock()
	ht, _ := conn.t.(*httpTransport)
	if ht != nil {
		ht.setProtocol(r.ProtocolVersion, false)
	}
	if err := conn.notify(tctx, "notifications/initialized", nil); err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	if ht != nil {
		ht.listen(tctx)
	}
	return nil
}

// send sends one request on conn as the server's revision asks: with the
// per-request _meta when modern, and again under a new id when a modern
// response stream is lost before its response, once.
func (s *mcpServer) send(ctx context.Context, conn *mcpConn, method string, params map[string]any, progress func(string), headers map[string]string) (json.RawMessage, error) {
	s.mu.Lock()
	modern, rev := s.modern, s.protocol
	s.mu.Unlock()
	if modern {
		params = s.meta(params, rev)
	}
	raw, err := conn.request(ctx, method, params, progress, headers)
	if modern && errors.Is(err, errStreamLost) {
		s.log.printf("%s: %v; sending it again", method, err)
		raw, err = conn.request(ctx, method, params, progress, headers)
	}
	return raw, err
}

// resultType is a result's resultType; absent (every legacy result) is
// complete.
func resultType(raw json.RawMessage) string {
	var r struct {
		ResultType string `json:"resultType"`
	}
	json.Unmarshal(raw, &r)
	if r.ResultType == "" {
		return "complete"
	}
	return r.ResultType
}

// mcpInputRequest is one question of an input_required result.
type mcpInputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// call runs tools/call to its end: a 2026-07-28 input_required result is
// answered (the questions put to whoever answers in this mode, roots/list
// from the session) and the call sent again with the answers and the
// server's requestState, byte for byte; a 2025-11-25 URL elicitation
// required error is put to the user, and the call sent again once they
// accepted. At most mcpMaxRounds rounds; each has the server's timeout.
func (s *mcpServer) call(ctx context.Context, tool string, args json.RawMessage, progress func(string), headers map[string]string) (json.RawMessage, error) {
	params := map[string]any{"name": tool, "arguments": args}
	for round := 1; ; round++ {
		tctx, cancel := context.WithTimeout(ctx, s.timeout())
		raw, err := s.request(tctx, "tools/call", params, progress, headers)
		cancel()
		var rerr *jsonrpcError
		switch {
		case errors.As(err, &rerr) && rerr.Code == mcpURLElicitationNeeded && round < mcpMaxRounds:
			if err := s.openURLs(ctx, rerr); err != nil {
				return nil, err
			}
			continue
		case err != nil:
			return nil, err
		}
		switch rt := resultType(raw); rt {
		case "complete":
			return raw, nil
		case "input_required":
			if round == mcpMaxRounds {
				return nil, fmt.Errorf("the server still asked for input after %d rounds", mcpMaxRounds)
			}
			var ir struct {
				InputRequests map[string]mcpInputRequest `json:"inputRequests"`
				RequestState  *string                    `json:"requestState"`
			}
			if err := json.Unmarshal(raw, &ir); err != nil {
				return nil, fmt.Errorf("a bad input_required result: %v", err)
			}
			if len(ir.InputRequests) == 0 && ir.RequestState == nil {
				return nil, errors.New("an input_required result with neither inputRequests nor requestState")
			}
			answers, err := s.answerInputs(ctx, ir.InputRequests)
			if err != nil {
				return nil, err
			}
			params = map[string]any{"name": tool, "arguments": args}
			if len(answers) > 0 {
				params["inputResponses"] = answers
			}
			if ir.RequestState != nil {
				params["requestState"] = *ir.RequestState
			}
		default:
			return nil, fmt.Errorf("a result of unknown resultType %q", truncate(rt, 40))
		}
	}
}

// answerInputs answers an input_required result's questions, in the order
// of their keys.
func (s *mcpServer) answerInputs(ctx context.Context, reqs map[string]mcpInputRequest) (map[string]any, error) {
	if len(reqs) > mcpMaxInputRequests {
		return nil, fmt.Errorf("the server asked %d questions at once; zot answers at most %d", len(reqs), mcpMaxInputRequests)
	}
	answers := map[string]any{}
	for _, key := range sortedKeys(reqs) {
		r := reqs[key]
		switch r.Method {
		case "elicitation/create":
			answers[key] = s.elicit(ctx, r.Params)
		case "roots/list":
			answers[key] = s.roots()
		default:
			return nil, fmt.Errorf("the server needs %q, which zot does not offer", truncate(r.Method, 60))
		}
	}
	return answers, nil
}

// roots is the roots/list result: the session's working directory.
func (s *mcpServer) roots() map[string]any {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(s.m.cfg.Cwd)}
	return map[string]any{"roots": []map[string]string{{"uri": u.String(), "name": filepath.Base(s.m.cfg.Cwd)}}}
}

// mcpParamHeader is an argument a tool's schema marks with x-mcp-header:
// its path of property names and the header's name (Mcp-Param-Name).
type mcpParamHeader struct {
	name string
	path []string
}

// paramHeaders reads a tool's x-mcp-header marks, as 2026-07-28 asks of an
// HTTP client: on properties reached through properties alone, of string,
// integer or boolean type, names that are header tokens, unique in any
// case. A mark anywhere else makes the tool invalid.
func paramHeaders(schema json.RawMessage) ([]mcpParamHeader, error) {
	var root any
	if json.Unmarshal(schema, &root) != nil {
		return nil, nil
	}
	var out []mcpParamHeader
	seen := map[string]bool{}
	var walk func(v any, path []string, reachable bool) error
	walk = func(v any, path []string, reachable bool) error {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				if err := walk(e, nil, false); err != nil {
					return err
				}
			}
		case map[string]any:
			if h, ok := x["x-mcp-header"]; ok {
				name, _ := h.(string)
				typ, _ := x["type"].(string)
				switch {
				case !reachable || len(path) == 0:
					return errors.New("x-mcp-header on a value not reached through properties alone")
				case !headerToken(name):
					return fmt.Errorf("x-mcp-header %q is not a header name", truncate(name, 40))
				case typ != "string" && typ != "integer" && typ != "boolean":
					return fmt.Errorf("x-mcp-header %q on a value of type %q (want string, integer or boolean)", name, truncate(typ, 20))
				case seen[strings.ToLower(name)]:
					return fmt.Errorf("x-mcp-header %q is used twice", name)
				}
				seen[strings.ToLower(name)] = true
				out = append(out, mcpParamHeader{name: name, path: slices.Clone(path)})
			}
			for k, sub := range x {
				if k == "properties" {
					props, ok := sub.(map[string]any)
					if !ok {
						continue
					}
					for pk, pv := range props {
						if err := walk(pv, append(slices.Clone(path), pk), reachable); err != nil {
							return err
						}
					}
					continue
				}
				if err := walk(sub, nil, false); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(root, nil, true); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b mcpParamHeader) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// headerToken is an HTTP field name (RFC 9110 tchar).
func headerToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// paramValues are a call's Mcp-Param-* headers: the value at each marked
// path of its arguments, when there is a primitive one there.
func paramValues(marks []mcpParamHeader, args json.RawMessage) map[string]string {
	if len(marks) == 0 {
		return nil
	}
	var root any
	d := json.NewDecoder(strings.NewReader(string(args)))
	d.UseNumber()
	if d.Decode(&root) != nil {
		return nil
	}
	out := map[string]string{}
	for _, m := range marks {
		v := root
		for _, k := range m.path {
			obj, _ := v.(map[string]any)
			v = obj[k]
		}
		switch x := v.(type) {
		case string:
			out[m.name] = x
		case bool:
			out[m.name] = strconv.FormatBool(x)
		case json.Number:
			out[m.name] = x.String()
		}
	}
	return out
}

// mcpListenTries is how many subscriptions/listen streams in a row may end
// without a notification before zot stops opening them.
const mcpListenTries = 5

// subscribe keeps a subscriptions/listen request open on conn for a
// 2026-07-28 server that announces tool list changes: its
// notifications/tools/list_changed (as onNotify hears them) make zot list
// again. A stream that ends is opened again after mcpDefaultRetry; after
// mcpListenTries in a row that brought no change, when the server does
// not serve it, or when the session is over, it stops. The caller has
// added it to the manager's goroutines.
func (s *mcpServer) subscribe(conn *mcpConn) {
	// Owned by the manager; ends as said above, or at Shutdown.
	go func() {
		defer s.m.wg.Done()
		for idle := 0; idle < mcpListenTries; {
			before := s.changes.Load()
			_, err := s.send(s.m.ctx, conn, "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil, nil)
			var rerr *jsonrpcError
			switch {
			case s.m.ctx.Err() != nil, conn.closed():
				return
			case errors.As(err, &rerr) && rerr.Code == rpcMethodNotFound:
				s.log.printf("subscriptions/listen: %v; the tool list refreshes by its ttlMs alone", err)
				return
			case err != nil:
				s.log.printf("subscriptions/listen: %v", err)
			}
			if s.changes.Load() > before {
				idle = 0
			} else {
				idle++
			}
			if sleepCtx(s.m.ctx, mcpDefaultRetry) != nil {
				return
			}
		}
		s.log.printf("subscriptions/listen: %d streams in a row brought nothing; not opened again", mcpListenTries)
	}()
}
