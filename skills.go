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
	"strconv"
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
	entries, err := os.ReadDir(r.dir)
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
		st, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && !st.Mode().IsRegular() {
			err = errors.New("not a regular file")
		} else if err == nil && st.Size() > skillMaxFileBytes {
			err = fmt.Errorf("%d bytes; a SKILL.md may be at most %d", st.Size(), skillMaxFileBytes)
		}
		var data []byte
		if err == nil {
			data, err = os.ReadFile(path)
		}
		if err != nil {
			log("skipped skill %s: %v", path, err)
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
type skillError struct {
	path string
	line int
	msg  string
}

func (e *skillError) Error() string { return fmt.Sprintf("%s:%d: %s", e.path, e.line, e.msg) }

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

func skillBadUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

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

// The front matter parser reads the subset of YAML that skill files use:
// block maps and lists nested by indentation, plain, single- and
// double-quoted scalars (which may continue on more-indented lines), flow
// lists [a, b] (which may span lines), literal | and folded > block scalars
// with their chomping and indentation indicators, and # comments. Every
// scalar stays a string: `true` and `1` are not converted. Anchors, tags
// and flow maps are kept as the text they are written as.
type fmParser struct {
	lines []string
	first int // the file's line number of lines[0]
	i     int // the next line to read
	depth int // maps and lists open, limited to fmMaxDepth
}

const fmMaxDepth = 32

// fmLine is the line at the parser's position, seen as structure.
type fmLine struct {
	num    int
	indent int
	text   string // after the indentation, trailing space removed
}

// parseFrontMatter parses the lines between the --- lines; first is the
// file's line number of lines[0]. It returns the top-level keys and the
// line each is on.
// Its errors are *skillError without a path.
func parseFrontMatter(lines []string, first int) (map[string]any, map[string]int, error) {
	p := &fmParser{lines: append([]string(nil), lines...), first: first}
	keyLines := map[string]int{}
	m, err := p.parseMap(0, keyLines)
	if err != nil {
		return nil, nil, err
	}
	return m, keyLines, nil
}

func (p *fmParser) errf(line int, format string, args ...any) error {
	return &skillError{line: line, msg: fmt.Sprintf(format, args...)}
}

// peek skips blank and comment lines and returns the next line, without
// consuming it. Indentation must be spaces: YAML forbids tabs there.
func (p *fmParser) peek() (fmLine, bool, error) {
	for ; p.i < len(p.lines); p.i++ {
		raw := p.lines[p.i]
		t := strings.TrimLeft(raw, " \t")
		if t == "" || t[0] == '#' {
			continue
		}
		n := len(raw) - len(strings.TrimLeft(raw, " "))
		l := fmLine{num: p.first + p.i, indent: n, text: strings.TrimRight(t, " \t")}
		if n < len(raw) && raw[n] == '\t' {
			return l, true, p.errf(l.num, "a tab in the indentation; indent with spaces only")
		}
		return l, true, nil
	}
	return fmLine{}, false, nil
}

// parseNode parses the block that starts at the next line, indented by
// indent, inside a parent indented by parent.
func (p *fmParser) parseNode(indent, parent int, keys map[string]int) (any, error) {
	l, _, err := p.peek()
	if err != nil {
		return nil, err
	}
	if fmIsDash(l.text) {
		return p.parseList(indent)
	}
	if _, _, ok := fmSplitKey(l.text); ok {
		return p.parseMap(indent, keys)
	}
	p.i++
	return p.parseValue(l.text, parent, l.num, false)
}

// parseMap reads "key: value" lines indented by indent. keys, when not nil,
// records the line of each key.
func (p *fmParser) parseMap(indent int, keys map[string]int) (map[string]any, error) {
	if p.depth++; p.depth > fmMaxDepth {
		return nil, p.errf(p.first+p.i, "nested more than %d levels deep", fmMaxDepth)
	}
	defer func() { p.depth-- }()
	m := map[string]any{}
	for {
		l, ok, err := p.peek()
		if err != nil || !ok || l.indent < indent {
			return m, err
		}
		if l.indent > indent {
			return nil, p.errf(l.num, "unexpected indentation (%d spaces where %d were expected)", l.indent, indent)
		}
		key, rest, ok := fmSplitKey(l.text)
		if !ok {
			if fmIsDash(l.text) {
				return nil, p.errf(l.num, "a list item where a key was expected")
			}
			return nil, p.errf(l.num, `expected "key: value", found %q`, fmClip(l.text))
		}
		if _, dup := m[key]; dup {
			return nil, p.errf(l.num, "key %q appears twice", key)
		}
		if keys != nil {
			keys[key] = l.num
		}
		p.i++
		v, err := p.parseValue(rest, indent, l.num, true)
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
}

// parseList reads "- item" lines indented by indent.
func (p *fmParser) parseList(indent int) ([]any, error) {
	if p.depth++; p.depth > fmMaxDepth {
		return nil, p.errf(p.first+p.i, "nested more than %d levels deep", fmMaxDepth)
	}
	defer func() { p.depth-- }()
	list := []any{}
	for {
		l, ok, err := p.peek()
		if err != nil || !ok || l.indent < indent {
			return list, err
		}
		if l.indent > indent {
			return nil, p.errf(l.num, "unexpected indentation (%d spaces where %d were expected)", l.indent, indent)
		}
		if !fmIsDash(l.text) {
			return list, nil
		}
		item := strings.TrimLeft(l.text[1:], " \t")
		col := indent + len(l.text) - len(item)
		var v any
		if _, _, isKey := fmSplitKey(item); isKey || fmIsDash(item) {
			// "- key: v" or "- - v": a block starting at the item's column.
			// Blank out the dash and parse the line again from there.
			p.lines[p.i] = strings.Repeat(" ", col) + item
			v, err = p.parseNode(col, indent, nil)
		} else {
			p.i++
			v, err = p.parseValue(item, indent, l.num, false)
		}
		if err != nil {
			return nil, err
		}
		list = append(list, v)
	}
}

// parseValue reads what follows "key:" or "-" on line num, continuing on
// the lines after it that are indented more than parent. In a map a list
// may sit at the key's own indentation.
func (p *fmParser) parseValue(rest string, parent, num int, inMap bool) (any, error) {
	rest = strings.TrimSpace(rest)
	switch {
	case rest == "" || rest[0] == '#':
		l, ok, err := p.peek()
		switch {
		case err != nil:
			return nil, err
		case ok && l.indent > parent:
			return p.parseNode(l.indent, parent, nil)
		case ok && inMap && l.indent == parent && fmIsDash(l.text):
			return p.parseList(parent)
		}
		return "", nil
	case rest[0] == '|' || rest[0] == '>':
		return p.blockScalar(rest, parent, num)
	case rest[0] == '"' || rest[0] == '\'':
		return p.quoted(rest, parent, num)
	case rest[0] == '[':
		return p.flowList(rest, parent, num)
	}
	return p.plain(rest, parent)
}

// plain reads an unquoted scalar: the rest of the line, folded together
// with more-indented lines that follow (a blank line among them becomes a
// line break). A following line that looks like a key is an indentation
// mistake, not text.
func (p *fmParser) plain(first string, parent int) (string, error) {
	var b strings.Builder
	b.WriteString(fmStripComment(first))
	blanks := 0
	for j := p.i; j < len(p.lines); j++ {
		raw := p.lines[j]
		t := strings.TrimSpace(raw)
		if t == "" {
			blanks++
			continue
		}
		n := len(raw) - len(strings.TrimLeft(raw, " "))
		if n <= parent || raw[n] == '\t' || t[0] == '#' {
			break
		}
		if fmLooksLikeKey(t) {
			return "", p.errf(p.first+j, "bad indentation: %q is indented under the line above; give it the indentation of its siblings, or quote the value above", fmClip(t))
		}
		if blanks > 0 {
			b.WriteString(strings.Repeat("\n", blanks))
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(fmStripComment(t))
		blanks = 0
		p.i = j + 1
	}
	return strings.TrimSpace(b.String()), nil
}

// quoted reads a single- or double-quoted scalar, which may continue on
// lines indented more than parent; line breaks fold into spaces.
func (p *fmParser) quoted(rest string, parent, num int) (string, error) {
	q := rest[0]
	text := []byte(rest)
	sc := fmScan{pos: 1, quote: q}
	end := sc.end(text)
	blankRun := false
	for end < 0 {
		if p.i >= len(p.lines) {
			return "", p.errf(num, "the quoted text opened here is never closed with %c", q)
		}
		raw := p.lines[p.i]
		t := strings.TrimSpace(raw)
		n := len(raw) - len(strings.TrimLeft(raw, " "))
		if t != "" && n <= parent {
			return "", p.errf(num, "the quoted text opened here is never closed with %c", q)
		}
		p.i++
		switch {
		case t == "":
			text = append(text, '\n')
			blankRun = true
		case blankRun:
			text = append(text, t...)
			blankRun = false
		default:
			text = append(append(text, ' '), t...)
		}
		end = sc.end(text)
	}
	if after := strings.TrimSpace(string(text[end+1:])); after != "" && after[0] != '#' {
		return "", p.errf(num, "unexpected %q after the closing quote", fmClip(after))
	}
	return fmUnquote(string(text[:end+1]), num, p)
}

// flowList reads [a, "b", c], which may span lines.
func (p *fmParser) flowList(rest string, parent, num int) ([]any, error) {
	text := []byte(rest)
	sc := fmScan{}
	end := sc.end(text)
	for end < 0 {
		if p.i >= len(p.lines) {
			return nil, p.errf(num, "the [ list opened here is never closed with ]")
		}
		raw := p.lines[p.i]
		t := strings.TrimSpace(raw)
		n := len(raw) - len(strings.TrimLeft(raw, " "))
		if t != "" && n <= parent {
			return nil, p.errf(num, "the [ list opened here is never closed with ]")
		}
		p.i++
		text = append(append(text, ' '), t...)
		end = sc.end(text)
	}
	if after := strings.TrimSpace(string(text[end+1:])); after != "" && after[0] != '#' {
		return nil, p.errf(num, "unexpected %q after the closing ]", fmClip(after))
	}
	list := []any{}
	for _, item := range fmSplitFlow(string(text[1:end])) {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
			continue
		case item[0] == '"' || item[0] == '\'':
			if fmQuoteEnd(item) != len(item)-1 {
				return nil, p.errf(num, "list item %s has text after its closing quote", fmClip(item))
			}
			s, err := fmUnquote(item, num, p)
			if err != nil {
				return nil, err
			}
			list = append(list, s)
		default:
			list = append(list, item)
		}
	}
	return list, nil
}

// blockScalar reads a literal (|) or folded (>) block scalar: the lines
// indented more than parent that follow the header.
func (p *fmParser) blockScalar(header string, parent, num int) (string, error) {
	style, chomp, explicit := header[0], byte(0), 0
	h := header[1:]
	for h != "" && h[0] != ' ' && h[0] != '\t' {
		switch c := h[0]; {
		case (c == '-' || c == '+') && chomp == 0:
			chomp = c
		case c >= '1' && c <= '9' && explicit == 0:
			explicit = int(c - '0')
		default:
			return "", p.errf(num, "bad block scalar header %q (want | or > with at most one of - + and one digit)", fmClip(header))
		}
		h = h[1:]
	}
	if t := strings.TrimSpace(h); t != "" && t[0] != '#' {
		return "", p.errf(num, "unexpected %q after %c", fmClip(t), style)
	}
	indent := parent + explicit
	if explicit == 0 {
		indent = 0
		for j := p.i; j < len(p.lines); j++ {
			if raw := p.lines[j]; strings.TrimSpace(raw) != "" {
				indent = len(raw) - len(strings.TrimLeft(raw, " "))
				break
			}
		}
	}
	var content []string
	if indent > parent {
		for ; p.i < len(p.lines); p.i++ {
			raw := p.lines[p.i]
			if strings.TrimSpace(raw) == "" {
				content = append(content, "")
				continue
			}
			if len(raw)-len(strings.TrimLeft(raw, " ")) < indent {
				break
			}
			content = append(content, raw[indent:])
		}
	}
	trailing := 0
	for len(content) > 0 && content[len(content)-1] == "" {
		content = content[:len(content)-1]
		trailing++
	}
	var s string
	if style == '|' {
		s = strings.Join(content, "\n")
	} else {
		s = fmFold(content)
	}
	switch {
	case chomp == '+':
		return s + strings.Repeat("\n", trailing+min(1, len(content))), nil
	case chomp == '-' || len(content) == 0:
		return s, nil
	}
	return s + "\n", nil
}

// fmFold joins the lines of a folded scalar: a line break between two
// lines becomes a space, each blank line a line break, and lines indented
// further keep their breaks.
func fmFold(lines []string) string {
	var b strings.Builder
	blanks, prevMore := 0, false
	for i, l := range lines {
		if l == "" {
			blanks++
			continue
		}
		more := l[0] == ' ' || l[0] == '\t'
		switch {
		case i == blanks:
			b.WriteString(strings.Repeat("\n", blanks))
		case more || prevMore:
			b.WriteString(strings.Repeat("\n", blanks+1))
		case blanks > 0:
			b.WriteString(strings.Repeat("\n", blanks))
		default:
			b.WriteByte(' ')
		}
		b.WriteString(l)
		blanks, prevMore = 0, more
	}
	return b.String()
}

// fmSplitKey splits "key: value" or "key:" at the first colon followed by
// a space, a tab or the end of the line.
func fmSplitKey(text string) (key, rest string, ok bool) {
	if text == "" || fmIsDash(text) || strings.ContainsRune("[]{}#&*!|>'\"%@`", rune(text[0])) {
		return "", "", false
	}
	for i := 0; i < len(text); i++ {
		if text[i] == ':' && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\t') {
			key = strings.TrimSpace(text[:i])
			if key == "" || strings.Contains(key, " #") {
				return "", "", false
			}
			return key, text[i+1:], true
		}
	}
	return "", "", false
}

// fmLooksLikeKey is a stricter fmSplitKey for text inside a plain scalar:
// a key of letters, digits, - and _, as front-matter keys are.
func fmLooksLikeKey(text string) bool {
	key, _, ok := fmSplitKey(text)
	if !ok {
		return false
	}
	for _, r := range key {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_' {
			return false
		}
	}
	return true
}

func fmIsDash(text string) bool {
	return text == "-" || strings.HasPrefix(text, "- ") || strings.HasPrefix(text, "-\t")
}

// fmStripComment cuts a " # comment" off a plain scalar.
func fmStripComment(s string) string {
	for i := 1; i < len(s); i++ {
		if s[i] == '#' && (s[i-1] == ' ' || s[i-1] == '\t') {
			return strings.TrimSpace(s[:i])
		}
	}
	return strings.TrimSpace(s)
}

// fmScan finds where quoted text or a flow list ends, keeping its place
// so that text growing line by line is scanned once. Set quote to start
// inside quoted text.
type fmScan struct {
	pos, depth int
	quote      byte
}

// end returns the index of the quote closing quoted text, or of the ]
// closing a flow list, or -1 when s does not hold it yet.
func (f *fmScan) end(s []byte) int {
	for ; f.pos < len(s); f.pos++ {
		c := s[f.pos]
		switch {
		case f.quote == '"' && c == '\\':
			f.pos++
		case f.quote != 0 && c == f.quote:
			if f.quote == '\'' && f.pos+1 < len(s) && s[f.pos+1] == '\'' {
				f.pos++
				continue
			}
			f.quote = 0
			if f.depth == 0 {
				return f.pos
			}
		case f.quote != 0:
		case c == '"' || c == '\'':
			f.quote = c
		case c == '[' || c == '{':
			f.depth++
		case c == ']' || c == '}':
			if f.depth--; f.depth == 0 {
				return f.pos
			}
		}
	}
	return -1
}

// fmQuoteEnd returns the index of the quote closing the quoted text s
// starts with, or -1.
func fmQuoteEnd(s string) int {
	sc := fmScan{pos: 1, quote: s[0]}
	return sc.end([]byte(s))
}

// fmEscapes are the one-character escapes of double-quoted YAML.
var fmEscapes = map[byte]string{'\\': "\\", '"': "\"", '/': "/", 'n': "\n", 't': "\t", '\t': "\t", 'r': "\r",
	'0': "\x00", 'a': "\a", 'b': "\b", 'e': "\x1b", 'f': "\f", 'v': "\v", ' ': " ",
	'N': "\u0085", '_': "\u00a0", 'L': "\u2028", 'P': "\u2029"}

// fmUnquote turns a quoted scalar, quotes included, into its text.
func fmUnquote(s string, num int, p *fmParser) (string, error) {
	inner := s[1 : len(s)-1]
	if s[0] == '\'' {
		return strings.ReplaceAll(inner, "''", "'"), nil
	}
	var b strings.Builder
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(inner) {
			return "", p.errf(num, "a backslash at the end of quoted text")
		}
		if r, ok := fmEscapes[inner[i]]; ok {
			b.WriteString(r)
			continue
		}
		digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[inner[i]]
		if digits == 0 {
			return "", p.errf(num, `unknown escape \%c in double-quoted text`, inner[i])
		}
		if i+1+digits > len(inner) {
			return "", p.errf(num, `escape \%c needs %d hex digits`, inner[i], digits)
		}
		n, err := strconv.ParseUint(inner[i+1:i+1+digits], 16, 32)
		if err != nil || !utf8.ValidRune(rune(n)) {
			return "", p.errf(num, `escape \%c needs %d hex digits of a valid character`, inner[i], digits)
		}
		b.WriteRune(rune(n))
		i += digits
	}
	return b.String(), nil
}

// fmSplitFlow splits the inside of a flow list at its top-level commas.
func fmSplitFlow(s string) []string {
	var items []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\'':
			if e := fmQuoteEnd(s[i:]); e > 0 {
				i += e
			}
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				items = append(items, s[start:i])
				start = i + 1
			}
		}
	}
	return append(items, s[start:])
}

func fmClip(s string) string {
	if utf8.RuneCountInString(s) <= 40 {
		return s
	}
	return string([]rune(s)[:40]) + "…"
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
	fmt.Fprint(stderr, skillsUsage.text(""))
	return exitUsage
}
