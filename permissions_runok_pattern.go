package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// runok's pattern syntax (runok-docs/pattern-syntax/*): a pattern reads
// like the command it matches — a command name, then argument tokens —
// with * wildcards and globs, a|b alternation, !x negation, [optional
// groups], flags matched in any order (with their values, = joined or
// fused), ? optional flag values, placeholders (<cmd>, <opts>, <vars>,
// <path:…>, <var:…>, <flag:…>), quoting and backslash escapes. This file
// reads patterns and matches them against a command's words; the rules,
// files and decisions around it are in permissions_runok.go.
//
// Where runok's documentation leaves a detail of matching open, zot
// matches deny and ask rules the broader way and allow rules the narrower
// way (rpMatcher.broad), so that a difference is never a looser decision.

// rpGlob is a literal whose unescaped * match any run of characters:
// parts are the text between them (one part: no glob).
type rpGlob struct{ parts []string }

func (g rpGlob) String() string { return strings.Join(g.parts, "*") }

func (g rpGlob) plain() (string, bool) { return g.parts[0], len(g.parts) == 1 }

// isFlag says whether the glob is written as a flag: it starts with - and
// is not the bare - or --.
func (g rpGlob) isFlag() bool {
	s := g.parts[0]
	if len(g.parts) == 1 {
		return len(s) > 1 && s[0] == '-' && s != "--"
	}
	return strings.HasPrefix(s, "-")
}

// match reports whether s matches the glob.
func (g rpGlob) match(s string) bool {
	if len(g.parts) == 1 {
		return s == g.parts[0]
	}
	if !strings.HasPrefix(s, g.parts[0]) {
		return false
	}
	s = s[len(g.parts[0]):]
	last := g.parts[len(g.parts)-1]
	for _, mid := range g.parts[1 : len(g.parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}

func rpAnyMatch(gs []rpGlob, s string) bool {
	for _, g := range gs {
		if g.match(s) {
			return true
		}
	}
	return false
}

type rpKind int

const (
	rpLit       rpKind = iota // a literal or an alternation (alts)
	rpWild                    // *
	rpNeg                     // !alts
	rpFlagValue               // a flag (alts) and its value (value)
	rpOptional                // [group]
	rpOptValue                // ? as a flag's value
	rpCmd                     // <cmd>
	rpOpts                    // <opts>
	rpVars                    // <vars>
	rpPath                    // <path:name>
	rpVar                     // <var:name>
	rpFlagGroup               // <flag:name>
	rpOne                     // another <name>: one positional word
)

// rpTok is one argument token of a parsed pattern.
type rpTok struct {
	kind  rpKind
	alts  []rpGlob
	value *rpTok  // rpFlagValue
	group []rpTok // rpOptional
	name  string  // placeholders
}

func (t rpTok) anyFlag() bool {
	for _, g := range t.alts {
		if g.isFlag() {
			return true
		}
	}
	return false
}

func (t rpTok) allFlags() bool {
	for _, g := range t.alts {
		if !g.isFlag() {
			return false
		}
	}
	return len(t.alts) > 0
}

// runokPattern is one parsed pattern: a command matcher and the argument
// tokens. A pattern with a multi-word alternative in the command position
// parses to several of these.
type runokPattern struct {
	cmdAlts []rpGlob // the command name: literal, alternation, globs
	cmdWild bool     // * as the command: one or more words
	cmdVar  string   // <var:name> as the command
	args    []rpTok
}

// rpWord is one word of a pattern as lexed: its characters, with which of
// them were escaped or quoted.
type rpWord struct {
	text    []rune
	escaped []bool // a backslash made it literal
	quoted  []bool // inside quotes: grouping only, * still globs
}

func (w rpWord) String() string { return string(w.text) }

func (w rpWord) is(s string) bool {
	if string(w.text) != s {
		return false
	}
	for i := range w.text {
		if w.escaped[i] || w.quoted[i] {
			return false
		}
	}
	return true
}

// special says whether the character at i is an unescaped, unquoted c.
func (w rpWord) special(i int, c rune) bool {
	return i >= 0 && i < len(w.text) && w.text[i] == c && !w.escaped[i] && !w.quoted[i]
}

func (w rpWord) slice(i, j int) rpWord {
	return rpWord{w.text[i:j], w.escaped[i:j], w.quoted[i:j]}
}

// lexRunokPattern splits a pattern into words at unquoted whitespace;
// quotes group, a backslash escapes the next character.
func lexRunokPattern(s string) ([]rpWord, error) {
	var words []rpWord
	var cur rpWord
	in := false
	var quote rune
	runes := []rune(s)
	for i := 0; i < len(runes); i++ {
		c := runes[i]
		switch {
		case c == '\\':
			if i+1 >= len(runes) {
				return nil, errors.New("it ends with a lone backslash")
			}
			i++
			cur.text, cur.escaped, cur.quoted = append(cur.text, runes[i]), append(cur.escaped, true), append(cur.quoted, quote != 0)
			in = true
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.text, cur.escaped, cur.quoted = append(cur.text, c), append(cur.escaped, false), append(cur.quoted, true)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur)
				cur, in = rpWord{}, false
			}
		default:
			cur.text, cur.escaped, cur.quoted = append(cur.text, c), append(cur.escaped, false), append(cur.quoted, false)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("a %c quote is not closed", quote)
	}
	if in {
		words = append(words, cur)
	}
	return words, nil
}

// alternatives splits a word at its unquoted, unescaped | into globs;
// spaced says which of them have a space in them (quoted: "npx prettier").
func (w rpWord) alternatives() (globs []rpGlob, spaced []bool, err error) {
	start := 0
	for i := 0; i <= len(w.text); i++ {
		if i < len(w.text) && !w.special(i, '|') {
			continue
		}
		part := w.slice(start, i)
		start = i + 1
		if len(part.text) == 0 {
			return nil, nil, errors.New("an empty alternative (|| or a | at an end)")
		}
		var g rpGlob
		var b strings.Builder
		hasSpace := false
		for j, r := range part.text {
			if r == '*' && !part.escaped[j] {
				g.parts = append(g.parts, b.String())
				b.Reset()
				continue
			}
			hasSpace = hasSpace || r == ' ' || r == '\t'
			b.WriteRune(r)
		}
		g.parts = append(g.parts, b.String())
		globs, spaced = append(globs, g), append(spaced, hasSpace)
	}
	return globs, spaced, nil
}

// globWords splits a multi-word alternative into one glob per word.
func globWords(g rpGlob) []rpGlob {
	var out []rpGlob
	for _, w := range strings.Fields(g.String()) {
		out = append(out, rpGlob{parts: strings.Split(w, "*")})
	}
	return out
}

// rpDefs is what patterns may refer to: the definitions of the merged
// configuration.
type rpDefs interface {
	varType(name string) (string, bool)
	flagGroup(name string) (*rpFlagGroupDef, bool)
}

// rpFlagGroupDef is one definitions.flag_groups entry.
type rpFlagGroupDef struct {
	aliases []rpGlob
	value   *rpTok // nil: a flag without a value
}

// parseRunokPattern parses a rule or wrapper pattern. wrapper allows the
// wrapper placeholders (<cmd>, <opts>, <vars>).
func parseRunokPattern(s string, defs rpDefs, wrapper bool) ([]*runokPattern, error) {
	words, err := lexRunokPattern(s)
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, errors.New("the pattern is empty")
	}
	first := words[0]
	out := []*runokPattern{}
	args, err := parseRunokArgs(words[1:], defs, wrapper)
	if err != nil {
		return nil, err
	}
	switch {
	case first.is("*"):
		return []*runokPattern{{cmdWild: true, args: args}}, nil
	case len(first.text) > 2 && first.special(0, '<') && first.special(len(first.text)-1, '>'):
		name := string(first.text[1 : len(first.text)-1])
		v, ok := strings.CutPrefix(name, "var:")
		if !ok {
			return nil, fmt.Errorf("%s cannot be the command; only <var:name> can", first)
		}
		return []*runokPattern{{cmdVar: v, args: args}}, nil
	case first.special(0, '!'):
		return nil, errors.New("a negation (!) cannot be the command")
	}
	globs, spaced, err := first.alternatives()
	if err != nil {
		return nil, err
	}
	var single []rpGlob
	for i, g := range globs {
		if !spaced[i] {
			single = append(single, g)
			continue
		}
		// "npx prettier"|prettier: npx, then prettier as a positional word.
		ws := globWords(g)
		if len(ws) == 0 {
			return nil, errors.New("the command is only white space")
		}
		rest := []rpTok{}
		for _, w := range ws[1:] {
			rest = append(rest, rpTok{kind: rpLit, alts: []rpGlob{w}})
		}
		out = append(out, &runokPattern{cmdAlts: ws[:1], args: append(rest, args...)})
	}
	if len(single) > 0 {
		out = append([]*runokPattern{{cmdAlts: single, args: args}}, out...)
	}
	return out, nil
}

// parseRunokArgs parses the argument words: optional groups, negations,
// placeholders, alternations; then joins each flag with the value after
// it (flag schema inference).
func parseRunokArgs(words []rpWord, defs rpDefs, wrapper bool) ([]rpTok, error) {
	var top, group []rpTok
	inGroup := false
	add := func(t rpTok) {
		if inGroup {
			group = append(group, t)
		} else {
			top = append(top, t)
		}
	}
	for _, w := range words {
		if w.is("[") {
			add(rpTok{kind: rpLit, alts: []rpGlob{{parts: []string{"["}}}}) // the POSIX test command
			continue
		}
		opens := w.special(0, '[')
		closes := inGroup || opens
		closes = closes && len(w.text) > 0 && w.special(len(w.text)-1, ']')
		if opens {
			if inGroup {
				return nil, errors.New("optional groups cannot be nested ([[…]])")
			}
			inGroup, group = true, nil
			w = w.slice(1, len(w.text))
		}
		if closes {
			w = w.slice(0, len(w.text)-1)
		}
		if len(w.text) > 0 {
			t, err := parseRunokToken(w, defs, wrapper)
			if err != nil {
				return nil, err
			}
			if t.kind == rpVar && inGroup {
				if typ, _ := defs.varType(t.name); typ == "pattern" {
					return nil, fmt.Errorf("<var:%s> is a pattern variable and cannot be inside an optional group", t.name)
				}
			}
			if t.kind == rpFlagGroup && inGroup {
				return nil, fmt.Errorf("<flag:%s> cannot be inside an optional group", t.name)
			}
			add(t)
		}
		if closes {
			if len(group) == 0 {
				return nil, errors.New("an empty optional group []")
			}
			g, err := joinFlagValues(group, false)
			if err != nil {
				return nil, err
			}
			inGroup = false
			top = append(top, rpTok{kind: rpOptional, group: g})
		}
	}
	if inGroup {
		return nil, errors.New("an optional group [ is not closed with ]")
	}
	return joinFlagValues(top, true)
}

// parseRunokToken reads one argument word.
func parseRunokToken(w rpWord, defs rpDefs, wrapper bool) (rpTok, error) {
	switch {
	case w.is("*"):
		return rpTok{kind: rpWild}, nil
	case w.is("?"):
		return rpTok{kind: rpOptValue}, nil
	case len(w.text) > 2 && w.special(0, '<') && w.special(len(w.text)-1, '>'):
		return parsePlaceholder(string(w.text[1:len(w.text)-1]), defs, wrapper)
	case w.special(0, '!'):
		globs, _, err := w.slice(1, len(w.text)).alternatives()
		if err != nil {
			return rpTok{}, err
		}
		return rpTok{kind: rpNeg, alts: globs}, nil
	}
	globs, spaced, err := w.alternatives()
	if err != nil {
		return rpTok{}, err
	}
	if len(globs) > 1 {
		for _, sp := range spaced {
			if sp {
				return rpTok{}, errors.New("multi-word alternation is only for the command (the first word)")
			}
		}
	}
	// A quoted "hello world" alone is one word with a space in it.
	return rpTok{kind: rpLit, alts: globs}, nil
}

func parsePlaceholder(name string, defs rpDefs, wrapper bool) (rpTok, error) {
	kind, arg, _ := strings.Cut(name, ":")
	switch {
	case name == "cmd":
		return rpTok{kind: rpCmd}, nil
	case name == "opts" || name == "vars":
		if !wrapper {
			return rpTok{}, fmt.Errorf("<%s> belongs in wrapper definitions (definitions.wrappers), not in rules", name)
		}
		if name == "opts" {
			return rpTok{kind: rpOpts}, nil
		}
		return rpTok{kind: rpVars}, nil
	case kind == "path" && arg != "":
		return rpTok{kind: rpPath, name: arg}, nil
	case kind == "var" && arg != "":
		return rpTok{kind: rpVar, name: arg}, nil
	case kind == "flag" && arg != "":
		if _, ok := defs.flagGroup(arg); !ok {
			return rpTok{}, fmt.Errorf("<flag:%s> names no definitions.flag_groups entry", arg)
		}
		return rpTok{kind: rpFlagGroup, name: arg}, nil
	}
	return rpTok{kind: rpOne, name: name}, nil
}

// joinFlagValues makes each flag that a value follows a flag with that
// value: -X POST, --abbrev ?, -n *. A * that ends the whole pattern stays
// a wildcard of its own (git push -f|--force *); inside an optional group
// it is the flag's value ([-n *]). A ? anywhere else is an error.
func joinFlagValues(toks []rpTok, topLevel bool) ([]rpTok, error) {
	var out []rpTok
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == rpOptValue {
			return nil, errors.New("? can only be a flag's value (--flag ?); write \\? for a literal ?")
		}
		if t.kind != rpLit || !t.allFlags() || i+1 >= len(toks) {
			out = append(out, t)
			continue
		}
		v := toks[i+1]
		takes := false
		switch v.kind {
		case rpLit:
			takes = !v.anyFlag() && !(len(v.alts) == 1 && v.alts[0].String() == "--")
		case rpNeg:
			takes = !v.allFlags()
		case rpWild:
			takes = !(topLevel && i+2 == len(toks))
		case rpOptValue, rpVar, rpPath, rpOne:
			takes = true
		}
		if !takes {
			out = append(out, t)
			continue
		}
		val := v
		out = append(out, rpTok{kind: rpFlagValue, alts: t.alts, value: &val})
		i++
	}
	return out, nil
}

// parseFlagGroupDef reads a definitions.flag_groups value: aliases, then
// an optional value pattern.
func parseFlagGroupDef(s string) (*rpFlagGroupDef, error) {
	words, err := lexRunokPattern(s)
	if err != nil {
		return nil, err
	}
	if len(words) == 0 || len(words) > 2 {
		return nil, errors.New("want flag aliases and at most one value pattern, such as '-f|--field *'")
	}
	globs, spaced, err := words[0].alternatives()
	if err != nil {
		return nil, err
	}
	for _, sp := range spaced {
		if sp {
			return nil, errors.New("the aliases must be single words")
		}
	}
	for _, g := range globs {
		if s, _ := g.plain(); !g.isFlag() || s == "--" {
			return nil, fmt.Errorf("alias %q is not a flag (a flag starts with -)", g.String())
		}
	}
	def := &rpFlagGroupDef{aliases: globs}
	if len(words) == 2 {
		v, err := parseRunokToken(words[1], noDefs{}, false)
		if err != nil {
			return nil, err
		}
		switch v.kind {
		case rpLit, rpWild, rpNeg, rpOptValue:
		default:
			return nil, errors.New("the value pattern must be *, ?, a literal, an alternation or a negation")
		}
		def.value = &v
	}
	return def, nil
}

// noDefs are the definitions a flag group's value pattern may use: none.
type noDefs struct{}

func (noDefs) varType(string) (string, bool)            { return "", false }
func (noDefs) flagGroup(string) (*rpFlagGroupDef, bool) { return nil, false }

// rpMaxSteps bounds one match, as runok's does: pathological patterns
// (many wildcards) stop there.
const rpMaxSteps = 10000

// rpCmdTok is one word of the command being matched; afterDD marks the
// words after a bare --, which are never flags.
type rpCmdTok struct {
	s       string
	afterDD bool
}

func (t rpCmdTok) isFlag() bool {
	return !t.afterDD && len(t.s) > 1 && t.s[0] == '-' && t.s != "--"
}

// rpLookup is what matching needs of the configuration.
type rpLookup interface {
	rpDefs
	valueFlag(flag string) bool // a flag some pattern gives a value
	pathsOf(name string) ([]string, bool)
	varValuesOf(name string) ([]runokVarValue, bool)
}

// runokVarValue is one value of a definitions.vars entry.
type runokVarValue struct {
	typ   string   // literal or path
	words []string // a literal value may be several words
}

// rpMatcher matches patterns against one command.
type rpMatcher struct {
	defs rpLookup
	cwd  string // where relative paths in the command start
	// broad: the rule is a deny or an ask, so where runok's documentation
	// leaves the choice open, the match is the wider one (every occurrence
	// of a flag is tried, flags after -- count).
	broad bool
	// sequential: a wrapper definition, read left to right (the wrapper's
	// own flags come before the command it runs).
	sequential bool
	steps      int
	exceeded   bool
}

// match reports whether the pattern matches words (the command name
// first); yield, when not nil, gets each way the <cmd> placeholders
// capture and returns true to stop.
func (m *rpMatcher) match(p *runokPattern, words []string, yield func(caps []string) bool) bool {
	if len(words) == 0 {
		return false
	}
	try := func(n int) bool {
		toks := make([]rpCmdTok, 0, len(words)-n)
		dd := false
		for _, w := range words[n:] {
			toks = append(toks, rpCmdTok{s: w, afterDD: dd})
			dd = dd || w == "--"
		}
		found := false
		collect := func(caps []string) bool {
			found = true
			return yield == nil || yield(caps)
		}
		m.args(p.args, toks, nil, collect)
		if i := slices.IndexFunc(toks, func(t rpCmdTok) bool { return t.s == "--" }); !found && m.broad && i >= 0 {
			// A deny or an ask rule also reads the words as if the --
			// were not there: rm -rf -- / removes what rm -rf / does.
			plain := append(slices.Clone(toks[:i]), toks[i+1:]...)
			for j := range plain {
				plain[j].afterDD = false
			}
			m.args(p.args, plain, nil, collect)
		}
		return found
	}
	switch {
	case p.cmdWild:
		if len(p.args) == 0 {
			return len(words) == 1 && try(1)
		}
		found := false
		for n := 1; n <= len(words); n++ {
			if try(n) {
				found = true
				if yield == nil {
					return true
				}
			}
		}
		return found
	case p.cmdVar != "":
		vals, ok := m.defs.varValuesOf(p.cmdVar)
		if !ok {
			return false
		}
		found := false
		for _, v := range vals {
			if n := m.varPrefix(v, words); n > 0 && try(n) {
				found = true
				if yield == nil {
					return true
				}
			}
		}
		return found
	}
	return rpAnyMatch(p.cmdAlts, words[0]) && try(1)
}

// varPrefix is how many of words the value matches at their start (0:
// none).
func (m *rpMatcher) varPrefix(v runokVarValue, words []string) int {
	if len(words) < len(v.words) {
		return 0
	}
	for i, w := range v.words {
		if v.typ == "path" {
			if !samePath(w, words[i], m.cwd) {
				return 0
			}
		} else if w != words[i] {
			return 0
		}
	}
	return len(v.words)
}

// samePath compares a defined path with a command's word: both
// canonicalised (symlinks resolved) when they exist, else normalised.
func samePath(def, word, cwd string) bool {
	canon := func(p string) string {
		if !filepath.IsAbs(p) {
			p = cwd + string(filepath.Separator) + p
		}
		// Links first, as the kernel reads the path: link/.. is the
		// parent of where link leads, not the directory link is in.
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	return canon(def) == canon(word)
}

func without(toks []rpCmdTok, i, n int) []rpCmdTok {
	out := make([]rpCmdTok, 0, len(toks)-n)
	out = append(out, toks[:i]...)
	return append(out, toks[i+n:]...)
}

func replaced(toks []rpCmdTok, i int, with rpCmdTok) []rpCmdTok {
	out := append([]rpCmdTok(nil), toks...)
	out[i] = with
	return out
}

// positionals are the indexes the first positional word may be at: the
// first word that is not a flag nor the value of a flag some pattern
// gives a value. Which flags take a value is learnt from the rules, not
// from the program, so for a deny or an ask rule any flag may take the
// word after it or not, and each such word may be the positional (git -C
// . push, git -p push where another rule's mkdir -p build gave -p a
// value).
func (m *rpMatcher) positionals(toks []rpCmdTok) []int {
	if m.sequential {
		if len(toks) == 0 {
			return nil
		}
		return []int{0}
	}
	var out []int
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case !t.isFlag():
			return append(out, i)
		case strings.Contains(t.s, "=") || i+1 >= len(toks):
		case m.broad:
			if !toks[i+1].isFlag() {
				i++
				out = append(out, i)
			}
		case m.defs.valueFlag(t.s):
			i++
		}
	}
	return out
}

// flagSpots are the indexes a flag pattern may be found at.
func (m *rpMatcher) flagSpots(toks []rpCmdTok) []int {
	var out []int
	for i, t := range toks {
		if m.sequential && i > 0 {
			break
		}
		if t.isFlag() || m.broad && len(t.s) > 1 && t.s[0] == '-' && t.s != "--" {
			out = append(out, i)
		}
	}
	return out
}

// splitJoined splits a standard -X=v or --flag=v word.
func splitJoined(s string) (flag, val string, ok bool) {
	eq := strings.IndexByte(s, '=')
	if eq < 0 {
		return "", "", false
	}
	flag = s[:eq]
	if (len(flag) == 2 && flag[0] == '-' && flag[1] != '-') || (len(flag) > 2 && strings.HasPrefix(flag, "--")) {
		return flag, s[eq+1:], true
	}
	return "", "", false
}

// splitFused splits a fused short flag -n3 into -n and 3 when the flag is
// one of aliases.
func splitFused(s string, aliases []rpGlob) (flag, val string, ok bool) {
	if len(s) <= 2 || s[0] != '-' || s[1] == '-' || s[1] >= 0x80 {
		return "", "", false
	}
	if !rpAnyMatch(aliases, s[:2]) {
		return "", "", false
	}
	return s[:2], s[2:], true
}

// flagPresent says whether any of the flags in aliases is among the
// words, alone, = joined or (for a flag given a value) fused.
func (m *rpMatcher) flagPresent(aliases []rpGlob, toks []rpCmdTok, fused bool) bool {
	for i, t := range toks {
		if m.sequential && i > 0 {
			break
		}
		if t.afterDD {
			continue
		}
		if rpAnyMatch(aliases, t.s) {
			return true
		}
		if f, _, ok := splitJoined(t.s); ok && rpAnyMatch(aliases, f) {
			return true
		}
		if _, _, ok := splitFused(t.s, aliases); ok && fused {
			return true
		}
	}
	return false
}

// args matches the argument tokens pat against toks, calling k with the
// captures of each match; k returns true to stop. It returns true when k
// did.
func (m *rpMatcher) args(pat []rpTok, toks []rpCmdTok, caps []string, k func([]string) bool) bool {
	if m.steps++; m.steps > rpMaxSteps {
		m.exceeded = true
		return true
	}
	if len(pat) == 0 {
		if len(toks) == 0 {
			return k(caps)
		}
		return false
	}
	t, rest := pat[0], pat[1:]
	switch t.kind {
	case rpWild:
		for n := len(toks); n >= 0; n-- {
			if m.args(rest, toks[n:], caps, k) {
				return true
			}
		}
		return false
	case rpLit:
		if t.anyFlag() {
			for _, i := range m.flagSpots(toks) {
				s := toks[i].s
				if rpAnyMatch(t.alts, s) {
					if m.args(rest, without(toks, i, 1), caps, k) {
						return true
					}
				} else if f, v, ok := splitJoined(s); ok && rpAnyMatch(t.alts, f) {
					if m.args(rest, replaced(toks, i, rpCmdTok{s: v}), caps, k) {
						return true
					}
				} else {
					continue
				}
				if !m.broad {
					return false // runok takes the first occurrence
				}
			}
			return false
		}
		for _, i := range m.positionals(toks) {
			if rpAnyMatch(t.alts, toks[i].s) && m.args(rest, without(toks, i, 1), caps, k) {
				return true
			}
		}
		return false
	case rpNeg:
		if t.allFlags() {
			// Asserts the flag is absent; consumes nothing.
			for _, tok := range toks {
				if rpAnyMatch(t.alts, tok.s) {
					return false
				}
				if f, _, ok := splitJoined(tok.s); ok && rpAnyMatch(t.alts, f) {
					return false
				}
			}
			return m.args(rest, toks, caps, k)
		}
		for _, i := range m.positionals(toks) {
			if !rpAnyMatch(t.alts, toks[i].s) && m.args(rest, without(toks, i, 1), caps, k) {
				return true
			}
		}
		return false
	case rpFlagValue:
		return m.flagValue(t, rest, toks, caps, k)
	case rpOptional:
		group := append(append([]rpTok(nil), t.group...), rest...)
		if m.args(group, toks, caps, k) {
			return true
		}
		if m.exceeded {
			return true
		}
		for _, g := range t.group {
			if (g.kind == rpLit && g.anyFlag()) || g.kind == rpFlagValue {
				if m.flagPresent(g.alts, toks, g.kind == rpFlagValue) {
					return false
				}
			}
		}
		return m.args(rest, toks, caps, k)
	case rpCmd:
		if len(toks) == 0 || strings.HasPrefix(toks[0].s, "-") {
			return false
		}
		for n := 1; n <= len(toks); n++ {
			words := make([]string, n)
			for i := range words {
				words[i] = toks[i].s
			}
			if m.args(rest, toks[n:], append(append([]string(nil), caps...), commandLineOf(words)), k) {
				return true
			}
		}
		return false
	case rpOpts:
		n := 0
		for n < len(toks) && strings.HasPrefix(toks[n].s, "-") && toks[n].s != "--" {
			s := toks[n].s
			n++
			if len(s) == 2 && isASCIILetter(s[1]) && n < len(toks) && !strings.HasPrefix(toks[n].s, "-") {
				n++ // -u root: the short option's argument
			}
		}
		return m.args(rest, toks[n:], caps, k)
	case rpVars:
		n := 0
		for n < len(toks) && strings.Contains(toks[n].s, "=") {
			n++
		}
		return m.args(rest, toks[n:], caps, k)
	case rpPath, rpVar, rpOne:
		for _, i := range m.positionals(toks) {
			if n := m.placeholderWords(t, toks[i:]); n > 0 && m.args(rest, without(toks, i, n), caps, k) {
				return true
			}
		}
		return false
	case rpFlagGroup:
		return m.flagGroup(t, rest, toks, caps, k)
	}
	return false
}

// placeholderWords is how many of toks, from the first, a <path:…>,
// <var:…> or <name> matches (0: none).
func (m *rpMatcher) placeholderWords(t rpTok, toks []rpCmdTok) int {
	switch t.kind {
	case rpOne:
		return 1
	case rpPath:
		paths, ok := m.defs.pathsOf(t.name)
		if !ok {
			return 0
		}
		arg := toks[0].s
		if !filepath.IsAbs(arg) {
			arg = filepath.Join(m.cwd, arg)
		}
		for _, p := range paths {
			// A deny or an ask also holds for the file the word leads to
			// through links.
			if filepath.Clean(p) == filepath.Clean(arg) || m.broad && samePath(p, toks[0].s, m.cwd) {
				return 1
			}
		}
		return 0
	case rpVar:
		vals, ok := m.defs.varValuesOf(t.name)
		if !ok {
			return 0
		}
		words := make([]string, len(toks))
		for i, tok := range toks {
			words[i] = tok.s
		}
		for _, v := range vals {
			if n := m.varPrefix(v, words); n > 0 {
				return n
			}
		}
	}
	return 0
}

// valueMatches says whether a flag's value word matches the value token.
func (m *rpMatcher) valueMatches(v *rpTok, s string) bool {
	switch v.kind {
	case rpWild, rpOptValue:
		return true
	case rpLit:
		return rpAnyMatch(v.alts, s)
	case rpNeg:
		return !rpAnyMatch(v.alts, s)
	case rpPath, rpVar, rpOne:
		return m.placeholderWords(*v, []rpCmdTok{{s: s}}) == 1
	}
	return false
}

// flagValue matches a flag and its value anywhere in the words: -X POST,
// -X=POST, --request=POST, -XPOST. With ? the value is optional and never
// the next word.
func (m *rpMatcher) flagValue(t rpTok, rest []rpTok, toks []rpCmdTok, caps []string, k func([]string) bool) bool {
	opt := t.value.kind == rpOptValue
	for _, i := range m.flagSpots(toks) {
		s := toks[i].s
		var next []rpCmdTok
		ok := false
		switch {
		case rpAnyMatch(t.alts, s) && opt:
			next, ok = without(toks, i, 1), true
		case rpAnyMatch(t.alts, s):
			if i+1 < len(toks) && m.valueMatches(t.value, toks[i+1].s) {
				next, ok = without(toks, i, 2), true
			}
		default:
			f, v, joined := splitJoined(s)
			if !joined || !rpAnyMatch(t.alts, f) {
				f, v, joined = splitFused(s, t.alts)
			}
			if !joined {
				continue // not this flag
			}
			if m.valueMatches(t.value, v) {
				next, ok = without(toks, i, 1), true
			}
		}
		if ok && m.args(rest, next, caps, k) {
			return true
		}
		if !m.broad {
			return false // runok takes the first occurrence
		}
	}
	if m.broad && t.value.kind == rpLit && !m.sequential {
		// A deny or ask rule also matches with the flag read as one that
		// takes no value: deny 'rm -r -f /' covers rm -f -r /.
		asWords := append([]rpTok{{kind: rpLit, alts: t.alts}, *t.value}, rest...)
		return m.args(asWords, toks, caps, k)
	}
	return false
}

// flagGroup matches <flag:name>: at least one of the group's flags, each
// occurrence with a value the definition accepts; all are consumed.
func (m *rpMatcher) flagGroup(t rpTok, rest []rpTok, toks []rpCmdTok, caps []string, k func([]string) bool) bool {
	def, ok := m.defs.flagGroup(t.name)
	if !ok {
		return false
	}
	// An allow rule needs every occurrence of the flag to match; a deny or
	// an ask rule one (curl -X GET -X POST posts: the last one counts).
	var keep []rpCmdTok
	found, matched := 0, 0
	occurrence := func(ok bool) bool {
		found++
		if ok {
			matched++
		}
		return ok || m.broad
	}
	for i := 0; i < len(toks); i++ {
		tok := toks[i]
		if tok.afterDD {
			keep = append(keep, tok)
			continue
		}
		s := tok.s
		switch {
		case rpAnyMatch(def.aliases, s):
			if def.value == nil || def.value.kind == rpOptValue {
				occurrence(true)
				continue
			}
			if !occurrence(i+1 < len(toks) && m.valueMatches(def.value, toks[i+1].s)) {
				return false
			}
			i++
			continue
		default:
			f, v, joined := splitJoined(s)
			if !joined || !rpAnyMatch(def.aliases, f) {
				f, v, joined = splitFused(s, def.aliases)
				joined = joined && def.value != nil
			}
			if joined {
				if !occurrence(def.value != nil && m.valueMatches(def.value, v)) {
					return false
				}
				continue
			}
		}
		keep = append(keep, tok)
	}
	if matched == 0 {
		return false
	}
	return m.args(rest, keep, caps, k)
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
