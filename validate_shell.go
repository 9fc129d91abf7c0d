package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"
)

// The shell command-line splitter validators need. It is a recogniser, not
// an interpreter: it finds every simple command a line would run — across
// ; && || | & and newlines, inside ( ), { }, $( ), ` `, <( ), if/while/for/
// case bodies, and through wrappers (sudo, env, bash -c '…', find -exec) —
// and expands nothing. It reads the line by the grammar of the shell that
// will run it (bash, or a POSIX sh read as dash would), and follows the
// working directory through cd, pushd, popd and ( ) scopes.
//
// What it cannot follow it names instead of guessing: a command name known
// only at run time, arithmetic on values it does not know (bash evaluates
// them as expressions, which can run commands), eval, trap, source,
// function definitions, a shell reading its script from stdin, an unknown
// option of a wrapper, a cd whose target it cannot tell, a line nested
// deeper than maxShellDepth. Each is an Unfollowed entry, and with
// validators configured each makes the line an ask. Malformed input (an
// unclosed quote) ends at the end of the line; the splitter never fails.

// ShellCommand is one simple command of a command line: what a validator
// is asked about.
type ShellCommand struct {
	// Name is the base command name ("curl" for /usr/bin/curl), or the word
	// as written when the name is only known at run time ("$CMD").
	Name string
	// Words are the command word and its arguments, quotes removed, with
	// the values of the variables the line assigned put in (Vars names
	// them), and other expansions ($x, $(…)) left as written; assignments
	// and redirections are not words.
	Words []string
	// Env holds the variables assigned for the command: VAR=value before it,
	// through env, or assigned or exported earlier in the line.
	Env map[string]string
	// Raw is the command's text in the line (or in the string a bash -c
	// ran); for a command unwrapped from sudo, env, … it is the wrapper's
	// text.
	Raw string
	// Via names the wrappers it was found in ("sudo", "bash -c"), if any.
	Via string
	// Cwd is the directory it runs in; "" when zot cannot tell (the split
	// then has an Unfollowed entry saying why).
	Cwd string
	// Exact is set when Words are the program's argv exactly: nothing in
	// them is expanded, globbed or appended at run time.
	Exact bool
	// Vars names the variables assigned earlier in the line whose values
	// Words hold ("F" for F=--force; git push $F): exactly where Exact is
	// set, else as the expression the line assigned (n=$(ls); cat "$n" is
	// cat "$(ls)").
	Vars []string
	// Shapes, unless Exact, say for each word what of it is known only at
	// run time (nil for a word known in full), and Open that the program
	// gets more words at run time (xargs, find -exec … {} +): what the
	// rules must judge for every value it could take.
	Shapes []WordShape
	Open   bool
}

// WordShape is what of one word zot cannot know: its holes, and whether
// it is a pattern bash matches against file names (Glob: it becomes
// several words, each one the pattern matches, or stays as written when
// none does — or, Empty, with nullglob set, becomes no word).
type WordShape struct {
	Holes []WordHole
	Glob  bool
	Empty bool
}

// Vanishes says the word may become no word at all: an unquoted
// expansion that is all of it, or a glob with nullglob set.
func (s WordShape) Vanishes(w string) bool {
	if s.Empty {
		return true
	}
	at := 0
	for _, h := range s.Holes {
		if h.Start > at || !h.Split {
			return false
		}
		at = h.End
	}
	return len(s.Holes) > 0 && at >= len(w)
}

// Known says the word is its own value.
func (s WordShape) Known() bool { return len(s.Holes) == 0 }

// Split says the word may become several words (or none: see Vanishes).
func (s WordShape) Split() bool {
	if s.Glob {
		return true
	}
	for _, h := range s.Holes {
		if h.Split {
			return true
		}
	}
	return false
}

// ShellSplit is what the splitter found in a line.
type ShellSplit struct {
	Commands []ShellCommand
	// Unfollowed names each construct of the line the splitter does not
	// follow, and where: "eval, which runs a string as commands in \"eval -- rm x\"".
	Unfollowed []string
	// Writes are the targets of the line's redirections that write a file
	// or open a socket (/dev/tcp/…), as written: not /dev/null, not a copy
	// of a descriptor.
	Writes []string
}

// ShellContext is what the splitter knows of the shell that runs a line.
type ShellContext struct {
	Bash bool   // bash reads the line; else a POSIX sh (dash, or bash --posix)
	Cwd  string // where the line starts, absolute
	// Getenv reads the environment the shell starts with: HOME and CDPATH
	// for cd, SHELL for wrappers that run $SHELL -c. nil: an empty one.
	Getenv func(string) string
	// FoldCase is set where file systems ignore case (macOS): there RM runs
	// rm, so command names are folded to lower case.
	FoldCase bool
}

// maxShellDepth bounds nesting: $( $( … ) ), subshells, bash -c inside
// bash -c, sudo sudo …. Deeper is not followed.
const maxShellDepth = 64

// maxArithRetries bounds how often $(( … )) that turns out not to be
// arithmetic is re-read as $( ( … ) ); past it, (( is read as two
// subshells, which finds more commands, never fewer.
const maxArithRetries = 64

// SplitCommandLine returns the simple commands of a shell command line in
// the order they appear, each wrapper followed by the command it runs, and
// what it could not follow.
func SplitCommandLine(line string, sc ShellContext) ShellSplit {
	if sc.Getenv == nil {
		sc.Getenv = func(string) string { return "" }
	}
	out := &shellOut{sc: sc, vars: map[string]string{}, ints: map[string]bool{}, seen: map[string]bool{}}
	p := &shellParser{src: line, bash: sc.Bash, out: out, dir: shellDir{path: filepath.Clean(sc.Cwd)}, vars: newVarScope()}
	p.beginList()
	p.list(false, false)
	out.checkArithmetic()
	if strings.Contains(line, "nullglob") {
		// Past a shopt -s nullglob (or bash -O nullglob) a glob that
		// matches nothing is no word; in a loop it may come before.
		// Every other way to set it is a construct zot asks about.
		for _, c := range out.cmds {
			for i := range c.Shapes {
				c.Shapes[i].Empty = c.Shapes[i].Glob
			}
		}
	}
	return ShellSplit{Commands: out.cmds, Unfollowed: out.unfollowed, Writes: out.writes}
}

// shellOut is what the parsers of one line (the line's and those of the
// backticks and bash -c strings in it) share.
type shellOut struct {
	sc         ShellContext
	cmds       []ShellCommand
	unfollowed []string
	seen       map[string]bool
	vars       map[string]string // assigned or exported so far in the line
	// ints maps each variable the line assigns to whether every one of its
	// assignments is an integer; arith are the variables arithmetic reads.
	ints         map[string]bool
	arith        []arithRead
	arithRetries int
	tooDeep      bool
	// ranBefore names the first command the line has run whole that
	// could move, remove or lock a directory: a cd after it may fail
	// where it would not have when zot looked.
	ranBefore string
	// unreadDocs counts the here-documents whose $( ) run when their
	// command does but whose bodies the parser has not read yet.
	unreadDocs int
	writes     []string // see ShellSplit.Writes
}

type shellParser struct {
	src   string
	pos   int
	depth int
	bash  bool // the grammar: bash, or POSIX sh
	via   string
	env   map[string]string // what the command that ran this string had (bash -c)
	out   *shellOut
	dir   shellDir
	// compound counts the if/while/for/case/{ } bodies open around the
	// command being read: a cd there may or may not run. loops counts the
	// while/until/for/select bodies among them: a cd there moves what came
	// before it on the next pass.
	compound, loops int
	// afterPipe: the command being read is a later stage of a pipeline,
	// which bash runs in a subshell.
	afterPipe bool
	// andOr says where in its && || list the command being read is: first,
	// after && only (it runs if all before it succeeded), or after an ||.
	andOr   andOrPos
	pending []heredoc // here-documents whose bodies start after the next newline
	// inArith counts the arithmetic expressions open around the parser:
	// bash delimits those by their parentheses alone.
	inArith int
	vars    *varScope // the shell's variables as far as the line assigned them
	// inSubst is set inside $( ), <( ) and >( ); heredocInSubst once a
	// here-document opened there: bash 5.2 drops the next ; after it.
	inSubst, heredocInSubst bool
	// lists holds the journals of the && || lists open around the
	// command being read, outermost first.
	lists []listJournal
}

// listJournal is what one && || list has changed in the shell so far. A
// list that ends in & runs in the background, in a subshell: what it
// changed is taken back, for the commands after it see the shell as it
// was before it (cd sub && make & rm -r out removes ./out, not sub/out).
type listJournal struct {
	depth int      // the if/while/for/case/{ } bodies open around the list
	dir   shellDir // the directory as the list began
	// vars holds each variable's state as it was before the list first
	// changed it.
	vars map[varKey]varPrior
}

type varKey struct {
	scope *varScope
	name  string
}

type varPrior struct {
	val         varValue
	had, frozen bool
}

type heredoc struct {
	delim  string
	strip  bool // <<- : leading tabs are ignored
	expand bool // unquoted delimiter: $( ) and ` ` in the body run
	// vars and dir are the shell's when the command with the
	// here-document runs, which is when its body is expanded: the body is
	// read after the rest of the line.
	vars *varScope
	dir  shellDir
}

type andOrPos int

const (
	andOrFirst andOrPos = iota
	andOrAfterAnd
	andOrAfterOr
)

// listStop is why a list of commands ended.
type listStop int

const (
	stopNone     listStop = iota
	stopEOF               // end of input
	stopParen             // the ) closing a subshell or $( )
	stopCaseItem          // ;; ;& ;;& ending a case item
	stopEsac              // esac
)

// shellWord is one shell word as read.
type shellWord struct {
	val   string // quotes removed, expansions as written
	raw   string // source text
	plain bool   // no quotes, escapes or expansions: a keyword candidate
	// literal: val is the word's value, known now — no expansion, glob,
	// brace or tilde.
	literal bool
	// single: it stays one word — no unquoted expansion, glob or brace,
	// no "$@".
	single bool
	uses   *wordUses // the variables it uses; nil for none
	// holes are the parts of val known only at run time; glob says bash
	// matches the word against file names (or expands its braces), which
	// makes it several words, each one the pattern matches.
	holes []WordHole
	glob  bool
}

// WordHole is a part of a word whose value zot cannot know before the
// line runs: Words[i][Start:End] is an expansion as written ($x, $(…),
// `…`, $((…)), <(…), ~), a glob or a brace list. Split says bash splits
// its value into words (an unquoted expansion, "$@"), so the word may
// become several words, or none.
type WordHole struct {
	Start, End int
	Split      bool
}

// hole marks val[start:end] as known only at run time.
func (w *shellWord) hole(start, end int, split bool) {
	w.holes = append(w.holes, WordHole{Start: start, End: end, Split: split})
}

// wordUses are the variables a word uses: refs as $NAME or ${NAME}, opRefs
// any other way (${NAME:-…}, ${#NAME}, $((NAME+1)) …).
type wordUses struct{ refs, opRefs []string }

func (w *shellWord) use(name string, op bool) {
	if w.uses == nil {
		w.uses = &wordUses{}
	}
	if op {
		w.uses.opRefs = append(w.uses.opRefs, name)
	} else {
		w.uses.refs = append(w.uses.refs, name)
	}
}

func (w shellWord) refs() []string {
	if w.uses == nil {
		return nil
	}
	return w.uses.refs
}

func (w shellWord) opRefs() []string {
	if w.uses == nil {
		return nil
	}
	return w.uses.opRefs
}

func literalWord(s string) shellWord {
	return shellWord{val: s, raw: s, plain: true, literal: true, single: true}
}

// cmdBuilder collects the words of the simple command being read.
type cmdBuilder struct {
	words      []shellWord
	started    bool
	start, end int
	header     bool // a for/select header: words that are not a command
	selects    bool // the header is select's
	timeState  int  // after bash's time: 1 -p or -- may follow, 2 -- may follow
	redirected bool // a redirection that may fail (see redirect)
}

// unfollow records a construct the splitter does not follow.
func (p *shellParser) unfollow(what, where string) {
	where = strings.TrimSpace(where)
	if len(where) > 80 {
		where = where[:77] + "…"
	}
	msg := what
	if where != "" {
		msg = fmt.Sprintf("%s in %q", what, where)
	}
	if !p.out.seen[msg] {
		p.out.seen[msg] = true
		p.out.unfollowed = append(p.out.unfollowed, msg)
	}
}

// shOnly records bash syntax in a line a POSIX sh reads: dash reads it
// one way, bash --posix another.
func (p *shellParser) shOnly(what string, at int) {
	p.unfollow("bash syntax "+what+" that /bin/sh may read differently", p.src[at:min(len(p.src), at+40)])
}

func (p *shellParser) markTooDeep() {
	if !p.out.tooDeep {
		p.out.tooDeep = true
		p.unfollow(fmt.Sprintf("nesting deeper than %d levels", maxShellDepth), "")
	}
}

func (p *shellParser) child(src string, bash bool) *shellParser {
	if p.depth >= maxShellDepth {
		p.markTooDeep()
		return nil
	}
	c := &shellParser{src: src, depth: p.depth + 1, bash: bash, via: p.via, env: p.env, out: p.out, dir: p.dir.clone(), vars: p.vars.sub()}
	c.beginList()
	return c
}

// nest runs f one level deeper, or records that the line is too deep and
// skips the rest of the input.
func (p *shellParser) nest(f func()) {
	if p.depth >= maxShellDepth {
		p.markTooDeep()
		p.pos = len(p.src)
		return
	}
	p.depth++
	f()
	p.depth--
}

// substitution runs f in the subshell of a $( ), <( ) or >( ).
func (p *shellParser) substitution(f func()) {
	in, doc := p.inSubst, p.heredocInSubst
	p.inSubst, p.heredocInSubst = true, false
	p.subshell(f)
	p.inSubst, p.heredocInSubst = in, doc
}

// subshell runs f in a subshell's scope: a cd in it moves nothing after it.
func (p *shellParser) subshell(f func()) {
	dir, compound, loops, afterPipe, andOr, vars, lists := p.dir.clone(), p.compound, p.loops, p.afterPipe, p.andOr, p.vars, p.lists
	p.compound, p.loops, p.afterPipe, p.andOr, p.vars, p.lists = 0, 0, false, andOrFirst, p.vars.sub(), nil
	p.beginList()
	p.nest(f)
	p.dir, p.compound, p.loops, p.afterPipe, p.andOr, p.vars, p.lists = dir, compound, loops, afterPipe, andOr, vars, lists
}

// beginList opens the journal of an && || list starting at the current
// depth.
func (p *shellParser) beginList() {
	p.lists = append(p.lists, listJournal{depth: p.compound, dir: p.dir.clone()})
}

// endList closes the lists read at the current depth and inside it, and
// opens the next; background says the list ended in &, so what it changed
// is taken back.
func (p *shellParser) endList(background bool) {
	for len(p.lists) > 0 && p.lists[len(p.lists)-1].depth >= p.compound {
		j := p.lists[len(p.lists)-1]
		p.lists = p.lists[:len(p.lists)-1]
		if background && j.depth == p.compound {
			p.dir = j.dir
			for k, prior := range j.vars {
				k.scope.restore(k.name, prior)
			}
		} else if len(p.lists) > 0 {
			// The list this one is part of may yet end in &: it takes
			// back what this one changed too.
			outer := &p.lists[len(p.lists)-1]
			for k, prior := range j.vars {
				if _, ok := outer.vars[k]; !ok {
					if outer.vars == nil {
						outer.vars = map[varKey]varPrior{}
					}
					outer.vars[k] = prior
				}
			}
		}
	}
	p.beginList()
}

// openBody counts an if/while/for/case/{ } body opened; its lists are
// journalled apart from the list the compound command is part of.
func (p *shellParser) openBody() {
	p.compound++
	p.beginList()
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
func (p *shellParser) list(inParens, inCase bool) listStop {
	for {
		if s := p.command(inParens, inCase); s != stopNone {
			return s
		}
	}
}

// operator notes the list operator just read: a cd that may fail holds
// only through its && chain, and after | the next command is in a subshell.
func (p *shellParser) operator(op string) {
	if op != "&&" {
		if p.dir.mayFail != "" {
			p.dir.lose(p.dir.mayFail)
		}
		if p.dir.stackMayFail {
			p.dir.loseStack()
		}
	}
	if op == ";" || op == "\n" || op == "&" {
		p.endList(op == "&")
	}
	p.afterPipe = op == "|" || op == "|&"
	switch op {
	case "&&":
		p.andOr = max(p.andOr, andOrAfterAnd)
	case "||":
		p.andOr = andOrAfterOr
	case "|", "|&":
	default:
		p.andOr = andOrFirst
	}
}

// command reads one simple command and the operator after it.
func (p *shellParser) command(inParens, inCase bool) listStop {
	var c cmdBuilder
	for {
		p.blanks()
		if p.pos >= len(p.src) {
			p.finish(&c)
			return stopEOF
		}
		if !c.started {
			c.started, c.start, c.end = true, p.pos, p.pos
		}
		ch := p.src[p.pos]
		switch {
		case ch == '#':
			p.comment()
			continue
		case ch == '\n':
			p.finish(&c)
			p.newline()
			p.operator("\n")
			return stopNone
		case ch == ';':
			if p.heredocInSubst {
				p.unfollow("a ; after a here-document inside $( ) or <( ), which bash 5.2 drops, running the two commands as one", p.src[c.start:min(len(p.src), p.pos+40)])
			}
			p.finish(&c)
			switch {
			case p.has(";;&"), p.has(";&"):
				if !p.bash {
					p.shOnly(";& or ;;&", p.pos)
				}
				p.pos += 2
				if p.has("&") {
					p.pos++
				}
			case p.has(";;"):
				p.pos += 2
			default:
				p.pos++
				p.operator(";")
				return stopNone
			}
			p.endList(false) // the case item's list ends
			if inCase {
				return stopCaseItem
			}
			return stopNone
		case ch == '&' && p.peek(1) == '>' && p.bash:
			c.redirected = p.redirect() || c.redirected
			c.end = p.pos
			continue
		case ch == '&' || ch == '|':
			if ch == '&' && p.peek(1) == '>' {
				p.shOnly("&> (dash: & then a redirection)", p.pos)
			}
			p.finish(&c)
			op := p.src[p.pos : p.pos+1]
			p.pos++
			if n := p.peek(0); n == '&' && ch == '|' && !p.bash {
				p.shOnly("|&", p.pos-1)
			} else if n == '&' || n == '|' {
				op += string(n)
				p.pos++
			}
			p.operator(op)
			return stopNone
		case ch == '(':
			if len(c.words) == 0 && p.has("((") {
				if !p.bash {
					p.shOnly("(( (dash: two subshells)", p.pos)
				} else if start := p.pos; p.arith() {
					p.unfollow("an arithmetic command ((…))", p.src[start:p.pos])
					c.end = p.pos
					continue
				}
			}
			if len(c.words) > 0 && p.functionParens() {
				p.unfollow("a function definition", p.src[c.start:p.pos])
				c = cmdBuilder{} // name() — the body follows
				continue
			}
			p.pos++
			var s listStop
			p.subshell(func() { s = p.list(true, false) })
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
			c.redirected = p.redirect() || c.redirected
			c.end = p.pos
			continue
		case ch >= '0' && ch <= '9' && p.fdRedirect():
			c.redirected = p.redirect() || c.redirected
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
		if p.bash && p.fdVariable(w) {
			c.redirected = true
			continue
		}
		if len(c.words) == 0 && !c.header && w.plain {
			if s, handled := p.keyword(&c, w.val, inParens, inCase); handled {
				if s != stopNone {
					p.finish(&c)
					return s
				}
				continue
			}
		}
		if c.timeState > 0 && len(c.words) == 0 {
			// bash's time takes -p, then --, as written (quotes count).
			if w.raw == "-p" && c.timeState == 1 {
				c.timeState = 2
				continue
			}
			if w.raw == "--" {
				c.timeState = 0
				continue
			}
		}
		c.timeState = 0
		c.words = append(c.words, w)
	}
}

// fdVariable reads bash's {name}>file, which stores a new descriptor in
// name: a redirection, not a word.
func (p *shellParser) fdVariable(w shellWord) bool {
	if len(w.raw) < 3 || w.raw[0] != '{' || w.raw[len(w.raw)-1] != '}' || (p.peek(0) != '<' && p.peek(0) != '>') {
		return false
	}
	name := w.raw[1 : len(w.raw)-1]
	if i := strings.IndexByte(name, '['); i > 0 && strings.HasSuffix(name, "]") && isName(name[:i]) {
		p.unfollow("a descriptor variable with a subscript, which bash evaluates as arithmetic", w.raw)
		p.redirect()
		return true
	}
	if !isName(name) {
		return false
	}
	p.assign(name, true, w.raw)
	p.forgetVar(name, w.raw)
	p.redirect()
	return true
}

// bashKeywords are reserved words of bash that a POSIX sh reads as
// command names.
var bashKeywords = map[string]bool{"select": true, "time": true, "coproc": true, "function": true, "[[": true}

// keyword acts on a reserved word at command position. handled is false for
// an ordinary word.
func (p *shellParser) keyword(c *cmdBuilder, kw string, inParens, inCase bool) (s listStop, handled bool) {
	if bashKeywords[kw] && !p.bash {
		// dash has no such keyword: it is a command name.
		p.shOnly("the keyword "+kw, c.start)
		return stopNone, false
	}
	if hasWord("if while until { for select case", kw) {
		// A compound command as a pipeline stage is one subshell: a cd
		// in it moves what follows it there.
		p.afterPipe = false
	}
	switch kw {
	case "then", "else", "elif", "do", "!":
	case "if", "while", "until", "{":
		p.openBody()
		if kw == "while" || kw == "until" {
			p.loops++
			p.openLoop("")
		}
	case "fi", "done", "}":
		p.compound = max(p.compound-1, 0)
		if kw == "done" {
			p.loops = max(p.loops-1, 0)
			p.closeLoop()
		}
	case "esac":
		if inCase {
			return stopEsac, true
		}
	case "for", "select":
		p.openBody()
		p.loops++
		p.openLoop("")
		p.blanks()
		if kw == "for" && p.has("((") {
			if !p.bash {
				p.shOnly("for ((…))", p.pos)
			}
			if start := p.pos; p.arith() {
				p.arithUse(p.src[start+2:p.pos-2], p.src[start:p.pos])
			}
		}
		c.header, c.selects = true, kw == "select"
		return stopNone, true
	case "time":
		c.timeState = 1
	case "coproc":
		p.unfollow("coproc", p.src[c.start:min(len(p.src), p.pos+40)])
	case "function":
		p.unfollow("a function definition", p.src[c.start:min(len(p.src), p.pos+40)])
		p.blanks()
		if p.pos < len(p.src) && !isShellOperator(p.src[p.pos]) {
			p.word()
		}
		p.blanks()
		if p.peek(0) == '(' {
			p.functionParens()
		}
	case "[[":
		p.condition(c.start)
	case "case":
		var s listStop
		p.openBody()
		p.nest(func() { s = p.caseCommand(inParens) })
		p.compound--
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
	words, header, selects, start, end, redirected := c.words, c.header, c.selects, c.start, c.end, c.redirected
	*c = cmdBuilder{}
	if len(words) == 0 {
		return
	}
	raw := strings.TrimSpace(p.src[start:end])
	if header {
		p.loopHeader(words, raw, selects)
		return
	}
	subshell := p.afterPipe
	if n := p.peek(0); (n == '|' && p.peek(1) != '|') || (n == '&' && p.peek(1) != '&' && p.peek(1) != '>') {
		subshell = true // a pipeline stage or a background job
	}
	var env map[string]string
	i := 0
	for ; i < len(words); i++ {
		name, val, ok := assignment(words[i])
		if !ok {
			break
		}
		if _, n := assignmentName(words[i].raw); !p.bash && words[i].raw[n-2] == '+' {
			p.shOnly("NAME+=value (dash: a command name)", start)
		}
		p.assignWord(name, words[i], raw)
		if env == nil {
			env = map[string]string{}
		}
		env[name] = val
	}
	if i == len(words) {
		for k, v := range env { // assignments alone set variables for later commands
			p.out.vars[k] = v
		}
		for _, w := range words {
			if subshell {
				break // a pipeline stage or background job: its assignments end with it
			}
			name, _, _ := assignment(w)
			// dash skips the assignments when a redirection fails.
			p.setVar(name, p.assignedValue(w), p.certain(redirected) && !strings.Contains(w.raw[:strings.IndexByte(w.raw, '=')], "["), raw)
		}
		return
	}
	if !p.bash {
		for _, w := range words[:i] { // before a special builtin, POSIX keeps them
			name, _, _ := assignment(w)
			p.forgetVar(name, raw)
		}
	}
	cmdWords, vars := p.substitute(words[i:], raw)
	if len(cmdWords) == 0 {
		// The words expanded to nothing: no command runs, and the
		// assignments stay in the shell.
		for _, w := range words[:i] {
			name, _, _ := assignment(w)
			p.forgetVar(name, raw)
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
	mark := len(p.out.cmds)
	p.run(cmdWords, cmdReach{env: env, via: p.via, raw: raw, dir: p.dir.path, dirWhy: p.dir.why, shell: true, subshell: subshell, vars: vars, redirected: redirected})
	for _, c := range p.out.cmds[mark:] {
		if p.out.ranBefore == "" && !keepsDirectories(c.Name) {
			p.out.ranBefore = c.Name
		}
		if hasWord("export readonly declare typeset local", c.Name) {
			// F=x export F keeps F=x in the shell.
			for _, w := range words[:i] {
				name, _, _ := assignment(w)
				p.forgetVar(name, raw)
			}
		}
	}
	if cmdWords[0].literal && cmdWords[0].val == "export" {
		for _, w := range cmdWords[1:] {
			if name, val, ok := assignment(w); ok {
				p.out.vars[name] = val
			}
		}
	}
}

// loopHeader reads the NAME in WORDS of for and select: NAME is assigned
// each word.
func (p *shellParser) loopHeader(words []shellWord, raw string, selects bool) {
	name := words[0]
	if !name.literal {
		return // bash refuses it
	}
	isInt := len(words) > 2 && words[1].val == "in"
	for _, w := range words[min(2, len(words)):] {
		isInt = isInt && isIntegerWord(w)
	}
	p.assign(name.val, isInt, raw)
	var list []shellWord
	if len(words) > 2 && words[1].val == "in" {
		list = words[2:]
	}
	p.loopVar(name.val, list, selects, raw)
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
		start, end, found := p.pos, len(p.src), false
		for p.pos < len(p.src) && !found {
			line, next := p.src[p.pos:], len(p.src)
			if i := strings.IndexByte(line, '\n'); i >= 0 {
				line, next = line[:i], p.pos+i+1
			}
			if d.strip {
				line = strings.TrimLeft(line, "\t")
			}
			if d.expand && (len(line)-len(strings.TrimRight(line, "\\")))%2 == 1 {
				// bash joins this line with the next before it looks for
				// the end line or reads the body's $( ).
				p.unfollow("a here-document line that ends in a line continuation", line)
			}
			if line == d.delim {
				end, found = p.pos, true
			} else if d.delim != "" && strings.HasPrefix(line, d.delim) {
				// Inside $( ) bash ends the body at "EOF)" as well.
				p.unfollow("a here-document line that starts like its end line", line)
			}
			p.pos = next
		}
		if !found {
			p.unfollow("a here-document without its end line", "<<"+d.delim)
		}
		// The body is data, but with an unquoted delimiter its $( ) and
		// ` ` run.
		if d.expand {
			p.out.unreadDocs--
			if k := p.child(p.src[start:end], p.bash); k != nil {
				k.vars, k.dir = d.vars, d.dir
				before := maps.Clone(d.vars.vals)
				var discard strings.Builder
				k.dquoted(&discard, &shellWord{}, false)
				// ${x:=…} and $((x=…)) in the body assign in the shell
				// when a builtin or { } has the here-document.
				for name, v := range d.vars.vals {
					if old, ok := before[name]; !ok || old != v {
						p.forgetVar(name, "<<"+d.delim)
					}
				}
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
// redirect reads a redirection; mayFail says it may fail, and then the
// command it belongs to does not run: anything but a here-document, a
// here-string, /dev/null, or a copy or close of descriptors 0 to 2.
func (p *shellParser) redirect() (mayFail bool) {
	opStart := p.pos
	switch {
	case p.has("<<<"):
		if !p.bash {
			p.shOnly("<<<", p.pos)
		}
		p.pos += 3
		p.target()
		return false
	case p.has("<<-"), p.has("<<"):
		strip := p.has("<<-")
		p.pos += 2
		if strip {
			p.pos++
		}
		p.heredocInSubst = p.heredocInSubst || p.inSubst
		if w := p.target(); w.raw != "" {
			p.pending = append(p.pending, heredoc{delim: w.val, strip: strip, expand: !strings.ContainsAny(w.raw, `'"\`), vars: p.vars.snapshot(), dir: p.dir.clone()})
			if expand := p.pending[len(p.pending)-1].expand; expand {
				p.out.unreadDocs++
			}
		}
		return false
	case p.has("&>>"):
		p.pos += 3
	case p.has("&>"), p.has(">>"), p.has(">&"), p.has(">|"), p.has("<&"), p.has("<>"):
		p.pos += 2
	default:
		p.pos++
	}
	op, dup := p.src[opStart:p.pos], p.src[p.pos-1] == '&'
	w := p.target()
	harmless := w.literal && (w.val == "/dev/null" || dup && hasWord("0 1 2 -", w.val))
	if !harmless && (strings.Contains(op, ">") || !w.literal || strings.HasPrefix(w.val, "/dev/tcp/") || strings.HasPrefix(w.val, "/dev/udp/")) {
		p.out.writes = append(p.out.writes, w.raw)
	}
	return !harmless
}

func (p *shellParser) target() shellWord {
	p.blanks()
	if p.pos >= len(p.src) {
		return shellWord{}
	}
	if ch := p.src[p.pos]; isShellOperator(ch) && !((ch == '<' || ch == '>') && p.peek(1) == '(') {
		return shellWord{}
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
	p.inArith++
	defer func() { p.inArith-- }()
	start, mark, unfollowed := p.pos, len(p.out.cmds), len(p.out.unfollowed)
	p.pos += 2
	depth := 0
	var discard strings.Builder
	var w shellWord
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
	for _, u := range p.out.unfollowed[unfollowed:] {
		delete(p.out.seen, u)
	}
	p.out.unfollowed = p.out.unfollowed[:unfollowed]
	return false
}

// condition reads [[ … ]] after the [[, whose words are operands, not
// commands, and whose < > && || are operators of the test. Operands of
// -eq, -lt … are arithmetic, and -v evaluates a subscript.
func (p *shellParser) condition(start int) {
	var words []shellWord
	defer func() {
		p.checkTest(words, "[[ -v", p.src[start:p.pos])
		for _, w := range words {
			if w.literal && w.val == "=~" {
				p.forgetVar("BASH_REMATCH", p.src[start:p.pos])
			}
		}
	}()
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
			words = append(words, p.word())
		}
	}
}

// caseCommand reads case WORD in PATTERN) LIST ;; … esac after the case.
func (p *shellParser) caseCommand(inParens bool) listStop {
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
