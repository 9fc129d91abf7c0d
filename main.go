package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// zot's entry: main, and before anything else what must run first (the
// sandbox launcher, the non-dumpable process, the adoption of orphans);
// the flags and their help; the table of subcommands and the dispatch to
// them or to a mode (runZot, runMode), whose setup is wire*.go's.

func main() {
	// zot started as its own sandbox launcher, or as the self-test program
	// inside a sandbox: nothing of zot's start-up runs there.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case sandboxLauncherArg:
			os.Exit(runSandboxLauncher(os.Args[2:]))
		case sandboxSelfTestArg:
			os.Exit(sandboxSelfTestMain(os.Args[2:]))
		}
	}
	// First of all: see forbidDumps for what it covers and what not.
	if err := forbidDumps(); err != nil {
		fmt.Fprintf(os.Stderr, "zot: warning: could not make the process non-dumpable (%v): other processes of your user can read its environment\n", err)
	}
	growMainStack(0)
	release := adoptOrphans(killGrace)
	code := runZot(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	release() // what the processes zot started left running stops with zot
	// What a subcommand without a ToolEnv kept (ToolEnv.Close removes it too).
	removeSpareCgroup()
	os.Exit(code)
}

// growMainStack grows the main goroutine's stack once, while it holds
// three frames, to the size a mode's setup reaches. Left to grow on
// demand it doubles three times, deep in setup, and each time the runtime
// walks every frame through its function tables: the pages of those tables
// it reads stay mapped, about half a MiB of `zot -p`'s peak (bench/rss.sh).
//
//go:noinline
func growMainStack(i int) byte {
	var frame [16 << 10]byte
	frame[i] = 1
	return frame[i^1]
}

// zotOptions are the parsed command line.
type zotOptions struct {
	print, json, rpc     bool
	help, version        bool
	listModels           bool
	provider, model      string
	baseURL, apiKey      string
	responseTimeout      time.Duration
	cwd                  string
	tools                string
	noTools, jail        bool
	sandbox              string // a mode; "" leaves it to config.json
	systemPrompt         string
	appendSystem         []string
	reasoning            string
	maxSteps             int
	continueLast, resume bool
	resumeName           string // -r NAME: the session of that name or id
	sessionPath          string
	noSession            bool
	noSkills             bool
	noPrompts            bool
	mcpConfigs           []string
	noMCP                bool
	mcpWait              *time.Duration // nil: config.json's, else defaultMCPWait
	ext                  []string
	noExt                bool
	noYolo               bool
	mode                 Mode // --mode; "" leaves it to the settings (wire_modes.go)
	modeDefault          Mode // what nobody choosing a mode gives: auto, ask in zot acp
	approveAsks, noAudit bool
	approvalsStdin       bool          // --json: approve commands on stdin answer the asks
	elicitationStdin     bool          // --json: elicit commands on stdin answer the MCP servers' questions
	approvalTimeout      time.Duration // 0: defaultApprovalTimeout
	claudeHooks          bool
	trustProject         bool
	prompt               []string
	interactive          bool // the TUI: a missing key is reported there, not fatal
}

// flagSpec is one flag: its names, whether it takes a value, and what it
// sets. The table is the single source of parsing and of --help.
type flagSpec struct {
	long, short string
	arg         string // name of the value; "" for switches; "[NAME]" when it may be left out
	help        string
	set         func(o *zotOptions, v string) error
}

var flagTable = []flagSpec{
	{"print", "p", "", "print only the final assistant text (prompt from the words or stdin)", func(o *zotOptions, _ string) error { o.print = true; return nil }},
	{"json", "", "", "print one JSON event per line", func(o *zotOptions, _ string) error { o.json = true; return nil }},
	{"rpc", "", "", "serve the RPC protocol on stdin/stdout (same as `zot rpc`)", func(o *zotOptions, _ string) error { o.rpc = true; return nil }},
	{"provider", "", "NAME", "anthropic, openai or ollama", func(o *zotOptions, v string) error { o.provider = v; return nil }},
	{"model", "m", "ID", "model id (see --list-models)", func(o *zotOptions, v string) error { o.model = v; return nil }},
	{"base-url", "", "URL", "provider base URL (an OpenAI-compatible server: llama.cpp, vLLM…)", func(o *zotOptions, v string) error {
		if err := checkBaseURL(v); err != nil {
			return fmt.Errorf("--base-url %w", err)
		}
		o.baseURL = v
		return nil
	}},
	{"api-key", "", "KEY", "API key (else ANTHROPIC_API_KEY / OPENAI_API_KEY, else $ZOT_HOME/auth.json)", func(o *zotOptions, v string) error { o.apiKey = v; return nil }},
	{"response-timeout", "", "DURATION", "how long the server may take to start answering a request (default 5m; e.g. 15m for a local server that loads a big model)", func(o *zotOptions, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("--response-timeout needs a positive duration such as 90s or 15m, not %q", v)
		}
		o.responseTimeout = d
		return nil
	}},
	{"list-models", "", "", "list known models and exit", func(o *zotOptions, _ string) error { o.listModels = true; return nil }},
	{"reasoning", "", "LEVEL", "thinking effort: off, low, medium, high, xhigh or max (docs/usage.md#thinking)", func(o *zotOptions, v string) error {
		if v == ReasoningOff || slices.Contains(reasoningLevels, v) {
			o.reasoning = v
			return nil
		}
		return fmt.Errorf("--reasoning must be off, low, medium, high, xhigh or max, not %q", v)
	}},
	{"cwd", "", "DIR", "working directory for the tools (default: the current one)", func(o *zotOptions, v string) error { o.cwd = v; return nil }},
	{"tools", "", "LIST", "comma-separated tools to enable (globs allowed, e.g. read,bash,mcp__fs__*)", func(o *zotOptions, v string) error { o.tools = v; return nil }},
	{"no-tools", "", "", "give the model no tools", func(o *zotOptions, _ string) error { o.noTools = true; return nil }},
	{"jail", "", "", "confine read/write/edit to paths inside the working directory", func(o *zotOptions, _ string) error { o.jail = true; return nil }},
	{"sandbox", "", "MODE", "run commands in a kernel sandbox: off, workspace, workspace-offline or read-only (docs/sandbox.md)", func(o *zotOptions, v string) error {
		m, err := parseSandboxMode(v)
		o.sandbox = string(m)
		return err
	}},
	{"system-prompt", "", "TEXT", "replace the system prompt", func(o *zotOptions, v string) error { o.systemPrompt = v; return nil }},
	{"append-system-prompt", "", "TEXT", "append to the system prompt (repeatable)", func(o *zotOptions, v string) error { o.appendSystem = append(o.appendSystem, v); return nil }},
	{"max-steps", "", "N", "most model turns per prompt (default 100)", func(o *zotOptions, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("--max-steps needs a positive number, not %q", v)
		}
		o.maxSteps = n
		return nil
	}},
	{"continue", "c", "", "continue the newest session of this directory", func(o *zotOptions, _ string) error { o.continueLast = true; return nil }},
	{"resume", "r", "[NAME]", "resume the session of this directory named NAME (by /rename, or its id); without NAME, pick one", func(o *zotOptions, v string) error {
		o.resume, o.resumeName = true, v
		if v != "" {
			return checkSessionName(v)
		}
		return nil
	}},
	{"session", "", "PATH", "use this session file", func(o *zotOptions, v string) error { o.sessionPath = v; return nil }},
	{"no-session", "", "", "do not save this conversation", func(o *zotOptions, _ string) error { o.noSession = true; return nil }},
	{"no-skills", "", "", "load no skills (see zot skills list)", func(o *zotOptions, _ string) error { o.noSkills = true; return nil }},
	{"no-prompts", "", "", "load no prompt templates (see zot prompts list)", func(o *zotOptions, _ string) error { o.noPrompts = true; return nil }},
	{"mcp-config", "", "FILE", "load MCP servers from this file too (repeatable)", func(o *zotOptions, v string) error { o.mcpConfigs = append(o.mcpConfigs, v); return nil }},
	{"mcp-wait", "", "DURATION", "how long -p, --json, rpc and a prompt given on the command line wait for MCP servers still starting before the first model request (default 5s; 0 does not wait)", func(o *zotOptions, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("--mcp-wait needs a duration such as 5s, 30s or 0, not %q", v)
		}
		o.mcpWait = &d
		return nil
	}},
	{"no-mcp", "", "", "ignore ./.mcp.json, ./.zot/mcp.json and $ZOT_HOME/mcp.json", func(o *zotOptions, _ string) error { o.noMCP = true; return nil }},
	{"ext", "e", "PATH", "load the extension in this directory (repeatable)", func(o *zotOptions, v string) error { o.ext = append(o.ext, v); return nil }},
	{"no-ext", "", "", "do not load installed extensions (--ext still loads)", func(o *zotOptions, _ string) error { o.noExt = true; return nil }},
	{"mode", "", "NAME", "ask, accept-edits, plan, auto (the default), sandboxed-auto or dont-ask: what runs without asking (docs/permissions.md#modes)", func(o *zotOptions, v string) error {
		m, err := ParseMode(v)
		o.mode = m
		return err
	}},
	{"no-yolo", "", "", "ask before each tool call (interactive mode)", func(o *zotOptions, _ string) error { o.noYolo = true; return nil }},
	{"approve-asks", "", "", "without a terminal (-p, --json, rpc), run commands a validator asks about instead of refusing them", func(o *zotOptions, _ string) error { o.approveAsks = true; return nil }},
	{"approvals-stdin", "", "", "with --json: send approval_request events and read approve commands on stdin (the prompt then comes from the words; docs/permissions.md)", func(o *zotOptions, _ string) error { o.approvalsStdin = true; return nil }},
	{"elicitation-stdin", "", "", "with --json: send the MCP servers' questions as elicitation_request events and read elicit commands on stdin (docs/mcp.md)", func(o *zotOptions, _ string) error { o.elicitationStdin = true; return nil }},
	{"approval-timeout", "", "DURATION", "how long --json --approvals-stdin and rpc clients with approvals may take to answer before the call is refused, and the time an MCP server's question waits for a client (default 5m)", func(o *zotOptions, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("--approval-timeout needs a positive duration such as 30s or 10m, not %q", v)
		}
		o.approvalTimeout = d
		return nil
	}},
	{"no-audit", "", "", "do not record tool calls in $ZOT_HOME/logs/audit.jsonl", func(o *zotOptions, _ string) error { o.noAudit = true; return nil }},
	{"claude-hooks", "", "", "run the hook commands of .claude/settings.json and the like (docs/hooks.md)", func(o *zotOptions, _ string) error { o.claudeHooks = true; return nil }},
	{"trust-project", "", "", "run this directory's own MCP servers, extensions, validators and hooks for this run only (see zot trust)", func(o *zotOptions, _ string) error { o.trustProject = true; return nil }},
	{"help", "h", "", "show this help", func(o *zotOptions, _ string) error { o.help = true; return nil }},
	{"version", "", "", "print the version", func(o *zotOptions, _ string) error { o.version = true; return nil }},
}

// parseFlags reads flags anywhere among the prompt words: `--flag value`,
// `--flag=value`, `-x value`; `--` ends the flags.
func parseFlags(args []string) (zotOptions, error) {
	var o zotOptions
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
		switch {
		case f.arg == "":
			if hasValue {
				return o, usageError{fmt.Sprintf("%s takes no value", name)}
			}
		case strings.HasPrefix(f.arg, "["):
			// An optional value is the next word unless that is a flag, as
			// with Claude Code's -r: `zot -r NAME prompt…`.
			if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				value = args[i]
			}
		case !hasValue:
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
  zot rpc [flags]                        the embedding protocol on stdin/stdout (zot rpc --help)
  zot acp [flags]                        zot for editors: the Agent Client Protocol on stdin/stdout (docs/acp.md)
  zot skills list|show NAME              the skills a session sees (zot skills --help)
  zot prompts list|show NAME             the prompt templates a session sees (zot prompts --help)
  zot plugin install|list|remove|enable|disable …   Claude Code plugins (zot plugin --help)
  zot sessions list|export|import …      sessions for scripts: list, export, import (zot sessions --help)
  zot checkpoints list|restore|prune …   undo what tool calls changed: files and conversation (zot checkpoints --help)
  zot mcp list|tools|call|login|logout … inspect, debug and log in to MCP servers (zot mcp --help)
  zot ext <command> …                    manage extensions (zot ext --help)
  zot validate -- COMMAND LINE           ask the command validators without running it
  zot sandbox check                      what the kernel offers the sandbox, and a self-test
  zot trust [DIR] [--yes]                trust a directory to run its own servers, extensions, hooks (zot trust --help)
  zot help [COMMAND [SUBCOMMAND]]        this text, or a command's (same as --help)
  zot version                            the version (same as --version)

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

// zotCommand is one of zot's commands: its usage and what runs it. A
// command is recognised only as the first argument, so prompt words such
// as "fix the rpc tests" stay a prompt.
type zotCommand struct {
	help *commandHelp
	run  func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands are zot's commands besides the modes; run answers -h/--help
// for each of them (see commandHelp).
var commands = map[string]zotCommand{
	"ext": {&extUsage, func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		return runExtCommand(args, tuiCommandNames(), func(cwd string) bool { return projectTrusted(zotHome(), cwd) }, stdin, stdout, stderr)
	}},
	"mcp": {&mcpUsage, func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return runMCPCommand(args, func(src MCPSources) ([]mcpServerConfig, []mcpProblem) {
			if !src.SkipDefault {
				src.Plugins = pluginMCPFiles(EnabledPlugins(src.Home))
			}
			src.UntrustedProject = !src.SkipDefault && !projectTrusted(src.Home, src.Cwd)
			return loadMCPConfigs(src)
		}, stdout, stderr)
	}},
	"skills": {&skillsUsage, func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return runSkillsCommand(args, pluginSkillRoots(EnabledPlugins(zotHome())), stdout, stderr)
	}},
	"prompts": {&promptsUsage, func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return runPromptsCommand(args, pluginPromptRoots(EnabledPlugins(zotHome())), stdout, stderr)
	}},
	"plugin": {&pluginUsage, runPluginCommand},
	"sandbox": {&sandboxUsage, func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return runSandboxCommand(args, stdout, stderr)
	}},
	"sessions": {&sessionsUsage, func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return runSessionsCommand(args, stdout, stderr)
	}},
	"checkpoints": {&checkpointsUsage, func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return runCheckpointsCommand(args, stdout, stderr)
	}},
	"trust": {&trustUsage, func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		return runTrustCommand(args, func(dir string) ([]trustEntry, []string, []string) {
			return projectPrograms(zotHome(), dir, zotOptions{}, true)
		}, stdin, stdout, stderr)
	}},
	"validate": {&validateUsage, func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		return runValidateCommand(args, loadTrustedGate, stdin, stdout, stderr)
	}},
	"acp": {&acpUsage, runACP},
	"rpc": {&rpcUsage, func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		return runMode(append([]string{"--rpc"}, args...), stdin, stdout, stderr)
	}},
}

var rpcUsage = commandHelp{
	name:  "zot rpc",
	about: "the embedding protocol on stdin/stdout",
	usage: "zot rpc [flags]      (or zot --rpc [flags])",
	notes: `Reads one JSON command a line on stdin ({"type":"prompt","message":…}) and
writes responses and events on stdout (docs/rpc.md, docs/events.md). It takes
the flags of zot (--provider, --model, --tools, --cwd …; see zot --help) but
no prompt words, -p or --json. When ZOTCORE_RPC_TOKEN is set, a client's
hello must carry it.

Exit status: 0 when stdin ends, 1 on a failure, 2 usage error, 130 interrupted.
`,
}

// runZot is zot: a command, help or the version asked for by name, or a mode
// for the options. It returns the exit status.
func runZot(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return runMode(args, stdin, stdout, stderr)
	}
	switch name, rest := args[0], args[1:]; name {
	case "help":
		// `zot help` on a terminal would otherwise be a paid prompt.
		if len(rest) == 0 {
			fmt.Fprint(stdout, helpText())
			return exitOK
		}
		if c, ok := commands[rest[0]]; ok {
			fmt.Fprint(stdout, c.help.text(lastOr(rest[1:], "")))
			return exitOK
		}
		return failExit(stderr, usageError{fmt.Sprintf("help takes a command name (%s); to send a prompt that starts with %q, quote it: zot %q", strings.Join(commandNames(), ", "), "help", strings.Join(args, " "))})
	case "version":
		if len(rest) > 0 {
			return failExit(stderr, usageError{fmt.Sprintf("version takes no arguments; to send a prompt that starts with %q, quote it: zot %q", "version", strings.Join(args, " "))})
		}
		fmt.Fprintf(stdout, "zot %s\n", version)
		return exitOK
	}
	if c, ok := commands[args[0]]; ok {
		if c.help.answerHelp(args[1:], stdout) {
			return exitOK
		}
		return c.run(args[1:], stdin, stdout, stderr)
	}
	return runMode(args, stdin, stdout, stderr)
}

// commandNames are the names of zot's commands, sorted.
func commandNames() []string {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// runMode is zot without a command: the TUI, -p, --json or rpc.
func runMode(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseFlags(args)
	if err != nil {
		fmt.Fprintf(stderr, "zot: %s\n", sanitize(err.Error()))
		return exitUsage
	}
	switch {
	case o.help && o.rpc:
		fmt.Fprint(stdout, rpcUsage.text(""))
		return exitOK
	case o.help:
		fmt.Fprint(stdout, helpText())
		return exitOK
	case o.version:
		fmt.Fprintf(stdout, "zot %s\n", version)
		return exitOK
	case o.listModels:
		return listModels(o, stdout, stderr)
	}
	if o.rpc {
		return runRPC(o, stdin, stdout, stderr)
	}
	if o.print && o.json {
		fmt.Fprintln(stderr, "zot: choose one of -p/--print and --json")
		return exitUsage
	}
	if !o.print && !o.json {
		return runTUI(o, stdin, stdout, stderr)
	}
	if o.noYolo {
		fmt.Fprintln(stderr, "zot: --no-yolo asks before each tool call, which needs the interactive UI; it cannot be used with -p or --json")
		return exitUsage
	}
	return runOnce(o, stdin, stdout, stderr)
}

// listModelsTimeout bounds --list-models' wait for the server's list.
const listModelsTimeout = 10 * time.Second

// listModels prints the models of the provider in use (--provider) or of
// every provider: the catalogue, the user's models.json and what the
// configured server serves (models_server.go).
func listModels(o zotOptions, stdout, stderr io.Writer) int {
	home := zotHome()
	for _, n := range useUserModels(home) {
		fmt.Fprintf(stderr, "zot: %s\n", sanitize(n))
	}
	cfg, _ := loadConfig(home)
	ep, err := chooseEndpoint(o, cfg, home)
	if err != nil {
		return failExit(stderr, err)
	}
	// The user asked for the list: a stale one is fetched now, within a
	// bound, and a server that does not answer leaves the rest listed.
	pc, err := endpointConfig(home, ProviderConfig{Name: ep.provider, BaseURL: ep.baseURL, APIKey: ep.key, KeySource: ep.keySource}, ep.model)
	if err != nil {
		return failExit(stderr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), listModelsTimeout)
	defer cancel()
	if srv, ok := serverFor(ep.provider, ep.baseURL, pc.APIKey); ok && !useCachedServerModels(home, srv, time.Now()) {
		srv.headers = pc.Local.Headers
		if err := fetchServerModels(ctx, home, srv, time.Now()); err != nil {
			fmt.Fprintf(stderr, "zot: %s\n", sanitize(err.Error()))
		}
	}
	// The model --model names is listed with the context its server
	// gives it (a router's loaded model says only in /props?model=); a
	// plain listing asks the server for its list alone.
	if prov, err := NewProvider(pc); err == nil && o.model != "" {
		if p, ok := prov.(windowProber); ok {
			p.ProbeWindow(ctx, ep.model)
		}
	}
	providers := modelProviders
	if o.provider != "" {
		providers = []string{o.provider}
	}
	for _, p := range providers {
		models := modelsFor(p)
		sort.SliceStable(models, func(i, j int) bool { return models[i].ID < models[j].ID })
		for _, m := range models {
			fmt.Fprintf(stdout, "%-10s %-26s ctx %7d  out %6d  $%g/$%g per Mtok in/out  source: %s\n",
				p, sanitize(m.ID), m.ContextWindow, m.MaxOutput, m.Input, m.Output, modelSource(m))
		}
	}
	return exitOK
}
