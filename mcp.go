package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
)

// MCP servers as tool sources. Configuration files name servers; the
// MCPManager starts them in the background, and each server's tools join the
// agent's registry as "mcp__<server>__<tool>" when it is ready. The calls go
// through the agent like any other tool's, so interception, confirmation and
// the audit log apply. The wire (JSON-RPC, stdio, Streamable HTTP) is in
// mcp_transport.go and mcp_http.go, the two protocol eras in
// mcp_protocol.go, the servers' questions to the user in mcp_elicit.go,
// the `zot mcp` command line in mcp_cli.go.

const (
	mcpDefaultTimeout = 60 * time.Second
	mcpRestartEvery   = time.Minute // a crashed server is restarted at most this often
	mcpMaxText        = 100 << 10   // text of one result given to the model
	mcpMaxConfig      = 4 << 20     // bytes of one configuration file
	mcpMaxPages       = 100         // tools/list pages followed
	mcpMaxToolName    = 64          // what the provider APIs accept
)

// MCPSources says where servers are configured.
type MCPSources struct {
	Home string // $ZOT_HOME: mcp.json
	Cwd  string // the session's: ./.mcp.json, ./.zot/mcp.json
	// Files are --mcp-config files, in the order given; a later one wins.
	Files []string
	// SkipDefault (--no-mcp) ignores ./.mcp.json, ./.zot/mcp.json and
	// $ZOT_HOME/mcp.json; Files still load.
	SkipDefault bool
	// UntrustedProject reads the project's files (./.zot/mcp.json,
	// ./.mcp.json) last and marks their servers Untrusted: listed, never
	// started. Their mistakes are not reported: they do not run.
	UntrustedProject bool
	// Plugins are the .mcp.json files of installed plugins, read after
	// the others (the caller leaves them out with SkipDefault).
	Plugins []MCPPluginFile
}

// MCPPluginFile is a plugin's .mcp.json. Its servers are named
// "Namespace:server", and ${CLAUDE_PLUGIN_ROOT} in their command, args
// and env is Root.
type MCPPluginFile struct {
	Path, Namespace, Root string
}

// MCPConfig is what the manager needs from its host.
type MCPConfig struct {
	Home string // $ZOT_HOME: logs/
	Cwd  string // session cwd: stdio servers' cwd, the root offered
	// Servers are the servers to run and Problems the configuration's
	// errors, as loadMCPConfigs read them; Start reports the problems, and
	// lists a server that one names as invalid.
	Servers  []mcpServerConfig
	Problems []mcpProblem
	// Login, when set, lets a server's OAuth login happen in the user's
	// browser; nil makes a server that needs one fail, naming `zot mcp
	// login`.
	Login *MCPLogin
	// OnStatus hears of bad configuration entries (server "" for a whole
	// file), servers becoming ready (level "info") and failures ("warning",
	// "error"), each once. It is called from the manager's goroutines.
	OnStatus func(server, level, message string)
	// Elicit answers the servers' questions (elicitation) in the modes it
	// offers, which are the modes the servers are told zot answers; the
	// zero Elicitor offers none.
	Elicit Elicitor
	// ElicitRefusal is what a server that asks in a mode not offered is
	// told ("zot -p has nobody to ask").
	ElicitRefusal string
}

// MCPServerState is where a configured server stands, as `zot mcp list`
// shows it.
type MCPServerState string

const (
	MCPStarting MCPServerState = "starting" // connecting, or listing its tools
	MCPReady    MCPServerState = "ready"    // its tools are in the registry
	MCPFailed   MCPServerState = "failed"   // it could not be started; see Error
	MCPExited   MCPServerState = "exited"   // it crashed; the next call restarts it, at most once a minute
	MCPStopped  MCPServerState = "stopped"  // zot stopped it at shutdown
	MCPDisabled MCPServerState = "disabled" // "disabled": true in its entry
	MCPInvalid  MCPServerState = "invalid"  // its entry is wrong; see Error
	// MCPUntrusted: the project's own server, in a directory the user has
	// not trusted (zot trust); it is not started.
	MCPUntrusted MCPServerState = "untrusted"
)

// mcpUntrustedNote is what a listing says about an untrusted server.
const mcpUntrustedNote = "untrusted (zot trust): this project's own server starts once you trust the directory"

// MCPServerStatus is one configured server as `zot mcp list` shows it.
type MCPServerStatus struct {
	Name      string         `json:"name"`
	Transport string         `json:"transport"`
	Target    string         `json:"target"` // command or URL as configured, unexpanded
	State     MCPServerState `json:"state"`
	Tools     int            `json:"tools"`
	// Protocol is the MCP revision the server speaks, once known.
	Protocol string `json:"protocol,omitempty"`
	Error    string `json:"error,omitempty"`
	Source   string `json:"source"`
}

// MCPManager owns the MCP servers of one zot process: it starts them, keeps
// their tools in the registry, restarts crashed ones and stops them all at
// Shutdown.
type MCPManager struct {
	cfg          MCPConfig
	restartEvery time.Duration // a crashed server is restarted at most this often

	mu        sync.Mutex
	servers   []*mcpServer
	reg       *ToolRegistry
	loaded    chan struct{}   // closed when servers is filled in
	ctx       context.Context // ends at Shutdown: stops startups and re-lists
	cancel    context.CancelFunc
	stopAfter func() bool // unhooks Start's ctx
	closed    bool
	wg        sync.WaitGroup // the loader, startup and re-list goroutines
}

// NewMCPManager returns a manager; nothing starts before Start.
func NewMCPManager(cfg MCPConfig) *MCPManager {
	ctx, cancel := context.WithCancel(context.Background())
	return &MCPManager{cfg: cfg, restartEvery: mcpRestartEvery, ctx: ctx, cancel: cancel}
}

// Start reports the configuration's bad entries and starts every server
// in parallel in the background; it returns at once. Each server's
// tools appear in reg when it is ready. Cancelling ctx abandons startups and
// re-lists still under way; Shutdown is still what stops the servers.
func (m *MCPManager) Start(ctx context.Context, reg *ToolRegistry) {
	m.start(ctx, reg, "")
}

// start starts every server, or only the one named.
func (m *MCPManager) start(ctx context.Context, reg *ToolRegistry, only string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.loaded != nil {
		return
	}
	m.reg = reg
	m.loaded = make(chan struct{})
	m.stopAfter = context.AfterFunc(ctx, m.cancel)
	if len(m.cfg.Problems) == 0 && len(m.cfg.Servers) == 0 {
		// Nothing to start, so no goroutine: a new one's stack grows
		// through the runtime's function tables (providers_transport.go).
		close(m.loaded)
		return
	}
	m.wg.Add(1)
	// Owned by the manager; ends when every server's startup has begun.
	go func() {
		defer m.wg.Done()
		m.load(only)
	}()
}

func (m *MCPManager) load(only string) {
	defer close(m.loaded)
	var servers []*mcpServer
	var reports []mcpProblem
	for _, p := range m.cfg.Problems {
		if only != "" && p.server != only {
			continue
		}
		reports = append(reports, p)
		if p.server != "" {
			// Listed, so that `zot mcp list` and the TUI show what is wrong.
			bad := &mcpServer{m: m, cfg: mcpServerConfig{Name: p.server, Source: p.file}, settled: make(chan struct{}), state: MCPInvalid, lastErr: p.msg}
			bad.settle()
			servers = append(servers, bad)
		}
	}
	for _, c := range m.cfg.Servers {
		if only != "" && c.Name != only {
			continue
		}
		s := &mcpServer{m: m, cfg: c, settled: make(chan struct{}), state: MCPStarting}
		switch {
		case c.Untrusted:
			s.state, s.lastErr = MCPUntrusted, mcpUntrustedNote
			s.settle()
		case c.Disabled:
			s.state = MCPDisabled
			s.settle()
		default:
			s.log = openMCPLog(mcpLogPath(m.cfg.Home, c.slug))
		}
		servers = append(servers, s)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		for _, s := range servers {
			s.log.close()
		}
		return
	}
	m.servers = servers
	for _, s := range servers {
		if s.state != MCPStarting {
			continue
		}
		m.wg.Add(1)
		// Owned by the manager; ends when the server is ready or has failed.
		go func() {
			defer m.wg.Done()
			s.startup()
		}()
	}
	m.mu.Unlock()
	for _, p := range reports {
		m.status(p.server, "warning", p.msg)
	}
}

func (m *MCPManager) status(server, level, msg string) {
	if m.cfg.OnStatus != nil {
		m.cfg.OnStatus(server, level, msg)
	}
}

// Status describes every configured server, in configuration order.
func (m *MCPManager) Status() []MCPServerStatus {
	m.mu.Lock()
	servers := append([]*mcpServer(nil), m.servers...)
	m.mu.Unlock()
	out := make([]MCPServerStatus, 0, len(servers))
	for _, s := range servers {
		out = append(out, s.status())
	}
	return out
}

// Refresh lists again, in the background, the tools of each 2026-07-28
// server whose list is no longer fresh (its ttlMs has passed): the host
// calls it when the tools are about to be offered to the model, and the
// model sees the new list from the next request on. An older server's
// list changes when the server says so (list_changed).
func (m *MCPManager) Refresh() {
	m.mu.Lock()
	servers := append([]*mcpServer(nil), m.servers...)
	m.mu.Unlock()
	now := time.Now()
	for _, s := range servers {
		s.mu.Lock()
		stale := s.state == MCPReady && s.modern && !now.Before(s.fresh)
		s.mu.Unlock()
		if stale {
			s.relist()
		}
	}
}

// waitSettled waits until every server is ready or has failed.
func (m *MCPManager) waitSettled(ctx context.Context) {
	m.mu.Lock()
	loaded := m.loaded
	m.mu.Unlock()
	if loaded == nil {
		return
	}
	select {
	case <-loaded:
	case <-ctx.Done():
		return
	}
	m.mu.Lock()
	servers := append([]*mcpServer(nil), m.servers...)
	m.mu.Unlock()
	for _, s := range servers {
		select {
		case <-s.settled:
		case <-ctx.Done():
			return
		}
	}
}

// Shutdown stops every server, in parallel: stdio servers get their stdin
// closed, killGrace, then SIGTERM and SIGKILL; HTTP sessions are deleted.
// It returns when all of them and the manager's goroutines are gone.
func (m *MCPManager) Shutdown(ctx context.Context) {
	m.mu.Lock()
	m.closed = true
	servers := append([]*mcpServer(nil), m.servers...)
	if m.stopAfter != nil {
		m.stopAfter()
	}
	m.mu.Unlock()
	m.cancel()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		// Owned by Shutdown, which waits for it.
		go func() {
			defer wg.Done()
			s.stop(ctx)
		}()
	}
	wg.Wait()
	m.wg.Wait()
	for _, s := range servers {
		s.log.close()
	}
}

// mcpServer is one configured server and its connection. startMu
// serialises (re)starts and re-initializations; mu guards the rest.
type mcpServer struct {
	m       *MCPManager
	cfg     mcpServerConfig
	log     *mcpLog
	settled chan struct{}
	once    sync.Once

	startMu sync.Mutex

	mu          sync.Mutex
	state       MCPServerState
	lastErr     string
	reported    string // last message given to OnStatus: report each once
	conn        *mcpConn
	http        *httpTransport // nil for stdio
	oauth       *mcpOAuth      // an HTTP server's, kept across sessions; nil for stdio or with OAuth off
	gen         int            // counts sessions, so concurrent re-inits start one
	restartedAt time.Time      // the last restart after a crash; zero before the first
	tools       []Tool
	listing     bool // a tools/list is under way
	relistAgain bool // list_changed arrived during it
	protocol    string
	modern      bool         // protocol is 2026-07-28: stateless
	fresh       time.Time    // modern: the tool list is fresh until then (ttlMs)
	listChanged bool         // modern: the server announces tool list changes (subscriptions/listen)
	changes     atomic.Int64 // list_changed notifications heard
}

func (s *mcpServer) settle() { s.once.Do(func() { close(s.settled) }) }

func (s *mcpServer) status() MCPServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return MCPServerStatus{Name: s.cfg.Name, Transport: s.cfg.Type, Target: s.cfg.target(), State: s.state,
		Tools: len(s.tools), Protocol: s.protocol, Error: s.lastErr, Source: s.cfg.Source}
}

// timeout bounds one tool call; startupTimeout one initialize or
// tools/list, which may wait for a server that is still being installed.
func (s *mcpServer) timeout() time.Duration {
	if s.cfg.TimeoutMS > 0 {
		return time.Duration(s.cfg.TimeoutMS) * time.Millisecond
	}
	return mcpDefaultTimeout
}

func (s *mcpServer) startupTimeout() time.Duration {
	if s.cfg.StartupTimeoutMS > 0 {
		return time.Duration(s.cfg.StartupTimeoutMS) * time.Millisecond
	}
	return mcpDefaultTimeout
}

func (s *mcpServer) logPath() string { return mcpLogPath(s.m.cfg.Home, s.cfg.slug) }

func mcpLogPath(home, slug string) string {
	return filepath.Join(home, "logs", "mcp-"+slug+".log")
}

// report tells OnStatus, unless it was the last thing said.
func (s *mcpServer) report(level, msg string) {
	s.mu.Lock()
	if s.reported == msg {
		s.mu.Unlock()
		return
	}
	s.reported = msg
	s.mu.Unlock()
	s.m.status(s.cfg.Name, level, msg)
}

func (s *mcpServer) startup() {
	defer s.settle()
	s.startMu.Lock()
	err := s.connect(s.m.ctx)
	s.startMu.Unlock()
	if err != nil {
		if s.m.ctx.Err() == nil {
			s.report("error", fmt.Sprintf("%v (log: %s)", err, s.logPath()))
		}
		return
	}
	s.mu.Lock()
	n := len(s.tools)
	s.mu.Unlock()
	s.report("info", fmt.Sprintf("ready, %d tools", n))
}

// connect starts the transport, initializes the session and lists the
// tools. On failure the transport is closed and the state says why.
func (s *mcpServer) connect(ctx context.Context) error {
	conn := newMCPConn(s.cfg.Name, s.log)
	conn.onRequest = s.onRequest
	conn.onNotify = s.onNotify
	s.mu.Lock()
	if s.state == MCPStopped {
		s.mu.Unlock()
		return errors.New("stopped")
	}
	s.state, s.lastErr = MCPStarting, ""
	s.protocol, s.modern, s.listChanged = "", false, false
	s.gen++
	s.mu.Unlock()

	var ht *httpTransport
	switch s.cfg.Type {
	case "stdio":
		if s.cfg.Verify != nil {
			if err := s.cfg.Verify(); err != nil {
				return s.fail(err)
			}
		}
		s.log.printf("starting %s", s.cfg.RawCommand)
		_, err := startStdio(s.cfg.Command, s.cfg.RawCommand, s.cfg.Args, serverEnv(s.cfg.Env), s.m.cfg.Cwd, conn, s.log.file(), func(err error) { s.exited(conn, err) })
		if err != nil {
			return s.fail(err)
		}
	default:
		s.log.printf("connecting to %s", redactURL(s.cfg.RawURL))
		ht = newHTTPTransport(s.cfg.URL, redactURL(s.cfg.RawURL), s.cfg.Headers, conn)
		if s.oauth == nil {
			s.oauth = newMCPOAuth(s.cfg, s.m.cfg.Home, s.m.cfg.Login, s.log)
		}
		if s.oauth != nil {
			ht.auth = s.oauth
		}
	}
	s.mu.Lock()
	if s.state == MCPStopped { // Shutdown came while we started
		s.mu.Unlock()
		closeNow(conn.t)
		return errors.New("stopped")
	}
	s.conn, s.http = conn, ht
	s.listing = true
	s.mu.Unlock()

	err := s.negotiate(ctx, conn)
	var tools []Tool
	if err == nil {
		tools, err = s.listTools(ctx, func(ctx context.Context, method string, params map[string]any) (json.RawMessage, error) {
			return s.send(ctx, conn, method, params, nil, nil)
		})
	}
	if err != nil {
		closeNow(conn.t)
		return s.fail(err)
	}
	s.mu.Lock()
	if s.state == MCPStopped { // Shutdown came while we listed
		s.mu.Unlock()
		closeNow(conn.t)
		return errors.New("stopped")
	}
	again := s.relistAgain
	s.listing, s.relistAgain = false, false
	s.state = MCPReady
	listen := s.modern && s.listChanged
	if listen {
		// Added under s.mu, as relist's goroutine is.
		s.m.wg.Add(1)
	}
	s.mu.Unlock()
	s.setTools(tools)
	s.log.printf("ready, %d tools", len(tools))
	if again {
		s.relist()
	}
	if listen {
		s.subscribe(conn)
	}
	return nil
}

// closeNow closes a transport without the grace a working server gets:
// one that failed or is still starting has nothing to finish.
func closeNow(t mcpTransport) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t.close(ctx)
}

func (s *mcpServer) fail(err error) error {
	s.mu.Lock()
	if s.state != MCPStopped {
		s.state, s.lastErr = MCPFailed, err.Error()
	}
	s.listing = false
	s.mu.Unlock()
	s.log.printf("%v", err)
	return err
}

// exited hears that a stdio server's process ended. Unless we stopped it or
// it died while starting (connect reports that), it is a crash: its calls
// have failed already and the next call restarts it.
func (s *mcpServer) exited(conn *mcpConn, err error) {
	s.mu.Lock()
	if s.conn != conn || s.state != MCPReady {
		s.mu.Unlock()
		return
	}
	s.state, s.lastErr = MCPExited, fmt.Sprintf("exited unexpectedly (%v)", err)
	next := s.nextRestart()
	s.mu.Unlock()
	s.log.printf("exited unexpectedly (%v)", err)
	promise := "it restarts on its next tool call"
	if time.Now().Before(next) {
		promise = "restarted less than a minute ago, it restarts on its first tool call after " + next.Format("15:04:05")
	}
	s.report("error", fmt.Sprintf("exited unexpectedly (%v); %s (log: %s)", err, promise, s.logPath()))
}

// nextRestart is when a crashed server may be restarted: at once the first
// time, then no sooner than restartEvery after the last restart, so that a
// server that dies at once does not spin. The caller holds s.mu.
func (s *mcpServer) nextRestart() time.Time {
	if s.restartedAt.IsZero() {
		return time.Time{}
	}
	return s.restartedAt.Add(s.m.restartEvery)
}

func (s *mcpServer) stop(ctx context.Context) {
	defer s.settle()
	s.mu.Lock()
	prev := s.state
	if prev == MCPDisabled || prev == MCPInvalid {
		s.mu.Unlock()
		return
	}
	s.state = MCPStopped
	var t mcpTransport
	if s.conn != nil {
		t = s.conn.t
	}
	s.mu.Unlock()
	switch {
	case t == nil || prev == MCPFailed: // closed when it failed
	case prev == MCPStarting:
		// Nothing to finish yet: no grace, so that a -p prompt that ended
		// before its servers were up does not wait for them.
		closeNow(t)
	default:
		// For a crashed server: wait until what it left running is stopped.
		t.close(ctx)
	}
}

// request sends one request on the current session. An HTTP server that
// forgot our session (404) gets one new initialize, then the request again.
func (s *mcpServer) request(ctx context.Context, method string, params map[string]any, progress func(string), headers map[string]string) (json.RawMessage, error) {
	s.mu.Lock()
	conn, gen := s.conn, s.gen
	s.mu.Unlock()
	raw, err := s.send(ctx, conn, method, params, progress, headers)
	if !errors.Is(err, errSessionExpired) {
		return raw, err
	}
	if err := s.reinit(ctx, gen); err != nil {
		return nil, fmt.Errorf("session expired and initialize again failed: %w", err)
	}
	return s.send(ctx, conn, method, params, progress, headers)
}

// reinit starts a new HTTP session, unless another caller already did.
func (s *mcpServer) reinit(ctx context.Context, gen int) error {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	s.mu.Lock()
	conn, ht, current := s.conn, s.http, s.gen
	s.mu.Unlock()
	if current != gen {
		return nil
	}
	s.log.printf("session expired: initializing again")
	ht.resetSession()
	if err := s.handshake(ctx, conn); err != nil {
		return err
	}
	s.mu.Lock()
	s.gen++
	s.mu.Unlock()
	s.relist() // the new session may offer other tools
	return nil
}

// listTools follows tools/list pages, sending each with request. A server
// without tools (method not found) has none. A 2026-07-28 list is fresh
// for the shortest ttlMs of its pages; a tool whose x-mcp-header marks are
// invalid is left out, as that revision asks.
func (s *mcpServer) listTools(ctx context.Context, request func(context.Context, string, map[string]any) (json.RawMessage, error)) ([]Tool, error) {
	var tools []Tool
	taken := map[string]bool{}
	cursor := ""
	seen := map[string]bool{}
	listed := time.Now()
	var ttl time.Duration
	for page := 0; ; page++ {
		if page == mcpMaxPages {
			return nil, fmt.Errorf("tools/list: more than %d pages", mcpMaxPages)
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		tctx, cancel := context.WithTimeout(ctx, s.startupTimeout())
		raw, err := request(tctx, "tools/list", params)
		cancel()
		var rerr *jsonrpcError
		if errors.As(err, &rerr) && rerr.Code == rpcMethodNotFound && page == 0 {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		var r struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
				Annotations struct {
					ReadOnlyHint bool `json:"readOnlyHint"`
				} `json:"annotations"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
			TTLMS      *int64 `json:"ttlMs"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("tools/list: bad result: %v", err)
		}
		if rt := resultType(raw); rt != "complete" {
			return nil, fmt.Errorf("tools/list: a result of resultType %q", truncate(rt, 40))
		}
		pageTTL := time.Duration(0)
		if r.TTLMS != nil && *r.TTLMS > 0 {
			pageTTL = time.Duration(min(*r.TTLMS, int64(24*time.Hour/time.Millisecond))) * time.Millisecond
		}
		if page == 0 || pageTTL < ttl {
			ttl = pageTTL
		}
		for _, t := range r.Tools {
			if t.Name == "" {
				s.log.printf("skipped a tool without a name")
				continue
			}
			name := mcpToolName(s.cfg.Name, t.Name)
			if taken[name] {
				s.log.printf("skipped tool %q: its name %s is taken by another of this server's tools", truncate(t.Name, 80), name)
				continue
			}
			var marks []mcpParamHeader
			if s.cfg.Type == "http" && s.isModern() {
				var err error
				if marks, err = paramHeaders(t.InputSchema); err != nil {
					s.log.printf("skipped tool %q: %v", truncate(t.Name, 80), err)
					continue
				}
			}
			taken[name] = true
			desc := t.Description
			if desc == "" {
				desc = fmt.Sprintf("Tool %s of MCP server %s.", t.Name, s.cfg.Name)
			}
			tools = append(tools, &mcpTool{srv: s, name: name, remote: t.Name, desc: desc, schema: mcpSchema(t.InputSchema), headers: marks, readOnly: t.Annotations.ReadOnlyHint})
		}
		if r.NextCursor == "" {
			s.mu.Lock()
			s.fresh = listed.Add(ttl)
			s.mu.Unlock()
			return tools, nil
		}
		if seen[r.NextCursor] {
			return nil, errors.New("tools/list: the server repeated a cursor")
		}
		seen[r.NextCursor] = true
		cursor = r.NextCursor
	}
}

// setTools publishes the server's tools to the registry.
func (s *mcpServer) setTools(tools []Tool) {
	s.mu.Lock()
	s.tools = tools
	reg := s.m.reg
	s.mu.Unlock()
	if reg == nil {
		return
	}
	if shadowed := reg.SetSource("mcp:"+s.cfg.Name, tools); len(shadowed) > 0 {
		s.report("warning", fmt.Sprintf("tools %s are hidden by tools of the same name from elsewhere", strings.Join(shadowed, ", ")))
	}
}

// relist lists the tools again after list_changed. One listing runs at a
// time; a change announced during it causes one more.
func (s *mcpServer) relist() {
	s.mu.Lock()
	if s.listing || s.state != MCPReady {
		s.relistAgain = s.listing
		s.mu.Unlock()
		return
	}
	s.listing = true
	// Added under s.mu: stop takes it to stop the server before Shutdown
	// waits for the manager's goroutines, so none is added after.
	s.m.wg.Add(1)
	s.mu.Unlock()
	// Owned by the manager; ends when the list is current or Shutdown came.
	go func() {
		defer s.m.wg.Done()
		for {
			tools, err := s.listTools(s.m.ctx, func(ctx context.Context, method string, params map[string]any) (json.RawMessage, error) {
				return s.request(ctx, method, params, nil, nil)
			})
			if err != nil {
				s.log.printf("re-list tools: %v", err)
			} else {
				s.setTools(tools)
				s.log.printf("listed the tools again: %d tools", len(tools))
			}
			s.mu.Lock()
			again := s.relistAgain && err == nil && s.state == MCPReady
			s.relistAgain = false
			s.listing = again
			s.mu.Unlock()
			if !again {
				return
			}
		}
	}()
}

// onRequest answers the server's requests: roots/list offers the session
// cwd, elicitation/create goes to whoever answers questions in this mode;
// the rest are not supported.
func (s *mcpServer) onRequest(ctx context.Context, method string, params json.RawMessage) (any, *jsonrpcError) {
	switch method {
	case "roots/list":
		return s.roots(), nil
	case "elicitation/create":
		return s.answerElicitation(ctx, params)
	}
	s.log.printf("refused the server's %s request: not supported", truncate(method, 80))
	return nil, nil
}

func (s *mcpServer) isModern() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modern
}

func (s *mcpServer) onNotify(method string, params json.RawMessage) {
	switch method {
	case "notifications/tools/list_changed":
		s.changes.Add(1)
		s.relist()
	case "notifications/message":
		var p struct {
			Level  string          `json:"level"`
			Logger string          `json:"logger"`
			Data   json.RawMessage `json:"data"`
		}
		json.Unmarshal(params, &p)
		data := string(p.Data)
		var text string
		if json.Unmarshal(p.Data, &text) == nil {
			data = text
		}
		s.log.printf("server log [%s] %s: %s", truncate(p.Level, 20), truncate(p.Logger, 80), truncate(data, 4000))
	}
}

// ready makes sure the server can take a tool call, restarting a crashed
// stdio server unless its last restart was less than restartEvery ago.
func (s *mcpServer) ready(ctx context.Context) error {
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	if state == MCPReady {
		return nil
	}
	if state != MCPExited {
		return fmt.Errorf("mcp server %s is %s", s.cfg.Name, state)
	}
	s.startMu.Lock()
	defer s.startMu.Unlock()
	s.mu.Lock()
	state, why, last, next, crashed := s.state, s.lastErr, s.restartedAt, s.nextRestart(), s.conn
	now := time.Now()
	restart := state == MCPExited && !now.Before(next)
	if restart {
		s.restartedAt = now
		next = s.nextRestart()
	}
	s.mu.Unlock()
	switch {
	case state == MCPReady: // another call restarted it
		return nil
	case state != MCPExited:
		return fmt.Errorf("mcp server %s is %s", s.cfg.Name, state)
	case !restart:
		return fmt.Errorf("mcp server %s %s; zot restarts a crashed server at most once a minute (the last restart was at %s): try again after %s (log: %s)",
			s.cfg.Name, why, last.Format("15:04:05"), next.Format("15:04:05"), s.logPath())
	}
	s.report("info", "restarting after a crash")
	// Whatever the crashed server left running goes before a new one starts.
	crashed.t.close(ctx)
	if err := s.connect(ctx); err != nil {
		s.mu.Lock()
		if s.state == MCPFailed { // not stopped meanwhile: may be restarted again, a minute on
			s.state, s.lastErr = MCPExited, fmt.Sprintf("crashed, and its restart failed (%v)", err)
		}
		s.mu.Unlock()
		s.report("error", fmt.Sprintf("restart failed: %v; it restarts on its first tool call after %s (log: %s)",
			err, next.Format("15:04:05"), s.logPath()))
		return fmt.Errorf("mcp server %s crashed and its restart failed: %v", s.cfg.Name, err)
	}
	s.report("info", "restarted")
	return nil
}

// callTool runs tools/call, each round with the server's timeout, and turns
// the answer into a tool result.
func (s *mcpServer) callTool(ctx context.Context, tool string, args json.RawMessage, progress func(string), headers map[string]string) ToolResult {
	if err := s.ready(ctx); err != nil {
		return errorResult("%v", err)
	}
	raw, err := s.call(ctx, tool, args, progress, headers)
	var rerr *jsonrpcError
	switch {
	case err == nil:
		return mcpResult(s.cfg.Name, raw)
	case ctx.Err() != nil:
		return errorResult("aborted; mcp server %s was told to cancel %s", s.cfg.Name, tool)
	case errors.Is(err, context.DeadlineExceeded):
		return errorResult("mcp server %s did not answer %s within %s and was told to cancel it (timeout_ms in %s sets the limit)", s.cfg.Name, tool, s.timeout(), s.cfg.Source)
	case errors.As(err, &rerr):
		return errorResult("mcp server %s refused %s: %s", s.cfg.Name, tool, truncate(rerr.Error(), 2000))
	}
	return errorResult("mcp server %s: %s failed: %v", s.cfg.Name, tool, err)
}

// mcpTool is one tool of a server, under its registry name.
type mcpTool struct {
	srv     *mcpServer
	name    string // mcp__server__tool
	remote  string // the server's name for it
	desc    string
	schema  json.RawMessage
	headers []mcpParamHeader // 2026-07-28 over HTTP: the arguments mirrored into headers
	// readOnly: the server marks the tool readOnlyHint, so plan mode runs
	// it (a hint zot believes: docs/permissions.md#plan-mode).
	readOnly bool
}

func (t *mcpTool) ReadOnly() bool          { return t.readOnly }
func (t *mcpTool) Name() string            { return t.name }
func (t *mcpTool) Description() string     { return t.desc }
func (t *mcpTool) Schema() json.RawMessage { return t.schema }
func (t *mcpTool) Run(ctx context.Context, args json.RawMessage, progress func(string)) ToolResult {
	res := t.srv.callTool(ctx, t.remote, args, progress, paramValues(t.headers, args))
	res.Details = "mcp server " + t.srv.cfg.Name
	return res
}

// mcpToolName is mcp__<server>__<tool> with characters the provider APIs
// refuse replaced by "_"; a name past mcpMaxToolName keeps its start and
// ends in a hash of the whole, so it stays unique.
func mcpToolName(server, tool string) string {
	name := mcpToolPrefix(server) + mcpSlug(tool)
	if len(name) <= mcpMaxToolName {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("%s_%08x", name[:mcpMaxToolName-9], h.Sum32())
}

// mcpToolPrefix starts the name of every tool of the server.
func mcpToolPrefix(server string) string { return "mcp__" + mcpSlug(server) + "__" }

func mcpSlug(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-') {
			return r
		}
		return '_'
	}, s)
}

// mcpSchema is the tool's inputSchema, or an open object schema when the
// server sent none or not an object.
func mcpSchema(raw json.RawMessage) json.RawMessage {
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) != nil || probe == nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	return raw
}

// mcpContent is one content item of a tools/call result.
type mcpContent struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Data        string `json:"data"`
	MimeType    string `json:"mimeType"`
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Resource    *struct {
		URI      string  `json:"uri"`
		MimeType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Blob     string  `json:"blob"`
	} `json:"resource"`
}

// mcpResult turns a tools/call result into what the model sees: text as
// text, images passed through, embedded resources as text, other content
// described, structuredContent as JSON text when no text came, isError as
// an error result. Text past mcpMaxText is cut with a note.
func mcpResult(server string, raw json.RawMessage) ToolResult {
	var r struct {
		Content           []mcpContent    `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return errorResult("mcp server %s sent a tools/call result that is not a CallToolResult: %v", server, err)
	}
	var blocks []Block
	hasText := false
	textLeft := mcpMaxText
	addText := func(s string) {
		hasText = true
		if textLeft <= 0 {
			return
		}
		if len(s) > textLeft {
			s = utf8Prefix(s, textLeft) + fmt.Sprintf("\n[output cut: over %d KB]", mcpMaxText>>10)
		}
		textLeft -= len(s)
		blocks = append(blocks, TextBlock(s))
	}
	for _, c := range r.Content {
		switch c.Type {
		case "text":
			addText(c.Text)
		case "image":
			if b, why := mcpImage(c.MimeType, c.Data); why == "" {
				blocks = append(blocks, b)
			} else {
				addText(why)
			}
		case "audio":
			addText(fmt.Sprintf("[audio %s, %d bytes: not shown]", c.MimeType, base64Len(c.Data)))
		case "resource_link":
			addText(strings.TrimSpace(fmt.Sprintf("[resource %s %s %s] %s", c.Name, c.URI, c.MimeType, c.Description)))
		case "resource":
			res := c.Resource
			switch {
			case res == nil:
				addText("[embedded resource without content]")
			case res.Text != nil:
				addText(fmt.Sprintf("[resource %s]\n%s", res.URI, *res.Text))
			default:
				if b, why := mcpImage(res.MimeType, res.Blob); why == "" {
					blocks = append(blocks, b)
				} else {
					addText(fmt.Sprintf("[binary resource %s, %s, %d bytes: not shown]", res.URI, res.MimeType, base64Len(res.Blob)))
				}
			}
		default:
			addText(fmt.Sprintf("[content of type %q: not shown]", truncate(c.Type, 40)))
		}
	}
	if !hasText && len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		addText(string(r.StructuredContent))
	}
	if len(blocks) == 0 {
		if r.IsError {
			blocks = append(blocks, TextBlock("the tool failed without saying why"))
		} else {
			blocks = append(blocks, TextBlock("(no output)"))
		}
	}
	return ToolResult{Content: blocks, IsError: r.IsError}
}

// mcpImage makes an image block of the kinds the providers accept, or says
// why not.
func mcpImage(mimeType, data string) (Block, string) {
	switch mimeType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
	default:
		return Block{}, fmt.Sprintf("[%s image, %d bytes: a type the model cannot see]", mimeType, base64Len(data))
	}
	n, err := base64.StdEncoding.Decode(make([]byte, base64.StdEncoding.DecodedLen(len(data))), []byte(data))
	switch {
	case err != nil:
		return Block{}, fmt.Sprintf("[%s image: not valid base64]", mimeType)
	case n > readMaxImage:
		return Block{}, fmt.Sprintf("[%s image of %d bytes: larger than %d MB]", mimeType, n, readMaxImage>>20)
	}
	return Block{Type: BlockImage, MimeType: mimeType, Data: data}, ""
}

// mcpServerConfig is one server entry after expansion and checks. Raw*
// fields keep the configured text for messages: expanded values may hold
// secrets and never appear in logs, errors or listings.
type mcpServerConfig struct {
	Name       string
	slug       string // Name made safe for tool and file names
	Source     string // the file it came from
	Type       string // stdio or http
	Command    string
	RawCommand string
	Args       []string
	RawArgs    []string // as configured, before ${VAR} expansion
	Env        map[string]string
	URL        string
	RawURL     string
	Headers    map[string]string
	TimeoutMS  int
	// StartupTimeoutMS bounds initialize and tools/list.
	StartupTimeoutMS int
	Disabled         bool
	// Untrusted: from the project's files in a directory the user has not
	// trusted; it is listed and never started.
	Untrusted bool
	// Verify, when set, is asked before every start of a stdio server (a
	// restart after a crash too): an error (its command or a file it runs
	// changed since it was trusted) fails the start.
	Verify func() error
	// OAuth is how zot authorizes at an HTTP server (mcp_oauth.go);
	// RawOAuth the "oauth" value as written, for workspace trust.
	OAuth    mcpOAuthConfig
	RawOAuth json.RawMessage
}

func (c mcpServerConfig) target() string {
	if c.Type == "stdio" {
		return c.RawCommand
	}
	return redactURL(c.RawURL)
}

// mcpEntry is a server entry as written in mcp.json.
type mcpEntry struct {
	Type             string            `json:"type"`
	Command          string            `json:"command"`
	Args             []string          `json:"args"`
	Env              map[string]string `json:"env"`
	URL              string            `json:"url"`
	Headers          map[string]string `json:"headers"`
	OAuth            json.RawMessage   `json:"oauth"`
	TimeoutMS        *float64          `json:"timeout_ms"`
	StartupTimeoutMS *float64          `json:"startup_timeout_ms"`
	Disabled         bool              `json:"disabled"`
}

type mcpProblem struct{ server, file, msg string }

// mcpProjectFiles are the project's own configuration files, most
// specific first.
func mcpProjectFiles(cwd string) []string {
	return []string{filepath.Join(cwd, ".zot", "mcp.json"), filepath.Join(cwd, ".mcp.json")}
}

// mcpConfigFiles lists the configuration files, most specific first:
// --mcp-config files (the last given first), ./.zot/mcp.json, ./.mcp.json,
// $ZOT_HOME/mcp.json (with UntrustedProject, the project's files come
// last). A server name takes its entry from the first file that has it.
func mcpConfigFiles(cfg MCPSources) (files []string, explicit map[string]bool) {
	explicit = map[string]bool{}
	for i := len(cfg.Files) - 1; i >= 0; i-- {
		p, err := filepath.Abs(cfg.Files[i])
		if err != nil {
			p = cfg.Files[i]
		}
		files = append(files, p)
		explicit[p] = true
	}
	switch {
	case cfg.SkipDefault:
	case cfg.UntrustedProject:
		files = append(append(files, filepath.Join(cfg.Home, "mcp.json")), mcpProjectFiles(cfg.Cwd)...)
	default:
		files = append(append(files, mcpProjectFiles(cfg.Cwd)...), filepath.Join(cfg.Home, "mcp.json"))
	}
	return files, explicit
}

// loadMCPConfigs reads every configuration file. Bad files and bad entries
// are returned as problems naming the file and server, and skipped.
func loadMCPConfigs(cfg MCPSources) ([]mcpServerConfig, []mcpProblem) {
	files, explicit := mcpConfigFiles(cfg)
	untrusted := map[string]bool{}
	if cfg.UntrustedProject {
		for _, f := range mcpProjectFiles(cfg.Cwd) {
			untrusted[f] = true
		}
	}
	// An untrusted project's files come last, after the plugins', so that
	// a name they take cannot keep a server of the user's from starting.
	sources := make([]MCPPluginFile, 0, len(files)+len(cfg.Plugins))
	for _, f := range files {
		if !untrusted[f] {
			sources = append(sources, MCPPluginFile{Path: f})
		}
	}
	sources = append(sources, cfg.Plugins...)
	for _, f := range files {
		if untrusted[f] {
			sources = append(sources, MCPPluginFile{Path: f})
		}
	}
	var out []mcpServerConfig
	var problems []mcpProblem
	taken := map[string]bool{}
	slugs := map[string]string{}
	read := map[string]bool{}
	for _, src := range sources {
		path := src.Path
		if read[path] {
			continue
		}
		read[path] = true
		data, err := readUntrustedFile(path, mcpMaxConfig)
		if errors.Is(err, os.ErrNotExist) && !explicit[path] {
			continue
		}
		var file struct {
			Servers map[string]json.RawMessage `json:"mcpServers"`
		}
		switch {
		case untrusted[path] && err == nil:
			json.Unmarshal(data, &file)
			for _, name := range sortedKeys(file.Servers) {
				if c, err := parseMCPEntry(name, file.Servers[name], nil); !taken[name] && err == nil {
					taken[name] = true
					c.Source, c.Untrusted = path, true
					out = append(out, c)
				}
			}
			continue
		case err != nil:
			problems = append(problems, mcpProblem{"", path, fmt.Sprintf("%v (skipped)", err)})
			continue
		case untrusted[path]:
			continue
		}
		if err := json.Unmarshal(data, &file); err != nil {
			problems = append(problems, mcpProblem{"", path, fmt.Sprintf("%s: not valid JSON: %v (skipped)", path, err)})
			continue
		}
		var vars map[string]string
		if src.Root != "" {
			vars = map[string]string{"CLAUDE_PLUGIN_ROOT": src.Root}
		}
		for _, entry := range sortedKeys(file.Servers) {
			name := entry
			if src.Namespace != "" {
				name = src.Namespace + ":" + entry
			}
			if taken[name] {
				continue // a more specific file has it
			}
			taken[name] = true
			c, err := parseMCPEntry(name, file.Servers[entry], vars)
			if err == nil && slugs[c.slug] != "" {
				err = fmt.Errorf("its tool names would clash with server %q's", slugs[c.slug])
			}
			if err != nil {
				problems = append(problems, mcpProblem{name, path, fmt.Sprintf("%s: server %q: %v (skipped)", path, name, err)})
				continue
			}
			slugs[c.slug] = name
			c.Source = path
			out = append(out, c)
		}
	}
	return out, problems
}

// parseMCPEntry reads one server entry; vars are variables that ${NAME}
// takes before the environment.
func parseMCPEntry(name string, raw json.RawMessage, vars map[string]string) (mcpServerConfig, error) {
	c := mcpServerConfig{Name: name, slug: mcpSlug(name)}
	if name == "" {
		return c, errors.New("the server name is empty")
	}
	var e mcpEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return c, fmt.Errorf("not a server entry: %v", err)
	}
	c.Disabled = e.Disabled
	for _, t := range []struct {
		name string
		v    *float64
		dst  *int
	}{{"timeout_ms", e.TimeoutMS, &c.TimeoutMS}, {"startup_timeout_ms", e.StartupTimeoutMS, &c.StartupTimeoutMS}} {
		if t.v == nil {
			continue
		}
		if *t.v < 1 || *t.v > 24*3600*1000 || *t.v != float64(int(*t.v)) {
			return c, fmt.Errorf("%s must be a whole number of milliseconds from 1 to 86400000", t.name)
		}
		*t.dst = int(*t.v)
	}
	switch e.Type {
	case "":
		switch {
		case e.Command != "" && e.URL != "":
			return c, errors.New(`both "command" and "url": set "type" to "stdio" or "http"`)
		case e.Command != "":
			c.Type = "stdio"
		case e.URL != "":
			c.Type = "http"
		default:
			return c, errors.New(`neither "command" (a stdio server) nor "url" (an HTTP server)`)
		}
	case "stdio":
		c.Type = "stdio"
	case "http", "streamable-http", "streamableHttp":
		c.Type = "http"
	case "sse":
		return c, errors.New(`type "sse" (the old HTTP+SSE transport) is not supported; use the server's Streamable HTTP url with "type": "http"`)
	default:
		return c, fmt.Errorf("unknown type %q (want stdio or http)", truncate(e.Type, 40))
	}
	var err error
	expand := func(field, v string) string {
		if err != nil {
			return ""
		}
		out, xerr := expandVars(v, vars)
		if xerr != nil {
			err = fmt.Errorf("%s: %v", field, xerr)
		}
		return out
	}
	if c.Type == "stdio" {
		if e.Command == "" {
			return c, errors.New(`"command" is missing`)
		}
		if len(e.OAuth) > 0 {
			return c, errors.New(`"oauth" is for http servers; a stdio server takes its credentials from "env"`)
		}
		c.RawCommand = e.Command
		c.Command = expand("command", e.Command)
		c.RawArgs = e.Args
		for i, a := range e.Args {
			c.Args = append(c.Args, expand(fmt.Sprintf("args[%d]", i), a))
		}
		c.Env = map[string]string{}
		for k, v := range e.Env {
			c.Env[k] = expand("env."+k, v)
		}
		return c, err
	}
	if e.URL == "" {
		return c, errors.New(`"url" is missing`)
	}
	c.RawURL = e.URL
	c.URL = expand("url", e.URL)
	c.Headers = map[string]string{}
	for k, v := range e.Headers {
		c.Headers[k] = expand("headers."+k, v)
	}
	oauth, oerr := parseMCPOAuth(e.OAuth, c.Headers, expand)
	if err != nil {
		return c, err
	}
	if oerr != nil {
		return c, oerr
	}
	c.OAuth, c.RawOAuth = oauth, e.OAuth
	if u, perr := url.Parse(c.URL); perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("url %s is not an http:// or https:// URL", redactURL(c.RawURL))
	}
	return c, nil
}

// expandVars replaces ${NAME} and ${NAME:-default} with the values of vars,
// else of the environment. An unset variable without a default is an
// error naming it.
func expandVars(s string, vars map[string]string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", errors.New("a ${ without its closing }")
		}
		name, def, hasDef := strings.Cut(s[i+2:i+end], ":-")
		if !validEnvName(name) {
			return "", fmt.Errorf("${%s} is not a variable name", truncate(name, 40))
		}
		v, ok := vars[name]
		if !ok {
			v, ok = os.LookupEnv(name)
		}
		if v == "" && hasDef {
			v, ok = def, true
		}
		if !ok {
			return "", fmt.Errorf("${%s} is not set", name)
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// redactURL shows a URL without credentials, query or fragment.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "the configured url"
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// mcpStderrStatus prints warnings and errors, cleaned for a terminal.
func mcpStderrStatus(stderr io.Writer) func(server, level, msg string) {
	return func(server, level, msg string) {
		if level == "info" {
			return
		}
		if server == "" {
			fmt.Fprintf(stderr, "zot: mcp: %s\n", sanitize(msg))
			return
		}
		fmt.Fprintf(stderr, "zot: mcp server %q: %s\n", server, sanitize(msg))
	}
}
