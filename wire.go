package main

import (
	"cmp"
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
	"sync/atomic"
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
// agent, tools and session made from them. The mode starts the plugins and
// gives the agent its gates with arm, and calls close at its end.
type setup struct {
	opts     zotOptions
	home     string
	cwd      string
	provider string
	model    string
	baseURL  string
	// missingKey, in the interactive mode, says that the provider has no
	// key (other modes fail instead).
	missingKey string
	agent      *Agent
	// armed is set once arm has given the agent every stage a mode needs;
	// until then the agent's first tool gate denies every call.
	armed   atomic.Bool
	toolEnv *ToolEnv
	sandbox *Sandbox // nil: off
	// guarded are the paths programs outside the sandbox read or run
	// (projectGuarded): the sandbox guards them, write and edit refuse
	// them, and no "accept edits" covers them.
	guarded []guardedPath
	session *Session
	skills  []Skill
	// templates are the prompt templates found, nil when they are off.
	templates []PromptTemplate
	plugins   []Plugin // the enabled plugins, whose parts load beside the others
	notes     []string // things the user should know (session repairs)
	// trust is where the project directory stands (trust.go); projectOK
	// says whether its own programs may start in this run: it is trusted,
	// --trust-project, or the user said so in the TUI's dialog.
	trust      trustStatus
	trustKinds []string
	projectOK  bool
	// server is the server whose model list the TUI shows, when the user
	// configured one (hasServer).
	server    modelServer
	hasServer bool
	// cacheRetention is config.json's cacheRetention, checked.
	cacheRetention string
	// mcpPrefixes start the names of the tools the MCP servers will
	// register when they are ready (mcp__<server>__).
	mcpPrefixes []string
	mcp         *MCPManager
	mcpStatus   func(server, level, msg string)
	mcpWait     time.Duration // see awaitMCPBeforeFirstTurn
	// checkpoints record the files around each call that may change them
	// (nil when they are off); runID names the checkpoints of a run
	// without a session file.
	checkpoints *Checkpoints
	runID       string
	// savedApprovals are the "don't ask again" answers saved for this
	// directory (approvals_saved.go).
	savedApprovals [][]string
	// editorMCP are MCP servers an editor passed (zot acp): the user's
	// own, started beside the configured ones. rules are the rules
	// guardTools loaded.
	editorMCP []mcpServerConfig
	rules     *PermissionRules
	// validators are the command validators in use; skippedGates the
	// validators and files left out, and why (the TUI's /permissions).
	validators   []Validator
	skippedGates []string
	config       userConfig // config.json as newSetup read it
	// modes is the session's mode (wire_modes.go): the one it began in,
	// who chose that ("" nobody), and what nobody choosing gives; boxes
	// the sandboxes modes need beyond the run's own. planAsk says who
	// approves plans now (nil: nobody), lastPlan the plan present_plan
	// got where nobody does (-p prints it).
	modes     *Modes
	modeStart Mode
	modeFrom  string
	modeDef   Mode
	boxes     modeBoxes
	planAsk   func() approvalAsker
	lastPlan  atomic.Pointer[string]
}

// defaultMCPWait bounds the wait for MCP servers before a run's first
// model request: long enough for a server started with npx or uvx from a
// warm cache, short enough that a broken one does not stall every run.
const defaultMCPWait = 5 * time.Second

// newSetup builds the provider, the tools and the agent the options ask
// for; problems that are not fatal go to stderr.
func newSetup(o zotOptions, stderr io.Writer) (*setup, error) {
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
	hooksOn, _ := hooksEnabled(o.claudeHooks, s.home) // startHooks reports a bad setting
	// Each plugin reports the files it cannot read when it loads them.
	entries, kinds, _ := projectPrograms(s.home, s.cwd, o, hooksOn)
	s.trust, s.trustKinds = checkTrust(s.home, s.cwd, entries, kinds), kinds
	s.projectOK = s.trust.Trusted || o.trustProject
	var problems []string
	s.savedApprovals, problems = readSavedApprovals(savedApprovalsPath(s.home), s.cwd)
	s.notes = append(s.notes, problems...)
	cfg, err := loadConfig(s.home)
	s.config = cfg
	switch {
	case err != nil && o.sandbox == "":
		// It may ask for a sandbox, which is never given up for a file
		// zot cannot read: one clear error rather than "ignored" and then
		// a refusal.
		return nil, fmt.Errorf("%v: fix or remove it (zot does not start without reading it, since it may ask for a sandbox; --sandbox MODE decides for one run)", err)
	case err != nil:
		fmt.Fprintf(stderr, "zot: %v (ignored: --sandbox decides the sandbox)\n", err)
	}
	for _, key := range []string{"response_timeout", "idle_timeout"} {
		v, err := cfg.str(key)
		if _, derr := parsePositiveDuration(v); err == nil && derr != nil {
			err = fmt.Errorf("config.json: %s %v", key, derr)
		}
		if err != nil {
			fmt.Fprintf(stderr, "zot: %v (ignored)\n", err)
		}
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
	switch cfg.CacheRetention {
	case "", "5m":
	case CacheRetention1h:
		s.cacheRetention = CacheRetention1h
	default:
		fmt.Fprintf(stderr, "zot: config.json: cacheRetention %q is not \"5m\" or \"1h\" (ignored)\n", cfg.CacheRetention)
	}
	s.notes = append(s.notes, useUserModels(s.home)...)
	ep, err := chooseEndpoint(o, cfg, s.home)
	if err != nil {
		return nil, err
	}
	if ep.model == "" {
		return nil, usageError{fmt.Sprintf("--provider %s needs --model (the name of a model your server has, e.g. qwen3-coder)", ep.provider)}
	}
	s.provider, s.model, s.baseURL = ep.provider, ep.model, ep.configuredBase
	pc, err := endpointConfig(s.home, ProviderConfig{Name: s.provider, BaseURL: ep.baseURL, APIKey: ep.key, KeySource: ep.keySource, ResponseTimeout: o.responseTimeout, CacheRetention: s.cacheRetention}, s.model)
	if err != nil {
		return nil, err
	}
	baseURL, key := pc.BaseURL, pc.APIKey
	s.server, s.hasServer = serverFor(s.provider, baseURL, key)
	s.server.headers = pc.Local.Headers
	prov, err := NewProvider(pc)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	noKey := key == "" && s.provider != "ollama" && baseURL == ""
	if noKey && o.interactive {
		s.missingKey = "no API key for " + s.provider
	}

	// What a zot that did not get to close left behind a day ago is of no
	// use to any session still running.
	sweepStaleSpills(s.home, os.TempDir())
	s.guarded = projectGuarded(s.cwd, s.trust.Entries, LoadPermissionRules(s.permissionSources(nil)).Files)
	sb, notes, err := sandboxFromSettings(o.sandbox, s.cwd, s.home, s.guarded)
	if err != nil {
		return nil, err
	}
	s.notes = append(s.notes, notes...)
	s.toolEnv = NewToolEnv(s.cwd, o.jail)
	s.toolEnv.BashOutput, s.toolEnv.SpillLimit = cfg.bashLimits(stderrLog(stderr))
	s.toolEnv.Private = []string{s.home}
	if sb != nil {
		s.sandbox, s.toolEnv.Sandbox = sb, sb
	}
	s.plugins = EnabledPlugins(s.home)
	// Who reads a refusal outside the TUI (which sets its own) can only
	// start zot again.
	s.toolEnv.JailHint = "zot was started with --jail: run it without --jail, or with --cwd set to a directory that holds the path"
	reg := NewToolRegistry()
	reg.SetSource("builtin", BuiltinTools(s.toolEnv))
	reg.SetSource("plan", nil) // present_plan, in plan mode (planTool)
	if on, err := searchToolsOn(o, s.home); err != nil {
		fmt.Fprintf(stderr, "zot: %v (ignored)\n", err)
	} else if on {
		reg.SetSource("search", SearchTools(s.toolEnv))
	}
	s.registerSkills(reg, stderr)
	s.loadTemplates(stderr)
	switch {
	case o.noTools:
		reg.SetFilter(func(string) bool { return false })
	case o.tools != "":
		reg.SetFilter(toolFilter(splitList(o.tools)))
	}
	if noKey && !o.interactive {
		err := fmt.Errorf("no API key for %s: set %s, pass --api-key, or save one with /login in the TUI; for a local server use --provider ollama or --base-url", s.provider, keyEnvVar(s.provider))
		// A usage error comes first, as a bad flag would; no plugin
		// starts without a key, so only the built-in tools are known.
		if bad := s.unmatchedToolPatterns(reg.Names()); len(bad) > 0 {
			return nil, usageError{fmt.Sprintf("--tools: %s matches no built-in tool (the tools are %s); extensions and MCP servers did not start, since there is %v", strings.Join(bad, ", "), strings.Join(reg.Names(), ", "), err)}
		}
		return nil, err
	}
	a := NewAgent(prov, s.model, reg)
	a.Reasoning = o.reasoning
	if a.CompactThreshold, err = cfg.fraction("compact_threshold", "0.85 compacts at 85% of the context window"); err != nil {
		fmt.Fprintf(stderr, "zot: %v (ignored)\n", err)
	}
	if a.ToolSearchShare, err = cfg.fraction("tool_search_threshold", "0.25 lists MCP and extension tools for tool_search once all tools take a quarter of the context window"); err != nil {
		fmt.Fprintf(stderr, "zot: %v (ignored)\n", err)
	}
	if o.maxSteps > 0 {
		a.MaxSteps = o.maxSteps
	}
	var toolNames []string
	for _, t := range reg.List() {
		toolNames = append(toolNames, t.Name())
	}
	a.System = BuildSystemPrompt(SystemPromptOptions{Cwd: s.cwd, Home: s.home, Override: o.systemPrompt, Append: o.appendSystem, Tools: toolNames, Extra: SkillsPrompt(reg, s.skills)})
	a.Log = stderrLog(stderr)
	a.Pipeline.AddToolGate(armedStage, s.armedGate)
	s.agent = a
	s.armCheckpoints()
	if err := s.startModes(cfg, cmp.Or(o.modeDefault, ModeAuto), stderr); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// searchToolsOn says whether grep, find and ls are offered: they are off
// unless --tools names one of them or config.json's "search_tools" is
// true, because their definitions cost every request about 210 tokens
// (docs/tools.md#grep-find-ls-off-by-default). Plan mode offers them
// beside present_plan whatever this says (setup.planTool).
func searchToolsOn(o zotOptions, home string) (bool, error) {
	if o.noTools {
		return false, nil
	}
	if o.tools != "" {
		return slices.ContainsFunc([]string{ToolGrep, ToolFind, ToolLs}, toolFilter(splitList(o.tools))), nil
	}
	return configBool(home, "search_tools", false)
}

// endpoint is the provider zot talks to, the model and where they are
// served, and the key.
type endpoint struct {
	provider, model string
	// baseURL is where requests go; configuredBase is the provider's base
	// URL from --base-url or config.json, without a model's own.
	baseURL, configuredBase string
	key, keySource          string
}

// chooseEndpoint reads the options over config.json and models.json. The
// model is "" for a local server without --model.
func chooseEndpoint(o zotOptions, cfg userConfig, home string) (endpoint, error) {
	ep := endpoint{provider: chooseProvider(o, cfg), model: o.model, configuredBase: o.baseURL}
	if ep.provider != "anthropic" && ep.provider != "openai" && ep.provider != "ollama" {
		return ep, usageError{fmt.Sprintf("unknown provider %q (want anthropic, openai or ollama)", ep.provider)}
	}
	if cfg.Provider == ep.provider {
		ep.model = cmp.Or(ep.model, cfg.Model)
		ep.configuredBase = cmp.Or(ep.configuredBase, cfg.BaseURL)
	}
	if o.baseURL == "" && ep.configuredBase != "" {
		if err := checkBaseURL(ep.configuredBase); err != nil {
			return ep, fmt.Errorf("%s: base_url %w; fix it there, or give --base-url", filepath.Join(home, "config.json"), err)
		}
	}
	if ep.provider == "ollama" && ep.configuredBase == "" {
		base, err := ollamaEnvBase()
		if err != nil {
			return ep, usageError{err.Error()}
		}
		ep.configuredBase = base
	}
	ep.model = cmp.Or(ep.model, defaultModels[ep.provider])
	ep.baseURL = ep.configuredBase
	// A models.json entry's baseUrl is where that model is served, and
	// else the server /model took it from, unless --base-url says
	// otherwise for this run.
	if o.baseURL == "" && ep.model != "" {
		ep.baseURL = cmp.Or(lookupModel(ep.provider, ep.model).BaseURL, cfg.modelServer(ep.provider, ep.model), ep.baseURL)
	}
	var err error
	ep.key, ep.keySource, err = resolveKey(ep.provider, o.apiKey, home)
	return ep, err
}

// chooseProvider picks the provider when --provider is not given: the last
// one chosen, else the one whose key is in the environment.
func chooseProvider(o zotOptions, cfg userConfig) string {
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
	names := s.agent.Tools.Names()
	unmatched := s.unmatchedToolPatterns(names)
	if len(unmatched) == 0 {
		return nil
	}
	there := names
	for _, p := range s.mcpPrefixes {
		there = append(there, p+"* (MCP)")
	}
	return usageError{fmt.Sprintf("--tools: %s matches no tool; the tools are %s", strings.Join(unmatched, ", "), strings.Join(there, ", "))}
}

// unmatchedToolPatterns are the --tools patterns that match none of names
// and no MCP server's prefix.
func (s *setup) unmatchedToolPatterns(names []string) []string {
	if s.opts.tools == "" || s.opts.noTools {
		return nil
	}
	var unmatched []string
	for _, p := range splitList(s.opts.tools) {
		if !slices.ContainsFunc(names, toolFilter([]string{p})) && !slices.ContainsFunc(s.mcpPrefixes, func(prefix string) bool { return patternCouldMatchPrefix(p, prefix) }) {
			unmatched = append(unmatched, p)
		}
	}
	return unmatched
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

// newModeSetup is the setup of -p, --json and rpc, with its session open
// (a session of its own unless useSessionByDefault is false) and its notes
// shown on stderr. The caller closes it.
func newModeSetup(o zotOptions, useSessionByDefault bool, stderr io.Writer) (*setup, error) {
	pick, err := pickSessionFromTTY(o.resume && o.resumeName == "", stderr)
	if err != nil {
		return nil, err
	}
	s, err := newSetup(o, stderr)
	if err != nil {
		return nil, err
	}
	if err := s.openSession(useSessionByDefault, pick); err != nil {
		s.close()
		return nil, err
	}
	for _, n := range s.notes {
		fmt.Fprintf(stderr, "zot: %s\n", sanitize(n))
	}
	return s, nil
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
	case o.resumeName != "":
		p, err := findSession(s.home, s.cwd, o.resumeName)
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
	if err := s.agent.Restore(loaded); err != nil {
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
	s.closeBoxes()
}

// runOnce is -p and --json: one prompt, then exit.
func runOnce(o zotOptions, stdin io.Reader, stdout, stderr io.Writer) int {
	if o.approvalsStdin && (!o.json || len(o.prompt) == 0) {
		return failExit(stderr, usageError{"--approvals-stdin reads approve commands on stdin: use it with --json, and give the prompt as words"})
	}
	if o.elicitationStdin && (!o.json || len(o.prompt) == 0) {
		return failExit(stderr, usageError{"--elicitation-stdin reads elicit commands on stdin: use it with --json, and give the prompt as words"})
	}
	answers := stdin
	if o.approvalsStdin || o.elicitationStdin {
		stdin = nil // it carries the answers, not the prompt
	}
	text, err := promptText(o, stdin)
	if err != nil {
		return failExit(stderr, err)
	}
	s, err := newModeSetup(o, true, stderr)
	if err != nil {
		return failExit(stderr, err)
	}
	defer s.close()
	ctx, stop := signalContext()
	defer stop()
	defer catchSIGPIPE()()
	ctx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	var events *eventWriter
	if o.json {
		events = newEventWriter(stdout)
		events.Write(Event{Type: EventSessionStart, Cwd: s.cwd, Sandbox: string(s.sandbox.Mode()), Mode: string(s.modes.Current())})
		s.modes.Hear(func(m Mode) {
			events.Write(Event{Type: EventModeChanged, Mode: string(m), Sandbox: s.modes.Sandbox(m)})
		})
	}
	for _, line := range s.trustNotes() {
		fmt.Fprintf(stderr, "zot: %s\n", line)
		if events != nil {
			events.Write(Event{Type: EventExtNotify, Extension: "trust", Level: "warn", Message: line})
		}
	}
	host, sessionApprovals := onceHost(o, stderr), s.sessionApprovals()
	host.confirm = sessionApprovals.CoverOr(host.confirm) // the answers saved for this directory
	if o.approvalsStdin || o.elicitationStdin {
		var approvals *approvalBroker
		var elicits *elicitBroker
		if o.approvalsStdin {
			approvals = newApprovalBroker(o.approvalTimeout, func(e approvalRequestEvent) { events.Write(e) })
			host.confirm = sessionApprovals.Confirm(approvals.ask)
			host.askPlan, host.outside = func() approvalAsker { return approvals.ask }, func() bool { return true }
		}
		if o.elicitationStdin {
			elicits = newElicitBroker(o.approvalTimeout, func(e elicitationRequestEvent) { events.Write(e) })
			host.elicit = Elicitor{Form: true, URL: true, Ask: elicits.ask}
		}
		quit := make(chan struct{})
		defer close(quit)
		go readClientAnswers(answers, approvals, elicits, stderr, quit) // ends with stdin or once quit closes
	}
	exts, stopPlugins, err := s.arm(ctx, host)
	defer stopPlugins()
	if err != nil {
		return failExit(stderr, err)
	}
	if err := s.checkToolPatterns(); err != nil {
		return failExit(stderr, err)
	}
	if note := s.modeNote(); note != "" && noteOnce(s.home, "mode-print") {
		fmt.Fprintf(stderr, "zot: %s\n", note)
	}
	s.awaitMCPBeforeFirstTurn()

	var sink Sink
	var final string
	if o.json {
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
			case EventRetry:
				fmt.Fprintf(stderr, "zot: retrying in %s (attempt %d of %d): %s\n", e.Wait.Round(100*time.Millisecond), e.Attempt, e.Attempts, sanitize(e.Error))
			case EventError:
				if e.Truncated { // a warning; a failure is told once, at the end
					fmt.Fprintf(stderr, "zot: %s\n", sanitize(e.Message))
				}
			}
		}
	}
	prompts := s.prompts(func(msg string) { fmt.Fprintf(stderr, "zot: %s\n", msg) })
	var answer finalAnswer
	err = prompts.Send(ctx, s.agent, text, nil, TeeSinks(exts.Observe, sink, answer.watch))
	if plan := s.lastPlan.Load(); plan != nil {
		final = *plan // plan mode: the plan is the answer, and nothing of it ran
		answer = finalAnswer{text: final, stop: StopEndTurn}
	}
	if o.print && final != "" {
		if f, ok := stdout.(*os.File); ok && isTerminal(int(f.Fd())) {
			final = sanitize(final)
		}
		fmt.Fprintln(stdout, strings.TrimRight(final, "\n"))
	}
	switch {
	case err == nil && answer.problem() != "":
		// The run worked, but what it was for did not come: a script must
		// not take an empty or cut answer for one.
		if events != nil {
			events.Write(Event{Type: EventError, Message: answer.problem()})
		}
		fmt.Fprintf(stderr, "zot: %s\n", answer.problem())
		return exitFailure
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

// finalAnswer follows a run's events for what -p and --json exit with:
// the last reply, the reason its turn ended, its output tokens.
type finalAnswer struct {
	text     string
	thinking bool
	blocked  bool
	stop     string
	output   int
}

func (f *finalAnswer) watch(e Event) {
	switch e.Type {
	case EventAssistantStart:
		*f = finalAnswer{}
	case EventAssistantMessage:
		m := Message{Content: e.Content}
		f.text = strings.TrimSpace(m.Text())
		f.thinking = m.thinkingText() != ""
	case EventMessageBlocked:
		f.blocked = true
	case EventUsage:
		f.output = e.Usage.Output
	case EventTurnEnd:
		f.stop = e.Stop
	}
}

// problem says what is wrong with the final answer, "" when nothing is:
// it is empty, the output limit cut it, or the model refused. An answer a
// message gate hid was the gate's doing, and a turn that ended in tools
// or an error is no final answer.
func (f *finalAnswer) problem() string {
	if f.stop == StopRefusal && !f.blocked {
		return "the model refused to answer (stop: refusal); rephrase the prompt, or try another model"
	}
	if f.blocked || (f.stop != StopEndTurn && f.stop != StopLength) {
		return ""
	}
	limit := fmt.Sprintf("(stop: length, %d output tokens)", f.output)
	switch {
	case f.text == "" && f.stop == StopLength && f.thinking:
		return "the model's answer is empty: it spent the output limit reasoning " + limit + "; raise the model's maxTokens in models.json, or lower --reasoning"
	case f.text == "" && f.stop == StopLength:
		return "the model's answer is empty: the output limit came before any text " + limit + "; a local model that does this is often looping: give it a smaller maxTokens in models.json, or try another model"
	case f.text == "":
		return "the model's answer is empty (stop: " + f.stop + ")"
	case f.stop == StopLength:
		return "the model's answer is incomplete: the output limit cut it " + limit + "; raise the model's maxTokens in models.json, or ask for less at once"
	}
	return ""
}

// promptText is the prompt: the words, then what was piped on stdin
// (`git diff | zot -p "review this"` sends both).
func promptText(o zotOptions, stdin io.Reader) (string, error) {
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
func runRPC(o zotOptions, stdin io.Reader, stdout, stderr io.Writer) int {
	switch {
	case o.print || o.json:
		return failExit(stderr, usageError{"rpc serves its own protocol: drop -p/--print and --json"})
	case len(o.prompt) > 0:
		return failExit(stderr, usageError{fmt.Sprintf(`zot rpc takes no prompt words (got %q): send {"type":"prompt","message":…} lines on stdin`, strings.Join(o.prompt, " "))})
	}
	token, err := rpcTokenFromEnv()
	if err != nil {
		return failExit(stderr, err)
	}
	s, err := newModeSetup(o, false, stderr)
	if err != nil {
		return failExit(stderr, err)
	}
	defer s.close()
	defer catchSIGPIPE()()
	ctx, stop := signalContext()
	defer stop()
	// After the first signal, a second one kills at once.
	defer context.AfterFunc(ctx, stop)()
	out, release := rpcOutput(ctx, stdout)
	defer release()

	srv := newRPCServer(rpcConfig{Agent: s.agent, Provider: s.provider, Cwd: s.cwd, Sandbox: string(s.sandbox.Mode()), Token: token, Log: s.agent.Log, Checkpoints: s.rpcCheckpoints(),
		Approvals: s.sessionApprovals(), ApprovalTimeout: o.approvalTimeout, Modes: s.modes}, stdin, out)
	for _, line := range s.trustNotes() {
		fmt.Fprintf(stderr, "zot: %s\n", line)
		srv.Notify(rpcNote{Extension: "trust", Level: "warn", Message: line})
	}
	// The extension host's own problems (a bad manifest, a missing hello, a
	// crash) reach the client as ext_notify from "extensions", beside stderr.
	hostLog := func(format string, args ...any) {
		s.agent.Log(format, args...)
		srv.Notify(rpcNote{Extension: "extensions", Level: "warn", Message: fmt.Sprintf(format, args...)})
	}
	exts, stopPlugins, err := s.arm(ctx, rpcHost(o, srv, hostLog))
	defer stopPlugins()
	if err != nil {
		return failExit(stderr, err)
	}
	if err := s.checkToolPatterns(); err != nil {
		return failExit(stderr, err)
	}
	s.awaitMCPBeforeFirstTurn()
	srv.ReloadExtensions = func(ctx context.Context) (rpcReloadStats, error) { return rpcReloadStats(exts.Reload(ctx)), nil }
	prompts := s.prompts(func(msg string) { srv.Notify(rpcNote{Extension: "prompts", Level: "warn", Message: msg}) })
	srv.Prompt = func(ctx context.Context, text string, images []Block, sink Sink) error {
		return prompts.Send(ctx, s.agent, text, images, sink)
	}
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
func runTUI(o zotOptions, stdin io.Reader, stdout, stderr io.Writer) int {
	in, inOK := stdin.(*os.File)
	out, outOK := stdout.(*os.File)
	if !inOK || !outOK || !isTerminal(int(in.Fd())) || !isTerminal(int(out.Fd())) {
		fmt.Fprintln(stderr, "zot: the interactive UI needs a terminal on stdin and stdout; give a prompt with -p (or --json) to run without one, e.g. zot -p \"fix the tests\"")
		return exitUsage
	}
	o.interactive = true
	resume := o.resume && o.resumeName == ""
	o.resume = false // the TUI shows its own session picker; a name opens at once
	s, err := newSetup(o, stderr)
	if err != nil {
		return failExit(stderr, err)
	}
	defer s.close()
	if err := s.openSession(true, nil); err != nil {
		return failExit(stderr, err)
	}
	t := newTUI(s.tuiConfig(), out)
	s.modes.Hear(t.ModeChanged)
	stop := func() {}
	defer func() { stop() }()
	if s.projectOK || s.trust.Declined {
		if !s.projectOK {
			t.Logf("zot: this directory's own programs are not running: you chose to continue without them (zot trust runs them, zot trust --revoke asks again)")
		}
		stop = s.plugTUI(t)
		if err := s.checkToolPatterns(); err != nil {
			return failExit(stderr, err)
		}
		if len(o.prompt) > 0 {
			s.awaitMCPBeforeFirstTurn()
		}
	} else {
		// Nothing starts before the user answers: the dialog comes first,
		// and no prompt can run while it is open.
		t.AskTrust(s.trustAsk(func(trust bool) {
			if trust {
				s.projectOK = true
				if err := recordTrust(s.home, s.cwd, s.trust.Entries, s.trustKinds); err != nil {
					t.Logf("zot: trusted for this session only: %s", err)
				}
			} else {
				s.trust.Declined = true    // what /status says
				if s.trust.Warning == "" { // a trust.json zot cannot read is not rewritten for a "no"
					if err := recordDecline(s.home, s.cwd, s.trust.Entries); err != nil {
						t.Logf("zot: not remembered, so the next session asks again: %s", err)
					}
				}
			}
			stop = s.plugTUI(t)
			if err := s.checkToolPatterns(); err != nil {
				t.Logf("zot: %s", err)
			}
			if len(o.prompt) > 0 {
				s.awaitMCPBeforeFirstTurn()
			}
		}))
	}
	if s.hasServer {
		defer listServerModels(s.home, s.server, t.SetModelListError)()
	}
	return t.Run(in, out, strings.Join(o.prompt, " "), resume)
}

// tuiConfig is what the TUI gets of the setup. The session it switches to
// is the one close closes, and the one the audit log names.
func (s *setup) tuiConfig() TUIConfig {
	notify := s.notifyKind()
	return TUIConfig{
		Agent: s.agent, ToolEnv: s.toolEnv, Home: s.home, Cwd: s.cwd,
		Provider: s.provider, BaseURL: s.baseURL, BaseURLFlag: s.opts.baseURL != "", APIKey: s.opts.apiKey, ResponseTimeout: s.opts.responseTimeout, CacheRetention: s.cacheRetention,
		MissingKey: s.missingKey, Session: s.session, OnSession: func(sess *Session) { s.session = sess },
		Notes: s.notes, AskTools: s.opts.noYolo, Sandbox: string(s.sandbox.Mode()), Modes: s.modes,
		Checkpoints: s.tuiCheckpoints(), Approvals: s.sessionApprovals(), Notify: notify, Inspect: inspectHost{s},
	}
}

// notifyKind is config.json's "notify", checked: a bad value is a note,
// and the default stands.
func (s *setup) notifyKind() string {
	v, err := s.config.str("notify")
	if err != nil {
		s.notes = append(s.notes, fmt.Sprintf("%v (the default, %s, is used)", err, notifyDefault))
		return notifyDefault
	}
	kind, err := ParseNotify(v)
	if err != nil {
		s.notes = append(s.notes, err.Error())
	}
	return kind
}

// plugTUI starts the plugins for the TUI, makes it the one that answers
// their gates' questions, and gives it the extension host and the skills.
func (s *setup) plugTUI(t *TUI) (stop func()) {
	exts, stop, err := s.arm(context.Background(), tuiHost(t))
	if err != nil {
		t.Logf("zot: %s", err)
		return stop
	}
	if note := s.modeNote(); note != "" && noteOnce(s.home, "mode-tui") {
		t.Logf("zot: %s", note)
	}
	t.Ext, t.Observe = tuiExtHost{exts}, exts.Observe
	if len(s.templates) > 0 {
		t.Prompts = tuiPromptHost{s.prompts(func(msg string) { t.Note(tuiNote{Extension: "prompts", Level: "warn", Message: msg}) }), s.agent}
	}
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

// tuiPromptHost is the prompt templates in the TUI's terms.
type tuiPromptHost struct {
	p *Prompts
	a *Agent
}

func (h tuiPromptHost) List() []tuiTemplate {
	var out []tuiTemplate
	for _, t := range h.p.List() {
		out = append(out, tuiTemplate{Name: t.Name, ArgumentHint: t.ArgumentHint, Description: t.Description, Source: t.Source, Path: t.Path})
	}
	return out
}

func (h tuiPromptHost) Send(ctx context.Context, text string, sink Sink) error {
	return h.p.Send(ctx, h.a, text, nil, sink)
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
// and hook commands — for the mode's host, and adds the extensions' and
// the hooks' stages to the agent's pipeline. stop shuts everything down.
func (s *setup) startPlugins(ctx context.Context, h modeHost) (exts *ExtManager, stop func()) {
	mcp := s.startMCP(ctx, h)
	exts = s.startExtensions(ctx, h.ext)
	hooks := s.startHooks(ctx, h.hookNote)
	hooks.Attach(s.agent) // also when there are none: every mode has the stage
	return exts, func() {
		hooks.SessionEnd(context.Background())
		exts.Shutdown(context.Background())
		mcp.Shutdown(context.Background())
	}
}

// startMCP starts the MCP servers the configuration files name; their
// tools join the agent's registry as each server gets ready, and their
// questions go to whoever answers them in the mode.
func (s *setup) startMCP(ctx context.Context, h modeHost) *MCPManager {
	onStatus := h.mcpStatus
	src := MCPSources{Home: s.home, Cwd: s.cwd, Files: s.opts.mcpConfigs, SkipDefault: s.opts.noMCP, UntrustedProject: !s.projectOK}
	if !s.opts.noMCP {
		src.Plugins = pluginMCPFiles(s.plugins)
	}
	servers, problems := loadMCPConfigs(src)
	project := map[string]bool{}
	for _, f := range mcpProjectFiles(s.cwd) {
		project[f] = !userOwns(s.home, f) && !slices.ContainsFunc(s.opts.mcpConfigs, func(c string) bool { abs, _ := filepath.Abs(c); return abs == f })
	}
	for i, c := range servers {
		if !project[c.Source] || c.Untrusted || c.Disabled {
			continue
		}
		if !s.approved(mcpTrustEntry(c, s.cwd)) {
			servers[i].Untrusted = true
			s.agent.logf("MCP server %q (%s) is new or changed since this directory was trusted: not started (zot trust %s)", c.Name, relTo(s.cwd, c.Source), s.cwd)
			continue
		}
		servers[i].Verify = func() error { return s.stillTrusted(mcpTrustEntry(c, s.cwd), fmt.Sprintf("MCP server %q", c.Name)) }
	}
	// The editor's server of a name wins over a configured one.
	servers = slices.DeleteFunc(servers, func(c mcpServerConfig) bool {
		return slices.ContainsFunc(s.editorMCP, func(e mcpServerConfig) bool { return e.slug == c.slug })
	})
	servers = append(servers, s.editorMCP...)
	for _, c := range servers {
		if c.Untrusted || c.Disabled {
			continue // never starts: --tools cannot count on its tools
		}
		s.mcpPrefixes = append(s.mcpPrefixes, mcpToolPrefix(c.Name))
	}
	refusal := h.elicitRefusal
	if refusal == "" {
		refusal = fmt.Sprintf("zot runs here as %s, with nobody to answer a question (run zot in its terminal UI, or answer over rpc or --json --elicitation-stdin)", h.name)
	}
	m := NewMCPManager(MCPConfig{Home: s.home, Cwd: s.cwd, Servers: servers, Problems: problems, OnStatus: onStatus,
		Login: h.mcpLogin, Elicit: h.elicit, ElicitRefusal: refusal})
	m.Start(ctx, s.agent.Tools)
	s.mcp, s.mcpStatus = m, onStatus
	if len(s.mcpPrefixes) > 0 { // a server may start: its tool list may go stale
		s.agent.Pipeline.AddTurnGate(Stage{Name: "mcp-refresh", Order: OrderPrepare}, func(context.Context, int) (bool, string) {
			m.Refresh()
			return false, ""
		})
	}
	return m
}

// awaitMCPBeforeFirstTurn makes the first model request wait, at most
// s.mcpWait, for the MCP servers still starting: a one-shot run must offer
// their tools on the turn where the model plans. A server not ready by then
// is reported, and its tools join when it is. The TUI, where the user types
// first, calls it only for a prompt given on the command line.
func (s *setup) awaitMCPBeforeFirstTurn() {
	var once sync.Once
	s.agent.Pipeline.AddTurnGate(Stage{Name: "mcp-wait", Order: OrderPrepare}, func(ctx context.Context, step int) (bool, string) {
		once.Do(func() { s.awaitMCP(ctx) })
		return false, ""
	})
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
// rest is filled in here. The caller tees Observe into its sink and calls
// Shutdown at exit.
func (s *setup) startExtensions(ctx context.Context, out ExtConfig) *ExtManager {
	cfg := out
	cfg.Home, cfg.Cwd, cfg.Provider, cfg.Model = s.home, s.cwd, s.provider, s.model
	cfg.Discover = func() []*extFound {
		return discoverExtensions(s.home, s.cwd, s.opts.ext, s.opts.noExt, func(f *extFound) bool { return s.mayLoad(f, cfg.Log) })
	}
	m := NewExtManager(cfg)
	m.Start(ctx)
	m.Attach(s.agent)
	m.SessionStart()
	return m
}

// startHooks loads the Claude Code hooks of the settings files when the
// user turned them on, and the enabled plugins' hooks always, and runs
// SessionStart, whose context joins the system prompt; nil when there are
// none. The caller attaches them to the agent and calls SessionEnd at
// exit. onNote shows the user one line.
func (s *setup) startHooks(ctx context.Context, onNote func(level, msg string)) *Hooks {
	on, err := hooksEnabled(s.opts.claudeHooks, s.home)
	if err != nil {
		onNote("warn", "hooks: "+err.Error())
	}
	cfg := HookConfig{Cwd: s.cwd, Model: s.model, Source: "startup", OnNote: onNote, Modes: s.modes}
	project := map[string]bool{}
	cfg.Verify = func(file string) error {
		if !project[file] {
			return nil
		}
		for _, e := range hookTrustEntries(file, s.cwd, nil) {
			if err := s.stillTrusted(e, fmt.Sprintf("hook %q (%s)", e.Name, e.Source)); err != nil {
				return err
			}
		}
		return nil
	}
	if on {
		userHome, _ := os.UserHomeDir()
		for _, f := range hookSettingsFiles(s.cwd, userHome) {
			if userOwns(s.home, f) {
				cfg.Files = append(cfg.Files, f)
				continue
			}
			if !s.projectOK {
				continue
			}
			if slices.ContainsFunc(hookTrustEntries(f, s.cwd, nil), func(e trustEntry) bool { return !s.approved(e) }) {
				onNote("warn", fmt.Sprintf("hooks: %s changed since this directory was trusted: its hooks do not run (zot trust %s)", relTo(s.cwd, f), s.cwd))
				continue
			}
			project[f] = true
			cfg.Files = append(cfg.Files, f)
		}
	}
	for _, p := range s.plugins {
		if _, err := os.Stat(p.HooksFile()); err == nil {
			cfg.Plugins = append(cfg.Plugins, HookPluginFile{Path: p.HooksFile(), Root: p.Dir, Origin: p.Origin()})
		}
	}
	if len(cfg.Files) == 0 && len(cfg.Plugins) == 0 {
		return nil
	}
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
	if extra := h.SessionStart(ctx); extra != "" {
		s.agent.System += "\n\nContext from SessionStart hooks:\n\n" + extra
	}
	return h
}

// guardTools adds the command validators and the permission rules, one
// stage, to the tool gates (they run after the extensions and the hooks,
// seeing the call as those left it) and, unless --no-audit, the audit log,
// last of the after-tool stages.
// Problems go to the agent's log.
func (s *setup) guardTools() {
	vs := loadValidatorFiles(trustedValidatorFiles(s.home, s.cwd, s.projectOK), func(msg string) { s.agent.logf("%s", validatorText(msg)) })
	project := filepath.Join(s.cwd, ".zot", "validators.json")
	vs = slices.DeleteFunc(vs, func(v Validator) bool {
		if v.Source != project || userOwns(s.home, project) || s.approved(validatorTrustEntry(v, s.cwd)) {
			return false
		}
		s.agent.logf("validator %q (%s) is new or changed since this directory was trusted: not used (zot trust %s)", v.Name, relTo(s.cwd, project), s.cwd)
		s.skippedGates = append(s.skippedGates, fmt.Sprintf("validator %q (%s): changed since the directory was trusted", v.Name, project))
		return true
	})
	s.skipValidators()
	for i, v := range vs {
		if v.Source == project && !userOwns(s.home, project) {
			vs[i].Check = func() error {
				return s.stillTrusted(validatorTrustEntry(v, s.cwd), fmt.Sprintf("validator %q", v.Name))
			}
		}
	}
	src := s.permissionSources(func(l PermissionLoosening) bool {
		return s.approved(rulesTrustEntry(l, s.cwd))
	})
	src.HostMode = true
	rules := LoadPermissionRules(src)
	s.rules, s.validators = rules, vs
	if s.toolEnv != nil {
		s.toolEnv.ReadRule = rules.ReadVerdict
	}
	for _, p := range rules.StartupProblems() {
		s.agent.logf("permission rules: %s", validatorText(p.String()))
	}
	// The stage is there with nothing to check too: every mode's pipeline
	// holds it (requiredStages), and it passes every call.
	s.agent.Pipeline.AddToolGate(ValidatorStage, PermissionGate(vs, rules, s.cwd))
	s.armModes()
	if !s.opts.noAudit {
		s.agent.Pipeline.AddAfterTool(AuditStage, s.auditHook())
	}
}

// permissionSources are where the rules of a session in s.cwd are read;
// approved says which project files' loosening rules apply.
func (s *setup) permissionSources(approved func(PermissionLoosening) bool) PermissionSources {
	src := DefaultPermissionSources(s.cwd)
	src.UserOwns = func(p string) bool { return userOwns(s.home, p) }
	src.Approved = approved
	src.Guarded = guardedBy(s.guarded)
	return src
}

// auditHook is the audit stage that records every tool call. A log
// that cannot be written is reported once and does not stop the tools.
func (s *setup) auditHook() func(ctx context.Context, rec *ToolRecord) {
	l := &AuditLog{
		Path:    filepath.Join(s.home, "logs", "audit.jsonl"),
		Cwd:     s.cwd,
		Sandbox: string(s.sandbox.Mode()),
		SessionID: func() string {
			if s.session != nil {
				return s.session.Meta.ID
			}
			return ""
		},
	}
	l.Repaired = func(msg string) { s.agent.logf("audit log: %s", msg) }
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
	s.skills = LoadSkills(s.home, s.cwd, stderrLog(stderr), pluginSkillRoots(s.plugins)...)
	reg.SetSource("skill", []Tool{SkillTool(s.skills)})
}

// loadTemplates finds the prompt templates unless --no-prompts or the
// "prompts" setting turns them off; broken files are reported on stderr.
func (s *setup) loadTemplates(stderr io.Writer) {
	log := stderrLog(stderr)
	on, err := promptsEnabled(s.opts.noPrompts, s.home)
	if err != nil {
		log("%v", err)
	}
	if on {
		s.templates = LoadPrompts(s.home, s.cwd, pluginPromptRoots(s.plugins), log)
	}
}

// prompts expands the templates for a mode; onNote shows the user a line
// about one. A template's !`commands` pass the session's gates; its @paths
// attach as the TUI's do, inside the jail when it is on.
func (s *setup) prompts(onNote func(msg string)) *Prompts {
	if len(s.templates) == 0 {
		return nil
	}
	return NewPrompts(PromptConfig{
		Templates:      s.templates,
		Reserved:       tuiCommandNames(),
		ProjectTrusted: s.templateTrusted,
		KnownModel:     func(id string) bool { return lookupModel(s.provider, id).Known },
		Attach:         func(ref string) (Block, string, error) { return attachFile(ref, s.toolEnv) },
		OnNote:         onNote,
	})
}

// What the enabled plugins bring, as the plugin of zot that runs each part
// reads it: names prefixed "NAME:", the source "plugin:NAME".

func pluginSkillRoots(ps []Plugin) []skillRoot {
	var out []skillRoot
	for _, p := range ps {
		out = append(out, skillRoot{dir: p.SkillsDir(), label: p.Origin(), prefix: p.Name + ":"})
	}
	return out
}

func pluginPromptRoots(ps []Plugin) []PromptRoot {
	var out []PromptRoot
	for _, p := range ps {
		out = append(out, PromptRoot{Dir: p.CommandsDir(), Label: p.Origin(), Namespace: p.Name + ":", Owned: true})
	}
	return out
}

func pluginMCPFiles(ps []Plugin) []MCPPluginFile {
	var out []MCPPluginFile
	for _, p := range ps {
		out = append(out, MCPPluginFile{Path: p.MCPFile(), Namespace: p.Name, Root: p.Dir})
	}
	return out
}

// templateTrusted says whether a project template's !`command` lines may
// run: the project is trusted with the template as it is now.
func (s *setup) templateTrusted(t PromptTemplate) bool {
	return s.approved(promptTrustEntry(t, s.cwd))
}

// promptTrustEntry is a project template with !`command` lines as trust
// covers it: its commands, and its whole text, which puts the arguments
// into them.
func promptTrustEntry(t PromptTemplate, dir string) trustEntry {
	return trustEntry{Kind: trustPrompt, Source: relTo(dir, t.Path), Name: "/" + t.Name,
		Command: strings.Join(PromptCommands(t), " ; "), Content: sha256Hex([]byte(t.Body))}
}

// extLevel maps an MCP log level onto the note levels extensions use.
func extLevel(level string) string {
	if level == "warning" {
		return "warn"
	}
	return level
}

// failExit reports err and returns its exit status: 2 for a usage error.
func failExit(stderr io.Writer, err error) int {
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

// Workspace trust. The project's own programs — what ./.mcp.json,
// ./.zot/mcp.json, ./.zot/extensions/, ./.zot/validators.json, the
// project's prompt templates and its hook settings would start — are
// listed here, where the
// plugins' sources are known, for trust.go to check; each plugin then
// gets its project sources only when s.projectOK.
