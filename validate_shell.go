package main

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The shell command-line splitter validators need. It is a recogniser, not
// an interpreter: it finds every simple command a line would run — across
// ; && || | & and newlines, inside ( ), { }, $( ), ` `, <( ), if/while/for/
// case bodies and function definitions, and through wrappers (sudo, env,
// bash -c '…') — and expands nothing. It never fails: malformed input (an
// unclosed quote) ends at the end of the line, and a line nested deeper than
// maxShellDepth is reported incomplete rather than followed.

// ShellCommand is one simple command of a command line: what a validator
// is asked about.
type ShellCommand struct {
	// Name is the base command name ("curl" for /usr/bin/curl), or the word
	// as written when the name is only known at run time ("$CMD").
	Name string
	// Words are the command word and its arguments, quotes removed,
	// expansions ($x, $(…)) left as written; assignments and redirections
	// are not words.
	Words []string
	// Env holds the variables assigned for the command: VAR=value before it,
	// through env, or assigned or exported earlier in the line.
	Env map[string]string
	// Raw is the command's text in the line (or in the string a bash -c
	// or eval ran); for a command unwrapped from sudo, env, … it is the
	// wrapper's text.
	Raw string
	// Via names the wrappers it was found in ("sudo", "bash -c"), if any.
	Via string
}

// maxShellDepth bounds nesting: $( $( … ) ), subshells, bash -c inside
// bash -c, sudo sudo …. Deeper is reported incomplete.
const maxShellDepth = 64

// maxArithRetries bounds how often $(( … )) that turns out not to be
// arithmetic is re-read as $( ( … ) ); past it, (( is read as two
// subshells, which finds more commands, never fewer.
const maxArithRetries = 64

// SplitCommandLine returns the simple commands of a shell command line in
// the order they appear, each wrapper followed by the command it runs.
// complete is false when part of the line was nested too deeply to follow.
func SplitCommandLine(line string) (cmds []ShellCommand, complete bool) {
	out := &shellOut{vars: map[string]string{}}
	p := &shellParser{src: line, out: out}
	p.list(false, false)
	return out.cmds, !out.incomplete
}

// shellOut is what the parsers of one line (the line's and those of the
// backticks and bash -c strings in it) share.
type shellOut struct {
	cmds         []ShellCommand
	vars         map[string]string // assigned or exported so far in the line
	incomplete   bool
	arithRetries int
}

type shellParser struct {
	src     string
	pos     int
	depth   int
	via     string
	env     map[string]string // what the command that ran this string had (bash -c)
	out     *shellOut
	pending []heredoc // here-documents whose bodies start after the next newline
}

type heredoc struct {
	delim  string
	strip  bool // <<- : leading tabs are ignored
	expand bool // unquoted delimiter: $( ) and ` ` in the body run
	// shell is set when the body is the script of a shell reading stdin
	// (bash <<EOF): then its lines are commands, not data.
	shell *ShellCommand
}

// stop is why a list of commands ended.
type stop int

const (
	stopNone     stop = iota
	stopEOF           // end of input
	stopParen         // the ) closing a subshell or $( )
	stopCaseItem      // ;; ;& ;;& ending a case item
	stopEsac          // esac
)

// word is one shell word as read.
type word struct {
	val   string // quotes removed, expansions as written
	raw   string // source text
	plain bool   // no quotes, escapes or expansions: a keyword candidate
}

// cmdBuilder collects the words of the simple command being read.
type cmdBuilder struct {
	words       []word
	started     bool
	start, end  int
	header      bool // a for/select header: words that are not a command
	afterTime   bool
	docsFrom    int      // p.pending[docsFrom:] are this command's here-documents
	herestrings []string // <<< words
}

func (p *shellParser) child(src string) *shellParser {
	if p.depth >= maxShellDepth {
		p.out.incomplete = true
		return nil
	}
	return &shellParser{src: src, depth: p.depth + 1, via: p.via, env: p.env, out: p.out}
}

// nest runs f one level deeper, or marks the line incomplete and skips the
// rest of the input when that is too deep.
func (p *shellParser) nest(f func()) {
	if p.depth >= maxShellDepth {
		p.out.incomplete = true
		p.pos = len(p.src)
		return
	}
	p.depth++
	f()
	p.depth--
}

func (p *shellParser) has(s string) bool { return strings.HasPrefix(p.src[p.pos:], s) }

func (p *shellParser) peek(off int) byte {
	if p.pos+off < len(p.src) {
		return p.src[p.pos+off]
	}
	return 0
}

// list reads commands until the end of input or, inside parentheses, the
// closing ); in a case body also until ;; or esac.
func (p *shellParser) list(inParens, inCase bool) stop {
	for {
		if s := p.command(inParens, inCase); s != stopNone {
			return s
		}
	}
}

// command reads one simple command and the operator after it.
func (p *shellParser) command(inParens, inCase bool) stop {
	var c cmdBuilder
	for {
		p.blanks()
		if p.pos >= len(p.src) {
			p.finish(&c)
			return stopEOF
		}
		if !c.started {
			c.started, c.start, c.end, c.docsFrom = true, p.pos, p.pos, len(p.pending)
		}
		ch := p.src[p.pos]
		switch {
		case ch == '#':
			p.comment()
			continue
		case ch == '\n':
			p.finish(&c)
			p.newline()
			return stopNone
		case ch == ';':
			p.finish(&c)
			switch {
			case p.has(";;&"):
				p.pos += 3
			case p.has(";;"), p.has(";&"):
				p.pos += 2
			default:
				p.pos++
				return stopNone
			}
			if inCase {
				return stopCaseItem
			}
			return stopNone
		case ch == '&' && p.peek(1) == '>':
			p.redirect(&c)
			c.end = p.pos
			continue
		case ch == '&' || ch == '|':
			p.finish(&c)
			p.pos++
			if n := p.peek(0); n == '&' || n == '|' {
				p.pos++
			}
			return stopNone
		case ch == '(':
			if len(c.words) == 0 && p.has("((") && p.arith() {
				c.end = p.pos
				continue
			}
			if len(c.words) > 0 && p.functionParens() {
				c = cmdBuilder{} // name() — a function definition; the body follows
				continue
			}
			p.pos++
			var s stop
			p.nest(func() { s = p.list(true, false) })
			if s == stopEOF || p.pos >= len(p.src) {
				p.finish(&c)
				return stopEOF
			}
			c.end = p.pos
			continue
		case ch == ')':
			p.finish(&c)
			p.pos++
			if inParens {
				return stopParen
			}
			return stopNone // a stray ): a typo, or a case pattern we were not in
		case (ch == '<' || ch == '>') && p.peek(1) != '(':
			p.redirect(&c)
			c.end = p.pos
			continue
		case ch >= '0' && ch <= '9' && p.fdRedirect():
			p.redirect(&c)
			c.end = p.pos
			continue
		}

		before := p.pos
		w := p.word()
		if p.pos == before {
			p.pos++ // cannot happen; guarantees progress whatever the input
			continue
		}
		c.end = p.pos
		if len(c.words) == 0 && !c.header && w.plain {
			if s, handled := p.keyword(&c, w.val, inParens, inCase); handled {
				if s != stopNone {
					p.finish(&c)
					return s
				}
				continue
			}
		}
		if c.afterTime && len(c.words) == 0 && w.val == "-p" {
			continue
		}
		c.afterTime = false
		c.words = append(c.words, w)
	}
}

// keyword acts on a reserved word at command position. handled is false for
// an ordinary word.
func (p *shellParser) keyword(c *cmdBuilder, kw string, inParens, inCase bool) (s stop, handled bool) {
	switch kw {
	case "if", "then", "else", "elif", "fi", "while", "until", "do", "done", "!", "{", "}", "coproc":
	case "time":
		c.afterTime = true
	case "esac":
		if inCase {
			return stopEsac, true
		}
	case "for", "select":
		p.blanks()
		if p.has("((") {
			p.arith()
		}
		c.header = true
		return stopNone, true
	case "function":
		p.blanks()
		if p.pos < len(p.src) && !isShellOperator(p.src[p.pos]) {
			p.word()
		}
		p.blanks()
		if p.peek(0) == '(' {
			p.functionParens()
		}
	case "[[":
		p.condition()
	case "case":
		var s stop
		p.nest(func() { s = p.caseCommand(inParens) })
		if s != stopNone {
			return s, true
		}
	default:
		return stopNone, false
	}
	c.started = false
	return stopNone, true
}

// finish hands the collected words on as a simple command.
func (p *shellParser) finish(c *cmdBuilder) {
	words, header, start, end, docsFrom, herestrings := c.words, c.header, c.start, c.end, c.docsFrom, c.herestrings
	*c = cmdBuilder{}
	if header || len(words) == 0 {
		return
	}
	var env map[string]string
	i := 0
	for ; i < len(words); i++ {
		name, val, ok := assignment(words[i])
		if !ok {
			break
		}
		if env == nil {
			env = map[string]string{}
		}
		env[name] = val
	}
	if i == len(words) {
		for k, v := range env { // assignments alone set variables for later commands
			p.out.vars[k] = v
		}
		return
	}
	for _, from := range []map[string]string{p.out.vars, p.env} {
		for k, v := range from {
			if _, ok := env[k]; !ok {
				if env == nil {
					env = map[string]string{}
				}
				env[k] = v
			}
		}
	}
	vals := make([]string, 0, len(words)-i)
	for _, w := range words[i:] {
		vals = append(vals, w.val)
	}
	cmd := ShellCommand{
		Name:  commandName(words[i].val),
		Words: vals,
		Env:   env,
		Raw:   strings.TrimSpace(p.src[start:end]),
		Via:   p.via,
	}
	mark := len(p.out.cmds)
	p.emit(cmd, 0)
	// A shell reading its script from stdin — itself or through a wrapper
	// (sudo bash <<EOF) — runs the here-documents and here-strings.
	for _, sh := range p.out.cmds[mark:] {
		if sh.Raw != cmd.Raw || !shellNames[sh.Name] || !readsScriptFromStdin(sh.Words[1:]) {
			continue
		}
		for i := min(docsFrom, len(p.pending)); i < len(p.pending); i++ {
			p.pending[i].shell = &sh
		}
		for _, h := range herestrings {
			p.script(h, sh, sh.Name+" <<<")
		}
		break
	}
	if cmd.Name == "export" {
		for _, w := range words[i+1:] {
			if name, val, ok := assignment(w); ok {
				p.out.vars[name] = val
			}
		}
	}
}

// emit records a simple command and, when it is a wrapper (sudo, env,
// bash -c, eval, find -exec …), the command it runs. level counts the
// wrappers already unwrapped on this path.
func (p *shellParser) emit(c ShellCommand, level int) {
	p.out.cmds = append(p.out.cmds, c)
	if len(c.Words) < 2 {
		return
	}
	if p.depth+level >= maxShellDepth {
		p.out.incomplete = true
		return
	}
	args := c.Words[1:]
	switch {
	case shellNames[c.Name]:
		if script, ok := shellScript(args); ok {
			p.script(script, c, c.Name+" -c")
		}
	case c.Name == "eval":
		p.script(strings.Join(args, " "), c, "eval")
	case c.Name == "find":
		for _, inner := range findExecs(args) {
			p.emit(ShellCommand{Name: commandName(inner[0]), Words: inner, Env: c.Env, Raw: c.Raw, Via: joinVia(c.Via, "find -exec")}, level+1)
		}
	default:
		if dashCWrappers[c.Name] {
			if script, ok := dashCScript(args); ok {
				p.script(script, c, c.Name+" -c")
				return
			}
		}
		rest, env, ok := unwrapArgs(c.Name, args)
		if !ok || len(rest) == 0 {
			return
		}
		for k, v := range c.Env {
			if _, set := env[k]; !set {
				env[k] = v // env is never nil when ok
			}
		}
		p.emit(ShellCommand{Name: commandName(rest[0]), Words: rest, Env: env, Raw: c.Raw, Via: joinVia(c.Via, c.Name)}, level+1)
	}
}

// script splits a command string a wrapper runs (bash -c, eval).
func (p *shellParser) script(src string, wrapper ShellCommand, via string) {
	k := p.child(src)
	if k == nil {
		return
	}
	k.via, k.env = joinVia(wrapper.Via, via), wrapper.Env
	k.list(false, false)
}

func joinVia(outer, inner string) string {
	if outer == "" {
		return inner
	}
	return outer + " > " + inner
}

// commandName is the base name validators match: "curl" for /usr/bin/curl;
// a name computed at run time ($CMD, $(which curl)) stays as written.
func commandName(w string) string {
	trimmed := strings.TrimRight(w, "/")
	if trimmed == "" {
		return w
	}
	last := trimmed[strings.LastIndexByte(trimmed, '/')+1:]
	if strings.ContainsAny(last, "$`") {
		return w
	}
	return last
}

// blanks skips spaces, tabs and backslash-newline continuations.
func (p *shellParser) blanks() {
	for p.pos < len(p.src) {
		switch {
		case p.src[p.pos] == ' ' || p.src[p.pos] == '\t':
			p.pos++
		case p.has("\\\n"):
			p.pos += 2
		default:
			return
		}
	}
}

func (p *shellParser) comment() {
	if i := strings.IndexByte(p.src[p.pos:], '\n'); i >= 0 {
		p.pos += i
	} else {
		p.pos = len(p.src)
	}
}

// newline consumes a newline; the bodies of here-documents opened on the
// line it ends follow it.
func (p *shellParser) newline() {
	p.pos++
	docs := p.pending
	p.pending = nil
	for _, d := range docs {
		start, end := p.pos, len(p.src)
		for p.pos < len(p.src) {
			line, next := p.src[p.pos:], len(p.src)
			if i := strings.IndexByte(line, '\n'); i >= 0 {
				line, next = line[:i], p.pos+i+1
			}
			if d.strip {
				line = strings.TrimLeft(line, "\t")
			}
			if line == d.delim {
				end, p.pos = p.pos, next
				break
			}
			p.pos = next
		}
		// The body is data — unless a shell reads it as its script — but
		// with an unquoted delimiter its $( ) and ` ` run.
		if d.shell != nil {
			p.script(p.src[start:end], *d.shell, d.shell.Name+" <<"+d.delim)
		} else if d.expand {
			if k := p.child(p.src[start:end]); k != nil {
				var discard strings.Builder
				k.dquoted(&discard, &word{}, false)
			}
		}
	}
}

func isShellOperator(ch byte) bool {
	return strings.IndexByte(" \t\n;&|()<>", ch) >= 0
}

// atWord reports whether the input continues with kw as a whole word.
func (p *shellParser) atWord(kw string) bool {
	if !p.has(kw) {
		return false
	}
	end := p.pos + len(kw)
	return end == len(p.src) || isShellOperator(p.src[end])
}

// fdRedirect reports whether digits here are a file descriptor before a
// redirection (2>&1), moving to the operator when they are.
func (p *shellParser) fdRedirect() bool {
	j := p.pos
	for j < len(p.src) && p.src[j] >= '0' && p.src[j] <= '9' {
		j++
	}
	if j < len(p.src) && (p.src[j] == '<' || p.src[j] == '>') && (j+1 >= len(p.src) || p.src[j+1] != '(') {
		p.pos = j
		return true
	}
	return false
}

// redirect skips a redirection and its target; a target is not an argument,
// but the expansions in it still run. << and <<- open a here-document.
func (p *shellParser) redirect(c *cmdBuilder) {
	switch {
	case p.has("<<<"):
		p.pos += 3
		if w := p.target(); w.raw != "" {
			c.herestrings = append(c.herestrings, w.val)
		}
		return
	case p.has("<<-"), p.has("<<"):
		strip := p.has("<<-")
		p.pos += 2
		if strip {
			p.pos++
		}
		if w := p.target(); w.raw != "" {
			p.pending = append(p.pending, heredoc{delim: w.val, strip: strip, expand: !strings.ContainsAny(w.raw, `'"\`)})
		}
		return
	case p.has("&>>"):
		p.pos += 3
	case p.has("&>"), p.has(">>"), p.has(">&"), p.has(">|"), p.has("<&"), p.has("<>"):
		p.pos += 2
	default:
		p.pos++
	}
	p.target()
}

func (p *shellParser) target() word {
	p.blanks()
	if p.pos >= len(p.src) {
		return word{}
	}
	if ch := p.src[p.pos]; isShellOperator(ch) && !((ch == '<' || ch == '>') && p.peek(1) == '(') {
		return word{}
	}
	return p.word()
}

// functionParens reads the () of a function definition name ().
func (p *shellParser) functionParens() bool {
	j := p.pos + 1
	for j < len(p.src) && (p.src[j] == ' ' || p.src[j] == '\t') {
		j++
	}
	if j < len(p.src) && p.src[j] == ')' {
		p.pos = j + 1
		return true
	}
	return false
}

// arith skips an arithmetic expression at (( — a command (( … )), or
// $(( … )) with pos after the $ — following the command substitutions in
// it. It reports false, leaving pos where it was, when the parentheses do
// not close with )) — then it was a subshell inside a subshell — or do not
// close at all, so that the rest of the line is searched for commands.
func (p *shellParser) arith() bool {
	if p.out.arithRetries >= maxArithRetries {
		return false
	}
	ok := true // too deep, nest skips to the end of the input: consumed
	p.nest(func() { ok = p.arithExpr() })
	return ok
}

func (p *shellParser) arithExpr() bool {
	start, mark := p.pos, len(p.out.cmds)
	p.pos += 2
	depth := 0
	var discard strings.Builder
	var w word
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case '(':
			depth++
			p.pos++
		case ')':
			if depth > 0 {
				depth--
				p.pos++
				continue
			}
			if p.has("))") {
				p.pos += 2
				return true
			}
			p.pos = len(p.src) // not arithmetic
		default:
			p.wordPart(&discard, &w)
		}
	}
	p.out.arithRetries++
	p.pos, p.out.cmds = start, p.out.cmds[:mark]
	return false
}

// condition skips [[ … ]], whose words are operands, not commands, and
// whose < > && || are operators of the test.
func (p *shellParser) condition() {
	for {
		p.blanks()
		if p.pos >= len(p.src) {
			return
		}
		ch := p.src[p.pos]
		switch {
		case p.has("]]"):
			p.pos += 2
			return
		case ch == '\n':
			p.newline()
		case ch == ';':
			return
		case isShellOperator(ch) && !((ch == '<' || ch == '>') && p.peek(1) == '('):
			p.pos++
		default:
			p.word()
		}
	}
}

// caseCommand reads case WORD in PATTERN) LIST ;; … esac after the case.
func (p *shellParser) caseCommand(inParens bool) stop {
	for {
		p.blanks()
		if p.pos >= len(p.src) {
			return stopEOF
		}
		if ch := p.src[p.pos]; ch == '\n' {
			p.newline()
			continue
		} else if isShellOperator(ch) {
			return stopNone // malformed: go on with what follows
		}
		if w := p.word(); w.plain && w.val == "in" {
			break
		}
	}
	for {
		p.blanks()
		if p.pos >= len(p.src) {
			return stopEOF
		}
		switch ch := p.src[p.pos]; {
		case ch == '\n':
			p.newline()
			continue
		case ch == '#':
			p.comment()
			continue
		case ch == ';':
			p.pos++
			continue
		case ch == ')':
			p.pos++
			if inParens {
				return stopParen // an unterminated case inside ( )
			}
			continue
		case p.atWord("esac"):
			p.pos += 4
			return stopNone
		case ch == '(':
			p.pos++
		}
		p.pattern()
		switch s := p.list(inParens, true); s {
		case stopCaseItem:
		case stopEsac:
			return stopNone
		default:
			return s
		}
	}
}

// pattern skips a case pattern up to its closing ).
func (p *shellParser) pattern() {
	for {
		p.blanks()
		if p.pos >= len(p.src) {
			return
		}
		switch ch := p.src[p.pos]; {
		case ch == ')':
			p.pos++
			return
		case ch == '|':
			p.pos++
		case isShellOperator(ch):
			return
		default:
			p.word()
		}
	}
}

// word reads one word: quotes removed, expansions kept as written, and
// the commands in them ($( ), ` `, <( )) split on the way.
func (p *shellParser) word() word {
	start := p.pos
	var b strings.Builder
	w := word{plain: true}
	// Plain bytes are copied in runs; a word that is all plain bytes is a
	// substring of the line and copies nothing.
	run := start
	flush := func() { b.WriteString(p.src[run:p.pos]) }
loop:
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', ';', '&', '|', ')':
			break loop
		case '(':
			if !isArrayAssignment(p.src[start:p.pos]) {
				break loop
			}
			flush()
			w.plain = false
			p.nest(func() { p.arrayValue(&b) })
		case '<', '>':
			if p.peek(1) != '(' {
				break loop
			}
			flush()
			w.plain = false
			s := p.pos
			p.pos += 2
			p.nest(func() { p.list(true, false) })
			b.WriteString(p.src[s:p.pos])
		case '\\', '\'', '"', '`', '$':
			flush()
			p.wordPart(&b, &w)
		default:
			p.pos++
			continue
		}
		run = p.pos
	}
	w.raw = p.src[start:p.pos]
	if run == start {
		w.val = w.raw
	} else {
		flush()
		w.val = b.String()
	}
	return w
}

// wordPart reads one piece of a word: an escape, a quoted string, an
// expansion or a plain byte.
func (p *shellParser) wordPart(b *strings.Builder, w *word) {
	switch ch := p.src[p.pos]; ch {
	case '\\':
		w.plain = false
		if p.pos+1 >= len(p.src) {
			b.WriteByte('\\')
			p.pos++
			return
		}
		if p.src[p.pos+1] != '\n' {
			b.WriteByte(p.src[p.pos+1])
		}
		p.pos += 2
	case '\'':
		w.plain = false
		end := strings.IndexByte(p.src[p.pos+1:], '\'')
		if end < 0 {
			b.WriteString(p.src[p.pos+1:])
			p.pos = len(p.src)
			return
		}
		b.WriteString(p.src[p.pos+1 : p.pos+1+end])
		p.pos += end + 2
	case '"':
		w.plain = false
		p.pos++
		p.dquoted(b, w, true)
	case '`':
		w.plain = false
		p.backtick(b)
	case '$':
		p.dollar(b, w, false)
	default:
		b.WriteByte(ch)
		p.pos++
	}
}

// dquoted reads double-quoted text after the opening quote up to the
// closing one, or — closing false, for a here-document body — to the end.
func (p *shellParser) dquoted(b *strings.Builder, w *word, closing bool) {
	for p.pos < len(p.src) {
		switch ch := p.src[p.pos]; ch {
		case '"':
			if closing {
				p.pos++
				return
			}
			b.WriteByte(ch)
			p.pos++
		case '\\':
			n := p.peek(1)
			switch n {
			case '$', '`', '"', '\\':
				b.WriteByte(n)
				p.pos += 2
			case '\n':
				p.pos += 2
			default:
				b.WriteByte('\\')
				p.pos++
			}
		case '$':
			p.dollar(b, w, true)
		case '`':
			p.backtick(b)
		default:
			b.WriteByte(ch)
			p.pos++
		}
	}
}

// dollar reads what follows a $: $( ), $(( )), ${ }, $' ', $" " or a
// parameter, which stays as written.
func (p *shellParser) dollar(b *strings.Builder, w *word, quoted bool) {
	start := p.pos
	switch n := p.peek(1); {
	case n == '(':
		w.plain = false
		if p.peek(2) == '(' {
			p.pos++
			if p.arith() {
				b.WriteString(p.src[start:p.pos])
				return
			}
			p.pos = start
		}
		p.pos += 2
		p.nest(func() { p.list(true, false) })
		b.WriteString(p.src[start:p.pos])
	case n == '{':
		w.plain = false
		p.pos += 2
		p.nest(func() { p.paramExp(quoted) })
		b.WriteString(p.src[start:p.pos])
	case n == '\'' && !quoted:
		w.plain = false
		p.pos += 2
		p.ansiC(b)
	case n == '"' && !quoted:
		w.plain = false
		p.pos += 2
		p.dquoted(b, w, true)
	default:
		if n == '_' || n >= 'a' && n <= 'z' || n >= 'A' && n <= 'Z' || n != 0 && strings.IndexByte("@*#?$!-0123456789", n) >= 0 {
			w.plain = false
		}
		b.WriteByte('$')
		p.pos++
	}
}

// paramExp skips ${ … } after the ${, following the expansions inside.
func (p *shellParser) paramExp(quoted bool) {
	var discard strings.Builder
	var w word
	depth := 1
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case '}':
			p.pos++
			if depth--; depth == 0 {
				return
			}
		case '{':
			depth++
			p.pos++
		case '\\':
			p.pos = min(p.pos+2, len(p.src))
		case '\'':
			if quoted {
				p.pos++
				continue
			}
			if end := strings.IndexByte(p.src[p.pos+1:], '\''); end >= 0 {
				p.pos += end + 2
			} else {
				p.pos = len(p.src)
			}
		case '"':
			p.pos++
			p.dquoted(&discard, &w, true)
		case '$':
			p.dollar(&discard, &w, true)
		case '`':
			p.backtick(&discard)
		default:
			p.pos++
		}
	}
}

// backtick reads `…`, splitting the command inside it.
func (p *shellParser) backtick(b *strings.Builder) {
	start := p.pos
	p.pos++
	var inner strings.Builder
	for p.pos < len(p.src) {
		ch := p.src[p.pos]
		if ch == '`' {
			p.pos++
			break
		}
		if ch == '\\' && p.pos+1 < len(p.src) {
			n := p.src[p.pos+1]
			if n != '$' && n != '`' && n != '\\' {
				inner.WriteByte('\\')
			}
			inner.WriteByte(n)
			p.pos += 2
			continue
		}
		inner.WriteByte(ch)
		p.pos++
	}
	b.WriteString(p.src[start:p.pos])
	if k := p.child(inner.String()); k != nil {
		k.list(false, false)
	}
}

// ansiC decodes $'…' after the opening quote: $'cu\x72l' is curl.
func (p *shellParser) ansiC(b *strings.Builder) {
	for p.pos < len(p.src) {
		ch := p.src[p.pos]
		p.pos++
		if ch == '\'' {
			return
		}
		if ch != '\\' || p.pos >= len(p.src) {
			b.WriteByte(ch)
			continue
		}
		e := p.src[p.pos]
		p.pos++
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'v':
			b.WriteByte(11)
		case 'c':
			if p.pos < len(p.src) {
				b.WriteByte(p.src[p.pos] & 0x1f)
				p.pos++
			}
		case 'x', 'u', 'U':
			digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			n, used := p.number(16, digits)
			switch {
			case used == 0:
				b.WriteByte('\\')
				b.WriteByte(e)
			case e == 'x':
				b.WriteByte(byte(n))
			default:
				b.WriteRune(rune(n)) // invalid code points become U+FFFD
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			p.pos--
			n, _ := p.number(8, 3)
			b.WriteByte(byte(n))
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
}

// number reads up to max digits in base.
func (p *shellParser) number(base, max int) (n uint64, used int) {
	for used < max && p.pos < len(p.src) {
		d, err := strconv.ParseUint(p.src[p.pos:p.pos+1], base, 8)
		if err != nil {
			break
		}
		n = n*uint64(base) + d
		p.pos++
		used++
	}
	return n, used
}

// arrayValue reads the ( … ) of name=( … ).
func (p *shellParser) arrayValue(b *strings.Builder) {
	start := p.pos
	p.pos++
	for p.pos < len(p.src) {
		p.blanks()
		if p.pos >= len(p.src) {
			break
		}
		ch := p.src[p.pos]
		if ch == ')' {
			p.pos++
			break
		}
		switch {
		case ch == '\n':
			p.newline()
		case ch == '#':
			p.comment()
		case isShellOperator(ch) && !((ch == '<' || ch == '>') && p.peek(1) == '('):
			p.pos++
		default:
			p.word()
		}
	}
	b.WriteString(p.src[start:p.pos])
}

// assignmentName measures the NAME=, NAME+= or NAME[i]= a raw word starts
// with: the name and the length up to and including the =.
func assignmentName(raw string) (name string, n int) {
	i := 0
	for i < len(raw) && (raw[i] == '_' || raw[i] >= 'a' && raw[i] <= 'z' || raw[i] >= 'A' && raw[i] <= 'Z' || i > 0 && raw[i] >= '0' && raw[i] <= '9') {
		i++
	}
	if i == 0 {
		return "", 0
	}
	j := i
	if j < len(raw) && raw[j] == '[' {
		k := strings.IndexByte(raw[j:], ']')
		if k < 0 {
			return "", 0
		}
		j += k + 1
	}
	if j < len(raw) && raw[j] == '+' {
		j++
	}
	if j >= len(raw) || raw[j] != '=' {
		return "", 0
	}
	return raw[:i], j + 1
}

// assignment reports whether w is VAR=value (the name unquoted).
func assignment(w word) (name, val string, ok bool) {
	name, n := assignmentName(w.raw)
	k := strings.IndexByte(w.val, '=')
	if n == 0 || k < 0 {
		return "", "", false
	}
	return name, w.val[k+1:], true
}

func isArrayAssignment(prefix string) bool {
	_, n := assignmentName(prefix)
	return n > 0 && n == len(prefix)
}

// Wrappers: commands that run the command in their arguments.

var shellNames = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true}

// shellScript finds the command string of sh -c '…' (also -lc, -ec …).
func shellScript(args []string) (string, bool) {
	c := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-":
			if c && i+1 < len(args) {
				return args[i+1], true
			}
			return "", false
		case strings.HasPrefix(a, "--"):
			if a == "--rcfile" || a == "--init-file" {
				i++
			}
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			for _, ch := range a[1:] {
				switch ch {
				case 'c':
					c = true
				case 'o', 'O':
					i++
				}
			}
		default:
			return a, c
		}
	}
	return "", false
}

// readsScriptFromStdin reports whether a shell with these arguments runs
// what it reads on stdin: no -c and no script file, or -s.
func readsScriptFromStdin(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-":
			return true
		case a == "--":
			return i+1 >= len(args) // bash -- script.sh runs the file
		case strings.HasPrefix(a, "--"):
			if a == "--rcfile" || a == "--init-file" {
				i++
			}
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			for _, ch := range a[1:] {
				switch ch {
				case 'c':
					return false
				case 's':
					return true
				case 'o', 'O':
					i++
				}
			}
		default:
			return false
		}
	}
	return true
}

// findExecs returns the commands of find's -exec, -execdir, -ok, -okdir.
func findExecs(args []string) [][]string {
	var out [][]string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j] != ";" && args[j] != "+" {
				j++
			}
			if j > i+1 {
				out = append(out, args[i+1:j])
			}
			i = j
		}
	}
	return out
}

// wrapperSpec is how a wrapper's own options look, so the command after
// them can be found.
type wrapperSpec struct {
	values   string // options that take a value
	stop     string // options after which no command follows (command -v)
	assigns  bool   // NAME=value words may come before the command
	operands int    // positional words before the command (timeout's duration)
}

var wrapperSpecs = map[string]wrapperSpec{
	"sudo":        {values: "-u -g -h -p -C -D -r -t -T -U -R --user --group --host --prompt --close-from --chdir --role --type --command-timeout --other-user --chroot", stop: "-e --edit -l --list -v --validate -V --version -K --remove-timestamp", assigns: true},
	"doas":        {values: "-u -C"},
	"env":         {values: "-u -C -S --unset --chdir --split-string", assigns: true},
	"nice":        {values: "-n --adjustment"},
	"nohup":       {},
	"timeout":     {values: "-s -k --signal --kill-after", operands: 1},
	"xargs":       {values: "-a -d -E -I -L -n -P -s --arg-file --delimiter --eof --replace --max-lines --max-args --max-procs --max-chars --process-slot-var"},
	"exec":        {values: "-a"},
	"command":     {stop: "-v -V"},
	"builtin":     {},
	"time":        {values: "-f -o --format --output"},
	"stdbuf":      {values: "-i -o -e --input --output --error"},
	"setsid":      {},
	"flock":       {values: "-w -E --timeout --conflict-exit-code", operands: 1},
	"ionice":      {values: "-c -n -p -P -u --class --classdata --pid --pgid --uid"},
	"chroot":      {values: "--userspec --groups", operands: 1},
	"watch":       {values: "-n -d -q --interval --differences --equexit"},
	"unbuffer":    {},
	"busybox":     {},
	"unshare":     {values: "-S -G --setuid --setgid --root --wd --propagation --map-user --map-group"},
	"nsenter":     {values: "-t -S -G -r -w --target --setuid --setgid --root --wd"},
	"systemd-run": {values: "-p -u -E -M --property --unit --setenv --description --slice --working-directory --uid --gid --nice --machine"},
	"taskset":     {operands: 1, stop: "-p --pid"},
	"chrt":        {operands: 1, stop: "-p --pid -m --max"},
	"sg":          {operands: 1},
	"runuser":     {values: "-u -g -G -s -w --user --group --supp-group --shell --whitelist-environment"},
}

// dashCWrappers run a command string given with -c (or --command) through
// a shell: su -c '…', runuser -c '…', script -qc '…', flock LOCK -c '…',
// sg GROUP -c '…'.
var dashCWrappers = map[string]bool{"su": true, "runuser": true, "script": true, "flock": true, "sg": true}

// dashCScript finds the command string of a -c wrapper.
func dashCScript(args []string) (string, bool) {
	for i, a := range args {
		switch {
		case a == "--":
			return "", false
		case a == "--command" || a == "--session-command":
			if i+1 < len(args) {
				return args[i+1], true
			}
		case strings.HasPrefix(a, "--command="):
			return strings.TrimPrefix(a, "--command="), true
		case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.HasSuffix(a, "c") && i+1 < len(args):
			return args[i+1], true
		}
	}
	return "", false
}

// unwrapArgs skips a wrapper's options and returns the command it runs and
// the variables it sets for it.
func unwrapArgs(name string, args []string) (rest []string, env map[string]string, ok bool) {
	spec, ok := wrapperSpecs[name]
	if !ok {
		return nil, nil, false
	}
	env = map[string]string{}
	split := ""
	i := 0
options:
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			i++
			break options
		case len(a) < 2 || a[0] != '-':
			break options
		case hasWord(spec.stop, a):
			return nil, nil, false
		case strings.HasPrefix(a, "--"):
			k, v, eq := strings.Cut(a, "=")
			if !eq && hasWord(spec.values, k) && i+1 < len(args) {
				i++
				v = args[i]
			}
			if k == "--split-string" {
				split = v
			}
		default:
			for j := 1; j < len(a); j++ {
				opt := "-" + a[j:j+1]
				if !hasWord(spec.values, opt) {
					continue
				}
				v := a[j+1:]
				if v == "" && i+1 < len(args) {
					i++
					v = args[i]
				}
				if opt == "-S" {
					split = v
				}
				break
			}
		}
	}
	for ; spec.assigns && i < len(args); i++ {
		k, n := assignmentName(args[i])
		if n == 0 {
			break
		}
		env[k] = args[i][n:]
	}
	rest = args[i:]
	if split != "" && name == "env" {
		words, _ := splitExecutor(split)
		rest = append(words, rest...)
	}
	if len(rest) < spec.operands {
		return nil, nil, false
	}
	return rest[spec.operands:], env, true
}

// hasWord reports whether w is one of the space-separated words of list.
func hasWord(list, w string) bool {
	for list != "" {
		var f string
		f, list, _ = strings.Cut(list, " ")
		if f == w {
			return true
		}
	}
	return false
}

// Flags, as validators receive them. The rule: --name=value and, for an
// option listed below as taking a value, --name value, -X value and -Xvalue
// give the value; any other option is a switch with the value "". -abc is
// the switches a, b and c, unless one of them takes a value, which is then
// the rest of the word or the next word. An option listed with a trailing
// ? takes a value only when attached (sed -i.bak, mysql -psecret). For
// commands whose options are whole words (find -name, go test -run), -name
// is one option. After --, and for commands marked stopAtArg after their
// first operand (ssh host ls -l), every word is an argument. A rule named
// "docker run" replaces the rule of "docker" once the first operand is run.

// cmdFlagRule is how one command's options look.
type cmdFlagRule struct {
	values     string // options that take a value
	bools      string // with longValues: long options that take none
	wholeWords bool   // -name is one option, not -n -a -m -e
	longValues bool   // every --option takes a value unless listed in bools
	stopAtArg  bool   // options end at the first operand
}

var cmdFlagRules = map[string]cmdFlagRule{
	"curl": {values: "-X -H -d -o -u -A -e -b -c -F -T -x -U -m -w -K -E -r -C -y -Y -z -Q --request --header --data --data-raw --data-binary --data-urlencode --data-ascii --json --output --output-dir --user --user-agent --referer --cookie --cookie-jar --form --form-string --upload-file --proxy --proxy-user --max-time --connect-timeout --write-out --config --cert --key --cacert --capath --resolve --connect-to --retry --retry-delay --retry-max-time --range --url --limit-rate --max-filesize --interface --dns-servers --oauth2-bearer --unix-socket --netrc-file --variable"},
	"wget": {values: "-O -o -a -P -U -t -T -e -i -B -Q -w -l -A -R -D -I -X --output-document --output-file --append-output --directory-prefix --user-agent --header --post-data --post-file --method --body-data --body-file --user --password --http-user --http-password --tries --timeout --wait --level --accept --reject --domains --include-directories --exclude-directories --input-file --base --quota --load-cookies --save-cookies --referer"},

	"git":          {values: "-C -c --git-dir --work-tree --namespace --exec-path --config-env --super-prefix"},
	"git commit":   {values: "-m -F -C -c -t --message --file --author --date --reuse-message --reedit-message --fixup --squash --cleanup --template --trailer"},
	"git push":     {values: "-o --push-option --repo --receive-pack --exec --force-with-lease?"},
	"git clone":    {values: "-b -o -c -u -j --branch --origin --depth --reference --template --upload-pack --config --separate-git-dir --shallow-since --shallow-exclude --filter --jobs"},
	"git checkout": {values: "-b -B --orphan"},
	"git switch":   {values: "-c -C --orphan --create --force-create"},
	"git merge":    {values: "-m -s -X -F --message --strategy --strategy-option --file"},
	"git pull":     {values: "-s -X -j --strategy --strategy-option --depth --jobs"},
	"git fetch":    {values: "-j -o --depth --deepen --shallow-since --shallow-exclude --jobs --server-option --upload-pack"},
	"git rebase":   {values: "-s -X -x --onto --exec --strategy --strategy-option"},
	"git tag":      {values: "-m -F -u --message --file --local-user"},
	"git log":      {values: "-n --max-count --author --committer --since --until --after --before --grep --format --pretty --date --skip"},
	"git config":   {values: "-f --file --blob --type --default"},
	"git branch":   {values: "-u --set-upstream-to"},
	"git remote":   {values: "-t -m"},
	"git grep":     {values: "-e -f -A -B -C -m --max-count --context --after-context --before-context"},

	"ssh":   {values: "-b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w -B", stopAtArg: true},
	"scp":   {values: "-c -D -F -i -J -l -o -P -S -X"},
	"sftp":  {values: "-B -b -c -D -F -i -J -l -o -P -R -S -s -X"},
	"rsync": {values: "-e -f -T -B --rsh --exclude --include --filter --exclude-from --include-from --files-from --chmod --chown --usermap --groupmap --rsync-path --bwlimit --timeout --contimeout --port --log-file --log-file-format --temp-dir --partial-dir --backup-dir --suffix --compare-dest --copy-dest --link-dest --max-size --min-size --max-delete --block-size --password-file --out-format"},

	"kubectl": {values: "-n -l -o -f -c -s -k -L --namespace --context --cluster --user --kubeconfig --selector --output --filename --container --server --token --as --as-group --field-selector --timeout --grace-period --type --replicas --image --patch --kustomize --label-columns --sort-by --template --since --since-time --tail --port --address --from-literal --from-file --from-env-file --overrides --cascade --request-timeout --certificate-authority --client-certificate --client-key"},
	"helm":    {values: "-n -f -o --namespace --values --set --set-string --set-file --set-json --version --kube-context --kubeconfig --repo --output --timeout --post-renderer --description --name-template"},

	"docker":         {values: "-H -c -l --host --context --config --log-level --tlscacert --tlscert --tlskey"},
	"docker run":     {values: "-a -c -e -h -l -m -p -u -v -w --attach --cpu-shares --env --env-file --hostname --label --label-file --memory --publish --user --volume --workdir --name --network --net --entrypoint --mount --cpus --restart --add-host --device --cap-add --cap-drop --security-opt --ulimit --gpus --platform --pull --tmpfs --link --log-driver --log-opt --dns --expose --cidfile --ipc --pid --shm-size --stop-signal --stop-timeout --runtime --userns --uts --volumes-from --health-cmd --ip --mac-address --memory-swap --cgroup-parent --group-add --isolation --sysctl --storage-opt", stopAtArg: true},
	"docker create":  {values: "-a -c -e -h -l -m -p -u -v -w --attach --cpu-shares --env --env-file --hostname --label --label-file --memory --publish --user --volume --workdir --name --network --net --entrypoint --mount --cpus --restart --add-host --device --cap-add --cap-drop --security-opt --ulimit --gpus --platform --pull --tmpfs --link --log-driver --log-opt --dns --expose --cidfile --ipc --pid --shm-size --stop-signal --stop-timeout --runtime --userns --uts --volumes-from", stopAtArg: true},
	"docker exec":    {values: "-e -u -w --env --env-file --user --workdir --detach-keys", stopAtArg: true},
	"docker build":   {values: "-t -f -o --tag --file --build-arg --target --platform --label --network --progress --secret --ssh --cache-from --cache-to --output --iidfile --add-host --shm-size --ulimit --build-context --cgroup-parent --isolation --memory --metadata-file"},
	"docker pull":    {values: "--platform"},
	"docker push":    {values: "--platform"},
	"docker compose": {values: "-f -p --file --project-name --profile --env-file --project-directory"},

	"aws":    {longValues: true, bools: "--debug --no-verify-ssl --no-paginate --no-sign-request --recursive --dryrun --dry-run --no-dry-run --force --quiet --only-show-errors --no-progress --delete --exact-timestamps --follow-symlinks --no-follow-symlinks --human-readable --summarize --no-cli-pager --cli-auto-prompt --no-cli-auto-prompt --version --help"},
	"gcloud": {longValues: true, bools: "--quiet --async --no-user-output-enabled --log-http --help --version --dry-run --all --recursive --preemptible --no-address --enable-ip-alias --force"},
	"az":     {longValues: true, bools: "--yes --debug --verbose --only-show-errors --no-wait --help --all --force"},

	"terraform": {wholeWords: true, values: "-var -var-file -target -state -state-out -out -backend-config -lock-timeout -parallelism -replace -chdir -from-module -generate-config-out"},
	"go":        {wholeWords: true, values: "-o -C -run -bench -count -timeout -tags -ldflags -gcflags -asmflags -p -coverprofile -covermode -coverpkg -cpuprofile -memprofile -blockprofile -mutexprofile -trace -exec -mod -modfile -pkgdir -toolexec -fuzz -fuzztime -fuzzminimizetime -parallel -benchtime -skip -outputdir -vet -shuffle -overlay -pgo -compiler -buildmode -installsuffix -cpu -list"},
	"find":      {wholeWords: true, values: "-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname -type -xtype -maxdepth -mindepth -newer -anewer -cnewer -perm -size -user -group -uid -gid -mtime -atime -ctime -mmin -amin -cmin -used -inum -links -samefile -fstype -fprint -fprint0 -fprintf -fls -printf -regextype -context -exec -execdir -ok -okdir"},

	"psql":  {values: "-c -d -f -h -p -U -o -L -v -P -F -R -T --command --dbname --file --host --port --username --output --set --variable --pset --log-file"},
	"mysql": {values: "-e -h -u -P -D -S -p? --execute --host --user --port --database --socket"},

	"grep":       {values: "-e -f -m -A -B -C -d -D --regexp --file --max-count --after-context --before-context --context --include --exclude --exclude-dir --exclude-from --label --devices --directories --binary-files"},
	"rg":         {values: "-e -f -g -t -T -m -A -B -C -r -j -M --regexp --file --glob --iglob --type --type-not --max-count --after-context --before-context --context --replace --threads --max-columns --max-depth --max-filesize --type-add --sort --sortr --pre --pre-glob --encoding --engine"},
	"sed":        {values: "-e -f -l -i? --expression --file --line-length"},
	"awk":        {values: "-F -v -f --field-separator --assign --file"},
	"tar":        {values: "-f -C -T -X -b -g -H -I -K -N -V --file --directory --files-from --exclude-from --exclude --use-compress-program --transform --owner --group --mode --mtime --newer --format --label --to-command --checkpoint-action --info-script --new-volume-script --rsh-command"},
	"head":       {values: "-n -c --lines --bytes"},
	"tail":       {values: "-n -c -s --lines --bytes --sleep-interval --pid"},
	"sort":       {values: "-k -t -o -S -T --key --field-separator --output --buffer-size --temporary-directory --parallel"},
	"cut":        {values: "-d -f -c -b --delimiter --fields --characters --bytes --output-delimiter"},
	"cp":         {values: "-t -S --target-directory --suffix"},
	"mv":         {values: "-t -S --target-directory --suffix"},
	"ln":         {values: "-t -S --target-directory --suffix"},
	"install":    {values: "-t -S -m -o -g --target-directory --suffix --mode --owner --group"},
	"ps":         {values: "-o -p -u -U -C -G -g -t -q --format --pid --user --sort --ppid"},
	"kill":       {values: "-s -n"},
	"date":       {values: "-d -f -r --date --file --reference"},
	"make":       {values: "-C -f -j -I -o -W -l --directory --file --jobs --include-dir --old-file --what-if --load-average"},
	"nc":         {values: "-e -c -p -s -w -x -X -i -q -W -I -O -P -T"},
	"systemctl":  {values: "-H -M -p -t -n -o -s --host --machine --property --type --state --lines --output --signal --kill-whom --root --job-mode"},
	"journalctl": {values: "-u -n -p -o -S -U -t -D -M -g --unit --lines --priority --output --since --until --identifier --directory --user-unit --grep --file"},

	"gh":  {values: "-R -b -t -F -f -X -H -q -B -a -l -m -L -s -r --repo --body --body-file --title --field --raw-field --method --header --jq --template --base --head --assignee --label --milestone --limit --state --reviewer"},
	"npm": {values: "-w --prefix --registry --workspace --cache --userconfig --tag --otp --access"},
	"npx": {values: "-p -c --package --call", stopAtArg: true},
	"pip": {values: "-r -c -i -e -t -f --requirement --constraint --index-url --extra-index-url --editable --target --find-links --prefix --root --src --trusted-host --proxy --cert --client-cert --timeout --retries --log --cache-dir --platform --python-version --implementation --abi --only-binary --no-binary --progress-bar --upgrade-strategy --report"},

	"python3": {values: "-c -m -W -X", stopAtArg: true},
	"node":    {values: "-e -p -r --eval --print --require --import --loader --input-type", stopAtArg: true},
	"perl":    {values: "-e -E -I -M -m", stopAtArg: true},
	"ruby":    {values: "-e -I -r -C", stopAtArg: true},
	"sh":      {values: "-c -o -O --rcfile --init-file", stopAtArg: true},
}

// cmdFlagAliases share a rule: podman reads docker's options.
var cmdFlagAliases = map[string]string{
	"podman": "docker", "python": "python3", "pip3": "pip", "gawk": "awk", "mawk": "awk", "ncat": "nc", "netcat": "nc",
	"bash": "sh", "dash": "sh", "zsh": "sh", "ksh": "sh", "mksh": "sh", "ash": "sh", "pnpm": "npm",
}

// flagRule finds the rule of a command ("docker") or of one of its
// subcommands ("docker run"); wrappers use their own option lists.
func flagRule(name string) (cmdFlagRule, bool) {
	first, sub, _ := strings.Cut(name, " ")
	if alias, ok := cmdFlagAliases[first]; ok {
		name = strings.TrimSpace(alias + " " + sub)
	}
	if r, ok := cmdFlagRules[name]; ok {
		return r, true
	}
	if w, ok := wrapperSpecs[name]; ok {
		return cmdFlagRule{values: w.values, stopAtArg: true}, true
	}
	return cmdFlagRule{}, false
}

// takesValue says whether an option (with its dashes) takes a value, and
// whether only an attached one.
func (r cmdFlagRule) takesValue(opt string) (takes, attachedOnly bool) {
	if r.longValues && strings.HasPrefix(opt, "--") {
		return !hasWord(r.bools, opt), false
	}
	if hasWord(r.values, opt) {
		return true, false
	}
	if hasWord(r.values, opt+"?") {
		return true, true
	}
	return false, false
}

// commandFlags splits a command's arguments into flags (names without
// their dashes) and positional arguments, by the rule above.
func commandFlags(name string, args []string) (flags map[string]string, positional []string) {
	flags, positional = map[string]string{}, []string{}
	rule, _ := flagRule(name)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flags, append(positional, args[i+1:]...)
		case len(a) < 2 || a[0] != '-':
			if len(positional) == 0 {
				if sub, ok := flagRule(name + " " + a); ok {
					rule = sub
					positional = append(positional, a)
					continue
				}
			}
			if rule.stopAtArg {
				return flags, append(positional, args[i:]...)
			}
			positional = append(positional, a)
		case a[1] == '-' || rule.wholeWords:
			dashes := 1
			if a[1] == '-' {
				dashes = 2
			}
			k, v, eq := strings.Cut(a[dashes:], "=")
			if takes, attached := rule.takesValue(a[:dashes] + k); takes && !attached && !eq && i+1 < len(args) {
				i++
				v = args[i]
			}
			flags[k] = v
		default:
			for j := 1; j < len(a); {
				_, size := utf8.DecodeRuneInString(a[j:])
				opt := a[j : j+size]
				takes, attached := rule.takesValue("-" + opt)
				if !takes {
					flags[opt] = ""
					j += size
					continue
				}
				v := a[j+size:]
				if v == "" && !attached && i+1 < len(args) {
					i++
					v = args[i]
				}
				flags[opt] = v
				break
			}
		}
	}
	return flags, positional
}
