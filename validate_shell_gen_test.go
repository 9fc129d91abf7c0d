package main

import (
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"
)

// The ${…} generator holds the splitter to bash where issue 22 found it
// swallowing the rest of a line: it makes lines of a ${…} — every form and
// operator, with words built of what bash's parser delimits as one piece
// (a bare {, $'\'', a nested ${…} holding a quoted }, the other quote
// inside double quotes …) — in every context a word appears in, followed
// by a marker command, paramMarker. Lines come two ways: the systematic
// families (every operator × piece × context) and random ones, nested
// (and, in the bash test, the random lines of lineGen, whose arguments are
// sometimes such a ${…}).
//
// Three tests use it. TestSplitterReportsWhatFollowsEveryExpansion and
// FuzzSplitterReportsWhatFollowsAnExpansion need no shell: the marker must
// be reported or the line must ask. TestSplitterMatchesBashOnExpansionLines
// runs a time-boxed sample (a fresh seed each run) under the real bash in
// the lab of validate_shell_diff_test.go; with -splitter.lines=N it runs N
// lines without a time box, as bench/splitter-diff.sh does.

var (
	splitterLines = flag.Int("splitter.lines", 0, "run this many generated ${…} lines under bash, with no time box (bench/splitter-diff.sh)")
	splitterSeed  = flag.Int64("splitter.seed", 0, "the seed of the generated ${…} lines (0: a fresh one)")
)

// paramMarker is the command every generated line ends with: one the
// splitter must report, or else ask.
const paramMarker = "rm zm"

// paramPiece is one piece of a ${…} word; open marks a piece bash's parser
// reads past the end of the ${…} (a lone quote), after which the marker is
// not a command.
type paramPiece struct {
	text string
	open bool
}

var paramPieces = []paramPiece{
	{text: "{"}, {text: `$'\''`}, {text: "${y:-'}'}"}, {text: `'"'`}, {text: `"'"`},
	{text: "'}'"}, {text: `"}"`}, {text: `\}`}, {text: "`rm q1 }`"}, {text: "$(rm q2 })"},
	{text: "'$(rm q3)'"}, {text: "$${"}, {text: "$'}'"}, {text: `"$(rm q4)"`}, {text: "$y"},
	{text: `\'`}, {text: "a b"}, {text: "("}, {text: ")"},
	{text: "'", open: true}, {text: `"`, open: true}, {text: "`", open: true},
}

// paramOperators are the operators of the generated ${x…}: those with a
// word, then those without.
var paramOperators = []string{":-", "-", ":=", "=", ":?", "?", ":+", "+", "#", "##", "%", "%%", "/", "//", "/#", "/%",
	"^", "^^", ",", ",,", "", "@Q", "@E", "@P", "@A", "@a", "@U", "@u", "@L", "@K", ":1", ":1:2"}

// paramHeads are ${…} forms without a word: length, indirection, names,
// keys, elements and special parameters.
var paramHeads = []string{"#x", "!x", "!x*", "!x@", "x[@]", "x[*]", "#x[@]", "!x[@]", "x[1]", "@", "*", "#", "1", "?", "$", "!", "-"}

func takesWord(op string) bool {
	return op != "" && op[0] != '@' && !strings.HasPrefix(op, ":1")
}

// paramContext puts an expansion e in a word of some context, followed by
// rest, a command list.
type paramContext struct {
	name  string
	build func(e, rest string) string
}

var paramContexts = []paramContext{
	{"word", func(e, rest string) string { return "echo " + e + "; " + rest }},
	{"double quotes", func(e, rest string) string { return `echo "` + e + `"; ` + rest }},
	{"inside double quotes", func(e, rest string) string { return `echo "a ` + e + ` b"; ` + rest }},
	{"x=", func(e, rest string) string { return "v=" + e + "; " + rest }},
	{"x=\"\"", func(e, rest string) string { return `v="` + e + `"; ` + rest }},
	{"[[ ]]", func(e, rest string) string { return "[[ " + e + " == z ]]; " + rest }},
	{"[[ \"\" ]]", func(e, rest string) string { return `[[ "` + e + `" == z ]]; ` + rest }},
	{"case word", func(e, rest string) string { return "case " + e + " in z) :;; esac; " + rest }},
	{"case pattern", func(e, rest string) string { return "case z in " + e + ") :;; esac; " + rest }},
	{"for", func(e, rest string) string { return "for v in " + e + "; do :; done; " + rest }},
	{"$( )", func(e, rest string) string { return "echo $(echo " + e + "); " + rest }},
	{"$( ) holding the rest", func(e, rest string) string { return "echo $(echo " + e + "; " + rest + ")" }},
	{"\"$( )\"", func(e, rest string) string { return `echo "$(echo "` + e + `")"; ` + rest }},
	{"backquotes", func(e, rest string) string { return "echo `echo " + backquoted(e) + "`; " + rest }},
	{"here-document", func(e, rest string) string { return "cat <<EOF\n" + e + "\nEOF\n" + rest }},
	{"here-document \"\"", func(e, rest string) string { return "cat <<EOF\n\"" + e + "\"\nEOF\n" + rest }},
	{"bash -c", func(e, rest string) string { return "bash -c " + shellQuote("echo "+e+"; "+rest) }},
	{"sh -c", func(e, rest string) string { return "sh -c " + shellQuote("echo "+e+"; "+rest) }},
}

// backquoted escapes text for `…`, whose \\, \` and \$ bash undoes before
// reading the command.
func backquoted(s string) string {
	return strings.NewReplacer(`\`, `\\`, "`", "\\`").Replace(s)
}

// paramExpansion builds ${x<op><word>}, or for an operator without a word
// ${x<op>}${y:-<word>}, so that every piece is tried with every operator.
func paramExpansion(op, word string) string {
	switch {
	case op == "/":
		return "${x/a/" + word + "}"
	case takesWord(op):
		return "${x" + op + word + "}"
	default:
		return "${x" + op + "}${y:-" + word + "}"
	}
}

// paramFamilies are the systematic lines: every operator and form, every
// piece, every context.
func paramFamilies() (lines []string, open []bool) {
	forms := append([]string{}, paramOperators...)
	for _, h := range paramHeads {
		forms = append(forms, "head:"+h)
	}
	for _, form := range forms {
		for _, piece := range paramPieces {
			e := paramExpansion(form, piece.text)
			if h, ok := strings.CutPrefix(form, "head:"); ok {
				e = "${" + h + "}${y:-" + piece.text + "}"
			}
			for _, ctx := range paramContexts {
				lines, open = append(lines, ctx.build(e, paramMarker)), append(open, piece.open)
			}
		}
	}
	return lines, open
}

// chooser makes the generator's choices: a *rand.Rand, or the bytes of a
// fuzzed input.
type chooser interface{ Intn(n int) int }

type byteChooser struct {
	b []byte
	i int
}

func (c *byteChooser) Intn(n int) int {
	if c.i >= len(c.b) {
		return 0
	}
	c.i++
	return int(c.b[c.i-1]) % n
}

// paramGen makes random lines around nested ${…}.
type paramGen struct{ c chooser }

// expansion makes one ${…}, with expansions nested in its word up to
// depth 3; open reports a lone quote in it.
func (g paramGen) expansion(depth int) (text string, open bool) {
	if g.c.Intn(5) == 0 {
		head := paramHeads[g.c.Intn(len(paramHeads))]
		w, o := g.word(depth)
		return "${" + head + "}${y:-" + w + "}", o
	}
	w, o := g.word(depth)
	return paramExpansion(paramOperators[g.c.Intn(len(paramOperators))], w), o
}

func (g paramGen) word(depth int) (text string, open bool) {
	var b strings.Builder
	for n := g.c.Intn(4); n >= 0; n-- {
		if depth < 3 && g.c.Intn(4) == 0 {
			e, o := g.expansion(depth + 1)
			b.WriteString(e)
			open = open || o
			continue
		}
		p := paramPieces[g.c.Intn(len(paramPieces))]
		b.WriteString(p.text)
		open = open || p.open
	}
	return b.String(), open
}

// line makes a line ending in paramMarker: an expansion in a context,
// whose rest is the marker or, up to depth 2, another such line.
func (g paramGen) line(depth int) (text string, open bool) {
	e, open := g.expansion(0)
	rest := paramMarker
	if depth < 2 && g.c.Intn(3) == 0 {
		var o bool
		rest, o = g.line(depth + 1)
		open = open || o
	}
	line := paramContexts[g.c.Intn(len(paramContexts))].build(e, rest)
	prefixes := []string{"", "", "x=a; ", "x=; ", "y=b; ", "x='}'; ", "unset x; "}
	return prefixes[g.c.Intn(len(prefixes))] + line, open
}

// reportsMarker is the property the generated lines are held to without a
// shell: the marker after the ${…} is a command the splitter reported, or
// the splitter said it cannot follow the line.
func reportsMarker(line string) error {
	split := SplitCommandLine(line, testShell("/work"))
	if len(split.Unfollowed) > 0 {
		return nil
	}
	for _, c := range split.Commands {
		if c.Name == "rm" && slices.Equal(c.Words, strings.Fields(paramMarker)) {
			return nil
		}
	}
	var got []string
	for _, c := range split.Commands {
		got = append(got, fmt.Sprintf("%q", c.Words))
	}
	return fmt.Errorf("%q: the splitter neither reported %q nor asked; it reported %s", line, paramMarker, strings.Join(got, " "))
}

func TestSplitterReportsWhatFollowsEveryExpansion(t *testing.T) {
	t.Parallel()
	lines, open := paramFamilies()
	g := paramGen{c: rand.New(rand.NewSource(22))}
	for range 5000 {
		l, o := g.line(0)
		lines, open = append(lines, l), append(open, o)
	}
	failed := 0
	for i, l := range lines {
		if open[i] {
			continue
		}
		if err := reportsMarker(l); err != nil {
			if failed++; failed <= 20 {
				t.Error(err)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d generated lines hid the command after a ${…}", failed, len(lines))
	}
}

func FuzzSplitterReportsWhatFollowsAnExpansion(f *testing.F) {
	for _, seed := range []string{"", "\x00\x01\x02", "\x04\x03\x02\x01\x00", "\x01\x01\x01\x01\x01\x01\x01\x01", "\xff\xfe\x10\x20\x30\x40\x50"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		line, open := paramGen{c: &byteChooser{b: b}}.line(0)
		if open {
			return
		}
		if err := reportsMarker(line); err != nil {
			t.Fatal(err)
		}
	})
}

// diffExpansionBudget is the share of a plain go test run this test
// takes: past it no new line starts, once diffSampleMin lines have.
const diffExpansionBudget = 2 * time.Second

func TestSplitterMatchesBashOnExpansionLines(t *testing.T) {
	t.Parallel()
	lab := newShellLab(t)
	seed := *splitterSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	note := fmt.Sprintf("\n  (seed %d: go test -run TestSplitterMatchesBashOnExpansionLines -args -splitter.seed=%d)", seed, seed)
	// Systematic and random lines in turn: every run a fresh sample of both.
	r := rand.New(rand.NewSource(seed))
	families, _ := paramFamilies()
	r.Shuffle(len(families), func(i, j int) { families[i], families[j] = families[j], families[i] })
	n, deadline := 4000, time.Now().Add(diffExpansionBudget)
	if *splitterLines > 0 {
		n, deadline = *splitterLines, time.Time{}
	}
	g := paramGen{c: r}
	lines := make([]string, 0, n)
	for i := 0; len(lines) < n; i++ {
		switch {
		case i%2 == 0 && i/2 < len(families):
			lines = append(lines, families[i/2])
		case i%4 == 1:
			lines = append(lines, lineGen{r: r}.list(0))
		default:
			l, _ := g.line(0)
			lines = append(lines, l)
		}
	}
	// However loaded the machine, diffSampleMin lines are checked: the
	// deadline only bounds how many more.
	st := lab.checkLinesUntil(t, lines, deadline, note)
	t.Logf("%s%s", st, note)
}
