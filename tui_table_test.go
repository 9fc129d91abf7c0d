package main

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"
)

const sampleTable = "Before\n| a | b | **c** |\n|:--|--:|:-:|\n| 1 | 22 | x |\n| long text that wraps around | y | `code` |\nAfter"

// A table is drawn as aligned columns in a box: left, right and centred
// as its delimiter row says, the header bold, inline markdown in cells.
func TestTableLaysOutAlignedColumns(t *testing.T) {
	t.Parallel()
	rows := renderMarkdown(sampleTable, 80, 0)
	want := `Before
┌─────────────────────────────┬────┬──────┐
│ a                           │  b │  c   │
├─────────────────────────────┼────┼──────┤
│ 1                           │ 22 │  x   │
│ long text that wraps around │  y │ code │
└─────────────────────────────┴────┴──────┘
After`
	if got := plainRowsOf(rows); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(tagged(rows[2]), "[b]a[/]") || !strings.Contains(tagged(rows[5]), "[cyan]code[/]") {
		t.Errorf("header or code not styled: %q %q", tagged(rows[2]), tagged(rows[5]))
	}
}

// A table wider than the terminal wraps its widest cells between words;
// when even narrow columns cannot fit, it is drawn as written.
func TestTableWrapsToFitOrFallsBackToText(t *testing.T) {
	t.Parallel()
	want := `┌────────────────┬────┬──────┐
│ a              │  b │  c   │
├────────────────┼────┼──────┤
│ 1              │ 22 │  x   │
│ long text that │  y │ code │
│ wraps around   │    │      │
└────────────────┴────┴──────┘`
	if got := plainRowsOf(renderMarkdown(sampleTable, 30, 0)); !strings.Contains(got, want) {
		t.Errorf("at 30 columns:\n%s\nwant:\n%s", got, want)
	}
	for width := 8; width <= 60; width++ {
		rows := renderMarkdown(sampleTable, width, 0)
		for _, r := range rows {
			if w := visibleWidth(r); w > width {
				t.Fatalf("width %d: row %q is %d wide", width, plain(r), w)
			}
		}
		boxed := strings.Contains(plainRowsOf(rows), "┌")
		if boxed != (width >= 19) {
			t.Errorf("width %d: boxed %v", width, boxed)
		}
		if !boxed && !strings.Contains(strings.Join(strings.Fields(plainRowsOf(rows)), ""), "|:--|--:|:-:|") {
			t.Errorf("width %d: the text is not kept as written:\n%s", width, plainRowsOf(rows))
		}
	}
}

// Lines that start with '|' but have no delimiter row under the first
// are text; escaped bars stay in their cell; short rows are padded.
func TestTableNeedsItsDelimiterRow(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"| a | b |\n| c | d |\nx":                "| a | b |\n| c | d |\nx",
		"| a |\nplain":                           "| a |\nplain",
		"| a | b |\n|---|\n":                     "| a | b |\n|---|",
		"| a \\| b | c |\n|---|---|\n| 1 |":      "┌───────┬───┐\n│ a | b │ c │\n├───────┼───┤\n│ 1     │   │\n└───────┴───┘",
		"| x |\n| a | b |\n|---|---|\n| 1 | 2 |": "| x |\n┌───┬───┐\n│ a │ b │\n├───┼───┤\n│ 1 │ 2 │\n└───┴───┘",
	} {
		if got := plainRowsOf(renderMarkdown(in, 40, 0)); got != want {
			t.Errorf("%q:\n got:\n%s\nwant:\n%s", in, got, want)
		}
	}
}

// A table streamed row by row, in random pieces, at random widths, ends
// up in the scrollback exactly as it draws whole; while its rows arrive
// the live region shows it laid out so far.
func TestStreamedTableMatchesTheWhole(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(5))
	text := "Intro.\n\n" + sampleTable + "\n\n| x | y |\n|---|---|\n| 1 | 2 |\n"
	for trial := 0; trial < 40; trial++ {
		width := 12 + rng.Intn(70)
		tui, v := newTestTUI(t, width, 40)
		feed(tui, Event{Type: "assistant_start"})
		sawTable := false
		for rest := text; rest != ""; {
			n := min(1+rng.Intn(9), len(rest))
			for n < len(rest) && !utf8.RuneStart(rest[n]) {
				n++
			}
			feed(tui, Event{Type: "text_delta", Delta: rest[:n]})
			rest = rest[n:]
			live, _, _ := tui.view()
			sawTable = sawTable || strings.Contains(plainRowsOf(live), "│ 1 ") && !strings.Contains(strings.Join(v.scroll, "\n"), "│ 1 ")
		}
		feed(tui, Event{Type: "assistant_message"})
		var want []string
		for _, r := range renderMarkdown(text, width, 0) {
			want = append(want, strings.TrimRight(plain(r), " "))
		}
		got := v.all()
		if len(got) < len(want) || strings.Join(got[:len(want)], "\n") != strings.Join(want, "\n") {
			t.Fatalf("width %d:\n got:\n%s\nwant:\n%s", width, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if !sawTable && width >= 19 {
			t.Errorf("width %d: the table was not shown while its rows arrived", width)
		}
	}
}

// A resize while a table streams lays it out again at the new width.
func TestStreamedTableFollowsAResize(t *testing.T) {
	t.Parallel()
	tui, v := newTestTUI(t, 80, 30)
	feed(tui, Event{Type: "assistant_start"}, Event{Type: "text_delta", Delta: "| name | what it does |\n|---|---|\n| zot | a coding agent in one Go binary, standard library only |\n"})
	tui.resize(40, 30)
	tui.render()
	live, _, _ := tui.view()
	for _, r := range live {
		if w := visibleWidth(r); w > 40 {
			t.Fatalf("after the resize a row is %d wide: %q", w, plain(r))
		}
	}
	if !strings.Contains(plainRowsOf(live), "│ zot  │ a coding agent in one Go") {
		t.Errorf("not laid out at 40 columns:\n%s", plainRowsOf(live))
	}
	feed(tui, Event{Type: "assistant_message"})
	if s := v.String(); !strings.Contains(s, "└──────┴") {
		t.Errorf("the table was not committed:\n%s", s)
	}
}

// A table taller than the live region sends its rows to the scrollback
// as they come, in the column widths of its first rows.
func TestTallTableStreamsIntoTheScrollback(t *testing.T) {
	t.Parallel()
	tui, v := newTestTUI(t, 60, 20)
	feed(tui, Event{Type: "assistant_start"}, Event{Type: "text_delta", Delta: "| n | square |\n|--:|--:|\n"})
	for i := 1; i <= 40; i++ {
		feed(tui, Event{Type: "text_delta", Delta: fmt.Sprintf("| %d | %d |\n", i, i*i)})
		rows, _, _ := tui.view()
		if len(rows) > 19 {
			t.Fatalf("the live region is %d rows", len(rows))
		}
	}
	if s := strings.Join(v.scroll, "\n") + strings.Join(v.screen(), "\n"); !strings.Contains(s, "│ 30 │    900 │") {
		t.Errorf("row 30 is not in the scrollback before the table ended:\n%s", v)
	}
	feed(tui, Event{Type: "text_delta", Delta: "Done."}, Event{Type: "assistant_message"})
	s := v.String()
	if strings.Count(s, "┌") != 1 || strings.Count(s, "└") != 1 || !strings.Contains(s, "│ 40 │   1600 │\n└") {
		t.Errorf("the tall table:\n%s", s)
	}
}

// Cells are text from the model: escapes in them are defused like any
// other (the emulator fails the test on an escape it does not expect).
func TestTableCellsAreSanitised(t *testing.T) {
	t.Parallel()
	tui, v := newTestTUI(t, 80, 24)
	feed(tui, Event{Type: "assistant_start"},
		Event{Type: "text_delta", Delta: "| a\x1b]0;TITLE\x07 | b\x1b[2J |\n|---|---|\n| \x1b[31mred | \u009b2Jx |\n"},
		Event{Type: "assistant_message"})
	if s := v.String(); strings.Contains(s, "TITLE") || !strings.Contains(s, "│ a␛  │ b␛ │") || !strings.Contains(s, "│ red │ ␛x │") {
		t.Errorf("%s", s)
	}
}
