package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	// First of all: see forbidDumps for what it covers and what not.
	if err := forbidDumps(); err != nil {
		fmt.Fprintf(os.Stderr, "zot: warning: could not make the process non-dumpable (%v): other processes of your user can read its environment\n", err)
	}
	release := adoptOrphans(killGrace)
	code := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	release() // what the processes zot started left running stops with zot
	os.Exit(code)
}

// options are the parsed command line.
type options struct {
	print, json, rpc     bool
	help, version        bool
	listModels           bool
	provider, model      string
	baseURL, apiKey      string
	responseTimeout      time.Duration
	cwd                  string
	tools                string
	noTools, jail        bool
	systemPrompt         string
	appendSystem         []string
	reasoning            string
	maxSteps             int
	continueLast, resume bool
	sessionPath          string
	noSession            bool
	noSkills             bool
	mcpConfigs           []string
	noMCP                bool
	ext                  []string
	noExt                bool
	noYolo               bool
	approveAsks, noAudit bool
	claudeHooks          bool
	prompt               []string
	interactive          bool // the TUI: a missing key is reported there, not fatal
}

// flagSpec is one flag: its names, whether it takes a value, and what it
// sets. The table is the single source of parsing and of --help.
type flagSpec struct {
	long, short string
	arg         string // name of the value; "" for switches
	help        string
	set         func(o *options, v string) error
}

var flagTable = []flagSpec{
	{"print", "p", "", "print only the final assistant text (prompt from the words or stdin)", func(o *options, _ string) error { o.print = true; return nil }},
	{"json", "", "", "print one JSON event per line", func(o *options, _ string) error { o.json = true; return nil }},
	{"rpc", "", "", "serve the RPC protocol on stdin/stdout (same as `zot rpc`)", func(o *options, _ string) error { o.rpc = true; return nil }},
	{"provider", "", "NAME", "anthropic, openai or ollama", func(o *options, v string) error { o.provider = v; return nil }},
	{"model", "m", "ID", "model id (see --list-models)", func(o *options, v string) error { o.model = v; return nil }},
	{"base-url", "", "URL", "provider base URL (an OpenAI-compatible server: llama.cpp, vLLM…)", func(o *options, v string) error { o.baseURL = v; return nil }},
	{"api-key", "", "KEY", "API key (else ANTHROPIC_API_KEY / OPENAI_API_KEY, else $ZOT_HOME/auth.json)", func(o *options, v string) error { o.apiKey = v; return nil }},
	{"response-timeout", "", "DURATION", "how long the server may take to start answering a request (default 5m; e.g. 15m for a local server that loads a big model)", func(o *options, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("--response-timeout needs a positive duration such as 90s or 15m, not %q", v)
		}
		o.responseTimeout = d
		return nil
	}},
	{"list-models", "", "", "list known models and exit", func(o *options, _ string) error { o.listModels = true; return nil }},
	{"reasoning", "", "LEVEL", "thinking effort: low, medium or high", func(o *options, v string) error {
		switch v {
		case "low", "medium", "high":
			o.reasoning = v
			return nil
		}
		return fmt.Errorf("--reasoning must be low, medium or high, not %q", v)
	}},
	{"cwd", "", "DIR", "working directory for the tools (default: the current one)", func(o *options, v string) error { o.cwd = v; return nil }},
	{"tools", "", "LIST", "comma-separated tools to enable (globs allowed, e.g. read,bash,mcp__fs__*)", func(o *options, v string) error { o.tools = v; return nil }},
	{"no-tools", "", "", "give the model no tools", func(o *options, _ string) error { o.noTools = true; return nil }},
	{"jail", "", "", "confine read/write/edit to paths inside the working directory", func(o *options, _ string) error { o.jail = true; return nil }},
	{"system-prompt", "", "TEXT", "replace the system prompt", func(o *options, v string) error { o.systemPrompt = v; return nil }},
	{"append-system-prompt", "", "TEXT", "append to the system prompt (repeatable)", func(o *options, v string) error { o.appendSystem = append(o.appendSystem, v); return nil }},
	{"max-steps", "", "N", "most model turns per prompt (default 100)", func(o *options, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("--max-steps needs a positive number, not %q", v)
		}
		o.maxSteps = n
		return nil
	}},
	{"continue", "c", "", "continue the newest session of this directory", func(o *options, _ string) error { o.continueLast = true; return nil }},
	{"resume", "r", "", "pick a session of this directory to resume", func(o *options, _ string) error { o.resume = true; return nil }},
	{"session", "", "PATH", "use this session file", func(o *options, v string) error { o.sessionPath = v; return nil }},
	{"no-session", "", "", "do not save this conversation", func(o *options, _ string) error { o.noSession = true; return nil }},
	{"no-skills", "", "", "load no skills (see zot skills list)", func(o *options, _ string) error { o.noSkills = true; return nil }},
	{"mcp-config", "", "FILE", "load MCP servers from this file too (repeatable)", func(o *options, v string) error { o.mcpConfigs = append(o.mcpConfigs, v); return nil }},
	{"no-mcp", "", "", "ignore ./.mcp.json, ./.zot/mcp.json and $ZOT_HOME/mcp.json", func(o *options, _ string) error { o.noMCP = true; return nil }},
	{"ext", "e", "PATH", "load the extension in this directory (repeatable)", func(o *options, v string) error { o.ext = append(o.ext, v); return nil }},
	{"no-ext", "", "", "do not load installed extensions (--ext still loads)", func(o *options, _ string) error { o.noExt = true; return nil }},
	{"no-yolo", "", "", "ask before each tool call (interactive mode)", func(o *options, _ string) error { o.noYolo = true; return nil }},
	{"approve-asks", "", "", "without a terminal (-p, --json, rpc), run commands a validator asks about instead of refusing them", func(o *options, _ string) error { o.approveAsks = true; return nil }},
	{"no-audit", "", "", "do not record tool calls in $ZOT_HOME/logs/audit.jsonl", func(o *options, _ string) error { o.noAudit = true; return nil }},
	{"claude-hooks", "", "", "run the hook commands of .claude/settings.json and the like (docs/hooks.md)", func(o *options, _ string) error { o.claudeHooks = true; return nil }},
	{"help", "h", "", "show this help", func(o *options, _ string) error { o.help = true; return nil }},
	{"version", "", "", "print the version", func(o *options, _ string) error { o.version = true; return nil }},
}

// parseFlags reads flags anywhere among the prompt words: `--flag value`,
// `--flag=value`, `-x value`; `--` ends the flags.
func parseFlags(args []string) (options, error) {
	var o options
	byName := map[string]*flagSpec{}
	for i := range flagTable {
		f := &flagTable[i]
		byName["--"+f.long] = f
		if f.short != "" {
			byName["-"+f.short] = f
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			o.prompt = append(o.prompt, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			o.prompt = append(o.prompt, a)
			continue
		}
		name, value, hasValue := strings.Cut(a, "=")
		f := byName[name]
		if f == nil {
			return o, usageError{fmt.Sprintf("unknown flag %s (see zot --help)", name)}
		}
		if f.arg == "" {
			if hasValue {
				return o, usageError{fmt.Sprintf("%s takes no value", name)}
			}
		} else if !hasValue {
			if i+1 >= len(args) {
				return o, usageError{fmt.Sprintf("%s needs a value (%s)", name, f.arg)}
			}
			i++
			value = args[i]
		}
		if err := f.set(&o, value); err != nil {
			return o, usageError{err.Error()}
		}
	}
	return o, nil
}

func helpText() string {
	var b strings.Builder
	b.WriteString(`zot — a coding agent in one binary

Usage:
  zot [flags] [prompt words…]            interactive terminal UI
  zot -p|--print [flags] [prompt words…]  print the final answer (prompt from the words or stdin)
  zot --json [flags] [prompt words…]     print one JSON event per line
  zot rpc [flags]                        the embedding protocol on stdin/stdout
  zot skills list|show NAME              the skills a session sees (zot skills --help)
  zot mcp list|tools|call …              inspect and debug MCP servers (zot mcp --help)
  zot ext <command> …                    manage extensions (zot ext help)
  zot validate -- COMMAND LINE           ask the command validators without running it

Flags:
`)
	for _, f := range flagTable {
		names := "--" + f.long
		if f.short != "" {
			names = "-" + f.short + ", " + names
		}
		if f.arg != "" {
			names += " " + f.arg
		}
		fmt.Fprintf(&b, "  %-30s %s\n", names, f.help)
	}
	b.WriteString(`
Environment:
  ANTHROPIC_API_KEY, OPENAI_API_KEY   provider keys
  ZOT_HOME                            state directory (default ` + defaultHomeHint() + `)

Exit status: 0 success, 1 model or loop error, 2 usage error, 130 interrupted.
`)
	return b.String()
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

// setup is everything a mode needs, built from the options.
type setup struct {
	opts     options
	home     string
	cwd      string
	provider string
	model    string
	baseURL  string
	// startProvider is the provider chosen at startup: --api-key and
	// --base-url belong to it.
	startProvider string
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
}

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
	s.baseURL, s.startProvider = baseURL, s.provider
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
	a.System = BuildSystemPrompt(SystemPromptOptions{Cwd: s.cwd, Home: s.home, Override: o.systemPrompt, Append: o.appendSystem, Tools: toolNames, Extra: s.skillsPrompt(reg)})
	a.Log = func(format string, args ...any) {
		fmt.Fprintf(stderr, "zot: %s\n", sanitize(fmt.Sprintf(format, args...)))
	}
	s.agent = a
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

func (s *setup) close() {
	if s.session != nil {
		s.session.Close()
	}
	if s.toolEnv != nil {
		s.toolEnv.Close()
	}
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
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

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// A subcommand is recognised only as the first argument, so prompt
	// words such as "fix the rpc tests" stay a prompt.
	if len(args) > 0 {
		switch args[0] {
		case "ext":
			return runExtCommand(args[1:], stdin, stdout, stderr)
		case "mcp":
			return runMCPCommand(args[1:], stdout, stderr)
		case "skills":
			return runSkillsCommand(args[1:], stdout, stderr)
		case "rpc":
			args = append([]string{"--rpc"}, args[1:]...)
		}
	}
	if len(args) > 0 && args[0] == "validate" {
		return runValidateCommand(args[1:], stdin, stdout, stderr)
	}
	o, err := parseFlags(args)
	if err != nil {
		fmt.Fprintf(stderr, "zot: %s\n", sanitize(err.Error()))
		return exitUsage
	}
	switch {
	case o.help:
		fmt.Fprint(stdout, helpText())
		return exitOK
	case o.version:
		fmt.Fprintf(stdout, "zot %s\n", version)
		return exitOK
	case o.listModels:
		return listModels(o, stdout)
	}
	if o.rpc {
		return runRPC(o, stdin, stdout, stderr, wireRPC)
	}
	if o.print && o.json {
		fmt.Fprintln(stderr, "zot: choose one of -p/--print and --json")
		return exitUsage
	}
	if !o.print && !o.json {
		return runTUI(o, stdin, stdout, stderr, wireTUI)
	}
	if o.noYolo {
		fmt.Fprintln(stderr, "zot: --no-yolo asks before each tool call, which needs the interactive UI; it cannot be used with -p or --json")
		return exitUsage
	}
	return runOnce(o, stdin, stdout, stderr)
}

func listModels(o options, stdout io.Writer) int {
	providers := []string{"anthropic", "openai"}
	if o.provider != "" {
		providers = []string{o.provider}
	}
	for _, p := range providers {
		models := modelsFor(p)
		sort.SliceStable(models, func(i, j int) bool { return models[i].ID < models[j].ID })
		for _, m := range models {
			fmt.Fprintf(stdout, "%-10s %-26s ctx %7d  out %6d  $%g/$%g per Mtok in/out\n", p, m.ID, m.ContextWindow, m.MaxOutput, m.Input, m.Output)
		}
	}
	return exitOK
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

// runOnce is -p and --json: one prompt, then exit.
func runOnce(o options, stdin io.Reader, stdout, stderr io.Writer) int {
	text, err := promptText(o, stdin)
	if err != nil {
		return fail(stderr, err)
	}
	s, err := newSetup(o, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	defer s.close()
	if err := s.openSession(true, pickSessionFromTTY(stderr)); err != nil {
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
			if e.Type == "assistant_message" {
				final = Message{Content: e.Content}.Text()
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

// startPlugins starts what runs beside the agent — MCP servers, extensions
// and hook commands — and puts their tool gates first in s.gates: extension
// interceptors, then hooks (validators follow, from guardTools). Each mode
// passes where notes and failures go; stop shuts everything down.
func (s *setup) startPlugins(ctx context.Context, extHooks ExtConfig, mcpStatus func(server, level, msg string), hookNote func(level, msg string)) (exts *ExtManager, stop func()) {
	mcp := s.startMCP(ctx, mcpStatus)
	exts = s.startExtensions(ctx, extHooks)
	hooks := s.startHooks(ctx, hookNote)
	s.gates = append([]ToolGate{exts.ToolGate, hooks.ToolGate}, s.gates...)
	return exts, func() {
		hooks.SessionEnd(context.Background())
		exts.Shutdown(context.Background())
		mcp.Shutdown(context.Background())
	}
}

// wireRPC plugs MCP servers and extensions into an RPC server: their notes
// and failures become ext_notify events.
func wireRPC(ctx context.Context, s *setup, srv *rpcServer) (stop func(), err error) {
	// The extension host's own problems (a bad manifest, a missing hello, a
	// crash) reach the client as ext_notify from "extensions", beside stderr.
	hostLog := func(format string, args ...any) {
		s.agent.Log(format, args...)
		srv.Notify(ExtNote{Extension: "extensions", Level: "warn", Message: fmt.Sprintf(format, args...)})
	}
	exts, stop := s.startPlugins(ctx, ExtConfig{OnNote: srv.Notify, Log: hostLog}, func(server, level, msg string) {
		srv.Notify(ExtNote{Extension: "mcp:" + server, Level: extLevel(level), Message: msg})
	}, func(level, msg string) {
		srv.Notify(ExtNote{Extension: "hooks", Level: level, Message: msg})
	})
	s.guardTools()
	s.agent.BeforeToolExecute = ChainGates(s.gates, NonInteractiveConfirm(s.opts.approveAsks))
	srv.ReloadExtensions = func(ctx context.Context) (ReloadStats, error) { return exts.Reload(ctx), nil }
	srv.Observe = exts.Observe
	return stop, nil
}

// wireTUI plugs MCP servers, extensions and skills into the TUI. MCP
// servers report only trouble there: a ready server is not news.
func wireTUI(s *setup, t *TUI) (stop func()) {
	exts, stop := s.startPlugins(context.Background(), ExtConfig{OnNote: t.Note, OnPanel: t.Panel, Log: t.Logf, ReservedCommands: tuiCommandNames()}, func(server, level, msg string) {
		if level != "info" {
			t.Note(ExtNote{Extension: "mcp:" + server, Level: extLevel(level), Message: msg})
		}
	}, func(level, msg string) {
		t.Note(ExtNote{Extension: "hooks", Level: level, Message: msg})
	})
	s.guardTools()
	t.Ext, t.Observe = exts, exts.Observe
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

// extLevel maps an MCP log level onto the note levels extensions use.
func extLevel(level string) string {
	if level == "warning" {
		return "warn"
	}
	return level
}

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
func pickSessionFromTTY(stderr io.Writer) func([]SessionInfo) (int, error) {
	return func(list []SessionInfo) (int, error) {
		tty, err := os.Open("/dev/tty")
		if err != nil {
			return 0, errors.New("--resume needs a terminal to choose from; use --session PATH or --continue")
		}
		defer tty.Close()
		fmt.Fprint(stderr, FormatSessionList(list, time.Now()))
		fmt.Fprintf(stderr, "resume which session? [1-%d] ", len(list))
		var n int
		if _, err := fmt.Fscanln(tty, &n); err != nil || n < 1 || n > len(list) {
			return 0, errors.New("no session chosen")
		}
		return n - 1, nil
	}
}
