package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// This file is one extension process: spawning it, the frames it reads and
// writes, the calls that wait for its answers, its log, and stopping it.
// ext.go builds the manager on top.

// extLimits are the protocol's timeouts and sizes. Tests shorten them.
type extLimits struct {
	hello     time.Duration // spawn → hello
	idle      time.Duration // silence after which an extension counts as ready
	startup   time.Duration // Start waits this long for all extensions together
	command   time.Duration // command_invoked → command_response
	tool      time.Duration // tool_call → tool_result
	intercept time.Duration // event_intercept → event_intercept_response
	grace     time.Duration // shutdown → exit, before SIGTERM
	term      time.Duration // SIGTERM → exit, before SIGKILL
	gone      time.Duration // a failed write to stdin → dead, if stdout has not ended by then
	queue     int           // events waiting for one extension before the oldest are dropped
	maxFrame  int           // longest line an extension may write
	maxLog    int64         // log size that triggers rotation
}

var defaultExtLimits = extLimits{
	hello:     5 * time.Second,
	idle:      250 * time.Millisecond,
	startup:   3 * time.Second,
	command:   30 * time.Second,
	tool:      60 * time.Second,
	intercept: 5 * time.Second,
	grace:     2 * time.Second,
	term:      time.Second,
	gone:      time.Second,
	queue:     1024,
	maxFrame:  8 << 20,
	maxLog:    5 << 20,
}

// extProc is one running extension. Its process runs in a session of its
// own, as a lineChild (proc.go); four goroutines serve it, each started in
// spawn: the child's reader (owns stdout; readFrame routes replies to
// waiting calls), its stderr copier (into the log) and its waiter (reaps
// the process), and the writer (owns stdin, drains the queue). All four
// end once the session is gone; stop guarantees that and waits for them.
type extProc struct {
	m       *ExtManager
	mf      *extManifest
	logPath string
	dataDir string
	log     *extLog
	proc    *proc
	child   *lineChild
	q       *extQueue

	helloSeen  atomic.Bool
	stopping   atomic.Bool
	helloTimer *time.Timer
	idleTimer  *time.Timer

	ready      chan struct{} // closed at ready (frame or idle)
	dead       chan struct{} // closed when the extension can no longer answer
	readerDone chan struct{}
	writerDone chan struct{}
	readyOnce  sync.Once
	failOnce   sync.Once
	stopOnce   sync.Once

	mu        sync.Mutex // guards the fields below
	err       error      // why the extension is dead
	exitState string     // "exit status 3", once reaped
	pending   map[string]extWaiter
	commands  []extRegistration
	tools     []extRegistration
	events    map[extEventName]bool
	intercept map[extEventName]bool
	logged    map[string]bool // shadowed names already written to the log
	shadowed  []string        // names lost to conflicts, from the last sync
	refused   []string        // what admit refused, once each: "intercept tool_call"
	stateKey  string          // what the state file holds

	stateMu sync.Mutex // serialises writes of the state file
}

// extRegistration is a command or tool an extension registered.
type extRegistration struct {
	Name        string
	Description string
	Schema      json.RawMessage // tools only
}

type extWaiter struct {
	want extFrame // the reply type expected
	ch   chan extMsg
}

// extFrame names a frame of extension protocol v1 (docs/extensions.md):
// the value of its "type".
type extFrame string

// Extension → host frames.
const (
	frameHello             extFrame = "hello"
	frameRegisterCommand   extFrame = "register_command"
	frameRegisterTool      extFrame = "register_tool"
	frameSubscribe         extFrame = "subscribe"
	frameReady             extFrame = "ready"
	frameNotify            extFrame = "notify"
	frameClearNotes        extFrame = "clear_notes"
	frameCommandResponse   extFrame = "command_response"
	frameToolResult        extFrame = "tool_result"
	frameInterceptResponse extFrame = "event_intercept_response"
	framePanelRender       extFrame = "panel_render"
	framePanelClose        extFrame = "panel_close" // both ways
	frameShutdownAck       extFrame = "shutdown_ack"
)

// Host → extension frames.
const (
	frameHelloAck       extFrame = "hello_ack"
	frameCommandInvoked extFrame = "command_invoked"
	frameToolCall       extFrame = "tool_call"
	frameEvent          extFrame = "event"
	frameEventIntercept extFrame = "event_intercept"
	framePanelKey       extFrame = "panel_key"
	frameShutdown       extFrame = "shutdown"
)

// Host → extension frames. Each struct has exactly the fields of its frame.

type hostHelloAck struct {
	Type            extFrame `json:"type"`
	ProtocolVersion int      `json:"protocol_version"`
	ZotVersion      string   `json:"zot_version"`
	Provider        string   `json:"provider"`
	Model           string   `json:"model"`
	Cwd             string   `json:"cwd"`
	ExtensionDir    string   `json:"extension_dir"`
	DataDir         string   `json:"data_dir"`
}

type hostCommandInvoked struct {
	Type extFrame `json:"type"`
	ID   string   `json:"id"`
	Name string   `json:"name"`
	Args string   `json:"args"`
}

type hostToolCall struct {
	Type extFrame        `json:"type"`
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type hostPanelFrame struct {
	Type    extFrame `json:"type"` // panel_key or panel_close
	PanelID string   `json:"panel_id"`
	Key     string   `json:"key,omitempty"`
	Text    string   `json:"text,omitempty"`
}

type hostShutdown struct {
	Type extFrame `json:"type"`
}

// extEvent is a lifecycle event as extensions see it, in an event frame
// (ID empty) or an event_intercept frame.
type extEvent struct {
	Frame    extFrame // frameEvent or frameEventIntercept
	ID       string
	Name     extEventName
	Step     int
	ToolID   string
	ToolName string
	ToolArgs json.RawMessage
	Stop     string
	Error    string
	Text     string
}

// MarshalJSON writes exactly the fields each event has.
func (e extEvent) MarshalJSON() ([]byte, error) {
	type wire struct {
		Type     extFrame        `json:"type"`
		ID       string          `json:"id,omitempty"`
		Event    extEventName    `json:"event"`
		Step     *int            `json:"step,omitempty"`
		ToolID   *string         `json:"tool_id,omitempty"`
		ToolName *string         `json:"tool_name,omitempty"`
		ToolArgs json.RawMessage `json:"tool_args,omitempty"`
		Stop     *string         `json:"stop,omitempty"`
		Refusal  bool            `json:"refusal,omitempty"`
		Error    string          `json:"error,omitempty"`
		Text     *string         `json:"text,omitempty"`
	}
	w := wire{Type: e.Frame, ID: e.ID, Event: e.Name}
	switch e.Name {
	case extEventTurnStart:
		w.Step = &e.Step
	case extEventToolCall:
		w.ToolID, w.ToolName, w.ToolArgs = &e.ToolID, &e.ToolName, argsJSON(e.ToolArgs)
	case extEventTurnEnd:
		stop, refusal := wireStop(e.Stop)
		w.Stop, w.Refusal, w.Error = &stop, refusal, e.Error
	case extEventAssistantMessage:
		w.Text = &e.Text
	}
	return json.Marshal(w)
}

// extMsg is every extension → host frame: one struct with the fields of all
// of them, told apart by Type. Unknown fields are ignored.
type extMsg struct {
	Type         extFrame        `json:"type"`
	ID           extID           `json:"id"`
	Name         string          `json:"name"`
	Version      string          `json:"version"`
	Capabilities []string        `json:"capabilities"`
	Description  string          `json:"description"`
	Schema       json.RawMessage `json:"schema"`
	Events       []extEventName  `json:"events"`
	Intercept    []extEventName  `json:"intercept"`
	Content      []extBlock      `json:"content"`
	IsError      bool            `json:"is_error"`
	Block        bool            `json:"block"`
	Reason       string          `json:"reason"`
	ModifiedArgs json.RawMessage `json:"modified_args"`
	ReplaceText  string          `json:"replace_text"`
	Action       string          `json:"action"`
	Prompt       string          `json:"prompt"`
	Insert       string          `json:"insert"`
	Display      string          `json:"display"`
	Error        string          `json:"error"`
	OpenPanel    *ExtPanel       `json:"open_panel"`
	Level        string          `json:"level"`
	Message      string          `json:"message"`
	PanelID      string          `json:"panel_id"`
	Title        string          `json:"title"`
	Lines        []string        `json:"lines"`
	Footer       string          `json:"footer"`

	err error // set on a reply that did not decode
}

// extBlock is a content block of a tool_result.
type extBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	MimeType string `json:"mime_type"`
	Data     string `json:"data"`
}

// extID is a correlation id. The host sends strings; an extension that
// echoes one back as a number is understood too.
type extID string

func (id *extID) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = extID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("id must be a string")
	}
	*id = extID(n.String())
	return nil
}

// decodeExtMsg parses one line. On a type error the fields that did decode
// (Type and ID, usually) are kept, so a malformed reply can still fail the
// call waiting for it.
func decodeExtMsg(line []byte) (extMsg, error) {
	var msg extMsg
	err := decodeStrictJSON(line, &msg)
	if err == nil && msg.Type == "" {
		err = errors.New(`frame has no "type"`)
	}
	return msg, err
}

// encodeFrame is the one writer of host → extension frames: compact JSON
// and a newline. Only a json.RawMessage field that is not valid JSON can
// make it fail.
func encodeFrame(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode frame for extension: %w", err)
	}
	return buf.Bytes(), nil
}

// extQueue holds the frames waiting to be written to one extension, in the
// order they were produced. Events are dropped oldest first when more than
// max wait; requests and answers never are.
type extQueue struct {
	mu      sync.Mutex
	items   []extOut
	events  int
	max     int
	dropped int
	closed  bool
	wake    chan struct{}
}

type extOut struct {
	line  []byte
	id    string // a request: skipped when its caller gave up
	event bool
	last  bool // shutdown: close stdin after it
}

func newExtQueue(max int) *extQueue {
	return &extQueue{max: max, wake: make(chan struct{}, 1)}
}

func (q *extQueue) push(o extOut) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	if o.event {
		if q.events >= q.max {
			for i, it := range q.items {
				if it.event {
					q.items = append(q.items[:i], q.items[i+1:]...)
					q.events--
					q.dropped++
					break
				}
			}
		}
		q.events++
	}
	q.items = append(q.items, o)
	if o.last {
		q.closed = true
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// pop waits for the next frame. ok is false once the queue is closed and
// empty. dropped counts events lost since the last pop.
func (q *extQueue) pop() (o extOut, dropped int, ok bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			o = q.items[0]
			q.items[0] = extOut{}
			q.items = q.items[1:]
			if o.event {
				q.events--
			}
			dropped, q.dropped = q.dropped, 0
			q.mu.Unlock()
			return o, dropped, true
		}
		if q.closed {
			q.mu.Unlock()
			return extOut{}, 0, false
		}
		q.mu.Unlock()
		<-q.wake
	}
}

// close drops what is waiting and ends the writer.
func (q *extQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.items = nil
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// extLog is an extension's log file: its stderr and the host's notes about
// it. At maxLog bytes it is renamed to .1 (replacing the previous one) and
// started afresh, so two files of at most maxLog bytes exist per extension.
type extLog struct {
	mu   sync.Mutex
	path string
	f    *os.File
	size int64
	max  int64
}

func openExtLog(path string, max int64) (*extLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	l := &extLog{path: path, f: f, max: max}
	if st, err := f.Stat(); err == nil {
		l.size = st.Size()
	}
	return l, nil
}

func (l *extLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return len(b), nil
	}
	if l.size > 0 && l.size+int64(len(b)) > l.max {
		l.f.Close()
		os.Rename(l.path, l.path+".1")
		f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			l.f = nil
			return len(b), nil
		}
		l.f, l.size = f, 0
	}
	n, err := l.f.Write(b)
	l.size += int64(n)
	return n, err
}

// Printf writes one line from the host, marked as such.
func (l *extLog) Printf(format string, args ...any) {
	line := time.Now().UTC().Format(time.RFC3339) + " [zot] " + fmt.Sprintf(format, args...) + "\n"
	l.Write([]byte(line))
}

func (l *extLog) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// resolveExec finds the program a manifest names: an absolute path as is, a
// path with a separator relative to the manifest's directory, a bare name
// through $PATH.
func resolveExec(mf *extManifest) (string, error) {
	e := mf.Exec
	switch {
	case filepath.IsAbs(e):
		return e, nil
	case strings.ContainsRune(e, filepath.Separator) || strings.ContainsRune(e, '/'):
		return filepath.Join(mf.Dir, e), nil
	}
	p, err := exec.LookPath(e)
	if err != nil {
		return "", fmt.Errorf("exec %q is not in $PATH", e)
	}
	return p, nil
}

// execExists says what to do when the manifest's exec is a path to no
// file: most often a compiled extension that was not built yet.
func execExists(path string) error {
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return nil // what else is wrong, starting it says
	}
	hint := "build or install it, or fix \"exec\" in extension.json"
	if dir := filepath.Dir(path); fileExists(filepath.Join(dir, "go.mod")) || fileExists(filepath.Join(dir, "main.go")) {
		hint = fmt.Sprintf("it is a Go program that was not built: run `go build -o %s .` in %s", filepath.Base(path), dir)
	}
	return fmt.Errorf("exec %s is missing: %s", path, hint)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// spawn starts an extension and the goroutines that serve it. The
// handshake and registration continue in the background; p.ready closes
// when the extension is ready and p.dead when it failed.
func (m *ExtManager) spawn(mf *extManifest) (*extProc, error) {
	logPath := filepath.Join(m.cfg.Home, "logs", "ext-"+mf.Name+".log")
	failf := func(format string, args ...any) error {
		return fmt.Errorf("extension %q: %s (manifest %s)", mf.Name, fmt.Sprintf(format, args...), mf.Path)
	}
	execPath, err := resolveExec(mf)
	if err == nil {
		err = execExists(execPath)
	}
	if err != nil {
		return nil, failf("%v", err)
	}
	lg, err := openExtLog(logPath, m.lim.maxLog)
	if err != nil {
		return nil, failf("open log: %v", err)
	}
	dataDir := filepath.Join(m.cfg.Home, "ext-data", mf.Name)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		lg.Close()
		return nil, failf("create data dir: %v", err)
	}
	lg.Printf("starting %s %s from %s", mf.Name, mf.Version, mf.Dir)

	child, err := startLineChild(extProcSpec(mf, execPath))
	if err != nil {
		lg.Printf("start failed: %v", err)
		lg.Close()
		return nil, failf("start %s: %v%s", execPath, err, startHint(err))
	}

	p := &extProc{
		m: m, mf: mf, logPath: logPath, dataDir: dataDir, log: lg,
		proc: child.proc, child: child,
		q:     newExtQueue(m.lim.queue),
		ready: make(chan struct{}), dead: make(chan struct{}),
		readerDone: child.readerDone, writerDone: make(chan struct{}),
		pending: map[string]extWaiter{}, events: map[extEventName]bool{}, intercept: map[extEventName]bool{},
		logged: map[string]bool{},
	}
	p.helloTimer = time.AfterFunc(m.lim.hello, func() {
		if !p.helloSeen.Load() {
			p.abort(fmt.Errorf("no hello within %s", m.lim.hello))
		}
	})
	// Armed at hello, re-armed by every frame until ready.
	p.idleTimer = time.AfterFunc(time.Hour, func() {
		if p.markReady() {
			p.log.Printf("no ready frame; counted as ready after %s without a frame", m.lim.idle)
		}
	})
	p.idleTimer.Stop()
	// The child's reader hands stdout's frames to readFrame, and at its
	// end marks the extension dead; its copier moves stderr into the log;
	// its waiter reaps the process (and so what is left of its session).
	child.serve(lineChildIO{maxLine: m.lim.maxFrame, overLong: overLongSkip,
		line: p.readFrame, ended: func(error) {
			// Everything it wrote has been read: nothing more can answer
			// a call, whether or not the process is still running.
			p.fail(errGone{errors.New("closed its stdout")})
		},
		stderr: p.log, exited: p.exitedWith, drain: 500 * time.Millisecond})
	// The writer owns stdin; it ends when the queue is closed (fail, or
	// after the shutdown frame) or a write fails.
	go p.writeFrames()
	return p, nil
}

// standIn takes the place of a fail_closed extension that could not be
// started (why: a broken manifest, a missing or unexecutable program). It
// is an extension that died before it was ready, so every intercept its
// grant allows blocks, with why, until a reload (see consults). It has no
// process and no goroutine: stop has nothing to do.
func (m *ExtManager) standIn(mf *extManifest, why error) *extProc {
	gone := make(chan struct{})
	close(gone)
	p := &extProc{
		m: m, mf: mf, err: why,
		log:   &extLog{}, // discards: the failure is logged once, below
		q:     newExtQueue(0),
		ready: make(chan struct{}), dead: gone,
		readerDone: gone, writerDone: gone,
		pending: map[string]extWaiter{}, events: map[extEventName]bool{}, intercept: map[extEventName]bool{},
		logged: map[string]bool{},
	}
	p.q.close()
	p.failOnce.Do(func() {})
	p.stopOnce.Do(func() {})
	if validExtName(mf.Name) {
		p.logPath = filepath.Join(m.cfg.Home, "logs", "ext-"+mf.Name+".log")
		if lg, err := openExtLog(p.logPath, m.lim.maxLog); err == nil {
			lg.Printf("not started: %v; as it is fail_closed, what it may intercept is blocked until a reload", why)
			lg.Close()
		}
	}
	return p
}

// started reports whether the extension has a process: a stand-in has none.
func (p *extProc) started() bool { return p.proc != nil }

func (p *extProc) name() string { return p.mf.Name }

// extProcSpec is how an extension is started, by the host and by `zot ext
// check` alike: in its directory, with zot's environment without zot's
// secrets, speaking frames on stdin and stdout, stderr to its log.
func extProcSpec(mf *extManifest, execPath string) procSpec {
	return procSpec{argv: append([]string{execPath}, mf.Args...), dir: mf.Dir, env: envNoSecrets,
		stdin: streamPipe, stdout: streamPipe, stderr: streamPipe}
}

// startHint is what to try when an extension's program did not start.
func startHint(err error) string {
	if errors.Is(err, os.ErrPermission) {
		return " (is it executable? chmod +x)"
	}
	return ""
}

// exitedWith records how the process ended, once reaped (which killed
// whatever was left of its session first: an extension's children do not
// outlive it). The reader, seeing stdout end, marks the extension dead once
// it has read what was left; when that came first, the exit status goes to
// the log here.
func (p *extProc) exitedWith(ps *os.ProcessState) {
	state := ps.String()
	p.mu.Lock()
	p.exitState = state
	diedFirst := p.err != nil // so its reason lacks the exit status
	p.mu.Unlock()
	if diedFirst && !p.stopping.Load() {
		p.log.Printf("exited (%s)", state)
	}
}

// readFrame acts on one line of the extension's stdout.
func (p *extProc) readFrame(line []byte, err error) {
	if err != nil {
		p.log.Printf("skipped a frame longer than %d bytes", p.m.lim.maxFrame)
		p.sawFrame()
		return
	}
	line = bytes.TrimRight(line, "\r")
	if len(bytes.TrimSpace(line)) == 0 || p.isDead() {
		return
	}
	p.sawFrame()
	msg, err := decodeExtMsg(line)
	if !p.helloSeen.Load() {
		if err != nil || msg.Type != frameHello {
			p.abort(fmt.Errorf("first frame must be hello, got %s", excerpt(line)))
			return
		}
		p.hello(msg)
		return
	}
	if err != nil {
		if msg.ID != "" && p.failWaiter(string(msg.ID), fmt.Errorf("invalid %s: %v", msg.Type, err)) {
			p.log.Printf("invalid reply %s: %v", excerpt(line), err)
			return
		}
		p.log.Printf("skipped a bad frame %s: %v", excerpt(line), err)
		return
	}
	p.handle(msg, line)
}

// errGone is why an extension whose pipe ended can no longer answer, when
// nothing better is known: fail prefers "was stopped" and, once the
// process has been reaped, its exit status.
type errGone struct{ error }

func (p *extProc) writeFrames() {
	defer close(p.writerDone)
	defer p.closeStdin()
	for {
		o, dropped, ok := p.q.pop()
		if !ok {
			return
		}
		if dropped > 0 {
			p.log.Printf("dropped the %d oldest events: the extension reads too slowly (at most %d wait)", dropped, p.m.lim.queue)
		}
		if o.id != "" && !p.isPending(o.id) {
			continue // its caller gave up
		}
		if _, err := p.child.write(o.line, time.Time{}); err != nil {
			// The extension is gone or closed its stdin. What it wrote
			// before that (a reply, say) is read first: the reader marks
			// it dead at the end of its stdout, unless that end does not
			// come, because the process only closed its stdin.
			p.closeStdin()
			t := time.NewTimer(p.m.lim.gone)
			select {
			case <-p.readerDone:
			case <-t.C:
			}
			t.Stop()
			p.fail(errGone{fmt.Errorf("stopped reading its stdin (%v)", err)})
			return
		}
		if o.last {
			return
		}
	}
}

func (p *extProc) closeStdin() { p.child.closeStdin() }

// sawFrame restarts the idle watchdog: 250 ms without a frame after hello
// counts as ready.
func (p *extProc) sawFrame() {
	if p.helloSeen.Load() && !p.isReady() && !p.isDead() {
		p.idleTimer.Reset(p.m.lim.idle)
	}
}

func (p *extProc) hello(msg extMsg) {
	p.helloSeen.Store(true)
	p.helloTimer.Stop()
	if msg.Name != "" && msg.Name != p.mf.Name {
		p.log.Printf("hello names %q but the manifest says %q; using the manifest's name", msg.Name, p.mf.Name)
	}
	m := p.m
	p.send(hostHelloAck{
		Type: frameHelloAck, ProtocolVersion: 1, ZotVersion: version,
		Provider: m.cfg.Provider, Model: m.cfg.Model, Cwd: m.cfg.Cwd,
		ExtensionDir: p.mf.Dir, DataDir: p.dataDir,
	})
	p.idleTimer.Reset(m.lim.idle)
}

// handle acts on one frame after hello. Registrations are checked by admit,
// the one place that can refuse them.
func (p *extProc) handle(msg extMsg, line []byte) {
	switch msg.Type {
	case frameRegisterCommand, frameRegisterTool:
		p.register(msg)
	case frameSubscribe:
		p.subscribe(msg)
	case frameReady:
		p.markReady()
	case frameNotify:
		level := msg.Level
		switch level {
		case "info", "success", "warn", "error":
		default:
			p.log.Printf("notify level %q is not info, success, warn or error; shown as info", level)
			level = "info"
		}
		p.m.note(ExtNote{Extension: p.name(), Level: level, Message: msg.Message})
	case frameClearNotes:
		p.m.note(ExtNote{Extension: p.name(), Clear: true})
	case frameCommandResponse, frameToolResult, frameInterceptResponse:
		p.reply(msg, line)
	case framePanelRender, framePanelClose:
		p.m.panelFromExt(p, msg)
	case frameShutdownAck:
		p.log.Printf("shutdown acknowledged")
	case frameHello:
		p.log.Printf("ignored a second hello")
	default:
		p.log.Printf("skipped a frame of unknown type %q", msg.Type)
	}
}

func (p *extProc) register(msg extMsg) {
	kind, name := "tool", msg.Name
	if msg.Type == frameRegisterCommand {
		kind, name = "command", strings.TrimPrefix(name, "/")
	}
	if err := validRegistrationName(kind, name); err != nil {
		p.log.Printf("refused %s: %v", msg.Type, err)
		return
	}
	r := extRegistration{Name: name, Description: msg.Description}
	if kind == "tool" {
		schema, err := toolSchema(msg.Schema)
		if err != nil {
			p.log.Printf("refused tool %q: %v", name, err)
			return
		}
		r.Schema = schema
	}
	if err := p.admit(kind, name); err != nil {
		p.refuse([]string{kind + " " + name}, err)
		return
	}
	p.mu.Lock()
	list := &p.commands
	if kind == "tool" {
		list = &p.tools
	}
	replaced := false
	for i := range *list {
		if (*list)[i].Name == name {
			(*list)[i], replaced = r, true
		}
	}
	if !replaced {
		*list = append(*list, r)
	}
	p.mu.Unlock()
	if p.isReady() {
		p.m.syncRegistrations()
	}
}

// toolSchema checks the schema a tool is registered with and returns the
// one the model is offered. Providers refuse a tool whose arguments are not
// an object, and then every request fails, so the schema must be a JSON
// object of "type" "object": no schema means no arguments, a missing
// "type" is added, any other is refused. The host and `zot ext check`
// both hold schemas to this rule.
func toolSchema(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	var fields map[string]json.RawMessage
	if !isJSONObject(raw) || json.Unmarshal(raw, &fields) != nil {
		return nil, fmt.Errorf("schema must be a JSON object, got %s", excerpt(raw))
	}
	typ, ok := fields["type"]
	if !ok || string(typ) == "null" {
		fields["type"] = json.RawMessage(`"object"`)
		return json.Marshal(fields)
	}
	var s string
	if json.Unmarshal(typ, &s) != nil || s != "object" {
		return nil, fmt.Errorf(`schema "type" must be "object", got %s: providers refuse tools whose arguments are not an object`, typ)
	}
	return append(json.RawMessage(nil), raw...), nil
}

func (p *extProc) subscribe(msg extMsg) {
	var unknown, refused []string
	var why error
	add := func(kind string, names []extEventName, known, set map[extEventName]bool) {
		for _, ev := range names {
			if !known[ev] {
				unknown = append(unknown, kind+" "+string(ev))
			} else if err := p.admit(kind, string(ev)); err != nil {
				refused, why = append(refused, kind+" "+string(ev)), err
			} else {
				p.mu.Lock()
				set[ev] = true
				p.mu.Unlock()
			}
		}
	}
	add("event", msg.Events, extEventNames, p.events)
	add("intercept", msg.Intercept, extInterceptNames, p.intercept)
	if len(unknown) > 0 {
		p.log.Printf("subscribe: ignored %s", strings.Join(unknown, ", "))
	}
	if len(refused) > 0 {
		p.refuse(refused, why)
	}
}

// admit decides whether the extension may register or subscribe to name
// (kind: command, tool, event or intercept): the manifest's permissions,
// when it has any, must grant it. It is the one place that refuses on
// their account; broadcast and ask check the grant again before sending.
func (p *extProc) admit(kind, name string) error {
	if g := p.mf.Permissions; !g.allows(kind, name) {
		return fmt.Errorf("not granted by the manifest's permissions (%s)", g)
	}
	return nil
}

// refuse logs what admit refused and keeps it for `zot ext list`.
func (p *extProc) refuse(what []string, why error) {
	p.log.Printf("refused %s: %v", strings.Join(what, ", "), why)
	p.mu.Lock()
	for _, w := range what {
		if !slices.Contains(p.refused, w) {
			p.refused = append(p.refused, w)
		}
	}
	p.mu.Unlock()
	p.recordState()
}

// extEventName names a lifecycle event of extension protocol v1, as
// event, event_intercept and subscribe frames carry it.
type extEventName string

const (
	extEventSessionStart     extEventName = "session_start"
	extEventTurnStart        extEventName = "turn_start"
	extEventToolCall         extEventName = "tool_call"
	extEventTurnEnd          extEventName = "turn_end"
	extEventAssistantMessage extEventName = "assistant_message"
)

// extEventList and extInterceptList are the events an extension can
// observe and intercept, in the order docs/extensions.md lists them.
var (
	extEventList      = []extEventName{extEventSessionStart, extEventTurnStart, extEventToolCall, extEventTurnEnd, extEventAssistantMessage}
	extInterceptList  = []extEventName{extEventToolCall, extEventTurnStart, extEventAssistantMessage}
	extEventNames     = nameSet(extEventList)
	extInterceptNames = nameSet(extInterceptList)
)

func nameSet(names []extEventName) map[extEventName]bool {
	set := map[extEventName]bool{}
	for _, n := range names {
		set[n] = true
	}
	return set
}

func validRegistrationName(kind, name string) error {
	if name == "" {
		return errors.New("no name")
	}
	if len(name) > 64 {
		return fmt.Errorf("name %q is longer than 64 bytes", truncate(name, 64))
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
		if kind == "command" {
			ok = ok || r == '.' || r == ':'
		}
		if !ok {
			return fmt.Errorf("name %q may only hold letters, digits, _ and -", name)
		}
	}
	return nil
}

func (p *extProc) markReady() bool {
	first := false
	p.readyOnce.Do(func() {
		first = true
		close(p.ready)
		p.idleTimer.Stop()
	})
	if first {
		p.m.syncRegistrations()
	}
	return first
}

func (p *extProc) isReady() bool {
	select {
	case <-p.ready:
		return true
	default:
		return false
	}
}

func (p *extProc) isDead() bool {
	select {
	case <-p.dead:
		return true
	default:
		return false
	}
}

// fail marks the extension unable to answer: every waiting call fails at
// once with err, and so does every later one.
func (p *extProc) fail(err error) {
	p.failOnce.Do(func() {
		p.mu.Lock()
		// Decided under p.mu, as waitExit records the exit: either the
		// reason has the exit status, or waitExit logs it.
		if errors.As(err, new(errGone)) {
			switch {
			case p.stopping.Load():
				err = errors.New("was stopped")
			case p.exitState != "":
				err = errors.New("exited (" + p.exitState + ")")
			}
		}
		p.err = fmt.Errorf("extension %q %v; see %s", p.name(), err, p.logPath)
		p.pending = nil
		p.mu.Unlock()
		close(p.dead)
		p.q.close()
		p.helloTimer.Stop()
		p.idleTimer.Stop()
		if !p.stopping.Load() {
			p.log.Printf("%v", err)
			p.m.logf("%v; its commands and tools fail until the extensions are reloaded", p.deadErr())
		}
		p.m.procDied(p)
	})
}

// abort stops an extension that broke the handshake.
func (p *extProc) abort(err error) {
	p.fail(err)
	// Owned by p; ends when the stop sequence is over (at most grace+term).
	go p.stop(context.Background())
}

func (p *extProc) deadErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *extProc) isPending(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.pending[id]
	return ok
}

// send queues a frame that needs no answer.
func (p *extProc) send(v any) error {
	line, err := encodeFrame(v)
	if err != nil {
		return err
	}
	if !p.q.push(extOut{line: line}) {
		return p.unavailable()
	}
	return nil
}

// unavailable is why nothing more can be sent: the extension is dead or
// being stopped.
func (p *extProc) unavailable() error {
	if err := p.deadErr(); err != nil {
		return err
	}
	return fmt.Errorf("extension %q is being stopped", p.name())
}

// call sends a request and waits for the reply of type want, at most
// timeout. It fails at once when the extension dies.
func (p *extProc) call(ctx context.Context, want extFrame, timeout time.Duration, frame func(id string) any) (extMsg, error) {
	id := strconv.FormatUint(p.m.ids.Add(1), 10)
	ch := make(chan extMsg, 1)
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return extMsg{}, p.err
	}
	p.pending[id] = extWaiter{want: want, ch: ch}
	p.mu.Unlock()
	defer p.forget(id)
	line, err := encodeFrame(frame(id))
	if err != nil {
		return extMsg{}, err
	}
	if !p.q.push(extOut{line: line, id: id}) {
		return extMsg{}, p.unavailable()
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case msg := <-ch:
		return msg, msg.err
	case <-p.dead:
		// A reply read before the end is in ch by now (the reader hands
		// it over before it sees the end), and select picks at random
		// when both are ready: a last reply must not be lost to it.
		select {
		case msg := <-ch:
			return msg, msg.err
		default:
		}
		return extMsg{}, p.deadErr()
	case <-cctx.Done():
		if ctx.Err() != nil {
			return extMsg{}, ctx.Err()
		}
		return extMsg{}, fmt.Errorf("extension %q did not answer within %s; see %s", p.name(), timeout, p.logPath)
	}
}

func (p *extProc) forget(id string) {
	p.mu.Lock()
	delete(p.pending, id)
	p.mu.Unlock()
}

// reply hands a reply to the call waiting for it.
func (p *extProc) reply(msg extMsg, line []byte) {
	id := string(msg.ID)
	p.mu.Lock()
	w, ok := p.pending[id]
	if ok {
		delete(p.pending, id)
	}
	p.mu.Unlock()
	if !ok {
		p.log.Printf("skipped a %s for unknown id %q (its caller gave up, or the id is wrong)", msg.Type, id)
		return
	}
	if w.want != msg.Type {
		msg.err = fmt.Errorf("extension %q answered a request with %s instead of %s", p.name(), msg.Type, w.want)
		p.log.Printf("%v: %s", msg.err, excerpt(line))
	} else if msg.OpenPanel != nil {
		p.m.openPanel(p, *msg.OpenPanel)
	}
	w.ch <- msg
}

// failWaiter fails the call waiting for id, if any.
func (p *extProc) failWaiter(id string, err error) bool {
	p.mu.Lock()
	w, ok := p.pending[id]
	if ok {
		delete(p.pending, id)
	}
	p.mu.Unlock()
	if ok {
		w.ch <- extMsg{err: fmt.Errorf("extension %q: %v", p.name(), err)}
	}
	return ok
}

// stop ends the extension: shutdown, up to grace for it to exit, then the
// stop sequence (proc.Stop) for its session: SIGTERM, up to term, SIGKILL.
// One that never said hello does not speak the protocol and gets SIGTERM at
// once. A ctx cancelled before SIGTERM skips to SIGKILL. It returns when
// the process and the goroutines serving it are gone; a second call waits
// for the first.
func (p *extProc) stop(ctx context.Context) {
	p.stopOnce.Do(func() {
		p.stopping.Store(true)
		line, _ := encodeFrame(hostShutdown{Type: frameShutdown})
		p.q.push(extOut{line: line, last: true})
		lim := p.m.lim
		grace := lim.grace
		if !p.helloSeen.Load() {
			grace = 0
		}
		late := func() { p.log.Printf("no exit %s after shutdown; sending SIGTERM", grace) }
		if p.child.stop(ctx, grace, lim.term, late) == neededSIGKILL {
			p.log.Printf("no exit %s after SIGTERM; sending SIGKILL", lim.term)
		}
		p.fail(errors.New("was stopped"))
		<-p.writerDone
		p.mu.Lock()
		state := p.exitState
		p.mu.Unlock()
		p.log.Printf("stopped (%s)", state)
		p.log.Close()
	})
}

// extToolResult turns a tool_result's blocks into content for the model.
// Blocks that are neither text nor a valid base64 image are replaced by a
// note saying so.
func (p *extProc) extToolResult(msg extMsg) ToolResult {
	var content []Block
	for i, b := range msg.Content {
		switch b.Type {
		case "text":
			content = append(content, TextBlock(b.Text))
		case "image":
			_, err := base64.StdEncoding.DecodeString(b.Data)
			if err != nil || !strings.HasPrefix(b.MimeType, "image/") {
				p.log.Printf("tool_result block %d: an image needs mime_type image/… and base64 data", i)
				content = append(content, TextBlock(fmt.Sprintf("[extension %s sent an invalid image]", p.name())))
				continue
			}
			content = append(content, Block{Type: BlockImage, MimeType: b.MimeType, Data: b.Data})
		default:
			p.log.Printf("tool_result block %d: unknown type %q skipped", i, b.Type)
		}
	}
	if len(content) == 0 {
		content = []Block{TextBlock("(no output)")}
	}
	return ToolResult{Content: content, IsError: msg.IsError, Details: "extension " + p.name()}
}

// excerpt shows the start of a bad line in a log, quoted.
func excerpt(b []byte) string {
	if len(b) > 200 {
		return strconv.Quote(string(utf8Prefix(b, 200))) + ellipsis
	}
	return strconv.Quote(string(b))
}
