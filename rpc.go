package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// zot rpc and --json: the one encoder of the event schema (eventWriter);
// the commands a client sends, each line read through one strict decoder
// (decodeRPCRequest); and the server that runs them against one Agent,
// one prompt at a time, queueing the rest. The approve and elicit
// command lines are rpc_approvals.go's, an MCP server's questions
// rpc_elicit.go's; wire.go builds the server's rpcConfig (runRPC).

// eventWriter writes JSON lines — events and RPC responses — through one
// lock with one Write per line, so lines from concurrent writers never
// interleave. It is the one encoder of the --json / rpc schema.
type eventWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func newEventWriter(w io.Writer) *eventWriter { return &eventWriter{w: w} }

// Write encodes v as one line. After the first write error (the reader went
// away) it stops writing and keeps reporting that error.
func (ew *eventWriter) Write(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	ew.mu.Lock()
	defer ew.mu.Unlock()
	if ew.err != nil {
		return ew.err
	}
	_, ew.err = ew.w.Write(buf.Bytes())
	return ew.err
}

// Err is the first write error: once set, the reader is gone for good.
func (ew *eventWriter) Err() error {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	return ew.err
}

// rpcProtocolVersion is the major version of the rpc schema. Within it,
// commands, events and fields are only ever added.
const rpcProtocolVersion = 1

// maxRPCLine bounds one request line: room for a prompt with images.
const maxRPCLine = 64 << 20

// rpcCommand names a command of the rpc protocol (seed 004): the "type" of
// a request line, and the "command" of its response.
type rpcCommand string

const (
	rpcHello            rpcCommand = "hello"
	rpcPrompt           rpcCommand = "prompt"
	rpcAbort            rpcCommand = "abort"
	rpcCompact          rpcCommand = "compact"
	rpcGetState         rpcCommand = "get_state"
	rpcGetMessages      rpcCommand = "get_messages"
	rpcClear            rpcCommand = "clear"
	rpcSetModel         rpcCommand = "set_model"
	rpcGetModels        rpcCommand = "get_models"
	rpcPing             rpcCommand = "ping"
	rpcReloadExtensions rpcCommand = "reload_extensions"
	rpcGetCheckpoints   rpcCommand = "get_checkpoints"
	rpcRewind           rpcCommand = "rewind"
	rpcApprove          rpcCommand = "approve"
	rpcSetMode          rpcCommand = "set_mode"
	rpcElicit           rpcCommand = "elicit"
)

// rpcCommands are the command types, in the order the docs list them.
var rpcCommands = []rpcCommand{rpcHello, rpcPrompt, rpcAbort, rpcCompact, rpcGetState, rpcGetMessages, rpcClear, rpcSetModel, rpcSetMode, rpcGetModels, rpcPing, rpcReloadExtensions, rpcGetCheckpoints, rpcRewind, rpcApprove, rpcElicit}

// rpcResponseType is the "type" of every response line; events have
// their own (EventType).
const rpcResponseType = "response"

// rpcRequest is one command line from the client, decoded. A command
// reads the fields it needs; the others, and unknown fields, are ignored.
type rpcRequest struct {
	ID      json.RawMessage
	Type    rpcCommand
	Token   string
	Message string
	Images  []rpcImage
	Model   string
	All     bool
	// Approvals (hello) says the client answers approval_request events;
	// ApprovalID and Decision (approve) are such an answer.
	Approvals  bool
	ApprovalID string
	Decision   ApprovalDecision
	// Mode (set_mode, and approve for a plan: the mode to carry it out
	// in) and Plan (approve: the plan as the client edited it).
	Mode string
	Plan string
	// Elicitation (hello) says the client answers elicitation_request
	// events; ElicitationID, Action and Content (elicit) are such an
	// answer.
	Elicitation   bool
	ElicitationID string
	Action        ElicitAction
	Content       json.RawMessage
	// rewind
	Checkpoint string
	Restore    rpcRestore
	Force      bool
}

// answer is an approve command's answer.
func (req rpcRequest) answer() approvalAnswer {
	return approvalAnswer{Decision: req.Decision, Message: req.Message, Mode: req.Mode, Plan: req.Plan}
}

// rpcRestore is what a rewind restores.
type rpcRestore string

const (
	rpcRestoreBoth         rpcRestore = "both"
	rpcRestoreFiles        rpcRestore = "files"
	rpcRestoreConversation rpcRestore = "conversation"
)

// rpcImage is an image attached to a prompt, its data base64.
type rpcImage struct {
	MimeType string `json:"mime_type"`
	Data     string `json:"data"`
}

// rpcResponse answers one command; ID echoes the request's.
type rpcResponse struct {
	Type    string          `json:"type"`
	ID      json.RawMessage `json:"id,omitempty"`
	Command rpcCommand      `json:"command,omitempty"`
	Success bool            `json:"success"`
	Data    any             `json:"data,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// Response data, one type per command that has any.
type (
	rpcHelloData struct {
		ProtocolVersion int    `json:"protocol_version"`
		Version         string `json:"version"`
		Provider        string `json:"provider"`
		Model           string `json:"model"`
		// Approvals echoes a hello's "approvals": true.
		Approvals bool `json:"approvals,omitempty"`
		// Elicitation echoes a hello's "elicitation": true.
		Elicitation bool `json:"elicitation,omitempty"`
	}
	rpcPromptData struct {
		Started  bool `json:"started,omitempty"`
		Queued   bool `json:"queued,omitempty"`
		Position int  `json:"position,omitempty"`
	}
	rpcAbortData struct {
		Aborted bool `json:"aborted"`
		Dropped int  `json:"dropped"`
	}
	rpcStateData struct {
		Provider     string `json:"provider"`
		Model        string `json:"model"`
		Cwd          string `json:"cwd"`
		MessageCount int    `json:"message_count"`
		Busy         bool   `json:"busy"`
		Queued       int    `json:"queued"`
		Usage        Usage  `json:"usage"`
		Sandbox      string `json:"sandbox"`
		// Mode is the session's mode, Modes those set_mode takes here.
		Mode  string   `json:"mode,omitempty"`
		Modes []string `json:"modes,omitempty"`
	}
	rpcModeData struct {
		Mode    string `json:"mode"`
		Sandbox string `json:"sandbox"`
	}
	rpcMessagesData struct {
		Messages []WireMessage `json:"messages"`
	}
	rpcModelsData struct {
		Models []ModelInfo `json:"models"`
	}
	rpcPongData struct {
		Pong bool `json:"pong"`
	}
)

// rpcImageTypes are the image formats both provider APIs accept.
var rpcImageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// rpcFieldNames are the top-level fields of a request, of every command.
var rpcFieldNames = []string{"id", "type", "token", "message", "images", "model", "all", "checkpoint", "restore", "force", "approvals", "approval_id", "decision", "mode", "plan", "elicitation", "elicitation_id", "action", "content"}

// decodeRPCRequest parses and checks one request line. Only the fields the
// command uses are decoded, so a stray field of another command's never
// fails it. On error the request holds what could be read (its id and
// type, for the reply).
func decodeRPCRequest(line []byte) (rpcRequest, error) {
	var req rpcRequest
	raw, keyErr := rpcFields(line)
	if raw == nil {
		return req, keyErr
	}
	// Each is read even when the other is bad, so the reply names what it can.
	typeErr := decodeRPCField("type", raw["type"], &req.Type)
	if id := raw["id"]; len(id) > 0 && string(id) != "null" {
		if id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9') {
			return req, errors.New(`field "id" must be a string or a number`)
		}
		req.ID = id
	}
	if typeErr != nil {
		return req, typeErr
	}
	if keyErr != nil {
		if req.Type == rpcHello {
			keyErr = badTokenError{keyErr} // a hello that cannot be read plainly proves nothing
		}
		return req, keyErr
	}
	if req.Type == "" {
		return req, errors.New(`missing "type": say which command, e.g. {"type":"ping"}`)
	}
	if !slices.Contains(rpcCommands, req.Type) {
		return req, fmt.Errorf("unknown command type %q; known: %s", req.Type, joinNames(rpcCommands, ", "))
	}
	var err error
	switch req.Type {
	case rpcHello:
		if err = decodeRPCField("token", raw["token"], &req.Token); err != nil {
			err = badTokenError{err}
		} else {
			err = cmp.Or(decodeRPCField("approvals", raw["approvals"], &req.Approvals),
				decodeRPCField("elicitation", raw["elicitation"], &req.Elicitation))
		}
	case rpcApprove:
		err = decodeRPCField("approval_id", raw["approval_id"], &req.ApprovalID)
		if err == nil {
			err = decodeRPCField("decision", raw["decision"], &req.Decision)
		}
		if err == nil {
			err = decodeRPCField("message", raw["message"], &req.Message)
		}
		if err == nil {
			err = cmp.Or(decodeRPCField("mode", raw["mode"], &req.Mode), decodeRPCField("plan", raw["plan"], &req.Plan))
		}
		if err == nil && req.ApprovalID == "" {
			err = errors.New(`approve needs "approval_id", from the approval_request it answers`)
		}
	case rpcElicit:
		err = cmp.Or(decodeRPCField("elicitation_id", raw["elicitation_id"], &req.ElicitationID),
			decodeRPCField("action", raw["action"], &req.Action))
		req.Content = raw["content"]
		if err == nil && req.ElicitationID == "" {
			err = errors.New(`elicit needs "elicitation_id", from the elicitation_request it answers`)
		}
	case rpcAbort:
		err = decodeRPCField("all", raw["all"], &req.All)
	case rpcPrompt:
		if err = decodeRPCField("message", raw["message"], &req.Message); err == nil {
			err = decodeRPCField("images", raw["images"], &req.Images)
		}
		if err == nil && req.Message == "" && len(req.Images) == 0 {
			err = errors.New(`prompt needs "message" (or "images")`)
		}
		for i := 0; err == nil && i < len(req.Images); i++ {
			if ierr := checkRPCImage(req.Images[i]); ierr != nil {
				err = fmt.Errorf("images[%d]: %v", i, ierr)
			}
		}
	case rpcSetMode:
		err = decodeRPCField("mode", raw["mode"], &req.Mode)
		if err == nil && req.Mode == "" {
			err = errors.New(`set_mode needs "mode", e.g. {"type":"set_mode","mode":"plan"}`)
		}
	case rpcSetModel:
		err = decodeRPCField("model", raw["model"], &req.Model)
		if err == nil && strings.TrimSpace(req.Model) == "" {
			err = errors.New(`set_model needs "model", e.g. {"type":"set_model","model":"claude-sonnet-4-5"}`)
		}
	case rpcRewind:
		err = cmp.Or(decodeRPCField("checkpoint", raw["checkpoint"], &req.Checkpoint),
			decodeRPCField("restore", raw["restore"], &req.Restore),
			decodeRPCField("force", raw["force"], &req.Force))
		switch req.Restore {
		case "":
			req.Restore = rpcRestoreBoth
		case rpcRestoreBoth, rpcRestoreFiles, rpcRestoreConversation:
		default:
			err = cmp.Or(err, fmt.Errorf(`"restore" %q is not one of %s, %s, %s`, req.Restore, rpcRestoreBoth, rpcRestoreFiles, rpcRestoreConversation))
		}
	}
	return req, err
}

// rpcFields splits a request line into its top-level fields by exact key.
// encoding/json would take "TOKEN" for a field tagged "token" and let a
// second "token" replace the first, so one line could mean one thing to a
// reader (a proxy, a log, a test) and another to zot. A repeated key, or
// a key that differs from a field's name only in case, is an error; the
// fields are returned with it, so the reply can still carry the id and
// command. A line that is not a JSON object returns no fields.
func rpcFields(line []byte) (map[string]json.RawMessage, error) {
	fields, err := strictObjectKeys(line, rpcFieldNames)
	if fields == nil && err == nil {
		tok, _ := json.NewDecoder(bytes.NewReader(line)).Token()
		return nil, fmt.Errorf("invalid request: want a JSON object, got %s", jsonTokenKind(tok))
	}
	return fields, err
}

// jsonTokenKind names the JSON type of a value's first token.
func jsonTokenKind(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	}
	return "null"
}

// decodeRPCField decodes one field's raw value; absent and null leave dst
// as it is. A wrong type is an error naming the field.
func decodeRPCField(name string, raw json.RawMessage, dst any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	err := json.Unmarshal(raw, dst)
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field != "" {
			name += "." + typeErr.Field
		}
		return fmt.Errorf("field %q must be %s, not %s", name, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	}
	if err != nil {
		return fmt.Errorf("field %q: %v", name, err)
	}
	return nil
}

// jsonKind names a Go kind as a JSON type, for error messages.
func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return "a " + goKind
}

func checkRPCImage(img rpcImage) error {
	if !slices.Contains(rpcImageTypes, img.MimeType) {
		return fmt.Errorf(`"mime_type" %q is not one of %s`, img.MimeType, strings.Join(rpcImageTypes, ", "))
	}
	if img.Data == "" {
		return errors.New(`"data" is empty; want the image as base64`)
	}
	// Stream the check so a 48 MiB image is not decoded into memory.
	if _, err := io.Copy(io.Discard, base64.NewDecoder(base64.StdEncoding, strings.NewReader(img.Data))); err != nil {
		return fmt.Errorf(`"data" is not base64: %v`, err)
	}
	return nil
}

// rpcConfig is what the server serves and what wire.go plugs into it.
type rpcConfig struct {
	Agent    *Agent
	Provider string
	Cwd      string
	Sandbox  string // the mode commands run in (docs/sandbox.md)
	// Token is ZOTCORE_RPC_TOKEN; when set, the first command must be a
	// hello carrying it.
	Token string
	// ReloadExtensions reloads the extension host; nil answers
	// reload_extensions with "no extension host".
	ReloadExtensions func(ctx context.Context) (rpcReloadStats, error)
	// Observe receives every event of every prompt and compaction as the
	// agent emits it (done included), beside the client.
	Observe Sink
	// Checkpoints lists and restores the checkpoints of this run's
	// session (get_checkpoints, rewind); nil answers that they are off.
	Checkpoints rpcCheckpoints
	// Prompt runs a prompt command (a message starting with /name may be
	// a prompt template); nil is the agent's Prompt.
	Prompt func(ctx context.Context, text string, images []Block, sink Sink) error
	Log    func(format string, args ...any)
	// Approvals keeps an approving client's "always" answers; nil: a
	// session's own. ApprovalTimeout bounds the wait for an answer (0:
	// defaultApprovalTimeout).
	Approvals       *sessionApprovals
	ApprovalTimeout time.Duration
	// Modes is the session's mode (get_state, set_mode, mode_changed);
	// nil: the session has none.
	Modes *Modes
}

// rpcCheckpoints is what get_checkpoints and rewind use (wire.go's).
type rpcCheckpoints interface {
	// List is the session's checkpoints, oldest first, each encoded as
	// zot checkpoints list --json writes it.
	List() ([]json.RawMessage, error)
	// Rewind restores what req asks. It runs only while no job runs.
	Rewind(req rpcRequest) (rpcRewindData, error)
}

// rpcCheckpointsData is get_checkpoints' data.
type rpcCheckpointsData struct {
	Checkpoints []json.RawMessage `json:"checkpoints"`
}

// rpcRewindData is rewind's data: the checkpoint restored, what the files
// restore did (Undo is the checkpoint that undoes it), and how many
// messages the conversation kept.
type rpcRewindData struct {
	Checkpoint string   `json:"checkpoint"`
	Restored   []string `json:"restored"`
	Removed    []string `json:"removed"`
	Left       []string `json:"left"`
	Undo       string   `json:"undo,omitempty"`
	Messages   *int     `json:"messages,omitempty"`
}

// rpcReloadStats is reload_extensions' data: what the reload did.
type rpcReloadStats struct {
	Stopped int      `json:"stopped"`
	Loaded  int      `json:"loaded"`
	Ready   int      `json:"ready"`
	Errors  []string `json:"errors"`
}

// rpcNote is a line for the client from what runs beside the agent: an
// extension's notify (Extension is its name), or zot's own about MCP
// servers ("mcp:NAME"), hooks ("hooks") or the extension host
// ("extensions"). Clear retracts Extension's notes.
type rpcNote struct {
	Extension string
	Level     string
	Message   string
	Clear     bool
}

// rpcJob is one prompt or compaction, queued or running.
type rpcJob struct {
	kind   rpcCommand // rpcPrompt or rpcCompact
	text   string
	images []Block
	ctx    context.Context
	cancel context.CancelFunc
}

// rpcServer serves the rpc protocol on one input and one output. Serve
// reads commands and answers them in arrival order; one worker goroutine
// runs prompts and compactions one at a time. Every output line, responses
// and events alike, goes through out.
type rpcServer struct {
	rpcConfig
	in  io.Reader
	out *eventWriter

	// broken closes (once) when a write to out fails: the client is gone.
	broken     chan struct{}
	brokenOnce sync.Once
	reloadMu   sync.Mutex // one reload at a time
	reloads    sync.WaitGroup

	mu     sync.Mutex
	cond   *sync.Cond // signalled when jobs grows or closed is set
	jobs   []*rpcJob  // jobs[0] is running (or about to); the rest wait in order
	closed bool       // no job will be added; the worker drains and exits
	authed bool
	held   []Event // extension notes that came before hello
	// clientApproves is set by a hello with "approvals": true: asks go
	// to the client (approvals), else they are refused as before.
	clientApproves bool
	approvals      *approvalBroker
	// clientElicits is set by a hello with "elicitation": true: the MCP
	// servers' questions go to the client, else they are declined.
	clientElicits bool
	elicits       *elicitBroker
}

// maxHeldNotes bounds the notes kept for a client that has not said hello.
const maxHeldNotes = 256

// badTokenError is a hello whose token cannot be read plainly: not a
// string, repeated, or under a key of another case.
type badTokenError struct{ error }

// errRPCAuth ends the server after a hello with the wrong token.
var errRPCAuth = errors.New("rpc: hello did not carry the ZOTCORE_RPC_TOKEN token")

func newRPCServer(cfg rpcConfig, in io.Reader, out io.Writer) *rpcServer {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	if cfg.Approvals == nil {
		cfg.Approvals = newSessionApprovals(cfg.Cwd, nil, nil)
	}
	s := &rpcServer{rpcConfig: cfg, in: in, out: newEventWriter(out), broken: make(chan struct{}), authed: cfg.Token == ""}
	s.cond = sync.NewCond(&s.mu)
	s.approvals = newApprovalBroker(cfg.ApprovalTimeout, func(e approvalRequestEvent) { s.write(e) })
	cfg.Modes.Hear(func(m Mode) { s.event(Event{Type: EventModeChanged, Mode: string(m), Sandbox: cfg.Modes.Sandbox(m)}) })
	s.elicits = newElicitBroker(cfg.ApprovalTimeout, func(e elicitationRequestEvent) { s.write(e) })
	return s
}

// Serve answers commands until the input ends, then finishes the running
// and queued work and returns nil. Cancelling ctx aborts the work, gives
// every prompt its done, and returns ctx's error. A failed write (the
// client stopped reading) aborts the work too and returns the write error;
// a hello with the wrong token returns errRPCAuth.
func (s *rpcServer) Serve(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	lines := make(chan inputLine)
	quit := make(chan struct{})
	defer close(quit)
	// The reader is Serve's; it ends at the end of the input, or once quit
	// closes and its current read returns.
	go sendLines(s.in, maxRPCLine, lines, quit)
	workerDone := make(chan struct{})
	// The worker is Serve's; it ends when closed is set and the queue is empty.
	go func() {
		defer close(workerDone)
		s.work()
	}()

	var err error
	broken := s.broken
read:
	for {
		select {
		case l := <-lines:
			if len(l.data) > 0 || l.tooLong {
				if err = s.handle(ctx, l); err != nil {
					cancel()
					break read
				}
			}
			if l.err != nil {
				if l.err != io.EOF {
					err = fmt.Errorf("read commands: %w", l.err)
				}
				break read
			}
		case <-ctx.Done():
			break read
		case <-broken:
			cancel()
			break read
		}
	}
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	for done := false; !done; {
		select {
		case <-workerDone:
			done = true
		case <-broken:
			cancel()
			broken = nil // a nil channel never fires: cancel once
		}
	}
	s.reloads.Wait()
	switch {
	case err != nil:
		return err
	case parent.Err() != nil:
		return parent.Err()
	case s.out.Err() != nil:
		return fmt.Errorf("write to client: %w", s.out.Err())
	}
	return nil
}

// handle answers one line. It returns an error only when the server must
// stop (a failed hello).
func (s *rpcServer) handle(ctx context.Context, l inputLine) error {
	if l.tooLong {
		s.reply(rpcRequest{}, nil, fmt.Errorf("request line longer than %d MiB: dropped; send fewer or smaller images", maxRPCLine>>20))
		return nil
	}
	if len(bytes.TrimSpace(l.data)) == 0 {
		return nil
	}
	req, err := decodeRPCRequest(l.data)
	if err != nil {
		s.reply(req, nil, err)
		if errors.As(err, new(badTokenError)) && s.Token != "" {
			return errRPCAuth // a token that is not even a string is a wrong one
		}
		return nil
	}
	if req.Type == rpcHello {
		return s.hello(req)
	}
	s.mu.Lock()
	authed := s.authed
	s.mu.Unlock()
	if !authed {
		s.reply(req, nil, errors.New("auth required"))
		return nil
	}
	switch req.Type {
	case rpcPrompt:
		images := make([]Block, 0, len(req.Images))
		for _, img := range req.Images {
			images = append(images, Block{Type: BlockImage, MimeType: img.MimeType, Data: img.Data})
		}
		s.enqueue(ctx, req, &rpcJob{kind: rpcPrompt, text: req.Message, images: images})
	case rpcCompact:
		s.enqueue(ctx, req, &rpcJob{kind: rpcCompact})
	case rpcAbort:
		s.reply(req, s.abort(req.All), nil)
	case rpcGetState:
		s.reply(req, s.state(), nil)
	case rpcGetMessages:
		s.reply(req, rpcMessagesData{Messages: WireMessages(s.Agent.Messages())}, nil)
	case rpcClear:
		s.reply(req, nil, s.whenIdle("clear", s.Agent.Clear))
	case rpcSetMode:
		m, err := ParseMode(req.Mode)
		if err == nil {
			err = s.Modes.Set(m)
		}
		if err != nil {
			err = fmt.Errorf("set_mode: %w", err)
		}
		s.reply(req, rpcModeData{Mode: string(m), Sandbox: s.sandboxMode()}, err)
	case rpcSetModel:
		model := strings.TrimSpace(req.Model)
		s.reply(req, nil, s.whenIdle("set_model", func() error { return s.Agent.SetModel(model) }))
	case rpcGetModels:
		models := modelsFor(s.Provider)
		sort.SliceStable(models, func(i, j int) bool { return models[i].ID < models[j].ID })
		if models == nil {
			models = []ModelInfo{}
		}
		s.reply(req, rpcModelsData{Models: models}, nil)
	case rpcPing:
		s.reply(req, rpcPongData{Pong: true}, nil)
	case rpcReloadExtensions:
		s.reload(ctx, req)
	case rpcGetCheckpoints, rpcRewind:
		s.checkpoints(req)
	case rpcApprove:
		s.reply(req, nil, s.approvals.answer(req.ApprovalID, req.answer()))
	case rpcElicit:
		s.reply(req, nil, s.elicits.answer(req.ElicitationID, req.Action, req.Content))
	}
	return nil
}

// checkpoints answers get_checkpoints and rewind; rewind waits for no
// job, as clear does.
func (s *rpcServer) checkpoints(req rpcRequest) {
	if s.Checkpoints == nil {
		s.reply(req, nil, errors.New(`checkpoints are off ("checkpoints": {"enabled": false} in config.json)`))
		return
	}
	if req.Type == rpcGetCheckpoints {
		list, err := s.Checkpoints.List()
		if list == nil {
			list = []json.RawMessage{}
		}
		s.reply(req, rpcCheckpointsData{Checkpoints: list}, err)
		return
	}
	var data rpcRewindData
	err := s.whenIdle(string(rpcRewind), func() (err error) {
		data, err = s.Checkpoints.Rewind(req)
		return err
	})
	s.reply(req, data, err)
}

// hello checks the token (when one is set) and lets the client in,
// handing it the extension notes that came before.
func (s *rpcServer) hello(req rpcRequest) error {
	if s.Token != "" && !tokenMatches(req.Token, s.Token) {
		why := errors.New(`invalid token: it does not match ZOTCORE_RPC_TOKEN`)
		if req.Token == "" {
			why = errors.New(`hello needs "token": ZOTCORE_RPC_TOKEN is set`)
		}
		s.reply(req, nil, why)
		return errRPCAuth
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authed = true
	if req.Approvals {
		s.clientApproves = true
	}
	if req.Elicitation {
		s.clientElicits = true
	}
	s.reply(req, rpcHelloData{ProtocolVersion: rpcProtocolVersion, Version: version, Provider: s.Provider, Model: s.Agent.CurrentModel(),
		Approvals: s.clientApproves, Elicitation: s.clientElicits}, nil)
	for _, e := range s.held {
		s.write(e)
	}
	s.held = nil
	return nil
}

// tokenMatches compares in constant time; hashing first hides the length.
func tokenMatches(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// enqueue adds a prompt or compaction and answers at once: started, or
// queued behind position others. The answer is written under the lock,
// before the worker can see the job, so it precedes the job's events.
func (s *rpcServer) enqueue(ctx context.Context, req rpcRequest, j *rpcJob) {
	j.ctx, j.cancel = context.WithCancel(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	ack := rpcPromptData{Started: true}
	if len(s.jobs) > 0 {
		ack = rpcPromptData{Queued: true, Position: 1 + s.waiting()}
	}
	s.jobs = append(s.jobs, j)
	s.reply(req, ack, nil)
	s.cond.Signal()
}

// abort cancels the running job and, with all, every queued one. Each
// still ends with its done, in queue order.
func (s *rpcServer) abort(all bool) rpcAbortData {
	s.mu.Lock()
	defer s.mu.Unlock()
	var d rpcAbortData
	if len(s.jobs) > 0 {
		s.jobs[0].cancel()
		d.Aborted = true
	}
	if all && len(s.jobs) > 1 {
		for _, j := range s.jobs[1:] {
			j.cancel()
		}
		d.Dropped = len(s.jobs) - 1
	}
	return d
}

// waiting counts the queued jobs that will still run: those dropped by an
// abort stay in the queue until the worker gives them their done, but
// nothing waits behind them. The caller holds s.mu.
func (s *rpcServer) waiting() int {
	n := 0
	for _, j := range s.jobs[min(1, len(s.jobs)):] {
		if j.ctx.Err() == nil {
			n++
		}
	}
	return n
}

// sandboxMode is what commands run in now: the mode's sandbox, else the
// run's.
func (s *rpcServer) sandboxMode() string {
	if s.Modes != nil {
		return s.Modes.Sandbox(s.Modes.Current())
	}
	if s.Sandbox == "" {
		return "off"
	}
	return s.Sandbox
}

func (s *rpcServer) state() rpcStateData {
	s.mu.Lock()
	busy, queued := len(s.jobs) > 0, s.waiting()
	s.mu.Unlock()
	cum, _ := s.Agent.Totals()
	return rpcStateData{
		Provider:     s.Provider,
		Model:        s.Agent.CurrentModel(),
		Cwd:          s.Cwd,
		MessageCount: len(s.Agent.Messages()),
		Busy:         busy,
		Queued:       queued,
		Usage:        cum,
		Sandbox:      s.sandboxMode(),
		Mode:         string(s.Modes.Current()),
		Modes:        modeNames(s.Modes.Available()),
	}
}

func modeNames(ms []Mode) []string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m))
	}
	return out
}

// whenIdle runs change only while no job runs or waits. Holding the lock
// keeps a job from starting meanwhile: only enqueue adds one, and it runs
// on this same goroutine.
func (s *rpcServer) whenIdle(what string, change func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.jobs) > 0 {
		return fmt.Errorf("%s: %w; send abort or wait for done, then try again", what, ErrBusy)
	}
	if err := change(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// reload runs the extension reload off the command loop, so abort and
// ping still answer while extensions start.
func (s *rpcServer) reload(ctx context.Context, req rpcRequest) {
	if s.ReloadExtensions == nil {
		s.reply(req, nil, errors.New("no extension host: extensions are not loaded in this process"))
		return
	}
	s.reloads.Add(1)
	// Serve waits for this goroutine; it ends when the reload returns.
	go func() {
		defer s.reloads.Done()
		s.reloadMu.Lock()
		defer s.reloadMu.Unlock()
		stats, err := s.ReloadExtensions(ctx)
		if err != nil {
			s.reply(req, nil, fmt.Errorf("reload extensions: %w", err))
			return
		}
		if stats.Errors == nil {
			stats.Errors = []string{}
		}
		s.reply(req, stats, nil)
	}()
}

// work runs the queue's jobs one at a time, in order. A job's done is
// written after it has left the queue and the agent is idle, so a client
// that reads done and sends clear at once finds the server idle.
func (s *rpcServer) work() {
	for {
		s.mu.Lock()
		for len(s.jobs) == 0 && !s.closed {
			s.cond.Wait()
		}
		if len(s.jobs) == 0 {
			s.mu.Unlock()
			return
		}
		j := s.jobs[0]
		s.mu.Unlock()

		s.run(j)

		s.mu.Lock()
		s.jobs[0] = nil
		s.jobs = s.jobs[1:]
		s.mu.Unlock()
		j.cancel()
		s.write(Event{Type: EventDone})
	}
}

// run runs one job up to, not including, its done. A job aborted before it
// started gets nothing but its done.
func (s *rpcServer) run(j *rpcJob) {
	if j.ctx.Err() != nil {
		return
	}
	sink := TeeSinks(s.emit, s.Observe)
	var err error
	switch {
	case j.kind == rpcPrompt && s.Prompt != nil:
		err = s.Prompt(j.ctx, j.text, j.images, sink)
	case j.kind == rpcPrompt:
		err = s.Agent.Prompt(j.ctx, j.text, j.images, sink)
	case j.kind == rpcCompact:
		err = s.Agent.Compact(j.ctx, sink)
	}
	if errors.Is(err, ErrBusy) {
		s.write(Event{Type: EventError, Message: string(j.kind) + ": " + err.Error()})
	}
}

// emit passes the agent's events to the client, all but done, which the
// worker writes itself once the job has left the queue.
func (s *rpcServer) emit(e Event) {
	if e.Type != EventDone {
		s.write(e)
	}
}

// Notify sends a note to the client as an ext_notify event. Notes that
// come before a required hello wait for it (the first maxHeldNotes of
// them). A clear_notes has nothing to retract from a stream and is
// dropped.
func (s *rpcServer) Notify(n rpcNote) {
	if n.Clear {
		return
	}
	s.event(Event{Type: EventExtNotify, Extension: n.Extension, Level: n.Level, Message: n.Message})
}

// event sends an event that belongs to no prompt (a note, a change of
// mode), held like the notes until a required hello.
func (s *rpcServer) event(e Event) {
	s.mu.Lock()
	if !s.authed {
		if len(s.held) < maxHeldNotes {
			s.held = append(s.held, e)
		}
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.write(e)
}

// Asker is who answers a question now: the client, when it said hello
// with "approvals": true; else nil.
func (s *rpcServer) Asker() approvalAsker {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.clientApproves {
		return nil
	}
	return s.approvals.ask
}

// Confirm is the ConfirmFunc of rpc: a client that said hello with
// "approvals": true is asked; for any other, refuse answers, as before.
func (s *rpcServer) Confirm(refuse ConfirmFunc) ConfirmFunc {
	ask := s.Approvals.Confirm(s.approvals.ask)
	refuse = s.Approvals.CoverOr(refuse)
	return func(ctx context.Context, call ToolCall, asks []GateNote) (bool, string) {
		s.mu.Lock()
		approves := s.clientApproves
		s.mu.Unlock()
		if approves {
			return ask(ctx, call, asks)
		}
		return refuse(ctx, call, asks)
	}
}

// Elicit is the Elicitor's Ask of rpc: a client that said hello with
// "elicitation": true is asked; for any other the question is declined,
// and the server told why.
func (s *rpcServer) Elicit(ctx context.Context, q Elicitation) ElicitAnswer {
	s.mu.Lock()
	elicits := s.clientElicits
	s.mu.Unlock()
	if !elicits {
		return ElicitAnswer{Action: ElicitDecline, Why: `(the rpc client did not say hello with "elicitation": true)`}
	}
	return s.elicits.ask(ctx, q)
}

// reply answers req with data, or with err when it is not nil.
func (s *rpcServer) reply(req rpcRequest, data any, err error) {
	r := rpcResponse{Type: rpcResponseType, ID: req.ID, Command: req.Type, Success: err == nil, Data: data}
	if err != nil {
		r.Data, r.Error = nil, err.Error()
	}
	s.write(r)
}

// write sends one line. A failed write means the client is gone: the
// server stops.
func (s *rpcServer) write(v any) {
	if err := s.out.Write(v); err != nil {
		if s.out.Err() != nil {
			s.brokenOnce.Do(func() { close(s.broken) })
			return
		}
		s.Log("rpc: encode %T: %v", v, err)
	}
}

// rpcTokenFromEnv reads ZOTCORE_RPC_TOKEN once and removes it from zot's
// environment, so that neither the tools nor the extensions, nor the model
// through them, can read it back.
func rpcTokenFromEnv() (string, error) {
	token, set := os.LookupEnv("ZOTCORE_RPC_TOKEN")
	os.Unsetenv("ZOTCORE_RPC_TOKEN")
	if set && token == "" {
		// Probably a variable that did not expand: running open would
		// turn a mistake into no auth at all.
		return "", usageError{"ZOTCORE_RPC_TOKEN is set but empty: set it to the shared secret, or unset it to run without auth"}
	}
	return token, nil
}

// rpcOutput is what the server writes to: stdout, or, for a pipe or a
// socket, a copy whose writes get a deadline rpcLastLinesGrace after ctx
// ends. A client that stopped reading would otherwise hold a write, and
// with it the whole shutdown, forever. release undoes it.
func rpcOutput(ctx context.Context, stdout io.Writer) (out io.Writer, release func()) {
	f, ok := stdout.(*os.File)
	if !ok {
		return stdout, func() {}
	}
	pf, restore := pollableOutput(f)
	if pf == nil {
		return stdout, func() {}
	}
	stopDeadline := context.AfterFunc(ctx, func() { pf.SetWriteDeadline(time.Now().Add(rpcLastLinesGrace)) })
	return pf, func() {
		stopDeadline()
		restore()
	}
}

// rpcLastLinesGrace is how long, after a signal, the client has to read
// the last lines before zot stops waiting for it.
const rpcLastLinesGrace = 2 * time.Second

// pollableOutput opens a copy of a pipe or socket stdout in non-blocking
// mode, so that a write to a client that stopped reading can be given a
// deadline. The mode belongs to the pipe, which others may share (`(zot rpc;
// echo done) | client`): restore closes the copy and makes it blocking
// again. A terminal is left alone: were zot killed, the shell would be left
// with a non-blocking terminal.
func pollableOutput(f *os.File) (pf *os.File, restore func()) {
	info, err := f.Stat()
	if err != nil || info.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return nil, nil
	}
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return nil, nil
	}
	if syscall.SetNonblock(fd, true) != nil {
		syscall.Close(fd)
		return nil, nil
	}
	pf = os.NewFile(uintptr(fd), f.Name())
	return pf, func() {
		pf.Close()
		syscall.SetNonblock(int(f.Fd()), false)
	}
}
