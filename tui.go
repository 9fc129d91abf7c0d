package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The interactive terminal UI: what zot opens on a terminal without -p or
// --json. One goroutine, the UI loop in Run, owns every piece of UI state;
// the agent, extensions, the key reader and signals reach it through its
// inbox or channels, never by touching state. Each pass of the loop handles
// what arrived, then draws one frame. The pieces live in tui_keys.go (key
// decoder), tui_editor.go (line editor, history, completion),
// tui_render.go (width, cleaning, markdown, the diff screen),
// tui_transcript.go (agent events into the scrollback), tui_commands.go
// (slash commands and dialogs) and tui_term.go (raw mode).

// TUIConfig is what the interactive mode gets from wire.go.
type TUIConfig struct {
	Agent   *Agent
	ToolEnv *ToolEnv // /jail and /unjail; what @file may attach
	Home    string   // history, sessions, config.json, auth.json
	Cwd     string
	// Provider is the one in use at startup, BaseURL its base URL and
	// APIKey the --api-key given for it (for it alone). BaseURLFlag says
	// that BaseURL is --base-url's: this run's, never saved by /model.
	Provider, BaseURL, APIKey string
	BaseURLFlag               bool
	ResponseTimeout           time.Duration // for a provider /model or /login switches to
	CacheRetention            string        // likewise
	// MissingKey, when set, says that Provider has no key yet.
	MissingKey string
	// Session records the conversation; nil with --no-session. The TUI
	// replaces it on /sessions and /fork, closes the one it replaced and
	// tells OnSession; the last one is the caller's to close.
	Session   *Session
	OnSession func(*Session)
	Notes     []string // shown at the start (session repairs)
	AskTools  bool     // --no-yolo: ask before each tool call
	Sandbox   string   // the mode bash commands run in (docs/sandbox.md)
	// Modes is the session's mode: the status bar shows it, shift+tab
	// and /mode change it; nil: the session has none.
	Modes *Modes
	// Approvals keeps the session's "don't ask again" answers; nil: the
	// TUI's own, which offer none for commands.
	Approvals *sessionApprovals
	// Checkpoints are /undo's, /rewind's and /diff's; nil when they are off.
	Checkpoints tuiCheckpoints
	// Notify is how a run's end or a waiting dialog is told to a user
	// whose terminal is not focused (ParseNotify; "" rings nothing).
	Notify string
	// Inspect is what /permissions, /mcp and /status read of the rules,
	// the MCP servers and trust (tui_inspect.go); nil: nothing.
	Inspect tuiInspect
}

// tuiExtensions is what the TUI uses of the extension host. wire.go passes
// the host (nil when there is none); notes and panel updates come in
// through TUI.Note and TUI.Panel.
type tuiExtensions interface {
	Commands() []tuiCommand
	InvokeCommand(ctx context.Context, name, args string) (tuiCommandResponse, error)
	PanelKey(panelID, key, text string) error
	ClosePanel(panelID string) error
	Reload(ctx context.Context) tuiReloadStats
}

// tuiCommand is a slash command of the extension host.
type tuiCommand struct {
	Name        string
	Description string
	Extension   string
}

// tuiCommandResponse is the host's answer to a command: Action is prompt,
// insert, display or noop; Error, when set, is shown whatever the action.
// Panel, when set, opens a panel.
type tuiCommandResponse struct {
	Action  string
	Prompt  string
	Insert  string
	Display string
	Error   string
	Panel   *tuiPanel
}

// tuiPanel is an overlay an extension draws and that receives keys.
type tuiPanel struct {
	ID        string
	Title     string
	Lines     []string
	Footer    string
	Extension string
}

// tuiPanelUpdate opens, redraws or closes a panel.
type tuiPanelUpdate struct {
	Kind  string // open, render, close
	Panel tuiPanel
}

// tuiNote is a line for the user from what runs beside the agent: an
// extension (Extension is its name), MCP servers ("mcp:NAME") or hooks.
// Clear retracts Extension's notes.
type tuiNote struct {
	Extension string
	Level     string
	Message   string
	Clear     bool
}

// tuiReloadStats is what /reload-ext did.
type tuiReloadStats struct {
	Stopped, Loaded, Ready int
	Errors                 []string
}

// TUI is the interactive mode. Set Ext and Skills before Run; Note and
// Panel may be called from any goroutine at any time.
type TUI struct {
	// Ext is the extension host; nil when extensions are off.
	Ext tuiExtensions
	// Skills lists the skills for /skills and returns a function that
	// shows one by name; nil when there are none.
	Skills func() (list string, show func(name string) (string, error))
	// Observe, when set, also receives every event of the agent's runs
	// (the extension host's event fan-out).
	Observe Sink
	// Prompts are the prompt templates; nil when there are none.
	Prompts tuiPrompts

	trustAsk *tuiTrustAsk // see AskTrust

	// modelListErr is why the server's models are missing from /model
	// (SetModelListError); the background listing sets it.
	modelListErr atomic.Pointer[error]

	cfg TUIConfig
	out io.Writer

	inboxMu sync.Mutex
	inbox   []any
	wake    chan struct{}

	// ctx ends when the TUI exits; work started for the UI uses it, and
	// bg counts that work (background), which Run waits for.
	ctx    context.Context
	cancel context.CancelFunc
	bg     sync.WaitGroup

	mode    *ttyMode
	restore sync.Once

	// Gate state, read by the agent's goroutine through yoloGate.
	gateMu     sync.Mutex
	askTools   bool // --no-yolo
	approveAll bool
	approved   map[string]bool

	// Everything below belongs to the UI loop.
	agent         *Agent
	provider      string   // in use now
	missingKey    string   // the provider in use has no key
	session       *Session // nil with --no-session
	width, height int
	scr           screen
	commit        []string // rows to print above the live region
	ed            editor
	hist          *promptHistory
	pop           popupState
	clashes       map[string]bool // templates reported as shadowed, by path
	dialogs       dialogStack
	stream        streamState
	run           *runState
	runSeq        int
	queue         []queuedPrompt
	notes         []tuiNote
	hint          string
	exitArmedAt   time.Time // a ctrl+c on the idle, empty editor asked to exit (see ctrlCExitWindow)
	stopGrace     time.Time // until then a ctrl+c is taken as meant for the run that just ended
	lastKeyAt     time.Time // when the user last pressed a key
	pendingCmds   []string
	loginPrompt   *queuedPrompt  // sent without a key: back into the editor once /login saved one
	afterStop     []func(t *TUI) // changes waiting for the stopped turn to end (whenIdle)
	lastBlock     string         // what the scrollback ends with: "text", "tool" or ""
	folded        []*toolResult  // results shown cut, which ctrl+o shows in full
	pendingShell  []string       // !commands and their output, for the next prompt
	expandBack    int            // ctrl+o pressed this many times in a row
	rule          string         // the line above the editor, for the current width

	images    imageProtocol // how pictures are drawn (tui_images.go); set by Run
	caps      termCaps      // NO_COLOR, a locale that is not UTF-8 (tui_charset.go); set by Run
	panelKeys chan panelMsg
	keyBuf    []byte
	focus     focusState // what the terminal last reported (tui_notify.go)
	quit      bool
	exitCode  int
	spin      int
}

// queuedPrompt is a prompt typed while the agent worked.
type queuedPrompt struct {
	display string // as typed, placeholders and all
	text    string // as sent
}

// runState is the agent's work in progress: a prompt or a compaction.
type runState struct {
	id      int
	cancel  context.CancelFunc
	start   time.Time
	aborted bool
	prompts int // user_message events seen
	// rescuable: the work answers a prompt, which another provider may
	// retry when this one is unavailable (tui_rescue.go).
	rescuable bool
}

// streamState is what the live region shows of the reply being streamed.
type streamState struct {
	thinking   []byte
	thinkStart time.Time
	line       mdStream // the assistant text's unfinished line, its cells not yet committed
	inLine     bool     // text arrived since the last line break
	started    bool     // rows of the unfinished line were committed
	md         mdState  // markdown state after the committed lines
	liveText   []string // rows of the unfinished line not yet committed
	table      *mdTable // the table whose rows are arriving, held until it ends
	cells      []cell   // reused for laying out the unfinished line
	hasText    bool
	tools      []*liveTool
	// While nothing of the model's answer has arrived, what the agent is
	// waiting for ("waiting for the model") and since when; retry, when
	// the provider is retrying the call.
	wait      string
	waitSince time.Time
	retry     *retryWait
}

// retryWait is a retry the provider announced (EventRetry).
type retryWait struct {
	at                time.Time // when the next attempt goes out
	attempt, attempts int
	reason            string
}

// liveTool is a tool call being streamed or run.
type liveTool struct {
	id, name string
	argBytes int
	summary  string
	progress []string
	start    time.Time
}

// Messages to the UI loop.
type (
	msgEvent struct {
		run int
		ev  Event
	}
	msgRunDone struct {
		run int
		err error
	}
	msgConfirm struct{ req *confirmReq }
	msgNote    struct{ n tuiNote }
	msgPanel   struct{ u tuiPanelUpdate }
	msgCmdDone struct {
		name string
		resp tuiCommandResponse
		err  error
	}
	msgReloaded struct{ stats tuiReloadStats }
	msgMode     struct{ mode Mode }
	msgLog      struct {
		text string
		st   style
	}
	msgRedraw struct{}
)

// newTUI makes the interactive mode for cfg, drawing to out. From here on
// the agent's log goes into the transcript.
func newTUI(cfg TUIConfig, out io.Writer) *TUI {
	t := &TUI{cfg: cfg, out: out, wake: make(chan struct{}, 1), width: 80, height: 24,
		askTools: cfg.AskTools, approved: map[string]bool{},
		agent: cfg.Agent, provider: cfg.Provider, missingKey: cfg.MissingKey, session: cfg.Session}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.ed.histAt = -1
	t.hist = &promptHistory{path: filepath.Join(cfg.Home, "history"), cwd: cfg.Cwd}
	if cfg.ToolEnv != nil {
		cfg.ToolEnv.JailHint = "/unjail to allow"
	}
	cfg.Agent.Log = func(format string, args ...any) { t.Logf("zot: "+format, args...) }
	return t
}

// YoloStage is the stage of the TUI's --no-yolo gate.
var YoloStage = Stage{Name: "--no-yolo", Order: OrderConfirm}

// Gates are what the TUI brings to the agent's tool gates: the --no-yolo
// gate, and the confirm that shows the gates' questions as a dialog.
func (t *TUI) Gates() (yolo ToolGate, confirm ConfirmFunc) { return t.yoloGate, t.approvalConfirm() }

// post hands a message to the UI loop; it never blocks.
func (t *TUI) post(m any) {
	t.inboxMu.Lock()
	t.inbox = append(t.inbox, m)
	t.inboxMu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Note shows an extension's notify frame (or retracts its notes).
func (t *TUI) Note(n tuiNote) { t.post(msgNote{n}) }

// Panel opens, redraws or closes an extension's panel.
func (t *TUI) Panel(u tuiPanelUpdate) { t.post(msgPanel{u}) }

// Logf prints a message of zot's own into the transcript (in yellow). Parts
// that would write to stderr while the TUI runs use it instead, since
// stray output would garble the screen.
func (t *TUI) Logf(format string, args ...any) {
	t.post(msgLog{fmt.Sprintf(format, args...), fgYellow})
}

// Run takes over the terminal until the user leaves, and returns the exit
// status. prompt, when not empty, is submitted at once; resume opens the
// session picker.
func (t *TUI) Run(in, out *os.File, prompt string, resume bool) (code int) {
	inFd, outFd := int(in.Fd()), int(out.Fd())
	mode, err := enterRawMode(inFd, outFd, "\x1b[?2004l"+focusReportOff+"\x1b[?25h")
	if err != nil {
		fmt.Fprintf(os.Stderr, "zot: cannot switch the terminal to raw mode: %v\n", err)
		return exitFailure
	}
	t.mode = mode
	defer t.restoreTerminal()
	defer t.crashGuard()
	if w, h, err := terminalSize(outFd); err == nil {
		t.width, t.height = w, h
	}
	t.scr.height = t.height
	t.write([]byte("\x1b[?2004h" + focusReportOn))
	var imagesWarning string
	t.images, imagesWarning = detectImages(os.Getenv)
	t.caps = detectTermCaps(os.Getenv)
	if imagesWarning != "" {
		t.logf(fgYellow, "zot: %s", imagesWarning)
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGWINCH, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	input := make(chan []byte, 16)
	var stopReading atomic.Bool
	readerDone := make(chan struct{})
	// The key reader. Owner: Run. It exits when stopReading is set (reads
	// time out every 0.1 s, see enterRawMode) or the terminal fails.
	go func() {
		defer close(readerDone)
		buf := make([]byte, 4096)
		for !stopReading.Load() {
			n, err := syscall.Read(inFd, buf)
			if n > 0 {
				select {
				case input <- append([]byte(nil), buf[:n]...):
				case <-t.ctx.Done():
					return
				}
			}
			if err != nil && err != syscall.EINTR && err != syscall.EAGAIN {
				t.post(msgLog{fmt.Sprintf("zot: reading the terminal failed: %v", err), fgRed})
				t.post(errTerminalGone{})
				return
			}
		}
	}()
	defer func() {
		stopReading.Store(true)
		t.cancel()
		select {
		case <-readerDone:
		case <-time.After(time.Second):
		}
		t.waitBackground(5 * time.Second)
	}()

	t.start(prompt, resume)
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	var escTimer <-chan time.Time
	for !t.quit {
		t.render()
		select {
		case b := <-input:
			t.input(b, false)
			escTimer = nil
			if len(t.keyBuf) > 0 {
				escTimer = time.After(30 * time.Millisecond)
			}
		case <-escTimer:
			escTimer = nil
			t.input(nil, true)
		case <-t.wake:
			t.drain()
		case sig := <-sigs:
			if sig == syscall.SIGWINCH {
				if w, h, err := terminalSize(outFd); err == nil {
					t.resize(w, h)
				}
				continue
			}
			t.exit(128 + int(sig.(syscall.Signal)))
		case <-ticker.C:
			if t.run != nil || len(t.pendingCmds) > 0 {
				t.spin++
			}
			t.expireExitHint()
		}
	}
	t.shutdown()
	return t.exitCode
}

// errTerminalGone tells the loop the terminal stopped answering.
type errTerminalGone struct{}

// restoreTerminal puts the terminal back as zot found it. It is safe to
// call from any goroutine, any number of times.
func (t *TUI) restoreTerminal() {
	t.restore.Do(func() {
		if t.mode != nil {
			t.mode.Restore()
		}
	})
}

// crashGuard, deferred first in every goroutine the TUI starts, gives the
// terminal back before a panic ends the process, so the trace is readable
// and the shell usable.
// background runs work beside the UI loop: a provider call, an extension
// command, a reload. work must end once t.ctx ends; Run waits for it
// before it returns, so nothing the TUI started outlives it.
func (t *TUI) background(work func()) {
	t.bg.Add(1)
	go func() {
		defer t.bg.Done()
		defer t.crashGuard()
		work()
	}()
}

// waitBackground waits for the background work, which t.ctx has ended,
// at most limit: a call that ignores its context must not hang the exit.
func (t *TUI) waitBackground(limit time.Duration) {
	done := make(chan struct{})
	go func() {
		t.bg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
	}
}

func (t *TUI) crashGuard() {
	if r := recover(); r != nil {
		t.restore.Do(func() {
			if t.mode != nil {
				syscall.Write(t.mode.out, []byte("\r\n\x1b[J")) // the trace starts below the live region's top
				t.mode.Restore()
			}
		})
		panic(r)
	}
}

func (t *TUI) write(b []byte) {
	if len(b) == 0 {
		return
	}
	if _, err := t.out.Write(t.caps.filter(b)); err != nil && !t.quit {
		t.exitCode, t.quit = exitFailure, true
	}
}

// start prints the greeting and what the user should know, shows a
// continued session, and submits the prompt given on the command line.
func (t *TUI) start(prompt string, resume bool) {
	h, list, err := loadHistory(t.hist.path, t.cfg.Cwd)
	if err != nil {
		t.logf(fgYellow, "zot: %v (history off for this session)", err)
		h.path = ""
	}
	t.hist, t.ed.hist = h, list
	t.commitLine(span{"zot " + version, sBold}, span{"  " + t.provider + "/" + t.agent.CurrentModel(), fgCyan}, span{"  /help for keys and commands", sDim})
	if t.missingKey != "" {
		t.warnNoKey()
	}
	for _, n := range t.cfg.Notes {
		t.logf(fgYellow, "zot: %s", n)
	}
	if msgs := t.agent.Messages(); len(msgs) > 0 {
		t.commitRule("continuing " + t.sessionName())
		t.showTranscript(msgs)
	}
	// The status's share of the context is of the server's own window
	// from the start, not of a guess until the first request.
	t.background(func() {
		if t.agent.ServerWindow(t.ctx) > 0 {
			t.post(msgRedraw{})
		}
	})
	if resume {
		t.cmdSessions("")
	}
	if t.trustAsk != nil {
		t.pushDialog(&trustDialog{ask: *t.trustAsk, sel: 1}) // on top: answered first
	}
	switch {
	case strings.TrimSpace(prompt) == "":
	case len(t.dialogs) > 0:
		t.ed.set(editorClean(prompt)) // sent once a session is chosen
	default:
		t.submitText(prompt, prompt)
	}
}

func (t *TUI) warnNoKey() {
	env := keyEnvVar(t.provider)
	t.logf(fgYellow, "No API key for %s. Add one with /login (saved to %s, mode 0600), or set %s and restart.",
		t.provider, filepath.Join(t.cfg.Home, "auth.json"), env)
	t.logf(fgYellow, "For a local model server: zot --provider ollama --model NAME, or --base-url URL for any OpenAI-compatible server.")
}

// drain handles everything in the inbox.
func (t *TUI) drain() {
	t.inboxMu.Lock()
	msgs := t.inbox
	t.inbox = nil
	t.inboxMu.Unlock()
	for _, m := range msgs {
		t.handle(m)
	}
}

func (t *TUI) handle(m any) {
	switch m := m.(type) {
	case msgEvent:
		if t.run != nil && m.run == t.run.id {
			t.event(m.ev)
		}
	case msgRunDone:
		t.runDone(m.run, m.err)
	case msgConfirm:
		if m.req.ctx.Err() == nil {
			d := &confirmDialog{req: m.req, yolo: onlyYoloAsks(m.req.asks)}
			if time.Since(t.lastKeyAt) < confirmTypingGap {
				// The user is typing: do not let the next keys answer.
				d.armAt = time.Now().Add(confirmPause)
			}
			t.pushDialog(d)
			t.notify("zot is waiting for your answer: " + m.req.call.Name)
		}
	case msgElicit:
		if m.req.ctx.Err() == nil {
			d := newElicitDialog(m.req)
			if time.Since(t.lastKeyAt) < confirmTypingGap {
				d.armAt = time.Now().Add(confirmPause) // as for a confirmation
			}
			t.pushDialog(d)
			t.notify("zot is waiting for your answer: an MCP server asks")
		}
	case msgElicitGone:
		t.dialogs.drop(func(x dialog) bool { e, ok := x.(*elicitDialog); return ok && e.req == m.req })
	case msgNote:
		t.note(m.n)
	case msgPanel:
		t.panelUpdate(m.u)
	case msgCmdDone:
		t.extCommandDone(m.name, m.resp, m.err)
	case msgReloaded:
		t.reloaded(m.stats)
	case msgMode:
		t.modeChanged(m.mode)
	case msgLog:
		t.logf(m.st, "%s", m.text)
	case msgShellDone:
		t.shellDone(m)
	case msgDiff:
		t.showDiff(m)
	case msgRedraw: // what the status shows changed
	case msgBtwDelta:
		m.d.delta(m.seq, m.delta)
	case msgBtwDone:
		m.d.done(t, m.seq, m.reply, m.err)
	case errTerminalGone:
		t.exit(exitFailure)
	}
}

// Input.

// input decodes keys from what the terminal sent; flush resolves a lone esc.
func (t *TUI) input(b []byte, flush bool) {
	t.keyBuf = append(t.keyBuf, b...)
	keys, n := decodeKeys(t.keyBuf, flush)
	t.keyBuf = append(t.keyBuf[:0], t.keyBuf[n:]...)
	for _, k := range keys {
		t.key(k)
		if t.quit {
			return
		}
	}
}

// key routes one key: to the top dialog if there is one, else to the
// editor after the keys that mean something to the TUI itself.
func (t *TUI) key(k tuiKey) {
	switch k.code {
	case keyUnknown:
		return
	case keyFocusIn:
		t.focus = focusIn
		return
	case keyFocusOut:
		t.focus = focusOut
		return
	}
	isCtrl := func(r rune) bool { return k.code == keyRune && k.mod == modCtrl && k.r == r }
	armed := !t.exitArmedAt.IsZero() && time.Since(t.exitArmedAt) < ctrlCExitWindow
	t.exitArmedAt = time.Time{}
	if !isCtrl('c') {
		t.stopGrace = time.Time{} // the user has moved on from stopping
	}
	if !isCtrl('o') {
		t.expandBack = 0
	}
	t.hint = ""
	t.lastKeyAt = time.Now()
	if len(t.dialogs) > 0 {
		t.dialogs.key(t, k)
		return
	}
	switch {
	case isCtrl('c'):
		switch {
		case t.run != nil:
			// Only stops: a user tapping twice to stop must not lose the
			// session view. What was typed stays.
			t.abort()
		case !t.ed.empty():
			t.ed.clear()
			t.pop.close()
		case time.Now().Before(t.stopGrace):
			// The run ended (by itself, or stopping) as the user pressed:
			// the press was meant to stop it, not to leave.
		case armed:
			t.exit(exitOK)
		default:
			t.exitArmedAt = time.Now()
			t.hint = ctrlCExitHint
		}
		return
	case isCtrl('d') && t.ed.empty():
		t.exit(exitOK)
		return
	case isCtrl('o'):
		t.expandFolded()
		return
	case isCtrl('r'):
		t.searchHistory()
		return
	case isCtrl('l'):
		t.write(t.scr.forget(t.width))
		t.write([]byte("\x1b[H\x1b[2J"))
		return
	case k.code == keyEsc:
		switch {
		case t.pop.list != nil:
			t.pop.dismiss(t.ed.text())
		case t.run != nil:
			t.abort()
		default:
			t.notes = nil
		}
		return
	case k.code == keyUp || k.code == keyDown || isCtrl('p') || isCtrl('n'):
		dir := 1
		if k.code == keyUp || isCtrl('p') {
			dir = -1
		}
		if t.pop.move(dir) {
			return
		}
	case k.code == keyTab:
		t.hint = t.pop.complete(&t.ed, t.cfg.Cwd)
		return
	case k.code == keyBacktab:
		t.cycleMode()
		return
	case k.code == keyEnter && k.mod == 0:
		t.enter()
		return
	}
	if t.ed.key(k, t.width) {
		t.pop.endFileList()
		t.pop.edited(&t.ed, t.extCommandItems, t.templateItems)
	}
}

// enter submits the editor, or accepts the popup's choice.
func (t *TUI) enter() {
	if t.pop.enter(&t.ed) {
		return
	}
	if n := len(t.ed.buf); n > 0 && t.ed.cur == n && t.ed.buf[n-1] == '\\' {
		t.ed.buf[n-1] = '\n' // a trailing backslash continues the prompt
		return
	}
	display, text := t.ed.text(), t.ed.expanded()
	if strings.TrimSpace(display) == "" {
		return
	}
	t.remember(text)
	t.ed.reset()
	t.pop.submitted()
	t.submitText(display, text)
}

// remember puts a prompt at the top of the history.
func (t *TUI) remember(text string) {
	if err := t.hist.add(text); err != nil {
		t.logf(fgYellow, "zot: %v (history off for this session)", err)
		t.hist.path = ""
	}
	t.ed.hist = append([]string{text}, removeString(t.ed.hist, text)...)
}

func removeString(list []string, s string) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// submitText runs a slash command or sends (or queues) a prompt.
func (t *TUI) submitText(display, text string) {
	if name, args, ok := parseSlash(text); ok && t.isCommand(name) {
		t.command(name, args)
		return
	}
	if name, _, ok := parseSlash(text); ok && !strings.Contains(name, "/") && !t.isTemplate(name) {
		t.logf(fgRed, "unknown command /%s (see /help; start with // to send a message that begins with a slash)", name)
		t.ed.set(display)
		return
	}
	if command, ok := shellCommand(text); ok {
		t.runShellCommand(command)
		return
	}
	if strings.HasPrefix(text, "//") || strings.HasPrefix(text, "!!") {
		text, display = text[1:], display[1:]
	}
	q := queuedPrompt{display: display, text: text}
	if t.run != nil {
		t.queue = append(t.queue, q)
		return
	}
	t.startPrompt(q)
}

// parseSlash splits "/name args" into its parts.
func parseSlash(text string) (name, args string, ok bool) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "/") || strings.HasPrefix(text, "//") {
		return "", "", false
	}
	name, args, _ = strings.Cut(text[1:], " ")
	if name == "" || strings.ContainsAny(name, "\n") {
		return "", "", false
	}
	return name, strings.TrimSpace(args), true
}

const (
	// ctrlCExitWindow is how long a ctrl+c that asked "press ctrl+c again
	// to exit" waits for the second one.
	ctrlCExitWindow = 2 * time.Second
	// ctrlCStopGrace is how long after a run ended a ctrl+c is still taken
	// as meant to stop it: a user mashing ctrl+c as the answer ends must
	// not leave (another key ends the grace at once).
	ctrlCStopGrace = time.Second
	ctrlCExitHint  = "press ctrl+c again to exit (or ctrl+d)"
)

// expireExitHint disarms a ctrl+c exit whose window has passed.
func (t *TUI) expireExitHint() {
	if !t.exitArmedAt.IsZero() && time.Since(t.exitArmedAt) >= ctrlCExitWindow {
		t.exitArmedAt = time.Time{}
		if t.hint == ctrlCExitHint {
			t.hint = ""
		}
	}
}

// exit leaves the loop; a running prompt is cancelled first.
func (t *TUI) exit(code int) {
	t.exitCode, t.quit = code, true
}

// shutdown ends the session cleanly: the running prompt is cancelled and
// waited for (so the session file is synced; queued prompts do not start),
// and the live region is erased, leaving the transcript above the shell's
// prompt. Open panels are left to the extension host's own shutdown.
func (t *TUI) shutdown() {
	t.dialogs.refuseAll()
	t.afterStop = nil // leaving: changes asked for meanwhile are not made
	if t.run != nil {
		t.abort()
		deadline := time.After(5 * time.Second)
	wait:
		for t.run != nil {
			select {
			case <-t.wake:
				t.drain()
			case <-deadline:
				break wait
			}
		}
	}
	t.write(t.scr.frame(t.commit, nil, 0, 0))
	t.commit = t.commit[:0]
	t.write(t.scr.clear())
}

// Rendering.

// render draws a frame if anything changed.
func (t *TUI) render() {
	rows, crow, ccol := t.view()
	t.write(t.scr.frame(t.commit, rows, crow, ccol))
	t.commit = t.commit[:0]
}

func (t *TUI) resize(w, h int) {
	if w == t.width && h == t.height {
		return
	}
	t.write(t.scr.forget(w))
	t.width, t.height = w, h
	t.scr.height = h
	t.flowText()
}

// view lays out the live region: the reply being streamed, notes, queued
// prompts, the editor (or the dialog on top) with its popup, and the status
// bar. It is never taller than the terminal: the top goes first.
func (t *TUI) view() (rows []string, crow, ccol int) {
	w := t.width
	rows = append(rows, t.streamRows(w)...)
	for _, n := range t.notes {
		rows = append(rows, plainRows(oneLine(n.Message), w, noteStyle(n.Level), []span{{"[" + oneLine(n.Extension) + "] ", noteStyle(n.Level) | sBold}}, []span{{"  ", 0}})...)
	}
	for _, q := range t.queue {
		rows = append(rows, fitLine(w, span{"⏳ queued: ", fgYellow}, span{oneLine(q.display), sDim}))
	}
	if visibleWidth(t.rule) != w {
		t.rule = fitLine(w, span{strings.Repeat("─", w), sDim})
	}
	rows = append(rows, t.rule)
	if d := t.dialogs.top(); d != nil {
		drows, dr, dc := d.view(t, w)
		crow, ccol = len(rows)+dr, dc
		rows = append(rows, drows...)
	} else {
		placeholder := ""
		if t.run != nil {
			placeholder = "type to queue a prompt · esc to stop"
		}
		erows, er, ec := t.ed.view(w, max(3, t.height/3), placeholder)
		crow, ccol = len(rows)+er, ec
		rows = append(rows, erows...)
		rows = append(rows, t.pop.view(w)...)
	}
	if t.hint != "" {
		rows = append(rows, fitLine(w, span{t.hint, sDim}))
	}
	rows = append(rows, t.statusRow(w))
	if limit := max(t.height-1, 2); len(rows) > limit {
		drop := min(len(rows)-limit, crow)
		rows, crow = rows[drop:], crow-drop
		if len(rows) > limit {
			rows = rows[:limit]
		}
	}
	return rows, crow, ccol
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (t *TUI) spinner() string { return spinnerFrames[t.spin%len(spinnerFrames)] }

const thinkingRows = 4

func (t *TUI) streamRows(w int) []string {
	st := &t.stream
	var rows []string
	if st.wait != "" {
		what, clock := st.wait, "  "+elapsed(time.Since(st.waitSince))
		if r := st.retry; r != nil {
			if left := time.Until(r.at); left > 0 {
				what = fmt.Sprintf("retrying in %ds (attempt %d of %d): %s", int((left+time.Second-1)/time.Second), r.attempt, r.attempts, r.reason)
				clock = ""
			} else {
				what = fmt.Sprintf("%s (attempt %d of %d)", st.wait, r.attempt, r.attempts)
				clock = "  " + elapsed(-left)
			}
		}
		rows = append(rows, fitLine(w, span{t.spinner() + " ", fgCyan}, span{what, 0}, span{clock, sDim}))
	}
	if st.thinking != nil {
		rows = append(rows, fitLine(w, span{fmt.Sprintf("∴ thinking %.0fs", time.Since(st.thinkStart).Seconds()), sDim | sItalic}))
		tail := st.thinking
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		think := renderMarkdown(strings.ToValidUTF8(string(tail), ""), w-2, sDim|sItalic)
		if len(think) > thinkingRows {
			think = think[len(think)-thinkingRows:]
		}
		for _, r := range think {
			rows = append(rows, "  "+r)
		}
	}
	if st.table != nil {
		rows = append(rows, st.table.held(w)...)
	}
	rows = append(rows, st.liveText...)
	for _, lt := range st.tools {
		what := lt.summary
		if what == "" {
			what = fmt.Sprintf("preparing arguments… %s", sizeString(int64(lt.argBytes)))
		}
		rows = append(rows, fitLine(w, span{t.spinner() + " ", fgCyan}, span{lt.name, sBold}, span{"  " + what, 0},
			span{"  " + elapsed(time.Since(lt.start)), sDim}))
		for _, p := range lt.progress {
			rows = append(rows, fitLine(w, span{"  │ ", sDim}, span{oneLine(p), sDim}))
		}
	}
	for _, c := range t.pendingCmds {
		rows = append(rows, fitLine(w, span{t.spinner() + " ", fgCyan}, span{"/" + c, sDim}))
	}
	return rows
}

// statusRow is the bottom line: model, the mode and what commands run in
// (a sandbox, or not confined, and the jail), directory, context used,
// tokens, cost and confirmation state, and while the agent works a
// spinner with the time elapsed.
func (t *TUI) statusRow(w int) string {
	model := t.agent.CurrentModel()
	info := lookupModel(t.provider, model)
	total, last := t.agent.Totals()
	pct := 0
	if info.ContextWindow > 0 {
		pct = last * 100 / info.ContextWindow
	}
	parts := []span{{" " + t.provider + "/" + model, fgCyan}}
	add := func(s string, st style) { parts = append(parts, span{" · ", sDim}, span{s, st}) }
	t.addModeStatus(add)
	add(shortPath(t.cfg.Cwd, 30), sDim)
	add(fmt.Sprintf("ctx %d%%", pct), sDim)
	add(fmt.Sprintf("↑%s ↓%s", tokenCount(total.Input+total.CacheRead+total.CacheWrite), tokenCount(total.Output)), sDim)
	if info.Known {
		add(fmt.Sprintf("$%.4f", total.CostUSD), sDim)
	}
	t.gateMu.Lock()
	asking := t.askTools && !t.approveAll
	t.gateMu.Unlock()
	if asking {
		add("confirm tools", fgYellow)
	}
	var right []span
	if t.run != nil {
		right = append(right, span{fmt.Sprintf("%s %s ", t.spinner(), elapsed(time.Since(t.run.start))), fgCyan})
	}
	if n := len(t.queue); n > 0 {
		right = append(right, span{fmt.Sprintf("%d queued ", n), fgYellow})
	}
	rw := spansWidth(right)
	if rw >= w {
		return fitLine(w, right...)
	}
	left := fitLine(max(w-rw-1, 1), parts...)
	pad := max(w-visibleWidth(left)-rw, 1)
	if rw == 0 {
		return left
	}
	return left + strings.Repeat(" ", pad) + string(renderRow(nil, right, nil))
}

func tokenCount(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func elapsed(d time.Duration) string {
	s := int(d.Seconds())
	if s < 60 {
		return fmt.Sprintf("%ds", s)
	}
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}

// shortPath shows a directory in at most n columns: the home directory as
// ~, and only the last elements when it is still too long.
func shortPath(p string, n int) string {
	if home, err := os.UserHomeDir(); err == nil && home != "" && (p == home || strings.HasPrefix(p, home+"/")) {
		p = "~" + p[len(home):]
	}
	p = oneLine(p)
	for stringWidth(p) > n {
		i := strings.IndexByte(strings.TrimPrefix(p, "…/"), '/')
		if i < 0 {
			break
		}
		p = "…/" + strings.TrimPrefix(p, "…/")[i+1:]
	}
	return p
}

// The --no-yolo gate.

// yoloGate asks before each tool call while --no-yolo is on, unless the
// user already said yes to this tool, or to everything, this session.
func (t *TUI) yoloGate(ctx context.Context, call ToolCall) GateResult {
	t.gateMu.Lock()
	defer t.gateMu.Unlock()
	if !t.askTools || t.approveAll || t.approved[call.Name] {
		return GateResult{}
	}
	return GateResult{Verdict: GateAsk, Notes: []GateNote{{By: YoloStage.Name, Decision: DecisionAsk, Reason: "confirm each tool call", AllowEnds: true}}}
}

// confirmReq is a gate's question waiting for the user.
type confirmReq struct {
	ctx   context.Context
	call  ToolCall
	asks  []GateNote
	reply chan bool
	// q and detail come with a question from ask (tui_approvals.go):
	// what it offers, and where the whole answer goes.
	q      approvalQuestion
	detail chan approvalAnswer
}

func onlyYoloAsks(asks []GateNote) bool {
	for _, a := range asks {
		if a.By != YoloStage.Name {
			return false
		}
	}
	return len(asks) > 0
}

// setApproval records a "yes for this tool" or "yes to everything".
func (t *TUI) setApproval(tool string, all bool) {
	t.gateMu.Lock()
	defer t.gateMu.Unlock()
	if all {
		t.approveAll = true
	} else {
		t.approved[tool] = true
	}
}

// sessionName describes the session file for messages.
func (t *TUI) sessionName() string {
	if t.session == nil {
		return "conversation"
	}
	if name := t.session.Name(); name != "" {
		return "session " + name + " (" + filepath.Base(t.session.Path) + ")"
	}
	return "session " + filepath.Base(t.session.Path)
}
