package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The wiring: the one place that builds the parts from the options and
// connects them. Each mode — -p and --json, rpc, the TUI — gets a setup
// (provider, agent, tools, session) and starts the plugins beside it. The
// plugins know the core and not each other: what one needs of another
// passes through here, and so does what each may run — each start below
// reads its plugin's configuration and hands the plugin the list.

// setup is what a mode is built from: the options, and the provider,
// agent, tools and session made from them. The mode adds the plugins with
// startPlugins and guardTools, and calls close at its end.
type setup struct {
	opts     options
	home     string
	cwd      string
	provider string
	model    string
	baseURL  string
	// missingKey, in the interactive mode, says that the provider has no
	// key (other modes fail instead).
	missingKey string
	// gates check each tool call, in order; a mode chains them with its
	// ConfirmFunc into the agent's BeforeToolExecute.
	gates   []ToolGate
	agent   *Agent
	toolEnv *ToolEnv
	session *Session
	skills  []Skill
	notes   []string // things the user should know (session repairs)
	// mcpPrefixes start the names of the tools the MCP servers will
	// register when they are ready (mcp__<server>__).
	mcpPrefixes []string
	mcp         *MCPManager
	mcpStatus   func(server, level, msg string)
	mcpWait     time.Duration // see awaitMCPBeforeFirstTurn
}

// defaultMCPWait bounds the wait for MCP servers before a run's first
// model request: long enough for a server started with npx or uvx from a
// warm cache, short enough that a broken one does not stall every run.
const defaultMCPWait = 5 * time.Second

// newSetup builds the provider, the tools and the agent the options ask
// for; problems that are not fatal go to stderr.
func newSetup(o options, stderr io.Writer) (*setup, error) {
	s := &setup{opts: o, home: zotHome()}
	cwd := o.cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return nil, usageError{fmt.Sprintf("--cwd %s is not a directory", cwd)}
	}
	s.cwd = abs
	cfg, err := loadConfig(s.home)
	if err != nil {
		fmt.Fprintf(stderr, "zot: %v (ignored)\n", err)
	}
	s.mcpWait = defaultMCPWait
	switch d, err := time.ParseDuration(cfg.MCPWait); {
	case o.mcpWait != nil:
		s.mcpWait = *o.mcpWait
	case cfg.MCPWait == "":
	case err != nil || d < 0:
		fmt.Fprintf(stderr, "zot: config.json: mcp_wait %q is not a duration such as \"5s\" (ignored)\n", cfg.MCPWait)
	default:
		s.mcpWait = d
	}
	s.provider = chooseProvider(o, cfg)
	if s.provider != "anthropic" && s.provider != "openai" && s.provider != "ollama" {
		return nil, usageError{fmt.Sprintf("unknown provider %q (want anthropic, openai or ollama)", s.provider)}
	}
	s.model = o.model
	if s.model == "" && cfg.Provider == s.provider {
		s.model = cfg.Model
	}
	if s.model == "" {
		s.model = defaultModels[s.provider]
	}
	if s.model == "" {
		return nil, usageError{fmt.Sprintf("--provider %s needs --model (the name of a model your server has, e.g. qwen3-coder)", s.provider)}
	}
	baseURL := o.baseURL
	if baseURL == "" && cfg.Provider == s.provider {
		baseURL = cfg.BaseURL
	}
	key, source, err := resolveKey(s.provider, o.apiKey, s.home)
	if err != nil {
		return nil, err
	}
	prov, err := NewProvider(ProviderConfig{Name: s.provider, BaseURL: baseURL, APIKey: key, KeySource: source, ResponseTimeout: o.responseTimeout})
	if err != nil {
		return nil, usageError{err.Error()}
	}
	s.baseURL = baseURL
	if key == "" && s.provider != "ollama" && baseURL == "" {
		if !o.interactive {
			return nil, fmt.Errorf("no API key for %s: set %s, pass --api-key, or save one with /login in the TUI; for a local server use --provider ollama or --base-url", s.provider, keyEnvVar(s.provider))
		}
		s.missingKey = "no API key for " + s.provider
	}

	// What a zot that did not get to close left behind a day ago is of no
	// use to any session still running.
	RemoveStaleSpills(os.TempDir(), 24*time.Hour)
	s.toolEnv = NewToolEnv(s.cwd, o.jail)
	// Who reads a refusal outside the TUI (which sets its own) can only
	// start zot again.
	s.toolEnv.JailHint = "zot was started with --jail: run it without --jail, or with --cwd set to a directory that holds the path"
	reg := NewToolRegistry()
	reg.SetSource("builtin", BuiltinTools(s.toolEnv))
	s.registerSkills(reg, stderr)
	switch {
	case o.noTools:
		reg.SetFilter(func(string) bool { return false })
	case o.tools != "":
		reg.SetFilter(toolFilter(splitList(o.tools)))
	}
	a := NewAgent(prov, s.model, reg)
	a.Reasoning = o.reasoning
	if o.maxSteps > 0 {
		a.MaxSteps = o.maxSteps
	}
	var toolNames []string
	for _, t := range reg.List() {
		toolNames = append(toolNames, t.Name())
	}
	a.System = BuildSystemPrompt(SystemPromptOptions{Cwd: s.cwd, Home: s.home, Override: o.systemPrompt, Append: o.appendSystem, Tools: toolNames, Extra: SkillsPrompt(reg, s.skills)})
	a.Log = func(format string, args ...any) {
		fmt.Fprintf(stderr, "zot: %s\n", sanitize(fmt.Sprintf(format, args...)))
	}
	s.agent = a
	return s, nil
}

// chooseProvider picks the provider when --provider is not given: the last
// one chosen, else the one whose key is in the environment.
func chooseProvider(o options, cfg userConfig) string {
	switch {
	case o.provider != "":
		return o.provider
	case cfg.Provider != "":
		return cfg.Provider
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		return "anthropic"
	case os.Getenv("OPENAI_API_KEY") != "":
		return "openai"
	}
	return "anthropic"
}

// checkToolPatterns refuses a --tools pattern that matches no tool, which
// would silently leave the model without the tools the user meant. It runs
// once the plugins have started: an extension's tools are registered by
// then, and an MCP server's tools, which join when it is ready, count by
// their prefix.
func (s *setup) checkToolPatterns() error {
	if s.opts.tools == "" || s.opts.noTools {
		return nil
	}
	names := s.agent.Tools.Names()
	var unmatched []string
	for _, p := range splitList(s.opts.tools) {
		if !slices.ContainsFunc(names, toolFilter([]string{p})) && !slices.ContainsFunc(s.mcpPrefixes, func(prefix string) bool { return patternCouldMatchPrefix(p, prefix) }) {
			unmatched = append(unmatched, p)
		}
	}
	if len(unmatched) == 0 {
		return nil
	}
	there := names
	for _, p := range s.mcpPrefixes {
		there = append(there, p+"* (MCP)")
	}
	return usageError{fmt.Sprintf("--tools: %s matches no tool; the tools are %s", strings.Join(unmatched, ", "), strings.Join(there, ", "))}
}

// patternCouldMatchPrefix says whether a --tools pattern may match some
// tool whose name starts with prefix: the pattern's literal start and the
// prefix agree as far as both go.
func patternCouldMatchPrefix(pattern, prefix string) bool {
	if _, err := path.Match(pattern, ""); err != nil {
		return false
	}
	literal := pattern
	if i := strings.IndexAny(pattern, `*?[\`); i >= 0 {
		literal = pattern[:i]
	} else if len(pattern) <= len(prefix) {
		return false // a whole name, and too short to be one of the server's
	}
	return strings.HasPrefix(prefix, literal) || strings.HasPrefix(literal, prefix)
}

// splitList reads a comma-separated flag value.
func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// openSession attaches a session file as -c, -r, --session and
// --no-session ask. useByDefault is false for rpc, where the embedding
// application owns persistence.
func (s *setup) openSession(useByDefault bool, pick func([]SessionInfo) (int, error)) error {
	o := s.opts
	path := o.sessionPath
	switch {
	case o.noSession:
		return nil
	case o.continueLast:
		p, err := LatestSession(s.home, s.cwd)
		if err != nil {
			return err
		}
		path = p
	case o.resume:
		list, err := ListSessions(s.home, s.cwd)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return fmt.Errorf("no sessions to resume for %s", s.cwd)
		}
		i, err := pick(list)
		if err != nil {
			return err
		}
		path = list[i].Path
	}
	if path == "" {
		if useByDefault {
			s.session = NewSession(s.home, s.cwd, s.provider, s.model)
			s.agent.Recorder = s.session
		}
		return nil
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && o.sessionPath != "" {
		// --session names a new file: start it there.
		s.session = NewSession(s.home, s.cwd, s.provider, s.model)
		s.session.Path = path
		s.agent.Recorder = s.session
		return nil
	}
	sess, loaded, err := OpenSession(path)
	if err != nil {
		return err
	}
	for _, r := range loaded.Repairs {
		s.notes = append(s.notes, "session repaired: "+r)
	}
	if err := loaded.Restore(s.agent); err != nil {
		return err
	}
	// A resumed conversation goes on with its own model unless --model
	// says otherwise (a model of another provider cannot be taken over).
	if s.opts.model == "" && loaded.Meta.Provider == s.provider && loaded.Meta.Model != "" {
		s.model, s.agent.Model = loaded.Meta.Model, loaded.Meta.Model
	}
	s.session = sess
	s.agent.Recorder = sess
	return nil
}

// close closes the session and removes the tools' spill files.
func (s *setup) close() {
	if s.session != nil {
		s.session.Close()
	}
	if s.toolEnv != nil {
		s.toolEnv.Close()
	}
}

// runOnce is -p and --json: one prompt, then exit.
func runOnce(o options, stdin io.Reader, stdout, stderr io.Writer) int {
	text, err := promptText(o, stdin)
	if err != nil {
		return fail(stderr, err)
	}
	pick, err := pickSessionFromTTY(o.resume, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	s, err := newSetup(o, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	defer s.close()
	if err := s.openSession(true, pick); err != nil {
		return fail(stderr, err)
	}
	for _, n := range s.notes {
		fmt.Fprintf(stderr, "zot: %s\n", sanitize(n))
	}
	ctx, stop := signalContext()
	defer stop()
	defer catchSIGPIPE()()
	ctx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	exts, stopPlugins := s.startPlugins(ctx, stderrExtHooks(stderr), mcpStderrStatus(stderr), hooksStderrNotes(stderr))
	defer stopPlugins()
	if err := s.checkToolPatterns(); err != nil {
		return fail(stderr, err)
	}
	s.awaitMCPBeforeFirstTurn()
	s.guardTools()
	s.agent.BeforeToolExecute = ChainGates(s.gates, NonInteractiveConfirm(o.approveAsks))

	var sink Sink
	var final string
	var events *eventWriter
	if o.json {
		events = newEventWriter(stdout)
		sink = func(e Event) {
			if events.Write(e); events.Err() != nil {
				cancelRun() // nobody reads the events any more
			}
		}
	} else {
		sink = func(e Event) {
			switch e.Type {
			case EventAssistantMessage:
				final = Message{Content: e.Content}.Text()
			case EventMessageBlocked:
				fmt.Fprintf(stderr, "zot: %s\n", sanitize(e.Reason))
			}
		}
	}
	err = s.agent.Prompt(ctx, text, nil, TeeSinks(exts.Observe, sink))
	if o.print && final != "" {
		if f, ok := stdout.(*os.File); ok && isTerminal(int(f.Fd())) {
			final = sanitize(final)
		}
		fmt.Fprintln(stdout, strings.TrimRight(final, "\n"))
	}
	switch {
	case err == nil:
		return exitOK
	case events != nil && events.Err() != nil:
		err = fmt.Errorf("write events: %w", events.Err())
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "zot: interrupted")
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "zot: %s\n", sanitize(err.Error()))
	return exitFailure
}

// promptText is the prompt: the words, then what was piped on stdin
// (`git diff | zot -p "review this"` sends both).
func promptText(o options, stdin io.Reader) (string, error) {
	words := strings.Join(o.prompt, " ")
	piped := ""
	if carriesPrompt(stdin, words != "") {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", fmt.Errorf("read the prompt from stdin: %w", err)
		}
		piped = strings.TrimSpace(string(b))
	}
	switch {
	case words != "" && piped != "":
		return words + "\n\n" + piped, nil
	case words == "" && piped == "":
		return "", usageError{"no prompt: give it as words or pipe it on stdin"}
	}
	return words + piped, nil
}

// carriesPrompt says whether stdin is read for the prompt. A terminal or
// /dev/null never is. Beside prompt words only a shell pipe or a file is:
// a program that starts zot with words and leaves a socket on stdin open
// (Node's spawn does by default) must not hang it.
func carriesPrompt(stdin io.Reader, haveWords bool) bool {
	f, ok := stdin.(*os.File)
	if !ok {
		return stdin != nil
	}
	st, err := f.Stat()
	switch {
	case err != nil || st.Mode()&os.ModeCharDevice != 0:
		return false
	case haveWords:
		return st.Mode()&os.ModeNamedPipe != 0 || st.Mode().IsRegular()
	}
	return true
}

// runRPC is `zot rpc` and `zot --rpc`: the protocol on stdin and stdout,
// until stdin ends (exit 0, after the work is done) or SIGINT/SIGTERM
// (abort, exit 130). Notes and failures of the plugins reach the client as
// ext_notify events.
func runRPC(o options, stdin io.Reader, stdout, stderr io.Writer) int {
	switch {
	case o.print || o.json:
		return fail(stderr, usageError{"rpc serves its own protocol: drop -p/--print and --json"})
	case len(o.prompt) > 0:
		return fail(stderr, usageError{fmt.Sprintf(`zot rpc takes no prompt words (got %q): send {"type":"prompt","message":…} lines on stdin`, strings.Join(o.prompt, " "))})
	}
	token, err := rpcTokenFromEnv()
	if err != nil {
		return fail(stderr, err)
	}
	pick, err := pickSessionFromTTY(o.resume, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	s, err := newSetup(o, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	defer s.close()
	if err := s.openSession(false, pick); err != nil {
		return fail(stderr, err)
	}
	for _, n := range s.notes {
		fmt.Fprintf(stderr, "zot: %s\n", sanitize(n))
	}
	defer catchSIGPIPE()()
	ctx, stop := signalContext()
	defer stop()
	// After the first signal, a second one kills at once.
	defer context.AfterFunc(ctx, stop)()
	out, release := rpcOutput(ctx, stdout)
	defer release()

	srv := newRPCServer(rpcConfig{Agent: s.agent, Provider: s.provider, Cwd: s.cwd, Token: token, Log: s.agent.Log}, stdin, out)
	// The extension host's own problems (a bad manifest, a missing hello, a
	// crash) reach the client as ext_notify from "extensions", beside stderr.
	hostLog := func(format string, args ...any) {
		s.agent.Log(format, args...)
		srv.Notify(rpcNote{Extension: "extensions", Level: "warn", Message: fmt.Sprintf(format, args...)})
	}
	exts, stopPlugins := s.startPlugins(ctx, ExtConfig{OnNote: func(n ExtNote) { srv.Notify(rpcNote(n)) }, Log: hostLog}, func(server, level, msg string) {
		srv.Notify(rpcNote{Extension: "mcp:" + server, Level: extLevel(level), Message: msg})
	}, func(level, msg string) {
		srv.Notify(rpcNote{Extension: "hooks", Level: level, Message: msg})
	})
	defer stopPlugins()
	if err := s.checkToolPatterns(); err != nil {
		return fail(stderr, err)
	}
	s.awaitMCPBeforeFirstTurn()
	s.guardTools()
	s.agent.BeforeToolExecute = ChainGates(s.gates, NonInteractiveConfirm(o.approveAsks))
	srv.ReloadExtensions = func(ctx context.Context) (rpcReloadStats, error) { return rpcReloadStats(exts.Reload(ctx)), nil }
	srv.Observe = exts.Observe

	err = srv.Serve(ctx)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errRPCAuth):
		fmt.Fprintln(stderr, "zot: rpc: a hello carried the wrong token (ZOTCORE_RPC_TOKEN is set)")
		return exitFailure
	case ctx.Err() != nil:
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "zot: rpc: %v\n", err)
	return exitFailure
}

// runTUI is the interactive mode.
func runTUI(o options, stdin io.Reader, stdout, stderr io.Writer) int {
	in, inOK := stdin.(*os.File)
	out, outOK := stdout.(*os.File)
	if !inOK || !outOK || !isTerminal(int(in.Fd())) || !isTerminal(int(out.Fd())) {
		fmt.Fprintln(stderr, "zot: the interactive UI needs a terminal on stdin and stdout; give a prompt with -p (or --json) to run without one, e.g. zot -p \"fix the tests\"")
		return exitUsage
	}
	o.interactive = true
	resume := o.resume
	o.resume = false // the TUI shows its own session picker
	s, err := newSetup(o, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	defer s.close()
	if err := s.openSession(true, nil); err != nil {
		return fail(stderr, err)
	}
	t := newTUI(s.tuiConfig(), out)
	stop := s.plugTUI(t)
	defer stop()
	if err := s.checkToolPatterns(); err != nil {
		return fail(stderr, err)
	}
	if len(o.prompt) > 0 {
		s.awaitMCPBeforeFirstTurn()
	}
	return t.Run(in, out, strings.Join(o.prompt, " "), resume)
}

// tuiConfig is what the TUI gets of the setup. The session it switches to
// is the one close closes, and the one the audit log names.
func (s *setup) tuiConfig() TUIConfig {
	return TUIConfig{
		Agent: s.agent, ToolEnv: s.toolEnv, Home: s.home, Cwd: s.cwd,
		Provider: s.provider, BaseURL: s.baseURL, APIKey: s.opts.apiKey, ResponseTimeout: s.opts.responseTimeout,
		MissingKey: s.missingKey, Session: s.session, OnSession: func(sess *Session) { s.session = sess },
		Notes: s.notes, AskTools: s.opts.noYolo,
	}
}

// plugTUI starts the plugins for the TUI, makes it the one that answers
// their gates' questions, and gives it the extension host and the skills.
// MCP servers report only trouble there: a ready server is not news.
func (s *setup) plugTUI(t *TUI) (stop func()) {
	exts, stop := s.startPlugins(context.Background(), ExtConfig{
		OnNote:           func(n ExtNote) { t.Note(tuiNote(n)) },
		OnPanel:          func(u PanelUpdate) { t.Panel(tuiPanelUpdate{Kind: u.Kind, Panel: tuiPanel(u.Panel)}) },
		Log:              t.Logf,
		ReservedCommands: tuiCommandNames(),
	}, func(server, level, msg string) {
		if level != "info" {
			t.Note(tuiNote{Extension: "mcp:" + server, Level: extLevel(level), Message: msg})
		}
	}, func(level, msg string) {
		t.Note(tuiNote{Extension: "hooks", Level: level, Message: msg})
	})
	s.guardTools()
	t.ChainGates(s.gates)
	t.Ext, t.Observe = tuiExtHost{exts}, exts.Observe
	if len(s.skills) > 0 {
		t.Skills = func() (string, func(string) (string, error)) {
			return FormatSkillList(s.skills), func(name string) (string, error) {
				for _, sk := range s.skills {
					if sk.Name == name {
						return sk.Body, nil
					}
				}
				return "", fmt.Errorf("no skill named %q", name)
			}
		}
	}
	return stop
}

// tuiExtHost is the extension host in the TUI's terms.
type tuiExtHost struct{ m *ExtManager }

func (h tuiExtHost) Commands() []tuiCommand {
	var out []tuiCommand
	for _, c := range h.m.Commands() {
		out = append(out, tuiCommand(c))
	}
	return out
}

func (h tuiExtHost) InvokeCommand(ctx context.Context, name, args string) (tuiCommandResponse, error) {
	r, err := h.m.InvokeCommand(ctx, name, args)
	resp := tuiCommandResponse{Action: r.Action, Prompt: r.Prompt, Insert: r.Insert, Display: r.Display, Error: r.Error}
	if r.Panel != nil {
		p := tuiPanel(*r.Panel)
		resp.Panel = &p
	}
	return resp, err
}

func (h tuiExtHost) PanelKey(panelID, key, text string) error {
	return h.m.PanelKey(panelID, key, text)
}
func (h tuiExtHost) ClosePanel(panelID string) error { return h.m.ClosePanel(panelID) }
func (h tuiExtHost) Reload(ctx context.Context) tuiReloadStats {
	return tuiReloadStats(h.m.Reload(ctx))
}

// startPlugins starts what runs beside the agent — MCP servers, extensions
// and hook commands — and puts their tool gates first in s.gates: extension
// interceptors, then hooks (validators follow, from guardTools). Each mode
// passes where notes and failures go; stop shuts everything down.
func (s *setup) startPlugins(ctx context.Context, extOut ExtConfig, mcpStatus func(server, level, msg string), hookNote func(level, msg string)) (exts *ExtManager, stop func()) {
	mcp := s.startMCP(ctx, mcpStatus)
	exts = s.startExtensions(ctx, extOut)
	hooks := s.startHooks(ctx, hookNote)
	s.gates = append([]ToolGate{exts.ToolGate, hooks.ToolGate}, s.gates...)
	return exts, func() {
		hooks.SessionEnd(context.Background())
		exts.Shutdown(context.Background())
		mcp.Shutdown(context.Background())
	}
}

// startMCP starts the MCP servers the configuration files name; their
// tools join the agent's registry as each server gets ready.
func (s *setup) startMCP(ctx context.Context, onStatus func(server, level, msg string)) *MCPManager {
	servers, problems := loadMCPConfigs(MCPSources{Home: s.home, Cwd: s.cwd, Files: s.opts.mcpConfigs, SkipDefault: s.opts.noMCP})
	for _, c := range servers {
		s.mcpPrefixes = append(s.mcpPrefixes, mcpToolPrefix(c.Name))
	}
	m := NewMCPManager(MCPConfig{Home: s.home, Cwd: s.cwd, Servers: servers, Problems: problems, OnStatus: onStatus})
	m.Start(ctx, s.agent.Tools)
	s.mcp, s.mcpStatus = m, onStatus
	return m
}

// awaitMCPBeforeFirstTurn makes the first model request wait, at most
// s.mcpWait, for the MCP servers still starting: a one-shot run must offer
// their tools on the turn where the model plans. A server not ready by then
// is reported, and its tools join when it is. The TUI, where the user types
// first, calls it only for a prompt given on the command line.
func (s *setup) awaitMCPBeforeFirstTurn() {
	var once sync.Once
	prev := s.agent.BeforeTurn
	s.agent.BeforeTurn = func(ctx context.Context, step int) (bool, string) {
		once.Do(func() { s.awaitMCP(ctx) })
		if prev != nil {
			return prev(ctx, step)
		}
		return false, ""
	}
}

func (s *setup) awaitMCP(ctx context.Context) {
	if s.mcp == nil || s.mcpWait <= 0 {
		return
	}
	wait, cancel := context.WithTimeout(ctx, s.mcpWait)
	defer cancel()
	s.mcp.waitSettled(wait)
	if ctx.Err() != nil {
		return
	}
	for _, st := range s.mcp.Status() {
		if st.State == MCPStarting {
			s.mcpStatus(st.Name, "warning", fmt.Sprintf("not ready after %s: the first model request goes without its tools, which join when it is ready (--mcp-wait waits longer)", s.mcpWait))
		}
	}
}

// startExtensions starts the extensions the command line asks for (--ext,
// then the installed ones unless --no-ext) and attaches them to the agent.
// out carries the mode's OnNote, OnPanel, Log and ReservedCommands; the
// rest is filled in here. The caller chains ToolGate into
// BeforeToolExecute, tees Observe into its sink and calls Shutdown at exit.
func (s *setup) startExtensions(ctx context.Context, out ExtConfig) *ExtManager {
	cfg := out
	cfg.Home, cfg.Cwd, cfg.Provider, cfg.Model = s.home, s.cwd, s.provider, s.model
	cfg.Discover = func() []*extFound { return discoverExtensions(s.home, s.cwd, s.opts.ext, s.opts.noExt) }
	m := NewExtManager(cfg)
	m.Start(ctx)
	m.Attach(s.agent)
	m.SessionStart()
	return m
}

// startHooks loads the Claude Code hooks when the user turned them on,
// attaches them to the agent and runs SessionStart, whose context joins
// the system prompt. The caller chains ToolGate after the extension gate
// and calls SessionEnd at exit. onNote shows the user one line.
func (s *setup) startHooks(ctx context.Context, onNote func(level, msg string)) *Hooks {
	on, err := hooksEnabled(s.opts.claudeHooks, s.home)
	if err != nil {
		onNote("warn", "hooks: "+err.Error())
	}
	if !on {
		return nil
	}
	userHome, _ := os.UserHomeDir()
	cfg := HookConfig{Files: hookSettingsFiles(s.cwd, userHome), Cwd: s.cwd, Model: s.model, Source: "startup", OnNote: onNote}
	if s.session != nil {
		cfg.SessionID, cfg.TranscriptPath = s.session.Meta.ID, s.session.Path
	} else {
		var b [8]byte
		rand.Read(b[:])
		cfg.SessionID = hex.EncodeToString(b[:])
	}
	if len(s.agent.Messages()) > 0 {
		cfg.Source = "resume"
	}
	h := NewHooks(cfg)
	h.Attach(s.agent)
	if extra := h.SessionStart(ctx); extra != "" {
		s.agent.System += "\n\nContext from SessionStart hooks:\n\n" + extra
	}
	return h
}

// guardTools adds the command validators to the tool gates (after the
// ones already there: the extension interception chain, hooks) and, unless
// --no-audit, the audit log. Problems go to the agent's log.
func (s *setup) guardTools() {
	vs := LoadValidators(s.home, s.cwd, func(msg string) { s.agent.logf("%s", validatorText(msg)) })
	if len(vs) > 0 {
		s.gates = append(s.gates, ValidatorGate(vs, s.cwd))
	}
	if !s.opts.noAudit {
		// The audit line comes last, after PostToolUse hooks changed the
		// result, so it records what the model saw.
		prev, audit := s.agent.AfterToolExecute, s.auditHook()
		s.agent.AfterToolExecute = func(ctx context.Context, rec *ToolRecord) {
			if prev != nil {
				prev(ctx, rec)
			}
			audit(ctx, rec)
		}
	}
}

// auditHook is the AfterToolExecute hook that records every tool call. A log
// that cannot be written is reported once and does not stop the tools.
func (s *setup) auditHook() func(ctx context.Context, rec *ToolRecord) {
	l := &AuditLog{
		Path: filepath.Join(s.home, "logs", "audit.jsonl"),
		Cwd:  s.cwd,
		SessionID: func() string {
			if s.session != nil {
				return s.session.Meta.ID
			}
			return ""
		},
	}
	var warn sync.Once
	return func(ctx context.Context, rec *ToolRecord) {
		if err := l.Record(rec); err != nil {
			warn.Do(func() {
				s.agent.logf("audit log: %s (tool calls are not being recorded; --no-audit turns the log off)", strings.TrimSpace(err.Error()))
			})
		}
	}
}

// registerSkills loads the session's skills into s.skills and registers the
// skill tool after the built-in tools, so an extension cannot shadow it.
// --no-skills turns both off.
func (s *setup) registerSkills(reg *ToolRegistry, stderr io.Writer) {
	if s.opts.noSkills {
		return
	}
	s.skills = LoadSkills(s.home, s.cwd, func(format string, args ...any) {
		fmt.Fprintf(stderr, "zot: %s\n", sanitize(fmt.Sprintf(format, args...)))
	})
	reg.SetSource("skill", []Tool{SkillTool(s.skills)})
}

// extLevel maps an MCP log level onto the note levels extensions use.
func extLevel(level string) string {
	if level == "warning" {
		return "warn"
	}
	return level
}

// fail reports err and returns its exit status: 2 for a usage error.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "zot: %s\n", sanitize(err.Error()))
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}

// pickSessionFromTTY shows the numbered session list and reads a choice
// from the terminal, which stays free even when stdin carries the prompt.
// Without a terminal, --resume is a usage error, found before anything
// starts, like the TUI's own refusal.
func pickSessionFromTTY(resume bool, stderr io.Writer) (func([]SessionInfo) (int, error), error) {
	errNoTTY := usageError{"--resume needs a terminal to choose a session from; use --session PATH or --continue"}
	if !resume {
		return nil, nil
	}
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return nil, errNoTTY
	}
	tty.Close()
	return func(list []SessionInfo) (int, error) {
		tty, err := os.Open("/dev/tty")
		if err != nil {
			return 0, errNoTTY
		}
		defer tty.Close()
		fmt.Fprint(stderr, FormatSessionList(list, time.Now()))
		fmt.Fprintf(stderr, "resume which session? [1-%d] ", len(list))
		var n int
		if _, err := fmt.Fscanln(tty, &n); err != nil || n < 1 || n > len(list) {
			return 0, errors.New("no session chosen")
		}
		return n - 1, nil
	}, nil
}

// catchSIGPIPE keeps a reader that goes away (`zot --json | head`) from
// killing zot with SIGPIPE before it has stopped what it started: the write
// fails instead, and the caller winds down. Notify, unlike Ignore, is not
// inherited by the processes zot starts.
func catchSIGPIPE() (stop func()) {
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	return func() { signal.Stop(pipe) }
}
