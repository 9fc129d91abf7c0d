package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// newTestTUI is a TUI drawing into a vt of the given size, with no
// terminal, no provider and a private ZOT_HOME; its gates are set as
// the wiring sets them.
func newTestTUI(t testing.TB, width, height int) (*TUI, *vt) {
	tui, v := newUnwiredTestTUI(t, width, height)
	yolo, confirm := tui.Gates()
	tui.agent.Pipeline.AddToolGate(YoloStage, yolo)
	tui.agent.Pipeline.SetConfirm(confirm)
	return tui, v
}

// newUnwiredTestTUI is newTestTUI without its gates, for tests that wire
// it as main does.
func newUnwiredTestTUI(t testing.TB, width, height int) (*TUI, *vt) {
	home, cwd := t.TempDir(), t.TempDir()
	env := NewToolEnv(cwd, false)
	reg := NewToolRegistry()
	reg.SetSource("builtin", BuiltinTools(env))
	cfg := TUIConfig{Home: home, Cwd: cwd, Provider: "anthropic", ToolEnv: env, Agent: NewAgent(nil, "claude-sonnet-4-5", reg)}
	v := newVT(t, width, height)
	tui := newTUI(cfg, v)
	tui.width, tui.height = width, height
	tui.scr.height = height
	t.Cleanup(tui.cancel)
	return tui, v
}

// feed shows agent events as if a prompt were running, drawing a frame
// after each.
func feed(t *TUI, events ...Event) {
	if t.run == nil {
		t.runSeq++
		t.run = &runState{id: t.runSeq, cancel: func() {}}
	}
	for _, e := range events {
		t.event(e)
		t.render()
	}
}

// Key decoder.

func keysString(keys []tuiKey) string {
	var out []string
	for _, k := range keys {
		if k.code == keyPaste {
			out = append(out, "paste("+k.text+")")
			continue
		}
		out = append(out, k.String())
	}
	return strings.Join(out, " ")
}

func TestDecodeKeys(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in    string
		flush bool
		want  string
		rest  int // bytes left undecoded
	}{
		{"a", false, "a", 0},
		{"aB1 ", false, "a B 1  ", 0},
		{"\x01\x05\x0b\x15\x17\x19", false, "ctrl+a ctrl+e ctrl+k ctrl+u ctrl+w ctrl+y", 0},
		{"\r", false, "enter", 0},
		{"\n", false, "ctrl+j", 0},
		{"\t", false, "tab", 0},
		{"\x7f", false, "backspace", 0},
		{"\x08", false, "backspace", 0},
		{"\x00", false, "ctrl+space", 0},
		{"\x1c", false, "ctrl+\\", 0},
		{"\x1b", false, "", 1},
		{"\x1b", true, "esc", 0},
		{"\x1bb", false, "alt+b", 0},
		{"\x1bf", false, "alt+f", 0},
		{"\x1bd", false, "alt+d", 0},
		{"\x1b\x7f", false, "alt+backspace", 0},
		{"\x1b\x08", false, "alt+backspace", 0},
		{"\x1b\r", false, "alt+enter", 0},
		{"\x1b[A\x1b[B\x1b[C\x1b[D", false, "up down right left", 0},
		{"\x1bOA\x1bOD\x1bOH\x1bOF", false, "up left home end", 0},
		{"\x1b[H\x1b[F\x1b[1~\x1b[4~\x1b[7~\x1b[8~", false, "home end home end home end", 0},
		{"\x1b[2~\x1b[3~\x1b[5~\x1b[6~", false, "insert delete pageup pagedown", 0},
		{"\x1b[1;5C\x1b[1;5D", false, "ctrl+right ctrl+left", 0},
		{"\x1b[1;3C\x1b[1;3D", false, "alt+right alt+left", 0},
		{"\x1b[1;2A", false, "shift+up", 0},
		{"\x1b[3;5~", false, "ctrl+delete", 0},
		{"\x1b[Z", false, "shift+tab", 0},
		{"\x1b[13;2u", false, "shift+enter", 0},
		{"\x1b[13;3u", false, "alt+enter", 0},
		{"\x1b[97;5u", false, "ctrl+a", 0},
		{"\x1b[27;2;13~", false, "shift+enter", 0},
		{"\x1b[200~hello\nworld\x1b[201~", false, "paste(hello\nworld)", 0},
		{"\x1b[200~a\x1b[Ab\x1b[201~x", false, "paste(a\x1b[Ab) x", 0},
		{"\x1b[200~partial", true, "", 13},
		{"\x1b[0200~x", true, "unknown x", 0},
		{"\x1b[200;5~x\x1b[201~", false, "unknown x unknown", 0},
		{"é日本🎉", false, "é 日 本 🎉", 0},
		{"\xc3", false, "", 1},
		{"\xc3", true, "unknown", 0},
		{"\xff", false, "unknown", 0},
		{"\xc2\x9b31m", false, "unknown 3 1 m", 0},
		{"\x1b[<0;1;2M", false, "unknown", 0},
		{"\x1b[I\x1b[O", false, "focus-in focus-out", 0}, // focus reports (tui_notify.go): never text
		{"\x1b[", false, "", 2},
		{"\x1b[", true, "alt+[", 0},
		{"\x1b[1;5", false, "", 5},
		{"\x1b[1;5", true, "unknown", 0},
		{"\x1bO", true, "alt+O", 0},
		{"\x1b\x1b[A", false, "esc up", 0},
		{"\x1b[" + strings.Repeat("1", 70) + "A", false, "unknown A", 0},
		{"\x1b[" + strings.Repeat("1", 70), false, "unknown", 0},
		{"x\x1b[A\x1b", false, "x up", 1},
	}
	for _, c := range cases {
		keys, n := decodeKeys([]byte(c.in), c.flush)
		if got := keysString(keys); got != c.want || len(c.in)-n != c.rest {
			t.Errorf("decodeKeys(%q, flush=%v) = %q with %d left, want %q with %d left", c.in, c.flush, got, len(c.in)-n, c.want, c.rest)
		}
	}
}

// TestDecodeKeysSplitAnywhere feeds a sequence in every two-part split: the
// keys must come out the same as from one read.
func TestDecodeKeysSplitAnywhere(t *testing.T) {
	t.Parallel()
	in := "a\x1b[1;5C日\x1b[200~p\x1b[201~\x1bb\x1b[3~é\r"
	want := "a ctrl+right 日 paste(p) alt+b delete é enter"
	for cut := 0; cut <= len(in); cut++ {
		var keys []tuiKey
		buf := []byte(in[:cut])
		ks, n := decodeKeys(buf, false)
		keys = append(keys, ks...)
		buf = append(buf[n:], in[cut:]...)
		ks, n = decodeKeys(buf, false)
		keys = append(keys, ks...)
		if got := keysString(keys); got != want || n != len(buf) {
			t.Errorf("split at %d: %q (%d of %d consumed)", cut, got, n, len(buf))
		}
	}
}

func FuzzDecodeKeys(f *testing.F) {
	for _, s := range []string{"a", "\x1b", "\x1b[1;5C", "\x1b[200~x\x1b[201~", "\x1bOA", "日本", "\xc3", "\x1b[27;2;13~", "\x1b[97;5u", "\x1b[<0;1;2M"} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, flush bool) {
		keys, n := decodeKeys(in, flush)
		if n < 0 || n > len(in) {
			t.Fatalf("consumed %d of %d", n, len(in))
		}
		if flush && n < len(in) && !strings.Contains(string(in), pasteStart) {
			t.Fatalf("flush left %q undecoded", in[n:])
		}
		if n < len(in) && len(in)-n > maxSeq && !strings.Contains(string(in), pasteStart) {
			t.Fatalf("kept %d bytes of an incomplete sequence", len(in)-n)
		}
		for _, k := range keys {
			if k.code == keyRune && k.mod == 0 && (k.r < 0x20 || k.r == 0x7f || (k.r >= 0x80 && k.r < 0xa0)) {
				t.Fatalf("control character %U decoded as a printable key", k.r)
			}
			if k.code > keyUnknown {
				t.Fatalf("bad key code %d", k.code)
			}
		}
	})
}

// Editor.

// edState renders an editor as its text with | at the cursor.
func edState(e *editor) string {
	return string(e.buf[:e.cur]) + "|" + string(e.buf[e.cur:])
}

func edFrom(s string) *editor {
	i := strings.Index(s, "|")
	text := s[:i] + s[i+1:]
	return &editor{buf: []rune(text), cur: utf8.RuneCountInString(s[:i]), histAt: -1}
}

func kr(r rune) tuiKey              { return tuiKey{code: keyRune, r: r} }
func kc(r rune) tuiKey              { return tuiKey{code: keyRune, r: r, mod: modCtrl} }
func ka(r rune) tuiKey              { return tuiKey{code: keyRune, r: r, mod: modAlt} }
func kk(c keyCode) tuiKey           { return tuiKey{code: c} }
func km(c keyCode, m keyMod) tuiKey { return tuiKey{code: c, mod: m} }

func TestEditorKeyBindings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		before string
		keys   []tuiKey
		after  string
		kill   string
	}{
		{"type", "ab|c", []tuiKey{kr('x'), kr('日')}, "abx日|c", ""},
		{"backspace", "abc|", []tuiKey{kk(keyBackspace)}, "ab|", ""},
		{"ctrl+h", "abc|", []tuiKey{kc('h')}, "ab|", ""},
		{"delete", "a|bc", []tuiKey{kk(keyDelete)}, "a|c", ""},
		{"ctrl+d deletes forward", "a|bc", []tuiKey{kc('d')}, "a|c", ""},
		{"left right", "ab|c", []tuiKey{kk(keyLeft), kk(keyLeft), kk(keyRight)}, "a|bc", ""},
		{"ctrl+b ctrl+f", "abc|", []tuiKey{kc('b'), kc('b'), kc('f')}, "ab|c", ""},
		{"left at start", "|ab", []tuiKey{kk(keyLeft), kc('b')}, "|ab", ""},
		{"right at end", "ab|", []tuiKey{kk(keyRight), kc('f')}, "ab|", ""},
		{"ctrl+a", "one two|", []tuiKey{kc('a')}, "|one two", ""},
		{"ctrl+e", "|one two", []tuiKey{kc('e')}, "one two|", ""},
		{"home end", "one| two", []tuiKey{kk(keyHome), kr('>'), kk(keyEnd)}, ">one two|", ""},
		{"ctrl+a on the second line", "l1\nl2|", []tuiKey{kc('a')}, "l1\n|l2", ""},
		{"ctrl+e on the first line", "|l1\nl2", []tuiKey{kc('e')}, "l1|\nl2", ""},
		{"alt+b", "one two three|", []tuiKey{ka('b')}, "one two |three", ""},
		{"alt+b twice over punctuation", "one, two|", []tuiKey{ka('b'), ka('b')}, "|one, two", ""},
		{"alt+f", "|one two", []tuiKey{ka('f')}, "one| two", ""},
		{"ctrl+right ctrl+left", "|one two", []tuiKey{km(keyRight, modCtrl), km(keyRight, modCtrl), km(keyLeft, modCtrl)}, "one |two", ""},
		{"alt+right alt+left", "one two|", []tuiKey{km(keyLeft, modAlt), km(keyRight, modAlt)}, "one two|", ""},
		{"ctrl+w deletes to whitespace", "foo.bar baz|", []tuiKey{kc('w')}, "foo.bar |", "baz"},
		{"ctrl+w over trailing space", "foo.bar |", []tuiKey{kc('w')}, "|", "foo.bar "},
		{"alt+backspace deletes a word", "foo.bar|", []tuiKey{km(keyBackspace, modAlt)}, "foo.|", "bar"},
		{"ctrl+backspace deletes a word", "foo bar|", []tuiKey{km(keyBackspace, modCtrl)}, "foo |", "bar"},
		{"alt+d", "one |two three", []tuiKey{ka('d')}, "one | three", "two"},
		{"ctrl+k", "ab|cd\nef", []tuiKey{kc('k')}, "ab|\nef", "cd"},
		{"ctrl+k at line end joins", "ab|\ncd", []tuiKey{kc('k')}, "ab|cd", "\n"},
		{"ctrl+u", "ab|cd", []tuiKey{kc('u')}, "|cd", "ab"},
		{"ctrl+u on the second line", "ab\ncd|ef", []tuiKey{kc('u')}, "ab\n|ef", "cd"},
		{"ctrl+k then ctrl+y", "ab|cd", []tuiKey{kc('k'), kc('y'), kc('y')}, "abcdcd|", "cd"},
		{"alt+enter", "ab|", []tuiKey{km(keyEnter, modAlt)}, "ab\n|", ""},
		{"shift+enter", "ab|", []tuiKey{km(keyEnter, modShift)}, "ab\n|", ""},
		{"ctrl+j", "ab|cd", []tuiKey{kc('j')}, "ab\n|cd", ""},
		{"up keeps the column", "abc\nd|e", []tuiKey{kk(keyUp)}, "a|bc\nde", ""},
		{"down keeps the column", "a|bc\nde", []tuiKey{kk(keyDown)}, "abc\nd|e", ""},
		{"up to a shorter line", "a\nbcd|", []tuiKey{kk(keyUp)}, "a|\nbcd", ""},
		{"ctrl+p ctrl+n", "ab\ncd|", []tuiKey{kc('p'), kc('n')}, "ab\ncd|", ""},
		{"wide characters", "日本|語", []tuiKey{kk(keyLeft), kk(keyBackspace)}, "|本語", ""},
		{"combining marks move with their letter", "xe\u0301|", []tuiKey{kk(keyLeft)}, "x|e\u0301", ""},
		{"backspace removes a letter and its mark", "xe\u0301|", []tuiKey{kk(keyBackspace)}, "x|", ""},
		{"delete removes a letter and its mark", "x|e\u0301y", []tuiKey{kk(keyDelete)}, "x|y", ""},
		{"paste short", "a|b", []tuiKey{{code: keyPaste, text: "x\ty\r\nz\x1b[31m"}}, "ax\ty\nz[31m|b", ""},
	}
	for _, c := range cases {
		e := edFrom(c.before)
		for _, k := range c.keys {
			if !e.key(k, 80) {
				t.Errorf("%s: key %s not handled", c.name, k)
			}
		}
		if got := edState(e); got != c.after || string(e.kill) != c.kill {
			t.Errorf("%s: %q + keys = %q (kill %q), want %q (kill %q)", c.name, c.before, got, e.kill, c.after, c.kill)
		}
	}
}

func TestEditorUpDownMoveByScreenRows(t *testing.T) {
	t.Parallel()
	e := edFrom("abcdefghijkl|") // width 10: two columns of prompt, rows of 8
	e.key(kk(keyUp), 10)
	if got := edState(e); got != "abcd|efghijkl" {
		t.Errorf("up = %q", got)
	}
	e.key(kk(keyDown), 10)
	if got := edState(e); got != "abcdefghijkl|" {
		t.Errorf("down = %q", got)
	}
}

func TestEditorHistoryWalksAndKeepsTheDraft(t *testing.T) {
	t.Parallel()
	e := edFrom("draft|")
	e.hist = []string{"newest", "older"}
	steps := []struct {
		k    tuiKey
		want string
	}{
		{kk(keyUp), "newest|"}, {kk(keyUp), "older|"}, {kk(keyUp), "older|"},
		{kk(keyDown), "newest|"}, {kk(keyDown), "draft|"}, {kk(keyDown), "draft|"},
	}
	for i, s := range steps {
		e.key(s.k, 80)
		if got := edState(e); got != s.want {
			t.Fatalf("step %d: %q, want %q", i, got, s.want)
		}
	}
}

func TestEditorLongPasteShowsAPlaceholderAndIsSentWhole(t *testing.T) {
	t.Parallel()
	e := edFrom("see |")
	text := strings.Repeat("line\twith tab\n", 11) + "last"
	e.key(tuiKey{code: keyPaste, text: text}, 80)
	e.key(tuiKey{code: keyPaste, text: text}, 80)
	if got := e.text(); got != "see [pasted 12 lines][pasted 12 lines #2]" {
		t.Fatalf("text = %q", got)
	}
	if got := e.expanded(); got != "see "+text+text {
		t.Errorf("expanded = %q", got)
	}
	short := "one\ntwo"
	e = edFrom("|")
	e.key(tuiKey{code: keyPaste, text: short}, 80)
	if e.text() != short || len(e.pastes) != 0 {
		t.Errorf("short paste = %q", e.text())
	}
}

// A copied block of lines usually ends with a newline; the empty segment
// after it is not a line, so ten lines of it are not "over 10 lines".
func TestEditorPasteCountsLinesNotNewlines(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text   string
		folded string // the placeholder, or "" when inserted as text
	}{
		{strings.Repeat("x\n", 10), ""},
		{strings.Repeat("x\n", 9) + "x", ""},
		{strings.Repeat("x\n", 11), "[pasted 11 lines]"},
		{strings.Repeat("x\r\n", 11), "[pasted 11 lines]"},
		{strings.Repeat("x\n", 10) + "x", "[pasted 11 lines]"},
		{strings.Repeat("x\n", 10) + "\n", "[pasted 11 lines]"},
	}
	for _, c := range cases {
		e := edFrom("|")
		e.key(tuiKey{code: keyPaste, text: c.text}, 80)
		want := c.folded
		if want == "" {
			want = strings.ReplaceAll(c.text, "\r\n", "\n")
		}
		if got := e.text(); got != want {
			t.Errorf("paste %q shows as %q, want %q", c.text, got, want)
		}
	}
}

func TestEditorLayoutPlacesTheCursorAfterWideCharacters(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text       string
		width      int
		rows       int
		crow, ccol int
	}{
		{"日本語|", 20, 1, 0, 8},
		{"日本語日本語日本語日本語|", 20, 2, 1, 8},                     // 18 columns fit on a row: 9 wide characters
		{"abcdefghijklmnopqr|", 20, 2, 1, 2},               // the row is full: the cursor starts the next
		{"🎉e\u0301x|", 80, 1, 0, 6},                        // emoji 2, e+combining 1, x 1
		{strings.Repeat("日", 100) + "|", 200, 2, 1, 2 + 2}, // 99 on the first row of 198
		{"a\n日|", 80, 2, 1, 4},
	}
	for _, c := range cases {
		e := edFrom(c.text)
		rows, crow, ccol := e.layout(c.width)
		if len(rows) != c.rows || crow != c.crow || ccol != c.ccol {
			t.Errorf("layout(%q, %d) = %d rows, cursor %d,%d; want %d rows, cursor %d,%d", c.text, c.width, len(rows), crow, ccol, c.rows, c.crow, c.ccol)
		}
		out, _, _ := e.view(c.width, 0, "")
		for _, r := range out {
			if w := visibleWidth(r); w > c.width {
				t.Errorf("layout(%q, %d): row %q is %d wide", c.text, c.width, plain(r), w)
			}
		}
	}
}

// Width and cleaning.

func TestRuneWidth(t *testing.T) {
	t.Parallel()
	cases := map[rune]int{'a': 1, ' ': 1, 'é': 1, '\u0301': 0, '\u200d': 0, '\ufe0f': 0, '日': 2, 'ｱ': 1, 'Ａ': 2,
		'한': 2, '🎉': 2, '🚀': 2, '\x1b': 0, '\u0085': 0, '─': 1, '…': 1, '\u3000': 2, '\u1160': 0}
	for r, want := range cases {
		if got := runeWidth(r); got != want {
			t.Errorf("runeWidth(%U) = %d, want %d", r, got, want)
		}
	}
}

// TestDrawTextExpandsTabs: the renderer's text is sanitize's (see
// untrusted_test.go) with tabs made spaces to the next stop, measured in
// columns.
func TestDrawTextExpandsTabs(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"tab\there", "tab here"},
		{"a\tb", "a   b"},
		{"\t\n\t日\tx", "    \n    日  x"},
		{"\x1b[31m\tred\x1b[0m\t", "    red "},
		{"\x1b]0;t\x07\tx", "␛   x"},
	}
	for _, c := range cases {
		if got := drawText(c.in); got != c.want {
			t.Errorf("drawText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Wrapping.

func TestWrapAtWidthsWithWideCharacters(t *testing.T) {
	t.Parallel()
	text := "The quick brown fox 日本語のテキストを折り返す jumps over 🎉🚀 the lazy dog; e\u0301le\u0301ve " +
		strings.Repeat("supercalifragilistic", 12) + " 한국어 텍스트 end"
	for _, width := range []int{20, 80, 200} {
		cells := appendCells(nil, text, 0)
		rows, ends := wrapCells(cells, wrapSpec{width: width})
		var joined strings.Builder
		for i, r := range rows {
			if w := visibleWidth(r); w > width {
				t.Errorf("width %d: row %d %q is %d wide", width, i, plain(r), w)
			}
			joined.WriteString(plain(r))
		}
		if ends[len(ends)-1] != len(cells) {
			t.Errorf("width %d: rows end at cell %d of %d", width, ends[len(ends)-1], len(cells))
		}
		if strings.ReplaceAll(joined.String(), " ", "") != strings.ReplaceAll(text, " ", "") {
			t.Errorf("width %d: text changed by wrapping:\n%q", width, joined.String())
		}
		if width == 200 && len(rows) != 3 {
			t.Errorf("width 200: %d rows", len(rows))
		}
	}
	rows, _ := wrapCells(appendCells(nil, "日本語日本語日本語日本語", 0), wrapSpec{width: 20})
	if len(rows) != 2 || rows[0] != "日本語日本語日本語日" || rows[1] != "本語" {
		t.Errorf("wide split = %q", rows)
	}
	rows, _ = wrapCells(appendCells(nil, "aaaaaaaaaaaaaaaaaaa日", 0), wrapSpec{width: 20})
	if len(rows) != 2 || rows[1] != "日" {
		t.Errorf("a wide character that does not fit moved down: %q", rows)
	}
}

// TestWrapRowsAreStableAsTextGrows is what lets streamed text be committed:
// every row but the last stays the same when text is appended.
func TestWrapRowsAreStableAsTextGrows(t *testing.T) {
	t.Parallel()
	text := "Some **bold words** and `inline code` plus a [link](https://example.com/a/long/path_with_underscores) " +
		"and 日本語 wide text, snake_case_name, 2 * 3 * 4, and a very long unbroken token " + strings.Repeat("x", 70) + " done."
	for _, width := range []int{20, 37, 80} {
		var prev []string
		for n := 1; n <= len(text); n++ {
			if !utf8.RuneStart(text[n%len(text)]) && n < len(text) {
				continue
			}
			var st mdState
			m := parseMarkdownLine(nil, text[:n], &st, 0)
			rows, _ := wrapCells(m.cells, wrapSpec{width: width, first: m.first, cont: m.cont})
			for i := 0; i+1 < len(prev) && i < len(rows); i++ {
				if plain(rows[i]) != plain(prev[i]) {
					t.Fatalf("width %d: row %d changed from %q to %q after %q", width, i, plain(prev[i]), plain(rows[i]), text[:n])
				}
			}
			prev = rows
		}
	}
}

// Markdown.

func TestMarkdownLite(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"# Title", "[b,u]Title[/]"},
		{"## Sub **x**", "[b]Sub x[/]"},
		{"#hashtag", "#hashtag"},
		{"Some **bold** and *it* and _it_ and `code`.", "Some [b]bold[/] and [i]it[/] and [i]it[/] and [cyan]code[/]."},
		{"***both***", "[b,i]both[/]"},
		{"**unclosed bold", "[b]unclosed bold[/]"},
		{"snake_case_name and 2 * 3 * 4", "snake_case_name and 2 * 3 * 4"},
		{"`a*b*c` ``x ` y``", "[cyan]a*b*c[/] [cyan]x ` y[/]"},
		{"- item", "[cyan]• [/]item"},
		{"* star item", "[cyan]• [/]star item"},
		{"  - nested", "  [cyan]• [/]nested"},
		{"12. twelfth", "[cyan]12. [/]twelfth"},
		{"> quoted *text*", "[gray]│ [i]quoted text[/]"},
		{"> > nested", "[gray]│ │ [i]nested[/]"},
		{"---", "[dim]────────────────────────────────────────[/]"},
		{"see [the docs](https://x.y/a_b_c) now", "see [[u]the docs[dim]](https://x.y/a_b_c)[/] now"},
		{"[not a link]", "[not a link]"},
		{"evil \x1b]0;t\x07 \x1b[2J text", "evil ␛ ␛ text"},
		{"", ""},
	}
	for _, c := range cases {
		rows := renderMarkdown(c.in, 200, 0)
		if got := tagged(strings.Join(rows, "\n")); got != c.want {
			t.Errorf("markdown %q:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

func TestMarkdownCodeFence(t *testing.T) {
	t.Parallel()
	in := "Before\n```text\nfunc main() { x := a*b*c }\n# not a heading\n```\nAfter **bold**"
	want := []string{"Before", "[dim]```text[/]", "[cyan]func main() { x := a*b*c }[/]", "[cyan]# not a heading[/]", "[dim]```[/]", "After [b]bold[/]"}
	rows := renderMarkdown(in, 80, 0)
	if len(rows) != len(want) {
		t.Fatalf("rows = %q", rows)
	}
	for i := range want {
		if got := tagged(rows[i]); got != want[i] {
			t.Errorf("row %d = %s, want %s", i, got, want[i])
		}
	}
	// Code is broken anywhere, not between words, and keeps its spaces.
	rows = renderMarkdown("```\n"+strings.Repeat("ab ", 10)+"\n```", 10, 0)
	if plain(rows[1]) != "ab ab ab a" || plain(rows[2]) != "b ab ab ab" {
		t.Errorf("code rows = %q", rows)
	}
}

func TestMarkdownListsWrapWithAHangingIndent(t *testing.T) {
	t.Parallel()
	rows := renderMarkdown("- one two three four five six", 16, 0)
	got := []string{}
	for _, r := range rows {
		got = append(got, plain(r))
	}
	if strings.Join(got, "|") != "• one two three|  four five six" {
		t.Errorf("rows = %q", got)
	}
}

func FuzzMarkdownLine(f *testing.F) {
	for _, s := range []string{"# h", "**b** *i* `c`", "- x", "1. y", "> q", "```go", "[a](b)", "日本🎉e\u0301", "\x1b]0;x\x07\r\t", "***", "_a_b_"} {
		f.Add(s, 20, false)
		f.Add(s, 3, true)
	}
	f.Fuzz(func(t *testing.T, line string, width int, fence bool) {
		width = 1 + (width&0x7fff)%300
		st := mdState{}
		if fence {
			st.fence = "```"
		}
		m := parseMarkdownLine(nil, line, &st, 0)
		rows, ends := wrapCells(m.cells, wrapSpec{width: width, first: m.first, cont: m.cont, hard: m.hard})
		if len(rows) == 0 || len(rows) != len(ends) {
			t.Fatalf("%d rows, %d ends", len(rows), len(ends))
		}
		for _, r := range rows {
			if w := visibleWidth(r); w > max(width, 2) {
				t.Fatalf("row %q is %d wide at width %d", r, w, width)
			}
			for i := 0; i < len(r); i++ {
				if r[i] == 0x1b {
					n, silent := escapeLen(r[i:])
					if !silent {
						t.Fatalf("row %q has a non-SGR escape", r)
					}
					i += n - 1
					continue
				}
				if r[i] < 0x20 || r[i] == 0x7f {
					t.Fatalf("row %q has control %#x", r, r[i])
				}
			}
			if !utf8.ValidString(r) {
				t.Fatalf("row %q is not UTF-8", r)
			}
		}
	})
}

// The screen.

func TestScreenRedrawsOnlyChangedRows(t *testing.T) {
	t.Parallel()
	var sc screen
	v := newVT(t, 40, 10)
	v.Write(sc.frame(nil, []string{"alpha", "beta", "gamma"}, 2, 3))
	out := string(sc.frame(nil, []string{"alpha", "BETA", "gamma"}, 2, 3))
	v.Write([]byte(out))
	if strings.Count(out, "\x1b[K") != 1 || strings.Contains(out, "alpha") || strings.Contains(out, "gamma") || !strings.Contains(out, "BETA") {
		t.Errorf("redraw wrote %q", out)
	}
	if out := sc.frame(nil, []string{"alpha", "BETA", "gamma"}, 2, 3); out != nil {
		t.Errorf("an unchanged frame wrote %q", out)
	}
	// Committing the row that is already on screen costs nothing but the
	// cursor moves.
	out = string(sc.frame([]string{"alpha"}, []string{"BETA", "gamma"}, 1, 3))
	v.Write([]byte(out))
	if strings.Contains(out, "\x1b[K") {
		t.Errorf("commit of an identical row rewrote it: %q", out)
	}
	v.Write(sc.frame(nil, []string{"one"}, 0, 0))
	if got := strings.Join(v.all(), "|"); got != "alpha|one" {
		t.Errorf("screen = %q", got)
	}
	if v.x != 0 || v.y != 1 {
		t.Errorf("cursor at %d,%d", v.x, v.y)
	}
}

// TestScreenMatchesAModelUnderRandomFrames draws random commits and live
// regions through a terminal emulator, scrolling included: what it shows
// must always be the committed rows followed by the live region.
func TestScreenMatchesAModelUnderRandomFrames(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(1))
	words := []string{"a", "bb", "ccc", "日本", "🎉x", "", "──"}
	for trial := 0; trial < 200; trial++ {
		sc := screen{height: 8 * (trial % 2)} // odd trials insert lines
		v := newVT(t, 30, 8)
		var committed []string
		var live []string
		for step := 0; step < 40; step++ {
			var c []string
			for i := rng.Intn(3); i > 0; i-- {
				c = append(c, words[rng.Intn(len(words))]+words[rng.Intn(len(words))])
			}
			live = nil
			for i := 1 + rng.Intn(6); i > 0; i-- {
				live = append(live, "L"+words[rng.Intn(len(words))]+" "+words[rng.Intn(len(words))])
			}
			crow, ccol := rng.Intn(len(live)), rng.Intn(10)
			v.Write(sc.frame(c, live, crow, ccol))
			committed = append(committed, c...)
			var all []string
			for _, r := range append(append([]string(nil), committed...), live...) {
				all = append(all, strings.TrimRight(r, " "))
			}
			if got, want := v.String(), strings.Join(all, "\n"); got != want {
				t.Fatalf("trial %d step %d:\n got %q\nwant %q", trial, step, got, want)
			}
			top := len(v.screen()) - len(live)
			if v.y != top+crow || v.x != ccol {
				t.Fatalf("trial %d step %d: cursor at %d,%d, want %d,%d", trial, step, v.x, v.y, ccol, top+crow)
			}
		}
	}
}

// The TUI as a whole, driven by events and keys.

// TestStreamedTextMatchesTheWholeRendering streams markdown in uneven
// pieces and checks that what ends up in the scrollback is exactly the
// rendering of the whole text.
func TestStreamedTextMatchesTheWholeRendering(t *testing.T) {
	t.Parallel()
	text := "# Plan\n\nFirst we **read** the `main.go` file, then we change a very long line that has to wrap several times " +
		"across the width of this narrow terminal, 日本語も混ぜて, and [a link](https://example.com/x_y_z).\n\n" +
		"- one item that is long enough to wrap onto a second row\n- two\n\n```sh\ngo test ./... -run 'TestX' -count=1 -race -v\n```\nDone."
	for _, width := range []int{20, 33, 80} {
		tui, v := newTestTUI(t, width, 30)
		rng := rand.New(rand.NewSource(int64(width)))
		feed(tui, Event{Type: "assistant_start"})
		for rest := text; rest != ""; {
			n := min(1+rng.Intn(9), len(rest))
			for n < len(rest) && !utf8.RuneStart(rest[n]) {
				n++
			}
			feed(tui, Event{Type: "text_delta", Delta: rest[:n]})
			rest = rest[n:]
		}
		feed(tui, Event{Type: "assistant_message"})
		var want []string
		for _, r := range renderMarkdown(text, width, 0) {
			want = append(want, strings.TrimRight(plain(r), " "))
		}
		got := v.all()
		if len(got) < len(want) || strings.Join(got[:len(want)], "\n") != strings.Join(want, "\n") {
			t.Errorf("width %d:\n got:\n%s\nwant:\n%s", width, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestToolCallsShowASummaryAndTheFirstLines(t *testing.T) {
	t.Parallel()
	tui, v := newTestTUI(t, 80, 30)
	args, _ := json.Marshal(obj{"command": "go test ./...\necho second line"})
	feed(tui,
		Event{Type: "tool_use_start", ID: "t1", Name: "bash"},
		Event{Type: "tool_use_args", ID: "t1", Delta: string(args)},
		Event{Type: "assistant_message"},
		Event{Type: "tool_call", ID: "t1", Name: "bash", Args: args},
		Event{Type: "tool_progress", ID: "t1", Text: "running"})
	if s := v.String(); !strings.Contains(s, "bash  go test ./... …") || !strings.Contains(s, "│ running") {
		t.Errorf("live tool not shown:\n%s", s)
	}
	feed(tui, Event{Type: "tool_result", ID: "t1", Name: "bash", IsError: true,
		Content: []Block{TextBlock("l1\nl2\nl3\nl4\nl5\nl6\n[exit code 1]")}})
	s := v.String()
	for _, want := range []string{"✗ bash  go test ./... …", "… 3 earlier lines", "│ l4", "│ [exit code 1]"} {
		if !strings.Contains(s, want) {
			t.Errorf("lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "l3") || strings.Contains(s, "│ running") {
		t.Errorf("too much shown:\n%s", s)
	}
	for args, want := range map[string]string{
		`{"path":"a.go","offset":10,"limit":5}`:                   "a.go (from line 10, 5 lines)",
		`{"path":"b.txt","content":"x\ny\n"}`:                     "b.txt (2 lines)",
		`{"path":"c.go","edits":[{"oldText":"a","newText":"b"}]}`: "c.go (1 edit)",
	} {
		name := map[bool]string{true: "read", false: ""}[strings.Contains(args, "offset")]
		if name == "" {
			name = map[bool]string{true: "write", false: "edit"}[strings.Contains(args, "content")]
		}
		if got := toolSummary(name, json.RawMessage(args)); got != want {
			t.Errorf("toolSummary(%s, %s) = %q, want %q", name, args, got, want)
		}
	}
	if got := toolSummary("mcp__x", json.RawMessage(`{"b":2,"a":"s\u001b[2J"}`)); got != "a=s␛ b=2" {
		t.Errorf("generic summary = %q", got)
	}
}

func TestThinkingIsDimAndCollapses(t *testing.T) {
	t.Parallel()
	tui, v := newTestTUI(t, 60, 30)
	feed(tui, Event{Type: "assistant_start"}, Event{Type: "thinking_delta", Delta: "Let me consider the problem carefully.\nStep one."})
	if s := v.String(); !strings.Contains(s, "∴ thinking") || !strings.Contains(s, "Step one.") {
		t.Errorf("thinking not shown live:\n%s", s)
	}
	feed(tui, Event{Type: "text_delta", Delta: "Answer.\n"})
	s := v.String()
	if !strings.Contains(s, "∴ thought for") || !strings.Contains(s, "(8 words)") || strings.Contains(s, "Step one.") {
		t.Errorf("thinking not collapsed:\n%s", s)
	}
}

// TestHostileTextNeverReachesTheTerminal feeds escapes and control
// characters through every way text enters the TUI; the emulator fails the
// test on any escape the renderer would not write, and the screen must show
// placeholders.
func TestHostileTextNeverReachesTheTerminal(t *testing.T) {
	t.Parallel()
	hostile := "A\x1b]52;c;cHduZWQ=\x07B\x1b]0;TITLE\x07C\x1b[2J\x1b[HD\x1b[5A\x1b[31mE\x1b[0m rm -rf /\roverwrite\x1bPdcs\x1b\\F\u009b2JG\u202eH\a\x00I"
	want := "A␛B␛C␛␛D␛EX rm -rf /␍overwrite␛F␛G�H␇␀I"
	want = strings.Replace(want, "X", "", 1)
	tui, v := newTestTUI(t, 200, 40)
	args, _ := json.Marshal(obj{"command": hostile})
	feed(tui,
		Event{Type: "assistant_start"},
		Event{Type: "thinking_delta", Delta: hostile},
		Event{Type: "text_delta", Delta: hostile + "\n"},
		Event{Type: "tool_use_start", ID: "x", Name: "ba\x1b[2Jsh"},
		Event{Type: "assistant_message"},
		Event{Type: "tool_call", ID: "x", Name: "ba\x1b[2Jsh", Args: args},
		Event{Type: "tool_progress", ID: "x", Text: hostile},
		Event{Type: "tool_result", ID: "x", Name: "bash", Content: []Block{TextBlock(hostile)}},
		Event{Type: "error", Message: hostile},
		Event{Type: "user_message", Content: []Block{TextBlock("p")}},
		Event{Type: "user_message", Content: []Block{TextBlock(hostile)}},
		Event{Type: "compact_done", Summary: hostile})
	tui.note(tuiNote{Extension: "ev\x1b[2Jil", Level: "info", Message: hostile})
	tui.extCommandDone("cmd", tuiCommandResponse{Action: "display", Display: hostile, Error: hostile,
		Panel: &tuiPanel{ID: "p\x1b", Title: hostile, Lines: []string{hostile}, Footer: hostile}}, nil)
	tui.render()
	tui.extCommandDone("cmd", tuiCommandResponse{Action: "insert", Insert: hostile}, nil)
	tui.render()
	tui.logf(0, "%s", hostile)
	tui.commitPrompt(hostile, []string{hostile})
	tui.showTranscript([]Message{
		{Role: "user", Content: []Block{TextBlock(hostile)}},
		{Role: "assistant", Content: []Block{{Type: "thinking", Text: hostile}, TextBlock(hostile),
			{Type: "tool_call", ID: "c", Name: hostile, Args: json.RawMessage(`{"x":1}`)}}},
		{Role: "user", Content: []Block{{Type: "tool_result", CallID: "c", Content: []Block{TextBlock(hostile)}}}},
	})
	tui.Skills = func() (string, func(string) (string, error)) {
		return hostile, func(string) (string, error) { return hostile, nil }
	}
	tui.cmdSkills("")
	tui.cmdSkills("x")
	tui.dialogs = nil
	tui.render()
	tui.handle(msgConfirm{&confirmReq{ctx: context.Background(), call: ToolCall{Name: hostile, Args: args},
		asks: []GateNote{{By: hostile, Decision: "ask", Reason: hostile}}, reply: make(chan bool, 1)}})
	tui.render()
	s := v.String()
	if n := strings.Count(s, want); n < 10 {
		t.Errorf("the placeholders appear %d times:\n%s", n, s)
	}
	if strings.Contains(s, "TITLE") || strings.Contains(s, "cHduZWQ") {
		t.Errorf("sequence bodies should be dropped with their escape:\n%s", s)
	}
}

func TestStatusBarShowsModelContextCostAndState(t *testing.T) {
	t.Parallel()
	tui, _ := newTestTUI(t, 150, 30)
	tui.agent.SetMessages(nil, Usage{Input: 12000, Output: 3400, CostUSD: 0.0123})
	tui.cfg.ToolEnv.SetJail(true)
	tui.askTools = true
	row := plain(tui.statusRow(150))
	for _, want := range []string{"anthropic/claude-sonnet-4-5", "ctx 0%", "↑12.0k ↓3.4k", "$0.0123", "jail", "confirm tools"} {
		if !strings.Contains(row, want) {
			t.Errorf("status %q lacks %q", row, want)
		}
	}
	tui.run = &runState{id: 1, cancel: func() {}, start: time.Now()}
	tui.queue = []queuedPrompt{{display: "q"}}
	row = plain(tui.statusRow(150))
	if !strings.Contains(row, "1 queued") || !strings.Contains(row, "0s") {
		t.Errorf("busy status %q", row)
	}
	if w := visibleWidth(tui.statusRow(40)); w > 40 {
		t.Errorf("status is %d wide at 40", w)
	}
}

func TestLiveRegionNeverOutgrowsTheTerminal(t *testing.T) {
	t.Parallel()
	tui, _ := newTestTUI(t, 40, 10)
	tui.ed.set(strings.Repeat("long prompt text ", 40))
	for i := 0; i < 10; i++ {
		tui.note(tuiNote{Extension: "x", Message: "note"})
	}
	rows, crow, _ := tui.view()
	if len(rows) > 9 || crow < 0 || crow >= len(rows) {
		t.Errorf("%d rows, cursor row %d", len(rows), crow)
	}
}

func TestKeysDriveTheTUI(t *testing.T) {
	t.Parallel()
	tui, v := newTestTUI(t, 80, 24)
	tui.input([]byte("/mo"), false)
	tui.render()
	if it, ok := tui.pop.list.selected(); !ok || it.label != "model" {
		t.Fatalf("popup = %+v", tui.pop.list)
	}
	tui.input([]byte("\x1b"), true) // esc closes the popup, keeps the text
	if tui.pop.list != nil || tui.ed.text() != "/mo" {
		t.Fatalf("after esc: popup %v, text %q", tui.pop.list, tui.ed.text())
	}
	tui.input([]byte("\x15/jail\r"), false) // ctrl+u, then a command
	if !tui.cfg.ToolEnv.Jailed() {
		t.Errorf("/jail did not jail")
	}
	tui.input([]byte("/unjail\r"), false)
	if tui.cfg.ToolEnv.Jailed() {
		t.Errorf("/unjail did not unjail")
	}
	tui.input([]byte("/nosuch\r"), false)
	tui.render()
	if !strings.Contains(v.String(), "unknown command /nosuch") || tui.ed.text() != "/nosuch" {
		t.Errorf("unknown command:\n%s", v.String())
	}
	tui.input([]byte("\x03\x03"), false) // ctrl+c clears the editor, the next arms
	if !tui.ed.empty() || tui.quit {
		t.Fatalf("ctrl+c: text %q, quit %v", tui.ed.text(), tui.quit)
	}
	tui.input([]byte("x\x03\x03"), false)
	if tui.quit {
		t.Fatalf("one ctrl+c on an empty editor exited")
	}
	tui.input([]byte("\x03"), false)
	if !tui.quit {
		t.Fatalf("a second ctrl+c did not exit")
	}
	tui.quit = false
	tui.input([]byte("x\x04"), false) // ctrl+d with text: deletes forward
	if tui.quit {
		t.Fatalf("ctrl+d with text exited")
	}
	tui.input([]byte("\x15\x04"), false)
	if !tui.quit {
		t.Fatalf("ctrl+d on an empty editor did not exit")
	}
	tui.quit = false
	tui.input([]byte("kept\x0c"), false) // ctrl+l redraws from the top of the screen
	tui.render()
	if s := v.screen(); len(s) == 0 || !strings.HasPrefix(s[0], "──") || !strings.Contains(strings.Join(s, "\n"), "› kept") {
		t.Errorf("after ctrl+l: %q", s)
	}
}

func TestTabCompletesCommandsAndPaths(t *testing.T) {
	t.Parallel()
	tui, _ := newTestTUI(t, 80, 24)
	os.MkdirAll(filepath.Join(tui.cfg.Cwd, "src", "pkg"), 0o755)
	os.WriteFile(filepath.Join(tui.cfg.Cwd, "src", "main.go"), []byte("package main\n"), 0o644)
	os.WriteFile(filepath.Join(tui.cfg.Cwd, "src", "main_test.go"), nil, 0o644)
	tui.input([]byte("/ses\t"), false)
	if tui.ed.text() != "/sessions " {
		t.Errorf("command completion = %q", tui.ed.text())
	}
	tui.ed.reset()
	tui.input([]byte("look at @sr\t"), false)
	if tui.ed.text() != "look at @src/" {
		t.Fatalf("directory completion = %q", tui.ed.text())
	}
	tui.input([]byte("m\t"), false)
	if tui.ed.text() != "look at @src/main" || tui.pop.list == nil || len(tui.pop.list.items) != 2 {
		t.Fatalf("common prefix = %q, popup %+v", tui.ed.text(), tui.pop.list)
	}
	tui.input([]byte("\t"), false)
	if tui.ed.text() != "look at @src/main.go " {
		t.Errorf("chosen = %q", tui.ed.text())
	}
	b, desc, err := attachFile("src/main.go", tui.cfg.ToolEnv)
	if err != nil || !strings.Contains(b.Text, "package main") || desc != "@src/main.go (1 lines)" {
		t.Errorf("attach = %+v %q %v", b, desc, err)
	}
	if refs := atRefs("see @a.go, and @b/c.txt."); strings.Join(refs, " ") != "a.go b/c.txt" {
		t.Errorf("refs = %q", refs)
	}
	tui.cfg.ToolEnv.SetJail(true)
	if _, _, err := attachFile("/etc/hostname", tui.cfg.ToolEnv); err == nil {
		t.Errorf("the jail let an outside file be attached")
	}
}

func TestNoYoloGateAndConfirmDialog(t *testing.T) {
	t.Parallel()
	tui, _ := newTestTUI(t, 80, 24)
	tui.askTools = true
	call := ToolCall{ID: "1", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}
	ctx := context.Background()
	if r := tui.yoloGate(ctx, call); r.Verdict != GateAsk || r.Notes[0].By != "--no-yolo" {
		t.Fatalf("gate = %+v", r)
	}
	answer := func(letter string, asks []GateNote) bool {
		req := &confirmReq{ctx: ctx, call: call, asks: asks, reply: make(chan bool, 1)}
		tui.lastKeyAt = time.Time{} // not typing
		tui.handle(msgConfirm{req})
		tui.render()
		tui.input([]byte(letter), letter == "\x1b")
		if len(tui.dialogs) != 0 {
			t.Fatalf("dialog still open after %q", letter)
		}
		return <-req.reply
	}
	yolo := []GateNote{{By: "--no-yolo", Decision: "ask"}}
	if answer("n", yolo) || answer("\x1b", yolo) || !answer("y", yolo) {
		t.Errorf("n/esc/y answered wrong")
	}
	if r := tui.yoloGate(ctx, call); r.Verdict != GateAsk {
		t.Errorf("y approved more than one call")
	}
	if !answer("t", yolo) || tui.yoloGate(ctx, call).Verdict != GateAllow || tui.yoloGate(ctx, ToolCall{Name: "read"}).Verdict != GateAsk {
		t.Errorf("t did not approve exactly bash")
	}
	if !answer("a", yolo) || tui.yoloGate(ctx, ToolCall{Name: "read"}).Verdict != GateAllow {
		t.Errorf("a did not approve everything")
	}
	// Another gate's ask: yes or no only, with who asked and why.
	validator := []GateNote{{By: "validator:curl", Decision: "ask", Reason: "POST to production\nfix: curl -X GET https://api"}}
	req := &confirmReq{ctx: ctx, call: call, asks: validator, reply: make(chan bool, 1)}
	tui.lastKeyAt = time.Time{}
	tui.handle(msgConfirm{req})
	rows, _, _ := tui.view()
	view := plain(strings.Join(rows, "\n"))
	if !strings.Contains(view, "validator:curl asks: POST to production") || !strings.Contains(view, "fix: curl -X GET") || strings.Contains(view, "everything") {
		t.Errorf("dialog:\n%s", view)
	}
	tui.input([]byte("t"), false) // not an option here
	if len(tui.dialogs) != 1 {
		t.Fatalf("t answered a yes/no dialog")
	}
	tui.input([]byte("y"), false)
	if !<-req.reply {
		t.Errorf("y refused")
	}
	// A dialog that opens while the user types ignores the keys that follow
	// at once, except esc.
	req = &confirmReq{ctx: ctx, call: call, asks: yolo, reply: make(chan bool, 1)}
	tui.input([]byte("and y"), false)
	tui.handle(msgConfirm{req})
	tui.input([]byte("ay\r"), false)
	if len(tui.dialogs) != 1 {
		t.Fatalf("keys typed on answered the dialog")
	}
	tui.input([]byte("\x1b"), true)
	if len(tui.dialogs) != 0 || <-req.reply {
		t.Errorf("esc did not refuse at once")
	}
}

func TestExtensionNotesCommandsAndPanels(t *testing.T) {
	t.Parallel()
	tui, v := newTestTUI(t, 80, 24)
	fake := &fakeExt{resp: map[string]tuiCommandResponse{
		"hi":    {Action: "display", Display: "hello there"},
		"ins":   {Action: "insert", Insert: "inserted"},
		"bad":   {Action: "display", Display: "shown anyway", Error: "it broke"},
		"board": {Action: "noop", Panel: &tuiPanel{ID: "b", Title: "Board", Lines: []string{"one", "two"}}},
	}, keys: make(chan string, 10)}
	tui.Ext = fake
	tui.note(tuiNote{Extension: "e1", Level: "warn", Message: "careful"})
	tui.note(tuiNote{Extension: "e2", Level: "info", Message: "fyi"})
	tui.render()
	if s := v.String(); !strings.Contains(s, "[e1] careful") || !strings.Contains(s, "[e2] fyi") {
		t.Errorf("notes:\n%s", s)
	}
	tui.note(tuiNote{Extension: "e1", Clear: true})
	tui.render()
	if s := v.String(); strings.Contains(s, "careful") || !strings.Contains(s, "fyi") {
		t.Errorf("clear_notes:\n%s", s)
	}
	tui.input([]byte("/"), false)
	var labels []string
	for _, it := range tui.pop.list.items {
		labels = append(labels, it.label)
	}
	if got := strings.Join(labels[len(labels)-5:], " "); got != "extensions bad board hi ins" {
		t.Errorf("popup ends with %q", got)
	}
	tui.ed.reset()
	for _, cmd := range []string{"hi", "bad", "ins"} {
		tui.command(cmd, "")
		handleUntil(t, tui, isCmdDone)
	}
	tui.render()
	s := v.String()
	if !strings.Contains(s, "┃ hello there") || !strings.Contains(s, "/bad: it broke") || !strings.Contains(s, "┃ shown anyway") || tui.ed.text() != "inserted" {
		t.Errorf("responses:\n%s\neditor %q", s, tui.ed.text())
	}
	tui.command("board", "")
	handleUntil(t, tui, isCmdDone)
	tui.render()
	if s := v.String(); !strings.Contains(s, "Board") || !strings.Contains(s, "│ two") {
		t.Fatalf("panel:\n%s", s)
	}
	tui.input([]byte("x\x1b[A\x11\x1b[200~pasted\x1b[201~"), false)
	for _, want := range []string{"b rune x", "b up ", "b ctrl+q ", "b paste pasted"} {
		if got := <-fake.keys; got != want {
			t.Errorf("panel key %q, want %q", got, want)
		}
	}
	tui.Panel(tuiPanelUpdate{Kind: "render", Panel: tuiPanel{ID: "b", Title: "Board", Lines: []string{"updated"}}})
	tui.drain()
	tui.render()
	if !strings.Contains(v.String(), "│ updated") {
		t.Errorf("render not applied:\n%s", v.String())
	}
	tui.input([]byte("\x1b"), true)
	if len(tui.dialogs) != 0 || <-fake.keys != "close b" {
		t.Errorf("esc did not close the panel")
	}
	// Without a host, the features say so.
	tui.Ext = nil
	tui.command("reload-ext", "")
	tui.render()
	if !strings.Contains(v.String(), "no extension host") {
		t.Errorf("reload without a host:\n%s", v.String())
	}
}

// fakeExt is an extension host that answers from a table.
type fakeExt struct {
	resp map[string]tuiCommandResponse
	keys chan string
}

func (f *fakeExt) Commands() []tuiCommand {
	var out []tuiCommand
	for name := range f.resp {
		out = append(out, tuiCommand{Name: name, Extension: "fake"})
	}
	return append(out, tuiCommand{Name: "help", Extension: "fake"}) // shadowed by the built-in
}

func (f *fakeExt) InvokeCommand(ctx context.Context, name, args string) (tuiCommandResponse, error) {
	return f.resp[name], nil
}

func (f *fakeExt) PanelKey(id, key, text string) error {
	f.keys <- id + " " + key + " " + text
	return nil
}
func (f *fakeExt) ClosePanel(id string) error { f.keys <- "close " + id; return nil }
func (f *fakeExt) Reload(ctx context.Context) tuiReloadStats {
	return tuiReloadStats{Stopped: 1, Loaded: 1, Ready: 1}
}

// handleUntil handles the TUI's inbox, as the UI loop would, until a
// message of the kind ok accepts has been handled.
func handleUntil(t *testing.T, tui *TUI, ok func(any) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-tui.wake:
		case <-deadline:
			t.Fatal("timed out waiting for the TUI's inbox")
		}
		tui.inboxMu.Lock()
		msgs := tui.inbox
		tui.inbox = nil
		tui.inboxMu.Unlock()
		found := false
		for _, m := range msgs {
			tui.handle(m)
			found = found || ok(m)
		}
		if found {
			return
		}
	}
}

func isCmdDone(m any) bool { _, ok := m.(msgCmdDone); return ok }

func TestHistoryIsPerDirectoryFirstAndPrivate(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path := filepath.Join(home, "history")
	a, _, _ := loadHistory(path, "/a")
	b, _, _ := loadHistory(path, "/b")
	for _, p := range []struct {
		h    *promptHistory
		text string
	}{{a, "a1"}, {b, "b1"}, {a, "a2"}, {b, "b2"}, {a, "a2"}, {a, "multi\nline"}} {
		if err := p.h.add(p.text); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(path+".tmp", nil, 0o600)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("not json\n{\"cwd\":\"/a\"}\n")
	f.Close()
	_, list, err := loadHistory(path, "/a")
	if err != nil || strings.Join(list, ",") != "multi\nline,a2,a1,b2,b1" {
		t.Errorf("history for /a = %q, %v", list, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("history mode %o", st.Mode().Perm())
	}
}

func TestSaveAuthKeyAndConfig(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path := filepath.Join(home, "auth.json")
	os.WriteFile(path, []byte(`{"openai":{"api_key":"o","org":"x"},"other":{"api_key":"k"}}`), 0o644)
	if err := saveAuthKey(home, "anthropic", "sk-a"); err != nil {
		t.Fatal(err)
	}
	if err := saveAuthKey(home, "openai", "o2"); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %o", st.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	var got map[string]map[string]string
	json.Unmarshal(b, &got)
	if got["anthropic"]["api_key"] != "sk-a" || got["openai"]["api_key"] != "o2" || got["openai"]["org"] != "x" || got["other"]["api_key"] != "k" {
		t.Errorf("auth.json = %s", b)
	}
	if err := saveAuthKey(home, "anthropic", ""); err != nil {
		t.Fatal(err)
	}
	if a, err := loadAuth(home); err != nil || a["anthropic"].APIKey != "" || a["openai"].APIKey != "o2" {
		t.Errorf("after logout: %v %v", a, err)
	}
	os.WriteFile(path, []byte("{broken"), 0o600)
	if err := saveAuthKey(home, "anthropic", "k"); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("broken auth.json: %v", err)
	}
	if err := saveConfig(home, userConfig{Provider: "openai", Model: "gpt-5"}); err != nil {
		t.Fatal(err)
	}
	if c, err := loadConfig(home); err != nil || c.Provider != "openai" || c.Model != "gpt-5" {
		t.Errorf("config = %+v %v", c, err)
	}
}

// TestTUISurvivesRandomKeysEventsAndResizes throws random input at the
// whole TUI: keys (sequences and garbage), agent events and resizes. It must
// not panic, the emulator checks every byte written, and no escape sequence
// from the events' text (a clipboard write, a title, a CSI with a marker,
// their 8-bit forms) ever reaches the terminal, while the renderer's own
// escapes do.
func TestTUISurvivesRandomKeysEventsAndResizes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(7))
	tui, v := newTestTUI(t, 60, 20)
	tui.missingKey = "none in this test" // prompts are refused, not sent
	watch := &escapeWatch{t: t, out: v, forbidden: []string{"\x1b]52;", "\x1b]0;", "\x1b]2;", "\x1b[31337", "\x1b[?31337", "\u009b", "\u009d"}}
	tui.out = watch
	hostile := "clip\x1b]52;c;ZXZpbA==\x07 title\x1b]0;pwned\x1b\\ set\x1b]2;pwned\x07 csi\x1b[31337;1H\x1b[?31337h " +
		"c1\u009b31337J\u009d52;c;ZXZpbA==\x07 end"
	seqs := []string{"a", "日", "e\u0301", " ", "\r", "\x1b[A", "\x1b[B", "\x1b[C", "\x1b[D", "\t", "\x7f", "\x1b\x7f",
		"\x01", "\x05", "\x0b", "\x15", "\x17", "\x19", "\x1bb", "\x1bf", "\x1b\r", "\n", "/", "@", "/mo", "/help\r",
		"/jail\r", "/yolo off\r", "/login\r", "/sessions\r", "\x1b", "\x03", "\x1b[200~pasted\ntext\x1b[201~",
		"\x1b[200~" + strings.Repeat("l\n", 15) + "\x1b[201~", "\x1b]0;x\x07", "\xff", "\x1b[3~", "\x1b[1;5C"}
	text := "Some **bold** `code` and\n- a list item that wraps\n```\ncode\n```\n日本語 \x1b[2J \r\n" + hostile + "\n"
	args, _ := json.Marshal(map[string]string{"command": "ls " + hostile})
	for i := 0; i < 2000; i++ {
		switch r := rng.Intn(10); {
		case r < 5:
			tui.input([]byte(seqs[rng.Intn(len(seqs))]), rng.Intn(4) == 0)
		case r < 6:
			b := make([]byte, rng.Intn(8))
			rng.Read(b)
			tui.input(b, true)
		case r < 9:
			n := rng.Intn(len(text))
			events := []Event{
				{Type: "assistant_start"}, {Type: "text_delta", Delta: text[n:min(n+1+rng.Intn(6), len(text))]},
				{Type: "thinking_delta", Delta: "hmm " + text[:n]}, {Type: "tool_use_start", ID: "t", Name: "bash" + hostile},
				{Type: "tool_call", ID: "t", Name: "bash", Args: args},
				{Type: "tool_progress", ID: "t", Text: "line " + hostile}, {Type: "tool_result", ID: "t", Name: "bash", Content: []Block{TextBlock(text)}},
				{Type: "assistant_message"}, {Type: "error", Message: "boom " + hostile}, {Type: "turn_end", Stop: StopAborted},
			}
			feed(tui, events[rng.Intn(len(events))])
		default:
			tui.resize(10+rng.Intn(110), 5+rng.Intn(35))
			v.w, v.h = tui.width, tui.height
			v.grid, v.scroll, v.x, v.y = nil, nil, 0, 0
			for j := 0; j < v.h; j++ {
				v.grid = append(v.grid, v.blankRow())
			}
			tui.scr.live, tui.scr.row, tui.scr.col = nil, 0, 0
		}
		tui.quit = false
		tui.render()
		if len(tui.dialogs) > 2 {
			tui.dialogs = nil
		}
	}
	if watch.escapes == 0 {
		t.Fatal("the renderer wrote no escape sequence: the watch saw nothing it allows")
	}
}

// escapeWatch passes what the TUI writes to the terminal and fails the
// test when the output holds a forbidden string, even one split across
// writes; it counts the escapes it lets through.
type escapeWatch struct {
	t         *testing.T
	out       io.Writer
	forbidden []string
	tail      []byte // the end of the last write, for a string split across two
	escapes   int
	failed    bool
}

func (w *escapeWatch) Write(b []byte) (int, error) {
	w.escapes += bytes.Count(b, []byte("\x1b["))
	seen := append(w.tail, b...)
	for _, f := range w.forbidden {
		if i := bytes.Index(seen, []byte(f)); i >= 0 && !w.failed {
			w.failed = true
			w.t.Errorf("untrusted %q reached the terminal: …%q…", f, seen[max(i-40, 0):min(i+40, len(seen))])
		}
	}
	w.tail = append([]byte(nil), seen[max(len(seen)-16, 0):]...)
	return w.out.Write(b)
}
