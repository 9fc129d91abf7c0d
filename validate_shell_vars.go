package main

import (
	"slices"
	"strings"
)

// The variables a line assigns, as the splitter follows them: a command
// whose words use a variable assigned earlier in the line (F=--force; git
// push $F) is reported with the value put in where zot knows it exactly,
// with the expression the line assigned where the value is known only at
// run time (n=$(ls | wc -l); echo "$n files" reads as echo "$(ls | wc -l)
// files"), and otherwise the line asks: a rule never matches it on its
// literal $F. A variable the line does not assign is the environment's and
// stays as written.
//
// zot knows a value when the assignment surely ran, in this shell, and
// nothing since could have changed it: a plain NAME=value or export
// NAME=value outside if/while/for/case/{ } bodies, not after && or ||,
// not in a pipeline stage or a background job; a subshell's assignments
// end with it. A loop's variable is known in its body when the loop runs
// over one word. Anything else that assigns — read, declare, printf -v,
// arithmetic, ${x:=…}, unset, cd (PWD), [[ =~ ]] (BASH_REMATCH), an
// assignment in a loop after a command used the value — leaves the value
// unknown. Commands that only print or test (echo, printf, test, [, :,
// true, false) never ask over a value zot does not know.

// varState is how far zot knows a variable's value.
type varState int

const (
	varUnset   varState = iota // the line has not assigned it: the environment's
	varExact                   // val is the value
	varWritten                 // val is the expression the line assigned, known only at run time
	varUnknown                 // assigned, to a value zot cannot tell
)

type varValue struct {
	state varState
	val   string
}

// varScope is what the splitter knows of one shell's variables at the
// point it has read to. A subshell's scope reads through to its parent's,
// which cannot change while the subshell is read, and keeps its own
// assignments; parent is also the scope whose open loops its commands are
// inside.
type varScope struct {
	vals    map[string]varValue // assigned in this scope; nil until one is
	frozen  map[string]bool     // declared, readonly …: never known again
	loops   []*varLoop
	parent  *varScope
	inherit bool // values not assigned here are the parent's
}

// varLoop is an open while/until/for/select body: the names commands in
// it used, and the loop variable, which is unknown after the loop.
type varLoop struct {
	used    map[string]bool
	forName string
}

func newVarScope() *varScope { return &varScope{} }

// sub is the scope of a subshell of s, read while s waits.
func (s *varScope) sub() *varScope { return &varScope{parent: s, inherit: true} }

// snapshot is s as it is now, for what is read later but runs now (a
// here-document's body).
func (s *varScope) snapshot() *varScope {
	c := &varScope{parent: s}
	for _, name := range s.names() {
		c.set(name, s.get(name))
		if s.isFrozen(name) {
			if c.frozen == nil {
				c.frozen = map[string]bool{}
			}
			c.frozen[name] = true
		}
	}
	return c
}

// shell is the scope of a new shell started from s (bash -c): what s
// assigned may or may not be in its environment.
func (s *varScope) shell() *varScope {
	c := &varScope{parent: s, vals: map[string]varValue{}}
	for _, name := range s.names() {
		c.vals[name] = varValue{state: varUnknown}
	}
	return c
}

func (s *varScope) get(name string) varValue {
	for ; s != nil; s = s.parent {
		if v, ok := s.vals[name]; ok || !s.inherit {
			return v
		}
	}
	return varValue{}
}

func (s *varScope) isFrozen(name string) bool {
	for ; s != nil; s = s.parent {
		if s.frozen[name] || !s.inherit {
			return s.frozen[name]
		}
	}
	return false
}

// restore puts back name's state as a list's journal kept it.
func (s *varScope) restore(name string, prior varPrior) {
	if prior.had {
		s.set(name, prior.val)
	} else {
		delete(s.vals, name)
	}
	if prior.frozen {
		s.frozen[name] = true
	} else {
		delete(s.frozen, name)
	}
}

func (s *varScope) set(name string, v varValue) {
	if s.vals == nil {
		s.vals = map[string]varValue{}
	}
	s.vals[name] = v
}

// names are the variables assigned in s as it reads.
func (s *varScope) names() []string {
	var out []string
	for ; s != nil; s = s.parent {
		for name := range s.vals {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
		if !s.inherit {
			break
		}
	}
	return out
}

// dynamicVars are the variables bash changes by itself: a value assigned
// to one does not last.
var dynamicVars = map[string]bool{
	"RANDOM": true, "SRANDOM": true, "SECONDS": true, "EPOCHSECONDS": true, "EPOCHREALTIME": true, "LINENO": true,
	"BASHPID": true, "BASH_COMMAND": true, "HISTCMD": true, "FUNCNAME": true, "GROUPS": true, "PIPESTATUS": true,
	"BASH_REMATCH": true, "REPLY": true, "OPTARG": true, "OPTIND": true, "MAPFILE": true, "COPROC": true,
	"BASH_SUBSHELL": true, "BASH_LINENO": true, "BASH_SOURCE": true, "BASH_ARGV": true, "BASH_ARGC": true,
	"DIRSTACK": true, "PWD": true, "OLDPWD": true, "PPID": true, "UID": true, "EUID": true, "SHLVL": true,
	"BASH_ARGV0": true, "_": true, "IFS": true,
}

// setVar records an assignment of name in this shell. certain says it
// surely ran here; only then can the value be known.
func (p *shellParser) setVar(name string, v varValue, certain bool, where string) {
	s := p.vars
	p.checkLoopUse(name, where)
	p.journalVar(name)
	if !certain || s.isFrozen(name) || dynamicVars[name] || len(s.loops) > 0 || p.compound > 0 {
		v = varValue{state: varUnknown}
	}
	s.set(name, v)
}

// checkLoopUse asks about an assignment in a loop whose commands used the
// variable before: on the next pass they get the new value.
func (p *shellParser) checkLoopUse(name, where string) {
	for _, l := range p.vars.loops {
		if l.used[name] {
			p.unfollow("$"+name+", assigned in a loop after a command used it (the next pass uses the new value)", where)
			return
		}
	}
}

// certain reports whether a command being finished surely runs in this
// shell, in order: not in a body, not after && or ||, not in a subshell.
func (p *shellParser) certain(subshell bool) bool {
	return p.compound == 0 && p.andOr == andOrFirst && !subshell
}

// journalVar keeps name's state in the journal of the list being read,
// before the list first changes it.
func (p *shellParser) journalVar(name string) {
	if len(p.lists) == 0 {
		return
	}
	j := &p.lists[len(p.lists)-1]
	k := varKey{p.vars, name}
	if _, ok := j.vars[k]; ok {
		return
	}
	if j.vars == nil {
		j.vars = map[varKey]varPrior{}
	}
	v, had := p.vars.vals[name]
	j.vars[k] = varPrior{val: v, had: had, frozen: p.vars.frozen[name]}
}

// forgetVar records an assignment zot cannot follow.
func (p *shellParser) forgetVar(name, where string) {
	p.setVar(name, varValue{state: varUnknown}, false, where)
}

// forgetAll records an assignment to names zot cannot tell (unset "$x").
func (p *shellParser) forgetAll(where string) {
	for _, name := range p.vars.names() {
		p.forgetVar(name, where)
	}
}

// freezeVar records a declare, local, typeset or readonly of name: its
// attributes can change what later assignments store.
func (p *shellParser) freezeVar(name, where string) {
	p.forgetVar(name, where)
	if p.vars.frozen == nil {
		p.vars.frozen = map[string]bool{}
	}
	p.vars.frozen[name] = true
}

// loopVar records the NAME of for NAME in WORDS, or of select, for the
// body: a for loop over one word gives it that word's value.
func (p *shellParser) loopVar(name string, words []shellWord, isSelect bool, where string) {
	s := p.vars
	p.checkLoopUse(name, where)
	p.journalVar(name)
	v := varValue{state: varUnknown}
	if len(words) == 1 && !isSelect {
		if sub, ok := p.substituteWord(words[0]); ok && len(sub) == 1 {
			v = varValue{state: varWritten, val: sub[0].val}
			if sub[0].literal {
				v.state = varExact
			}
		}
	}
	if s.isFrozen(name) || dynamicVars[name] {
		v = varValue{state: varUnknown}
	}
	s.set(name, v)
	if isSelect {
		p.journalVar("REPLY")
		s.set("REPLY", varValue{state: varUnknown})
	}
	if len(s.loops) > 0 {
		s.loops[len(s.loops)-1].forName = name
	}
}

// openLoop and closeLoop follow while/until/for/select bodies.
func (p *shellParser) openLoop(forName string) {
	p.vars.loops = append(p.vars.loops, &varLoop{used: map[string]bool{}, forName: forName})
}

func (p *shellParser) closeLoop() {
	s := p.vars
	if len(s.loops) == 0 {
		return
	}
	l := s.loops[len(s.loops)-1]
	s.loops = s.loops[:len(s.loops)-1]
	if l.forName != "" {
		p.journalVar(l.forName)
		s.set(l.forName, varValue{state: varUnknown}) // the last word, or unchanged when the list was empty
	}
}

// inLoop reports a loop body open around the command being read.
func (p *shellParser) inLoop() bool {
	for s := p.vars; s != nil; s = s.parent {
		if len(s.loops) > 0 {
			return true
		}
	}
	return false
}

// used records that a command in the open loops used name.
func (p *shellParser) used(name string) {
	for s := p.vars; s != nil; s = s.parent {
		for _, l := range s.loops {
			l.used[name] = true
		}
	}
}

// assignedValue is what NAME=word stores, as far as zot knows it.
func (p *shellParser) assignedValue(w shellWord) varValue {
	_, n := assignmentName(w.raw)
	_, val, _ := assignment(w)
	if strings.HasPrefix(w.raw[n:], "(") {
		return varValue{state: varUnknown} // an array: $NAME is its first element
	}
	for _, r := range w.opRefs() {
		if p.vars.get(r).state != varUnset {
			return varValue{state: varUnknown}
		}
	}
	if p.out.unreadDocs > 0 {
		for _, r := range w.refs() {
			if p.vars.get(r).state != varUnset {
				return varValue{state: varUnknown} // see substituteWord
			}
		}
	}
	parts, ok := wordParts(w.raw[n:], true)
	if !ok {
		for _, r := range w.refs() {
			if p.vars.get(r).state != varUnset {
				return varValue{state: varUnknown}
			}
		}
		return varValue{state: varWritten, val: val}
	}
	fields, state := p.expandParts(parts, false)
	v := varValue{state: state, val: strings.Join(fields, "")}
	if name, _ := assignmentName(w.raw); w.raw[n-2] == '+' {
		// NAME+=value appends to what it held.
		old := p.vars.get(name)
		if old.state != varExact || state != varExact {
			return varValue{state: varUnknown}
		}
		v.val = old.val + v.val
	}
	if state == varUnknown {
		return varValue{state: varUnknown}
	}
	return v
}

// quietCommands only print or test: a value zot does not know in their
// words changes nothing that runs.
var quietCommands = map[string]bool{"echo": true, "printf": true, "test": true, "[": true, ":": true, "true": true, "false": true}

// substitute puts into the words of a command the values of the variables
// the line assigned, and records what it cannot tell; vars names those put
// in.
func (p *shellParser) substitute(ws []shellWord, raw string) (out []shellWord, vars []string) {
	quiet := len(ws) > 0 && ws[0].literal && quietCommands[ws[0].val]
	if quiet && p.inLoop() {
		return ws, nil // a later pass may see other values; these commands need none
	}
	touched := false
	for _, w := range ws {
		for _, refs := range [2][]string{w.refs(), w.opRefs()} {
			for _, r := range refs {
				if !quiet {
					p.used(r)
				}
				touched = touched || p.vars.get(r).state != varUnset
			}
		}
	}
	if !touched {
		return ws, nil
	}
	out = make([]shellWord, 0, len(ws))
	for i, w := range ws {
		sub, ok := p.substituteWord(w)
		for _, r := range w.refs() {
			if st := p.vars.get(r).state; ok && (st == varExact || st == varWritten) && !slices.Contains(vars, r) {
				vars = append(vars, r)
			}
		}
		if !ok {
			if !quiet {
				p.unfollow("a command word using a variable the line assigned a value zot cannot tell ("+w.raw+")", raw)
			}
			out = append(out, w)
			continue
		}
		if i == 0 && len(sub) > 0 && sub[0].literal && quietCommands[sub[0].val] {
			quiet = true
		}
		out = append(out, sub...)
	}
	return out, vars
}

// substituteWord expands the variables of one word, or reports that it
// cannot say what the word becomes.
func (p *shellParser) substituteWord(w shellWord) ([]shellWord, bool) {
	touched := false
	for _, r := range w.refs() {
		touched = touched || p.vars.get(r).state != varUnset
	}
	for _, r := range w.opRefs() {
		if p.vars.get(r).state != varUnset {
			return nil, false
		}
	}
	if !touched {
		return []shellWord{w}, true
	}
	if p.out.unreadDocs > 0 {
		return nil, false // a here-document's body, read later, may have assigned it before this ran
	}
	parts, ok := wordParts(w.raw, false)
	if !ok {
		return nil, false
	}
	fields, state := p.expandParts(parts, true)
	if state == varUnknown {
		return nil, false
	}
	out := make([]shellWord, len(fields))
	for i, f := range fields {
		out[i] = shellWord{val: f, raw: w.raw, literal: state == varExact, single: state == varExact}
		if state != varExact {
			// The value the line assigned is known only as its expression.
			out[i].holes = []WordHole{{Start: 0, End: len(f), Split: true}}
		}
	}
	return out, true
}

// wordPart is one piece of a word for substitution: text, or (ref) the
// name of a variable, quoted or not.
type wordPart struct {
	text        string
	ref, quoted bool
}

// wordParts reads a raw word made only of plain text, quotes, escapes,
// $'…', $NAME and ${NAME} into parts; ok is false for anything else, and,
// outside an assignment's value, for an unquoted glob, brace or leading ~,
// whose words zot cannot tell either.
func wordParts(raw string, assignValue bool) (parts []wordPart, ok bool) {
	lit := func(s string, quoted bool) { parts = append(parts, wordPart{text: s, quoted: quoted}) }
	for i := 0; i < len(raw); {
		switch c := raw[i]; c {
		case '\\':
			switch {
			case i+1 == len(raw):
				lit(`\`, true)
			case raw[i+1] != '\n':
				lit(raw[i+1:i+2], true)
			}
			i += 2
		case '\'':
			end := strings.IndexByte(raw[i+1:], '\'')
			if end < 0 {
				return nil, false
			}
			lit(raw[i+1:i+1+end], true)
			i += end + 2
		case '"':
			j := i + 1
			for j < len(raw) && raw[j] != '"' {
				switch raw[j] {
				case '\\':
					if j+1 < len(raw) && strings.IndexByte("$`\"\\\n", raw[j+1]) >= 0 {
						if raw[j+1] != '\n' {
							lit(raw[j+1:j+2], true)
						}
						j += 2
						continue
					}
					lit(`\`, true)
					j++
				case '$':
					name, n := simpleRef(raw[j:])
					if n == 0 {
						return nil, false
					}
					parts = append(parts, wordPart{text: name, ref: true, quoted: true})
					j += n
				case '`':
					return nil, false
				default:
					k := j
					for k < len(raw) && strings.IndexByte("\"\\$`", raw[k]) < 0 {
						k++
					}
					lit(raw[j:k], true)
					j = k
				}
			}
			if j >= len(raw) {
				return nil, false
			}
			parts = append(parts, wordPart{quoted: true}) // "" is a word even when empty
			i = j + 1
		case '$':
			if strings.HasPrefix(raw[i:], "$'") {
				p := &shellParser{src: raw, pos: i + 2}
				var b strings.Builder
				p.ansiC(&b)
				if p.src[p.pos-1] != '\'' || p.pos == i+2 {
					return nil, false
				}
				lit(b.String(), true)
				i = p.pos
				continue
			}
			name, n := simpleRef(raw[i:])
			if n == 0 {
				return nil, false
			}
			parts = append(parts, wordPart{text: name, ref: true})
			i += n
		case '`':
			return nil, false
		default:
			j := i
			for j < len(raw) && strings.IndexByte("\\'\"$`", raw[j]) < 0 {
				j++
			}
			text := raw[i:j]
			if !assignValue && (strings.ContainsAny(text, "*?[{") || i == 0 && strings.HasPrefix(text, "~")) {
				return nil, false
			}
			if assignValue && (strings.HasPrefix(text, "~") && i == 0 || strings.Contains(text, ":~")) {
				return nil, false
			}
			lit(text, false)
			i = j
		}
	}
	return parts, true
}

// simpleRef reads $NAME or ${NAME} at the start of s: the name and the
// length, or 0.
func simpleRef(s string) (string, int) {
	if strings.HasPrefix(s, "${") {
		end := strings.IndexByte(s, '}')
		if end > 2 && isName(s[2:end]) {
			return s[2:end], end + 1
		}
		return "", 0
	}
	j := 1
	for j < len(s) && isNameByte(s[j]) {
		j++
	}
	if j == 1 || !isName(s[1:j]) {
		return "", 0
	}
	return s[1:j], j
}

// expandParts puts the values in: in a command word (split true) an
// unquoted value is split into words at blanks, as bash's default IFS
// does, and one with a glob or a backslash cannot be told. state is
// varExact when every part is known, varWritten when some part is only
// known as written, varUnknown when zot cannot tell.
func (p *shellParser) expandParts(parts []wordPart, split bool) (fields []string, state varState) {
	state = varExact
	var cur strings.Builder
	have := false
	flush := func() {
		if have {
			fields = append(fields, cur.String())
		}
		cur.Reset()
		have = false
	}
	for _, part := range parts {
		if !part.ref {
			cur.WriteString(part.text)
			have = have || part.quoted || part.text != ""
			continue
		}
		v := p.vars.get(part.text)
		switch v.state {
		case varUnknown:
			return nil, varUnknown
		case varUnset, varWritten:
			if v.state == varUnset {
				v.val = "$" + part.text
			}
			cur.WriteString(v.val)
			have, state = true, varWritten
			continue
		}
		if part.quoted || !split {
			cur.WriteString(v.val)
			have = true
			continue
		}
		if p.vars.get("IFS").state != varUnset || strings.ContainsAny(v.val, "*?[\\") {
			return nil, varUnknown
		}
		if strings.TrimLeft(v.val, " \t\n") != v.val {
			flush()
		}
		for i, f := range strings.FieldsFunc(v.val, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }) {
			if i > 0 {
				flush()
			}
			cur.WriteString(f)
			have = true
		}
		if v.val != "" && strings.TrimRight(v.val, " \t\n") != v.val {
			flush()
		}
	}
	flush()
	return fields, state
}

// unsetVars follows unset: what it names is no longer what the line
// assigned; a name known only at run time could be any of them.
func (p *shellParser) unsetVars(args []shellWord, where string) {
	for _, a := range args {
		switch {
		case !a.literal:
			p.forgetAll(where)
		case !strings.HasPrefix(a.val, "-"):
			name, _, _ := strings.Cut(a.val, "[")
			p.forgetVar(name, where)
		}
	}
}
