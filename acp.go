package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// zot acp: zot as an Agent Client Protocol agent (protocol version 1, as
// the schema of @agentclientprotocol/sdk defines it) on stdin and stdout,
// JSON-RPC 2.0 one message a line, logs on stderr. An editor drives it:
// it opens sessions (each a zot of its own, built and armed by the wiring
// like every other mode), prompts them, and answers the gates' questions
// as its permission dialogs. This file is the connection and the
// session lifecycle; acp_session.go is one session's prompts and updates.

// acpProtocolVersion is the one version zot speaks.
const acpProtocolVersion = 1

// maxACPLine bounds one message: room for a prompt with images.
const maxACPLine = 64 << 20

// JSON-RPC and ACP error codes (the schema's ErrorCode).
const (
	acpParseError     = -32700
	acpInvalidRequest = -32600
	acpMethodNotFound = -32601
	acpInvalidParams  = -32602
	acpInternalError  = -32603
	acpAuthRequired   = -32000
	acpNotFound       = -32002
)

// acpError is a JSON-RPC error object, and an error.
type acpError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *acpError) Error() string { return e.Message }

func acpErrorf(code int, format string, args ...any) *acpError {
	return &acpError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// acpMessage is one JSON-RPC message as read: a request (ID and Method),
// a notification (Method alone) or a response (ID with Result or Error).
type acpMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *acpError       `json:"error"`
}

// The messages zot writes.
type (
	acpResult struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}
	acpErrorReply struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *acpError       `json:"error"`
	}
	acpRequest struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}
	acpNotification struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}
)

// acpConfig is what the wiring gives the agent.
type acpConfig struct {
	Home string
	// Open builds the zot of a session: new (Path ""), or continued
	// from its file.
	Open func(ctx context.Context, req acpOpenRequest) (*acpBackend, error)
	// Persist: sessions are saved (not --no-session), so they can be
	// listed, loaded and resumed.
	Persist bool
	// MissingKey names the provider whose key is missing and the
	// variable that would hold it, or returns ok false when nothing is
	// missing; asked at initialize and authenticate.
	MissingKey func() (provider, envVar string, missing bool)
	// ApprovalTimeout bounds the wait for a permission answer.
	ApprovalTimeout time.Duration
	Log             func(format string, args ...any)
}

// acpOpenRequest is what a session asks of the wiring.
type acpOpenRequest struct {
	Cwd  string
	Path string // a session file to continue; "" starts a new session
	MCP  []acpMCPServer
	// Ask puts a gate's question to the editor (its permission dialog).
	Ask approvalAsker
	// Files reads and writes through the editor's buffers; nil when the
	// editor offers neither.
	Files *EditorFiles
	// Elicit puts an MCP server's question to the editor, in the modes
	// it advertised (none: the zero Elicitor).
	Elicit Elicitor
}

// acpMCPServer is an MCP server the editor passed: the user's own.
type acpMCPServer struct {
	Name    string
	Type    string // stdio or http
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
}

// acpBackend is one session's zot as the wiring built and armed it.
type acpBackend struct {
	Agent    *Agent
	Env      *ToolEnv
	Session  *Session // nil when the conversation is not saved
	Provider string
	// Notes are what the user should know before the first prompt (an
	// untrusted project's programs not started, a repaired session).
	Notes []string
	// Modes are the session modes; Mode says the current one, SetMode
	// changes it, and HearMode tells f of each change, however made (a
	// plan approved too).
	Modes    []acpMode
	Mode     func() string
	SetMode  func(id string) error
	HearMode func(f func(id string))
	// Commands are the slash commands besides the built-in ones of
	// acp_session.go: prompt templates and skills.
	Commands []acpCommand
	// Prompt runs a prompt (a /name may be a template); nil: the agent's.
	Prompt func(ctx context.Context, text string, blocks []Block, sink Sink) error
	// Rewind restores the files and the conversation to before the nth
	// prompt from the end, and says what it did; nil: checkpoints are off.
	Rewind func(n int, force bool) (string, error)
	Close  func()
}

// acpMode is a session mode.
type acpMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// acpCommand is a slash command as available_commands_update lists it.
type acpCommand struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Input       *acpCommandInput `json:"input,omitempty"`
}

type acpCommandInput struct {
	Hint string `json:"hint"`
}

// acpClientCaps is what the client said it can do at initialize.
type acpClientCaps struct {
	FS struct {
		ReadTextFile  bool `json:"readTextFile"`
		WriteTextFile bool `json:"writeTextFile"`
	} `json:"fs"`
	Terminal bool `json:"terminal"`
	Session  *struct {
		Notices *json.RawMessage `json:"notices"`
	} `json:"session"`
	// Elicitation: {} (or any object) for a mode offers it; absent or
	// null does not.
	Elicitation *struct {
		Form *json.RawMessage `json:"form"`
		URL  *json.RawMessage `json:"url"`
	} `json:"elicitation"`
}

// acpServer is the agent on one connection. The reader (Serve) routes
// each line: a request starts a goroutine that answers it, a response
// goes to the call waiting for it, a notification is handled at once.
type acpServer struct {
	acpConfig
	out io.Writer

	writeMu sync.Mutex
	broken  chan struct{} // closed once a write fails: the client is gone
	brokeOn sync.Once

	ctx      context.Context // ends with the connection
	handlers sync.WaitGroup

	mu          sync.Mutex
	initialized bool
	caps        acpClientCaps
	sessions    map[string]*acpSession
	nextID      int64
	pending     map[int64]chan acpMessage
}

func newACPServer(cfg acpConfig, out io.Writer) *acpServer {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = defaultApprovalTimeout
	}
	return &acpServer{acpConfig: cfg, out: out, broken: make(chan struct{}), sessions: map[string]*acpSession{}, pending: map[int64]chan acpMessage{}}
}

// Serve answers the client until its input ends, a write to it fails or
// ctx ends; then it cancels every prompt, closes every session (their
// MCP servers, extensions and commands stop) and returns.
func (s *acpServer) Serve(parent context.Context, in io.Reader) error {
	ctx, cancel := context.WithCancel(parent)
	s.ctx = ctx
	lines := make(chan inputLine)
	quit := make(chan struct{})
	// The reader is Serve's; it ends at the end of the input, or once quit
	// closes and its current read returns.
	go sendLines(in, maxACPLine, lines, quit)
	var err error
read:
	for {
		select {
		case l := <-lines:
			switch {
			case l.tooLong:
				s.replyError(json.RawMessage("null"), acpErrorf(acpInvalidRequest, "message longer than %d MiB: dropped", maxACPLine>>20))
			case len(bytes.TrimSpace(l.data)) > 0:
				s.handle(l.data)
			}
			if l.err != nil {
				if l.err != io.EOF {
					err = fmt.Errorf("read from the client: %w", l.err)
				}
				break read
			}
		case <-ctx.Done():
			break read
		case <-s.broken:
			err = errors.New("write to the client failed: it is gone")
			break read
		}
	}
	close(quit)
	cancel()
	for _, ss := range s.openSessions() {
		ss.cancel()
	}
	s.handlers.Wait()
	// A session/new that was still being answered is in the table by now.
	for _, ss := range s.openSessions() {
		ss.close()
	}
	if err == nil && parent.Err() != nil {
		err = parent.Err()
	}
	return err
}

// openSessions lists the sessions open now.
func (s *acpServer) openSessions() []*acpSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*acpSession, 0, len(s.sessions))
	for _, ss := range s.sessions {
		out = append(out, ss)
	}
	return out
}

// handle routes one line.
func (s *acpServer) handle(data []byte) {
	var m acpMessage
	if !json.Valid(data) {
		s.replyError(json.RawMessage("null"), acpErrorf(acpParseError, "parse error: the line is not valid JSON"))
		return
	}
	if err := decodeStrictJSON(data, &m); err != nil || m.JSONRPC != "2.0" {
		why := `want a JSON-RPC 2.0 object with "jsonrpc": "2.0"`
		if err != nil {
			why += ": " + err.Error()
		}
		id := json.RawMessage("null")
		if validACPID(m.ID) {
			id = m.ID
		}
		s.replyError(id, acpErrorf(acpInvalidRequest, "invalid request: %s", why))
		return
	}
	hasID := len(m.ID) > 0
	if hasID && !validACPID(m.ID) {
		s.replyError(json.RawMessage("null"), acpErrorf(acpInvalidRequest, `invalid request: "id" must be a string of UTF-8, a number or null`))
		return
	}
	switch {
	case m.Method == "" && hasID:
		s.answered(m)
	case m.Method == "":
		s.replyError(json.RawMessage("null"), acpErrorf(acpInvalidRequest, `invalid request: no "method"`))
	case !hasID:
		s.notified(m)
	default:
		s.handlers.Add(1)
		// Each request's goroutine answers it and ends; Serve waits for
		// them before it closes the sessions.
		go func() {
			defer s.handlers.Done()
			result, err := s.request(m)
			if err != nil {
				var ae *acpError
				if !errors.As(err, &ae) {
					ae = acpErrorf(acpInternalError, "%s", err.Error())
				}
				s.replyError(m.ID, ae)
				return
			}
			s.write(acpResult{JSONRPC: "2.0", ID: m.ID, Result: result})
		}()
	}
}

// validACPID says whether id may be echoed in a response. An id that is
// not UTF-8 may not: decoding reads it as U+FFFD, but echoed raw it would
// make zot's line invalid JSON, which a strict client drops.
func validACPID(id json.RawMessage) bool {
	if len(id) == 0 || !utf8.Valid(id) {
		return false
	}
	var v any
	if json.Unmarshal(id, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64, nil:
		return true
	}
	return false
}

// answered hands a client's response to the call waiting for it; one
// nobody waits for (a call that gave up) is dropped.
func (s *acpServer) answered(m acpMessage) {
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	s.mu.Lock()
	ch, ok := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if err != nil || !ok {
		s.Log("acp: a response to no request of ours (id %s): dropped", truncate(string(m.ID), 40))
		return
	}
	ch <- m
}

// notified handles a notification; unknown ones are ignored, as JSON-RPC
// wants (no answer to a notification, ever).
func (s *acpServer) notified(m acpMessage) {
	switch m.Method {
	case "session/cancel":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(m.Params, &p) != nil {
			s.Log("acp: session/cancel with unreadable params: ignored")
			return
		}
		if ss := s.session(p.SessionID); ss != nil {
			ss.cancel()
		}
	default:
		s.Log("acp: notification %q ignored", truncate(m.Method, 60))
	}
}

// request answers one request: a result, or an error (an *acpError
// carries its code).
func (s *acpServer) request(m acpMessage) (any, error) {
	if m.Method != "initialize" {
		s.mu.Lock()
		ok := s.initialized
		s.mu.Unlock()
		if !ok && acpMethods[m.Method] != nil {
			return nil, acpErrorf(acpInvalidRequest, "%s before initialize: initialize first", m.Method)
		}
	}
	h := acpMethods[m.Method]
	if h == nil {
		return nil, acpErrorf(acpMethodNotFound, "method not found: %q", truncate(m.Method, 80))
	}
	return h(s, m.Params)
}

// acpMethods are the agent's methods.
var acpMethods map[string]func(s *acpServer, params json.RawMessage) (any, error)

func init() {
	acpMethods = map[string]func(*acpServer, json.RawMessage) (any, error){
		"initialize":                (*acpServer).initialize,
		"authenticate":              (*acpServer).authenticate,
		"session/new":               (*acpServer).newSession,
		"session/load":              (*acpServer).loadSession,
		"session/resume":            (*acpServer).resumeSession,
		"session/list":              (*acpServer).listSessions,
		"session/close":             (*acpServer).closeSession,
		"session/prompt":            (*acpServer).prompt,
		"session/set_mode":          (*acpServer).setMode,
		"session/set_config_option": (*acpServer).setConfigOption,
	}
}

// acpParams decodes a request's params into v; a bad one is -32602.
func acpParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return acpErrorf(acpInvalidParams, "invalid params: %v", err)
	}
	return nil
}

func (s *acpServer) initialize(raw json.RawMessage) (any, error) {
	var p struct {
		ProtocolVersion *int          `json:"protocolVersion"`
		Caps            acpClientCaps `json:"clientCapabilities"`
	}
	if err := acpParams(raw, &p); err != nil {
		return nil, err
	}
	if p.ProtocolVersion == nil {
		return nil, acpErrorf(acpInvalidParams, `invalid params: "protocolVersion" is missing`)
	}
	s.mu.Lock()
	s.initialized, s.caps = true, p.Caps
	s.mu.Unlock()
	type (
		empty  struct{}
		prompt struct {
			Image           bool `json:"image"`
			Audio           bool `json:"audio"`
			EmbeddedContext bool `json:"embeddedContext"`
		}
		sessionCaps struct {
			List   *empty `json:"list,omitempty"`
			Resume *empty `json:"resume,omitempty"`
			Close  *empty `json:"close"`
		}
		caps struct {
			LoadSession bool            `json:"loadSession"`
			Prompt      prompt          `json:"promptCapabilities"`
			MCP         map[string]bool `json:"mcpCapabilities"`
			Session     sessionCaps     `json:"sessionCapabilities"`
		}
		authMethod struct {
			ID          string `json:"id"`
			Name        string `json:"name"`
			Description string `json:"description"`
		}
		implementation struct {
			Name    string `json:"name"`
			Title   string `json:"title"`
			Version string `json:"version"`
		}
	)
	c := caps{Prompt: prompt{Image: true, EmbeddedContext: true}, MCP: map[string]bool{"http": true, "sse": false}, Session: sessionCaps{Close: &empty{}}}
	if s.Persist {
		c.LoadSession = true
		c.Session.List, c.Session.Resume = &empty{}, &empty{}
	}
	auth := []authMethod{}
	if provider, env, missing := s.MissingKey(); missing {
		auth = append(auth, authMethod{ID: acpAuthMethod, Name: "API key for " + provider,
			Description: fmt.Sprintf("Set %s in the environment the editor starts zot with, or save a key with /login in zot's terminal UI (%s), then authenticate again.", env, filepath.Join(s.Home, "auth.json"))})
	}
	return struct {
		ProtocolVersion int            `json:"protocolVersion"`
		Caps            caps           `json:"agentCapabilities"`
		Auth            []authMethod   `json:"authMethods"`
		Info            implementation `json:"agentInfo"`
	}{acpProtocolVersion, c, auth, implementation{"zot", "zot", version}}, nil
}

// acpAuthMethod is the one way zot gets a key: the user puts it where zot
// reads keys, and authenticate checks that it is there now. A key never
// travels over the protocol.
const acpAuthMethod = "zot-api-key"

func (s *acpServer) authenticate(raw json.RawMessage) (any, error) {
	var p struct {
		MethodID string `json:"methodId"`
	}
	if err := acpParams(raw, &p); err != nil {
		return nil, err
	}
	if p.MethodID != acpAuthMethod {
		return nil, acpErrorf(acpInvalidParams, "unknown authentication method %q (zot has %q)", truncate(p.MethodID, 60), acpAuthMethod)
	}
	if provider, env, missing := s.MissingKey(); missing {
		return nil, acpErrorf(acpAuthRequired, "still no API key for %s: set %s or save one in %s", provider, env, filepath.Join(s.Home, "auth.json"))
	}
	return struct{}{}, nil
}

// sessionParams are the fields of session/new, load and resume.
type sessionParams struct {
	SessionID  string            `json:"sessionId"`
	Cwd        string            `json:"cwd"`
	MCPServers []json.RawMessage `json:"mcpServers"`
}

// open builds a session's zot and registers it.
func (s *acpServer) open(p sessionParams, path string) (*acpSession, error) {
	if provider, env, missing := s.MissingKey(); missing {
		return nil, acpErrorf(acpAuthRequired, "no API key for %s: set %s, or save one in %s, then authenticate", provider, env, filepath.Join(s.Home, "auth.json"))
	}
	if !filepath.IsAbs(p.Cwd) {
		return nil, acpErrorf(acpInvalidParams, `invalid params: "cwd" must be an absolute path, not %q`, truncate(p.Cwd, 200))
	}
	if st, err := os.Stat(p.Cwd); err != nil || !st.IsDir() {
		return nil, acpErrorf(acpInvalidParams, "invalid params: cwd %s is not a directory", truncate(p.Cwd, 200))
	}
	servers, err := parseACPMCPServers(p.MCPServers)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	caps := s.caps
	s.mu.Unlock()
	ss := &acpSession{srv: s, cwd: p.Cwd}
	req := acpOpenRequest{Cwd: p.Cwd, Path: path, MCP: servers, Ask: ss.ask}
	if e := caps.Elicitation; e != nil && (e.Form != nil || e.URL != nil) {
		req.Elicit = Elicitor{Form: e.Form != nil, URL: e.URL != nil, Ask: ss.elicit}
	}
	if caps.FS.ReadTextFile || caps.FS.WriteTextFile {
		req.Files = &EditorFiles{}
		if caps.FS.ReadTextFile {
			req.Files.Read = ss.readTextFile
		}
		if caps.FS.WriteTextFile {
			req.Files.Write = ss.writeTextFile
		}
	}
	b, err := s.Open(s.ctx, req)
	if err != nil {
		return nil, err
	}
	ss.b = b
	ss.id = newSessionID() + newSessionID()
	if b.Session != nil {
		ss.id = b.Session.Meta.ID
	}
	if b.HearMode != nil {
		b.HearMode(ss.modeChanged)
	}
	s.mu.Lock()
	if s.sessions[ss.id] != nil {
		s.mu.Unlock()
		b.Close()
		return nil, acpErrorf(acpInvalidRequest, "session %s is already open on this connection", ss.id)
	}
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	return ss, nil
}

// sessionState is what session/new, load and resume answer besides the id.
type sessionState struct {
	Modes         acpModeState      `json:"modes"`
	ConfigOptions []acpConfigOption `json:"configOptions"`
}

type acpModeState struct {
	CurrentModeID  string    `json:"currentModeId"`
	AvailableModes []acpMode `json:"availableModes"`
}

func (s *acpServer) newSession(raw json.RawMessage) (any, error) {
	var p sessionParams
	if err := acpParams(raw, &p); err != nil {
		return nil, err
	}
	ss, err := s.open(p, "")
	if err != nil {
		return nil, err
	}
	ss.announce()
	return struct {
		SessionID string `json:"sessionId"`
		sessionState
	}{ss.id, ss.state()}, nil
}

// findSaved is the file of a saved session of cwd.
func (s *acpServer) findSaved(p sessionParams) (string, error) {
	if !s.Persist {
		return "", acpErrorf(acpNotFound, "session %q not found: zot runs with --no-session, so no session is saved", truncate(p.SessionID, 60))
	}
	if p.SessionID == "" || strings.ContainsAny(p.SessionID, `/\`) {
		return "", acpErrorf(acpInvalidParams, `invalid params: "sessionId" %q`, truncate(p.SessionID, 60))
	}
	if s.session(p.SessionID) != nil {
		return "", acpErrorf(acpInvalidRequest, "session %s is already open on this connection", p.SessionID)
	}
	list, err := ListSessions(s.Home, p.Cwd)
	if err != nil {
		return "", err
	}
	for _, info := range list {
		if info.Meta.ID == p.SessionID && info.Newer == nil {
			return info.Path, nil
		}
	}
	return "", acpErrorf(acpNotFound, "session %q not found in %s", truncate(p.SessionID, 60), truncate(p.Cwd, 200))
}

func (s *acpServer) loadSession(raw json.RawMessage) (any, error) { return s.reopen(raw, true) }

func (s *acpServer) resumeSession(raw json.RawMessage) (any, error) { return s.reopen(raw, false) }

// reopen opens a saved session again: session/load, which replays the
// conversation first, and session/resume, which does not.
func (s *acpServer) reopen(raw json.RawMessage, replay bool) (any, error) {
	var p sessionParams
	if err := acpParams(raw, &p); err != nil {
		return nil, err
	}
	path, err := s.findSaved(p)
	if err != nil {
		return nil, err
	}
	ss, err := s.open(p, path)
	if err != nil {
		return nil, err
	}
	if replay {
		ss.replay()
	}
	ss.announce()
	return ss.state(), nil
}

func (s *acpServer) listSessions(raw json.RawMessage) (any, error) {
	var p struct {
		Cwd    string `json:"cwd"`
		Cursor string `json:"cursor"`
	}
	if err := acpParams(raw, &p); err != nil {
		return nil, err
	}
	if !s.Persist {
		return nil, acpErrorf(acpMethodNotFound, "session/list: zot runs with --no-session, so no session is saved")
	}
	if p.Cwd != "" && !filepath.IsAbs(p.Cwd) {
		return nil, acpErrorf(acpInvalidParams, `invalid params: "cwd" must be an absolute path`)
	}
	var list []SessionInfo
	if p.Cwd != "" {
		l, err := ListSessions(s.Home, p.Cwd)
		if err != nil {
			return nil, err
		}
		list = l
	} else {
		dirs, _ := readUntrustedDir(filepath.Join(s.Home, "sessions"))
		for _, d := range dirs {
			if !d.IsDir() {
				continue
			}
			// ListSessions wants a cwd; each directory names its own in
			// its sessions' meta rows, so read the directory through one.
			l, _ := listSessionDir(filepath.Join(s.Home, "sessions", d.Name()))
			list = append(list, l...)
		}
		sort.SliceStable(list, func(i, j int) bool { return list[i].Updated.After(list[j].Updated) })
	}
	start := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 || n > len(list) {
			return nil, acpErrorf(acpInvalidParams, "invalid params: cursor %q is not one zot gave", truncate(p.Cursor, 40))
		}
		start = n
	}
	type info struct {
		SessionID string `json:"sessionId"`
		Cwd       string `json:"cwd"`
		Title     string `json:"title,omitempty"`
		UpdatedAt string `json:"updatedAt"`
	}
	out := struct {
		Sessions   []info `json:"sessions"`
		NextCursor string `json:"nextCursor,omitempty"`
	}{Sessions: []info{}}
	const page = 100
	for i := start; i < len(list) && i < start+page; i++ {
		l := list[i]
		if l.Newer != nil {
			continue
		}
		out.Sessions = append(out.Sessions, info{SessionID: l.Meta.ID, Cwd: l.Meta.Cwd, Title: acpTitle(l.FirstPrompt), UpdatedAt: l.Updated.UTC().Format(time.RFC3339)})
	}
	if start+page < len(list) {
		out.NextCursor = strconv.Itoa(start + page)
	}
	return out, nil
}

// listSessionDir lists the sessions of one directory of
// $ZOT_HOME/sessions, whatever cwd they were made in.
func listSessionDir(dir string) ([]SessionInfo, error) {
	entries, err := readUntrustedDir(dir)
	if err != nil {
		return nil, err
	}
	var out []SessionInfo
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		if info, err := readSessionInfo(filepath.Join(dir, e.Name())); err == nil {
			out = append(out, info)
		}
	}
	return out, nil
}

// acpTitle is a session's title: its first prompt, on one line.
func acpTitle(prompt string) string {
	return truncate(strings.Join(strings.Fields(prompt), " "), 80)
}

func (s *acpServer) closeSession(raw json.RawMessage) (any, error) {
	ss, err := s.sessionOf(raw)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	delete(s.sessions, ss.id)
	s.mu.Unlock()
	ss.close()
	return struct{}{}, nil
}

// session is the open session id names, or nil.
func (s *acpServer) session(id string) *acpSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// sessionOf is the open session a request's sessionId names; -32002 when
// there is none.
func (s *acpServer) sessionOf(raw json.RawMessage) (*acpSession, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := acpParams(raw, &p); err != nil {
		return nil, err
	}
	ss := s.session(p.SessionID)
	if ss == nil {
		return nil, acpErrorf(acpNotFound, "session %q not found: open it with session/new or session/load first", truncate(p.SessionID, 60))
	}
	return ss, nil
}

func (s *acpServer) prompt(raw json.RawMessage) (any, error) {
	ss, err := s.sessionOf(raw)
	if err != nil {
		return nil, err
	}
	var p struct {
		Prompt []acpContent `json:"prompt"`
	}
	if err := acpParams(raw, &p); err != nil {
		return nil, err
	}
	stop, err := ss.prompt(p.Prompt)
	if err != nil {
		return nil, err
	}
	return struct {
		StopReason string `json:"stopReason"`
	}{stop}, nil
}

func (s *acpServer) setMode(raw json.RawMessage) (any, error) {
	ss, err := s.sessionOf(raw)
	if err != nil {
		return nil, err
	}
	var p struct {
		ModeID string `json:"modeId"`
	}
	if err := acpParams(raw, &p); err != nil {
		return nil, err
	}
	if err := ss.setMode(p.ModeID); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

func (s *acpServer) setConfigOption(raw json.RawMessage) (any, error) {
	ss, err := s.sessionOf(raw)
	if err != nil {
		return nil, err
	}
	var p struct {
		ConfigID string          `json:"configId"`
		Value    json.RawMessage `json:"value"`
	}
	if err := acpParams(raw, &p); err != nil {
		return nil, err
	}
	var value string
	if json.Unmarshal(p.Value, &value) != nil {
		return nil, acpErrorf(acpInvalidParams, `invalid params: "value" must be one of the option's values (a string)`)
	}
	if err := ss.setConfig(p.ConfigID, value); err != nil {
		return nil, err
	}
	return struct {
		ConfigOptions []acpConfigOption `json:"configOptions"`
	}{ss.configOptions()}, nil
}

// call sends a request to the client and waits for its answer, ctx's
// end or the client's going away.
func (s *acpServer) call(ctx context.Context, method string, p any, result any) error {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	reply := make(chan acpMessage, 1)
	s.pending[id] = reply
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	if err := s.write(acpRequest{JSONRPC: "2.0", ID: id, Method: method, Params: p}); err != nil {
		return err
	}
	select {
	case m := <-reply:
		if m.Error != nil {
			return fmt.Errorf("%s: %s (code %d)", method, m.Error.Message, m.Error.Code)
		}
		if result != nil && len(m.Result) > 0 {
			if err := json.Unmarshal(m.Result, result); err != nil {
				return fmt.Errorf("%s: the client's answer cannot be read: %v", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.broken:
		return errors.New("the client is gone")
	}
}

// notify sends a session/update.
func (s *acpServer) notify(sessionID string, update any) {
	s.write(acpNotification{JSONRPC: "2.0", Method: "session/update", Params: struct {
		SessionID string `json:"sessionId"`
		Update    any    `json:"update"`
	}{sessionID, update}})
}

func (s *acpServer) replyError(id json.RawMessage, e *acpError) {
	s.write(acpErrorReply{JSONRPC: "2.0", ID: id, Error: e})
}

// write sends one message as one line, whole: lines from concurrent
// writers never interleave. A failed write means the client is gone.
func (s *acpServer) write(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		s.Log("acp: encode %T: %v", v, err)
		return err
	}
	select {
	case <-s.broken:
		return errors.New("the client is gone")
	default:
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, err := s.out.Write(buf.Bytes()); err != nil {
		s.brokeOn.Do(func() { close(s.broken) })
		return err
	}
	return nil
}

// parseACPMCPServers reads session/new's mcpServers: stdio and http (sse
// is not offered, as zot does not speak it).
func parseACPMCPServers(raw []json.RawMessage) ([]acpMCPServer, error) {
	var out []acpMCPServer
	for i, r := range raw {
		type pair struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		}
		var e struct {
			Type    string   `json:"type"`
			Name    string   `json:"name"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
			Env     []pair   `json:"env"`
			URL     string   `json:"url"`
			Headers []pair   `json:"headers"`
		}
		if err := json.Unmarshal(r, &e); err != nil {
			return nil, acpErrorf(acpInvalidParams, "invalid params: mcpServers[%d]: %v", i, err)
		}
		srv := acpMCPServer{Name: e.Name, Args: e.Args, Env: map[string]string{}, Headers: map[string]string{}}
		switch e.Type {
		case "", "stdio":
			srv.Type, srv.Command = "stdio", e.Command
			if !filepath.IsAbs(e.Command) {
				return nil, acpErrorf(acpInvalidParams, "invalid params: mcpServers[%d] (%q): command must be an absolute path", i, truncate(e.Name, 60))
			}
			for _, v := range e.Env {
				srv.Env[v.Name] = v.Value
			}
		case "http":
			srv.Type, srv.URL = "http", e.URL
			for _, h := range e.Headers {
				srv.Headers[h.Name] = h.Value
			}
		default:
			return nil, acpErrorf(acpInvalidParams, "invalid params: mcpServers[%d] (%q): type %q is not one zot speaks (stdio, http)", i, truncate(e.Name, 60), truncate(e.Type, 20))
		}
		if e.Name == "" {
			return nil, acpErrorf(acpInvalidParams, "invalid params: mcpServers[%d] has no name", i)
		}
		out = append(out, srv)
	}
	return out, nil
}
