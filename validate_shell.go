package main

import (
	"strconv"
	"strings"
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
// bash -c, eval, watch, find -exec …), the command it runs. level counts the
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
		rest, env, viaShell, ok := unwrapArgs(c.Name, args)
		if !ok || len(rest) == 0 {
			return
		}
		if viaShell {
			p.script(strings.Join(rest, " "), c, c.Name)
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

// script splits a command string a wrapper runs (bash -c, eval, watch).
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

// shellQuote is the inverse of the splitter for one word: the word as it
// is when no shell gives any of its characters a meaning, else in single
// quotes, where a quote of its own ends them, is escaped, and opens them
// again.
func shellQuote(w string) string {
	plain := w != ""
	for i := 0; i < len(w) && plain; i++ {
		c := w[i]
		plain = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_./:,=+@%", c) >= 0
	}
	if plain {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
