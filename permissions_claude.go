package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"unicode"
)

// Claude Code's permission rules (permissions.allow / ask / deny of the
// settings files Claude Code reads), evaluated as Claude Code evaluates
// them: deny rules first, then ask, then allow, the first match deciding;
// a call no rule matches gets what Claude Code's permission mode gives it
// (Bash, file edits and MCP tools ask in the default mode; reads do not).
// The grammar: Tool or Tool(specifier); Bash(npm run test:*) prefixes
// (ending at a word boundary) and Bash(git * main) wildcards, matched
// against each simple command the splitter finds; Read(path) and
// Edit(path) with gitignore-style paths (//abs, ~/home, /project, path or
// ./path from the working directory); Edit rules gate every tool that
// writes files; mcp__server and mcp__server__tool; Skill(name).

const claudeSettingsLimit = 1 << 20

// Where the managed settings are. ZOT_TEST_MANAGED_SETTINGS_DIR replaces
// the directory for zot's own tests, which cannot write /etc
// (docs/permissions.md).
const (
	claudeManagedDir    = "/etc/claude-code"
	claudeManagedDirEnv = "ZOT_TEST_MANAGED_SETTINGS_DIR"
)

// claudeTools are the tools Claude Code's rules name, and which of zot's
// tools each gates ("" for none: the rule is not applicable in zot).
var claudeTools = map[string]string{
	"Bash": "bash", "Read": "read", "Edit": "write, edit", "Write": "write", "Skill": "skill",
	"MultiEdit": "", "NotebookEdit": "", "NotebookRead": "", "WebFetch": "", "WebSearch": "", "Glob": "", "Grep": "",
	"LS": "", "Task": "", "Agent": "", "TodoWrite": "", "ExitPlanMode": "", "BashOutput": "", "KillShell": "",
	"KillBash": "", "SlashCommand": "", "ListMcpResourcesTool": "", "ReadMcpResourceTool": "",
}

// claudeRule is one permission rule as written.
type claudeRule struct {
	action  string // allow, ask, deny
	text    string
	tool    string
	spec    string
	hasSpec bool
	file    string
	index   int // its place in the file's list
	broken  bool
}

// claudeRules is the Claude Code source of a session.
type claudeRules struct {
	rules    []*claudeRule // managed, user, project, local; each file's deny, ask, allow
	mode     string        // the permission mode for calls no rule decides
	modeFrom string
	// hostMode, when set, is the zot mode a session is in (modes.go),
	// over mode; noBypass keeps it from being auto where the managed
	// settings disable bypassPermissions. hostOnly says that no settings
	// file holds a rule: the source is there for the host's mode alone,
	// and has no say where that mode asks nothing.
	hostMode atomic.Pointer[Mode]
	noBypass bool
	hostOnly bool
	cwd      string
	home     string
	realBase map[string]string // cwd and home with their links resolved
	// missing names the settings files that could not be read: their
	// rules are unknown, so nothing is allowed while they are.
	missing []string
	// guarded (PermissionSources.Guarded) keeps acceptEdits from what
	// programs outside zot read or run.
	guarded func(real string) string
}

// claudeSettingsFile is one settings file and where it stands.
type claudeSettingsFile struct {
	path    string
	scope   string // managed, user, project, local
	project bool
}

// claudeSettingsFiles lists the files, highest precedence first: managed
// (managed-settings.json, then managed-settings.d/*.json in name order),
// then the user's, the project's and the project's local file.
func claudeSettingsFiles(src PermissionSources) []claudeSettingsFile {
	managed := src.ManagedDir
	var out []claudeSettingsFile
	if managed != "" {
		out = append(out, claudeSettingsFile{path: filepath.Join(managed, "managed-settings.json"), scope: "managed"})
		drop, _ := filepath.Glob(filepath.Join(managed, "managed-settings.d", "*.json"))
		sort.Strings(drop)
		for _, d := range drop {
			out = append(out, claudeSettingsFile{path: d, scope: "managed"})
		}
	}
	if src.UserHome != "" {
		out = append(out, claudeSettingsFile{path: filepath.Join(src.UserHome, ".claude", "settings.json"), scope: "user"})
	}
	for _, f := range []claudeSettingsFile{
		{path: filepath.Join(src.Cwd, ".claude", "settings.json"), scope: "project"},
		{path: filepath.Join(src.Cwd, ".claude", "settings.local.json"), scope: "local"},
	} {
		if slices.ContainsFunc(out, func(o claudeSettingsFile) bool { return o.path == f.path }) {
			continue // the project is the home directory: the user's file
		}
		f.project = src.UserOwns == nil || !src.UserOwns(f.path)
		out = append(out, f)
	}
	return out
}

// claudePermissionSettings is the part of a settings file zot reads.
type claudePermissionSettings struct {
	Permissions *struct {
		Allow                        []string `json:"allow"`
		Ask                          []string `json:"ask"`
		Deny                         []string `json:"deny"`
		DefaultMode                  string   `json:"defaultMode"`
		DisableBypassPermissionsMode string   `json:"disableBypassPermissionsMode"`
	} `json:"permissions"`
	AllowManagedPermissionRulesOnly bool `json:"allowManagedPermissionRulesOnly"`
}

// claudeModes are the permission modes, from the strictest.
var claudeModes = []string{"dontAsk", "default", "plan", "acceptEdits", "bypassPermissions"}

// looserMode says whether mode m asks less than base: dontAsk, then
// default and plan (taken as equally strict), then acceptEdits, then
// bypassPermissions. A mode that is not Claude Code's is not looser: it
// is reported and ignored.
func looserMode(m, base string) bool {
	rank := func(m string) int {
		if m == "plan" {
			m = "default"
		}
		return slices.Index(claudeModes, m)
	}
	return rank(m) > rank(base) && rank(base) >= 0
}

// loadClaudeRules reads the settings files; nil when none holds a rule.
func loadClaudeRules(src PermissionSources) (*claudeRules, []PermissionProblem, []PermissionLoosening, []string) {
	c := &claudeRules{cwd: src.Cwd, home: src.UserHome, guarded: src.Guarded}
	var problems []PermissionProblem
	var loosening []PermissionLoosening
	var files []string
	managedOnly, noBypass := false, false
	type modeAt struct{ mode, file, scope string }
	var modes []modeAt
	sawRule := false
	for _, f := range claudeSettingsFiles(src) {
		data, err := readUntrustedFile(f.path, claudeSettingsLimit)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		files = append(files, f.path)
		if err != nil {
			problems = append(problems, PermissionProblem{File: f.path, Level: problemError, Msg: fmt.Sprintf("cannot be read: %v; its rules are unknown, so every call Claude Code's rules govern is asked until it is fixed", err)})
			c.missing = append(c.missing, f.path)
			sawRule = true
			continue
		}
		var s claudePermissionSettings
		if err := json.Unmarshal(data, &s); err != nil {
			problems = append(problems, PermissionProblem{File: f.path, Line: jsonErrorLine(data, err), Level: problemError, Msg: fmt.Sprintf("not a settings object: %v; its rules are unknown, so every call Claude Code's rules govern is asked until it is fixed", err)})
			c.missing = append(c.missing, f.path)
			sawRule = true
			continue
		}
		if f.scope == "managed" && s.AllowManagedPermissionRulesOnly {
			managedOnly = true
		}
		p := s.Permissions
		if p == nil {
			continue
		}
		if f.scope == "managed" && p.DisableBypassPermissionsMode == "disable" {
			noBypass = true
		}
		if p.DefaultMode != "" {
			modes = append(modes, modeAt{p.DefaultMode, f.path, f.scope})
		}
		var loose []string
		for _, list := range []struct {
			action string
			rules  []string
		}{{"deny", p.Deny}, {"ask", p.Ask}, {"allow", p.Allow}} {
			for i, text := range list.rules {
				sawRule = true
				r := parseClaudeRule(list.action, text, f.path, i)
				if list.action == "allow" {
					if f.scope != "managed" && managedOnly {
						problems = append(problems, PermissionProblem{File: f.path, Level: problemNote, Msg: fmt.Sprintf("%s: not applied: the managed settings allow only their own rules (allowManagedPermissionRulesOnly)", text)})
						continue
					}
					if f.project {
						loose = append(loose, "allow "+text)
					}
				}
				c.rules = append(c.rules, r)
			}
		}
		if !f.project {
			continue
		}
		// A project's mode may only be stricter than the user's own (the
		// managed files' or ~/.claude's): dontAsk, then default and plan,
		// then acceptEdits, then bypassPermissions.
		base := "default"
		for _, m := range modes {
			if m.file != f.path && m.scope != "local" && m.scope != "project" && slices.Contains(claudeModes, m.mode) {
				base = m.mode
				break
			}
		}
		if looserMode(p.DefaultMode, base) {
			loose = append(loose, "defaultMode "+p.DefaultMode)
		}
		l := PermissionLoosening{File: f.path, Summary: strings.Join(loose, "; "), Digest: ruleFilesDigest([]string{f.path}), Loosens: len(loose) > 0}
		if !l.Loosens {
			l.Summary = "deny and ask rules only (they apply untrusted)"
		}
		loosening = append(loosening, l)
		if l.Loosens && (src.Approved == nil || !src.Approved(l)) {
			c.rules = slices.DeleteFunc(c.rules, func(r *claudeRule) bool { return r.file == f.path && r.action == "allow" })
			modes = slices.DeleteFunc(modes, func(m modeAt) bool { return m.file == f.path && looserMode(m.mode, base) })
			problems = append(problems, PermissionProblem{File: f.path, Level: problemNote, Msg: fmt.Sprintf("its allow rules (and a defaultMode less strict than %s) apply once this directory is trusted (zot trust); its deny and ask rules apply now", base)})
		}
	}
	if !sawRule && !src.HostMode {
		return nil, problems, loosening, files
	}
	c.noBypass, c.hostOnly = noBypass, !sawRule
	c.realBase = map[string]string{}
	for _, base := range []string{src.Cwd, src.UserHome} {
		if real, err := filepath.EvalSymlinks(base); base != "" && err == nil {
			c.realBase[base] = real
		}
	}
	// The mode: managed, then local, project, user — the highest wins.
	rank := map[string]int{"managed": 0, "local": 1, "project": 2, "user": 3}
	sort.SliceStable(modes, func(i, j int) bool { return rank[modes[i].scope] < rank[modes[j].scope] })
	c.mode = "default"
	for _, m := range modes {
		if !slices.Contains(claudeModes, m.mode) {
			problems = append(problems, PermissionProblem{File: m.file, Level: problemNever, Msg: fmt.Sprintf("defaultMode %q is not a Claude Code permission mode (%s); zot uses default", m.mode, strings.Join(claudeModes, ", "))})
			continue
		}
		if m.mode == "bypassPermissions" && noBypass {
			problems = append(problems, PermissionProblem{File: m.file, Level: problemNote, Msg: "defaultMode bypassPermissions is disabled by the managed settings"})
			continue
		}
		c.mode, c.modeFrom = m.mode, m.file
		break
	}
	for _, r := range c.rules {
		problems = append(problems, c.check(r)...)
	}
	return c, problems, loosening, files
}

// jsonErrorLine is the line of a JSON syntax error, 0 when unknown.
func jsonErrorLine(data []byte, err error) int {
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset <= int64(len(data)) {
		return 1 + strings.Count(string(data[:se.Offset]), "\n")
	}
	return 0
}

// parseClaudeRule splits "Tool" or "Tool(specifier)".
func parseClaudeRule(action, text, file string, index int) *claudeRule {
	r := &claudeRule{action: action, text: text, file: file, index: index}
	t := strings.TrimSpace(text)
	open := strings.IndexByte(t, '(')
	if open < 0 {
		r.tool = t
		return r
	}
	if !strings.HasSuffix(t, ")") {
		r.tool, r.broken = t[:open], true
		return r
	}
	r.tool, r.spec, r.hasSpec = t[:open], t[open+1:len(t)-1], true
	return r
}

// check reports what keeps a rule from ever matching, or from mattering
// in zot.
func (c *claudeRules) check(r *claudeRule) []PermissionProblem {
	var out []PermissionProblem
	add := func(level, format string, args ...any) {
		out = append(out, PermissionProblem{File: r.file, Level: level, Msg: fmt.Sprintf("%s %s: %s", r.action, r.text, fmt.Sprintf(format, args...))})
	}
	gates, known := claudeTools[r.tool]
	switch {
	case r.broken:
		add(problemNever, "can never match: the ( is not closed with )")
	case strings.HasPrefix(r.tool, "mcp__"):
		if r.hasSpec {
			add(problemNever, "can never match: MCP rules take no (…); write mcp__server or mcp__server__tool")
		}
	case !known:
		hint := ""
		for _, name := range sortedKeys(claudeTools) {
			if strings.EqualFold(name, r.tool) {
				hint = fmt.Sprintf(" (did you mean %s? tool names are case-sensitive)", name)
				break
			}
			if hint == "" && editDistance(strings.ToLower(name), strings.ToLower(r.tool)) <= 2 {
				hint = fmt.Sprintf(" (did you mean %s?)", name)
			}
		}
		add(problemNever, "can never match: Claude Code has no tool %q%s", r.tool, hint)
	case r.tool == "Write" && r.hasSpec:
		add(problemNever, "can never match: Claude Code applies Edit(…) path rules to every tool that writes files, and Write(…) with a path matches nothing; write Edit(%s)", r.spec)
	case gates == "":
		add(problemNote, "not applicable: zot has no %s tool", r.tool)
	case r.tool == "Bash" && r.hasSpec:
		if op := shellOperatorIn(r.spec); op != "" {
			add(problemNever, "can never match: rules are matched against each simple command of a line, so a rule with %q in it matches none; write one rule per command", op)
		} else if i := strings.Index(r.spec, ":*"); i >= 0 && i != len(r.spec)-2 {
			add(problemNever, "`:*` is a prefix only at the end of the rule; here it is matched as the text \":\" and a wildcard")
		}
	case (r.tool == "Read" || r.tool == "Edit") && r.hasSpec:
		switch {
		case strings.HasSuffix(r.spec, ":*"):
			add(problemNever, "can never match: `:*` is Bash's prefix form; for files write a glob such as %s(%s*)", r.tool, strings.TrimSuffix(r.spec, ":*"))
		case strings.Contains(r.spec, `\`):
			add(problemNever, "can never match: paths are written with /, not \\")
		default:
			if _, err := path.Match(strings.ReplaceAll(r.spec, "**", "*"), ""); err != nil {
				add(problemNever, "can never match: %v", err)
			} else if first, ok := strings.CutPrefix(r.spec, "/"); ok && !strings.HasPrefix(first, "/") {
				top := strings.SplitN(first, "/", 2)[0]
				if _, err := os.Stat(filepath.Join(c.cwd, top)); err != nil && top != "" && !strings.ContainsAny(top, "*?[") {
					if _, err := os.Stat("/" + top); err == nil {
						add(problemNever, "probably never matches: a path starting with one / is relative to the project (%s), which has no %s; for the absolute path write %s(/%s)", c.cwd, top, r.tool, r.spec)
					}
				}
			}
		}
	}
	return out
}

// shellOperatorIn finds a shell operator outside quotes in a Bash rule.
func shellOperatorIn(s string) string {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\':
			i++
		default:
			for _, op := range []string{"&&", "||", "$(", ";", "|", "&", ">", "<", "`", "\n"} {
				if strings.HasPrefix(s[i:], op) {
					return op
				}
			}
		}
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// claudeVerdict is the Claude Code source's answer.
type claudeVerdict struct {
	action string
	rule   *claudeRule // nil: the permission mode decided
	why    string      // for a mode's answer, or why zot changed it
}

// claudeCall is what a rule is matched against.
type claudeCall struct {
	tool string // Bash, Read, Edit, Write, Skill, mcp__…
	// texts are the command's readings; rules that allow see only
	// allowTexts (the command as written), deny and ask rules all of them.
	texts, allowTexts []string
	lineVars          string // why an allow cannot stand: words use same-line variables
	// allowEvery: an allow needs a rule for each of allowTexts (the
	// readings of a command with words known only at run time), and
	// none for no text. templates are those words' texts as patterns,
	// for the deny and ask rules some value could match; unknown names
	// them.
	allowEvery bool
	templates  [][]gtok
	unknown    string
	// paths: the path as given and the path the tool touches (symlinks
	// followed); allow rules see only the latter.
	paths     []string
	realPath  string
	skill     string
	editsFile bool // a write or an edit: Edit rules apply
}

// decide answers as Claude Code would: deny rules, then ask, then allow,
// then the mode. While a settings file cannot be read, what it holds is
// unknown — a deny, or a managed file's limits on the mode — so whatever
// would not be denied or asked is asked.
func (c *claudeRules) decide(call claudeCall) claudeVerdict {
	v := c.decideKnown(call)
	if len(c.missing) > 0 && v.action != "deny" && v.action != "ask" {
		return claudeVerdict{action: "ask", why: "a Claude Code settings file cannot be read, so its rules are unknown: " + strings.Join(c.missing, ", ")}
	}
	return v
}

func (c *claudeRules) decideKnown(call claudeCall) claudeVerdict {
	for _, action := range []string{"deny", "ask", "allow"} {
		if action == "ask" && call.templates != nil {
			if v, ok := c.couldMatch(call); ok {
				return v
			}
		}
		if action == "allow" && call.allowEvery {
			if r := c.allowsEvery(call); r != nil {
				if call.lineVars != "" {
					return claudeVerdict{action: "ask", rule: r, why: call.lineVars}
				}
				return claudeVerdict{action: "allow", rule: r}
			}
			break
		}
		for _, r := range c.rules {
			if r.action != action || !c.matches(r, call, action == "allow") {
				continue
			}
			if action == "allow" && call.lineVars != "" {
				return claudeVerdict{action: "ask", rule: r, why: call.lineVars}
			}
			return claudeVerdict{action: action, rule: r}
		}
	}
	mode := c.mode
	from := "Claude Code's default mode"
	if c.modeFrom != "" {
		from = fmt.Sprintf("defaultMode %s in %s", mode, c.modeFrom)
	}
	if m := c.hostMode.Load(); m != nil {
		mode, from = hostFallback(*m), fmt.Sprintf("the session's mode (%s)", *m)
	}
	switch call.tool {
	case "Read", "Skill":
		return claudeVerdict{}
	case "Bash", "Edit", "Write":
	default:
		if !strings.HasPrefix(call.tool, "mcp__") {
			return claudeVerdict{}
		}
	}
	what := map[string]string{"Bash": "Bash commands", "Edit": "file edits", "Write": "file writes"}[call.tool]
	if what == "" {
		what = "MCP tools"
	}
	switch mode {
	case "bypassPermissions":
		return claudeVerdict{action: "allow", why: fmt.Sprintf("no rule matched; %s allows it", from)}
	case string(ModeSandboxedAuto):
		if call.tool == "Bash" || call.editsFile {
			return claudeVerdict{action: "allow", why: fmt.Sprintf("no rule matched; %s runs it in the workspace sandbox", from)}
		}
	case "dontAsk":
		return claudeVerdict{action: "deny", why: fmt.Sprintf("no rule allows it, and %s denies what it would ask about", from)}
	case "acceptEdits":
		if g := c.guardedAt(call.realPath); call.editsFile && g != "" {
			return claudeVerdict{action: "ask", why: fmt.Sprintf("%s accepts edits in the working directory, but never of %s, which programs outside zot read or run (git, validators, hooks, the rules themselves)", from, g)}
		}
		if call.editsFile && underDir(call.realPath, c.cwd) {
			return claudeVerdict{action: "allow", why: fmt.Sprintf("no rule matched; %s accepts edits in the working directory", from)}
		}
	}
	return claudeVerdict{action: "ask", why: fmt.Sprintf("no Claude Code rule allows it, and %s asks about %s", from, what)}
}

// hostFallback is what a zot mode gives the calls no rule decides, in the
// words of decideKnown: Claude Code's mode of the same meaning. Plan mode
// runs what it runs without asking — its mode gate refuses what plan mode
// does not run and confines commands to the read-only sandbox — and
// sandboxed-auto runs commands and edits, confined, and asks before MCP
// tools.
func hostFallback(m Mode) string {
	switch m {
	case ModePlan:
		return "bypassPermissions"
	case ModeSandboxedAuto:
		return string(ModeSandboxedAuto)
	case "":
		return "default"
	}
	return m.Claude()
}

// says whether the source has a say about calls of tool ("Bash", "Edit",
// "mcp__…") now: it holds rules (or a file it cannot read), or the host's
// mode asks or refuses some of them. A source there for an auto or plan
// mode alone has none, so a session without rules runs as it would
// without the source.
func (c *claudeRules) says(tool string) bool {
	if c == nil {
		return false
	}
	if !c.hostOnly {
		return true
	}
	m := c.hostMode.Load()
	if m == nil {
		return false
	}
	switch hostFallback(*m) {
	case "bypassPermissions":
		return false
	case string(ModeSandboxedAuto):
		return strings.HasPrefix(tool, "mcp__")
	}
	return true
}

// couldMatch finds a deny or ask rule that some value of the command's
// unknown words would match: the command is then an ask.
func (c *claudeRules) couldMatch(call claudeCall) (claudeVerdict, bool) {
	for _, action := range []string{"deny", "ask"} {
		for _, r := range c.rules {
			if r.action != action {
				continue
			}
			if text, ok := claudeCould(r, call.templates); ok {
				return claudeVerdict{action: "ask", rule: r, why: fmt.Sprintf("%s, and as `%s` it would match this %s rule", call.unknown, strings.ReplaceAll(text, unknownByte, "…"), action)}, true
			}
		}
	}
	return claudeVerdict{}, false
}

// allowsEvery is the allow rule of the first of allowTexts when every one
// of them has one, else nil.
func (c *claudeRules) allowsEvery(call claudeCall) *claudeRule {
	var first *claudeRule
	for _, t := range call.allowTexts {
		one := call
		one.allowTexts = []string{t}
		i := slices.IndexFunc(c.rules, func(r *claudeRule) bool { return r.action == "allow" && c.matches(r, one, true) })
		if i < 0 {
			return nil
		}
		if first == nil {
			first = c.rules[i]
		}
	}
	return first
}

// guardedAt is the guarded path that covers p, or "".
func (c *claudeRules) guardedAt(p string) string {
	if c.guarded == nil {
		return ""
	}
	return c.guarded(p)
}

func underDir(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// matches says whether rule r covers the call.
func (c *claudeRules) matches(r *claudeRule, call claudeCall, allow bool) bool {
	if r.broken {
		return false
	}
	switch {
	case strings.HasPrefix(r.tool, "mcp__"):
		if r.hasSpec || !strings.HasPrefix(call.tool, "mcp__") {
			return false
		}
		if call.tool == r.tool {
			return true
		}
		if server, ok := strings.CutSuffix(r.tool, "__*"); ok {
			return strings.HasPrefix(call.tool, server+"__")
		}
		// mcp__server: every tool of that server.
		return strings.Count(r.tool, "__") == 1 && strings.HasPrefix(call.tool, r.tool+"__")
	case r.tool == "Bash":
		if call.tool != "Bash" {
			return false
		}
		if !r.hasSpec || r.spec == "*" || r.spec == "" {
			return true
		}
		texts := call.texts
		if allow {
			texts = call.allowTexts
		}
		for _, t := range texts {
			if claudeBashMatch(r.spec, t) {
				return true
			}
		}
		return false
	case r.tool == "Read" || r.tool == "Edit":
		if r.tool == "Read" && call.tool != "Read" || r.tool == "Edit" && !call.editsFile {
			return false
		}
		if !r.hasSpec || r.spec == "" {
			return true
		}
		paths := call.paths
		if allow {
			paths = []string{call.realPath}
		}
		for _, p := range paths {
			if c.pathMatch(r.spec, p) {
				return true
			}
		}
		return false
	case r.tool == "Write":
		return !r.hasSpec && call.tool == "Write"
	case r.tool == "Skill":
		if call.tool != "Skill" {
			return false
		}
		if !r.hasSpec || r.spec == "*" {
			return true
		}
		if p, ok := strings.CutSuffix(r.spec, ":*"); ok {
			return call.skill == p || strings.HasPrefix(call.skill, p+":")
		}
		return call.skill == r.spec
	}
	return false
}

// claudeBashMatch matches a Bash rule's specifier against one command's
// text: prefix:* (the prefix, then the end or a word boundary), a
// wildcard pattern (* any run of characters; a final " *" may also match
// nothing), or the exact text.
func claudeBashMatch(spec, text string) bool {
	if prefix, ok := strings.CutSuffix(spec, ":*"); ok && !strings.Contains(prefix, "*") {
		if text == prefix {
			return true
		}
		if !strings.HasPrefix(text, prefix) || prefix == "" {
			return prefix == ""
		}
		last := rune(prefix[len(prefix)-1])
		next := rune(text[len(prefix)])
		return unicode.IsSpace(next) || !(unicode.IsLetter(last) || unicode.IsDigit(last) || last == '_')
	}
	if !strings.Contains(strings.ReplaceAll(spec, `\*`, ""), "*") {
		return strings.ReplaceAll(spec, `\*`, "*") == text
	}
	if base, ok := strings.CutSuffix(spec, " *"); ok && globText(base, text) {
		return true
	}
	return globText(spec, text)
}

// globText matches text against a pattern where * is any run of
// characters and \* a literal *.
func globText(pattern, text string) bool {
	var parts []string
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch {
		case pattern[i] == '\\' && i+1 < len(pattern) && pattern[i+1] == '*':
			b.WriteByte('*')
			i++
		case pattern[i] == '*':
			parts = append(parts, b.String())
			b.Reset()
		default:
			b.WriteByte(pattern[i])
		}
	}
	parts = append(parts, b.String())
	return rpGlob{parts: parts}.match(text)
}

// pathMatch matches a Read or Edit specifier, gitignore style, against an
// absolute path: //abs is absolute, ~/ the home directory, /p the project
// (the working directory), p or ./p from the working directory. A pattern
// without a / (but at its end) matches at any depth below its base; a
// pattern that matches a directory matches everything in it.
func (c *claudeRules) pathMatch(spec, p string) bool {
	base, pat := c.cwd, spec
	switch {
	case strings.HasPrefix(spec, "//"):
		base, pat = "/", spec[2:]
	case strings.HasPrefix(spec, "~/"):
		if c.home == "" {
			return false
		}
		base, pat = c.home, spec[2:]
	case strings.HasPrefix(spec, "/"):
		pat = spec[1:]
	default:
		pat = strings.TrimPrefix(spec, "./")
	}
	// The project or home reached through a link is the directory the
	// link leads to, and a path may name it either way.
	if real := c.realBase[base]; real != "" && real != base && c.pathMatchUnder(real, pat, spec, p) {
		return true
	}
	return c.pathMatchUnder(base, pat, spec, p)
}

// pathMatchUnder matches p against pat, a specifier's pattern taken from
// base.
func (c *claudeRules) pathMatchUnder(base, pat, spec, p string) bool {
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return false
	}
	pat = strings.TrimSuffix(pat, "/")
	if pat == "" || pat == "**" {
		return true
	}
	anywhere := !strings.Contains(pat, "/") && !strings.HasPrefix(spec, "/") && !strings.HasPrefix(spec, "~/")
	segs := strings.Split(filepath.ToSlash(rel), "/")
	patSegs := strings.Split(pat, "/")
	// The path or one of its directories.
	for n := len(segs); n >= 1; n-- {
		if anywhere {
			for start := 0; start < n; start++ {
				if globSegments(patSegs, segs[start:n]) {
					return true
				}
			}
		} else if globSegments(patSegs, segs[:n]) {
			return true
		}
	}
	return false
}
