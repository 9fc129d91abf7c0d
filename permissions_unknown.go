package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// Words known only at run time (issue 34 §1). A rule judges the argv bash
// will run, not the text the model wrote: in git pu$(echo)sh, git ${x:-push}
// or echo push | xargs git the words a rule sees are not the words that
// run. Where the splitter marks part of a word as unknown (WordShape), a
// rule source decides for every value it could take: a deny or ask rule
// that some value could match makes the command an ask (a deny when the
// words as written are denied), and an allow stands only when it holds
// for every value.
//
// Claude Code's Bash rules match text, so that is exact: the command's
// text becomes a pattern whose unknown parts match anything
// (patternsMeet), and each rule's text a pattern too; a rule some value
// could match is one whose pattern meets the command's. An allow holds for every value when
// it matches the text with each unknown part replaced by a byte no rule
// holds (unknownByte): only a * of the rule can have matched that byte,
// and a * matches any other value as well.
//
// runok's rules match words, flags in any order, with placeholders and
// negations; rather than a second matcher, zot runs the real one over the
// readings that matter (runokReadings): each unknown word as each word a
// rule names (and each instance of a rule's glob) that the word's known
// parts allow, as a word and as an option no rule names, as nothing where
// it may vanish, and a word that may split as sequences of those. A rule
// cannot tell apart two values it names neither of, so those readings
// stand for all values, up to the sequence length (runokMaxSplit): a word
// that may split where a deny or ask rule names more words than that is an
// ask. Past runokMaxReadings readings the command is an ask.

const (
	// unknownByte stands for an unknown part where an allow must hold
	// whatever the part is: NUL, which no argument can hold.
	unknownByte = "\x00"
	// runokMaxSplit is the most words a reading puts where one word may
	// split into several.
	runokMaxSplit = 3
	// runokMaxReadings bounds the readings of one command.
	runokMaxReadings = 2000
	// maxVanishing bounds the words that may vanish whose readings are
	// tried each way (2^n texts); past it no allow holds.
	maxVanishing = 4
	// maxMeetStates bounds the pairs of positions patternsMeet walks (a
	// 1 MiB line against a rule): past it, it answers that the patterns
	// meet, which asks.
	maxMeetStates = 1 << 20
)

// A text pattern is a run of tokens: a byte, any run of bytes, a blank
// (one byte unicode.IsSpace says is one, as Claude Code's prefix rules
// test) or an optional space (where a word that may vanish was).
type gtok struct {
	kind byte
	b    byte
}

const (
	gByte byte = iota
	gAny
	gBlank
	gOptSpace
)

func textToks(s string) []gtok {
	out := make([]gtok, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = gtok{kind: gByte, b: s[i]}
	}
	return out
}

func isBlankByte(b byte) bool { return unicode.IsSpace(rune(b)) }

// patternsMeet finds a text both patterns match, the shortest; ok is false when
// there is none. It walks the pairs of positions in the two patterns, as
// the product of two automata; past maxMeetStates it says they meet,
// with no text.
func patternsMeet(a, b []gtok) (text string, ok bool) {
	if (len(a)+1)*(len(b)+1) > maxMeetStates {
		return "", true
	}
	type state struct{ i, j int }
	type step struct {
		from state
		b    int // the byte emitted, -1 for none
	}
	width := len(b) + 1
	seen := make([]bool, (len(a)+1)*width)
	prev := make([]step, len(seen))
	queue := []state{{0, 0}}
	seen[0] = true
	// asChar is what a token matches as one byte: the byte, or -2 for a
	// blank; -1 when it is not a one-byte token.
	asChar := func(t gtok) int {
		switch t.kind {
		case gByte:
			return int(t.b)
		case gBlank:
			return -2
		case gOptSpace:
			return ' '
		}
		return -1
	}
	both := func(x, y int) int {
		switch {
		case x >= 0 && y >= 0:
			if x == y {
				return x
			}
		case x >= 0: // y a blank
			if isBlankByte(byte(x)) {
				return x
			}
		case y >= 0:
			if isBlankByte(byte(y)) {
				return y
			}
		default:
			return ' '
		}
		return -1
	}
	single := func(x int) int { // a byte the token matches
		if x == -2 {
			return ' '
		}
		return x
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s.i == len(a) && s.j == len(b) {
			var out []byte
			for c := s; c != (state{0, 0}); c = prev[c.i*width+c.j].from {
				if e := prev[c.i*width+c.j].b; e >= 0 {
					out = append(out, byte(e))
				}
			}
			slices.Reverse(out)
			return string(out), true
		}
		visit := func(n state, emit int) {
			if k := n.i*width + n.j; !seen[k] {
				seen[k], prev[k] = true, step{from: s, b: emit}
				queue = append(queue, n)
			}
		}
		var ta, tb gtok
		if s.i < len(a) {
			ta = a[s.i]
			if ta.kind == gAny || ta.kind == gOptSpace {
				visit(state{s.i + 1, s.j}, -1)
			}
		}
		if s.j < len(b) {
			tb = b[s.j]
			if tb.kind == gAny || tb.kind == gOptSpace {
				visit(state{s.i, s.j + 1}, -1)
			}
		}
		if s.i == len(a) || s.j == len(b) {
			continue
		}
		ca, cb := asChar(ta), asChar(tb)
		switch {
		case ta.kind == gAny && cb != -1:
			visit(state{s.i, s.j + 1}, single(cb))
		case tb.kind == gAny && ca != -1:
			visit(state{s.i + 1, s.j}, single(ca))
		case ca != -1 && cb != -1:
			if c := both(ca, cb); c >= 0 {
				visit(state{s.i + 1, s.j + 1}, c)
			}
		}
	}
	return "", false
}

// claudeSpecPatterns are the texts a Bash rule's specifier matches, as
// patterns, exactly as claudeBashMatch reads it.
func claudeSpecPatterns(spec string) [][]gtok {
	if prefix, ok := strings.CutSuffix(spec, ":*"); ok && !strings.Contains(prefix, "*") {
		if prefix == "" {
			return [][]gtok{{{kind: gAny}}}
		}
		p := textToks(prefix)
		out := [][]gtok{p, append(slices.Clone(p), gtok{kind: gBlank}, gtok{kind: gAny})}
		if last := rune(prefix[len(prefix)-1]); !(unicode.IsLetter(last) || unicode.IsDigit(last) || last == '_') {
			out = append(out, append(slices.Clone(p), gtok{kind: gAny}))
		}
		return out
	}
	if !strings.Contains(strings.ReplaceAll(spec, `\*`, ""), "*") {
		return [][]gtok{textToks(strings.ReplaceAll(spec, `\*`, "*"))}
	}
	var out [][]gtok
	if base, ok := strings.CutSuffix(spec, " *"); ok {
		out = append(out, globToks(base))
	}
	return append(out, globToks(spec))
}

// globToks reads a pattern where * is any run of bytes and \* a *.
func globToks(pattern string) []gtok {
	var out []gtok
	for i := 0; i < len(pattern); i++ {
		switch {
		case pattern[i] == '\\' && i+1 < len(pattern) && pattern[i+1] == '*':
			out = append(out, gtok{kind: gByte, b: '*'})
			i++
		case pattern[i] == '*':
			out = append(out, gtok{kind: gAny})
		default:
			out = append(out, gtok{kind: gByte, b: pattern[i]})
		}
	}
	return out
}

// rpGlobToks is a runok glob as a pattern.
func rpGlobToks(g rpGlob) []gtok {
	var out []gtok
	for i, p := range g.parts {
		if i > 0 {
			out = append(out, gtok{kind: gAny})
		}
		out = append(out, textToks(p)...)
	}
	return out
}

// wordToks is a word as a pattern: its known bytes, and any run of bytes
// for each hole.
func wordToks(w string, sh WordShape) []gtok {
	var out []gtok
	at := 0
	for _, h := range sh.Holes {
		out = append(out, textToks(w[at:h.Start])...)
		out = append(out, gtok{kind: gAny})
		at = h.End
	}
	return append(out, textToks(w[at:])...)
}

// allHoles says the word is nothing but unknown parts.
func allHoles(w string, sh WordShape) bool {
	at := 0
	for _, h := range sh.Holes {
		if h.Start > at {
			return false
		}
		at = h.End
	}
	return at >= len(w)
}

// shapedCommand is a command with words known only at run time, as the rules
// judge it.
type shapedCommand struct {
	name   string // the command's base name (git for /usr/bin/git)
	words  []string
	shapes []WordShape // one per word; nil: every word known
	open   bool        // more words at run time
}

func (c shapedCommand) unknown() bool { return c.shapes != nil || c.open }

func (c shapedCommand) shape(i int) WordShape {
	if c.shapes == nil {
		return WordShape{}
	}
	return c.shapes[i]
}

// vanishing are the words that may become no word at all: those with
// known parts (*.txt with nullglob set) when partial, the others (an
// unquoted $x) when not, whose pattern is anything.
func (c shapedCommand) vanishing(partial bool) []int {
	var out []int
	for i, w := range c.words {
		if sh := c.shape(i); i > 0 && sh.Vanishes(w) && allHoles(w, sh) != partial {
			out = append(out, i)
		}
	}
	return out
}

// texts are the command's texts as Claude Code's rules match them, each
// unknown part a pattern (templates: what some value could be) or
// unknownByte (sentinels: where an allow must hold). A word that may
// vanish is tried both ways; past maxVanishing such words, sentinels is
// empty: no allow holds.
func (c shapedCommand) templates() [][]gtok {
	vanish := c.vanishing(true)
	loose := len(vanish) > maxVanishing // too many to try each way
	if loose {
		vanish = nil
	}
	var out [][]gtok
	for mask := 0; mask < 1<<len(vanish); mask++ {
		var t []gtok
		for i, w := range c.words {
			if k := slices.Index(vanish, i); k >= 0 && mask&(1<<k) != 0 {
				continue
			}
			sh := c.shape(i)
			if i == 0 {
				t = append(t, wordToks(w, sh)...)
				continue
			}
			switch {
			case sh.Vanishes(w) && allHoles(w, sh):
				t = append(t, gtok{kind: gOptSpace})
				t = append(t, wordToks(w, sh)...)
			case loose && sh.Vanishes(w):
				t = append(t, gtok{kind: gOptSpace}, gtok{kind: gAny}) // anything, or nothing
			default:
				t = append(t, gtok{kind: gByte, b: ' '})
				t = append(t, wordToks(w, sh)...)
			}
		}
		if c.open {
			t = append(t, gtok{kind: gOptSpace}, gtok{kind: gAny})
		}
		out = append(out, t)
	}
	return out
}

func (c shapedCommand) sentinels() []string {
	vanish := append(c.vanishing(true), c.vanishing(false)...)
	tails := []string{""}
	if c.open {
		tails = append(tails, " "+unknownByte)
	}
	if len(vanish)+len(tails)-1 > maxVanishing {
		return nil
	}
	var out []string
	for mask := 0; mask < 1<<len(vanish); mask++ {
		var parts []string
		for i, w := range c.words {
			if k := slices.Index(vanish, i); k >= 0 && mask&(1<<k) != 0 {
				continue
			}
			parts = append(parts, filledWord(w, c.shape(i), unknownByte))
		}
		for _, tail := range tails {
			out = append(out, strings.Join(parts, " ")+tail)
		}
	}
	return out
}

// filledWord is the word with each unknown part replaced by v.
func filledWord(w string, sh WordShape, v string) string {
	if sh.Known() {
		return w
	}
	var b strings.Builder
	at := 0
	for _, h := range sh.Holes {
		b.WriteString(w[at:h.Start])
		b.WriteString(v)
		at = h.End
	}
	b.WriteString(w[at:])
	return b.String()
}

// unknownWhat names the unknown parts for a message: "push${NOPE}",
// "the words xargs adds".
func (c shapedCommand) unknownWhat() string {
	var parts []string
	for i, w := range c.words {
		if !c.shape(i).Known() {
			parts = append(parts, "`"+w+"`")
		}
	}
	if c.open {
		parts = append(parts, "the words added at run time")
	}
	what := strings.Join(parts, ", ")
	if len(parts) == 1 {
		return what + " is known only at run time"
	}
	return what + " are known only at run time"
}

// claudeCould says whether some value of the command's unknown parts
// makes rule r match, with one such text.
func claudeCould(r *claudeRule, templates [][]gtok) (string, bool) {
	if r.tool != "Bash" || r.broken {
		return "", false
	}
	if !r.hasSpec || r.spec == "*" || r.spec == "" {
		return "", false // it matches the command whatever it is: decided on the text
	}
	for _, p := range claudeSpecPatterns(r.spec) {
		for _, t := range templates {
			if text, ok := patternsMeet(p, t); ok {
				return text, true
			}
		}
	}
	return "", false
}

// runokReadings are the argvs of a command with unknown words that the
// configurations' rules can tell apart (see the top of this file); complete
// is false when a word that may split could need more words than a reading
// gives it, or there are more than runokMaxReadings.
func runokReadings(c shapedCommand, cfgs []*runokConfig, cwd string, yield func(argv []string) bool) (complete bool) {
	vocab, longest := runokVocabulary(cfgs, c.name, cwd)
	// A word that may split needs as many words as a rule names after the
	// command's name to make the rule match.
	words := min(max(longest, 1), runokMaxSplit)
	complete = true
	var cands [][][]string
	total := 1
	for i, w := range c.words {
		sh := c.shape(i)
		var cs [][]string
		switch {
		case sh.Known():
			cs = [][]string{{w}}
		case sh.Split():
			cs = splitCandidates(w, sh, vocab, words)
			if longest > runokMaxSplit {
				complete = false
			}
		default:
			for _, s := range wordCandidates(wordToks(w, sh), vocab) {
				cs = append(cs, []string{s})
			}
		}
		cands = append(cands, cs)
		total *= len(cs)
		if total > runokMaxReadings {
			return false
		}
	}
	if c.open {
		cs := splitCandidates("", WordShape{Holes: []WordHole{{Split: true}}}, vocab, words)
		if longest > runokMaxSplit {
			complete = false
		}
		if total *= len(cs); total > runokMaxReadings {
			return false
		}
		cands = append(cands, cs)
	}
	argv := make([]string, 0, len(c.words)+runokMaxSplit)
	var walk func(i int) bool
	walk = func(i int) bool {
		if i == len(cands) {
			return yield(argv)
		}
		n := len(argv)
		for _, seq := range cands[i] {
			argv = append(argv[:n], seq...)
			if walk(i + 1) {
				return true
			}
		}
		argv = argv[:n]
		return false
	}
	walk(0)
	return complete
}

// wordCandidates are the values of one word (as a pattern) the rules can
// tell apart: each meeting with a word of the vocabulary, then the word
// with its unknown parts empty, as a word no rule names, and as an option
// no rule names.
func wordCandidates(t []gtok, vocab [][]gtok) []string {
	var out []string
	add := func(s string, ok bool) {
		if ok && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, v := range vocab {
		add(patternsMeet(t, v))
	}
	var empty, neutral strings.Builder
	for _, tk := range t {
		if tk.kind == gAny {
			neutral.WriteString(unknownByte)
			continue
		}
		empty.WriteByte(tk.b)
		neutral.WriteByte(tk.b)
	}
	add(empty.String(), empty.Len() > 0)
	add(neutral.String(), true)
	add(patternsMeet(t, textToks("-"+unknownByte)))
	add(patternsMeet(t, textToks("--")))
	add(patternsMeet(t, []gtok{{kind: gAny}, {kind: gByte, b: '='}, {kind: gAny}}))
	return out
}

// splitCandidates are the sequences of words a word that may split (or,
// as a glob, match several file names) could become: none when it is all
// unknown, one word, or up to n words, the first carrying the word's known
// start and the last its known end.
func splitCandidates(w string, sh WordShape, vocab [][]gtok, n int) [][]string {
	t := wordToks(w, sh)
	var out [][]string
	if sh.Vanishes(w) {
		out = append(out, nil)
	}
	one := wordCandidates(t, vocab)
	for _, s := range one {
		out = append(out, []string{s})
	}
	if !slices.ContainsFunc(sh.Holes, func(h WordHole) bool { return h.Split }) {
		// A glob: each word is one the pattern matches.
		return appendSequences(out, one, one, one, n)
	}
	// The known start and end of the word stay with the first and the
	// last word; what lies between is any word.
	head, tail := t, t
	if i := slices.IndexFunc(t, func(k gtok) bool { return k.kind == gAny }); i >= 0 {
		head = append(slices.Clone(t[:i]), gtok{kind: gAny})
	}
	for i := len(t) - 1; i >= 0; i-- {
		if t[i].kind == gAny {
			tail = append([]gtok{{kind: gAny}}, t[i+1:]...)
			break
		}
	}
	return appendSequences(out, wordCandidates(head, vocab), wordCandidates([]gtok{{kind: gAny}}, vocab), wordCandidates(tail, vocab), n)
}

// appendSequences adds the sequences of 2 to most words: the first from
// first, the last from last, the others from mid.
func appendSequences(out [][]string, first, mid, last []string, most int) [][]string {
	for n := 2; n <= most; n++ {
		seq := make([]string, n)
		var fill func(k int)
		fill = func(k int) {
			if k == n {
				out = append(out, slices.Clone(seq))
				return
			}
			from := mid
			switch k {
			case 0:
				from = first
			case n - 1:
				from = last
			}
			for _, s := range from {
				seq[k] = s
				fill(k + 1)
				if len(out) > runokMaxReadings {
					return
				}
			}
		}
		fill(0)
	}
	return out
}

// runokVocabulary is every word the patterns that could apply to a command
// named name hold, as patterns (their globs, flag=value joins, defined
// paths and values — these also as written from cwd, where the command
// runs: sha* in /etc is /etc/shadow), and the most words a deny or ask
// rule among them names after the command's name. A wrapper that could
// apply makes every rule one that could, after the wrapper's own words.
func runokVocabulary(cfgs []*runokConfig, name, cwd string) (vocab [][]gtok, longest int) {
	applies := func(p *runokPattern) bool {
		return p.cmdWild || p.cmdVar != "" || rpAnyMatch(p.cmdAlts, name)
	}
	seen := map[string]bool{}
	add := func(t []gtok) {
		if k := fmt.Sprint(t); !seen[k] {
			seen[k] = true
			vocab = append(vocab, t)
		}
	}
	addGlob := func(g rpGlob) { add(rpGlobToks(g)) }
	var walk func(toks []rpTok) int
	walk = func(toks []rpTok) int {
		n := 0
		for _, t := range toks {
			for _, g := range t.alts {
				addGlob(g)
			}
			switch t.kind {
			case rpLit, rpNeg, rpOne, rpPath, rpVar, rpFlagGroup:
				n++
			case rpFlagValue:
				n += 2
				walk([]rpTok{*t.value})
				for _, f := range t.alts {
					for _, v := range t.value.alts { // --flag=value
						add(slices.Concat(rpGlobToks(f), textToks("="), rpGlobToks(v)))
					}
				}
			case rpOptional:
				walk(t.group)
			}
		}
		return n
	}
	pattern := func(p *runokPattern) int {
		for _, g := range p.cmdAlts {
			addGlob(g)
		}
		return walk(p.args)
	}
	wrapping := -1 // the most words of a wrapper that could apply
	for _, c := range cfgs {
		for _, w := range c.wrappers {
			for _, p := range w.pats {
				if applies(p) {
					wrapping = max(wrapping, pattern(p))
				}
			}
		}
	}
	for _, c := range cfgs {
		for _, r := range c.rules {
			for _, p := range r.pats {
				if wrapping < 0 && !applies(p) {
					continue
				}
				n := pattern(p)
				switch {
				case r.action == "allow":
				case wrapping >= 0:
					longest = max(longest, wrapping+1+n) // the wrapper's words, the command's
				default:
					longest = max(longest, n)
				}
			}
		}
		for _, g := range c.flagGroups {
			for _, a := range g.aliases {
				addGlob(a)
			}
			if g.value != nil {
				walk([]rpTok{*g.value})
			}
		}
		addPath := func(p string) {
			add(textToks(p))
			if rel, err := filepath.Rel(cwd, p); err == nil && cwd != "" && filepath.IsAbs(p) {
				add(textToks(rel))
				add(textToks("./" + rel))
			}
		}
		for _, k := range sortedKeys(c.paths) {
			for _, p := range c.paths[k] {
				addPath(p)
			}
		}
		for _, k := range sortedKeys(c.vars) {
			for _, v := range c.vars[k].values {
				for _, w := range v.words {
					if v.typ == "path" {
						addPath(w)
					} else {
						add(textToks(w))
					}
				}
			}
		}
	}
	return vocab, longest
}

// verdictShaped is runok's answer about a command with words known only
// at run time, given literal, its answer about the words as written: that
// answer when it denies, else the strictest over the readings, where a
// reading that would be denied or asked makes the command an ask.
func (rr *runokRules) verdictShaped(c shapedCommand, cwd string, literal runokVerdict, eval func(words []string) runokVerdict) runokVerdict {
	if literal.action == "deny" {
		return literal
	}
	if !c.shape(0).Known() {
		return stricter(literal, runokVerdict{action: "ask", byZot: "the command's name is known only at run time"})
	}
	cfgs := []*runokConfig{rr.full}
	if rr.untrusted != nil {
		cfgs = append(cfgs, rr.untrusted)
	}
	var first, worst runokVerdict
	var example []string
	n := 0
	complete := runokReadings(c, cfgs, cwd, func(argv []string) bool {
		v := eval(argv)
		if n++; n == 1 {
			first = v
		}
		if v.action != "allow" {
			worst, example = v, slices.Clone(argv)
			return true
		}
		return false
	})
	switch {
	case example != nil:
		ask := worst
		ask.action = "ask"
		ask.byZot = fmt.Sprintf("%s, and as `%s` it would be %s", c.unknownWhat(), strings.ReplaceAll(commandLineOf(example), unknownByte, "…"), runokWhat(worst))
		return stricter(literal, ask)
	case !complete:
		return stricter(literal, runokVerdict{action: "ask", byZot: c.unknownWhat() + ", with more values than zot tries against the rules"})
	}
	return stricter(first, literal)
}

// runokWhat says what decided a verdict, for a note.
func runokWhat(v runokVerdict) string {
	switch {
	case v.rule != nil:
		return fmt.Sprintf("%s by %s (%s)", v.action, v.rule, v.rule.src.where())
	case v.byZot != "":
		return v.action + ": " + v.byZot
	case v.deflt != nil:
		return fmt.Sprintf("%s by defaults.action (%s)", v.action, v.deflt.where())
	}
	return v.action
}
