package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The one YAML-subset reader: the front matter of skills and prompt
// templates, and runok.yml. It reads what those files use, and says so
// when a file goes beyond it instead of guessing:
//
//   - block maps ("key: value") and lists ("- item") nested by indentation
//     (spaces only: a tab there is an error), a list item that starts a map
//     ("- allow: x" with "  message: y" under it), and a list at its key's
//     own indentation;
//   - plain scalars, which may continue on more-indented lines; single- and
//     double-quoted scalars with YAML's escapes (\n, \t, \\, \", \xNN,
//     \uNNNN, …), which may span lines;
//   - literal | and folded > block scalars with their chomping (- +) and
//     indentation indicators;
//   - flow lists [a, 'b', "c"], which may span lines; in whole documents
//     (runok.yml) also flow maps {key: value, …};
//   - # comments, a leading --- and a closing ... line of a document.
//
// Every scalar stays a string: `true` and `1` are not converted, and the
// reader of the file decides what a field means. Anchors (&a), aliases
// (*a), tags (!t), keys that are not plain text, and several documents in
// one file are not supported: anchors and tags are kept as the text they
// are written as, and the rest are errors. Every error names the file and
// the line.

// yamlError is a file the reader cannot use: where and why.
type yamlError struct {
	path string
	line int
	msg  string
}

func (e *yamlError) Error() string { return fmt.Sprintf("%s:%d: %s", e.path, e.line, e.msg) }

// yamlNode is one node of a document: a scalar (Str), a list (List) or a
// map (Keys in the order written, Map by key). Line is the line it starts
// on; KeyLine, for a map, the line of each key.
type yamlNode struct {
	Kind    yamlKind
	Line    int
	Str     string
	List    []*yamlNode
	Keys    []string
	Map     map[string]*yamlNode
	KeyLine map[string]int
}

type yamlKind int

const (
	yamlScalar yamlKind = iota
	yamlList
	yamlMap
)

// value is the node as plain Go values: string, []any, map[string]any.
func (n *yamlNode) value() any {
	switch n.Kind {
	case yamlList:
		out := []any{}
		for _, item := range n.List {
			out = append(out, item.value())
		}
		return out
	case yamlMap:
		out := map[string]any{}
		for _, k := range n.Keys {
			out[k] = n.Map[k].value()
		}
		return out
	}
	return n.Str
}

// yamlMaxDepth bounds nesting, so that a hostile file cannot exhaust the
// stack.
const yamlMaxDepth = 32

// parseFrontMatter parses the lines between the --- lines of a skill or a
// prompt template; first is the file's line number of lines[0]. It returns
// the top-level keys and the line each is on. Its errors are *yamlError
// without a path, which the caller fills in.
func parseFrontMatter(lines []string, first int) (map[string]any, map[string]int, error) {
	p := &yamlParser{lines: append([]string(nil), lines...), first: first}
	n, err := p.parseMap(0)
	if err != nil {
		return nil, nil, err
	}
	return n.value().(map[string]any), n.KeyLine, nil
}

// parseYAMLDocument parses a whole YAML file (runok.yml) whose top is a
// map; a file of comments only is an empty map. path names the file in
// errors.
func parseYAMLDocument(path string, data []byte) (*yamlNode, error) {
	fail := func(line int, format string, args ...any) (*yamlNode, error) {
		return nil, &yamlError{path, line, fmt.Sprintf(format, args...)}
	}
	if !utf8.Valid(data) {
		return fail(1+strings.Count(string(data[:yamlBadUTF8At(data)]), "\n"), "not UTF-8 text; save the file as UTF-8")
	}
	text := strings.TrimPrefix(string(data), "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(text, "\n")
	first := 1
header:
	for i, l := range lines {
		t := strings.TrimRight(l, " \t")
		switch {
		case t == "" || strings.HasPrefix(strings.TrimLeft(t, " \t"), "#"):
			continue
		case t == "---" || strings.HasPrefix(t, "--- "):
			if rest := strings.TrimSpace(t[3:]); rest != "" && rest[0] != '#' {
				return fail(i+1, "content on the --- line is not supported; start it on the next line")
			}
			lines[i] = ""
		case strings.HasPrefix(t, "%"):
			return fail(i+1, "YAML directives (%s) are not supported", yamlClip(t))
		}
		break header
	}
	for i, l := range lines {
		t := strings.TrimRight(l, " \t")
		if t == "..." {
			lines = lines[:i]
			break
		}
		if t == "---" {
			return fail(i+1, "a second document (---) in one file is not supported")
		}
	}
	p := &yamlParser{lines: lines, first: first, flowMaps: true}
	l, ok, err := p.peek()
	switch {
	case err != nil:
		return nil, yamlWithPath(err, path)
	case !ok:
		return &yamlNode{Kind: yamlMap, Line: 1, Map: map[string]*yamlNode{}, KeyLine: map[string]int{}}, nil
	case l.indent != 0:
		return fail(l.num, "the first key is indented; start the top-level keys at the left margin")
	}
	if _, _, isKey := yamlSplitKey(l.text); !isKey {
		return fail(l.num, "want a map of keys at the top (such as \"rules:\"), found %q", yamlClip(l.text))
	}
	n, err := p.parseMap(0)
	if err != nil {
		return nil, yamlWithPath(err, path)
	}
	if l, ok, _ := p.peek(); ok {
		return fail(l.num, "unexpected %q: not a \"key: value\" line at the top level", yamlClip(l.text))
	}
	return n, nil
}

func yamlWithPath(err error, path string) error {
	if e, ok := err.(*yamlError); ok {
		e.path = path
	}
	return err
}

// yamlParser reads a block of lines.
type yamlParser struct {
	lines    []string
	first    int  // the file's line number of lines[0]
	i        int  // the next line to read
	depth    int  // maps and lists open, limited to yamlMaxDepth
	flowMaps bool // read {a: b} as a map, not as text
}

// yamlLine is the line at the parser's position, seen as structure.
type yamlLine struct {
	num    int
	indent int
	text   string // after the indentation, trailing space removed
}

func (p *yamlParser) errf(line int, format string, args ...any) error {
	return &yamlError{line: line, msg: fmt.Sprintf(format, args...)}
}

// peek skips blank and comment lines and returns the next line, without
// consuming it. Indentation must be spaces: YAML forbids tabs there.
func (p *yamlParser) peek() (yamlLine, bool, error) {
	for ; p.i < len(p.lines); p.i++ {
		raw := p.lines[p.i]
		t := strings.TrimLeft(raw, " \t")
		if t == "" || t[0] == '#' {
			continue
		}
		n := len(raw) - len(strings.TrimLeft(raw, " "))
		l := yamlLine{num: p.first + p.i, indent: n, text: strings.TrimRight(t, " \t")}
		if n < len(raw) && raw[n] == '\t' {
			return l, true, p.errf(l.num, "a tab in the indentation; indent with spaces only")
		}
		return l, true, nil
	}
	return yamlLine{}, false, nil
}

// parseNode parses the block that starts at the next line, indented by
// indent, inside a parent indented by parent.
func (p *yamlParser) parseNode(indent, parent int) (*yamlNode, error) {
	l, _, err := p.peek()
	if err != nil {
		return nil, err
	}
	if yamlIsDash(l.text) {
		return p.parseList(indent)
	}
	if _, _, ok := yamlSplitKey(l.text); ok {
		return p.parseMap(indent)
	}
	p.i++
	return p.parseValue(l.text, parent, l.num, false)
}

// enter opens a map or list that starts on line num.
func (p *yamlParser) enter(num int) error {
	if p.depth++; p.depth > yamlMaxDepth {
		return p.errf(num, "nested more than %d levels deep", yamlMaxDepth)
	}
	return nil
}

// parseMap reads "key: value" lines indented by indent.
func (p *yamlParser) parseMap(indent int) (*yamlNode, error) {
	defer func() { p.depth-- }()
	if err := p.enter(p.first + min(p.i, len(p.lines)-1)); err != nil {
		return nil, err
	}
	m := &yamlNode{Kind: yamlMap, Line: p.first + p.i, Map: map[string]*yamlNode{}, KeyLine: map[string]int{}}
	if l, ok, _ := p.peek(); ok {
		m.Line = l.num
	}
	for {
		l, ok, err := p.peek()
		if err != nil || !ok || l.indent < indent {
			return m, err
		}
		if l.indent > indent {
			return nil, p.errf(l.num, "unexpected indentation (%d spaces where %d were expected)", l.indent, indent)
		}
		key, rest, ok := yamlSplitKey(l.text)
		if !ok {
			if yamlIsDash(l.text) {
				return nil, p.errf(l.num, "a list item where a key was expected")
			}
			return nil, p.errf(l.num, `expected "key: value", found %q`, yamlClip(l.text))
		}
		if _, dup := m.Map[key]; dup {
			return nil, p.errf(l.num, "key %q appears twice", key)
		}
		p.i++
		v, err := p.parseValue(rest, indent, l.num, true)
		if err != nil {
			return nil, err
		}
		m.Keys = append(m.Keys, key)
		m.Map[key], m.KeyLine[key] = v, l.num
	}
}

// parseList reads "- item" lines indented by indent.
func (p *yamlParser) parseList(indent int) (*yamlNode, error) {
	defer func() { p.depth-- }()
	if err := p.enter(p.first + min(p.i, len(p.lines)-1)); err != nil {
		return nil, err
	}
	list := &yamlNode{Kind: yamlList, Line: p.first + p.i, List: []*yamlNode{}}
	if l, ok, _ := p.peek(); ok {
		list.Line = l.num
	}
	for {
		l, ok, err := p.peek()
		if err != nil || !ok || l.indent < indent {
			return list, err
		}
		if l.indent > indent {
			return nil, p.errf(l.num, "unexpected indentation (%d spaces where %d were expected)", l.indent, indent)
		}
		if !yamlIsDash(l.text) {
			return list, nil
		}
		item := strings.TrimLeft(l.text[1:], " \t")
		col := indent + len(l.text) - len(item)
		var v *yamlNode
		if _, _, isKey := yamlSplitKey(item); isKey || yamlIsDash(item) {
			// "- key: v" or "- - v": a block starting at the item's column.
			// Blank out the dash and parse the line again from there.
			p.lines[p.i] = strings.Repeat(" ", col) + item
			v, err = p.parseNode(col, indent)
		} else {
			p.i++
			v, err = p.parseValue(item, indent, l.num, false)
		}
		if err != nil {
			return nil, err
		}
		list.List = append(list.List, v)
	}
}

// parseValue reads what follows "key:" or "-" on line num, continuing on
// the lines after it that are indented more than parent. In a map a list
// may sit at the key's own indentation.
func (p *yamlParser) parseValue(rest string, parent, num int, inMap bool) (*yamlNode, error) {
	rest = strings.TrimSpace(rest)
	scalar := func(s string, err error) (*yamlNode, error) {
		if err != nil {
			return nil, err
		}
		return &yamlNode{Kind: yamlScalar, Line: num, Str: s}, nil
	}
	switch {
	case rest == "" || rest[0] == '#':
		l, ok, err := p.peek()
		switch {
		case err != nil:
			return nil, err
		case ok && l.indent > parent:
			return p.parseNode(l.indent, parent)
		case ok && inMap && l.indent == parent && yamlIsDash(l.text):
			return p.parseList(parent)
		}
		return scalar("", nil)
	case rest[0] == '|' || rest[0] == '>':
		return scalar(p.blockScalar(rest, parent, num))
	case rest[0] == '"' || rest[0] == '\'':
		return scalar(p.quoted(rest, parent, num))
	case rest[0] == '[' || rest[0] == '{' && p.flowMaps:
		return p.flow(rest, parent, num)
	}
	return scalar(p.plain(rest, parent))
}

// plain reads an unquoted scalar: the rest of the line, folded together
// with more-indented lines that follow (a blank line among them becomes a
// line break). A following line that looks like a key is an indentation
// mistake, not text.
func (p *yamlParser) plain(first string, parent int) (string, error) {
	var b strings.Builder
	b.WriteString(yamlStripComment(first))
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
		if yamlLooksLikeKey(t) {
			return "", p.errf(p.first+j, "bad indentation: %q is indented under the line above; give it the indentation of its siblings, or quote the value above", yamlClip(t))
		}
		if blanks > 0 {
			b.WriteString(strings.Repeat("\n", blanks))
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(yamlStripComment(t))
		blanks = 0
		p.i = j + 1
	}
	return strings.TrimSpace(b.String()), nil
}

// quoted reads a single- or double-quoted scalar, which may continue on
// lines indented more than parent; line breaks fold into spaces.
func (p *yamlParser) quoted(rest string, parent, num int) (string, error) {
	q := rest[0]
	text := []byte(rest)
	sc := yamlScan{pos: 1, quote: q}
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
		return "", p.errf(num, "unexpected %q after the closing quote", yamlClip(after))
	}
	return yamlUnquote(string(text[:end+1]), num, p)
}

// flow reads a flow list [a, "b", c] — or, where flow maps are read, a
// flow map {a: b} — which may span lines.
func (p *yamlParser) flow(rest string, parent, num int) (*yamlNode, error) {
	closer := map[byte]byte{'[': ']', '{': '}'}[rest[0]]
	what := map[byte]string{'[': "[ list", '{': "{ map"}[rest[0]]
	text := []byte(rest)
	sc := yamlScan{}
	end := sc.end(text)
	for end < 0 {
		if p.i >= len(p.lines) {
			return nil, p.errf(num, "the %s opened here is never closed with %c", what, closer)
		}
		raw := p.lines[p.i]
		t := strings.TrimSpace(raw)
		n := len(raw) - len(strings.TrimLeft(raw, " "))
		if t != "" && n <= parent {
			return nil, p.errf(num, "the %s opened here is never closed with %c", what, closer)
		}
		p.i++
		text = append(append(text, ' '), t...)
		end = sc.end(text)
	}
	if after := strings.TrimSpace(string(text[end+1:])); after != "" && after[0] != '#' {
		return nil, p.errf(num, "unexpected %q after the closing %c", yamlClip(after), closer)
	}
	return p.flowNode(string(text[:end+1]), num)
}

// flowNode reads one complete flow collection.
func (p *yamlParser) flowNode(s string, num int) (*yamlNode, error) {
	defer func() { p.depth-- }()
	if err := p.enter(num); err != nil {
		return nil, err
	}
	isMap := s[0] == '{'
	n := &yamlNode{Kind: yamlList, Line: num, List: []*yamlNode{}}
	if isMap {
		n = &yamlNode{Kind: yamlMap, Line: num, Map: map[string]*yamlNode{}, KeyLine: map[string]int{}}
	}
	for _, item := range yamlSplitFlow(s[1 : len(s)-1]) {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		var key string
		if isMap {
			k, rest, ok := yamlSplitKey(item)
			if !ok {
				return nil, p.errf(num, "flow map entry %s is not \"key: value\"", yamlClip(item))
			}
			if _, dup := n.Map[k]; dup {
				return nil, p.errf(num, "key %q appears twice", k)
			}
			key, item = k, strings.TrimSpace(rest)
		}
		v, err := p.flowItem(item, num)
		if err != nil {
			return nil, err
		}
		if isMap {
			n.Keys = append(n.Keys, key)
			n.Map[key], n.KeyLine[key] = v, num
		} else {
			n.List = append(n.List, v)
		}
	}
	return n, nil
}

// flowItem reads one item of a flow collection: a quoted or plain scalar,
// or (where flow maps are read) a nested collection.
func (p *yamlParser) flowItem(item string, num int) (*yamlNode, error) {
	switch {
	case item != "" && (item[0] == '"' || item[0] == '\''):
		if yamlQuoteEnd(item) != len(item)-1 {
			return nil, p.errf(num, "list item %s has text after its closing quote", yamlClip(item))
		}
		s, err := yamlUnquote(item, num, p)
		return &yamlNode{Kind: yamlScalar, Line: num, Str: s}, err
	case p.flowMaps && item != "" && (item[0] == '[' || item[0] == '{'):
		sc := yamlScan{}
		if sc.end([]byte(item)) != len(item)-1 {
			return nil, p.errf(num, "item %s has text after its closing bracket", yamlClip(item))
		}
		return p.flowNode(item, num)
	}
	return &yamlNode{Kind: yamlScalar, Line: num, Str: item}, nil
}

// blockScalar reads a literal (|) or folded (>) block scalar: the lines
// indented more than parent that follow the header.
func (p *yamlParser) blockScalar(header string, parent, num int) (string, error) {
	style, chomp, explicit := header[0], byte(0), 0
	h := header[1:]
	for h != "" && h[0] != ' ' && h[0] != '\t' {
		switch c := h[0]; {
		case (c == '-' || c == '+') && chomp == 0:
			chomp = c
		case c >= '1' && c <= '9' && explicit == 0:
			explicit = int(c - '0')
		default:
			return "", p.errf(num, "bad block scalar header %q (want | or > with at most one of - + and one digit)", yamlClip(header))
		}
		h = h[1:]
	}
	if t := strings.TrimSpace(h); t != "" && t[0] != '#' {
		return "", p.errf(num, "unexpected %q after %c", yamlClip(t), style)
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
		s = yamlFold(content)
	}
	switch {
	case chomp == '+':
		return s + strings.Repeat("\n", trailing+min(1, len(content))), nil
	case chomp == '-' || len(content) == 0:
		return s, nil
	}
	return s + "\n", nil
}

// yamlFold joins the lines of a folded scalar: a line break between two
// lines becomes a space, each blank line a line break, and lines indented
// further keep their breaks.
func yamlFold(lines []string) string {
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

// yamlSplitKey splits "key: value" or "key:" at the first colon followed by
// a space, a tab or the end of the line.
func yamlSplitKey(text string) (key, rest string, ok bool) {
	if text == "" || yamlIsDash(text) || strings.ContainsRune("[]{}#&*!|>'\"%@`", rune(text[0])) {
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

// yamlLooksLikeKey is a stricter yamlSplitKey for text inside a plain
// scalar: a key of letters, digits, - and _, as the files' keys are.
func yamlLooksLikeKey(text string) bool {
	key, _, ok := yamlSplitKey(text)
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

func yamlIsDash(text string) bool {
	return text == "-" || strings.HasPrefix(text, "- ") || strings.HasPrefix(text, "-\t")
}

// yamlStripComment cuts a " # comment" off a plain scalar.
func yamlStripComment(s string) string {
	for i := 1; i < len(s); i++ {
		if s[i] == '#' && (s[i-1] == ' ' || s[i-1] == '\t') {
			return strings.TrimSpace(s[:i])
		}
	}
	return strings.TrimSpace(s)
}

// yamlScan finds where quoted text or a flow collection ends, keeping its
// place so that text growing line by line is scanned once. Set quote to
// start inside quoted text.
type yamlScan struct {
	pos, depth int
	quote      byte
}

// end returns the index of the quote closing quoted text, or of the ] or }
// closing a flow collection, or -1 when s does not hold it yet.
func (f *yamlScan) end(s []byte) int {
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

// yamlQuoteEnd returns the index of the quote closing the quoted text s
// starts with, or -1.
func yamlQuoteEnd(s string) int {
	sc := yamlScan{pos: 1, quote: s[0]}
	return sc.end([]byte(s))
}

// yamlEscapes are the one-character escapes of double-quoted YAML.
var yamlEscapes = map[byte]string{'\\': "\\", '"': "\"", '/': "/", 'n': "\n", 't': "\t", '\t': "\t", 'r': "\r",
	'0': "\x00", 'a': "\a", 'b': "\b", 'e': "\x1b", 'f': "\f", 'v': "\v", ' ': " ",
	'N': "\u0085", '_': "\u00a0", 'L': "\u2028", 'P': "\u2029"}

// yamlUnquote turns a quoted scalar, quotes included, into its text.
func yamlUnquote(s string, num int, p *yamlParser) (string, error) {
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
		if r, ok := yamlEscapes[inner[i]]; ok {
			b.WriteString(r)
			continue
		}
		digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[inner[i]]
		if digits == 0 {
			return "", p.errf(num, `unknown escape \%c in double-quoted text (write \\ for a backslash, or use single quotes)`, inner[i])
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

// yamlSplitFlow splits the inside of a flow collection at its top-level
// commas.
func yamlSplitFlow(s string) []string {
	var items []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\'':
			if e := yamlQuoteEnd(s[i:]); e > 0 {
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

func yamlClip(s string) string {
	if utf8.RuneCountInString(s) <= 40 {
		return s
	}
	return string([]rune(s)[:40]) + "…"
}

// yamlBadUTF8At is the offset of the first byte that is not UTF-8.
func yamlBadUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}
