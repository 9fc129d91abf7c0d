package main

import (
	"fmt"
	"math/rand"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// longLine is n bytes of one unbroken line of the given shape, the kind
// of text that arrives without a newline for a long time.
func longLine(shape string, n int) string {
	var unit string
	switch shape {
	case "base64":
		unit = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3ODkrLw=="
	case "json":
		unit = `{"id":12,"name":"x_y","tags":["a","b"],"ok":true,"n":[1,2,3]},`
	case "words":
		unit = "a paragraph of **bold** and *italic* words with `code` that keeps going "
	case "bracket": // a '[' whose "](" never comes: the link stays undecided
		unit = "see [the list of things and more things "
	case "escape": // an OSC sequence that never ends
		unit = "\x1b]0;" + strings.Repeat("t", 80)
	case "stars":
		unit = "********"
	case "spaces":
		unit = "        "
	case "zalgo": // combining marks piled on one character
		unit = "\u0301\u0302\u0303\u0304"
	case "code": // in a code block opened before the line
		unit = "x := a*b*c; y := `q`; "
	}
	prefix := map[string]string{"bracket": "[", "code": "```go\n", "spaces": "-", "zalgo": "e"}[shape]
	return prefix + strings.Repeat(unit, n/len(unit)+1)[:n/len(unit)*len(unit)]
}

// streamLine sends text to a fresh TUI in deltas of 8 bytes, drawing a
// frame after each, and returns the bytes the Go runtime allocated.
func streamLine(t testing.TB, text string) uint64 {
	tui, _ := newTestTUI(t, 100, 30)
	tui.out = &countWriter{}
	feed(tui, Event{Type: "assistant_start"})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for len(text) > 0 {
		n := min(8, len(text))
		tui.event(Event{Type: "text_delta", Delta: text[:n]})
		tui.render()
		text = text[n:]
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestTUIStreamingALongLineIsLinear streams lines of 8 KB and 64 KB that
// never end: the work per delta must not grow with the line, so eight
// times the text may cost about eight times the memory allocated, not
// sixty-four. Every shape that needs look-ahead is here: markers, a '['
// that may open a link, an escape sequence, leading spaces, code.
func TestTUIStreamingALongLineIsLinear(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	const small = 8 << 10
	for _, shape := range []string{"base64", "json", "words", "bracket", "escape", "stars", "spaces", "zalgo", "code"} {
		a := streamLine(t, longLine(shape, small))
		b := streamLine(t, longLine(shape, 8*small))
		if ratio := float64(b) / float64(a); ratio > 16 {
			t.Errorf("%s: 8 KB allocated %d bytes, 64 KB %d (%.1f times): the work per delta grows with the line", shape, a, b, ratio)
		}
	}
}

// BenchmarkTUIStreamLongLine streams one line without a newline in 8-byte
// deltas, each handled and drawn: the cost must grow with the size, not
// with its square.
func BenchmarkTUIStreamLongLine(b *testing.B) {
	for _, size := range []int{100 << 10, 1 << 20} {
		text := longLine("base64", size)
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				tui, _ := newTestTUI(b, 100, 30)
				tui.out = &countWriter{}
				feed(tui, Event{Type: "assistant_start"})
				for rest := text; len(rest) > 0; {
					n := min(8, len(rest))
					tui.event(Event{Type: "text_delta", Delta: rest[:n]})
					tui.render()
					rest = rest[n:]
				}
			}
		})
	}
}

// markdownSeeds are lines that exercise every decision that waits for
// later text.
var markdownSeeds = []string{
	"", "plain words", "# Title", "## Sub **x**", "#hashtag", "####### seven", "#   ", "# ",
	"Some **bold** and *it* and _it_ and `code`.", "***both***", "**unclosed bold", "snake_case_name and 2 * 3 * 4",
	"`a*b*c` ``x ` y``", "```go", "```go `x`", "~~~ info `x`", "``", "- item", "* star item", "+ plus", "  - nested",
	"12. twelfth", "123456789. nine", "1234567890. ten", "3)", "> quoted *text*", "> > nested", ">>x", "---", "- - -",
	"***", "___ x", "* * * x", "see [the docs](https://x.y/a_b_c) now", "[not a link]", "[a] b [c](d) [e", "[x](y(z)w) v",
	"[`](`)", "a]( b [c", "[[a]](b)", "**[bold link](u)**", "evil \x1b]0;t\x07 \x1b[2J text \x1b[31mred\x1b[0m",
	"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "\x1b[1;2;3", "\x1b[?25l", "\x1b(B", "\x1b\x1b", "\x1b]0;x\x1bq",
	"a\rb", "tab\there\t!", "\xe6\x97\xa5\xe6\x9c\xac", "\xe6\x97", "\xc2\x9b31m", "e\u0301\u200d", "日本語 🎉 wide",
	"\u202eevil", "\ufeffbom", "****", "**** x ****", "````` ``", "_a_b_", "*a*b*", "`` ` ``", strings.Repeat("-", 300),
	strings.Repeat("x", 300) + " [a](b)", "    # indented", "    - deep", "   ```", "   ~~~~", strings.Repeat(" ", 260) + "- x",
}

// sameCells reports whether two lines of cells are the same, styles too.
func sameCells(a, b []cell) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func cellsText(cells []cell) string {
	var b strings.Builder
	for _, c := range cells {
		fmt.Fprintf(&b, "%s/%x ", c.s, c.st)
	}
	return b.String()
}

// checkMarkdownStream checks one line three ways: whole against the
// reference (when it is short enough for the reference's rules to hold),
// and in the pieces cuts gives, where after every piece the cells decided
// and those pending must be what the text so far draws as a whole line,
// and at the end exactly the whole line's cells.
func checkMarkdownStream(t *testing.T, line, fence string, cuts []int) {
	t.Helper()
	checkMarkdownStreamIn(t, line, mdState{fence: fence}, cuts)
}

// checkMarkdownStreamIn is checkMarkdownStream after a line that left
// state start; the reference knows no highlighting, so a highlighted code
// line is checked in pieces only.
func checkMarkdownStreamIn(t *testing.T, line string, start mdState, cuts []int) {
	t.Helper()
	fence := start.fence
	st := start
	whole := parseMarkdownLine(nil, line, &st, 0)
	if len(refDrawText(line)) < blockLookahead && start.code == nil {
		rst := mdState{fence: fence}
		ref := refMarkdownLine(nil, line, &rst, 0)
		if !sameCells(whole.cells, ref.cells) || !reflect.DeepEqual([]any{whole.first, whole.cont, whole.hard, st}, []any{ref.first, ref.cont, ref.hard, rst}) {
			t.Fatalf("line %q (fence %q):\n got %s %v %v %v %+v\nwant %s %v %v %v %+v", line, fence,
				cellsText(whole.cells), whole.first, whole.cont, whole.hard, st, cellsText(ref.cells), ref.first, ref.cont, ref.hard, rst)
		}
	}
	var m mdStream
	m.reset(start, 0)
	at := 0
	for _, n := range append(cuts, len(line)) {
		n = min(max(n, at), len(line))
		m.write(line[at:n])
		at = n
		got, blk := m.pending(append([]cell(nil), m.cells...))
		pst := start
		want := parseMarkdownLine(nil, line[:at], &pst, 0)
		if !sameCells(got, want.cells) || !reflect.DeepEqual([]any{blk.first, blk.cont, blk.hard}, []any{want.first, want.cont, want.hard}) {
			t.Fatalf("line %q after %q (fence %q):\n got %s %v %v %v\nwant %s %v %v %v", line, line[:at], fence,
				cellsText(got), blk.first, blk.cont, blk.hard, cellsText(want.cells), want.first, want.cont, want.hard)
		}
	}
	end := m.end()
	if !sameCells(m.cells, whole.cells) || end != st {
		t.Fatalf("line %q in pieces %v (fence %q):\n got %s %+v\nwant %s %+v", line, cuts, fence, cellsText(m.cells), end, cellsText(whole.cells), st)
	}
}

// TestMarkdownStreamMatchesTheReference checks every seed line split at
// every byte, and in random pieces, inside and outside a code block.
func TestMarkdownStreamMatchesTheReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(1))
	for _, line := range markdownSeeds {
		for _, fence := range []string{"", "```"} {
			for i := 0; i <= len(line) && i < 300; i++ {
				checkMarkdownStream(t, line, fence, []int{i})
			}
			for trial := 0; trial < 20; trial++ {
				var cuts []int
				for at := 0; at < len(line); at += 1 + rng.Intn(6) {
					cuts = append(cuts, at)
				}
				checkMarkdownStream(t, line, fence, cuts)
			}
		}
	}
}

func FuzzMarkdownStream(f *testing.F) {
	for i, s := range markdownSeeds {
		f.Add(s, i%2 == 0, int64(i))
	}
	f.Fuzz(func(t *testing.T, line string, fence bool, seed int64) {
		line = strings.ReplaceAll(line, "\n", " ")
		if len(line) > 600 {
			line = line[:600]
		}
		rng := rand.New(rand.NewSource(seed))
		var cuts []int
		for at := 0; at < len(line); at += 1 + rng.Intn(8) {
			cuts = append(cuts, at)
		}
		fs := ""
		if fence {
			fs = "```"
		}
		checkMarkdownStream(t, line, fs, cuts)
	})
}

// TestDrawTextMatchesTheReference cleans text whole and a line at a time
// in pieces: both must be what the reference makes of it.
func TestDrawTextMatchesTheReference(t *testing.T) {
	t.Parallel()
	for _, s := range append(markdownSeeds, "a\r\nb\r", "x\x1b]0;t\ny", "\x1b\n\x1b[\n\x1b]\x1b\n", "\t\n\t日\tx\n",
		"\u009b31mx\u009d0;t\x07y\u009b2J\u0090d\x1b\\z\u009b") {
		checkDrawText(t, s, 3)
	}
}

func checkDrawText(t *testing.T, s string, piece int) {
	t.Helper()
	want := refDrawText(s)
	if got := drawText(s); got != want {
		t.Fatalf("drawText(%q) = %q, want %q", s, got, want)
	}
	c := sanitizer{width: runeWidth}
	var b []byte
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b = append(b, '\n')
		}
		for len(line) > 0 {
			n := min(piece, len(line))
			b = c.write(b, line[:n])
			line = line[n:]
		}
		b = c.end(b)
	}
	if string(b) != want {
		t.Fatalf("sanitizer in pieces of %d: %q = %q, want %q", piece, s, b, want)
	}
}

func FuzzDrawTextMatchesTheReference(f *testing.F) {
	for i, s := range markdownSeeds {
		f.Add(s, i%5)
	}
	f.Fuzz(func(t *testing.T, s string, piece int) {
		checkDrawText(t, s, 1+(piece&0xff)%9)
	})
}

// TestStreamedRowsAreCommittedOnlyWhenFinal streams random markdown in
// random pieces at random widths: the rows committed to the scrollback
// must be exactly those of the whole text, styles and all (but for link
// text, which is restyled only where it is still live).
func TestStreamedRowsAreCommittedOnlyWhenFinal(t *testing.T) {
	t.Parallel()
	frags := []string{"word ", "**bold** ", "*it* ", "`code` ", "日本語 ", "e\u0301 ", "\t", "\x1b[31m", "\x1b]0;x\x07",
		"\n", "\n# ", "\n- ", "\n12. ", "\n> ", "\n```\n", "\n---\n", "_x_ ", "**", "`", "[", "](u) ", "a_b ",
		strings.Repeat("z", 30), " ", "  ", "\r\n", "\xe6\x97\xa5"}
	rng := rand.New(rand.NewSource(2))
	for trial := 0; trial < 150; trial++ {
		var doc strings.Builder
		for i := 5 + rng.Intn(60); i > 0; i-- {
			doc.WriteString(frags[rng.Intn(len(frags))])
		}
		text := doc.String()
		width := 8 + rng.Intn(60)
		tui, _ := newTestTUI(t, width, 40)
		feed(tui, Event{Type: "assistant_start"})
		var got []string
		for rest := text; rest != ""; {
			n := min(1+rng.Intn(12), len(rest))
			tui.event(Event{Type: "text_delta", Delta: rest[:n]})
			got = append(got, tui.commit...)
			tui.render()
			rest = rest[n:]
		}
		tui.event(Event{Type: "assistant_message"})
		got = append(got, tui.commit...)
		var want []string
		var st mdState
		for _, line := range strings.Split(text, "\n") {
			m := parseMarkdownLine(nil, line, &st, 0)
			rows, _ := wrapCells(m.cells, wrapSpec{width: width, first: m.first, cont: m.cont, hard: m.hard})
			want = append(want, rows...)
		}
		if strings.HasSuffix(text, "\n") {
			want = want[:len(want)-1] // nothing was written after the last line break
		}
		links := strings.Contains(text, "[")
		same := len(got) == len(want)
		for i := 0; same && i < len(got); i++ {
			same = got[i] == want[i] || links && plain(got[i]) == plain(want[i])
		}
		if !same {
			t.Fatalf("width %d, text %q:\n got %q\nwant %q", width, text, got, want)
		}
	}
}
