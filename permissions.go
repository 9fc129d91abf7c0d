package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The permission rules users already wrote — Claude Code's settings
// permissions (permissions_claude.go) and runok.yml (permissions_runok.go)
// — and the command validators (validate.go) are one gate. Each source
// decides as its own system does; across sources the strictest answer
// wins: any deny denies, else any ask asks, else the call runs. A bash
// line is judged per simple command the splitter finds: a line runs
// without asking only when every command of it is allowed by every source
// that has a say. Files and problems are reported naming the file (and the
// line); a file zot cannot read makes what it would allow an ask. A
// project's own files loosen nothing (allow rules, defaults, definitions)
// until the user trusted the directory; their deny and ask rules apply at
// once. With no rules file and no validator, nothing here runs.

// Levels of a problem with the rules.
const (
	problemError = "error" // a file or rule zot cannot use: what it would allow is asked
	problemNever = "never" // a rule that is read and can never match
	problemNote  = "note"  // not applied, or not applicable in zot
)

// PermissionProblem is something wrong with, or left out of, the rules.
type PermissionProblem struct {
	File  string `json:"file,omitempty"`
	Line  int    `json:"line,omitempty"`
	Level string `json:"level"`
	Msg   string `json:"message"`
}

func (p PermissionProblem) String() string {
	where := p.File
	if p.Line > 0 {
		where = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	if where == "" {
		return p.Msg
	}
	return where + ": " + p.Msg
}

// PermissionLoosening is one project rules file as trust covers it
// (wire.go makes it a trust entry): what it would loosen, which applies
// only once the user trusted it, and the digest of its whole content (with
// what it extends), so that any change — a deny removed too — is a change
// of what the user trusted.
type PermissionLoosening struct {
	File    string
	Summary string
	Digest  string
	// Loosens says the file holds something trust withholds: an allow
	// rule, a mode or default less strict than the user's own, a
	// definition. A file without it only tightens, and needs no trust
	// until the directory was trusted for something.
	Loosens bool
}

// ruleFilesDigest is the SHA-256 of the content of files, in order; a
// file that cannot be read counts by why.
func ruleFilesDigest(files []string) string {
	h := sha256.New()
	for _, f := range files {
		b, err := readUntrustedFile(f, 4<<20)
		if err != nil {
			b = []byte("unreadable: " + err.Error())
		}
		fmt.Fprintf(h, "%d\n", len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// PermissionSources says where the rules are read from; wire.go fills it.
type PermissionSources struct {
	Cwd        string // the project directory, absolute
	UserHome   string // the user's home directory; "" when unknown
	ConfigHome string // $XDG_CONFIG_HOME, else ~/.config: runok's global directory
	ManagedDir string // Claude Code's managed settings (/etc/claude-code)
	// UserOwns says a file in the project is the user's own ($ZOT_HOME,
	// ~/.claude), not the repository's.
	UserOwns func(path string) bool
	// Approved says the user trusted a project file's loosening rules as
	// they are now; nil: none is.
	Approved func(PermissionLoosening) bool
	// Guarded names, for a path (absolute, symlinks resolved), the path
	// programs outside zot read or run that covers it (.git, .zot, the
	// rule files …): acceptEdits never allows an edit there. nil: none.
	Guarded func(real string) string
	// HostMode: the host sets the zot mode for calls no rule decides
	// (SetMode), so the Claude Code source is there with no settings file
	// too; it has a say only where the mode asks or refuses something.
	HostMode bool
}

// DefaultPermissionSources are the places for a session in cwd.
func DefaultPermissionSources(cwd string) PermissionSources {
	home, _ := os.UserHomeDir()
	src := PermissionSources{Cwd: cwd, UserHome: home, ConfigHome: os.Getenv("XDG_CONFIG_HOME"), ManagedDir: claudeManagedDir}
	if src.ConfigHome == "" && home != "" {
		src.ConfigHome = filepath.Join(home, ".config")
	}
	if d := os.Getenv(claudeManagedDirEnv); d != "" {
		src.ManagedDir = d
	}
	return src
}

// PermissionRules is every rule source that applies in a directory.
type PermissionRules struct {
	claude    *claudeRules
	runok     *runokRules
	Files     []string
	Problems  []PermissionProblem
	Loosening []PermissionLoosening
}

// LoadPermissionRules reads the Claude Code settings and runok.yml files.
func LoadPermissionRules(src PermissionSources) *PermissionRules {
	p := &PermissionRules{}
	var cp, rp []PermissionProblem
	var cl, rl []PermissionLoosening
	var cf, rf []string
	p.claude, cp, cl, cf = loadClaudeRules(src)
	p.runok, rp, rl, rf = loadRunokRules(src)
	p.Problems = append(cp, rp...)
	p.Loosening = append(cl, rl...)
	p.Files = append(cf, rf...)
	return p
}

// SettingsMode is the settings' defaultMode that applies (managed, then
// local, project, user; a project's only as trust allows) and the file
// that set it; "" when none does, or no Claude Code source applies.
func (p *PermissionRules) SettingsMode() (mode, file string) {
	if p == nil || p.claude == nil || p.claude.modeFrom == "" {
		return "", ""
	}
	return p.claude.mode, p.claude.modeFrom
}

// HasClaudeRules says whether a Claude Code settings file holds a rule
// (or cannot be read): Claude Code's default mode then asks about
// commands and edits no rule allows.
func (p *PermissionRules) HasClaudeRules() bool {
	return p != nil && p.claude != nil && !p.claude.hostOnly
}

// SetMode sets the zot mode for calls no rule decides, for this session,
// over the settings' defaultMode; the rules themselves still decide
// first. It needs rules loaded with HostMode, and refuses auto where the
// managed settings disable bypassPermissions. It is safe while calls are
// judged.
func (p *PermissionRules) SetMode(mode Mode) error {
	switch {
	case p == nil || p.claude == nil:
		return errors.New("modes are not on for this session")
	case mode == ModeAuto && p.claude.noBypass:
		return errors.New("auto is disabled by the managed settings (disableBypassPermissionsMode)")
	}
	if _, err := ParseMode(string(mode)); err != nil {
		return err
	}
	p.claude.hostMode.Store(&mode)
	return nil
}

// BypassDisabled says whether the managed settings disable
// bypassPermissions (SetMode refuses auto then).
func (p *PermissionRules) BypassDisabled() bool {
	return p != nil && p.claude != nil && p.claude.noBypass
}

// Active says whether any rule source has a say about commands: without
// one, the gate is exactly the validators'.
func (p *PermissionRules) Active() bool {
	return p != nil && (p.runok != nil || p.claude.says("Bash"))
}

// StartupProblems are the problems worth a line when a session starts:
// files and rules zot cannot use, rules that can never match, and what it
// leaves out — the ignored sandbox settings as one line. Rules not
// applicable in zot (WebFetch) wait for zot validate --check.
func (p *PermissionRules) StartupProblems() []PermissionProblem {
	if p == nil {
		return nil
	}
	var out []PermissionProblem
	sandbox := 0
	for _, pr := range p.Problems {
		switch {
		case pr.Level == problemNote && strings.Contains(pr.Msg, "not applicable"):
		case pr.Level == problemNote && strings.Contains(pr.Msg, runokSandboxIgnored):
			sandbox++
		default:
			out = append(out, pr)
		}
	}
	if sandbox > 0 {
		out = append(out, PermissionProblem{Level: problemNote, Msg: fmt.Sprintf("runok: %d sandbox setting(s) %s (zot validate --check lists them)", sandbox, runokSandboxIgnored)})
	}
	return out
}

// ruleCommand is one simple command as the rules see it.
type ruleCommand struct {
	words []string // as written, quotes removed: what allow rules see
	raw   string   // its text in the line, when it is not unwrapped from another
	cwd   string
	// others are further readings deny and ask rules see: the command's
	// base name in place of its path, same-line variables substituted.
	others [][]string
	// lineVars, when set, says why no rule may allow it: its words use
	// variables the line itself assigns.
	lineVars string
	// shape marks the words known only at run time
	// (permissions_unknown.go).
	shape shapedCommand
}

// splitForRules is where the gate reads a line: the splitter's simple
// commands, each with the readings the rules match.
func splitForRules(line string, sc ShellContext) (ShellSplit, []ruleCommand) {
	split := SplitCommandLine(line, sc)
	out := make([]ruleCommand, 0, len(split.Commands))
	for _, c := range split.Commands {
		out = append(out, ruleCommandOf(c, line))
	}
	return split, out
}

func ruleCommandOf(c ShellCommand, line string) ruleCommand {
	rc := ruleCommand{words: c.Words, cwd: c.Cwd, shape: shapedCommand{name: c.Name, words: c.Words, shapes: c.Shapes, open: c.Open}}
	if c.Via == "" {
		rc.raw = c.Raw
	}
	if len(c.Words) > 0 && c.Name != c.Words[0] {
		rc.others = append(rc.others, append([]string{c.Name}, c.Words[1:]...))
	}
	if c.Exact {
		return rc
	}
	names := lineVariables(c.Words, c.Env, line)
	if len(names) == 0 {
		return rc
	}
	rc.lineVars = fmt.Sprintf("its words use $%s, which this line assigns, so no rule allows it on the words as written", strings.Join(names, ", $"))
	joined, split := substituteVars(c.Words, c.Env)
	rc.others = append(rc.others, joined, split)
	return rc
}

// lineVariables are the variables the words expand that the line itself
// assigns (VAR=…, for VAR in, read VAR, …): their values are not what the
// words say. It reads the line by itself, erring towards "assigned"; once
// the splitter marks such words itself (issue 22 §4), that mark replaces
// it.
func lineVariables(words []string, env map[string]string, line string) []string {
	var out []string
	for _, w := range words {
		for i := 0; i < len(w); i++ {
			if w[i] != '$' {
				continue
			}
			j := i + 1
			if j < len(w) && w[j] == '{' {
				j++
			}
			k := j
			for k < len(w) && isNameByte(w[k]) && !(k == j && w[k] >= '0' && w[k] <= '9') {
				k++
			}
			name := w[j:k]
			if name == "" || slices.Contains(out, name) {
				continue
			}
			if _, ok := env[name]; ok || assignsName(line, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// assignsName says whether name stands in the line as a word of its own
// and not only as an expansion ($name, ${name}): a likely assignment.
func assignsName(line, name string) bool {
	for i := 0; ; {
		j := strings.Index(line[i:], name)
		if j < 0 {
			return false
		}
		at := i + j
		end := at + len(name)
		before := byte(' ')
		if at > 0 {
			before = line[at-1]
		}
		after := byte(' ')
		if end < len(line) {
			after = line[end]
		}
		if before != '$' && before != '{' && !isNameByte(before) && !isNameByte(after) {
			return true
		}
		i = at + 1
	}
}

// substituteVars puts the values the line assigned in place of $VAR and
// ${VAR}: once kept as one word, once split at blanks as an unquoted
// expansion would be.
func substituteVars(words []string, env map[string]string) (joined, split []string) {
	for _, w := range words {
		for _, name := range sortedKeys(env) {
			w = strings.ReplaceAll(w, "${"+name+"}", env[name])
			for i := strings.Index(w, "$"+name); i >= 0; i = strings.Index(w, "$"+name) {
				end := i + 1 + len(name)
				if end < len(w) && isNameByte(w[end]) {
					break
				}
				w = w[:i] + env[name] + w[end:]
			}
		}
		joined = append(joined, w)
		split = append(split, strings.Fields(w)...)
	}
	return joined, split
}

// claudeCodeSource names Claude Code's rules among the rule sources.
const claudeCodeSource = "claude-code"

// RuleAnswer is one rule source's answer about one command of a line (an
// index into the report's Commands), or about a tool call (-1).
type RuleAnswer struct {
	Source  string       `json:"source"` // claude-code or runok
	Command int          `json:"command"`
	Status  GateDecision `json:"status"`
	File    string       `json:"file,omitempty"`
	Line    int          `json:"line,omitempty"`
	// Rule is the rule that decided as written; "" when none matched and
	// the source's default decided.
	Rule          string `json:"rule,omitempty"`
	Message       string `json:"message,omitempty"`
	FixSuggestion string `json:"fix_suggestion,omitempty"`
	// Note says why the answer is not the rule's own: a default, a when
	// clause zot does not evaluate, a missing file, same-line variables.
	Note string `json:"note,omitempty"`
}

// commandAnswers asks each rule source about one command; budget is the
// line's (newRuleBudget).
func (p *PermissionRules) commandAnswers(rc ruleCommand, i int, sc ShellContext, sourcing bool, budget *ruleBudget) []RuleAnswer {
	var out []RuleAnswer
	cwd := rc.cwd
	if cwd == "" {
		cwd = sc.Cwd
	}
	if p.claude.says("Bash") && len(rc.words) > 0 {
		call := claudeCall{tool: "Bash", lineVars: rc.lineVars}
		call.allowTexts = []string{strings.Join(rc.words, " ")}
		if rc.raw != "" && rc.raw != call.allowTexts[0] {
			call.allowTexts = append(call.allowTexts, rc.raw)
		}
		call.texts = append([]string(nil), call.allowTexts...)
		for _, o := range rc.others {
			call.texts = append(call.texts, strings.Join(o, " "))
		}
		if c := rc.shape; c.unknown() {
			// An allow must hold for every value; a deny or ask rule
			// that some value could match asks.
			call.allowTexts, call.allowEvery = c.sentinels(), true
			call.unknown = c.unknownWhat()
			call.templates = c.templates()
			if c.name != c.words[0] {
				c.words = append([]string{c.name}, c.words[1:]...)
				call.templates = append(call.templates, c.templates()...)
			}
		}
		out = append(out, claudeAnswer(p.claude.decide(call), i))
	}
	if p.runok != nil && len(rc.words) > 0 {
		split := func(line, cwd string) ([]ruleCommand, []string) {
			sub := sc
			sub.Cwd = cwd
			s, cmds := splitForRules(line, sub)
			return cmds, s.Unfollowed
		}
		v := p.runok.verdict(rc.words, cwd, split, sourcing, budget)
		for _, o := range rc.others {
			// Other readings count only where a deny or ask rule matched.
			if w := p.runok.verdict(o, cwd, split, sourcing, budget); w.rule != nil && (w.action == "deny" || w.action == "ask") {
				v = stricter(v, w)
			}
		}
		if c := rc.shape; c.unknown() {
			eval := func(words []string) runokVerdict {
				w := p.runok.verdict(words, cwd, split, sourcing, budget)
				if c.name != words[0] {
					// The base name is a reading deny and ask rules see.
					o := p.runok.verdict(append([]string{c.name}, words[1:]...), cwd, split, sourcing, budget)
					if o.rule != nil && (o.action == "deny" || o.action == "ask") {
						w = stricter(w, o)
					}
				}
				return w
			}
			v = p.runok.verdictShaped(c, cwd, v, eval)
		}
		if v.action == "allow" && rc.lineVars != "" {
			v.action, v.byZot = "ask", rc.lineVars
		}
		if v.action != "" {
			out = append(out, runokAnswer(v, i))
		}
	}
	return out
}

func claudeAnswer(v claudeVerdict, i int) RuleAnswer {
	a := RuleAnswer{Source: claudeCodeSource, Command: i, Status: GateDecision(v.action), Note: v.why}
	if v.action == "" {
		a.Status = DecisionAllow
	}
	if r := v.rule; r != nil {
		a.File, a.Rule = r.file, r.action+" "+r.text
	}
	return a
}

func runokAnswer(v runokVerdict, i int) RuleAnswer {
	a := RuleAnswer{Source: "runok", Command: i, Status: GateDecision(v.action), Message: v.message, FixSuggestion: v.fix, Note: v.byZot}
	switch {
	case v.rule != nil:
		a.File, a.Line, a.Rule = v.rule.src.file, v.rule.src.line, v.rule.String()
	case v.deflt != nil:
		a.File, a.Line, a.Note = v.deflt.file, v.deflt.line, "no rule matched; defaults.action is "+v.deflt.text
	}
	return a
}

// toolAnswer asks the rules about a call of a tool other than bash: Read
// rules for read, grep, find and ls, Edit (and bare Write) rules for write
// and edit, MCP rules for MCP tools, Skill rules for skill. ok is false
// when no rule source has a say.
func (p *PermissionRules) toolAnswer(call ToolCall, cwd string) (RuleAnswer, bool) {
	if p == nil || p.claude == nil {
		return RuleAnswer{}, false
	}
	if tool := map[string]string{ToolRead: "Read", ToolWrite: "Edit", ToolEdit: "Edit", ToolSkill: "Skill"}[call.Name]; !p.claude.says(cmp.Or(tool, call.Name)) {
		return RuleAnswer{}, false
	}
	var cc claudeCall
	switch {
	case call.Name == ToolRead || call.Name == ToolWrite || call.Name == ToolEdit:
		// A call its tool will refuse is still judged by the path it
		// names: a deny rule denies it whatever else is wrong with it.
		pth := builtinPath(call)
		if pth == "" {
			return RuleAnswer{}, false // the tool refuses these arguments itself
		}
		abs := pth
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(cwd, abs)
		}
		abs = filepath.Clean(abs)
		real, err := followPath(abs)
		if err != nil {
			// Which file the path names is unknown, and so are the
			// rules that cover it.
			return claudeAnswer(claudeVerdict{action: "ask", why: fmt.Sprintf("zot cannot tell which file %s is (%v), so which Claude Code rules cover it is unknown", pth, err)}, -1), true
		}
		cc = claudeCall{tool: map[string]string{ToolRead: "Read", ToolWrite: "Write", ToolEdit: "Edit"}[call.Name], paths: []string{abs, real}, realPath: real, editsFile: call.Name != ToolRead}
	case call.Name == ToolGrep || call.Name == ToolFind || call.Name == ToolLs:
		// A search reads where it starts: Read rules judge that path here,
		// and each path beneath it as the walk meets it (ReadVerdict).
		root, ok := searchRoot(call)
		if !ok {
			return RuleAnswer{}, false // the tool refuses these arguments itself
		}
		abs := filepath.Clean(absPath(cwd, root))
		real, err := followPath(abs)
		if err != nil {
			return claudeAnswer(claudeVerdict{action: "ask", why: fmt.Sprintf("zot cannot tell which directory %s is (%v), so which Claude Code rules cover it is unknown", root, err)}, -1), true
		}
		cc = claudeCall{tool: "Read", paths: []string{abs, real}, realPath: real}
	case call.Name == ToolSkill:
		a, _ := ParseSkillArgs(call.Args)
		cc = claudeCall{tool: "Skill", skill: a.Name}
	case strings.HasPrefix(call.Name, "mcp__"):
		cc = claudeCall{tool: call.Name}
	default:
		return RuleAnswer{}, false
	}
	v := p.claude.decide(cc)
	if v.action == "" {
		return RuleAnswer{}, false
	}
	return claudeAnswer(v, -1), true
}

// ReadVerdict is what the rules say of reading one path a search tool
// (grep, find, ls) meets beneath where it started: named as the model
// would reach it, real with symlinks resolved (ToolEnv.ReadRule).
func (p *PermissionRules) ReadVerdict(named, real string) PathVerdict {
	if p == nil || p.claude == nil {
		return PathAllowed
	}
	switch p.claude.decide(claudeCall{tool: "Read", paths: []string{named, real}, realPath: real}).action {
	case "deny":
		return PathDenied
	case "ask":
		return PathAsk
	}
	return PathAllowed
}

// explainRule is a rule answer as a person or the model reads it.
func explainRule(a RuleAnswer) string {
	var parts []string
	switch {
	case a.Rule != "" && a.Line > 0:
		parts = append(parts, fmt.Sprintf("%s rule %s (%s:%d)", a.Source, a.Rule, a.File, a.Line))
	case a.Rule != "":
		parts = append(parts, fmt.Sprintf("%s rule %s (%s)", a.Source, a.Rule, a.File))
	case a.File != "" && a.Line > 0:
		parts = append(parts, fmt.Sprintf("%s (%s:%d)", a.Source, a.File, a.Line))
	default:
		parts = append(parts, a.Source)
	}
	if a.Note != "" {
		parts[0] += ": " + a.Note
	}
	if a.Message != "" {
		parts = append(parts, a.Message)
	}
	if a.FixSuggestion != "" {
		parts = append(parts, "suggested fix: "+a.FixSuggestion)
	}
	return validatorText(strings.Join(parts, "\n"))
}

// PermissionGate is the one gate of the validators and the rules. Bash
// lines go to CheckCommandLine; read, write, edit, skill and MCP calls to
// the Claude Code rules. It belongs after the extension interception gate
// and the hooks, so it sees the call as they left it.
func PermissionGate(vs []Validator, rules *PermissionRules, cwd string) ToolGate {
	return func(ctx context.Context, call ToolCall) GateResult {
		if call.Name != ToolBash {
			a, ok := rules.toolAnswer(call, cwd)
			if !ok {
				return GateResult{}
			}
			return ValidationReport{Rules: []RuleAnswer{a}, Decision: GateDecision(a.Status)}.gateResult()
		}
		if len(vs) == 0 && !rules.Active() {
			return GateResult{}
		}
		// Read the command exactly as the bash tool will: duplicate or
		// differently cased keys must not show the gate another command.
		args, err := ParseBashArgs(call.Args)
		if err != nil {
			return GateResult{} // the tool refuses these arguments itself
		}
		return CheckCommandLineRules(ctx, vs, rules, args.Command, cwd).gateResult()
	}
}
