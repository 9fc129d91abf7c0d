package main

// Prompt templates: markdown files that the user sends by name — /review
// src/ — in the format of Claude Code's custom slash commands: optional
// front matter, then a body with $ARGUMENTS, $1…$9, @path references and
// !`command` lines. A template's commands run as bash tool calls through
// the session's gates, and only from a directory the user answers for.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

const (
	promptMaxFileBytes = 1 << 20
	promptMaxFiles     = 1000 // templates read from one directory
	promptMaxDepth     = 8    // namespace levels under one directory
	promptMaxOutput    = 64 << 10
)

// PromptTemplate is one template file.
type PromptTemplate struct {
	Name         string // "review", "frontend:component", "plugin:command"
	Description  string
	ArgumentHint string
	Model        string
	AllowedTools []string // kept for display: zot does not restrict tools for a template
	Source       string   // the directory's label: ".zot/prompts", "plugin:NAME", …
	Path         string
	Body         string
	// Owned says that its !`command` lines may run without asking whether
	// the project is trusted: the file is in the user's own directories
	// or in a plugin the user installed.
	Owned bool
}

// PromptRoot is one directory searched for templates. Namespace prefixes
// the names of its templates ("plugin:"); Owned marks a directory the
// user answers for (see PromptTemplate.Owned).
type PromptRoot struct {
	Dir, Label, Namespace string
	Owned                 bool
}

// promptRoots are the directories searched, most specific first: the
// first template found with a name wins. extra (the plugins' commands/)
// come last. A directory that is two of them (zot run in ~) is searched
// once, and is the user's own.
func promptRoots(home, cwd string, extra []PromptRoot) []PromptRoot {
	user, _ := os.UserHomeDir()
	roots := []PromptRoot{
		{Dir: filepath.Join(cwd, ".zot", "prompts"), Label: ".zot/prompts"},
		{Dir: filepath.Join(cwd, ".claude", "commands"), Label: ".claude/commands"},
		{Dir: filepath.Join(home, "prompts"), Label: "$ZOT_HOME/prompts", Owned: true},
	}
	if user != "" {
		roots = append(roots, PromptRoot{Dir: filepath.Join(user, ".claude", "commands"), Label: "~/.claude/commands", Owned: true})
	}
	roots = append(roots, extra...)
	owned := map[string]bool{}
	for _, r := range roots {
		owned[filepath.Clean(r.Dir)] = owned[filepath.Clean(r.Dir)] || r.Owned
	}
	var out []PromptRoot
	seen := map[string]bool{}
	for _, r := range roots {
		d := filepath.Clean(r.Dir)
		if seen[d] {
			continue
		}
		seen[d] = true
		r.Owned = owned[d]
		out = append(out, r)
	}
	return out
}

// LoadPrompts finds the templates, sorted by name. A file that cannot be
// read or parsed, or whose name cannot be typed as a command, is reported
// to log in one line naming it, and skipped.
func LoadPrompts(home, cwd string, extra []PromptRoot, log func(string, ...any)) []PromptTemplate {
	if log == nil {
		log = func(string, ...any) {}
	}
	var out []PromptTemplate
	seen := map[string]bool{}
	for _, r := range promptRoots(home, cwd, extra) {
		for _, t := range loadPromptRoot(r, home, log) {
			if !seen[t.Name] {
				seen[t.Name] = true
				out = append(out, t)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// promptNamePart is what one part of a template's name may hold: what a
// user can type after / without quoting.
var promptNamePart = lazyRegexp(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// loadPromptRoot reads every *.md under r.Dir; a subdirectory is a
// namespace (frontend/component.md is frontend:component). Symbolic links
// are followed for files and for the root, not for subdirectories, so a
// loop cannot hold the walk. A template of a directory that is not the
// user's own is the repository's text: its file is opened as the file
// tools open one (OpenProjectFile), so a symlink out of r.Dir or into
// $ZOT_HOME (home) does not make another file its body.
func loadPromptRoot(r PromptRoot, home string, log func(string, ...any)) []PromptTemplate {
	root := r.Dir
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	} else if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var out []PromptTemplate
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			log("prompt templates in %s: %v", path, err)
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if path != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if strings.Count(rel, string(filepath.Separator)) >= promptMaxDepth {
				log("skipped prompt templates under %s: nested deeper than %d directories", path, promptMaxDepth)
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(d.Name(), ".md") {
			return nil
		}
		shown := filepath.Join(r.Dir, rel)
		if len(out) == promptMaxFiles {
			log("skipped prompt template %s: %s holds more than %d templates", shown, r.Dir, promptMaxFiles)
			return filepath.SkipAll
		}
		parts := strings.Split(filepath.ToSlash(strings.TrimSuffix(rel, ".md")), "/")
		for _, p := range parts {
			if !promptNamePart().MatchString(p) {
				log("skipped prompt template %s: %q cannot be typed as a command name (use letters, digits, - _ and .)", shown, p)
				return nil
			}
		}
		var t PromptTemplate
		if r.Owned {
			t, err = readPromptFile(shown)
		} else {
			t, err = readProjectPromptFile(root, shown, home)
		}
		if err != nil {
			log("skipped prompt template %v", err)
			return nil
		}
		t.Name = r.Namespace + strings.Join(parts, ":")
		t.Source, t.Owned = r.Label, r.Owned
		out = append(out, t)
		return nil
	})
	if err != nil {
		log("prompt templates in %s: %v", r.Dir, err)
	}
	return out
}

// readProjectPromptFile is readPromptFile for a template of the project's
// directory root: a regular file beneath root, never in $ZOT_HOME.
func readProjectPromptFile(root, path, home string) (PromptTemplate, error) {
	f, info, err := OpenProjectFile(root, path, []string{home})
	if err != nil {
		return PromptTemplate{}, fmt.Errorf("%s: %v", path, err)
	}
	if f == nil {
		return PromptTemplate{}, wantRegular(path, info)
	}
	defer f.Close()
	data, err := readUntrustedOpen(f, path, promptMaxFileBytes)
	if err != nil {
		return PromptTemplate{}, err
	}
	return parsePrompt(path, data)
}

// readPromptFile reads and parses one template; the error names the file.
func readPromptFile(path string) (PromptTemplate, error) {
	data, err := readUntrustedFile(path, promptMaxFileBytes)
	if err != nil {
		return PromptTemplate{}, err
	}
	return parsePrompt(path, data)
}

// parsePrompt reads a template: optional front matter (the skills'
// parser), then the body. Without a description, the body's first line
// is one.
func parsePrompt(path string, data []byte) (PromptTemplate, error) {
	t := PromptTemplate{Path: path}
	if !utf8.Valid(data) {
		line := 1 + strings.Count(string(data[:skillBadUTF8At(data)]), "\n")
		return t, &skillError{path, line, "not UTF-8 text; save the file as UTF-8"}
	}
	text := strings.TrimPrefix(string(data), "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(text, "\n")
	body := lines
	if strings.TrimRight(lines[0], " \t") == "---" {
		end := -1
		for i := 1; i < len(lines); i++ {
			if strings.TrimRight(lines[i], " \t") == "---" {
				end = i
				break
			}
		}
		if end < 0 {
			return t, &skillError{path, 1, "the front matter opened here is never closed; add a --- line after it"}
		}
		fm, keyLines, err := parseFrontMatter(promptHintQuoted(lines[1:end]), 2)
		if err != nil {
			err.(*skillError).path = path
			return t, err
		}
		str := func(key string) (string, error) {
			v, ok := fm[key]
			if !ok {
				return "", nil
			}
			s, ok := v.(string)
			if !ok {
				return "", &skillError{path, keyLines[key], fmt.Sprintf("%q must be text, not a list or a map", key)}
			}
			return strings.TrimSpace(s), nil
		}
		var err2 error
		for _, f := range []struct {
			key string
			dst *string
		}{{"description", &t.Description}, {"argument-hint", &t.ArgumentHint}, {"model", &t.Model}} {
			if *f.dst, err2 = str(f.key); err2 != nil {
				return t, err2
			}
		}
		if v, ok := fm["allowed-tools"]; ok {
			if t.AllowedTools, ok = skillToolList(v); !ok {
				return t, &skillError{path, keyLines["allowed-tools"], `"allowed-tools" must be a list or text such as "Read, Bash(git:*)"`}
			}
		}
		body = lines[end+1:]
	}
	t.Body = strings.TrimRight(strings.TrimLeft(strings.Join(body, "\n"), "\n"), " \t\n")
	if t.Description == "" {
		first, _, _ := strings.Cut(t.Body, "\n")
		t.Description = strings.TrimSpace(strings.TrimLeft(first, "# "))
	}
	return t, nil
}

// promptHintQuoted quotes an argument-hint written in brackets, such as
// "[add|remove] [id]": Claude Code shows it as written, where YAML would
// read a list, or nothing it can parse.
func promptHintQuoted(lines []string) []string {
	out := append([]string(nil), lines...)
	for i, l := range out {
		if v, ok := strings.CutPrefix(l, "argument-hint:"); ok && strings.HasPrefix(strings.TrimSpace(v), "[") {
			out[i] = "argument-hint: '" + strings.ReplaceAll(strings.TrimSpace(v), "'", "''") + "'"
		}
	}
	return out
}

// PromptConfig is what the templates need from their host.
type PromptConfig struct {
	Templates []PromptTemplate
	// Reserved are names a template may not take (zot's own commands);
	// such a template is reported once and left out.
	Reserved []string
	// ProjectTrusted says whether the user trusted the project and this
	// template of it as it is now; nil is no. A project's template runs
	// its !`command` lines only then.
	ProjectTrusted func(PromptTemplate) bool
	// KnownModel says whether a template's model: exists for the provider
	// in use; nil knows none.
	KnownModel func(id string) bool
	// Attach reads a file named by @path as the TUI's @ attachments do
	// (the jail applies); nil attaches nothing.
	Attach func(ref string) (block Block, desc string, err error)
	// OnNote shows the user one line about a template: a line left out, a
	// model not used, a file not attached. Nil drops them.
	OnNote func(msg string)
}

// Prompts expands templates for one session.
type Prompts struct {
	cfg    PromptConfig
	list   []PromptTemplate
	byName map[string]PromptTemplate
}

// NewPrompts indexes the templates; one named like a reserved command is
// reported and left out.
func NewPrompts(cfg PromptConfig) *Prompts {
	p := &Prompts{cfg: cfg, byName: map[string]PromptTemplate{}}
	reserved := map[string]bool{}
	for _, r := range cfg.Reserved {
		reserved[r] = true
	}
	for _, t := range cfg.Templates {
		if reserved[t.Name] {
			p.note(fmt.Sprintf("prompt template %s is not used: /%s is a built-in command", t.Path, t.Name))
			continue
		}
		p.byName[t.Name] = t
		p.list = append(p.list, t)
	}
	return p
}

// List returns the templates in use, sorted by name.
func (p *Prompts) List() []PromptTemplate {
	if p == nil {
		return nil
	}
	return p.list
}

// Lookup finds a template in use by name.
func (p *Prompts) Lookup(name string) (PromptTemplate, bool) {
	if p == nil {
		return PromptTemplate{}, false
	}
	t, ok := p.byName[name]
	return t, ok
}

// Match finds the template a message starting with /name asks for. A
// message that does not start so, or names no template, is not one.
func (p *Prompts) Match(text string) (t PromptTemplate, args string, ok bool) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "/") || strings.HasPrefix(text, "//") {
		return t, "", false
	}
	name, args, _ := strings.Cut(text[1:], " ")
	name, rest, _ := strings.Cut(name, "\n")
	if rest != "" {
		args = rest + " " + args
	}
	t, ok = p.Lookup(name)
	return t, strings.TrimSpace(args), ok
}

// PromptExpansion is a template made into a prompt.
type PromptExpansion struct {
	Text     string
	Files    []Block  // @path attachments
	Attached []string // one line for each, as the TUI lists them
	Model    string   // the template's model, when the provider has it
}

// PromptCommands are the !`command`s a template's text holds, as written
// (before its arguments are put in).
func PromptCommands(t PromptTemplate) []string {
	var out []string
	for _, m := range promptCommand().FindAllStringSubmatch(t.Body, -1) {
		out = append(out, m[1])
	}
	return out
}

var (
	// promptCommand is !`command` in a template's body.
	promptCommand = lazyRegexp("!`([^`\n]+)`")
	promptArgRef  = lazyRegexp(`\$[1-9]`)
)

// Expand makes a template into a prompt: arguments put in, !`command`
// lines run (or left out, with a note), @path references attached. a runs
// the commands: each is a bash tool call through a's gates and audit
// trail. Arguments never become commands: only text the file holds runs.
// Nor does a command's output attach files: its @words come from outside
// (a commit message, a file name) and stay text.
func (p *Prompts) Expand(ctx context.Context, a *Agent, t PromptTemplate, args string) PromptExpansion {
	var x PromptExpansion
	positional := splitPromptArgs(args)
	uses := strings.Contains(t.Body, "$ARGUMENTS") || promptArgRef().MatchString(t.Body)
	var out, refs []string
	for i, line := range strings.Split(t.Body, "\n") {
		refs = append(refs, atPathRefs(substitutePromptArgs(promptCommand().ReplaceAllString(line, ""), args, positional))...)
		if !promptCommand().MatchString(line) {
			out = append(out, substitutePromptArgs(line, args, positional))
			continue
		}
		why := p.mayRun(t)
		if why != "" {
			p.note(fmt.Sprintf("/%s: line %d of %s: !`command` left out: %s", t.Name, i+1, t.Path, why))
		}
		// The text around a command gets the arguments as typed; the
		// command gets each argument as one quoted shell word, so that no
		// argument is shell syntax. A command that does not run leaves
		// its place empty: the line's text and arguments stay.
		var expanded strings.Builder
		at, leftOut := 0, why != ""
		for _, m := range promptCommand().FindAllStringSubmatchIndex(line, -1) {
			expanded.WriteString(substitutePromptArgs(line[at:m[0]], args, positional))
			at = m[1]
			if why != "" {
				continue
			}
			output, err := p.runCommand(ctx, a, t, substituteCommandArgs(line[m[2]:m[3]], positional))
			if err != nil {
				p.note(fmt.Sprintf("/%s: line %d of %s: %s", t.Name, i+1, t.Path, err))
				leftOut = true
				continue
			}
			expanded.WriteString(output)
		}
		expanded.WriteString(substitutePromptArgs(line[at:], args, positional))
		kept := expanded.String()
		if leftOut {
			kept = strings.TrimSpace(kept) // the spaces that stood around the command
		}
		if kept != "" || !leftOut {
			out = append(out, kept)
		}
	}
	x.Text = strings.Join(out, "\n")
	if !uses && args != "" {
		x.Text += "\n\nARGUMENTS: " + args
		refs = append(refs, atPathRefs(args)...)
	}
	if p.cfg.Attach != nil {
		for _, ref := range refs {
			b, desc, err := p.cfg.Attach(ref)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					p.note(fmt.Sprintf("/%s: not attached: %v", t.Name, err))
				}
				continue
			}
			x.Files = append(x.Files, b)
			x.Attached = append(x.Attached, desc)
		}
	}
	if t.Model != "" {
		if p.cfg.KnownModel != nil && p.cfg.KnownModel(t.Model) {
			x.Model = t.Model
		} else {
			p.note(fmt.Sprintf("/%s: model %q of %s is not a model of this provider; the current model answers", t.Name, t.Model, t.Path))
		}
	}
	return x
}

// mayRun says why a template's commands may not run, or "" when they may.
func (p *Prompts) mayRun(t PromptTemplate) string {
	if t.Owned || p.cfg.ProjectTrusted != nil && p.cfg.ProjectTrusted(t) {
		return ""
	}
	return fmt.Sprintf("the template is the project's (%s) and this project is not trusted, so its !`command` lines do not run", t.Source)
}

// runCommand runs one !`command` as a bash tool call of a's. A call a gate
// blocked, or that could not run, is an error.
func (p *Prompts) runCommand(ctx context.Context, a *Agent, t PromptTemplate, command string) (string, error) {
	var id [6]byte
	rand.Read(id[:])
	args, _ := json.Marshal(map[string]string{"command": command})
	call := ToolCall{ID: "prompt-" + hex.EncodeToString(id[:]), Name: ToolBash, Args: args}
	res := a.RunTool(ctx, call, GateNote{By: "prompt:" + t.Name, Decision: DecisionRequest, Reason: t.Path})
	text := Message{Content: res.Content}.Text()
	if res.IsError && res.ExitCode == nil {
		return "", fmt.Errorf("!`%s` did not run: %s", truncate(command, 200), truncate(strings.TrimSpace(text), 500))
	}
	// The output as the command printed it: the bash tool's note of a
	// clean exit is for the model, not for the prompt.
	if !res.IsError {
		text = strings.TrimSuffix(strings.TrimSuffix(text, "[exit code 0]"), "(no output)\n")
	}
	return truncate(strings.TrimRight(text, "\n"), promptMaxOutput), nil
}

func (p *Prompts) note(msg string) {
	if p.cfg.OnNote != nil {
		p.cfg.OnNote(sanitize(msg))
	}
}

// Send expands the template text asks for and prompts a with it, on the
// template's model when it has one; text that asks for none is sent as
// typed. images go with the prompt.
func (p *Prompts) Send(ctx context.Context, a *Agent, text string, images []Block, sink Sink) error {
	t, args, ok := p.Match(text)
	if !ok {
		return a.Prompt(ctx, text, images, sink)
	}
	x := p.Expand(ctx, a, t, args)
	for _, d := range x.Attached {
		p.note("/" + t.Name + ": attached " + d)
	}
	if strings.TrimSpace(x.Text) == "" && len(x.Files) == 0 && len(images) == 0 {
		// The agent refuses an empty prompt; this says why it is empty.
		p.note(fmt.Sprintf("/%s: nothing is left of %s to send", t.Name, t.Path))
	}
	if x.Model != "" && x.Model != a.CurrentModel() {
		prev := a.CurrentModel()
		if err := a.SetModel(x.Model); err != nil {
			return err
		}
		defer a.SetModel(prev)
	}
	return a.Prompt(ctx, x.Text, append(x.Files, images...), sink)
}

// substitutePromptArgs puts the arguments into a line: $ARGUMENTS is all
// of them, $1…$9 one each ("" when not given).
func substitutePromptArgs(line, args string, positional []string) string {
	if !strings.Contains(line, "$") {
		return line
	}
	line = strings.ReplaceAll(line, "$ARGUMENTS", args)
	return promptArgRef().ReplaceAllStringFunc(line, func(m string) string {
		if n := int(m[1] - '1'); n < len(positional) {
			return positional[n]
		}
		return ""
	})
}

// substituteCommandArgs puts the arguments into a !`command`: $1…$9 as
// one shell word each, $ARGUMENTS as all of them, each its own word. An
// argument is never shell syntax: "x; rm -rf ~" is one word.
func substituteCommandArgs(command string, positional []string) string {
	quoted := make([]string, len(positional))
	for i, a := range positional {
		quoted[i] = shellQuote(a)
	}
	return substitutePromptArgs(command, strings.Join(quoted, " "), quoted)
}

// splitPromptArgs splits arguments at spaces; "double" or 'single' quotes
// keep spaces inside one argument.
func splitPromptArgs(s string) []string {
	var out []string
	var cur strings.Builder
	quote, in := rune(0), false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// atPathRefs finds the @path words of a prompt, as the TUI does.
func atPathRefs(text string) []string {
	var refs []string
	for _, w := range strings.Fields(text) {
		if len(w) > 1 && w[0] == '@' {
			refs = append(refs, strings.TrimRight(w[1:], ".,;:!?)"))
		}
	}
	return refs
}

// FormatPromptList is the table `zot prompts list` shows: name with its
// argument hint, source and description. Text from files is made safe
// for a terminal.
func FormatPromptList(list []PromptTemplate) string {
	if len(list) == 0 {
		return "No prompt templates found.\n"
	}
	nameW, srcW := 4, 6
	for _, t := range list {
		nameW = max(nameW, utf8.RuneCountInString(promptUsage(t)))
		srcW = max(srcW, utf8.RuneCountInString(t.Source))
	}
	nameW = min(nameW, 40)
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s  %-*s  %s\n", nameW, "NAME", srcW, "SOURCE", "DESCRIPTION")
	for _, t := range list {
		desc := skillOneLine(t.Description)
		if utf8.RuneCountInString(desc) > 72 {
			desc = string([]rune(desc)[:71]) + "…"
		}
		fmt.Fprintf(&b, "%-*s  %-*s  %s\n", nameW, promptUsage(t), srcW, t.Source, desc)
	}
	return b.String()
}

// promptUsage is "/name hint", one clean line.
func promptUsage(t PromptTemplate) string {
	return strings.TrimSpace("/" + t.Name + " " + skillOneLine(t.ArgumentHint))
}

var promptsUsage = commandHelp{
	name:  "zot prompts",
	about: "the prompt templates a session sees",
	subs: []subcommandHelp{
		{"list", "[--cwd DIR]", "list the prompt templates a session in DIR would see", ""},
		{"show", "NAME [--cwd DIR]", "print a template: its front matter's keys, then its body", ""},
		{"help", "[command]", "this text, or a command's", ""},
	},
	notes: `Templates are searched in ./.zot/prompts, ./.claude/commands, $ZOT_HOME/prompts,
~/.claude/commands, then the commands/ of enabled plugins (as plugin:name); the
first one found with a name wins. A subdirectory is a namespace:
frontend/component.md is /frontend:component. See docs/prompts.md.
`,
}

// runPromptsCommand is `zot prompts …`: exit 0, 1 for an unknown template,
// 2 for a usage mistake. extra are the plugins' directories.
func runPromptsCommand(args []string, extra []PromptRoot, stdout, stderr io.Writer) int {
	words, abs, ok := commandArgs(&promptsUsage, args, nil, nil, stderr)
	if !ok {
		return exitUsage
	}
	log := stderrLog(stderr)
	switch {
	case len(words) == 1 && words[0] == "list":
		fmt.Fprint(stdout, FormatPromptList(LoadPrompts(zotHome(), abs, extra, log)))
		return exitOK
	case len(words) == 2 && words[0] == "show":
		name := strings.TrimPrefix(words[1], "/")
		for _, t := range LoadPrompts(zotHome(), abs, extra, log) {
			if t.Name != name {
				continue
			}
			// The keys go to stderr, so stdout stays the body for scripts.
			fmt.Fprintf(stderr, "%s (%s)\n", t.Path, t.Source)
			for _, kv := range [][2]string{{"description", t.Description}, {"argument-hint", t.ArgumentHint}, {"model", t.Model}, {"allowed-tools", strings.Join(t.AllowedTools, ", ")}} {
				if kv[1] != "" {
					fmt.Fprintf(stderr, "%s: %s\n", kv[0], skillOneLine(kv[1]))
				}
			}
			fmt.Fprintln(stdout, sanitize(t.Body))
			return exitOK
		}
		fmt.Fprintf(stderr, "zot: no prompt template named %q (zot prompts list shows them)\n", sanitize(name))
		return exitFailure
	}
	fmt.Fprint(stderr, promptsUsage.text(""))
	return exitUsage
}
