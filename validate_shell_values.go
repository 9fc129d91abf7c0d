package main

import "strings"

// What bash evaluates beyond the words of a line, as the splitter checks
// it: arithmetic — $((…)), let, [[ -eq ]], subscripts, substring offsets —
// evaluates variables' values as expressions, and a value such as
// a[$(rm x)] runs a command; a name given to read or declare can hold
// such a subscript; ${!x} and ${x@P} expand what a value names; and some
// variables, once assigned, change which program a name runs (PATH) or
// run code of their own (BASH_ENV, PS4). The splitter follows what it can
// vouch for and names the rest.

// shellSensitiveVars change what a command name runs, or run code of
// their own, when assigned.
var shellSensitiveVars = map[string]string{
	"PATH": "it decides which program a name runs", "EXECIGNORE": "it decides which program a name runs",
	"BASH_ENV": "a shell runs the file it names", "ENV": "a shell runs the file it names",
	"SHELLOPTS": "it sets options of every bash started", "BASHOPTS": "it sets options of every bash started",
	"POSIXLY_CORRECT": "it changes how bash reads commands", "BASH_COMPAT": "it changes how bash reads commands",
	"PS0": "bash expands it, running what it holds", "PS1": "bash expands it, running what it holds",
	"PS2": "bash expands it, running what it holds", "PS3": "bash expands it, running what it holds",
	"PS4": "bash expands it, running what it holds", "PROMPT_COMMAND": "bash runs it",
	"CDPATH": "it decides where cd goes", "HOME": "it decides where cd and ~ go", "OLDPWD": "it decides where cd - goes",
	"BASH_LOADABLES_PATH": "enable loads code from it",
	"BASH_CMDS":           "it is bash's table of the programs command names run", "BASH_ALIASES": "it defines aliases",
	"LD_PRELOAD": "the loader runs code from it", "LD_AUDIT": "the loader runs code from it", "LD_LIBRARY_PATH": "the loader runs code from it",
	"DYLD_INSERT_LIBRARIES": "the loader runs code from it", "DYLD_LIBRARY_PATH": "the loader runs code from it",
}

func sensitiveVar(name string) string {
	if strings.HasPrefix(name, "BASH_FUNC_") {
		return "bash imports it as a function"
	}
	return shellSensitiveVars[name]
}

// shellStartupProblems names what in the shell's starting environment runs
// code before the line or changes how bash reads it: zot cannot see
// either, so every line asks until the user unsets them.
func shellStartupProblems(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "BASH_ENV", name == "SHELLOPTS", name == "BASHOPTS", name == "POSIXLY_CORRECT", name == "BASH_COMPAT":
			out = append(out, "zot's environment sets "+name+", which changes what bash runs or how it reads the line (unset it before starting zot)")
		case strings.HasPrefix(name, "BASH_FUNC_"):
			out = append(out, "zot's environment exports the bash function "+strings.TrimSuffix(strings.TrimPrefix(name, "BASH_FUNC_"), "%%")+" (unset it before starting zot)")
		}
	}
	return out
}

// assign records an assignment to name for the arithmetic check, and
// reports one that changes what runs.
func (p *shellParser) assign(name string, isInt bool, where string) {
	if why := sensitiveVar(name); why != "" {
		p.unfollow("an assignment to "+name+" ("+why+")", where)
	}
	if prev, ok := p.out.ints[name]; ok {
		isInt = isInt && prev
	}
	p.out.ints[name] = isInt
}

// assignWord records NAME=value or NAME[i]=value.
func (p *shellParser) assignWord(name string, w shellWord, raw string) {
	_, n := assignmentName(w.raw)
	if i := strings.IndexByte(w.raw[:n], '['); i >= 0 {
		p.arithUse(w.raw[i+1:strings.LastIndexByte(w.raw[:n], ']')], w.raw)
	}
	_, val, _ := assignment(w)
	value := w.raw[n:]
	p.assign(name, !strings.HasPrefix(value, "(") && isIntegerWord(shellWord{raw: value, val: val, literal: w.literal}), raw)
}

// isIntegerWord reports whether a word is sure to be an integer or an
// expression of constants — $((…)) is one — so arithmetic may read it.
func isIntegerWord(w shellWord) bool {
	raw := strings.Trim(w.raw, `"`)
	if strings.HasPrefix(raw, "$((") && strings.HasSuffix(raw, "))") && strings.Count(raw, "$((") == 1 {
		return true
	}
	if !w.literal || w.val == "" {
		return false
	}
	reads, _, bad := arithScan(w.val)
	return bad == "" && len(reads) == 0
}

type arithRead struct{ name, where string }

// arithUse checks an arithmetic expression bash will evaluate: a value it
// reads that zot does not know could be an expression that runs commands
// (x='a[$(rm y)]'; echo $((x))).
func (p *shellParser) arithUse(expr, where string) {
	reads, writes, bad := arithScan(expr)
	if bad != "" {
		p.unfollow("arithmetic on "+bad+", whose value bash evaluates as an expression", where)
	}
	for _, w := range writes {
		p.assign(w, true, where)
		p.forgetVar(w, where)
	}
	for _, r := range reads {
		p.out.arith = append(p.out.arith, arithRead{r, where})
	}
}

// arithIntegers are the variables bash itself keeps integer.
var arithIntegers = map[string]bool{
	"RANDOM": true, "SRANDOM": true, "SECONDS": true, "EPOCHSECONDS": true, "LINENO": true,
	"BASHPID": true, "PPID": true, "UID": true, "EUID": true, "BASH_SUBSHELL": true,
}

// checkArithmetic runs once the line is read: arithmetic may read a
// variable only when every assignment of it in the line is an integer.
func (o *shellOut) checkArithmetic() {
	p := &shellParser{out: o}
	for _, r := range o.arith {
		isInt, assigned := o.ints[r.name]
		if isInt || (!assigned && arithIntegers[r.name]) {
			continue
		}
		p.unfollow("arithmetic on $"+r.name+", whose value bash evaluates as an expression", r.where)
	}
}

// arithScan reads an arithmetic expression as bash evaluates it: reads are
// the variables whose values it evaluates, writes those it assigns (always
// integers), bad names a part known only at run time that no variable
// check can vouch for ($(…), $1, ${x/…}).
func arithScan(expr string) (reads, writes []string, bad string) {
	for i := 0; i < len(expr); {
		ch := expr[i]
		switch {
		case ch >= '0' && ch <= '9':
			for i < len(expr) && (isNameByte(expr[i]) || expr[i] == '#' || expr[i] == '@') {
				i++ // 10, 0x1f, 16#ff, 64#_@
			}
		case isNameByte(ch):
			j := i
			for j < len(expr) && isNameByte(expr[j]) {
				j++
			}
			name := expr[i:j]
			k := skipBlanks(expr, j)
			if k < len(expr) && expr[k] == '[' {
				end := matchBracket(expr, k)
				r, w, b := arithScan(expr[k+1 : end])
				reads, writes = append(reads, r...), append(writes, w...)
				if bad == "" {
					bad = b
				}
				k = skipBlanks(expr, min(end+1, len(expr)))
			}
			rest := expr[k:]
			before := strings.TrimRight(expr[:i], " \t")
			pre := strings.HasSuffix(before, "++") || strings.HasSuffix(before, "--")
			switch {
			case strings.HasPrefix(rest, "=") && !strings.HasPrefix(rest, "=="):
				writes = append(writes, name)
			case pre || strings.HasPrefix(rest, "++") || strings.HasPrefix(rest, "--") || isCompoundAssign(rest):
				writes, reads = append(writes, name), append(reads, name)
			default:
				reads = append(reads, name)
			}
			i = max(k, j)
		case ch == '$':
			name, n := arithParam(expr[i:])
			if n == 0 {
				if bad == "" {
					bad = expr[i:min(len(expr), i+12)]
				}
				return reads, writes, bad
			}
			if name != "" {
				reads = append(reads, name)
			}
			i += n
		case ch == '`':
			if bad == "" {
				bad = "`…`"
			}
			return reads, writes, bad
		default:
			i++
		}
	}
	return reads, writes, bad
}

// arithParam reads a $ expansion inside arithmetic: the variable it reads
// (none for $#, $?, $$, $! and ${#x}) and its length, or 0 when it is
// something whose value zot cannot vouch for.
func arithParam(s string) (name string, n int) {
	if len(s) < 2 {
		return "", 0
	}
	switch c := s[1]; {
	case c == '#' || c == '?' || c == '$' || c == '!':
		return "", 2
	case isNameByte(c) && !(c >= '0' && c <= '9'):
		j := 1
		for j < len(s) && isNameByte(s[j]) {
			j++
		}
		return s[1:j], j
	case c == '{':
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", 0
		}
		inner := s[2:end]
		if strings.HasPrefix(inner, "#") && isName(inner[1:]) {
			return "", end + 1
		}
		if isName(inner) {
			return inner, end + 1
		}
	}
	return "", 0
}

func isCompoundAssign(s string) bool {
	for _, op := range []string{"+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|="} {
		if strings.HasPrefix(s, op) {
			return true
		}
	}
	return false
}

// checkTest checks the operands of a test ([[ ]], test, [) that bash
// evaluates: those of the arithmetic comparisons in [[ ]], and the
// variable of -v.
func (p *shellParser) checkTest(words []shellWord, what, where string) {
	arith := strings.HasPrefix(what, "[[")
	for i, w := range words {
		if !w.literal {
			continue
		}
		switch w.val {
		case "-v":
			if i+1 < len(words) {
				p.checkVarName(words[i+1], what, where)
			}
		case "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
			if !arith {
				continue
			}
			for _, j := range []int{i - 1, i + 1} {
				if j >= 0 && j < len(words) {
					p.arithOperand(words[j], where)
				}
			}
		}
	}
}

// arithOperand checks a word bash evaluates as an arithmetic expression.
func (p *shellParser) arithOperand(w shellWord, where string) {
	if w.literal {
		p.arithUse(w.val, where)
		return
	}
	ref := strings.Trim(w.raw, `"`)
	if name, n := arithParam(ref); n > 0 && n == len(ref) {
		if name != "" {
			p.out.arith = append(p.out.arith, arithRead{name, where})
		}
		return
	}
	p.unfollow("arithmetic on "+w.raw+", whose value bash evaluates as an expression", where)
}

// checkVarName checks a word a builtin uses as a variable name (read,
// printf -v, declare, -v): a subscript in it is arithmetic, and a name
// known only at run time could hold one.
func (p *shellParser) checkVarName(w shellWord, what, where string) (string, bool) {
	if !w.literal {
		p.unfollow(what+" of a variable name known only at run time", where)
		return "", false
	}
	name, sub, hasSub := strings.Cut(w.val, "[")
	if !isName(name) {
		return "", false // bash refuses it
	}
	if hasSub {
		p.arithUse(strings.TrimSuffix(sub, "]"), where)
	}
	return name, true
}

// checkParam checks the parts of ${…} that bash evaluates beyond a plain
// value: an indirection ${!x}, the prompt expansion ${x@P}, a subscript
// ${a[i]} and a substring's offset and length ${x:i:n}, which are
// arithmetic.
func (p *shellParser) checkParam(body, where string) {
	rest := body
	indirect := false
	switch {
	case strings.HasPrefix(rest, "#") && len(rest) > 1:
		rest = rest[1:]
	case strings.HasPrefix(rest, "!") && len(rest) > 1:
		indirect, rest = true, rest[1:]
	}
	n := 0
	for n < len(rest) && isNameByte(rest[n]) {
		n++
	}
	if n == 0 && rest != "" && strings.IndexByte("@*#?-$!", rest[0]) >= 0 {
		n = 1
	}
	rest = rest[n:]
	keys := false
	if strings.HasPrefix(rest, "[") {
		end := matchBracket(rest, 0)
		sub := rest[1:min(end, len(rest))]
		if sub == "@" || sub == "*" {
			keys = true
		} else {
			p.arithUse(sub, where)
		}
		rest = rest[min(end+1, len(rest)):]
	}
	switch {
	case indirect && !keys && rest != "*" && rest != "@":
		p.unfollow("an indirect expansion ${!…}", where)
	case strings.HasPrefix(rest, "@P"):
		p.unfollow("a prompt expansion ${…@P}, which runs what the value holds", where)
	case strings.HasPrefix(rest, ":") && len(rest) > 1 && strings.IndexByte("-=+?", rest[1]) < 0:
		for _, part := range strings.SplitN(rest[1:], ":", 2) {
			p.arithUse(part, where)
		}
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isName reports whether s is a shell variable name.
func isName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

func skipBlanks(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// matchBracket finds the ] closing the [ at s[open], or len(s).
func matchBracket(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return len(s)
}
