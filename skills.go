package main

// Skills: reusable instruction sets, one directory each holding a SKILL.md
// (front matter between --- lines, then a markdown body), in the layout other
// coding agents already use. zot puts a short manifest of them in the system
// prompt; the model loads a skill's body with the skill tool when a task
// matches its description.

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// builtinSkillFiles are the skills shipped inside the binary, one
// skills/<name>/SKILL.md each.
//
//go:embed skills
var builtinSkillFiles embed.FS

// Skill is one skill found on disk or built in.
type Skill struct {
	Name        string
	Description string
	Source      string // where it was found: ".zot/skills", "$ZOT_HOME/skills", …, "built-in"
	Dir         string // the directory holding SKILL.md; "" for a built-in skill
	Body        string // the markdown after the front matter
	// AllowedTools is the allowed-tools key, kept for display: zot does
	// not restrict tools while a skill is in use.
	AllowedTools []string
	// UserOnly is disable-model-invocation: true. The skill stays out of
	// the manifest and the skill tool refuses it.
	UserOnly bool
	// Meta holds every other front-matter key. A value is a string, a
	// []any or a map[string]any, as the front matter nests them.
	Meta map[string]any
}

const (
	skillSourceBuiltin = "built-in"
	skillMaxFileBytes  = 1 << 20
	skillMaxNameLen    = 64
	skillMaxDescLen    = 1024 // longer descriptions are cut in the manifest
	skillMaxListFiles  = 200  // files the skill tool lists beside a SKILL.md
)

// skillRoot is one directory searched for skills. prefix goes before the
// names of its skills ("plugin:").
type skillRoot struct {
	dir, label, prefix string
}

// skillRoots are the directories searched, in precedence order: the first
// skill found with a name wins. home is $ZOT_HOME; the user's home
// directory comes from os.UserHomeDir. A directory that is two of them (zot
// run in ~) is searched once, at its first place.
func skillRoots(home, cwd string) []skillRoot {
	user, _ := os.UserHomeDir()
	roots := []skillRoot{
		{filepath.Join(cwd, ".zot", "skills"), ".zot/skills", ""},
		{filepath.Join(home, "skills"), "$ZOT_HOME/skills", ""},
		{filepath.Join(cwd, ".claude", "skills"), ".claude/skills", ""},
		{filepath.Join(user, ".claude", "skills"), "~/.claude/skills", ""},
		{filepath.Join(cwd, ".agents", "skills"), ".agents/skills", ""},
		{filepath.Join(user, ".agents", "skills"), "~/.agents/skills", ""},
	}
	var out []skillRoot
	seen := map[string]bool{}
	for _, r := range roots {
		if (user == "" && strings.HasPrefix(r.label, "~")) || seen[r.dir] {
			continue
		}
		seen[r.dir] = true
		out = append(out, r)
	}
	return out
}

// LoadSkills finds the skills for a session in cwd, sorted by name. home
// is $ZOT_HOME; extra (the plugins' skills/) are searched after the
// others, before the built-in skills. A file that cannot be read or
// parsed is reported to log with its path and line, and skipped; log may
// be nil.
func LoadSkills(home, cwd string, log func(string, ...any), extra ...skillRoot) []Skill {
	if log == nil {
		log = func(string, ...any) {}
	}
	var out []Skill
	seen := map[string]bool{}
	add := func(list []Skill) {
		for _, s := range list {
			if !seen[s.Name] {
				seen[s.Name] = true
				out = append(out, s)
			}
		}
	}
	for _, r := range append(skillRoots(home, cwd), extra...) {
		add(loadSkillRoot(r, log))
	}
	add(builtinSkills(log))
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// loadSkillRoot reads every <root>/<dir>/SKILL.md. Two skills of one root
// with the same name are a mistake worth reporting; the first by directory
// name is kept.
func loadSkillRoot(r skillRoot, log func(string, ...any)) []Skill {
	entries, err := readUntrustedDir(r.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		log("skills in %s: %v", r.dir, err)
	}
	var out []Skill
	byName := map[string]string{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(r.dir, e.Name())
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		path := filepath.Join(dir, "SKILL.md")
		data, err := readUntrustedFile(path, skillMaxFileBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			log("skipped skill %v", err)
			continue
		}
		s, err := parseSkill(path, data)
		if err != nil {
			log("skipped skill %v", err)
			continue
		}
		if first, dup := byName[s.Name]; dup {
			log("skipped skill %s: name %q is already used by %s", path, s.Name, first)
			continue
		}
		byName[s.Name] = path
		s.Name = r.prefix + s.Name
		s.Source, s.Dir = r.label, dir
		out = append(out, s)
	}
	return out
}

// builtinSkills parses the embedded skills. They are tested to parse; the
// report is for someone who edits one and builds without running the tests.
func builtinSkills(log func(string, ...any)) []Skill {
	entries, _ := builtinSkillFiles.ReadDir("skills")
	var out []Skill
	for _, e := range entries {
		path := "skills/" + e.Name() + "/SKILL.md"
		data, err := builtinSkillFiles.ReadFile(path)
		if err != nil {
			continue
		}
		s, err := parseSkill("(built in) "+path, data)
		if err != nil {
			log("skipped skill %v", err)
			continue
		}
		s.Source = skillSourceBuiltin
		out = append(out, s)
	}
	return out
}

// skillError is a SKILL.md that cannot be used: where and why.
type skillError = yamlError

// parseSkill reads a SKILL.md: front matter, then the body.
func parseSkill(path string, data []byte) (Skill, error) {
	var s Skill
	fail := func(line int, format string, args ...any) (Skill, error) {
		return Skill{}, &skillError{path, line, fmt.Sprintf(format, args...)}
	}
	if !utf8.Valid(data) {
		line := 1 + strings.Count(string(data[:skillBadUTF8At(data)]), "\n")
		return fail(line, "not UTF-8 text; save the file as UTF-8")
	}
	text := strings.TrimPrefix(string(data), "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(text, "\n")
	if strings.TrimRight(lines[0], " \t") != "---" {
		return fail(1, "no front matter: a SKILL.md starts with a --- line, then name: and description: lines, then another --- line")
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if strings.TrimRight(lines[i], " \t") == "---" {
			end = i
			break
		}
	}
	if end < 0 {
		return fail(1, "the front matter opened here is never closed; add a --- line after it")
	}
	fm, keyLines, err := parseFrontMatter(lines[1:end], 2)
	if err != nil {
		err.(*skillError).path = path
		return Skill{}, err
	}
	str := func(key string) (string, error) {
		v, ok := fm[key]
		if !ok {
			return "", &skillError{path, 1, fmt.Sprintf("the front matter has no %q; add a line %s: …", key, key)}
		}
		t, ok := v.(string)
		if !ok {
			return "", &skillError{path, keyLines[key], fmt.Sprintf("%q must be text, not a list or a map", key)}
		}
		if t = strings.TrimSpace(t); t == "" {
			return "", &skillError{path, keyLines[key], fmt.Sprintf("%q is empty", key)}
		}
		return t, nil
	}
	if s.Name, err = str("name"); err != nil {
		return Skill{}, err
	}
	if s.Description, err = str("description"); err != nil {
		return Skill{}, err
	}
	switch {
	case utf8.RuneCountInString(s.Name) > skillMaxNameLen:
		return fail(keyLines["name"], "name %q is longer than %d characters", s.Name, skillMaxNameLen)
	case strings.IndexFunc(s.Name, unicode.IsControl) >= 0:
		return fail(keyLines["name"], "name %q must be one line without control characters", s.Name)
	}
	if v, ok := fm["allowed-tools"]; ok {
		if s.AllowedTools, ok = skillToolList(v); !ok {
			return fail(keyLines["allowed-tools"], `"allowed-tools" must be a list or text such as "Read, Bash(git:*)"`)
		}
	}
	s.UserOnly = fm["disable-model-invocation"] == "true"
	for k, v := range fm {
		switch k {
		case "name", "description", "allowed-tools":
		default:
			if s.Meta == nil {
				s.Meta = map[string]any{}
			}
			s.Meta[k] = v
		}
	}
	body := strings.Join(lines[end+1:], "\n")
	s.Body = strings.TrimRight(strings.TrimLeft(body, "\n"), " \t\n")
	return s, nil
}

func skillBadUTF8At(b []byte) int { return yamlBadUTF8At(b) }

// skillToolList reads allowed-tools: a list, or text separated by commas or
// (without commas) by spaces, where Bash(git diff:*) stays one entry.
func skillToolList(v any) ([]string, bool) {
	switch v := v.(type) {
	case []any:
		var out []string
		for _, item := range v {
			s, ok := item.(string)
			if !ok {
				return nil, false
			}
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, true
	case string:
		sep := func(r rune) bool { return r == ',' }
		if !strings.Contains(v, ",") {
			sep = unicode.IsSpace
		}
		var out []string
		depth, start := 0, 0
		flush := func(end int) {
			if t := strings.TrimSpace(v[start:end]); t != "" {
				out = append(out, t)
			}
		}
		for i := 0; i < len(v); {
			r, n := utf8.DecodeRuneInString(v[i:])
			switch {
			case r == '(':
				depth++
			case r == ')' && depth > 0:
				depth--
			case depth == 0 && sep(r):
				flush(i)
				start = i + n
			}
			i += n
		}
		flush(len(v))
		return out, true
	}
	return nil, false
}

// SkillManifest is the system-prompt section naming the skills the model
// may load; "" when there are none.
func SkillManifest(skills []Skill) string {
	var b strings.Builder
	for _, s := range skills {
		if s.UserOnly {
			continue
		}
		desc := skillOneLine(s.Description)
		if utf8.RuneCountInString(desc) > skillMaxDescLen {
			desc = string([]rune(desc)[:skillMaxDescLen]) + "…"
		}
		fmt.Fprintf(&b, "- %s: %s\n", s.Name, desc)
	}
	if b.Len() == 0 {
		return ""
	}
	return "Skills are instructions for particular kinds of task. When a task matches one of these descriptions, " +
		"call the skill tool with its name before you start, and follow what it returns.\n" +
		strings.TrimRight(b.String(), "\n")
}

// skillTokens estimates the tokens a text costs at about 4 bytes a token.
func skillTokens(text string) int { return (len(text) + 3) / 4 }

// FormatSkillList is the table `zot skills list` and the TUI show: name,
// source and description of each skill, then the estimated token cost of
// the manifest. Text from skill files is made safe for a terminal.
func FormatSkillList(skills []Skill) string {
	if len(skills) == 0 {
		return "No skills found.\n"
	}
	nameW, srcW := 4, 6
	for _, s := range skills {
		nameW = max(nameW, utf8.RuneCountInString(skillOneLine(s.Name)))
		srcW = max(srcW, utf8.RuneCountInString(s.Source))
	}
	nameW = min(nameW, 32)
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s  %-*s  %s\n", nameW, "NAME", srcW, "SOURCE", "DESCRIPTION")
	for _, s := range skills {
		desc := skillOneLine(s.Description)
		if utf8.RuneCountInString(desc) > 72 {
			desc = string([]rune(desc)[:71]) + "…"
		}
		if s.UserOnly {
			desc = "(user only) " + desc
		}
		fmt.Fprintf(&b, "%-*s  %-*s  %s\n", nameW, skillOneLine(s.Name), srcW, s.Source, desc)
	}
	manifest := SkillManifest(skills)
	count := fmt.Sprintf("%d skills", len(skills))
	if len(skills) == 1 {
		count = "1 skill"
	}
	fmt.Fprintf(&b, "\n%s; the manifest in the system prompt costs about %d tokens (an estimate at 4 bytes a token).\n",
		count, skillTokens(manifest))
	return b.String()
}

// skillOneLine sanitizes text from a skill file and folds its whitespace
// runs into single spaces, so it fits on one terminal line.
func skillOneLine(s string) string {
	return strings.Join(strings.Fields(sanitize(s)), " ")
}

// skillTool is the skill tool: it returns a skill's body and the files
// beside its SKILL.md.
type skillTool struct{ skills []Skill }

func (skillTool) Name() string { return ToolSkill }

func (skillTool) ReadOnly() bool { return true }

func (skillTool) Description() string {
	return "Load a skill listed in the system prompt: its instructions and files."
}

func (skillTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
}

func (t skillTool) Run(ctx context.Context, raw json.RawMessage, _ func(string)) ToolResult {
	args, err := ParseSkillArgs(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	name := args.Name
	var names []string
	for _, s := range t.skills {
		if s.UserOnly {
			continue
		}
		names = append(names, s.Name)
		if s.Name != name {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Skill %q", s.Name)
		if s.Dir == "" {
			b.WriteString(" is built into zot; it has no files on disk.\n")
		} else {
			fmt.Fprintf(&b, " from %s.\n", s.Dir)
			files, more := skillFiles(ctx, s.Dir)
			if len(files) > 0 {
				fmt.Fprintf(&b, "Files beside its SKILL.md, relative to %s (read them when the instructions refer to them):\n", s.Dir)
				for _, f := range files {
					fmt.Fprintf(&b, "- %s\n", f)
				}
				if more {
					b.WriteString("- … and more\n")
				}
			}
		}
		b.WriteString("\n")
		b.WriteString(s.Body)
		r := textResult(b.String())
		r.Details = "skill " + s.Name + " (" + s.Source + ")"
		return r
	}
	for _, s := range t.skills {
		if s.Name == name && s.UserOnly {
			return errorResult("skill %q is for the user only (disable-model-invocation: true)", name)
		}
	}
	if len(names) == 0 {
		return errorResult("unknown skill %q: there are no skills in this session", name)
	}
	return errorResult("unknown skill %q; the skills are: %s", name, strings.Join(names, ", "))
}

// skillFiles lists the files under dir other than its SKILL.md, as slash
// paths relative to dir, skipping hidden ones; at most skillMaxListFiles,
// and whether there were more (the walk stops there).
func skillFiles(ctx context.Context, dir string) (files []string, more bool) {
	// WalkDir does not enter a root that is a symbolic link, and skill
	// directories often are one.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil || more {
			return filepath.SkipAll
		}
		if err != nil || path == dir {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || d.IsDir() || rel == "SKILL.md" {
			return nil
		}
		if len(files) == skillMaxListFiles {
			more = true
			return filepath.SkipAll
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	return files, more
}

// SkillTool is the tool through which the model reads skills' bodies and
// lists their files.
func SkillTool(skills []Skill) Tool { return skillTool{skills} }

// SkillsPrompt is the manifest section of the system prompt, when the
// model can reach the skill tool in reg (--tools may leave it out).
func SkillsPrompt(reg *ToolRegistry, skills []Skill) []string {
	t, _ := reg.Lookup(ToolSkill)
	if _, ours := t.(skillTool); !ours {
		return nil
	}
	if m := SkillManifest(skills); m != "" {
		return []string{m}
	}
	return nil
}

var skillsUsage = commandHelp{
	name:  "zot skills",
	about: "the skills a session sees",
	subs: []subcommandHelp{
		{"list", "[--cwd DIR]", "list the skills a session in DIR would see", ""},
		{"show", "NAME [--cwd DIR]", "print a skill's body", ""},
		{"help", "[command]", "this text, or a command's", ""},
	},
	notes: `Skills are searched in ./.zot/skills, $ZOT_HOME/skills, ./.claude/skills,
~/.claude/skills, ./.agents/skills, ~/.agents/skills, the skills/ of enabled
plugins (as plugin:name), then the built-in ones; the first skill found with
a name wins.
`,
}

// runSkillsCommand is `zot skills …`: exit 0, 1 for an unknown skill, 2 for
// a usage mistake.
// extra are the plugins' directories.
func runSkillsCommand(args []string, extra []skillRoot, stdout, stderr io.Writer) int {
	words, abs, ok := commandArgs(&skillsUsage, args, nil, nil, stderr)
	if !ok {
		return exitUsage
	}
	log := stderrLog(stderr)
	switch {
	case len(words) == 1 && words[0] == "list":
		fmt.Fprint(stdout, FormatSkillList(LoadSkills(zotHome(), abs, log, extra...)))
		return exitOK
	case len(words) == 2 && words[0] == "show":
		for _, s := range LoadSkills(zotHome(), abs, log, extra...) {
			if s.Name == words[1] {
				if len(s.AllowedTools) > 0 {
					// On stderr, so stdout stays the body for scripts.
					fmt.Fprintf(stderr, "allowed-tools: %s (not enforced by zot)\n", sanitize(strings.Join(s.AllowedTools, ", ")))
				}
				fmt.Fprintln(stdout, sanitize(s.Body))
				return exitOK
			}
		}
		fmt.Fprintf(stderr, "zot: no skill named %q (zot skills list shows them)\n", sanitize(words[1]))
		return exitFailure
	}
	return skillsUsage.misuse(words, stderr)
}
