package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Claude Code–compatible hooks (docs/hooks.md): shell commands and http
// endpoints that teams wrote for Claude Code's settings files run
// unmodified at every event zot has the moment for (hookEventNames), with
// Claude Code's JSON on stdin (or as the POST body), its exit codes and
// its JSON output. They are off unless the user turns them on: a settings
// file in a repository must not run commands on its own.

const (
	hookDefaultTimeout = 60 * time.Second
	hookOutputLimit    = 1 << 20                // bytes kept of a hook's stdout and of its stderr
	hookDrain          = 500 * time.Millisecond // reading what a hook left in its pipes after it exited
	hookSettingsLimit  = 4 << 20
	hookReasonLimit    = 16 << 10 // bytes of a hook's stderr the model or user sees as a reason
)

// hookEventNames are the events zot fires. Others in a settings file
// (SubagentStop, SessionTitle…) are reported once and ignored.
var hookEventNames = map[string]bool{
	"PreToolUse": true, "PostToolUse": true, "PostToolUseFailure": true,
	"PermissionRequest": true, "Notification": true, "UserPromptSubmit": true,
	"Stop": true, "PreCompact": true, "SessionStart": true, "SessionEnd": true,
}

// hookFailsClosed are the events where an http hook that does not answer
// (a connection refused, a timeout, a status other than 2xx, a body that is
// not hook output) blocks what it was asked about: a policy server that is
// down must not let everything through. Claude Code lets such failures
// pass; a command hook that fails still does in zot too.
var hookFailsClosed = map[string]bool{"PreToolUse": true, "PermissionRequest": true, "UserPromptSubmit": true}

// HookConfig is what the hooks need from their host.
type HookConfig struct {
	// Files are the settings files to read, in the order their commands
	// run, as hookSettingsFiles lists them.
	Files []string
	// Plugins are installed plugins' hooks/hooks.json files, whose
	// commands run after those of Files. A settings file's
	// "disableAllHooks" does not turn them off: they are the user's
	// choice, not the project's.
	Plugins []HookPluginFile
	// Cwd is the session's working directory: the hooks' working
	// directory and CLAUDE_PROJECT_DIR.
	Cwd string
	// SessionID and TranscriptPath (the session file, "" without one) go
	// to every hook as session_id and transcript_path.
	SessionID, TranscriptPath string
	Model                     string
	// Source is how the session started, for SessionStart: "startup" or
	// "resume".
	Source string
	// Modes is the session's mode, told to every hook as Claude Code's
	// permission_mode; nil reads as "default".
	Modes *Modes
	// OnNote shows the user one line (level info, warn or error): a
	// hook's systemMessage, a hook that failed, a problem with a settings
	// file. The text is already safe for a terminal. It is called from
	// the goroutine that fired the event.
	OnNote func(level, msg string)
	// Verify, when set, is asked before each command of a settings file
	// runs, with the file: an error (the file, or a script its commands
	// run, changed since it was trusted) refuses the command — a
	// PreToolUse hook so refused blocks the tool call.
	Verify func(file string) error
}

// Hooks runs the hook commands of one session. The zero value (and a Hooks
// whose settings hold no command) does nothing. Its methods are safe for
// concurrent use.
type Hooks struct {
	cfg    HookConfig
	events map[string][]hookGroup
	client *http.Client // for http hooks

	mu         sync.Mutex          // guards the fields below
	context    map[string][]string // PreToolUse additionalContext, by tool call id
	stopActive bool                // the agent goes on because a Stop hook said so
	halt       *string             // a hook said "continue": false; the next turn is refused
}

// hookGroup is one matcher and its commands.
type hookGroup struct {
	matcher  string
	match    func(subject string) bool
	handlers []hookHandler
}

// HookPluginFile is a plugin's hooks.json. ${CLAUDE_PLUGIN_ROOT} in its
// commands is Root, and so is the variable in their environment; Origin
// ("plugin:NAME") names the plugin in notes and the audit trail.
type HookPluginFile struct {
	Path, Root, Origin string
}

// hookHandler is one command or http hook of a settings file.
type hookHandler struct {
	Command string // "" for an http hook
	URL     string // an http hook's; "" for a command
	Headers map[string]string
	// AllowedEnv are the variables an http hook's headers may name as
	// $VAR or ${VAR}; others become "".
	AllowedEnv []string
	Timeout    time.Duration
	env        []string // added to the command's environment
	origin     string   // the plugin it comes from, "" for a settings file
	file       string   // the settings file it comes from, "" for a plugin's
}

// hookSettingsFiles are the files hooks come from, in the order their
// commands run: Claude Code's project, local and user settings, then zot's
// project settings. userHome holds ~/.claude; "" leaves that file out.
func hookSettingsFiles(cwd, userHome string) []string {
	files := []string{
		filepath.Join(cwd, ".claude", "settings.json"),
		filepath.Join(cwd, ".claude", "settings.local.json"),
	}
	if userHome != "" {
		files = append(files, filepath.Join(userHome, ".claude", "settings.json"))
	}
	files = append(files, filepath.Join(cwd, ".zot", "settings.json"))
	var out []string
	seen := map[string]bool{}
	for _, f := range files {
		if f = filepath.Clean(f); !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// NewHooks reads the settings files. Problems (a file that is not JSON, an
// entry of the wrong shape, an invalid matcher) go to cfg.OnNote naming the
// file and the entry; the rest still loads.
func NewHooks(cfg HookConfig) *Hooks {
	h := &Hooks{cfg: cfg, events: map[string][]hookGroup{}, context: map[string][]string{}, client: hookHTTPClient()}
	disabled := ""
	for _, path := range cfg.Files {
		groups, off := readHookSettings(path, h.note)
		if off && disabled == "" {
			disabled = path
		}
		for _, ev := range sortedKeys(groups) {
			for _, g := range groups[ev] {
				for i := range g.handlers {
					g.handlers[i].file = path
				}
			}
			h.events[ev] = append(h.events[ev], groups[ev]...)
		}
	}
	if disabled != "" {
		h.events = map[string][]hookGroup{}
		h.note("warn", fmt.Sprintf("hooks: %s sets \"disableAllHooks\": true; no hook of a settings file runs", disabled))
	}
	for _, p := range cfg.Plugins {
		groups, _ := readHookSettings(p.Path, h.note)
		for _, ev := range sortedKeys(groups) {
			for _, g := range groups[ev] {
				for i := range g.handlers {
					hd := &g.handlers[i]
					hd.Command = strings.ReplaceAll(hd.Command, "${CLAUDE_PLUGIN_ROOT}", p.Root)
					hd.env, hd.origin = []string{"CLAUDE_PLUGIN_ROOT=" + p.Root}, p.Origin
				}
				h.events[ev] = append(h.events[ev], g)
			}
		}
	}
	return h
}

// readHookSettings reads the hooks key of one settings file; report gets
// its problems. A missing file is no problem.
func readHookSettings(path string, report func(level, msg string)) (events map[string][]hookGroup, disableAll bool) {
	warn := func(format string, args ...any) { report("warn", "hooks: "+fmt.Sprintf(format, args...)) }
	b, err := readUntrustedFile(path, hookSettingsLimit)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		warn("%v; its hooks are skipped", err)
		return nil, false
	}
	var file struct {
		Hooks      map[string]json.RawMessage `json:"hooks"`
		DisableAll bool                       `json:"disableAllHooks"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		warn("%s: not a settings object with a \"hooks\" object: %v; its hooks are skipped", path, err)
		return nil, false
	}
	events = map[string][]hookGroup{}
	for _, ev := range sortedKeys(file.Hooks) {
		if !hookEventNames[ev] {
			report("info", fmt.Sprintf("hooks: %s: zot has no %s event; those hooks do not run", path, ev))
			continue
		}
		var groups []json.RawMessage
		if err := json.Unmarshal(file.Hooks[ev], &groups); err != nil {
			warn("%s: hooks.%s must be a list of {\"matcher\", \"hooks\"}; skipped", path, ev)
			continue
		}
		for i, raw := range groups {
			g, probs := parseHookGroup(raw, fmt.Sprintf("%s: hooks.%s[%d]", path, ev, i))
			for _, p := range probs {
				warn("%s", p)
			}
			if len(g.handlers) > 0 {
				events[ev] = append(events[ev], g)
			}
		}
	}
	return events, file.DisableAll
}

func parseHookGroup(raw json.RawMessage, where string) (hookGroup, []string) {
	var g hookGroup
	var problems []string
	var group struct {
		Matcher *string           `json:"matcher"`
		Hooks   []json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(raw, &group); err != nil {
		return g, []string{where + ": want {\"matcher\": \"…\", \"hooks\": [{\"type\": \"command\", \"command\": \"…\"}]}; skipped"}
	}
	if group.Matcher != nil {
		g.matcher = *group.Matcher
	}
	var err error
	if g.match, err = compileHookMatcher(g.matcher); err != nil {
		problems = append(problems, fmt.Sprintf("%s: matcher %q is not a regular expression zot understands (%v); it matches only that exact name", where, g.matcher, err))
	}
	for j, hraw := range group.Hooks {
		var hd struct {
			Type           string            `json:"type"`
			Command        string            `json:"command"`
			URL            string            `json:"url"`
			Headers        map[string]string `json:"headers"`
			AllowedEnvVars []string          `json:"allowedEnvVars"`
			Timeout        *float64          `json:"timeout"`
		}
		at := fmt.Sprintf("%s.hooks[%d]", where, j)
		if err := json.Unmarshal(hraw, &hd); err != nil {
			problems = append(problems, at+": want {\"type\": \"command\", \"command\": \"…\", \"timeout\": seconds}; skipped")
			continue
		}
		switch {
		case hd.Type == "http":
			if u, err := url.Parse(hd.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				problems = append(problems, fmt.Sprintf("%s: url %q is not an http or https URL; skipped", at, hd.URL))
				continue
			}
			hd.Command = ""
		case hd.Type != "command":
			problems = append(problems, fmt.Sprintf("%s: type %q is not supported by zot (only \"command\" and \"http\"); skipped", at, hd.Type))
			continue
		case strings.TrimSpace(hd.Command) == "":
			problems = append(problems, at+": no command; skipped")
			continue
		default:
			hd.URL = ""
		}
		timeout := hookDefaultTimeout
		if hd.Timeout != nil {
			if *hd.Timeout > 0 && *hd.Timeout <= 24*3600 {
				timeout = time.Duration(*hd.Timeout * float64(time.Second))
			} else {
				problems = append(problems, fmt.Sprintf("%s: timeout %v is not a positive number of seconds; using %s", at, *hd.Timeout, hookDefaultTimeout))
			}
		}
		g.handlers = append(g.handlers, hookHandler{Command: hd.Command, URL: hd.URL, Headers: hd.Headers, AllowedEnv: hd.AllowedEnvVars, Timeout: timeout})
	}
	return g, problems
}

// literalHookMatcher is the shape Claude Code compares by name instead of
// as a regular expression: "Bash", "Edit|Write", "Edit, Write".
var literalHookMatcher = lazyRegexp(`^[a-zA-Z0-9_|, -]+$`)

// compileHookMatcher follows Claude Code: "" and "*" match everything; a
// list of names matches exactly those names; anything else is an
// unanchored regular expression. One Go cannot compile matches only the
// identical name (and the error says why).
func compileHookMatcher(m string) (func(string) bool, error) {
	if m == "" || m == "*" {
		return func(string) bool { return true }, nil
	}
	if literalHookMatcher().MatchString(m) {
		names := map[string]bool{}
		for _, n := range strings.FieldsFunc(m, func(r rune) bool { return r == '|' || r == ',' }) {
			names[strings.TrimSpace(n)] = true
		}
		return func(s string) bool { return names[s] }, nil
	}
	re, err := regexp.Compile(m)
	if err != nil {
		return func(s string) bool { return s == m }, err
	}
	return re.MatchString, nil
}

// Has reports whether any command is configured for event.
func (h *Hooks) Has(event string) bool { return h != nil && len(h.events[event]) > 0 }

// handlers lists the hooks of event whose matcher takes subject, each
// command or URL once (Claude Code runs identical ones once).
func (h *Hooks) handlers(event, subject string) []hookHandler {
	var out []hookHandler
	seen := map[string]bool{}
	for _, g := range h.events[event] {
		// UserPromptSubmit and Stop have no matcher: every group applies.
		if event != "UserPromptSubmit" && event != "Stop" && !g.match(subject) {
			continue
		}
		for _, hd := range g.handlers {
			if !seen[hd.name()] {
				seen[hd.name()] = true
				out = append(out, hd)
			}
		}
	}
	return out
}

// hookInput is the JSON a hook reads on stdin, as Claude Code sends it.
type hookInput struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name,omitempty"`
	ToolInput      json.RawMessage `json:"tool_input,omitempty"`
	ToolResponse   json.RawMessage `json:"tool_response,omitempty"`
	ToolUseID      string          `json:"tool_use_id,omitempty"`
	Prompt         *string         `json:"prompt,omitempty"`
	StopHookActive *bool           `json:"stop_hook_active,omitempty"`
	Source         string          `json:"source,omitempty"`
	Model          string          `json:"model,omitempty"`
	Reason         string          `json:"reason,omitempty"`
	// PostToolUseFailure
	Error       string `json:"error,omitempty"`
	IsInterrupt *bool  `json:"is_interrupt,omitempty"`
	// Notification
	Message          string `json:"message,omitempty"`
	NotificationType string `json:"notification_type,omitempty"`
	// PreCompact
	Trigger            string  `json:"trigger,omitempty"`
	CustomInstructions *string `json:"custom_instructions,omitempty"`
}

// hookOutput is the JSON a hook may print on stdout when it exits 0.
type hookOutput struct {
	Continue       *bool               `json:"continue"`
	StopReason     string              `json:"stopReason"`
	SuppressOutput bool                `json:"suppressOutput"`
	SystemMessage  string              `json:"systemMessage"`
	Decision       string              `json:"decision"`
	Reason         string              `json:"reason"`
	Specific       *hookSpecificOutput `json:"hookSpecificOutput"`
}

type hookSpecificOutput struct {
	HookEventName            string          `json:"hookEventName"`
	PermissionDecision       string          `json:"permissionDecision"`
	PermissionDecisionReason string          `json:"permissionDecisionReason"`
	UpdatedInput             json.RawMessage `json:"updatedInput"`
	AdditionalContext        string          `json:"additionalContext"`
	// Decision is PermissionRequest's answer.
	Decision *struct {
		Behavior string `json:"behavior"`
		Message  string `json:"message"`
	} `json:"decision"`
}

// decodeHookOutput reads what a hook printed after exiting 0. Output that
// does not start with "{" is plain text (context, for UserPromptSubmit and
// SessionStart); output that does must be a valid hook JSON object.
func decodeHookOutput(stdout []byte) (out hookOutput, isJSON bool, err error) {
	s := bytes.TrimSpace(stdout)
	if len(s) == 0 || s[0] != '{' {
		return out, false, nil
	}
	if err := json.Unmarshal(s, &out); err != nil {
		return hookOutput{}, true, fmt.Errorf("its JSON output is invalid: %v", err)
	}
	switch out.Decision {
	case "", "approve", "block":
	default:
		return hookOutput{}, true, fmt.Errorf("its JSON output has \"decision\": %q (want \"block\" or \"approve\")", out.Decision)
	}
	if sp := out.Specific; sp != nil {
		switch sp.PermissionDecision {
		case "", "allow", "deny", "ask":
		default:
			return hookOutput{}, true, fmt.Errorf("its JSON output has \"permissionDecision\": %q (want allow, deny or ask)", sp.PermissionDecision)
		}
		if d := sp.Decision; d != nil && d.Behavior != "allow" && d.Behavior != "deny" {
			return hookOutput{}, true, fmt.Errorf("its JSON output has \"decision\": {\"behavior\": %q} (want allow or deny)", d.Behavior)
		}
		if u := bytes.TrimSpace(sp.UpdatedInput); len(u) > 0 && string(u) != "null" && u[0] != '{' {
			return hookOutput{}, true, errors.New("its JSON output has an \"updatedInput\" that is not an object")
		}
	}
	return out, true, nil
}

// stops reports whether the output says "continue": false.
func (o hookOutput) stops() bool { return o.Continue != nil && !*o.Continue }

// permission is the PreToolUse decision, the deprecated approve/block
// mapped to allow/deny.
func (o hookOutput) permission() (decision, reason string) {
	if o.Specific != nil && o.Specific.PermissionDecision != "" {
		return o.Specific.PermissionDecision, o.Specific.PermissionDecisionReason
	}
	switch o.Decision {
	case "approve":
		return "allow", o.Reason
	case "block":
		return "deny", o.Reason
	}
	return "", ""
}

func (o hookOutput) additionalContext() string {
	if o.Specific == nil {
		return ""
	}
	return strings.TrimSpace(o.Specific.AdditionalContext)
}

func (o hookOutput) updatedInput() json.RawMessage {
	if o.Specific == nil {
		return nil
	}
	u := bytes.TrimSpace(o.Specific.UpdatedInput)
	if len(u) == 0 || string(u) == "null" {
		return nil
	}
	return u
}

// hookRun is what one command did.
type hookRun struct {
	event  string
	h      hookHandler
	code   int // exit status; -1 when it did not exit by itself
	stdout []byte
	stderr []byte
	err    error // it could not start, timed out, or its output was unusable
	out    hookOutput
	json   bool // exit 0 with a JSON object on stdout
	// refused: Verify said no, and the command did not run (err says why).
	refused bool
}

// ok is exit 0 with usable output.
func (r *hookRun) ok() bool { return r.err == nil && r.code == 0 }

// blocks is exit 2.
func (r *hookRun) blocks() bool { return r.err == nil && r.code == 2 }

// text is trimmed stdout: context for UserPromptSubmit and SessionStart.
func (r *hookRun) text() string { return strings.TrimSpace(string(r.stdout)) }

// failsClosed is an http hook that did not answer at an event where that
// blocks (hookFailsClosed).
func (r *hookRun) failsClosed() bool {
	return r.h.URL != "" && !r.ok() && hookFailsClosed[r.event]
}

// closedReason says why a failsClosed run blocks.
func (r *hookRun) closedReason() string {
	return fmt.Sprintf("%s http hook %s did not answer (%s); an http hook that cannot answer blocks", r.event, r.h.URL, hookFailure(r))
}

// reason is exit 2's stderr, or a sentence naming the hook when it said
// nothing.
func (r *hookRun) reason() string {
	if s := strings.TrimSpace(string(r.stderr)); s != "" {
		return truncate(s, hookReasonLimit)
	}
	return fmt.Sprintf("blocked by %s hook %q", r.event, r.h.name())
}

// name is the command, or the URL of an http hook.
func (hd hookHandler) name() string { return cmp.Or(hd.Command, hd.URL) }

// by names the hook in the audit trail.
func (r *hookRun) by() string {
	if r.h.origin != "" {
		return r.h.origin + "/hook:" + truncate(r.h.name(), 200)
	}
	return "hook:" + truncate(r.h.name(), 200)
}

// hookPermissionMode is Claude Code's name for mode. sandboxed-auto, which
// Claude Code lacks, asks nothing, as bypassPermissions does; a session
// without modes (an embedder's) is "default".
func hookPermissionMode(mode Mode) string {
	if mode == ModeSandboxedAuto {
		return ModeAuto.Claude()
	}
	return cmp.Or(mode.Claude(), "default")
}

// run fires event: every command whose matcher takes subject runs, all in
// parallel, with in on stdin. Results come back in configuration order;
// failures and systemMessages have been shown to the user.
func (h *Hooks) run(ctx context.Context, event, subject string, in hookInput) []hookRun {
	if h == nil {
		return nil
	}
	handlers := h.handlers(event, subject)
	if len(handlers) == 0 {
		return nil
	}
	in.SessionID, in.TranscriptPath, in.Cwd = h.cfg.SessionID, h.cfg.TranscriptPath, h.cfg.Cwd
	in.PermissionMode, in.HookEventName = hookPermissionMode(h.cfg.Modes.Current()), event
	stdin, err := json.Marshal(in)
	if err != nil { // only a RawMessage that is not JSON gets here
		h.note("error", fmt.Sprintf("hooks: encode %s input: %v", event, err))
		return nil
	}
	runs := make([]hookRun, len(handlers))
	var wg sync.WaitGroup
	for i, hd := range handlers {
		wg.Add(1)
		// Ends when the command and what it left behind are gone.
		go func() {
			defer wg.Done()
			if h.cfg.Verify != nil && hd.file != "" {
				if err := h.cfg.Verify(hd.file); err != nil {
					runs[i] = hookRun{event: event, h: hd, code: -1, err: err, refused: true}
					return
				}
			}
			if hd.URL != "" {
				runs[i] = h.runHookHTTP(ctx, hd, stdin)
			} else {
				runs[i] = runHookCommand(ctx, h.cfg.Cwd, hd, stdin)
			}
			runs[i].event = event
		}()
	}
	wg.Wait()
	for i := range runs {
		r := &runs[i]
		if r.err == nil && r.code == 0 {
			r.out, r.json, r.err = decodeHookOutput(r.stdout)
		}
		switch {
		case r.err != nil && ctx.Err() != nil:
		case r.failsClosed():
			h.note("warn", r.closedReason())
		case r.err != nil:
			h.note("warn", fmt.Sprintf("%s hook %q: %v; ignored%s", event, r.h.name(), r.err, stderrExcerpt(r.stderr)))
		case r.code != 0 && r.code != 2:
			h.note("warn", fmt.Sprintf("%s hook %q failed with exit status %d; ignored%s", event, r.h.name(), r.code, stderrExcerpt(r.stderr)))
		case r.json && r.out.SystemMessage != "":
			h.note("warn", fmt.Sprintf("%s hook: %s", event, r.out.SystemMessage))
		}
	}
	return runs
}

func stderrExcerpt(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	return ": " + truncate(s, 500)
}

// runHookCommand runs one command with sh -c in a session of its own
// (runToEnd), its input on stdin, stdout and stderr kept up to
// hookOutputLimit each. Like the model's commands, a hook gets zot's
// environment without zot's secrets, plus CLAUDE_PROJECT_DIR. When the
// shell exits, or the timeout passes, or ctx is cancelled, the whole
// session is killed: no process a hook started outlives it unless it
// started a session of its own.
func runHookCommand(ctx context.Context, cwd string, hd hookHandler, stdin []byte) hookRun {
	r := hookRun{h: hd, code: -1}
	tctx, cancel := context.WithTimeout(ctx, hd.Timeout)
	defer cancel()
	spec := procSpec{argv: []string{"/bin/sh", "-c", hd.Command}, dir: cwd, env: envNoSecrets, addEnv: append([]string{"CLAUDE_PROJECT_DIR=" + cwd}, hd.env...)}
	run, err := runToEnd(tctx, spec, stdin, hookOutputLimit, hookDrain)
	switch {
	case err != nil:
		r.err = fmt.Errorf("start: %v", err)
		return r
	case run.stopped && ctx.Err() != nil:
		r.err = errors.New("aborted")
	case run.stopped:
		r.err = fmt.Errorf("timed out after %s (its processes were killed)", hd.Timeout)
	}
	r.stdout, r.stderr = run.stdout.Bytes(), run.stderr.Bytes()
	if r.err == nil {
		r.code = run.state.ExitCode()
		if r.code == -1 {
			r.err = fmt.Errorf("killed (%s)", run.state)
		} else if r.code == 0 && run.stdout.truncated {
			r.err = fmt.Errorf("its output is longer than %d bytes", hookOutputLimit)
		}
	}
	return r
}

func (h *Hooks) note(level, msg string) {
	if h.cfg.OnNote != nil {
		h.cfg.OnNote(level, sanitize(msg))
	}
}

// ToolGate is PreToolUse, the hooks stage's tool gate: the matching commands run
// in parallel; any deny (exit 2, "permissionDecision": "deny", the
// deprecated "decision": "block", "continue": false) blocks with the
// reasons, the model sees; else any ask asks; an updatedInput (the first
// in configuration order) rewrites the call. Each hook's say is a note in
// the audit trail.
func (h *Hooks) ToolGate(ctx context.Context, call ToolCall) GateResult {
	if h == nil || !h.Has("PreToolUse") {
		return GateResult{}
	}
	name := claudeToolName(call.Name)
	runs := h.run(ctx, "PreToolUse", name, hookInput{
		ToolName: name, ToolInput: claudeToolInput(call.Name, call.Args, h.cfg.Cwd), ToolUseID: call.ID,
	})
	if len(runs) == 0 {
		return GateResult{}
	}
	if ctx.Err() != nil {
		return GateResult{Verdict: GateDeny, Reason: "not run: aborted while hooks were deciding"}
	}
	var res GateResult
	var denies []string
	var rewrite *hookRun
	asked := false
	for i := range runs {
		r := &runs[i]
		note := GateNote{By: r.by(), Decision: DecisionAllow}
		switch {
		case r.refused:
			note.Decision, note.Reason = DecisionDeny, r.err.Error()
		case r.blocks():
			note.Decision, note.Reason = DecisionDeny, r.reason()
		case r.failsClosed():
			note.Decision, note.Reason = DecisionDeny, r.closedReason()
		case !r.ok():
			note.Reason = "hook failed (" + hookFailure(r) + "); ignored"
		case r.out.stops():
			h.stop(r.out.StopReason)
			note.Decision, note.Reason = DecisionDeny, stopText(r)
		default:
			decision, reason := r.out.permission()
			if c := r.out.additionalContext(); c != "" {
				h.addContext(call.ID, c)
			}
			note.Reason = reason
			switch decision {
			case "deny":
				note.Decision = DecisionDeny
				if note.Reason == "" {
					note.Reason = fmt.Sprintf("denied by PreToolUse hook %q", r.h.name())
				}
			case "ask":
				note.Decision = DecisionAsk
				if note.Reason == "" {
					note.Reason = "asks for confirmation"
				}
			}
			if note.Decision != DecisionDeny && r.out.updatedInput() != nil {
				if rewrite == nil {
					rewrite = r
				} else {
					h.note("warn", fmt.Sprintf("PreToolUse hook %q: updatedInput ignored: hook %q rewrote the call first", r.h.name(), rewrite.h.name()))
				}
			}
		}
		if note.Decision == DecisionDeny {
			denies = append(denies, note.Reason)
		}
		asked = asked || note.Decision == DecisionAsk
		res.Notes = append(res.Notes, note)
	}
	if len(denies) > 0 {
		res.Verdict, res.Reason = GateDeny, strings.Join(denies, "\n")
		return res
	}
	if rewrite != nil {
		args, err := zotToolArgs(call.Name, rewrite.out.updatedInput())
		if err != nil {
			reason := fmt.Sprintf("not run: PreToolUse hook %q returned an updatedInput zot cannot use: %v", rewrite.h.name(), err)
			res.Notes = append(res.Notes, GateNote{By: rewrite.by(), Decision: DecisionDeny, Reason: reason})
			res.Verdict, res.Reason = GateDeny, reason
			return res
		}
		res.Args = args
		res.Notes = append(res.Notes, GateNote{By: rewrite.by(), Decision: DecisionRewrite, Reason: string(args)})
	}
	if asked {
		res.Verdict = GateAsk
	}
	return res
}

// hookFailure says why a run counts as failed.
func hookFailure(r *hookRun) string {
	if r.err != nil {
		return r.err.Error()
	}
	return fmt.Sprintf("exit status %d", r.code)
}

func stopText(r *hookRun) string {
	if s := strings.TrimSpace(r.out.StopReason); s != "" {
		return s
	}
	return fmt.Sprintf("stopped by %s hook %q", r.event, r.h.name())
}

// AfterTool is PostToolUse and PostToolUseFailure, the hooks stage after
// a tool runs: after a call that ran and succeeded, the PostToolUse hooks
// run; exit 2's stderr, a "decision": "block" reason and
// additionalContext are added to the result the model sees, after any
// additionalContext PreToolUse hooks gave for the call. After one that
// failed, PostToolUseFailure (afterFailure).
func (h *Hooks) AfterTool(ctx context.Context, rec *ToolRecord) {
	if h == nil {
		return
	}
	var extra []string
	for _, c := range h.takeContext(rec.Call.ID) {
		extra = append(extra, "PreToolUse hook: "+c)
	}
	if rec.Ran && !rec.Result.IsError && h.Has("PostToolUse") {
		args := rec.Call.Args
		if rec.Executed != nil {
			args = rec.Executed
		}
		name := claudeToolName(rec.Call.Name)
		runs := h.run(ctx, "PostToolUse", name, hookInput{
			ToolName: name, ToolInput: claudeToolInput(rec.Call.Name, args, h.cfg.Cwd),
			ToolResponse: claudeToolResponse(rec.Call.Name, args, rec.Result, h.cfg.Cwd), ToolUseID: rec.Call.ID,
		})
		for i := range runs {
			r := &runs[i]
			switch {
			case r.blocks():
				extra = append(extra, "PostToolUse hook: "+r.reason())
			case !r.ok():
			default:
				if r.out.stops() {
					h.stop(r.out.StopReason)
				}
				if r.out.Decision == "block" {
					reason := strings.TrimSpace(r.out.Reason)
					if reason == "" {
						reason = fmt.Sprintf("hook %q objects to this result", r.h.name())
					}
					extra = append(extra, "PostToolUse hook: "+reason)
				}
				if c := r.out.additionalContext(); c != "" {
					extra = append(extra, "PostToolUse hook: "+c)
				}
			}
		}
	}
	extra = append(extra, h.afterFailure(ctx, rec)...)
	if len(extra) == 0 {
		return
	}
	content := append([]Block(nil), rec.Result.Content...)
	for _, e := range extra {
		content = append(content, TextBlock(e))
	}
	rec.Result.Content = content
}

// BeforePrompt is UserPromptSubmit: exit 2, "decision": "block" or
// "continue": false refuse the prompt with the reason the user sees; plain
// stdout and additionalContext become context added to the prompt.
func (h *Hooks) BeforePrompt(ctx context.Context, text string) (block bool, reason, extra string) {
	if h == nil {
		return false, "", ""
	}
	h.mu.Lock()
	h.stopActive, h.halt = false, nil
	h.mu.Unlock()
	var reasons, context []string
	for _, r := range h.run(ctx, "UserPromptSubmit", "", hookInput{Prompt: &text}) {
		switch {
		case r.blocks():
			reasons = append(reasons, r.reason())
		case r.failsClosed():
			reasons = append(reasons, r.closedReason())
		case !r.ok():
		case r.out.stops():
			reasons = append(reasons, stopText(&r))
		case r.out.Decision == "block":
			why := strings.TrimSpace(r.out.Reason)
			if why == "" {
				why = fmt.Sprintf("refused by UserPromptSubmit hook %q", r.h.name())
			}
			reasons = append(reasons, why)
		case r.json:
			if c := r.out.additionalContext(); c != "" {
				context = append(context, c)
			}
		default:
			if t := r.text(); t != "" {
				context = append(context, t)
			}
		}
	}
	if len(reasons) > 0 {
		// The user reads it (on stderr in -p): no escape sequences.
		return true, sanitize(strings.Join(reasons, "\n")), ""
	}
	return false, "", strings.Join(context, "\n\n")
}

// OnStop is Stop: exit 2's stderr or a "decision": "block" reason makes the
// agent go on with it as the next user message ("continue": false wins
// over both). stop_hook_active tells the hooks whether the agent is already
// going on because of them.
func (h *Hooks) OnStop(ctx context.Context, last Message) (cont bool, message string) {
	if h == nil {
		return false, ""
	}
	h.mu.Lock()
	active := h.stopActive
	h.mu.Unlock()
	var msgs []string
	halt := false
	for _, r := range h.run(ctx, "Stop", "", hookInput{StopHookActive: &active}) {
		switch {
		case r.blocks():
			msgs = append(msgs, r.reason())
		case !r.ok():
		case r.out.stops():
			halt = true
		case r.out.Decision == "block":
			why := strings.TrimSpace(r.out.Reason)
			if why == "" {
				why = "A Stop hook asks you to go on."
			}
			msgs = append(msgs, why)
		}
	}
	cont = !halt && len(msgs) > 0
	h.mu.Lock()
	h.stopActive = cont
	h.mu.Unlock()
	return cont, strings.Join(msgs, "\n")
}

// SessionStart runs the SessionStart commands (their matcher takes the
// source: startup or resume) and returns the context they gave: plain
// stdout and additionalContext. Exit 2's stderr is shown to the user.
func (h *Hooks) SessionStart(ctx context.Context) string {
	if h == nil {
		return ""
	}
	var context []string
	for _, r := range h.run(ctx, "SessionStart", h.cfg.Source, hookInput{Source: h.cfg.Source, Model: h.cfg.Model}) {
		switch {
		case r.blocks():
			h.note("warn", "SessionStart hook: "+r.reason())
		case !r.ok():
		case r.json:
			if c := r.out.additionalContext(); c != "" {
				context = append(context, c)
			}
		default:
			if t := r.text(); t != "" {
				context = append(context, t)
			}
		}
	}
	return strings.Join(context, "\n\n")
}

// SessionEnd runs the SessionEnd commands (reason "other"; they cannot
// stop anything). Exit 2's stderr is shown to the user.
func (h *Hooks) SessionEnd(ctx context.Context) {
	if h == nil {
		return
	}
	for _, r := range h.run(ctx, "SessionEnd", "other", hookInput{Reason: "other"}) {
		if r.blocks() {
			h.note("warn", "SessionEnd hook: "+r.reason())
		}
	}
}

// HookStage is the hooks' stage at each hook point.
var HookStage = Stage{Name: "hooks", Order: OrderHooks}

// Attach gives the agent the hooks as stages of its pipeline: PreToolUse
// (ToolGate), PostToolUse and PostToolUseFailure (AfterTool),
// UserPromptSubmit (BeforePrompt), Stop (OnStop), and a turn gate that
// ends the prompt after a hook said "continue": false; PermissionRequest
// and Notification where a call waits for approval, PreCompact before a
// compaction. A nil or empty Hooks adds stages that let everything pass,
// so that a host can check that its agent has every stage.
func (h *Hooks) Attach(a *Agent) {
	a.Pipeline.SetAskHooks(h.PermissionRequest, h.NotifyApproval)
	a.BeforeCompact = h.PreCompact
	a.Pipeline.AddToolGate(HookStage, h.ToolGate)
	a.Pipeline.AddAfterTool(HookStage, h.AfterTool)
	a.Pipeline.AddPromptGate(HookStage, h.BeforePrompt)
	a.Pipeline.AddTurnGate(HookStage, func(ctx context.Context, step int) (bool, string) {
		if reason, ok := h.takeStop(); ok {
			return true, reason
		}
		return false, ""
	})
	a.Pipeline.AddStopHook(HookStage, h.OnStop)
}

func (h *Hooks) addContext(callID, text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.context[callID] = append(h.context[callID], text)
}

func (h *Hooks) takeContext(callID string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.context[callID]
	delete(h.context, callID)
	return c
}

// stop remembers a "continue": false; the next turn is refused with reason.
func (h *Hooks) stop(reason string) {
	reason = sanitize(reason) // the user reads it
	if strings.TrimSpace(reason) == "" {
		reason = "a hook stopped the agent"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.halt == nil {
		h.halt = &reason
	}
}

func (h *Hooks) takeStop() (string, bool) {
	if h == nil {
		return "", false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.halt == nil {
		return "", false
	}
	reason := *h.halt
	h.halt = nil
	return reason, true
}

// claudeToolName is the name Claude Code hooks know a tool by: the
// built-ins capitalised, the rest (mcp__server__tool, extension tools) as
// they are.
func claudeToolName(name string) string {
	switch name {
	case ToolBash:
		return "Bash"
	case ToolRead:
		return "Read"
	case ToolWrite:
		return "Write"
	case ToolEdit:
		return "Edit"
	}
	return name
}

// claudeToolInput maps a built-in's arguments, as the tool reads them, to
// Claude Code's field names: bash command/timeout (seconds →
// milliseconds); read, write and edit file_path (made absolute),
// offset/limit, content, and one edit as old_string/new_string or several
// as edits: [{old_string, new_string}]. Other tools' arguments, and
// arguments the tool will refuse, go as they are.
func claudeToolInput(tool string, args json.RawMessage, cwd string) json.RawMessage {
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(cwd, p)
	}
	out := map[string]any{}
	var err error
	switch tool {
	case ToolBash:
		var a BashArgs
		if a, err = ParseBashArgs(args); err == nil {
			out["command"] = a.Command
			if a.Timeout > 0 {
				out["timeout"] = int64(a.Timeout*1000 + 0.5)
			}
		}
	case ToolRead:
		var a ReadArgs
		if a, err = ParseReadArgs(args); err == nil {
			out["file_path"] = abs(a.Path)
			if a.Offset > 0 {
				out["offset"] = a.Offset
			}
			if a.Limit > 0 {
				out["limit"] = a.Limit
			}
		}
	case ToolWrite:
		var a WriteArgs
		if a, err = ParseWriteArgs(args); err == nil {
			out["file_path"], out["content"] = abs(a.Path), a.Content
		}
	case ToolEdit:
		type claudeEdit struct {
			Old string `json:"old_string"`
			New string `json:"new_string"`
		}
		var a EditArgs
		if a, err = ParseEditArgs(args); err == nil {
			out["file_path"] = abs(a.Path)
			if len(a.Edits) == 1 {
				out["old_string"], out["new_string"] = a.Edits[0].OldText, a.Edits[0].NewText
			} else {
				list := make([]claudeEdit, len(a.Edits))
				for i, e := range a.Edits {
					list[i] = claudeEdit{e.OldText, e.NewText}
				}
				out["edits"] = list
			}
		}
	default:
		return argsJSON(args)
	}
	if err != nil {
		return argsJSON(args)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return argsJSON(args)
	}
	return b
}

// zotToolArgs maps a hook's updatedInput back to our argument names. Like
// Claude Code, it replaces the arguments whole. Fields our tools do not
// have (description, run_in_background, replace_all) are dropped.
func zotToolArgs(tool string, updated json.RawMessage) (json.RawMessage, error) {
	var in map[string]json.RawMessage
	if json.Unmarshal(updated, &in) != nil || in == nil {
		return nil, errors.New("it is not a JSON object")
	}
	if claudeToolName(tool) == tool {
		var buf bytes.Buffer
		json.Compact(&buf, updated)
		return buf.Bytes(), nil
	}
	out := map[string]any{}
	put := func(key string, v json.RawMessage) {
		if v != nil {
			out[key] = v
		}
	}
	need := func(key string) error {
		if in[key] == nil {
			return fmt.Errorf("%s needs %q", claudeToolName(tool), key)
		}
		return nil
	}
	if tool != ToolBash {
		if err := need("file_path"); err != nil {
			return nil, err
		}
		out["path"] = in["file_path"]
	}
	switch tool {
	case ToolBash:
		if err := need("command"); err != nil {
			return nil, err
		}
		out["command"] = in["command"]
		if t, ok := in["timeout"]; ok {
			ms, ok := jsonNumber(t)
			if !ok {
				return nil, errors.New("Bash timeout must be a number of milliseconds")
			}
			out["timeout"] = ms / 1000
		}
	case ToolRead:
		put("offset", in["offset"])
		put("limit", in["limit"])
	case ToolWrite:
		if err := need("content"); err != nil {
			return nil, err
		}
		out["content"] = in["content"]
	case ToolEdit:
		type ourEdit struct {
			Old json.RawMessage `json:"oldText"`
			New json.RawMessage `json:"newText"`
		}
		var list []struct {
			Old json.RawMessage `json:"old_string"`
			New json.RawMessage `json:"new_string"`
		}
		switch {
		case in["edits"] != nil:
			if json.Unmarshal(in["edits"], &list) != nil {
				return nil, errors.New("Edit edits must be a list of {old_string, new_string}")
			}
		case in["old_string"] != nil && in["new_string"] != nil:
			list = append(list, struct {
				Old json.RawMessage `json:"old_string"`
				New json.RawMessage `json:"new_string"`
			}{in["old_string"], in["new_string"]})
		default:
			return nil, errors.New(`Edit needs "old_string" and "new_string", or "edits"`)
		}
		edits := make([]ourEdit, len(list))
		for i, e := range list {
			edits[i] = ourEdit{Old: e.Old, New: e.New}
		}
		out["edits"] = edits
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// claudeToolResponse is tool_response for PostToolUse, in the shape Claude
// Code gives its own tools: Bash {stdout, stderr, interrupted, isImage},
// Read {type, file: {filePath, content}}, Write and Edit {filePath,
// success}; other tools get their content blocks.
func claudeToolResponse(tool string, args json.RawMessage, res ToolResult, cwd string) json.RawMessage {
	text := Message{Content: res.Content}.Text()
	// PostToolUse follows a call that ran: its arguments read.
	path := func(p string, err error) string {
		if err != nil || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(cwd, p)
	}
	var v any
	switch tool {
	case ToolBash:
		v = map[string]any{"stdout": text, "stderr": "", "interrupted": false, "isImage": false}
	case ToolRead:
		a, err := ParseReadArgs(args)
		v = map[string]any{"type": "text", "file": map[string]any{"filePath": path(a.Path, err), "content": text}}
	case ToolWrite:
		a, err := ParseWriteArgs(args)
		v = map[string]any{"filePath": path(a.Path, err), "success": true}
	case ToolEdit:
		a, err := ParseEditArgs(args)
		v = map[string]any{"filePath": path(a.Path, err), "success": true}
	default:
		blocks := []map[string]any{}
		for _, b := range res.Content {
			switch b.Type {
			case BlockText:
				blocks = append(blocks, map[string]any{"type": "text", "text": b.Text})
			case BlockImage:
				blocks = append(blocks, map[string]any{"type": "image", "mimeType": b.MimeType, "data": b.Data})
			}
		}
		v = blocks
	}
	b, _ := json.Marshal(v)
	return b
}

// jsonNumber reads a number, or a string holding one (models quote
// numbers; the tools accept both).
func jsonNumber(raw json.RawMessage) (float64, bool) {
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return f, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			return f, true
		}
	}
	return 0, false
}

// hooksStderrNotes prints notes as "zot: hooks: …" lines, as -p and --json
// do; info lines are left out.
func hooksStderrNotes(w io.Writer) func(level, msg string) {
	var mu sync.Mutex
	return func(level, msg string) {
		if level == "info" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "zot: %s\n", msg)
	}
}
