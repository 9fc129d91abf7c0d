package main

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// One ACP session: its prompts, the session/update notifications its
// events become, the gates' questions as permission requests, and its
// history replayed for session/load.

// acpSession is an open session. One prompt runs at a time; its events
// arrive on the agent's goroutine, serially.
type acpSession struct {
	srv *acpServer
	id  string
	cwd string
	b   *acpBackend

	mu      sync.Mutex
	running context.CancelFunc // the prompt in flight; nil when idle
	ctx     context.Context    // the prompt's, for the editor's file requests its updates make
	busy    sync.WaitGroup     // the prompt in flight
	titled  bool
	closed  bool
	calls   map[string]*acpCallState
	elicits atomic.Int64 // URL questions asked, for their elicitationId
}

// acpCallState is what a session knows of a tool call of the prompt in
// flight.
type acpCallState struct {
	name    string
	change  *FileChange // an edit's or write's change, as previewed
	started bool
}

// Session updates, one type per kind of update that carries fields.
type (
	acpChunk struct {
		SessionUpdate string     `json:"sessionUpdate"`
		Content       acpContent `json:"content"`
	}
	acpToolCall struct {
		SessionUpdate string           `json:"sessionUpdate,omitempty"` // none in a permission request
		ToolCallID    string           `json:"toolCallId"`
		Title         string           `json:"title,omitempty"`
		Kind          string           `json:"kind,omitempty"`
		Status        string           `json:"status,omitempty"`
		Content       []acpToolContent `json:"content,omitempty"`
		Locations     []acpLocation    `json:"locations,omitempty"`
		RawInput      json.RawMessage  `json:"rawInput,omitempty"`
		RawOutput     any              `json:"rawOutput,omitempty"`
	}
	acpUsageUpdate struct {
		SessionUpdate string   `json:"sessionUpdate"`
		Used          int      `json:"used"`
		Size          int      `json:"size"`
		Cost          *acpCost `json:"cost,omitempty"`
	}
	acpCost struct {
		Amount   USD    `json:"amount"`
		Currency string `json:"currency"`
	}
	acpCommandsUpdate struct {
		SessionUpdate     string       `json:"sessionUpdate"`
		AvailableCommands []acpCommand `json:"availableCommands"`
	}
	acpModeUpdate struct {
		SessionUpdate string `json:"sessionUpdate"`
		CurrentModeID string `json:"currentModeId"`
	}
	acpConfigUpdate struct {
		SessionUpdate string            `json:"sessionUpdate"`
		ConfigOptions []acpConfigOption `json:"configOptions"`
	}
	acpInfoUpdate struct {
		SessionUpdate string `json:"sessionUpdate"`
		Title         string `json:"title,omitempty"`
		UpdatedAt     string `json:"updatedAt"`
	}
	acpNotice struct {
		SessionUpdate string `json:"sessionUpdate"`
		Severity      string `json:"severity"`
		Title         string `json:"title"`
		Description   string `json:"description,omitempty"`
	}
)

// acpContent is a content block, read from prompts and written in
// updates.
type acpContent struct {
	Type     string       `json:"type"`
	Text     string       `json:"text,omitempty"`
	Data     string       `json:"data,omitempty"`
	MimeType string       `json:"mimeType,omitempty"`
	URI      string       `json:"uri,omitempty"`
	Name     string       `json:"name,omitempty"`
	Resource *acpResource `json:"resource,omitempty"`
}

type acpResource struct {
	URI      string  `json:"uri"`
	MimeType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     *string `json:"blob,omitempty"`
}

// acpToolContent is a tool call's content: a content block, or a diff.
type acpToolContent struct {
	Type    string      `json:"type"`
	Content *acpContent `json:"content,omitempty"`
	Path    string      `json:"path,omitempty"`
	OldText *string     `json:"oldText,omitempty"`
	NewText *string     `json:"newText,omitempty"`
}

type acpLocation struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// acpConfigOption is a select session config option.
type acpConfigOption struct {
	ID           string           `json:"id"`
	Name         string           `json:"name"`
	Description  string           `json:"description,omitempty"`
	Category     string           `json:"category,omitempty"`
	Type         string           `json:"type"`
	CurrentValue string           `json:"currentValue"`
	Options      []acpConfigValue `json:"options"`
}

type acpConfigValue struct {
	Value       string `json:"value"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

func (ss *acpSession) update(u any) { ss.srv.notify(ss.id, u) }

func textContent(text string) acpContent { return acpContent{Type: "text", Text: text} }

// acpBuiltinCommands are the slash commands zot acp runs itself.
var acpBuiltinCommands = []acpCommand{
	{Name: "compact", Description: "summarise the conversation to free context"},
	{Name: "rewind", Description: "undo the last N prompts (default 1): the files they changed and the conversation; add force to overwrite files changed since", Input: &acpCommandInput{Hint: "[N] [force]"}},
}

// announce tells the editor what the new session offers: its commands,
// and what the user should know before the first prompt.
func (ss *acpSession) announce() {
	cmds := slices.Clone(acpBuiltinCommands)
	if ss.b.Rewind == nil {
		cmds = cmds[:1]
	}
	cmds = append(cmds, ss.b.Commands...)
	ss.update(acpCommandsUpdate{SessionUpdate: "available_commands_update", AvailableCommands: cmds})
	ss.srv.mu.Lock()
	notices := ss.srv.caps.Session != nil && ss.srv.caps.Session.Notices != nil
	ss.srv.mu.Unlock()
	if !notices {
		return // the first prompt's answer begins with them
	}
	ss.mu.Lock()
	notes := ss.b.Notes
	ss.b.Notes = nil
	ss.mu.Unlock()
	for _, n := range notes {
		ss.update(acpNotice{SessionUpdate: "notice", Severity: "warning", Title: "zot", Description: n})
	}
}

// state is the modes and config options of the session.
func (ss *acpSession) state() sessionState {
	return sessionState{Modes: acpModeState{CurrentModeID: ss.mode(), AvailableModes: ss.b.Modes}, ConfigOptions: ss.configOptions()}
}

func (ss *acpSession) mode() string { return ss.b.Mode() }

// modeChanged tells the editor of the session's new mode.
func (ss *acpSession) modeChanged(id string) {
	ss.update(acpModeUpdate{SessionUpdate: "current_mode_update", CurrentModeID: id})
	ss.update(acpConfigUpdate{SessionUpdate: "config_option_update", ConfigOptions: ss.configOptions()})
}

// configOptions are the session's options: the mode, the model and the
// thinking level, each with the values zot can use.
func (ss *acpSession) configOptions() []acpConfigOption {
	a := ss.b.Agent
	mode := acpConfigOption{ID: "mode", Name: "Mode", Description: "when zot asks before it runs a command or changes a file", Category: "mode", Type: "select", CurrentValue: ss.mode()}
	for _, m := range ss.b.Modes {
		mode.Options = append(mode.Options, acpConfigValue{Value: m.ID, Name: m.Name, Description: m.Description})
	}
	current := a.CurrentModel()
	model := acpConfigOption{ID: "model", Name: "Model", Category: "model", Type: "select", CurrentValue: current}
	for _, m := range modelsFor(ss.b.Provider) {
		model.Options = append(model.Options, acpConfigValue{Value: m.ID, Name: cmp.Or(m.Name, m.ID)})
	}
	if !slices.ContainsFunc(model.Options, func(v acpConfigValue) bool { return v.Value == current }) {
		model.Options = append([]acpConfigValue{{Value: current, Name: current}}, model.Options...)
	}
	level := a.CurrentReasoning()
	thought := acpConfigOption{ID: "thought_level", Name: "Thinking", Category: "thought_level", Type: "select", CurrentValue: cmp.Or(level, "default"),
		Options: []acpConfigValue{{Value: "default", Name: "the model's default"}}}
	for _, l := range acpThoughtLevels(lookupModel(ss.b.Provider, current)) {
		thought.Options = append(thought.Options, acpConfigValue{Value: l, Name: l})
	}
	if !slices.ContainsFunc(thought.Options, func(v acpConfigValue) bool { return v.Value == thought.CurrentValue }) {
		thought.Options = append(thought.Options, acpConfigValue{Value: thought.CurrentValue, Name: thought.CurrentValue})
	}
	return []acpConfigOption{mode, model, thought}
}

// acpThoughtLevels are the --reasoning levels a model takes: none for a
// model known not to reason, its own list when the catalogue has one.
func acpThoughtLevels(m ModelInfo) []string {
	switch {
	case m.Known && !m.Reasoning:
		return nil
	case m.Efforts != "":
		return append([]string{ReasoningOff}, strings.Fields(m.Efforts)...)
	}
	return append([]string{ReasoningOff}, reasoningLevels...)
}

// fitThoughtLevel moves a thinking level the model does not offer (max,
// chosen on a model that has it, on one whose top is high) to the one
// its requests carry, so that the level the editor shows is the one used.
func (ss *acpSession) fitThoughtLevel() error {
	a := ss.b.Agent
	level, info := a.CurrentReasoning(), lookupModel(ss.b.Provider, a.CurrentModel())
	if level == "" || slices.Contains(acpThoughtLevels(info), level) {
		return nil
	}
	return a.SetReasoning(reasoningFor(info, level))
}

func (ss *acpSession) setMode(id string) error {
	if m, err := ParseMode(id); err == nil {
		id = string(m) // Claude Code's names too: acceptEdits, default …
	}
	if !slices.ContainsFunc(ss.b.Modes, func(m acpMode) bool { return m.ID == id }) {
		var ids []string
		for _, m := range ss.b.Modes {
			ids = append(ids, m.ID)
		}
		return acpErrorf(acpInvalidParams, "invalid params: no mode %q (zot has %s)", truncate(id, 40), strings.Join(ids, ", "))
	}
	// The editor hears of the change through HearMode (modeChanged).
	if err := ss.b.SetMode(id); err != nil {
		return acpErrorf(acpInvalidParams, "mode %s: %v", id, err)
	}
	return nil
}

func (ss *acpSession) setConfig(id, value string) error {
	var opt *acpConfigOption
	opts := ss.configOptions()
	for i := range opts {
		if opts[i].ID == id {
			opt = &opts[i]
		}
	}
	if opt == nil {
		return acpErrorf(acpInvalidParams, "invalid params: no config option %q (zot has mode, model, thought_level)", truncate(id, 40))
	}
	if !slices.ContainsFunc(opt.Options, func(v acpConfigValue) bool { return v.Value == value }) {
		return acpErrorf(acpInvalidParams, "invalid params: %q is not a value of %s", truncate(value, 60), id)
	}
	var err error
	switch id {
	case "mode":
		return ss.setMode(value)
	case "model":
		if err = ss.b.Agent.SetModel(value); err == nil {
			err = ss.fitThoughtLevel()
		}
	case "thought_level":
		if value == "default" {
			value = ""
		}
		err = ss.b.Agent.SetReasoning(value)
	}
	if errors.Is(err, ErrBusy) {
		return acpErrorf(acpInternalError, "%s: a prompt is running; change it once the turn ends", id)
	}
	return err
}

// prompt runs one prompt turn and says why it stopped.
func (ss *acpSession) prompt(blocks []acpContent) (string, error) {
	text, extra, err := ss.promptContent(blocks)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(ss.srv.ctx)
	defer cancel()
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return "", acpErrorf(acpNotFound, "session %s is closed", ss.id)
	}
	if ss.running != nil {
		ss.mu.Unlock()
		return "", acpErrorf(acpInvalidRequest, "session %s is already running a prompt: send session/cancel, or wait for its answer", ss.id)
	}
	ss.running, ss.ctx = cancel, ctx
	ss.calls = map[string]*acpCallState{}
	notes := ss.b.Notes
	ss.b.Notes = nil
	ss.busy.Add(1)
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		ss.running = nil
		ss.mu.Unlock()
		ss.busy.Done()
	}()
	for _, n := range notes {
		ss.update(acpChunk{SessionUpdate: "agent_message_chunk", Content: textContent("zot: " + n + "\n\n")})
	}

	turn := acpTurn{stop: StopEndTurn}
	sink := ss.sink(&turn)
	if name, args, ok := acpCommandCall(text); ok && ss.command(ctx, name, args, sink) {
		if ctx.Err() != nil {
			return "cancelled", nil
		}
		return "end_turn", nil
	}
	run := ss.b.Prompt
	if run == nil {
		run = ss.b.Agent.Prompt
	}
	err = run(ctx, text, extra, sink)
	ss.title(text)
	var steps maxStepsError
	switch {
	case ctx.Err() != nil:
		return "cancelled", nil
	case errors.Is(err, ErrBlocked):
		// The stop reason alone does not say who refused or why; the TUI
		// shows the same line.
		ss.update(acpChunk{SessionUpdate: "agent_message_chunk", Content: textContent("zot: " + err.Error() + ss.forgetRefused(turn.prompted))})
		return "refusal", nil
	case errors.As(err, &steps):
		return "max_turn_requests", nil
	case errors.Is(err, ErrEmptyPrompt):
		return "", acpErrorf(acpInvalidParams, "%s", err.Error()) // the client's to mend
	case err != nil:
		return "", acpErrorf(acpInternalError, "%s", err.Error())
	case turn.stop == StopLength:
		return "max_tokens", nil
	case turn.stop == StopRefusal:
		note := "zot: the model refused to answer." + ss.forgetRefused(turn.prompted)
		if turn.spoke {
			note = "\n\n" + note
		}
		ss.update(acpChunk{SessionUpdate: "agent_message_chunk", Content: textContent(note)})
		return "refusal", nil
	}
	return "end_turn", nil
}

// forgetRefused takes the refused prompt sent at prompted, and all that
// followed it, out of the conversation, as the refusal tells the editor
// (the next prompt does not carry it), and says so. A prompt whose model
// called tools stays: what they did happened, and the model must know of
// it. A prompt a hook refused before it was recorded has nothing to take.
func (ss *acpSession) forgetRefused(prompted time.Time) string {
	if prompted.IsZero() {
		return ""
	}
	a := ss.b.Agent
	msgs := a.Messages()
	at := len(msgs) - 1
	for at >= 0 && !(msgs[at].isPrompt() && msgs[at].Time.Equal(prompted)) {
		at--
	}
	switch {
	case at < 0:
		return ""
	case slices.ContainsFunc(msgs[at:], func(m Message) bool { return len(m.ToolCalls()) > 0 }):
		return " The model called tools for this prompt, so it stays in the conversation."
	}
	if err := a.Rewind(at); err != nil {
		ss.srv.Log("acp: session %s: could not take the refused prompt out of the conversation: %v", ss.id, err)
		return " It stays in the conversation: " + err.Error()
	}
	return " This prompt is left out of the conversation."
}

// title names the session after its first prompt.
func (ss *acpSession) title(text string) {
	ss.mu.Lock()
	first := !ss.titled && strings.TrimSpace(text) != ""
	ss.titled = ss.titled || first
	ss.mu.Unlock()
	if first {
		ss.update(acpInfoUpdate{SessionUpdate: "session_info_update", Title: acpTitle(text), UpdatedAt: time.Now().UTC().Format(time.RFC3339)})
	}
}

// acpCommandCall splits "/name args".
func acpCommandCall(text string) (name, args string, ok bool) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") || strings.HasPrefix(t, "//") {
		return "", "", false
	}
	name, args, _ = strings.Cut(t[1:], " ")
	return name, strings.TrimSpace(args), name != ""
}

// command runs a built-in slash command, telling the user how it went;
// handled is false for any other.
func (ss *acpSession) command(ctx context.Context, name, args string, sink Sink) (handled bool) {
	say := func(text string) {
		ss.update(acpChunk{SessionUpdate: "agent_message_chunk", Content: textContent(text)})
	}
	switch name {
	case "compact":
		if err := ss.b.Agent.Compact(ctx, sink); err != nil && ctx.Err() == nil {
			say("Not compacted: " + err.Error())
		} else if ctx.Err() == nil {
			say("Compacted: the conversation is summarised.")
		}
		return true
	case "rewind":
		if ss.b.Rewind == nil {
			return false
		}
		n, force := 1, false
		for _, w := range strings.Fields(args) {
			switch v, err := strconv.Atoi(w); {
			case w == "force":
				force = true
			case err == nil && v > 0:
				n = v
			default:
				say(fmt.Sprintf("/rewind takes a number of prompts and force, not %q", w))
				return true
			}
		}
		if msg, err := ss.b.Rewind(n, force); err != nil {
			say("Not rewound: " + err.Error())
		} else {
			say(msg)
		}
		return true
	}
	return false
}

// promptContent reads a prompt's blocks: the text the user typed, and
// the rest (images, resources) as blocks that go with it.
func (ss *acpSession) promptContent(blocks []acpContent) (text string, extra []Block, err error) {
	var texts []string
	for i, c := range blocks {
		switch c.Type {
		case "text":
			texts = append(texts, c.Text)
		case "image":
			if !slices.Contains(acpImageTypes, c.MimeType) {
				return "", nil, acpErrorf(acpInvalidParams, "invalid params: prompt[%d]: image type %q is not one of %s", i, truncate(c.MimeType, 40), strings.Join(acpImageTypes, ", "))
			}
			if _, err := base64.StdEncoding.DecodeString(c.Data); err != nil || c.Data == "" {
				return "", nil, acpErrorf(acpInvalidParams, "invalid params: prompt[%d]: the image's data is not base64", i)
			}
			extra = append(extra, Block{Type: BlockImage, MimeType: c.MimeType, Data: c.Data})
		case "resource_link":
			extra = append(extra, TextBlock(fmt.Sprintf("The user refers to %s (%s): read it with your tools if you need it.", acpURIPath(c.URI), c.Name)))
		case "resource":
			r := c.Resource
			switch {
			case r == nil:
				return "", nil, acpErrorf(acpInvalidParams, "invalid params: prompt[%d]: a resource without its contents", i)
			case r.Text != nil:
				// Fenced so that the file's own fences (a README's) cannot end it early.
				extra = append(extra, TextBlock(fmt.Sprintf("Contents of %s, as the user's editor has it:\n\n%s", acpURIPath(r.URI), acpFence(*r.Text, ""))))
			case r.Blob != nil && slices.Contains(acpImageTypes, r.MimeType):
				extra = append(extra, Block{Type: BlockImage, MimeType: r.MimeType, Data: *r.Blob})
			default:
				extra = append(extra, TextBlock(fmt.Sprintf("The user attached %s (%s), binary, which zot cannot show you.", acpURIPath(r.URI), r.MimeType)))
			}
		default:
			return "", nil, acpErrorf(acpInvalidParams, "invalid params: prompt[%d]: content of type %q is not one zot takes (text, image, resource_link, resource)", i, truncate(c.Type, 40))
		}
	}
	return strings.Join(texts, "\n\n"), extra, nil
}

// acpImageTypes are the image formats both provider APIs accept.
var acpImageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// acpURIPath is a file URI's path, else the URI.
func acpURIPath(uri string) string {
	if u, err := url.Parse(uri); err == nil && u.Scheme == "file" {
		return u.Path
	}
	return uri
}

// acpTurn is what a prompt's answer is made of besides its updates.
type acpTurn struct {
	stop     string    // the last turn's stop reason
	prompted time.Time // when the prompt was recorded; zero: it was not
	spoke    bool      // the model's text reached the editor
}

// sink turns the agent's events into session updates, and notes in turn
// what the answer needs.
func (ss *acpSession) sink(turn *acpTurn) Sink {
	prompts := 0
	return func(e Event) {
		switch e.Type {
		case EventTextDelta:
			if e.Delta != "" {
				turn.spoke = true
				ss.update(acpChunk{SessionUpdate: "agent_message_chunk", Content: textContent(e.Delta)})
			}
		case EventThinkingDelta:
			if e.Delta != "" {
				ss.update(acpChunk{SessionUpdate: "agent_thought_chunk", Content: textContent(e.Delta)})
			}
		case EventMessageBlocked:
			ss.update(acpChunk{SessionUpdate: "agent_message_chunk", Content: textContent(e.Reason)})
		case EventUserMessage:
			// The first is the editor's own prompt; later ones come from
			// a hook that sent the model on.
			if prompts++; prompts == 1 {
				turn.prompted = e.Time
			} else {
				for _, b := range e.Content {
					if b.Type == BlockText {
						ss.update(acpChunk{SessionUpdate: "user_message_chunk", Content: textContent(b.Text)})
					}
				}
			}
		case EventToolUseStart:
			ss.toolStarted(e.ID, e.Name)
		case EventToolCall:
			ss.toolCalled(ToolCall{ID: e.ID, Name: e.Name, Args: e.Args})
		case EventToolProgress:
			ss.toolProgress(e.ID)
		case EventToolResult:
			ss.toolResult(e)
		case EventUsage:
			a := ss.b.Agent
			ss.update(acpUsageUpdate{SessionUpdate: "usage_update", Used: e.Usage.ContextTokens(),
				Size: lookupModel(ss.b.Provider, a.CurrentModel()).ContextWindow, Cost: &acpCost{Amount: e.Cumulative.CostUSD, Currency: "USD"}})
		case EventTurnEnd:
			turn.stop = e.Stop
		case EventRetry:
			ss.srv.Log("acp: retrying in %s (attempt %d of %d): %s", e.Wait.Round(100*time.Millisecond), e.Attempt, e.Attempts, e.Error)
		case EventError:
			if e.Truncated {
				ss.update(acpChunk{SessionUpdate: "agent_thought_chunk", Content: textContent("zot: " + e.Message)})
			}
		}
	}
}

func (ss *acpSession) callState(id, name string) (st *acpCallState, isNew bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.calls == nil {
		ss.calls = map[string]*acpCallState{}
	}
	if st = ss.calls[id]; st == nil {
		st = &acpCallState{name: name}
		ss.calls[id] = st
		isNew = true
	}
	return st, isNew
}

// toolStarted announces a call as the model begins it, before its
// arguments are whole.
func (ss *acpSession) toolStarted(id, name string) {
	ss.callState(id, name)
	ss.update(acpToolCall{SessionUpdate: "tool_call", ToolCallID: id, Title: acpToolTitle(ToolCall{Name: name}), Kind: acpToolKind(name), Status: "pending"})
}

// toolCalled gives the call its arguments, where it works and, for an
// edit or write, the change it would make.
func (ss *acpSession) toolCalled(call ToolCall) {
	st, isNew := ss.callState(call.ID, call.Name)
	u := ss.describe(call)
	ss.mu.Lock()
	ctx := ss.ctx
	ss.mu.Unlock()
	if c, ok := PreviewFileChange(ctx, ss.b.Env, call); ok {
		st.change = &c
		u.Content = append(u.Content, acpDiff(c))
	}
	u.SessionUpdate, u.Status = "tool_call_update", ""
	if isNew {
		u.SessionUpdate, u.Status = "tool_call", "pending"
	}
	ss.update(u)
}

func (ss *acpSession) toolProgress(id string) {
	st, _ := ss.callState(id, "")
	ss.mu.Lock()
	first := !st.started
	st.started = true
	ss.mu.Unlock()
	if first {
		ss.update(acpToolCall{SessionUpdate: "tool_call_update", ToolCallID: id, Status: "in_progress"})
	}
}

// toolResult finishes a call: its status, its output and, for an edit
// or write that went through, its diff.
func (ss *acpSession) toolResult(e Event) {
	st, _ := ss.callState(e.ID, e.Name)
	u := acpToolCall{SessionUpdate: "tool_call_update", ToolCallID: e.ID, Status: "completed"}
	if e.IsError {
		u.Status = "failed"
	}
	if st.change != nil && !e.IsError {
		u.Content = append(u.Content, acpDiff(*st.change))
	}
	blocks := e.Content
	if st.name == ToolBash {
		// A command's output is the model's doing: fenced, so that the
		// editor shows it as text rather than rendering it as markdown.
		blocks = nil
		for _, b := range e.Content {
			if b.Type == BlockText && b.Text != "" {
				b.Text = acpFence(b.Text, "")
			}
			blocks = append(blocks, b)
		}
	}
	u.Content = append(u.Content, acpResultContent(blocks)...)
	u.RawOutput = struct {
		Content []wireBlock `json:"content"`
		IsError bool        `json:"is_error"`
		Details string      `json:"details,omitempty"`
	}{wireBlocks(e.Content), e.IsError, e.Details}
	ss.update(u)
}

// acpFence fences text as a markdown code block whose fence no run of
// backticks in text can close.
func acpFence(text, lang string) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return fence + lang + "\n" + strings.TrimSuffix(text, "\n") + "\n" + fence
}

// acpResultContent is a tool result's blocks as tool call content.
func acpResultContent(blocks []Block) []acpToolContent {
	var out []acpToolContent
	for _, b := range blocks {
		var c acpContent
		switch b.Type {
		case BlockText:
			if b.Text == "" {
				continue
			}
			c = textContent(b.Text)
		case BlockImage:
			c = acpContent{Type: "image", MimeType: b.MimeType, Data: b.Data}
		default:
			continue
		}
		out = append(out, acpToolContent{Type: "content", Content: &c})
	}
	return out
}

func acpDiff(c FileChange) acpToolContent {
	d := acpToolContent{Type: "diff", Path: c.Path, NewText: &c.NewText}
	if !c.IsNew {
		d.OldText = &c.OldText
	}
	return d
}

// describe is a call as the editor shows it: a title, a kind, where it
// works and its raw arguments.
func (ss *acpSession) describe(call ToolCall) acpToolCall {
	u := acpToolCall{ToolCallID: call.ID, Title: acpToolTitle(call), Kind: acpToolKind(call.Name), RawInput: argsJSON(call.Args)}
	var path string
	line := 0
	switch call.Name {
	case ToolRead:
		if a, err := ParseReadArgs(call.Args); err == nil {
			path, line = a.Path, a.Offset
		}
	case ToolWrite, ToolEdit:
		path = builtinPath(call)
	case ToolBash:
		if a, err := ParseBashArgs(call.Args); err == nil {
			c := textContent(acpFence(a.Command, "sh"))
			u.Content = append(u.Content, acpToolContent{Type: "content", Content: &c})
		}
	}
	if path != "" {
		u.Locations = []acpLocation{{Path: absPath(ss.cwd, path), Line: max(line, 0)}}
	}
	return u
}

// acpToolTitle is a call's title: what it does, in a line.
func acpToolTitle(call ToolCall) string {
	switch call.Name {
	case ToolBash:
		if a, err := ParseBashArgs(call.Args); err == nil && a.Command != "" {
			return truncate(strings.Join(strings.Fields(a.Command), " "), 200)
		}
		return "Run a command"
	case ToolRead, ToolWrite, ToolEdit:
		verb := map[string]string{ToolRead: "Read", ToolWrite: "Write", ToolEdit: "Edit"}[call.Name]
		if p := builtinPath(call); p != "" {
			return verb + " " + truncate(p, 200)
		}
		return verb
	case ToolSkill:
		if a, err := ParseSkillArgs(call.Args); err == nil && a.Name != "" {
			return "Skill " + truncate(a.Name, 80)
		}
	case ToolPresentPlan:
		return "The plan, for your approval"
	}
	if rest, ok := strings.CutPrefix(call.Name, "mcp__"); ok {
		server, tool, _ := strings.Cut(rest, "__")
		return server + ": " + tool
	}
	return call.Name
}

// acpToolKind is the kind of a tool, for the editor's icons.
func acpToolKind(name string) string {
	switch name {
	case ToolRead, ToolSkill:
		return "read"
	case ToolWrite, ToolEdit:
		return "edit"
	case ToolBash:
		return "execute"
	case ToolPresentPlan:
		return "switch_mode"
	}
	return "other"
}

// The permission options: allow and reject once, and "always" where the
// question offers what always would cover (approvals.go).
var (
	acpAllowOnce    = acpPermissionOption{"allow-once", "Allow once", "allow_once"}
	acpAllowAlways  = acpPermissionOption{"allow-always", "Allow always", "allow_always"}
	acpRejectOnce   = acpPermissionOption{"reject-once", "Reject", "reject_once"}
	acpRejectAlways = acpPermissionOption{"reject-always", "Reject always", "reject_always"}
)

type acpPermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// ask is the session's approvalAsker: the question as the editor's
// permission request, with the call, who asked and why, and an edit's
// diff. Silence past the approval timeout, a cancelled turn and any
// answer but an allow are a no.
func (ss *acpSession) ask(ctx context.Context, q approvalQuestion) approvalAnswer {
	if q.Plan != nil {
		return ss.askPlan(ctx, q)
	}
	u := ss.describe(q.Call)
	u.Status = "pending"
	reason := textContent("zot asks first: " + q.Reason())
	u.Content = append([]acpToolContent{{Type: "content", Content: &reason}}, u.Content...)
	if c, ok := PreviewFileChange(ctx, ss.b.Env, q.Call); ok {
		u.Content = append(u.Content, acpDiff(c))
	}
	options := []acpPermissionOption{acpAllowOnce}
	if q.Offer.any() {
		always := acpAllowAlways
		always.Name = "Allow always this session: " + q.Offer.Describe()
		never := acpRejectAlways
		never.Name = "Reject always this session: " + q.Offer.Describe()
		options = append(options, always, acpRejectOnce, never)
	} else {
		options = append(options, acpRejectOnce)
	}
	id, no := ss.requestPermission(ctx, u, options)
	switch {
	case no != nil:
		return *no
	case id == acpAllowOnce.OptionID:
		return approvalAnswer{Decision: ApprovalAllow, By: "the editor's user"}
	case id == acpAllowAlways.OptionID && q.Offer.any():
		return approvalAnswer{Decision: ApprovalAlways, By: "the editor's user"}
	case id == acpRejectAlways.OptionID && q.Offer.any():
		return approvalAnswer{Decision: ApprovalNever, By: "the editor's user"}
	case id == acpRejectOnce.OptionID:
		return approvalAnswer{Decision: ApprovalDeny, By: "the editor's user"}
	}
	return acpUnoffered(id)
}

// askPlan puts a plan to the editor: the session's plan update, then a
// permission request on the present_plan call whose options approve the
// plan in each mode offered, or keep planning.
func (ss *acpSession) askPlan(ctx context.Context, q approvalQuestion) approvalAnswer {
	ss.update(acpPlanUpdate{SessionUpdate: "plan", Entries: acpPlanEntries(q.Plan.Text)})
	u := ss.describe(q.Call)
	u.Status = "pending"
	plan := textContent(q.Plan.Text)
	u.Content = []acpToolContent{{Type: "content", Content: &plan}}
	var options []acpPermissionOption
	for _, m := range q.Plan.Modes {
		options = append(options, acpPermissionOption{acpApprovePlan + m, "Approve the plan, then " + Mode(m).Name(), "allow_once"})
	}
	options = append(options, acpPermissionOption{"keep-planning", "Keep planning", "reject_once"})
	id, no := ss.requestPermission(ctx, u, options)
	switch m, ok := strings.CutPrefix(id, acpApprovePlan); {
	case no != nil:
		return *no
	case ok && slices.Contains(q.Plan.Modes, m):
		return approvalAnswer{Decision: ApprovalAllow, Mode: m, By: "the editor's user"}
	case id == "keep-planning":
		return approvalAnswer{Decision: ApprovalDeny, By: "the editor's user"}
	}
	return acpUnoffered(id)
}

// acpApprovePlan starts the option ids that approve a plan: then the mode.
const acpApprovePlan = "approve-plan:"

// acpPlanUpdate is the plan session update: the plan's steps.
type acpPlanUpdate struct {
	SessionUpdate string         `json:"sessionUpdate"`
	Entries       []acpPlanEntry `json:"entries"`
}

type acpPlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

// acpPlanEntries are a markdown plan's steps: its list items (- , * , 1. ),
// each with the lines under it; a plan without a list is one entry.
func acpPlanEntries(plan string) []acpPlanEntry {
	var out []acpPlanEntry
	for _, line := range strings.Split(plan, "\n") {
		if m := acpPlanItem().FindStringSubmatch(line); m != nil {
			out = append(out, acpPlanEntry{Content: strings.TrimSpace(m[1]), Priority: "medium", Status: "pending"})
		}
	}
	if len(out) == 0 {
		out = []acpPlanEntry{{Content: strings.TrimSpace(plan), Priority: "medium", Status: "pending"}}
	}
	return out
}

var acpPlanItem = lazyRegexp(`^\s{0,3}(?:[-*+]|\d+[.)])\s+(.*)$`)

// acpUnoffered is the answer to an option zot did not offer: a no.
func acpUnoffered(id string) approvalAnswer {
	return approvalAnswer{Decision: ApprovalDeny, By: fmt.Sprintf("the editor (an answer zot did not offer, %q, counts as no)", truncate(id, 60))}
}

// requestPermission asks the editor, and returns the option chosen, or
// the no that silence past the approval timeout, a cancelled turn, a
// failed request or a cancelled question is.
func (ss *acpSession) requestPermission(ctx context.Context, u acpToolCall, options []acpPermissionOption) (string, *approvalAnswer) {
	no := func(by string) (string, *approvalAnswer) {
		return "", &approvalAnswer{Decision: ApprovalDeny, By: by}
	}
	wait, cancel := context.WithTimeout(ctx, ss.srv.ApprovalTimeout)
	defer cancel()
	var resp struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	err := ss.srv.call(wait, "session/request_permission", struct {
		SessionID string                `json:"sessionId"`
		ToolCall  acpToolCall           `json:"toolCall"`
		Options   []acpPermissionOption `json:"options"`
	}{ss.id, u, options}, &resp)
	switch {
	case ctx.Err() != nil:
		return no("the editor (the turn was cancelled)")
	case wait.Err() != nil:
		return no(fmt.Sprintf("the editor, which did not answer within %s", ss.srv.ApprovalTimeout))
	case err != nil:
		return no("the editor (" + err.Error() + ")")
	case resp.Outcome.Outcome == "cancelled":
		return no("the editor's user (cancelled)")
	case resp.Outcome.Outcome != "selected":
		return no(fmt.Sprintf("the editor (an answer zot did not offer, %q, counts as no)", truncate(resp.Outcome.Outcome, 60)))
	}
	return resp.Outcome.OptionID, nil
}

// elicit is the session's Elicitor: an MCP server's question as the
// editor's elicitation/create (ACP's, in the modes the editor advertised),
// waited for at most the approval timeout. What the editor answers goes
// back to the MCP client, which checks content against the form.
func (ss *acpSession) elicit(ctx context.Context, q Elicitation) ElicitAnswer {
	p := map[string]any{"sessionId": ss.id, "mode": q.Mode, "message": fmt.Sprintf("MCP server %q asks: %s", q.Server, q.Message)}
	if q.Mode == ElicitURL {
		p["url"] = q.URL
		p["elicitationId"] = fmt.Sprintf("%s-%d", ss.id, ss.elicits.Add(1))
	} else {
		p["requestedSchema"] = q.Schema()
	}
	wait, cancel := context.WithTimeout(ctx, ss.srv.ApprovalTimeout)
	defer cancel()
	var resp struct {
		Action  ElicitAction   `json:"action"`
		Content map[string]any `json:"content"`
	}
	err := ss.srv.call(wait, "elicitation/create", p, &resp)
	switch {
	case ctx.Err() != nil:
		return ElicitAnswer{Action: ElicitCancel, Why: "(the question ended before the editor answered)"}
	case wait.Err() != nil:
		return ElicitAnswer{Action: ElicitCancel, Why: fmt.Sprintf("(the editor did not answer within %s)", ss.srv.ApprovalTimeout)}
	case err != nil:
		return ElicitAnswer{Action: ElicitCancel, Why: "(the editor: " + err.Error() + ")"}
	}
	switch resp.Action {
	case ElicitAccept, ElicitDecline, ElicitCancel:
		return ElicitAnswer{Action: resp.Action, Content: resp.Content}
	}
	return ElicitAnswer{Action: ElicitCancel, Why: fmt.Sprintf("(the editor answered %q, which is none of accept, decline and cancel)", truncate(string(resp.Action), 40))}
}

// readTextFile and writeTextFile are the editor's side of the file tools
// (EditorFiles), each bounded by the approval timeout.
func (ss *acpSession) readTextFile(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ss.srv.ApprovalTimeout)
	defer cancel()
	var resp struct {
		Content *string `json:"content"`
	}
	err := ss.srv.call(ctx, "fs/read_text_file", struct {
		SessionID string `json:"sessionId"`
		Path      string `json:"path"`
	}{ss.id, path}, &resp)
	if err == nil && resp.Content == nil {
		err = errors.New(`the editor's answer has no "content"`)
	}
	if err != nil {
		return "", err
	}
	return *resp.Content, nil
}

func (ss *acpSession) writeTextFile(ctx context.Context, path, text string) error {
	ctx, cancel := context.WithTimeout(ctx, ss.srv.ApprovalTimeout)
	defer cancel()
	return ss.srv.call(ctx, "fs/write_text_file", struct {
		SessionID string `json:"sessionId"`
		Path      string `json:"path"`
		Content   string `json:"content"`
	}{ss.id, path, text}, nil)
}

// replay sends the conversation as updates, for session/load.
func (ss *acpSession) replay() {
	for _, m := range ss.b.Agent.Messages() {
		switch {
		case m.Role == RoleAssistant:
			for _, b := range m.Content {
				switch b.Type {
				case BlockText:
					ss.update(acpChunk{SessionUpdate: "agent_message_chunk", Content: textContent(b.Text)})
				case BlockThinking:
					if !b.Redacted && b.Text != "" {
						ss.update(acpChunk{SessionUpdate: "agent_thought_chunk", Content: textContent(b.Text)})
					}
				case BlockToolCall:
					call := ToolCall{ID: b.ID, Name: b.Name, Args: b.Args}
					ss.callState(b.ID, b.Name)
					u := ss.describe(call)
					u.SessionUpdate, u.Status = "tool_call", "pending"
					ss.update(u)
				}
			}
		case m.isPrompt():
			for _, b := range m.Content {
				switch b.Type {
				case BlockText:
					ss.update(acpChunk{SessionUpdate: "user_message_chunk", Content: textContent(b.Text)})
				case BlockImage:
					ss.update(acpChunk{SessionUpdate: "user_message_chunk", Content: acpContent{Type: "image", MimeType: b.MimeType, Data: b.Data}})
				}
			}
		default:
			for _, b := range m.Content {
				if b.Type == BlockToolResult {
					ss.toolResult(Event{ID: b.CallID, IsError: b.IsError, Content: b.Content})
				}
			}
		}
	}
}

// cancel stops the prompt in flight, if any: its model call, its tools,
// a permission request it waits on.
func (ss *acpSession) cancel() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.running != nil {
		ss.running()
	}
}

// close cancels the prompt running, waits for it to end, and frees what
// the session holds (its MCP servers, extensions, session file); once.
// closed is set, under mu, before the wait: a prompt that found the
// session before it left the table then sees it closed rather than
// starting on what is being freed.
func (ss *acpSession) close() {
	ss.mu.Lock()
	done := ss.closed
	ss.closed = true
	if ss.running != nil {
		ss.running()
	}
	ss.mu.Unlock()
	if done {
		return
	}
	ss.busy.Wait()
	if ss.b != nil && ss.b.Close != nil {
		ss.b.Close()
	}
}
