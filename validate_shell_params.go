package main

import "strings"

// How bash delimits ${…}, and what in it the splitter vouches for.
//
// Bash's parser reads a ${ up to the first } that is not escaped, inside
// quotes, or inside a nested ${ }, $( ), $[ ] or ` `. A bare { does not
// nest (${x-{} ends at its first }), single quotes quote even inside
// double quotes ("${x#'"'}" is one word), $'…' honours its escapes
// (${x:-$'\''}), and $$ is a parameter ($${ opens nothing). Expanding the
// word reads it again, by the operator and the quoting around the ${: in
// a double-quoted or here-document ${x:-…} single quotes are plain text
// and what they hold is expanded, while in ${x#…} they still quote.
//
// The splitter delimits ${…} exactly as the parser does and follows the
// commands in it. It asks where the second reading could run what the
// first hides, where dash could read it differently, and wherever the
// form is one it does not know.

// paramExp reads ${ … } after the ${, following the commands inside it,
// and notes the variables it uses in outer, the word it is part of. quoted
// says the ${ is inside double quotes or a here-document body.
func (p *shellParser) paramExp(quoted bool, outer *shellWord) {
	open := p.pos - 2
	var discard strings.Builder
	var w shellWord
	defer func() {
		for _, r := range append(w.refs(), w.opRefs()...) {
			outer.use(r, true)
		}
	}()
	var hidden []string // text the parser reads as quoted: '…' and $'…'
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case '}':
			p.pos++
			body := p.src[open+2 : p.pos-1]
			p.paramBody(body, p.src[open:p.pos], quoted, hidden)
			if name, op, ok := paramForm(body); ok && name != "" {
				if op == "" && name == body {
					outer.use(name, false)
				} else {
					outer.use(name, true)
				}
			}
			return
		case '\\':
			p.pos = min(p.pos+2, len(p.src))
		case '\'':
			s := p.pos
			p.skipSingleQuoted(false)
			hidden = append(hidden, p.src[s:p.pos])
		case '"':
			p.pos++
			p.dquoted(&discard, &w, true)
		case '`':
			p.backtick(&discard)
		case '$':
			if p.peek(1) == '\'' {
				s := p.pos
				p.pos++
				p.skipSingleQuoted(true)
				hidden = append(hidden, p.src[s:p.pos])
				continue
			}
			p.dollar(&discard, &w, quoted)
		default:
			p.pos++
		}
	}
	p.unfollow("a ${…} without its closing }", p.src[open:])
}

// skipSingleQuoted moves past the '…' at pos; with escapes (the quote of
// $'…') a backslash keeps the next character, the quote included.
func (p *shellParser) skipSingleQuoted(escapes bool) {
	for p.pos++; p.pos < len(p.src); p.pos++ {
		switch p.src[p.pos] {
		case '\\':
			if escapes && p.pos+1 < len(p.src) {
				p.pos++
			}
		case '\'':
			p.pos++
			return
		}
	}
}

// paramBody checks a ${…} once it is delimited: body is what is between
// the braces, where the whole of it.
func (p *shellParser) paramBody(body, where string, quoted bool, hidden []string) {
	if !p.bash && strings.ContainsAny(body, "'\"\\`{}") {
		p.unfollow("a ${…} with quotes, escapes or braces inside, which dash and bash delimit differently", where)
		return
	}
	if quoted || p.inArith > 0 {
		for _, h := range hidden {
			if strings.HasPrefix(h, "$'") || strings.ContainsAny(h, "$`") {
				p.unfollow("single quotes inside a ${…} within double quotes, a here-document or arithmetic, which bash reads as quotes and may expand as text", where)
				return
			}
		}
	}
	if p.inArith > 0 && strings.ContainsAny(body, "()") {
		p.unfollow("a ${…} with parentheses inside arithmetic, which bash delimits by its parentheses alone", where)
		return
	}
	name, op, ok := paramForm(body)
	if !ok {
		p.unfollow("a ${…} of a form zot does not know", where)
		return
	}
	if op == "=" || op == ":=" {
		p.assign(name, false, where)
		p.forgetVar(name, where)
	}
	p.checkParam(body, where)
}

// paramOps are the operators bash reads after the parameter of a ${…},
// longest first; a word follows each.
var paramOps = []string{":-", ":=", ":?", ":+", "-", "=", "?", "+", "##", "#", "%%", "%", "//", "/#", "/%", "/",
	"^^", "^", ",,", ",", "~~", "~"}

// paramForm reads the body of a ${…} by the forms bash knows: ${#p} and
// ${!p} (length and indirection), a subscript p[…], then nothing, an
// operator and its word, a substring :offset[:length], or a
// transformation @Q … @k; ${!p*}, ${!p@} and ${!p[@]} name variables and
// keys. name is the variable's name ("" for a special or positional
// parameter), op the operator ("" for none).
func paramForm(body string) (name, op string, ok bool) {
	rest := body
	var prefix byte
	if len(rest) > 1 && (rest[0] == '#' || rest[0] == '!') {
		prefix, rest = rest[0], rest[1:]
	}
	n := 0
	switch {
	case rest == "":
		return "", "", false
	case rest[0] >= '0' && rest[0] <= '9':
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
	case isNameByte(rest[0]):
		for n < len(rest) && isNameByte(rest[n]) {
			n++
		}
		name = rest[:n]
	case strings.IndexByte("@*#?-$!", rest[0]) >= 0:
		n = 1
	default:
		return "", "", false
	}
	rest = rest[n:]
	if name != "" && strings.HasPrefix(rest, "[") {
		end := matchBracket(rest, 0)
		if end >= len(rest) {
			return "", "", false
		}
		rest = rest[end+1:]
	}
	switch {
	case rest == "":
		return name, "", true
	case prefix == '#':
		return "", "", false
	case prefix == '!' && name != "" && (rest == "*" || rest == "@"):
		return name, "", true
	case rest[0] == '@':
		if len(rest) == 2 && strings.IndexByte("QEPAaUuLKk", rest[1]) >= 0 {
			return name, rest, true
		}
		return "", "", false
	case rest[0] == ':' && (len(rest) == 1 || strings.IndexByte("-=?+", rest[1]) < 0):
		return name, ":", true
	}
	for _, o := range paramOps {
		if strings.HasPrefix(rest, o) {
			return name, o, true
		}
	}
	return "", "", false
}

// dollarDparen reads $(( at start as bash does: its parser ends it where
// the parentheses after $( balance, counting them through quotes but not
// comments; then bash evaluates it as arithmetic when what is between $((
// and )) balances on its own, and runs it as a command substitution of a
// subshell otherwise. It reports false, moving nothing, when the
// parentheses never balance.
func (p *shellParser) dollarDparen(start int, w *shellWord) bool {
	end := matchParens(p.src, start+1)
	if end < 0 {
		return false
	}
	if p.src[end-2] != ')' || !balancedParens(p.src[start+3:end-2]) {
		if k := p.child(p.src[start+2:end-1], p.bash); k != nil {
			k.inSubst = true
			k.list(false, false)
		}
		p.pos = end
		return true
	}
	p.pos = start + 1
	if !p.arith() || p.pos != end {
		p.unfollow("an arithmetic expansion $((…)) that zot does not delimit as bash does", p.src[start:end])
		p.pos = end
		return true
	}
	p.arithUse(p.src[start+3:p.pos-2], p.src[start:p.pos])
	reads, _, _ := arithScan(p.src[start+3 : p.pos-2])
	for _, r := range reads {
		w.use(r, true)
	}
	return true
}

// matchParens finds the end of the parentheses opening at s[open] — the
// index after the ) that balances them — skipping escaped characters and
// quoted text; -1 when they do not balance.
func matchParens(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'', '"', '`':
			end := closingQuote(s, i)
			if end < 0 {
				return -1
			}
			i = end
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// balancedParens reports whether the parentheses of s balance, never
// closing more than are open, outside quotes: bash's test that $((…)) is
// arithmetic.
func balancedParens(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'', '"':
			end := closingQuote(s, i)
			if end < 0 {
				return false
			}
			i = end
		case '(':
			depth++
		case ')':
			if depth--; depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

// closingQuote finds the quote closing the one at s[i]; inside " and `
// a backslash keeps the next character.
func closingQuote(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if q != '\'' {
				j++
			}
		case q:
			return j
		}
	}
	return -1
}
