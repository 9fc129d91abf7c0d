package main

// One word of a command line, as the splitter (validate_shell.go) reads it:
// quotes, $-expansions, backticks, $'…' escapes and array values, with
// what is known only at run time marked as holes.

import (
	"slices"
	"strconv"
	"strings"
)

// word reads one word: quotes removed, expansions kept as written, and
// the commands in them ($( ), ` `, <( )) split on the way.
func (p *shellParser) word() shellWord {
	start := p.pos
	var b strings.Builder
	w := shellWord{plain: true, literal: true, single: true}
	// Plain bytes are copied in runs; a word that is all plain bytes is a
	// substring of the line and copies nothing.
	run := start
	flush := func() { b.WriteString(p.src[run:p.pos]) }
	bracket, braces, braceList := false, 0, false
	bracketAt, tilde, braceWord := 0, false, false
	at := func() int { return b.Len() + p.pos - run } // where in val the byte at pos goes
	glob := func() { w.literal, w.single, w.glob = false, false, true }
loop:
	for p.pos < len(p.src) {
		switch ch := p.src[p.pos]; ch {
		case ' ', '\t', '\n', ';', '&', '|', ')':
			break loop
		case '(':
			if !isArrayAssignment(p.src[start:p.pos]) {
				break loop
			}
			if !p.bash {
				p.shOnly("an array assignment", start)
			}
			flush()
			w.plain, w.literal = false, false
			from := b.Len()
			p.nest(func() { p.arrayValue(&b) })
			w.hole(from, b.Len(), false)
		case '<', '>':
			if p.peek(1) != '(' {
				break loop
			}
			if !p.bash {
				p.shOnly("a process substitution", p.pos)
			}
			flush()
			w.plain, w.literal = false, false
			s, from := p.pos, b.Len()
			p.pos += 2
			p.substitution(func() { p.list(true, false) })
			b.WriteString(p.src[s:p.pos])
			w.hole(from, b.Len(), false)
		case '\\', '\'', '"', '`', '$':
			flush()
			p.wordPart(&b, &w)
		default:
			switch ch {
			case '*', '?':
				glob()
				w.hole(at(), at()+1, false)
			case '[':
				if !bracket {
					bracket, bracketAt = true, at()
				}
			case ']':
				if bracket {
					glob()
					w.hole(bracketAt, at()+1, false)
				}
			case '~':
				if p.pos == start {
					w.literal, tilde = false, true
				} else if _, n := assignmentName(p.src[start:p.pos]); n > 0 && (p.src[p.pos-1] == '=' || p.src[p.pos-1] == ':') {
					// bash expands ~ after the = and each : of any word
					// shaped as an assignment: x=~/a, cp a of=~/b.
					w.literal = false
					w.hole(at(), at()+1, false)
				}
			case '{':
				braces++
			case ',':
				braceList = braceList || braces > 0
			case '.':
				braceList = braceList || braces > 0 && p.peek(1) == '.'
			case '}':
				if braces > 0 && braceList {
					if !p.bash {
						p.shOnly("brace expansion", start)
					}
					glob()
					braceWord = true
				}
				braces = max(braces-1, 0)
			}
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
	switch {
	case braceWord:
		// Each word of a brace list is known, but which of them a rule
		// sees is not worth modelling: any of them, any number.
		w.holes = []WordHole{{Start: 0, End: len(w.val)}}
	case tilde:
		end := strings.IndexByte(w.val, '/')
		if end < 0 {
			end = len(w.val)
		}
		w.hole(0, end, false)
	}
	if !w.literal && len(w.holes) == 0 {
		w.hole(0, len(w.val), true) // whatever made it so, all of it is unknown
	}
	w.holes = mergeHoles(w.holes)
	return w
}

// filledAt is the word with every s in it a hole: a program (find, xargs)
// puts a value there at run time.
func (w shellWord) filledAt(s string) shellWord {
	if s == "" || !strings.Contains(w.val, s) {
		return w
	}
	w.literal = false
	w.holes = slices.Clone(w.holes)
	for i := 0; ; {
		j := strings.Index(w.val[i:], s)
		if j < 0 {
			break
		}
		w.hole(i+j, i+j+len(s), false)
		i += j + len(s)
	}
	w.holes = mergeHoles(w.holes)
	return w
}

// mergeHoles sorts holes and joins those that overlap or touch.
func mergeHoles(hs []WordHole) []WordHole {
	if len(hs) < 2 {
		return hs
	}
	slices.SortFunc(hs, func(a, b WordHole) int { return a.Start - b.Start })
	out := hs[:1]
	for _, h := range hs[1:] {
		last := &out[len(out)-1]
		if h.Start <= last.End {
			last.End = max(last.End, h.End)
			last.Split = last.Split || h.Split
			continue
		}
		out = append(out, h)
	}
	return out
}

// wordPart reads one piece of a word: an escape, a quoted string, an
// expansion or a plain byte.
func (p *shellParser) wordPart(b *strings.Builder, w *shellWord) {
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
		w.plain, w.literal, w.single = false, false, false
		from := b.Len()
		p.backtick(b)
		w.hole(from, b.Len(), true)
	case '$':
		p.dollar(b, w, false)
	default:
		b.WriteByte(ch)
		p.pos++
	}
}

// dquoted reads double-quoted text after the opening quote up to the
// closing one, or — closing false, for a here-document body — to the end.
func (p *shellParser) dquoted(b *strings.Builder, w *shellWord, closing bool) {
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
			w.literal = false
			from := b.Len()
			p.backtick(b)
			w.hole(from, b.Len(), false)
		default:
			b.WriteByte(ch)
			p.pos++
		}
	}
}

// dollar reads what follows a $: $( ), $(( )), $[ ], ${ }, $' ', $" " or a
// parameter, which stays as written.
func (p *shellParser) dollar(b *strings.Builder, w *shellWord, quoted bool) {
	start, from := p.pos, b.Len()
	expanded, split := false, !quoted // "$@" and "${a[@]}" split too
	defer func() {
		if expanded {
			w.hole(from, b.Len(), split)
		}
	}()
	expansion := func() {
		expanded = true
		w.plain, w.literal = false, false
		if !quoted {
			w.single = false
		}
	}
	if p.peek(1) == '\\' && p.peek(2) == '\n' {
		// bash joins the lines first: $\<newline>(…) is $(…).
		p.unfollow("a line continuation after $, which bash joins before it reads the $", p.src[start:min(len(p.src), start+40)])
	}
	switch n := p.peek(1); {
	case n == '(':
		expansion()
		if p.peek(2) == '(' && p.dollarDparen(start, w) {
			b.WriteString(p.src[start:p.pos])
			return
		}
		p.pos += 2
		p.substitution(func() { p.list(true, false) })
		b.WriteString(p.src[start:p.pos])
	case n == '[':
		expansion()
		if !p.bash {
			p.shOnly("$[…]", start)
		}
		end := matchBracket(p.src, p.pos+1)
		p.arithUse(p.src[p.pos+2:end], p.src[start:min(len(p.src), end+1)])
		reads, _, _ := arithScan(p.src[p.pos+2 : end])
		for _, r := range reads {
			w.use(r, true)
		}
		p.pos = min(len(p.src), end+1)
		b.WriteString(p.src[start:p.pos])
	case n == '{':
		expansion()
		p.pos += 2
		p.nest(func() { p.paramExp(quoted, w) })
		body := strings.TrimSuffix(p.src[min(start+2, p.pos):p.pos], "}")
		if strings.Contains(body, "\\\n") {
			p.unfollow("a line continuation inside ${…}, which bash joins before it reads the expansion", p.src[start:min(len(p.src), start+40)])
		}
		if quoted && strings.Contains(body, "[@]") || strings.HasPrefix(body, "@") {
			w.single, split = false, true // "${a[@]}" is a word per element
		}
		b.WriteString(p.src[start:p.pos])
	case n == '\'' && !quoted:
		if !p.bash {
			p.shOnly("$'…' (dash: $ and a quoted string)", start)
			w.plain, w.literal, expanded = false, false, true
			b.WriteByte('$')
			p.pos++
			return
		}
		w.plain = false
		p.pos += 2
		p.ansiC(b)
	case n == '"' && !quoted:
		if !p.bash {
			p.shOnly(`$"…"`, start)
		}
		w.plain, w.literal, expanded, split = false, false, true, false // a translation could change it
		p.pos += 2
		p.dquoted(b, w, true)
	default:
		if n == '_' || n >= 'a' && n <= 'z' || n >= 'A' && n <= 'Z' || n != 0 && strings.IndexByte("@*#?$!-0123456789", n) >= 0 {
			expansion()
			if name, k := simpleRef(p.src[p.pos:]); k > 0 {
				w.use(name, false)
			}
			if quoted && n == '@' {
				w.single, split = false, true
			}
		}
		if n == '$' {
			// $$ is one parameter: a { after it does not open a ${.
			b.WriteByte('$')
			p.pos++
		}
		b.WriteByte('$')
		p.pos++
		if expanded && n != '$' {
			// The parameter's name is part of the expansion: $name, or
			// one character ($1, $@, $?; $10 is $1 and a 0).
			end := p.pos + 1
			if n == '_' || isASCIILetter(n) {
				for end < len(p.src) && isNameByte(p.src[end]) {
					end++
				}
			}
			b.WriteString(p.src[p.pos:end])
			p.pos = end
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
	if k := p.child(inner.String(), p.bash); k != nil {
		k.list(false, false)
	}
}

// ansiC decodes $'…' after the opening quote: $'cu\x72l' is curl. bash
// ends the string at a NUL (\0, \x00, \c@): $'rm\0x' is rm.
func (p *shellParser) ansiC(out *strings.Builder) {
	var b strings.Builder
	defer func() {
		v, _, _ := strings.Cut(b.String(), "\x00")
		out.WriteString(v)
	}()
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

// arrayValue reads the ( … ) of name=( … ); the subscripts of [i]=v in it
// are arithmetic.
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
			if w := p.word(); strings.HasPrefix(w.raw, "[") {
				if end := matchBracket(w.raw, 0); end < len(w.raw) && strings.HasPrefix(w.raw[end+1:], "=") {
					p.arithUse(w.raw[1:end], w.raw)
				}
			}
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
func assignment(w shellWord) (name, val string, ok bool) {
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
