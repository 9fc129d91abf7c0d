package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The MCP wire: JSON-RPC 2.0 messages over a newline-delimited stdio pipe or
// Streamable HTTP. This file owns the message types, the decoder, the
// request/response bookkeeping (mcpConn) and the two transports; mcp.go
// owns configuration, server lifecycle and the tools.

// jsonrpcMessage is one decoded JSON-RPC message. Kind tells which fields
// matter: a request has ID and Method, a notification Method only, a
// response ID and either Result or Error.
type jsonrpcMessage struct {
	Kind   jsonrpcKind
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *jsonrpcError
}

type jsonrpcKind int

const (
	jsonrpcRequest jsonrpcKind = iota + 1
	jsonrpcNotification
	jsonrpcResponse
)

// jsonrpcError is a JSON-RPC error object.
type jsonrpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *jsonrpcError) Error() string {
	return fmt.Sprintf("%s (JSON-RPC error %d)", e.Message, e.Code)
}

// rpcMethodNotFound is the JSON-RPC error for a request we do not serve.
const rpcMethodNotFound = -32601

// jsonrpcOut is a message we send; one encoding for requests, notifications and
// responses.
type jsonrpcOut struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  any             `json:"params,omitempty"`
	Result  any             `json:"result,omitempty"`
	Error   *jsonrpcError   `json:"error,omitempty"`
}

// maxMCPMessage bounds one message from a server (a stdio line, an HTTP body,
// an SSE event), so a broken server cannot make us buffer without end. A
// tool result of several megabytes fits.
const maxMCPMessage = 64 << 20

// decodeRPC parses one line or body: a JSON-RPC message or a batch of them
// (servers of the 2025-03-26 revision may batch). Every field a message's
// kind needs is checked; an error says which.
func decodeRPC(data []byte) ([]jsonrpcMessage, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("empty message")
	}
	if data[0] != '[' {
		m, err := decodeOneRPC(data)
		if err != nil {
			return nil, err
		}
		return []jsonrpcMessage{m}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if len(items) == 0 {
		return nil, errors.New("empty batch")
	}
	out := make([]jsonrpcMessage, 0, len(items))
	for i, item := range items {
		m, err := decodeOneRPC(item)
		if err != nil {
			return nil, fmt.Errorf("batch item %d: %w", i+1, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func decodeOneRPC(data []byte) (jsonrpcMessage, error) {
	var w struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	var m jsonrpcMessage
	if err := decodeStrictJSON(data, &w); err != nil {
		return m, fmt.Errorf("not a JSON object: %w", err)
	}
	if w.JSONRPC == nil || *w.JSONRPC != "2.0" {
		return m, errors.New(`"jsonrpc" must be "2.0"`)
	}
	hasID := len(w.ID) > 0 && string(w.ID) != "null"
	if hasID && !validRPCID(w.ID) {
		return m, errors.New(`"id" must be a string or an integer`)
	}
	if len(w.Params) > 0 && w.Params[0] != '{' && w.Params[0] != '[' && string(w.Params) != "null" {
		return m, errors.New(`"params" must be an object or an array`)
	}
	m.ID, m.Params = w.ID, w.Params
	if w.Method != nil {
		if *w.Method == "" {
			return m, errors.New(`"method" is empty`)
		}
		m.Method = *w.Method
		m.Kind = jsonrpcNotification
		if hasID {
			m.Kind = jsonrpcRequest
		}
		return m, nil
	}
	m.Kind = jsonrpcResponse
	switch {
	case len(w.Result) > 0 && len(w.Error) > 0:
		return m, errors.New(`a response has both "result" and "error"`)
	case len(w.Error) > 0:
		var e jsonrpcError
		if err := json.Unmarshal(w.Error, &e); err != nil {
			return m, fmt.Errorf(`bad "error" object: %w`, err)
		}
		m.Error = &e
	case len(w.Result) > 0:
		if !hasID {
			return m, errors.New(`a result without an "id"`)
		}
		m.Result = w.Result
	default:
		return m, errors.New(`neither "method", "result" nor "error"`)
	}
	return m, nil
}

// validRPCID accepts a JSON string or an integer.
func validRPCID(raw json.RawMessage) bool {
	if raw[0] == '"' {
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

// ourID reads the id of a response to one of our requests: we send integers,
// and accept them back quoted.
func ourID(raw json.RawMessage) (int64, bool) {
	s := string(raw)
	if len(s) > 1 && s[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// mcpTransport carries encoded messages to one server. Messages the server
// sends come back through the mcpConn the transport was made for, on the
// transport's own goroutines.
type mcpTransport interface {
	// send hands one message over.
	send(ctx context.Context, out mcpOut) error
	// close stops the transport: the answers to the server's requests
	// stop, pending calls fail and its goroutines end.
	close(ctx context.Context)
}

// mcpOut is one message for the server, with what Streamable HTTP mirrors
// of it into headers.
type mcpOut struct {
	body []byte
	// id is a request's id, 0 for other messages: HTTP reads a response
	// stream until the response to it.
	id     int64
	method string // a request's method: Mcp-Method (2026-07-28)
	name   string // a tools/call's tool: Mcp-Name
	// params are a tools/call's Mcp-Param-* headers: the arguments its
	// tool's schema marks with x-mcp-header.
	params map[string]string
}

// mcpConn is one JSON-RPC session: it numbers our requests, routes
// responses and progress notifications to the callers waiting for them, and
// answers the server's requests. Transports call deliver for each message
// and fail when they can carry no more.
type mcpConn struct {
	server string
	t      mcpTransport
	log    *mcpLog
	// onRequest answers a server→client request other than ping, on a
	// goroutine of its own: a question for the user may take minutes, and
	// the transport's reader must go on. ctx ends when the server cancels
	// the request, when our call whose stream carried it ends, or with the
	// session. A nil result and nil error mean "method not supported".
	onRequest func(ctx context.Context, method string, params json.RawMessage) (any, *jsonrpcError)
	// onNotify sees every notification but progress and cancelled.
	onNotify func(method string, params json.RawMessage)
	// streamCancels: a call whose context ends is cancelled by closing
	// its stream (2026-07-28 over HTTP), not by notifications/cancelled.
	streamCancels bool

	ctx     context.Context // ends with the session: stops the answers
	cancel  context.CancelFunc
	answers sync.WaitGroup // the goroutines answering the server's requests

	mu        sync.Mutex
	nextID    int64
	pending   map[int64]*mcpCall
	answering map[string]context.CancelCauseFunc // the server's requests being answered, by id
	dead      error                              // once set, requests fail at once with it
}

// mcpMaxAnswering bounds the server's requests answered at once; one past
// it is refused, so a server cannot pile up questions or goroutines.
const mcpMaxAnswering = 8

// mcpCall is one request waiting for its response.
type mcpCall struct {
	ctx   context.Context     // the caller's: a server request its stream carries ends with it
	reply chan jsonrpcMessage // buffered: deliver never blocks
	fail  chan error          // buffered
	// progress is called for the call's progress notifications until the
	// caller has returned; mu makes "until" exact, so no progress event
	// follows the tool's result.
	mu       sync.Mutex
	progress func(string)
	finished bool
}

func newMCPConn(server string, log *mcpLog) *mcpConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &mcpConn{server: server, log: log, ctx: ctx, cancel: cancel, pending: map[int64]*mcpCall{}, answering: map[string]context.CancelCauseFunc{}}
}

// errSessionExpired is an HTTP 404 for our session id: the server forgot
// the session and we must initialize again.
var errSessionExpired = errors.New("session expired")

// request sends a request and waits for its response, ctx's end, or the
// transport's death. When ctx ends first the server is told with
// notifications/cancelled (never for initialize, which may not be
// cancelled; over 2026-07-28 HTTP the closed stream tells it) and a late
// response is dropped. headers are the call's Mcp-Param-* headers.
func (c *mcpConn) request(ctx context.Context, method string, params map[string]any, progress func(string), headers map[string]string) (json.RawMessage, error) {
	call := &mcpCall{ctx: ctx, reply: make(chan jsonrpcMessage, 1), fail: make(chan error, 1), progress: progress}
	c.mu.Lock()
	if c.dead != nil {
		err := c.dead
		c.mu.Unlock()
		return nil, err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = call
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		call.mu.Lock()
		call.finished = true
		call.mu.Unlock()
	}()
	if progress != nil {
		// The request id doubles as the progress token: unique while active.
		params = withMeta(params, "progressToken", id)
	}
	var p any
	if params != nil {
		p = params
	}
	msg, err := json.Marshal(jsonrpcOut{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method, Params: p})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", method, err)
	}
	name, _ := params["name"].(string)
	if err := c.t.send(ctx, mcpOut{body: msg, id: id, method: method, name: name, params: headers}); err != nil {
		return nil, err
	}
	select {
	case m := <-call.reply:
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case err := <-call.fail:
		return nil, err
	case <-ctx.Done():
		if method != "initialize" && !c.streamCancels {
			reason := "aborted by the user"
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				reason = "timed out"
			}
			nctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			c.notify(nctx, "notifications/cancelled", map[string]any{"requestId": id, "reason": reason})
			cancel()
		}
		return nil, ctx.Err()
	}
}

// withMeta is params with _meta[key] set, params and its _meta copied.
func withMeta(params map[string]any, key string, v any) map[string]any {
	out := maps.Clone(params)
	if out == nil {
		out = map[string]any{}
	}
	meta, _ := out["_meta"].(map[string]any)
	meta = maps.Clone(meta)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[key] = v
	out["_meta"] = meta
	return out
}

func (c *mcpConn) notify(ctx context.Context, method string, params any) error {
	msg, err := json.Marshal(jsonrpcOut{JSONRPC: "2.0", Method: method, Params: params})
	if err != nil {
		return err
	}
	return c.t.send(ctx, mcpOut{body: msg, method: method})
}

// deliver routes one message from the server. It runs on a transport's
// reader goroutine, so it never waits for another response itself.
// related is the id of our request whose stream carried it (0: none).
func (c *mcpConn) deliver(m jsonrpcMessage, related int64) {
	switch m.Kind {
	case jsonrpcResponse:
		id, ok := ourID(m.ID)
		c.mu.Lock()
		call := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if !ok || call == nil {
			if m.Error != nil && (len(m.ID) == 0 || string(m.ID) == "null") {
				c.log.printf("server error not tied to a request: %s", m.Error.Message)
			} else {
				c.log.printf("dropped a response to unknown or finished request %s", truncate(string(m.ID), 40))
			}
			return
		}
		call.reply <- m
	case jsonrpcRequest:
		c.answer(m, related)
	case jsonrpcNotification:
		switch m.Method {
		case "notifications/progress":
			c.progress(m.Params)
		case "notifications/cancelled":
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			json.Unmarshal(m.Params, &p)
			c.mu.Lock()
			if stop := c.answering[string(p.RequestID)]; stop != nil {
				stop(errServerCancelled)
			}
			c.mu.Unlock()
		default:
			if c.onNotify != nil {
				c.onNotify(m.Method, m.Params)
			}
		}
	}
}

// answer replies to a server→client request; anything we do not support
// gets "method not found", never silence. ping is answered at once, the
// rest on a goroutine each (see onRequest), at most mcpMaxAnswering at a
// time. A request whose session ended before the answer gets none.
func (c *mcpConn) answer(m jsonrpcMessage, related int64) {
	switch {
	case m.Method == "ping":
		c.reply(m, struct{}{}, nil)
		return
	case c.onRequest == nil:
		c.reply(m, nil, nil)
		return
	}
	key := string(m.ID)
	c.mu.Lock()
	if c.ctx.Err() != nil { // the session is over: nothing more is sent
		c.mu.Unlock()
		return
	}
	_, twice := c.answering[key]
	busy := len(c.answering) >= mcpMaxAnswering
	var call *mcpCall
	if related != 0 {
		call = c.pending[related]
	}
	ctx, cancel := context.WithCancelCause(c.ctx)
	if !twice && !busy {
		c.answering[key] = cancel
		c.answers.Add(1)
	}
	c.mu.Unlock()
	if twice || busy {
		cancel(nil)
		why := fmt.Sprintf("zot is answering %d requests of this server already", mcpMaxAnswering)
		if twice {
			why = "a request with this id is being answered already"
		}
		c.reply(m, nil, &jsonrpcError{Code: -32600, Message: why})
		return
	}
	// Owned by the conn; ends when the request is answered, cancelled, or
	// the session ends (stopAnswers waits for it).
	go func() {
		defer c.answers.Done()
		defer cancel(nil)
		if call != nil {
			defer context.AfterFunc(call.ctx, func() { cancel(nil) })()
		}
		result, rerr := c.onRequest(ctx, m.Method, m.Params)
		c.mu.Lock()
		delete(c.answering, key)
		c.mu.Unlock()
		// A request the server cancelled gets no answer, as the
		// specification asks; one whose session ended cannot.
		if c.ctx.Err() == nil && context.Cause(ctx) != errServerCancelled {
			c.reply(m, result, rerr)
		}
	}()
}

// errServerCancelled is why an answer stopped: the server sent
// notifications/cancelled for its request.
var errServerCancelled = errors.New("the server cancelled its request")

// reply sends the answer to a server's request.
func (c *mcpConn) reply(m jsonrpcMessage, result any, rerr *jsonrpcError) {
	if result == nil && rerr == nil {
		rerr = &jsonrpcError{Code: rpcMethodNotFound, Message: "zot does not support " + m.Method}
	}
	out := jsonrpcOut{JSONRPC: "2.0", ID: m.ID}
	if rerr != nil {
		out.Error = rerr
	} else {
		out.Result = result
	}
	msg, err := json.Marshal(out)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	if err := c.t.send(ctx, mcpOut{body: msg}); err != nil {
		c.log.printf("answer %s: %v", m.Method, err)
	}
}

// closed says whether the session is over.
func (c *mcpConn) closed() bool { return c.ctx.Err() != nil }

// stopAnswers ends the answers to the server's requests under way and
// waits for their goroutines: the session is over, and nothing more may
// be sent on it.
func (c *mcpConn) stopAnswers() {
	c.mu.Lock()
	c.cancel() // under mu: answer adds no goroutine after it
	c.mu.Unlock()
	c.answers.Wait()
}

func (c *mcpConn) progress(params json.RawMessage) {
	var p struct {
		Token    json.RawMessage `json:"progressToken"`
		Progress float64         `json:"progress"`
		Total    float64         `json:"total"`
		Message  string          `json:"message"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, ok := ourID(p.Token)
	c.mu.Lock()
	call := c.pending[id]
	c.mu.Unlock()
	if !ok || call == nil {
		return
	}
	line := p.Message
	switch {
	case p.Total > 0:
		line = strings.TrimSpace(fmt.Sprintf("%s (%g/%g)", line, p.Progress, p.Total))
	case line == "":
		line = fmt.Sprintf("progress %g", p.Progress)
	}
	call.mu.Lock()
	if !call.finished && call.progress != nil {
		call.progress(line)
	}
	call.mu.Unlock()
}

// failAll ends the session: every waiting call and every later request
// fails with err, and the answers to the server's requests stop.
func (c *mcpConn) failAll(err error) {
	c.mu.Lock()
	if c.dead == nil {
		c.dead = err
	}
	calls := c.pending
	c.pending = map[int64]*mcpCall{}
	c.cancel()
	c.mu.Unlock()
	for _, call := range calls {
		call.fail <- err
	}
}

// failCall fails one waiting call (its HTTP stream ended without a reply).
func (c *mcpConn) failCall(id int64, err error) {
	c.mu.Lock()
	call := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if call != nil {
		call.fail <- err
	}
}

// deliverData decodes a line or body and delivers its messages; a bad one
// is logged with where it came from and skipped. related is as deliver's.
func (c *mcpConn) deliverData(data []byte, from string, related int64) []jsonrpcMessage {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	msgs, err := decodeRPC(data)
	if err != nil {
		c.log.printf("skipped a bad message on %s: %v: %s", from, err, truncate(string(data), 200))
		return nil
	}
	for _, m := range msgs {
		c.deliver(m, related)
	}
	return msgs
}

// mcpLog is $ZOT_HOME/logs/mcp-<name>.log: the server's stderr and what zot
// notes about it. It never receives expanded configuration values.
type mcpLog struct {
	mu sync.Mutex
	f  *os.File // nil: discard
}

func openMCPLog(path string) *mcpLog {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return &mcpLog{}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return &mcpLog{}
	}
	return &mcpLog{f: f}
}

func (l *mcpLog) printf(format string, args ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		fmt.Fprintf(l.f, "%s zot: %s\n", time.Now().Format("2006-01-02T15:04:05.000"), fmt.Sprintf(format, args...))
	}
}

// file is where a server's stderr goes; nil discards it.
func (l *mcpLog) file() *os.File {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f
}

func (l *mcpLog) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// stdioTransport runs a server as a lineChild (proc.go): messages are
// lines on its stdin and stdout, its stderr goes to the log.
//
// The child's reader delivers stdout's lines until EOF; an EOF while the
// process runs on means the server closed its stdout, and the reader fails
// the calls and stops the session. The child's waiter waits for the
// process itself, because a child the server started may hold stdout open
// long after the server exited: it stops whatever is left in the session,
// reaps the server, lets the reader finish, then fails the calls and
// reports the exit. It ends last.
type stdioTransport struct {
	child *lineChild
	proc  *proc
	conn  *mcpConn
	log   *mcpLog
	wmu   sync.Mutex // held for a whole send: torn is decided under it
	// torn is set, under wmu, when a write stopped part-way: the server's
	// stdin then ends in half a message, and whatever followed would be
	// glued to it.
	torn   bool
	closed sync.Once
	// exited closes when the process has exited, its stdout is read out
	// and it is reaped; exitErr says how it ended, set before.
	exited  chan struct{}
	exitErr error
	// done closes when the waiter ends: nothing is left of the session.
	done <-chan struct{}
	// stdoutClosed is set by the reader, before it ends, when the server
	// closed its stdout but ran on.
	stdoutClosed bool
}

const (
	// mcpStdoutGrace is how long a server whose stdout ended has to exit
	// before it counts as one that closed its stdout and runs on.
	mcpStdoutGrace = time.Second
	// mcpDrainGrace is how long a server's stdout is still read after it
	// exited, for what it wrote before; a child holding stdout open would
	// otherwise keep the reader forever.
	mcpDrainGrace = 200 * time.Millisecond
)

// startStdio starts the process and its reader and waiter. env holds the
// server's own variables, set over zot's environment without its secrets.
// When the process has ended, conn's pending calls fail and exited hears
// how.
func startStdio(command, rawCommand string, args []string, env []string, dir string, conn *mcpConn, stderr *os.File, exited func(error)) (*stdioTransport, error) {
	return startStdioMax(command, rawCommand, args, env, dir, conn, stderr, exited, maxMCPMessage)
}

// startStdioMax is startStdio with stdout lines of at most maxLine bytes.
func startStdioMax(command, rawCommand string, args []string, env []string, dir string, conn *mcpConn, stderr *os.File, exited func(error), maxLine int) (*stdioTransport, error) {
	child, err := startLineChild(procSpec{argv: append([]string{command}, args...), dir: dir, env: envNoSecrets, addEnv: env,
		stdin: streamPipe, stdout: streamPipe, stderr: streamFile, stderrFile: stderr})
	if err != nil {
		// Without the expanded path, which a ${VAR} may have filled in.
		var ee *exec.Error
		var pe *fs.PathError
		if errors.As(err, &ee) {
			err = ee.Err
		} else if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("start %s in %s: %w", rawCommand, dir, err)
	}
	t := &stdioTransport{child: child, proc: child.proc, conn: conn, log: conn.log, exited: make(chan struct{}), done: child.gone}
	conn.t = t
	child.serve(lineChildIO{maxLine: maxLine, overLong: overLongSkip,
		line: func(line []byte, err error) {
			if err != nil {
				conn.log.printf("dropped a stdout line longer than %d bytes", maxLine)
				return
			}
			conn.deliverData(line, "stdout", 0)
		},
		ended: func(err error) { t.stdoutEnded(conn, err) },
		drain: mcpDrainGrace,
		// Children it left behind must not outlive it; the server is
		// reaped after them, so its ids stay its own until then.
		leftovers: killGrace,
		done: func(werr error) {
			if werr == nil {
				werr = errors.New("exit status 0")
			}
			t.exitErr = werr
			close(t.exited)
			why := werr
			if t.stdoutClosed {
				why = fmt.Errorf("closed its stdout while running, so zot stopped it: %v", werr)
			}
			conn.failAll(fmt.Errorf("server exited (%v)", werr))
			if exited != nil {
				exited(why)
			}
			child.closeStdin()
		}})
	return t, nil
}

// stdoutEnded runs when the server's stdout is read out. If the server
// runs on without stdout it can answer nothing more: its calls fail at
// once and its session is stopped (the waiter then reports the exit).
func (t *stdioTransport) stdoutEnded(conn *mcpConn, err error) {
	timer := time.NewTimer(mcpStdoutGrace)
	defer timer.Stop()
	select {
	case <-t.proc.Exited():
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.log.printf("exited while a process it started still holds its stdout")
		} else if err != nil {
			t.log.printf("read stdout: %v", err)
		}
	case <-timer.C:
		t.stdoutClosed = true
		t.log.printf("closed its stdout but still runs: stopping it")
		conn.failAll(errors.New("server closed its stdout"))
		t.proc.Stop(killGrace)
	}
}

func (t *stdioTransport) send(ctx context.Context, out mcpOut) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	select {
	case <-t.exited:
		return fmt.Errorf("server exited (%v)", t.exitErr)
	default:
	}
	// A server that stops reading its stdin must not hang us: the write
	// gives up at ctx's deadline.
	if t.torn {
		return errors.New("an earlier message to the server was cut off; it is being restarted")
	}
	deadline, _ := ctx.Deadline()
	stop := context.AfterFunc(ctx, func() { t.child.stdin.SetWriteDeadline(time.Now()) })
	defer stop()
	n, err := t.child.write(append(out.body, '\n'), deadline)
	if err != nil && n > 0 {
		// Closing stdin ends the server (or the group is stopped), and the
		// crash path restarts it for the next call.
		t.torn = true
		t.child.closeStdin()
		// Owner: this transport; it ends once the session is gone (≤ killGrace+1s).
		go t.proc.Stop(killGrace)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("write to server: %w", err)
	}
	return nil
}

// close stops the server as the MCP lifecycle asks: close its stdin, give
// it killGrace to exit, then the stop sequence for its session (SIGTERM,
// killGrace, SIGKILL). It returns when the process is reaped and its
// session gone.
func (t *stdioTransport) close(ctx context.Context) {
	t.closed.Do(func() { t.stop(ctx) })
	<-t.done
}

func (t *stdioTransport) stop(ctx context.Context) {
	t.conn.stopAnswers()
	t.child.closeStdin()
	t.child.stop(ctx, killGrace, killGrace, func() {
		if ctx.Err() == nil {
			t.log.printf("still running %s after its stdin closed: SIGTERM", killGrace)
		}
	})
}

// httpTransport speaks Streamable HTTP: each message is a POST; a request's
// answer comes back as one JSON body or as an SSE stream that may carry the
// server's requests and notifications first. Up to 2025-11-25, a session id
// the server gives at initialization goes on every later request, close
// DELETEs it, and event streams resume (mcp_http.go); 2026-07-28 has none
// of these.
type httpTransport struct {
	url     string // expanded: may hold a secret; never in messages
	rawURL  string // as configured, for messages
	headers map[string]string
	client  *http.Client
	conn    *mcpConn
	// auth, when set, gives each request its Authorization header and
	// answers the server's 401 and 403 (mcp_oauth.go).
	auth mcpAuthorizer

	ctx    context.Context // ends at close: stops streams
	cancel context.CancelFunc
	wg     sync.WaitGroup // stream readers and the listener
	// sending counts the requests going out; close waits for them before
	// its DELETE, and after closing is set none starts.
	sending sync.WaitGroup

	closed sync.Once

	mu        sync.Mutex
	sessionID string
	protocol  string
	stateless bool // 2026-07-28: no session, no GET stream, no resumption
	listening bool
	closing   bool
}

func newHTTPTransport(url, rawURL string, headers map[string]string, conn *mcpConn) *httpTransport {
	ctx, cancel := context.WithCancel(context.Background())
	t := &httpTransport{url: url, rawURL: rawURL, headers: headers, client: &http.Client{Transport: mcpHTTPTransport(), CheckRedirect: sameOriginRedirects}, conn: conn, ctx: ctx, cancel: cancel}
	conn.t = t
	return t
}

// mcpIdleConnTimeout is how long an idle connection may wait for its next
// request. Servers close theirs (Node after 5 s), and a POST on one they
// are closing fails unless it is one of mcpRepeatable: this is shorter, so
// zot seldom picks up such a connection. Seldom, not never: the server's
// clock starts when it has written its answer, zot's when it has read it.
const mcpIdleConnTimeout = 3 * time.Second

// mcpHTTPTransport is Go's default transport with mcpIdleConnTimeout.
func mcpHTTPTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.IdleConnTimeout = mcpIdleConnTimeout
	return tr
}

// mcpAuthorizer is what an HTTP transport asks about authorization: the
// header for a request, and what to do about a 401 or 403 to one that
// went with sent (its header, or ""), the attempt'th such answer to it.
type mcpAuthorizer interface {
	authorization(ctx context.Context) (string, error)
	challenge(ctx context.Context, resp *http.Response, sent string, attempt int) (retry bool, err error)
}

// resetSession forgets the session so the next initialize starts anew.
func (t *httpTransport) resetSession() {
	t.mu.Lock()
	t.sessionID, t.protocol = "", ""
	t.mu.Unlock()
}

// setProtocol is the revision every later request names; stateless is
// 2026-07-28's: no session is kept.
func (t *httpTransport) setProtocol(v string, stateless bool) {
	t.mu.Lock()
	t.protocol, t.stateless = v, stateless
	t.mu.Unlock()
}

func (t *httpTransport) newRequest(ctx context.Context, method string, body []byte) (*http.Request, string, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url, rd)
	if err != nil {
		return nil, "", fmt.Errorf("bad url %s: %w", t.rawURL, scrubURLError(err))
	}
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	if t.auth != nil {
		h, err := t.auth.authorization(ctx)
		if err != nil {
			return nil, "", err
		}
		if h != "" {
			req.Header.Set("Authorization", h)
		}
	}
	t.mu.Lock()
	sid := t.sessionID
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if t.protocol != "" {
		req.Header.Set("MCP-Protocol-Version", t.protocol)
	}
	t.mu.Unlock()
	return req, sid, nil
}

// do sends one request, set's headers added to it. A 401 or 403 goes to
// the authorizer, which may get a new token for the request to go again,
// up to three times.
func (t *httpTransport) do(ctx context.Context, method string, body []byte, set func(*http.Request)) (*http.Response, string, error) {
	for attempt := 0; ; attempt++ {
		req, sid, err := t.newRequest(ctx, method, body)
		if err != nil {
			return nil, "", err
		}
		if set != nil {
			set(req)
		}
		resp, err := t.client.Do(req)
		if err != nil || t.auth == nil || attempt == 3 || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
			return resp, sid, err
		}
		retry, err := t.auth.challenge(ctx, resp, req.Header.Get("Authorization"), attempt)
		if err != nil {
			resp.Body.Close()
			return nil, "", err
		}
		if !retry {
			return resp, sid, nil
		}
		resp.Body.Close()
	}
}

func (t *httpTransport) send(ctx context.Context, out mcpOut) error {
	if !t.begin() {
		return errMCPClosed
	}
	defer t.sending.Done()
	// The request lives until its stream is read, which may be after send
	// returns: it ends with ctx or with the transport.
	rctx, cancel := context.WithCancel(t.ctx)
	stop := context.AfterFunc(ctx, cancel)
	resp, sid, err := t.do(rctx, http.MethodPost, out.body, func(req *http.Request) {
		t.mirror(req, out)
		if mcpRepeatable[out.method] {
			req.Header["Idempotency-Key"] = nil // idempotent to Go's transport, and not sent
		}
	})
	if err != nil {
		stop()
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// Go says only "EOF"; what the caller needs is whether the
			// server may have acted (mcpRepeatable).
			why := "the server closed the connection without an answer"
			if !mcpRepeatable[out.method] {
				why += "; not sent again, since the server may have acted on it"
			}
			return fmt.Errorf("POST %s: %s", t.rawURL, why)
		}
		return fmt.Errorf("POST %s: %w", t.rawURL, scrubURLError(err))
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" && sid == "" && !t.isStateless() {
		if !visibleASCII(s) {
			resp.Body.Close()
			stop()
			cancel()
			return fmt.Errorf("POST %s: the server's Mcp-Session-Id has characters outside visible ASCII", t.rawURL)
		}
		t.mu.Lock()
		t.sessionID = s
		t.mu.Unlock()
	}
	if resp.StatusCode == http.StatusNotFound && sid != "" {
		resp.Body.Close()
		stop()
		cancel()
		return errSessionExpired
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		defer stop()
		defer cancel()
		return t.statusError("POST", resp)
	}
	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ctype != "text/event-stream" {
		defer resp.Body.Close()
		defer stop()
		defer cancel()
		if out.id == 0 {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			return nil
		}
		if resp.StatusCode == http.StatusAccepted {
			return fmt.Errorf("POST %s: HTTP 202 to a request: the server accepted it but sent no answer", t.rawURL)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxMCPMessage+1))
		if err != nil {
			return fmt.Errorf("POST %s: read response: %w", t.rawURL, scrubURLError(err))
		}
		if len(body) > maxMCPMessage {
			return fmt.Errorf("POST %s: response larger than %d bytes", t.rawURL, maxMCPMessage)
		}
		if t.conn.deliverData(body, "an HTTP response", out.id) == nil {
			return fmt.Errorf("POST %s: the response is not a JSON-RPC message (Content-Type %q)", t.rawURL, resp.Header.Get("Content-Type"))
		}
		return nil
	}
	t.wg.Add(1)
	// Owned by the transport; ends when the response to out.id has
	// arrived (on this stream or on the ones resuming it), when it cannot,
	// or when ctx or the transport ends.
	go func() {
		defer t.wg.Done()
		defer stop()
		defer cancel()
		t.follow(rctx, resp.Body, out.id)
	}()
	return nil
}

// mcpHTTPError is an HTTP error status. Unwrap gives the JSON-RPC error
// its body held, if any: a 2026-07-28 server's answers to what it cannot
// serve (an unsupported version, a missing capability, an unknown method)
// come that way.
type mcpHTTPError struct {
	msg    string
	status int
	rpc    *jsonrpcError
}

func (e *mcpHTTPError) Error() string { return e.msg }
func (e *mcpHTTPError) Unwrap() error {
	if e.rpc == nil {
		return nil
	}
	return e.rpc
}

// statusError reads what an error status says: the JSON-RPC error of its
// body, else the body's first bytes.
func (t *httpTransport) statusError(method string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	msg := strings.TrimSpace(string(body))
	e := &mcpHTTPError{status: resp.StatusCode}
	if msgs, err := decodeRPC(body); err == nil && msgs[0].Error != nil {
		e.rpc = msgs[0].Error
		msg = e.rpc.Message
	}
	e.msg = fmt.Sprintf("%s %s: HTTP %d: %s", method, t.rawURL, resp.StatusCode, truncate(msg, 300))
	return e
}

// errMCPClosed is a message for a server whose connection zot closed.
var errMCPClosed = errors.New("server connection closed")

// begin counts a request going out, unless the transport is closing.
func (t *httpTransport) begin() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return false
	}
	t.sending.Add(1)
	return true
}

func (t *httpTransport) isStateless() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stateless
}

// readStream delivers the messages of an SSE stream, keeping cur, and
// reports whether the response to wantID was among them and how many
// messages came.
func (t *httpTransport) readStream(body io.Reader, wantID int64, cur *sseCursor) (got bool, n int) {
	readSSEFrom(body, cur, func(ev sseEvent) error {
		if len(ev.Data) > maxMCPMessage {
			t.conn.log.printf("dropped an event larger than %d bytes", maxMCPMessage)
			return nil
		}
		for _, m := range t.conn.deliverData(ev.Data, "the event stream", wantID) {
			n++
			if id, ok := ourID(m.ID); ok && m.Kind == jsonrpcResponse && wantID != 0 && id == wantID {
				got = true
			}
		}
		if got {
			return errStopSSE
		}
		return nil
	})
	return got, n
}

// close stops the session: no message goes out after it begins; the
// answers to the server's requests, the streams and the listener stop;
// then the session is DELETEd (a server may answer 405; either way we are
// done).
func (t *httpTransport) close(ctx context.Context) {
	t.closed.Do(func() { t.stop(ctx) })
}

func (t *httpTransport) stop(ctx context.Context) {
	t.mu.Lock()
	t.closing = true
	sid := t.sessionID
	t.mu.Unlock()
	t.cancel()
	t.conn.stopAnswers()
	t.sending.Wait()
	t.wg.Wait()
	if sid != "" {
		dctx, cancel := context.WithTimeout(ctx, killGrace)
		if req, _, err := t.newRequest(dctx, http.MethodDelete, nil); err == nil {
			if resp, err := t.client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		cancel()
	}
	t.client.CloseIdleConnections()
	t.conn.failAll(errMCPClosed)
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// serverEnv is a server's own variables as NAME=value, in a stable order.
func serverEnv(vars map[string]string) []string {
	env := make([]string, 0, len(vars))
	for _, k := range sortedKeys(vars) {
		env = append(env, k+"="+vars[k])
	}
	return env
}
