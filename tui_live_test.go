package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The live region says what the agent waits for until the answer begins,
// and again for each turn after the tools ran; a running tool says which
// it is and for how long.
func TestLiveRegionSaysWhatTheAgentWaitsFor(t *testing.T) {
	t.Parallel()
	tui, v := newTestTUI(t, 80, 24)
	live := func() string {
		rows, _, _ := tui.view()
		return plain(strings.Join(rows, "\n"))
	}
	tui.beginRun(func(ctx context.Context, sink Sink) error { <-ctx.Done(); return ctx.Err() })
	defer tui.abort()
	tui.stream.waitSince = time.Now().Add(-3 * time.Second)
	if s := live(); !strings.Contains(s, "waiting for the model  3s") || strings.Index(s, "waiting") > strings.Index(s, "────") {
		t.Fatalf("no waiting line above the editor:\n%s", s)
	}
	run := tui.run.id
	ev := func(e Event) { tui.handle(msgEvent{run, e}); tui.render() }
	ev(Event{Type: "turn_start", Step: 1})
	ev(Event{Type: "assistant_start"})
	ev(Event{Type: "text_delta", Delta: "Let me look."})
	if s := live(); strings.Contains(s, "waiting") || !strings.Contains(s, "Let me look.") {
		t.Fatalf("the waiting line stayed after text arrived:\n%s", s)
	}
	args, _ := json.Marshal(obj{"command": "make test"})
	ev(Event{Type: "tool_use_start", ID: "t1", Name: "bash"})
	ev(Event{Type: "assistant_message"})
	ev(Event{Type: "tool_call", ID: "t1", Name: "bash", Args: args})
	tui.stream.tools[0].start = time.Now().Add(-75 * time.Second)
	if s := live(); !strings.Contains(s, "bash  make test  1m15s") || strings.Contains(s, "waiting") {
		t.Fatalf("the running tool is not shown with its time:\n%s", s)
	}
	ev(Event{Type: "tool_result", ID: "t1", Name: "bash", Content: []Block{TextBlock("ok")}})
	ev(Event{Type: "turn_end", Stop: StopToolUse})
	ev(Event{Type: "turn_start", Step: 2})
	if s := live(); !strings.Contains(s, "waiting for the model  0s") {
		t.Fatalf("the second turn does not say it waits:\n%s", s)
	}
	ev(Event{Type: "thinking_delta", Delta: "hmm"})
	if s := live(); strings.Contains(s, "waiting") || !strings.Contains(s, "∴ thinking") {
		t.Fatalf("thinking did not replace the waiting line:\n%s", s)
	}
	if strings.Contains(v.String(), "waiting for the model") && strings.Contains(strings.Join(v.scroll, "\n"), "waiting") {
		t.Errorf("the waiting line reached the scrollback:\n%s", v)
	}
}

// editResult runs the real edit tool on a file of n numbered lines.
func editResult(t *testing.T, tui *TUI, n int, edits ...obj) (json.RawMessage, ToolResult) {
	t.Helper()
	var file strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&file, "line %d\n", i)
	}
	os.WriteFile(filepath.Join(tui.cfg.Cwd, "a.go"), []byte(file.String()), 0o644)
	args, _ := json.Marshal(obj{"path": "a.go", "edits": edits})
	edit, _ := tui.agent.Tools.Lookup("edit")
	res := edit.Run(context.Background(), args, nil)
	if res.IsError {
		t.Fatalf("edit failed: %+v", res.Content)
	}
	return args, res
}

func plainRowsOf(rows []string) string {
	var out []string
	for _, r := range rows {
		out = append(out, strings.TrimRight(plain(r), " "))
	}
	return strings.Join(out, "\n")
}

// An edit shows each change with its line numbers and a line of context,
// runs apart marked with ⋮, the changed characters reversed.
func TestEditResultShowsNumberedChangesWithContext(t *testing.T) {
	t.Parallel()
	tui, _ := newTestTUI(t, 80, 30)
	args, res := editResult(t, tui, 20,
		obj{"oldText": "line 3\n", "newText": "line three\n"},
		obj{"oldText": "line 15\nline 16\n", "newText": "fifteen\n"})
	tui.commitToolResult("edit", toolSummary("edit", args), "", false, res.Content, 0)
	want := `✓ edit  a.go (2 edits)
  │  2   line 2
  │  3 - line 3
  │  3 + line three
  │  4   line 4
  │  ⋮
  │ 14   line 14
  │ 15 - line 15
  │ 16 - line 16
  │ 15 + fifteen
  │ 16   line 17`
	if got := plainRowsOf(tui.commit); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	rows := strings.Join(tui.commit, "\n")
	if !strings.Contains(tagged(rows), "[red]- line [rev,red]3") || !strings.Contains(tagged(rows), "[green]+ line [rev,green]three") {
		t.Errorf("the changed characters are not marked: %s", tagged(rows))
	}
	// Inside a hunk a line that starts like a file header is a change.
	d := parseDiff("--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,2 @@\n--- a comment\n+++ a counter\n kept")
	if len(d.hunks) != 1 || fmt.Sprint(d.hunks[0]) != "[{45 1 -- a comment} {43 1 ++ a counter} {32 2 kept}]" {
		t.Errorf("parseDiff = %v", d.hunks)
	}
	// The tool's note that it cut a long diff is text, not a line of it.
	cut := "@@ -1,1 +1,1 @@\n-a\n+b\n\n[… the diff is longer than 50.0 KiB and was cut here]"
	if got := plainRowsOf(parseDiff(cut).rows(80, 0, false)); got != "  │ 1 - a\n  │ 1 + b\n  [… the diff is longer than 50.0 KiB and was cut here]" {
		t.Errorf("a cut diff shows as:\n%s", got)
	}
}

// A diff longer than a screenful is folded run by run, so a second edit
// is never hidden behind a long first one; ctrl+o prints the last result
// whole.
func TestLongEditDiffFoldsFairlyAndCtrlOShowsItAll(t *testing.T) {
	t.Parallel()
	tui, _ := newTestTUI(t, 80, 20)
	var long, longNew strings.Builder
	for i := 10; i < 50; i++ {
		fmt.Fprintf(&long, "line %d\n", i)
		fmt.Fprintf(&longNew, "new %d\n", i)
	}
	args, res := editResult(t, tui, 200,
		obj{"oldText": long.String(), "newText": longNew.String()},
		obj{"oldText": "line 150\n", "newText": "one fifty\n"})
	tui.commitToolResult("edit", toolSummary("edit", args), "", false, res.Content, 0)
	got := plainRowsOf(tui.commit)
	if n := len(tui.commit); n > tui.screenful()+1 {
		t.Errorf("%d rows for a screenful of %d:\n%s", n, tui.screenful(), got)
	}
	for _, want := range []string{"│   9   line 9", "│  10 - line 10", "more lines (ctrl+o shows all)", "│ 150 - line 150", "│ 150 + one fifty", "│ 151   line 151"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	tui.commit = nil
	tui.input([]byte{0x0f}, false) // ctrl+o
	full := plainRowsOf(tui.commit)
	for i := 10; i < 50; i++ {
		if !strings.Contains(full, fmt.Sprintf("- line %d\n", i)) || !strings.Contains(full, fmt.Sprintf("+ new %d\n", i)) {
			t.Fatalf("ctrl+o lacks line %d:\n%s", i, full)
		}
	}
	if !strings.Contains(full, "in full") || strings.Contains(full, "more lines") {
		t.Errorf("ctrl+o output:\n%s", full)
	}

	// A command's result: its last lines, and ctrl+o for the rest.
	tui.commit = nil
	out := "the very start\n" + strings.Repeat("output line\n", 30) + "the very end"
	tui.commitToolResult("bash", "make", "", false, []Block{TextBlock(out)}, 0)
	if got := plainRowsOf(tui.commit); !strings.Contains(got, "… 28 earlier lines (ctrl+o shows all)") || !strings.Contains(got, "│ the very end") || strings.Contains(got, "the very start") {
		t.Errorf("bash preview:\n%s", got)
	}
	// Anything else: its first lines.
	tui.commit = nil
	tui.commitToolResult("read", "notes.txt", "", false, []Block{TextBlock(out)}, 1500*time.Millisecond)
	if got := plainRowsOf(tui.commit); !strings.Contains(got, "✓ read  notes.txt  1.5s") || !strings.Contains(got, "│ the very start") || !strings.Contains(got, "… 28 more lines (ctrl+o shows all)") || strings.Contains(got, "the very end") {
		t.Errorf("read preview:\n%s", got)
	}
	tui.commit = nil
	tui.key(ctrlKey('c')) // ctrl+o pressed anew starts from the last
	tui.key(ctrlKey('o'))
	if got := plainRowsOf(tui.commit); strings.Count(got, "output line") != 30 || !strings.Contains(got, "the very end") || !strings.Contains(got, "✓ read") {
		t.Errorf("ctrl+o after read:\n%s", got)
	}
}

func TestFairSharesKeepShortRunsAndSplitTheRest(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sizes  []int
		budget int
		want   string
	}{
		{[]int{3, 100}, 20, "[3 16]"},
		{[]int{40, 40}, 20, "[9 9]"},
		{[]int{1, 2, 50, 50}, 30, "[1 2 12 12]"},
		{[]int{50, 50, 50}, 3, "[2 2 2]"},
	} {
		sizes := append([]int(nil), c.sizes...)
		fairShares(sizes, c.budget)
		if fmt.Sprint(sizes) != c.want {
			t.Errorf("fairShares(%v, %d) = %v, want %s", c.sizes, c.budget, sizes, c.want)
		}
	}
}

// ctrl+c while the agent works stops it and nothing more, however often
// it is pressed, and so does one just after the run ended; on an idle
// editor it clears the text (ctrl+y brings it back); only on an idle,
// empty editor does it arm the exit, for ctrlCExitWindow.
func TestCtrlCDuringARunOnlyStops(t *testing.T) {
	t.Parallel()
	tui, _ := newTestTUI(t, 80, 24)
	tui.beginRun(func(ctx context.Context, sink Sink) error { <-ctx.Done(); return ctx.Err() })
	tui.input([]byte("\x03\x03\x03"), false)
	if tui.quit || !tui.run.aborted || !tui.exitArmedAt.IsZero() {
		t.Fatalf("ctrl+c during a run: quit %v, aborted %v, armed at %v", tui.quit, tui.run.aborted, tui.exitArmedAt)
	}
	handleUntil(t, tui, func(m any) bool { _, ok := m.(msgRunDone); return ok })
	if tui.run != nil {
		t.Fatal("the run did not end")
	}
	tui.input([]byte("\x03\x03"), false) // the mashing goes on as the run ends
	if tui.quit || tui.hint != "" {
		t.Fatalf("ctrl+c just after the run ended: quit %v, hint %q", tui.quit, tui.hint)
	}
	tui.stopGrace = time.Now() // the grace has passed
	tui.input([]byte("\x03"), false)
	if tui.quit || tui.hint != ctrlCExitHint {
		t.Fatalf("a ctrl+c after stopping: quit %v, hint %q", tui.quit, tui.hint)
	}
	tui.exitArmedAt = time.Now().Add(-ctrlCExitWindow) // the window has passed
	tui.expireExitHint()
	if tui.hint != "" {
		t.Errorf("the exit hint outlived its window: %q", tui.hint)
	}
	tui.input([]byte("\x03"), false)
	if tui.quit || tui.hint != ctrlCExitHint {
		t.Fatalf("a ctrl+c after the window: quit %v, hint %q", tui.quit, tui.hint)
	}
	tui.input([]byte("draft\x03"), false)
	if tui.quit || !tui.ed.empty() {
		t.Fatalf("ctrl+c on text: quit %v, text %q", tui.quit, tui.ed.text())
	}
	tui.input([]byte("\x19"), false) // ctrl+y
	if tui.ed.text() != "draft" {
		t.Errorf("ctrl+y after ctrl+c gives %q", tui.ed.text())
	}
	tui.input([]byte("\x03\x03"), false)
	if tui.quit {
		t.Fatal("ctrl+c on text, then once on the empty editor, exited")
	}
	tui.input([]byte("\x03"), false)
	if !tui.quit {
		t.Fatal("two ctrl+c on an idle, empty editor did not exit")
	}
}

// A short paste keeps its tabs: they are sent as typed and shown as
// spaces to the next tab stop, with the cursor where the text ends.
func TestPastedTabsAreKeptAndShownExpanded(t *testing.T) {
	t.Parallel()
	tui, _ := newTestTUI(t, 40, 24)
	code := "func f() {\n\treturn 1\n}\nall:\n\tgo\tbuild"
	tui.input([]byte(pasteStart+code+pasteEnd), false)
	if got := tui.ed.expanded(); got != code {
		t.Fatalf("sent %q, want %q", got, code)
	}
	rows, crow, ccol := tui.ed.view(40, 10, "")
	text := plainRowsOf(rows)
	if text != "› func f() {\n      return 1\n  }\n  all:\n      go  build" {
		t.Errorf("shown as:\n%s", text)
	}
	if crow != 4 || ccol != 2+4+2+2+5 {
		t.Errorf("cursor at %d,%d", crow, ccol)
	}
	tui.input([]byte("\x1b[D\x1b[D\x1b[D\x1b[D\x1b[D\x1b[D"), false) // left to the tab before "build"
	if _, crow, ccol = tui.ed.view(40, 10, ""); crow != 4 || ccol != 2+6 {
		t.Errorf("cursor on the second tab at %d,%d, want 4,8", crow, ccol)
	}
	tui.input([]byte("\x1b[A"), false) // up: the column is kept over the tabs
	if tui.ed.cur != strings.Index(code, "all:")+4 {
		t.Errorf("up from the tab went to %d", tui.ed.cur)
	}
}

// The editor wraps between words; a word wider than the row breaks where
// the row ends. Row by row the cursor is where its character is drawn.
func TestEditorWrapsBetweenWords(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text  string
		width int
		rows  string
	}{
		{"the quick brown fox jumps", 12, "the quick |brown fox |jumps"},
		{"hello world", 7, "hello |world"},
		{"hello world", 8, "hello |world"},
		{"abcdefghijklmnop qr", 8, "abcdef|ghijkl|mnop |qr"},
		{"日本語 のテキスト", 10, "日本語 |のテキス|ト"},
		{"a  b", 3, "a | |b"},
	}
	for _, c := range cases {
		e := edFrom("|" + c.text)
		rows, _, _ := e.layout(c.width)
		var parts []string
		for _, r := range rows {
			parts = append(parts, string(e.buf[r.start:r.end]))
		}
		if got := strings.Join(parts, "|"); got != c.rows {
			t.Errorf("layout(%q, %d) = %q, want %q", c.text, c.width, got, c.rows)
		}
	}
}

// For random text at random widths: rows are never wider than the
// terminal, cover the text exactly, split a word only when it is wider
// than a row, and the cursor sits on the column its character is drawn at.
func TestEditorLayoutHoldsForRandomText(t *testing.T) {
	t.Parallel()
	words := []string{"a", "word", "longerword", "日本", "e\u0301", "\t", " ", "  ", "\n", strings.Repeat("x", 30), "🎉"}
	rng := rand.New(rand.NewSource(3))
	for trial := 0; trial < 300; trial++ {
		var b strings.Builder
		for i := rng.Intn(20); i > 0; i-- {
			b.WriteString(words[rng.Intn(len(words))])
		}
		text := b.String()
		width := 4 + rng.Intn(30)
		e := edFrom(text + "|")
		for cur := 0; cur <= len(e.buf); cur++ {
			if cur < len(e.buf) && runeWidth(e.buf[cur]) == 0 && e.buf[cur] != '\n' && e.buf[cur] != '\t' {
				continue // inside a character
			}
			e.cur = cur
			rows, crow, ccol := e.layout(width)
			drawn, _, _ := e.view(width, 0, "")
			var covered []rune
			for i, r := range rows {
				if i > 0 && r.start != rows[i-1].end && !(r.start == rows[i-1].end+1 && e.buf[rows[i-1].end] == '\n') && r.start != r.end {
					t.Fatalf("%q at %d: rows %v do not follow each other", text, width, rows)
				}
				covered = append(covered, e.buf[r.start:r.end]...)
				if w := visibleWidth(drawn[i]); w > width {
					t.Fatalf("%q at %d: row %q is %d wide", text, width, plain(drawn[i]), w)
				}
				// A row that ends inside a word is full: the word did not fit.
				if r.end < len(e.buf) && r.end > r.start && !isBlank(e.buf[r.end-1]) && !isBlank(e.buf[r.end]) && e.buf[r.end] != '\n' {
					if ws := wordAt(e.buf, r.end); e.cols(r.start, r.end)+runeWidth(e.buf[r.end]) <= width-editorIndent && ws > r.start {
						t.Fatalf("%q at %d: row %d breaks a word that fits: %q", text, width, i, string(e.buf[r.start:r.end]))
					}
				}
			}
			if strings.ReplaceAll(string(covered), "\n", "") != strings.ReplaceAll(text, "\n", "") {
				t.Fatalf("%q at %d: rows cover %q", text, width, string(covered))
			}
			if cur < len(e.buf) && !isBlank(e.buf[cur]) && e.buf[cur] != '\n' {
				if got := runeAtColumn(plain(drawn[crow]), ccol); got != e.buf[cur] {
					t.Fatalf("%q at %d, cursor %d: column %d of row %q holds %q, want %q", text, width, cur, ccol, plain(drawn[crow]), got, e.buf[cur])
				}
			}
		}
	}
}

// wordAt is where the word around i starts.
func wordAt(buf []rune, i int) int {
	for i > 0 && !isBlank(buf[i-1]) && buf[i-1] != '\n' {
		i--
	}
	return i
}

// runeAtColumn is the character drawn at column col of a plain row.
func runeAtColumn(row string, col int) rune {
	c := 0
	for _, r := range row {
		if c == col && runeWidth(r) > 0 {
			return r
		}
		c += runeWidth(r)
		if c > col {
			break
		}
	}
	return utf8.RuneError
}

// Dialog boxes have both edges at every width, and what they hold stays
// between them.
func TestDialogBoxesHaveBothEdgesAtEveryWidth(t *testing.T) {
	t.Parallel()
	for width := 8; width <= 90; width++ {
		tui, _ := newTestTUI(t, width, 24)
		tui.pushDialog(&pickerDialog{title: "choose a model (or type /model ollama/NAME)",
			items: []string{"• anthropic/claude-sonnet-4-5  200k context · $3/$15 per Mtok", "x"}, pick: func(*TUI, int) {}})
		args, _ := json.Marshal(obj{"command": "echo " + strings.Repeat("word ", 30)})
		req := &confirmReq{ctx: context.Background(), call: ToolCall{Name: "bash", Args: args},
			asks: []GateNote{{By: "guard", Decision: "ask", Reason: "it looks risky"}}, reply: make(chan bool, 1)}
		for _, d := range []dialog{tui.dialogs[0], &confirmDialog{req: req}, &panelDialog{p: tuiPanel{ID: "p", Title: "Board", Lines: []string{strings.Repeat("cell ", 30)}}},
			&secretDialog{title: "API key for anthropic (typing is not shown)"}} {
			rows, _, _ := d.view(tui, width)
			for i, r := range rows {
				p := plain(r)
				if w := visibleWidth(r); w != width {
					t.Fatalf("width %d, %T row %d is %d wide: %q", width, d, i, w, p)
				}
				first, last := []rune(p)[0], []rune(p)[len([]rune(p))-1]
				want := [2]rune{'│', '│'}
				switch i {
				case 0:
					want = [2]rune{'┌', '┐'}
				case len(rows) - 1:
					want = [2]rune{'└', '┘'}
				}
				if first != want[0] || last != want[1] {
					t.Fatalf("width %d, %T row %d lacks its edges: %q", width, d, i, p)
				}
			}
		}
	}
}

// /help sizes its key column to the keys and the terminal, and names
// shift+enter and ctrl+o.
func TestHelpColumnsFitTheKeysAndTheTerminal(t *testing.T) {
	t.Parallel()
	for _, width := range []int{40, 80, 160} {
		tui, _ := newTestTUI(t, width, 24)
		tui.cmdHelp("")
		text := plainRowsOf(tui.commit)
		words := strings.Join(strings.Fields(text), " ")
		for _, want := range []string{"shift+enter", "ctrl+o show the last folded tool result in full (again: the one before)", "/model [provider/]ID"} {
			if !strings.Contains(words, want) {
				t.Errorf("width %d: /help lacks %q:\n%s", width, want, text)
			}
		}
		descCol := -1
		for _, r := range tui.commit {
			if w := visibleWidth(r); w > width {
				t.Errorf("width %d: row %q is %d wide", width, plain(r), w)
			}
			p := plain(r)
			if strings.HasPrefix(p, "  esc ") {
				descCol = stringWidth(p) - stringWidth(strings.TrimLeft(p[len("  esc"):], " "))
			}
		}
		// Every description starts in one column, after the widest key
		// that fits beside it.
		for _, r := range tui.commit {
			p := plain(r)
			if strings.HasPrefix(p, "  ctrl+l ") && stringWidth(p)-stringWidth(strings.TrimLeft(p[len("  ctrl+l"):], " ")) != descCol {
				t.Errorf("width %d: descriptions do not line up:\n%s", width, text)
			}
		}
		if width == 160 && descCol != 2+len(`shift+enter, alt+enter, ctrl+j, \ at the end`)+2 {
			t.Errorf("width 160: the key column is not sized to the widest key (%d):\n%s", descCol, text)
		}
	}
}
