package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Slash commands; the dialogs they open are in tui_dialogs.go.

// slashCommand is a built-in command. Every command acts at once, while
// the agent works too; stops marks those that change the conversation or
// the model, which stop the running turn before they make the change
// (whenIdle), as /help says.
type slashCommand struct {
	name, args, help string
	stops            bool
	run              func(t *TUI, args string)
}

func builtinCommands() []slashCommand {
	return []slashCommand{
		{"help", "", "keys and commands", false, (*TUI).cmdHelp},
		{"model", "[provider/]ID", "switch the model (a picker without an ID)", true, (*TUI).cmdModel},
		{"sessions", "", "resume a saved session of this directory", true, (*TUI).cmdSessions},
		{"fork", "", "continue from an earlier prompt in a new session", true, (*TUI).cmdFork},
		{"undo", "[ID]", "restore the files to before the last prompt's changes (or checkpoint ID)", true, (*TUI).cmdUndo},
		{"rewind", "", "go back to before a prompt: files, conversation or both", true, (*TUI).cmdRewind},
		{"session", "export [PATH] | import PATH | tree", "a session to or from a file; its tree of forks", true, (*TUI).cmdSession},
		{"compact", "", "summarise the conversation to free context", true, (*TUI).cmdCompact},
		{"rename", "NAME", "name this session, so that zot -r NAME resumes it", false, (*TUI).cmdRename},
		{"clear", "", "start the conversation afresh", true, (*TUI).cmdClear},
		{"btw", "[QUESTION]", "ask a side question (not added to the conversation)", false, (*TUI).cmdBtw},
		{"jail", "", "keep read/write/edit inside the working directory", false, (*TUI).cmdJail},
		{"unjail", "", "let read/write/edit reach any path", false, (*TUI).cmdUnjail},
		{"reload-ext", "", "restart every extension", true, (*TUI).cmdReloadExt},
		{"skills", "[NAME]", "list skills, or show one", false, (*TUI).cmdSkills},
		{"login", "[PROVIDER]", "save an API key to auth.json", true, (*TUI).cmdLogin},
		{"logout", "[PROVIDER]", "remove a saved API key", true, (*TUI).cmdLogout},
		{"mode", "[NAME]", "show the modes, or switch to one (shift+tab cycles them)", false, (*TUI).cmdMode},
		{"status", "", "model, server, session, context, sandbox, jail, approvals, trust, MCP servers", false, (*TUI).cmdStatus},
		{"cost", "", "tokens and cost of this session so far", false, (*TUI).cmdCost},
		{"yolo", "[on|off]", "run tool calls without asking (off: ask each time)", false, (*TUI).cmdYolo},
		{"exit", "", "leave zot", false, func(t *TUI, _ string) { t.exit(exitOK) }},
		{"permissions", "", "the rules in force, the files they come from, what was skipped", false, (*TUI).cmdPermissions},
		{"mcp", "", "the MCP servers: transport, state, tools", false, (*TUI).cmdMCP},
		{"diff", "", "what this session changed in the files (from the checkpoints)", false, (*TUI).cmdDiff},
	}
}

// tuiCommandNames are the names of the built-in commands, which
// extensions may not take: wire.go reserves them in the extension host.
func tuiCommandNames() []string {
	var names []string
	for _, c := range builtinCommands() {
		names = append(names, c.name)
	}
	return names
}

// tuiPrompts is what the TUI uses of the prompt templates.
type tuiPrompts interface {
	List() []tuiTemplate
	// Send expands the template text starts with and prompts the agent
	// with it; notes about it reach the TUI through Note.
	Send(ctx context.Context, text string, sink Sink) error
}

// tuiTemplate is one prompt template as completion and /help show it.
type tuiTemplate struct {
	Name, ArgumentHint, Description, Source, Path string
}

// templates lists the templates that no extension command shadows, and
// reports each shadowed one once (wire.go left out those named like a
// built-in command).
func (t *TUI) templates() []tuiTemplate {
	if t.Prompts == nil {
		return nil
	}
	ext := map[string]string{}
	if t.Ext != nil {
		for _, c := range t.Ext.Commands() {
			ext[c.Name] = c.Extension
		}
	}
	var out []tuiTemplate
	for _, p := range t.Prompts.List() {
		if by, clash := ext[p.Name]; clash {
			if t.clashes == nil {
				t.clashes = map[string]bool{}
			}
			if !t.clashes[p.Path] {
				t.clashes[p.Path] = true
				t.logf(fgYellow, "prompt template %s is not used: /%s is a command of extension %s", oneLine(p.Path), oneLine(p.Name), oneLine(by))
			}
			continue
		}
		out = append(out, p)
	}
	return out
}

func (t *TUI) isTemplate(name string) bool {
	for _, p := range t.templates() {
		if p.Name == name {
			return true
		}
	}
	return false
}

func (t *TUI) builtin(name string) *slashCommand {
	for _, c := range builtinCommands() {
		if c.name == name {
			return &c
		}
	}
	return nil
}

func (t *TUI) isCommand(name string) bool {
	if t.builtin(name) != nil {
		return true
	}
	for _, it := range t.extCommandItems() {
		if it.label == name {
			return true
		}
	}
	return false
}

// command runs a slash command.
func (t *TUI) command(name, args string) {
	if c := t.builtin(name); c != nil {
		c.run(t, args)
		return
	}
	t.invokeExtCommand(name, args)
}

func (t *TUI) cmdHelp(string) {
	keys := [][2]string{
		{"enter", "send (while the agent works: queue)"},
		{"shift+enter, alt+enter, ctrl+j, \\ at the end", "new line"},
		{"esc", "stop the agent · close a popup or dialog · clear notes"},
		{"ctrl+c", "stop the agent · clear the editor (ctrl+y brings it back) · on an idle, empty editor, twice to exit"},
		{"ctrl+d", "exit (on an empty editor) · delete forward"},
		{"ctrl+o", "show the last folded tool result in full (again: the one before)"},
		{"ctrl+r", "search the prompt history (type to filter, enter puts it in the editor)"},
		{"!command", "run a shell command yourself (no model turn; the output goes with your next prompt; !! sends a prompt that starts with !)"},
		{"↑ ↓  ctrl+p ctrl+n", "move between rows · walk the prompt history"},
		{"← →  ctrl+b ctrl+f", "move by character (alt+b alt+f, ctrl+← →: by word)"},
		{"home end  ctrl+a ctrl+e", "start or end of the line"},
		{"ctrl+w, alt+backspace", "delete the word before the cursor (alt+d: after)"},
		{"ctrl+k, ctrl+u, ctrl+y", "kill to end of line, kill to start, yank"},
		{"tab", "complete /commands and @paths (@path attaches the file)"},
		{"ctrl+l", "redraw"},
	}
	var cmds [][2]string
	for _, c := range builtinCommands() {
		help := c.help
		if c.stops {
			help += " (" + stopsWhen(c.name) + ")"
		}
		cmds = append(cmds, [2]string{strings.TrimSpace("/" + c.name + " " + c.args), help})
	}
	var ext, templates [][2]string
	for _, it := range t.extCommandItems() {
		ext = append(ext, [2]string{"/" + it.label, it.desc})
	}
	for _, p := range t.templates() {
		templates = append(templates, [2]string{oneLine(strings.TrimSpace("/" + p.Name + " " + p.ArgumentHint)), oneLine(p.Description) + "  [" + oneLine(p.Source) + "]"})
	}
	for _, section := range []struct {
		title string
		rows  [][2]string
	}{{"Keys", keys}, {"Commands", cmds}, {"Extension commands", ext}, {"Prompt templates", templates}} {
		if len(section.rows) > 0 {
			t.commitLine(span{section.title, sBold})
			t.commitRows(helpRows(section.rows, t.width))
		}
	}
}

// stopsWhen says, for /help, when a command that changes the conversation
// or the model stops a running turn: for those that open a picker, only
// the choice does.
func stopsWhen(name string) string {
	switch name {
	case "sessions", "fork":
		return "choosing one stops a running turn"
	case "model":
		return "stops a running turn; in the picker, choosing does"
	case "session":
		return "import, or choosing in the tree, stops a running turn"
	case "login", "logout":
		return "stops a running turn when it is the provider in use"
	}
	return "stops a running turn"
}

// helpRows lays out names and what they do in two columns: the names as
// wide as the widest of them, but at most two fifths of the width; a
// longer name takes a row of its own, its text the rows below. Both
// columns wrap between words. The text is clean (ours, or cleaned).
func helpRows(rows [][2]string, width int) []string {
	nameW := 0
	for _, r := range rows {
		nameW = max(nameW, stringWidth(r[0]))
	}
	nameW = min(nameW, max(width*2/5, 8))
	pad := []span{{strings.Repeat(" ", 2+nameW+2), 0}}
	var out []string
	for _, r := range rows {
		if w := stringWidth(r[0]); w <= nameW {
			first := []span{{"  " + r[0] + strings.Repeat(" ", nameW-w+2), fgCyan}}
			out = append(out, plainRows(r[1], width, 0, first, pad)...)
			continue
		}
		out = append(out, plainRows(r[0], width, fgCyan, []span{{"  ", 0}}, []span{{"  ", 0}})...)
		out = append(out, plainRows(r[1], width, 0, pad, pad)...)
	}
	return out
}

// Models and providers.

func (t *TUI) cmdModel(args string) {
	if args != "" {
		provider, id := t.parseModel(args)
		t.switchModel(provider, id)
		return
	}
	type choice struct{ provider, id, desc string }
	var choices []choice
	for _, p := range modelProviders {
		for _, m := range modelsFor(p) {
			choices = append(choices, choice{p, m.ID, modelSummary(m)})
		}
	}
	if !slices.ContainsFunc(choices, func(c choice) bool { return c.provider == t.provider && c.id == t.agent.CurrentModel() }) {
		choices = append(choices, choice{t.provider, t.agent.CurrentModel(), "(current)"})
	}
	nameW := 0
	for _, c := range choices {
		nameW = max(nameW, stringWidth(c.provider+"/"+c.id))
	}
	var items []string
	sel := 0
	for i, c := range choices {
		mark := "  "
		if c.provider == t.provider && c.id == t.agent.CurrentModel() {
			mark, sel = "• ", i
		}
		name := c.provider + "/" + c.id
		items = append(items, mark+name+strings.Repeat(" ", nameW-stringWidth(name))+"  "+c.desc)
	}
	title := "choose a model (or type /model ollama/NAME)"
	if err := t.modelListErr.Load(); err != nil {
		title += " · not listed: " + (*err).Error()
	}
	t.pushDialog(&pickerDialog{
		title: title,
		items: items,
		sel:   sel,
		pick:  func(t *TUI, i int) { t.switchModel(choices[i].provider, choices[i].id) },
	})
}

// SetModelListError records why the configured server's models are not in
// the /model picker; safe from any goroutine.
func (t *TUI) SetModelListError(err error) { t.modelListErr.Store(&err) }

// parseModel reads "provider/id", or an id the catalogue knows, or an id for
// the current provider.
func (t *TUI) parseModel(arg string) (provider, id string) {
	if p, rest, ok := strings.Cut(arg, "/"); ok && (p == "anthropic" || p == "openai" || p == "ollama") {
		return p, rest
	}
	if lookupModel(t.provider, arg).Known {
		return t.provider, arg
	}
	for _, p := range modelProviders {
		if lookupModel(p, arg).Known {
			return p, arg
		}
	}
	return t.provider, arg
}

// switchModel changes the model, and the provider with it when it differs,
// and remembers the choice in config.json.
func (t *TUI) switchModel(provider, id string) {
	id = strings.TrimSpace(id)
	if id == "" || sanitize(id) != id || strings.ContainsAny(id, " \t\n") {
		t.logf(fgRed, "/model: %q is not a model id", id)
		return
	}
	t.whenIdle("/model", func(t *TUI) { t.applyModel(provider, id) })
}

// applyModel makes the switch of switchModel once the agent is idle.
func (t *TUI) applyModel(provider, id string) {
	var ok bool
	if provider != t.provider || t.endpointFor(provider, id) != t.endpointFor(t.provider, t.agent.CurrentModel()) {
		ok = t.useProvider("/model", provider, id)
	} else {
		ok = t.applied("/model", t.agent.SetModel(id))
	}
	if !ok {
		return
	}
	t.logf(fgCyan, "model: %s/%s", provider, id)
	t.saveModelChoice(provider, id)
	if !lookupModel(provider, id).Known {
		// A local server says what context it gives the model; asking
		// may take a few seconds, which the UI does not wait for.
		t.background(func() {
			if w := t.agent.ServerWindow(t.ctx); w > 0 {
				t.post(msgLog{fmt.Sprintf("the server gives %s a context of %d tokens", id, w), sDim})
			} else {
				t.post(msgLog{fmt.Sprintf("zot does not know %s: assuming a %dk context window, cost not shown", id, defaultContextWindow/1000), sDim})
			}
		})
	}
	if t.missingKey != "" {
		t.warnNoKey()
	}
}

// saveModelChoice remembers in config.json what the user chose in /model,
// and says what it saved. Flags given for this run stay this run's: a
// --base-url is not saved, and the base URL config.json has for the
// provider is kept.
func (t *TUI) saveModelChoice(provider, id string) {
	path := filepath.Join(t.cfg.Home, "config.json")
	old, _ := loadConfig(t.cfg.Home)
	cfg := userConfig{Provider: provider, Model: id, ModelServers: old.ModelServers}
	if old.Provider == provider {
		cfg.BaseURL = old.BaseURL
	}
	// A model no catalogue knows, of the server this run talks to, is
	// that server's: the choice keeps it, or the next run would look for
	// the model at the provider's default.
	info := lookupModel(provider, id)
	server := ""
	if provider == t.cfg.Provider && t.cfg.BaseURL != "" && !info.Known && info.BaseURL == "" && t.cfg.BaseURL != cfg.BaseURL {
		server = t.cfg.BaseURL
		cfg.ModelServers = maps.Clone(cfg.ModelServers)
		if cfg.ModelServers == nil {
			cfg.ModelServers = map[string]string{}
		}
		cfg.ModelServers[provider+"/"+id] = server
	}
	if err := saveConfig(t.cfg.Home, cfg); err != nil {
		t.logf(fgYellow, "/model: the choice is not remembered: %v", err)
		return
	}
	saved := fmt.Sprintf("saved %s/%s as the default", provider, id)
	switch {
	case server != "":
		saved += " with the server it came from"
	case cfg.BaseURL != "":
		saved += " with the base URL saved before"
	}
	if t.cfg.BaseURLFlag && provider == t.cfg.Provider && t.cfg.BaseURL != cfg.BaseURL && server == "" {
		saved += "; --base-url is this run's, not saved"
	}
	t.logf(sDim, "%s (%s)", saved, path)
}

// useProvider rebuilds the provider client for name with its key and base
// URL, and makes the agent use it with model: one step, which the agent
// refuses while a prompt runs. It reports whether the switch was made.
func (t *TUI) useProvider(what, name, model string) bool {
	key, source, err := t.keyFor(name)
	base := t.endpointFor(name, model)
	var prov Provider
	if err == nil {
		var pc ProviderConfig
		pc, err = endpointConfig(t.cfg.Home, ProviderConfig{Name: name, BaseURL: base, APIKey: key, KeySource: source, ResponseTimeout: t.cfg.ResponseTimeout, CacheRetention: t.cfg.CacheRetention}, model)
		if err == nil {
			key = pc.APIKey
			prov, err = NewProvider(pc)
		}
	}
	if err != nil {
		t.logf(fgRed, "%s: %v", what, err)
		return false
	}
	if !t.applied(what, t.agent.SetProvider(prov, model)) {
		return false
	}
	t.provider = name
	t.missingKey = ""
	if key == "" && name != "ollama" && base == "" {
		t.missingKey = "no API key for " + name
	}
	return true
}

// applied reports whether the agent made a change it was asked for: it
// refuses while a prompt runs. A session file that failed to record the
// change does not undo it, but the user is told.
func (t *TUI) applied(what string, err error) bool {
	switch {
	case errors.Is(err, ErrBusy):
		t.logf(fgRed, "%s: %v", what, err)
		return false
	case err != nil:
		t.logf(fgYellow, "%s: the session file did not record the switch: %v", what, err)
	}
	return true
}

// whenIdle runs change, which changes the conversation or the model, at
// once when no prompt runs. Otherwise it stops the running turn, says so,
// and runs change once the agent has stopped (runDone): the agent is never
// changed under a running prompt, and the user is not told to wait. A
// dialog's answer goes through it too, since a prompt may have started
// after the dialog opened (an extension command's "prompt").
func (t *TUI) whenIdle(what string, change func(t *TUI)) {
	if t.run == nil {
		change(t)
		return
	}
	t.logf(fgYellow, "%s: stopped the running turn first", what)
	t.abort()
	t.afterStop = append(t.afterStop, change)
}

// keyFor finds the key for a provider as at startup; --api-key counts only
// for the provider it was given with.
func (t *TUI) keyFor(provider string) (key, source string, err error) {
	flagKey := ""
	if provider == t.cfg.Provider {
		flagKey = t.cfg.APIKey
	}
	return resolveKey(provider, flagKey, t.cfg.Home)
}

// endpointFor is where a model is served: its models.json baseUrl, else
// the provider's base URL.
func (t *TUI) endpointFor(provider, model string) string {
	cfg, _ := loadConfig(t.cfg.Home)
	if provider == t.cfg.Provider && t.cfg.BaseURLFlag {
		cfg.ModelServers = nil // --base-url wins for this run
	}
	return cmp.Or(lookupModel(provider, model).BaseURL, cfg.modelServer(provider, model), t.baseURLFor(provider))
}

// baseURLFor is the base URL of a provider: the one in use at startup for
// that provider, else the one config.json remembers for it.
func (t *TUI) baseURLFor(provider string) string {
	if provider == t.cfg.Provider {
		return t.cfg.BaseURL
	}
	if cfg, err := loadConfig(t.cfg.Home); err == nil && cfg.Provider == provider && cfg.BaseURL != "" {
		return cfg.BaseURL
	}
	if provider == "ollama" {
		base, err := ollamaEnvBase()
		if err != nil {
			t.logf(fgYellow, "%v (ollama's default address is used)", err)
		}
		return base
	}
	return ""
}

// Sessions.

func (t *TUI) cmdSessions(string) {
	list, err := ListSessions(t.cfg.Home, t.cfg.Cwd)
	if err != nil {
		t.logf(fgRed, "/sessions: %v", err)
		return
	}
	if len(list) == 0 {
		t.logf(sDim, "no saved sessions for %s yet", t.cfg.Cwd)
		return
	}
	lines := strings.Split(strings.TrimRight(FormatSessionList(list, time.Now()), "\n"), "\n")
	for i := range lines {
		if t.session != nil && list[i].Path == t.session.Path {
			lines[i] += "  (current)"
		}
	}
	t.pushDialog(&pickerDialog{
		title: "resume a session: time, model, messages, cost, first prompt",
		items: lines,
		pick:  func(t *TUI, i int) { t.resumeSession(list[i].Path) },
	})
}

// resumeSession switches to a saved session and shows its transcript.
func (t *TUI) resumeSession(path string) {
	t.whenIdle("/sessions", func(t *TUI) { t.applyResume(path) })
}

func (t *TUI) applyResume(path string) {
	if t.session != nil && t.session.Path == path {
		t.logf(sDim, "already in this session")
		return
	}
	sess, loaded, err := OpenSession(path)
	if err != nil {
		t.logf(fgRed, "/sessions: %v", err)
		return
	}
	if err := t.agent.Restore(loaded); err != nil {
		sess.Close()
		t.logf(fgRed, "/sessions: %v", err)
		return
	}
	t.swapSession(sess)
	t.commitRule("resumed " + t.sessionName())
	for _, r := range loaded.Repairs {
		t.logf(fgYellow, "session repaired: %s", r)
	}
	t.showTranscript(loaded.Messages)
	t.commitRule("end of the resumed transcript")
}

// swapSession makes sess the session recording the conversation.
func (t *TUI) swapSession(sess *Session) {
	old := t.session
	t.session = sess
	t.agent.Recorder = sess
	if t.cfg.OnSession != nil {
		t.cfg.OnSession(sess)
	}
	if old != nil {
		if err := old.Close(); err != nil {
			t.logf(fgYellow, "zot: %v", err)
		}
	}
}

func (t *TUI) cmdFork(string) {
	msgs := t.agent.Messages()
	var at []int
	var items []string
	for i, m := range msgs {
		if m.isPrompt() {
			typed, _ := splitPrompt(m)
			at = append(at, i)
			items = append(items, fmt.Sprintf("%d) %s", len(at), sessionOneLine(typed, 80)))
		}
	}
	if len(at) == 0 {
		t.logf(sDim, "nothing to fork yet: send a prompt first")
		return
	}
	t.pushDialog(&pickerDialog{
		title: "fork before which prompt? (it goes back into the editor)",
		items: items,
		sel:   len(items) - 1,
		pick:  func(t *TUI, i int) { t.forkAt(at[i], i+1, msgs) },
	})
}

// forkAt continues the conversation as it was before message at (the n-th
// prompt) in a new session; the prompt goes back into the editor.
func (t *TUI) forkAt(at, n int, msgs []Message) {
	t.whenIdle("/fork", func(t *TUI) { t.applyFork(at, n, msgs) })
}

func (t *TUI) applyFork(at, n int, msgs []Message) {
	prompt, _ := splitPrompt(msgs[at])
	if t.session != nil {
		child, err := t.session.Fork(at, msgs)
		if err != nil {
			t.logf(fgRed, "/fork: %v", err)
			return
		}
		if err := t.agent.SetMessages(msgs[:at], Usage{}); err != nil {
			child.Close()
			t.logf(fgRed, "/fork: %v", err)
			return
		}
		t.swapSession(child)
	} else if err := t.agent.SetMessages(msgs[:at], Usage{}); err != nil {
		t.logf(fgRed, "/fork: %v", err)
		return
	}
	t.commitRule(fmt.Sprintf("forked before prompt %d into %s", n, t.sessionName()))
	t.ed.set(editorClean(prompt))
}

func (t *TUI) cmdCompact(string) {
	t.whenIdle("/compact", (*TUI).compact)
}

func (t *TUI) compact() {
	t.commitLine(span{"compacting the conversation…", sDim})
	t.beginRun(func(ctx context.Context, sink Sink) error { return t.agent.Compact(ctx, sink) })
	t.waitFor("summarising the conversation")
}

func (t *TUI) cmdClear(string) {
	t.whenIdle("/clear", (*TUI).clear)
}

func (t *TUI) clear() {
	if err := t.agent.Clear(); err != nil {
		t.logf(fgRed, "/clear: %v", err)
		return
	}
	t.notes = nil
	t.commitRule("conversation cleared")
}

func (t *TUI) cmdRename(args string) {
	name := strings.TrimSpace(args)
	switch {
	case t.session == nil:
		t.logf(fgYellow, "nothing is saved (--no-session), so there is no session to name")
		return
	case name == "":
		if cur := t.session.Name(); cur != "" {
			t.logf(fgCyan, "this session is named %s; /rename NAME renames it", cur)
		} else {
			t.logf(fgYellow, "usage: /rename NAME (then zot -r NAME resumes this session)")
		}
		return
	}
	if err := t.session.SetName(name); err != nil {
		t.logf(fgRed, "rename: %s", err)
		return
	}
	t.logf(fgCyan, "this session is named %s: zot -r %s resumes it", name, name)
}

func (t *TUI) cmdJail(string) {
	t.cfg.ToolEnv.SetJail(true)
	t.logf(fgCyan, "jail on: read, write and edit stay inside %s (bash is not confined)", t.cfg.Cwd)
}

func (t *TUI) cmdUnjail(string) {
	t.cfg.ToolEnv.SetJail(false)
	t.logf(fgYellow, "jail off: read, write and edit may reach any path")
}

func (t *TUI) cmdYolo(args string) {
	switch strings.ToLower(args) {
	case "", "on":
		t.gateMu.Lock()
		t.askTools = false
		t.gateMu.Unlock()
		t.logf(fgYellow, "tool calls run without asking (/yolo off to ask before each)")
	case "off":
		t.gateMu.Lock()
		t.askTools, t.approveAll, t.approved = true, false, map[string]bool{}
		t.gateMu.Unlock()
		t.logf(fgCyan, "zot asks before each tool call")
	default:
		t.logf(fgRed, "/yolo takes on or off, not %q", args)
	}
}

// Extensions and skills.

func (t *TUI) cmdReloadExt(string) {
	if t.Ext == nil {
		t.logf(sDim, "no extension host is running, so there is nothing to reload")
		return
	}
	t.whenIdle("/reload-ext", (*TUI).reloadExt)
}

func (t *TUI) reloadExt() {
	t.pendingCmds = append(t.pendingCmds, "reload-ext")
	ext := t.Ext
	// Owner: the UI loop, which gets msgReloaded. Reload is bounded by the
	// host's own timeouts and by the TUI's context.
	t.background(func() { t.post(msgReloaded{ext.Reload(t.ctx)}) })
}

func (t *TUI) reloaded(st tuiReloadStats) {
	t.donePending("reload-ext")
	t.pop.commandsChanged()
	t.logf(fgCyan, "extensions reloaded: stopped %d, loaded %d, ready %d", st.Stopped, st.Loaded, st.Ready)
	for _, e := range st.Errors {
		t.logf(fgRed, "  %s", e)
	}
}

func (t *TUI) donePending(name string) {
	for i, c := range t.pendingCmds {
		if c == name {
			t.pendingCmds = append(t.pendingCmds[:i], t.pendingCmds[i+1:]...)
			return
		}
	}
}

func (t *TUI) invokeExtCommand(name, args string) {
	if t.Ext == nil {
		t.logf(fgRed, "/%s: extensions are not available", name)
		return
	}
	t.pendingCmds = append(t.pendingCmds, name)
	ext := t.Ext
	// Owner: the UI loop, which gets msgCmdDone. The host times the
	// command out (30 s); the deadline here only backs that up.
	t.background(func() {
		ctx, cancel := context.WithTimeout(t.ctx, 35*time.Second)
		defer cancel()
		resp, err := ext.InvokeCommand(ctx, name, args)
		t.post(msgCmdDone{name, resp, err})
	})
}

// extCommandDone acts on an extension command's response.
func (t *TUI) extCommandDone(name string, resp tuiCommandResponse, err error) {
	t.donePending(name)
	if err != nil {
		t.logf(fgRed, "/%s: %v", name, err)
		return
	}
	if resp.Error != "" {
		t.logf(fgRed, "/%s: %s", name, resp.Error)
	}
	switch resp.Action {
	case "prompt":
		if strings.TrimSpace(resp.Prompt) != "" {
			q := queuedPrompt{display: resp.Prompt, text: resp.Prompt}
			if t.run != nil {
				t.queue = append(t.queue, q)
			} else {
				t.startPrompt(q)
			}
		}
	case "insert":
		t.ed.insertText(editorClean(resp.Insert))
		t.pop.edited(&t.ed, t.extCommandItems, t.templateItems)
	case "display":
		bar := []span{{"┃ ", fgMagenta}}
		t.commitRows(plainRows(drawText(resp.Display), t.width, 0, bar, bar))
	case "noop", "":
	default:
		t.logf(fgRed, "/%s: the extension answered with an unknown action %q", name, oneLine(resp.Action))
	}
	if resp.Panel != nil {
		t.panelUpdate(tuiPanelUpdate{Kind: "open", Panel: *resp.Panel})
	}
}

func (t *TUI) cmdSkills(args string) {
	if t.Skills == nil {
		t.logf(sDim, "no skills are available")
		return
	}
	list, show := t.Skills()
	if args == "" {
		if strings.TrimSpace(list) == "" {
			t.logf(sDim, "no skills found")
			return
		}
		t.commitRows(plainRows(drawText(strings.TrimRight(list, "\n")), t.width, 0, nil, nil))
		return
	}
	if show == nil {
		t.logf(fgRed, "/skills: cannot show skills here")
		return
	}
	text, err := show(args)
	if err != nil {
		t.logf(fgRed, "/skills: %v", err)
		return
	}
	t.commitRows(renderMarkdown(text, t.width, 0))
}

// Keys.

// askKey opens the hidden prompt for provider's API key.
func (t *TUI) askKey(provider string) {
	if provider == "ollama" {
		t.logf(sDim, "ollama needs no key; use --provider ollama --model NAME (and --base-url for a server elsewhere)")
		return
	}
	t.pushDialog(&secretDialog{
		title:  "API key for " + provider + " (typing is not shown)",
		done:   func(t *TUI, key string) { t.login(provider, key) },
		cancel: (*TUI).loginCancelled,
	})
}

// loginCancelled leaves the prompt that was sent without a key in the
// history, not in the editor, where the next /login would join it.
func (t *TUI) loginCancelled() {
	if q := t.loginPrompt; q != nil {
		t.loginPrompt = nil
		t.remember(q.text)
		t.logf(sDim, "not sent: no key yet (↑ brings the prompt back)")
	}
}

func (t *TUI) cmdLogin(args string) {
	ask := (*TUI).askKey
	if args != "" {
		if args != "anthropic" && args != "openai" && args != "ollama" {
			t.logf(fgRed, "/login: unknown provider %q (anthropic or openai)", args)
			return
		}
		ask(t, args)
		return
	}
	providers := []string{"anthropic", "openai"}
	t.pushDialog(&pickerDialog{
		title: "log in to which provider?",
		items: providers,
		pick:  func(t *TUI, i int) { ask(t, providers[i]) },
	})
}

// login saves a key; a key for the provider in use replaces its client,
// which stops a running turn first.
func (t *TUI) login(provider, key string) {
	key = strings.TrimSpace(key)
	if key == "" {
		t.logf(sDim, "/login: no key entered; nothing saved")
		t.loginCancelled()
		return
	}
	if provider == t.provider {
		t.whenIdle("/login", func(t *TUI) { t.saveKey(provider, key) })
	} else {
		t.saveKey(provider, key)
	}
}

func (t *TUI) saveKey(provider, key string) {
	if err := saveAuthKey(t.cfg.Home, provider, key); err != nil {
		t.logf(fgRed, "/login: %v", err)
		return
	}
	t.logf(fgGreen, "saved the %s key in %s (mode 0600)", provider, filepath.Join(t.cfg.Home, "auth.json"))
	if env := keyEnvVar(provider); env != "" && os.Getenv(env) != "" {
		t.logf(fgYellow, "%s is set in the environment and is used before the saved key", env)
	}
	if provider == t.provider {
		t.useProvider("/login", provider, t.agent.CurrentModel())
		if q := t.loginPrompt; q != nil && t.missingKey == "" {
			t.loginPrompt = nil
			t.ed.set(q.display)
			t.hint = "your prompt is back: enter sends it"
		}
	}
}

func (t *TUI) cmdLogout(args string) {
	provider := args
	if provider == "" {
		provider = t.provider
	}
	if provider != "anthropic" && provider != "openai" {
		t.logf(fgRed, "/logout: %q has no saved key (anthropic or openai)", provider)
		return
	}
	if provider == t.provider {
		t.whenIdle("/logout", func(t *TUI) { t.removeKey(provider) })
	} else {
		t.removeKey(provider)
	}
}

// removeKey removes a saved key; the client of the provider in use is
// rebuilt without it.
func (t *TUI) removeKey(provider string) {
	removed, err := removeAuthKey(t.cfg.Home, provider)
	if err != nil {
		t.logf(fgRed, "/logout: %v", err)
		return
	}
	if !removed {
		t.logf(sDim, "/logout: %s holds no %s key; nothing removed", filepath.Join(t.cfg.Home, "auth.json"), provider)
		if env := keyEnvVar(provider); env != "" && os.Getenv(env) != "" {
			t.logf(fgYellow, "the %s key in use comes from %s, which /logout does not change", provider, env)
		}
		return
	}
	t.logf(fgCyan, "removed the %s key from %s", provider, filepath.Join(t.cfg.Home, "auth.json"))
	if env := keyEnvVar(provider); env != "" && os.Getenv(env) != "" {
		t.logf(fgYellow, "%s is still set in the environment and still used", env)
	}
	if provider == t.provider {
		t.useProvider("/logout", provider, t.agent.CurrentModel())
		if t.missingKey != "" {
			t.warnNoKey()
		}
	}
}

// Describing the session.

// cmdCost is /cost: what the session's calls to the model used and cost.
func (t *TUI) cmdCost(string) {
	total, last := t.agent.Totals()
	model := t.agent.CurrentModel()
	info := lookupModel(t.provider, model)
	rows := [][2]string{
		{"input", fmt.Sprintf("%d tokens", total.Input)},
		{"output", fmt.Sprintf("%d tokens", total.Output)},
		{"cache read", fmt.Sprintf("%d tokens", total.CacheRead)},
		{"cache write", fmt.Sprintf("%d tokens", total.CacheWrite)},
	}
	cost := fmt.Sprintf("$%.4f", total.CostUSD)
	if !info.Known {
		cost += fmt.Sprintf(" (zot knows no prices for %s/%s: calls to it count nothing)", t.provider, model)
	}
	rows = append(rows, [2]string{"cost", cost})
	if total.Estimated {
		rows = append(rows, [2]string{"", "some counts are zot's estimates: the server reported none"})
	}
	rows = append(rows, [2]string{"context", t.contextUse(last, info)})
	t.commitLine(span{"Cost of this session (since zot started; /sessions shows a saved session's)", sBold})
	t.commitRows(helpRows(rows, t.width))
}

// contextUse is how much of the model's context the last call used.
func (t *TUI) contextUse(last int, info ModelInfo) string {
	if info.ContextWindow == 0 {
		return fmt.Sprintf("%d tokens in the last call (window not known)", last)
	}
	return fmt.Sprintf("%d of %d tokens (%d%%) in the last call", last, info.ContextWindow, last*100/info.ContextWindow)
}

// cmdStatus is /status: what this session runs with.
func (t *TUI) cmdStatus(string) {
	model := t.agent.CurrentModel()
	_, last := t.agent.Totals()
	server := t.endpointFor(t.provider, model)
	if server == "" {
		server = "the provider's own"
	}
	session := "none (--no-session)"
	if t.session != nil {
		session = t.session.Path
	}
	sandbox := "off: commands run with your rights, unconfined"
	if t.cfg.Sandbox != "" && t.cfg.Sandbox != "off" {
		sandbox = t.cfg.Sandbox + " (docs/sandbox.md)"
	}
	jail := "off: read, write and edit reach any path"
	if t.cfg.ToolEnv.Jailed() {
		jail = "on: read, write and edit stay inside " + t.cfg.Cwd
	}
	t.gateMu.Lock()
	confirm := "tool calls run without asking, unless a rule or validator asks"
	if t.cfg.Modes != nil {
		confirm = "as the mode (below), your rules and validators say"
	}
	if t.askTools && !t.approveAll {
		confirm = "every tool call asks (--no-yolo)"
	}
	t.gateMu.Unlock()
	rows := [][2]string{
		{"model", t.provider + "/" + model},
		{"server", server},
		{"directory", t.cfg.Cwd},
		{"session", session},
		{"context", t.contextUse(last, lookupModel(t.provider, model))},
		{"sandbox", sandbox},
		{"jail", jail},
		{"approvals", confirm},
	}
	if m := t.cfg.Modes.Current(); m != "" {
		rows = append(rows, [2]string{"mode", fmt.Sprintf("%s: %s; commands %s (/mode)", m, m.About(), t.cfg.Modes.Confinement(m))})
	}
	if in := t.cfg.Inspect; in != nil {
		rows = append(rows, [2]string{"trust", trustSummary(in.Trust())}, [2]string{"MCP servers", mcpSummary(in.MCPServers())})
	}
	if t.missingKey != "" {
		rows = append(rows, [2]string{"key", t.missingKey + " (/login)"})
	}
	t.commitLine(span{"Status", sBold})
	t.commitRows(helpRows(rows, t.width))
}
