package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The line editor: a rune buffer with a cursor, emacs-style bindings, a
// kill buffer, prompt history and pasted blocks. It knows nothing of the
// agent; the TUI decides what enter, tab, esc and ctrl+c mean before a key
// reaches it.

// editor is the prompt being typed.
type editor struct {
	buf  []rune
	cur  int
	kill []rune
	// pastes maps the placeholder a long paste shows as to the text sent.
	pastes map[string]string

	hist   []string // history, in the order up walks it
	histAt int      // index in hist being shown; -1: the draft
	draft  []rune
}

// pasteFoldLines is the size above which a paste shows as a placeholder.
const pasteFoldLines = 10

func (e *editor) text() string { return string(e.buf) }

func (e *editor) empty() bool { return len(e.buf) == 0 }

// set replaces the text and puts the cursor at its end.
func (e *editor) set(s string) {
	e.buf = []rune(s)
	e.cur = len(e.buf)
}

// clear empties the editor for ctrl+c; what it held goes to the kill
// buffer, so ctrl+y brings it back.
func (e *editor) clear() {
	e.kill = []rune(e.expanded())
	e.reset()
}

// reset clears the editor after a submit; the kill buffer stays.
func (e *editor) reset() {
	e.buf, e.cur, e.pastes, e.histAt, e.draft = nil, 0, nil, -1, nil
}

// expanded is the text to send: placeholders of pastes replaced by what
// was pasted.
func (e *editor) expanded() string {
	if len(e.pastes) == 0 {
		return string(e.buf)
	}
	var pairs []string
	for ph, text := range e.pastes {
		pairs = append(pairs, ph, text)
	}
	// One pass: pasted text that looks like a placeholder stays as it is.
	return strings.NewReplacer(pairs...).Replace(string(e.buf))
}

func (e *editor) insert(rs []rune) {
	e.buf = append(e.buf[:e.cur], append(append([]rune(nil), rs...), e.buf[e.cur:]...)...)
	e.cur += len(rs)
}

func (e *editor) insertText(s string) { e.insert([]rune(s)) }

// paste inserts pasted text: cleaned of control characters, and folded to
// a placeholder when it is long. The placeholder expands on submit.
func (e *editor) paste(s string) {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := textLines(s)
	if lines > pasteFoldLines {
		ph := fmt.Sprintf("[pasted %d lines]", lines)
		for n := 2; e.pastes[ph] != "" || strings.Contains(string(e.buf), ph); n++ {
			ph = fmt.Sprintf("[pasted %d lines #%d]", lines, n)
		}
		if e.pastes == nil {
			e.pastes = map[string]string{}
		}
		e.pastes[ph] = s
		e.insertText(ph)
		return
	}
	e.insertText(editorClean(s))
}

// textLines counts the lines of s as an editor shows them: a final newline
// ends the last line rather than starting another.
func textLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// editorClean keeps what the editor can hold: no control characters but
// newlines and tabs (pasted Go or a Makefile needs its tabs; the editor
// shows them as spaces to the next tab stop).
func editorClean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r < 0x20 || (r >= 0x7f && r < 0xa0) || isBidiControl(r):
			return -1
		}
		return r
	}, s)
}

// key applies an editing key for an editor width columns wide (up and down
// move by screen rows). It reports whether the key was one of its own.
func (e *editor) key(k tuiKey, width int) bool {
	ctrl, alt := k.mod&modCtrl != 0, k.mod&modAlt != 0
	switch k.code {
	case keyRune:
		switch {
		case ctrl && !alt:
			return e.ctrlKey(k.r, width)
		case alt && !ctrl:
			return e.altKey(k.r)
		case !ctrl && !alt:
			e.insert([]rune{k.r})
			return true
		}
		return false
	case keyEnter:
		if alt || k.mod&modShift != 0 {
			e.insert([]rune{'\n'})
			return true
		}
		return false
	case keyPaste:
		e.paste(k.text)
	case keyLeft:
		if ctrl || alt {
			e.cur = e.wordStart(e.cur)
		} else {
			e.cur = e.prevCluster(e.cur)
		}
	case keyRight:
		if ctrl || alt {
			e.cur = e.wordEnd(e.cur)
		} else {
			e.cur = e.nextCluster(e.cur)
		}
	case keyHome:
		e.cur = e.lineStart(e.cur)
	case keyEnd:
		e.cur = e.lineEnd(e.cur)
	case keyUp:
		e.vertical(-1, width)
	case keyDown:
		e.vertical(1, width)
	case keyBackspace:
		if alt || ctrl {
			e.killRange(e.wordStart(e.cur), e.cur)
		} else if e.cur > 0 {
			e.delete(e.prevCluster(e.cur), e.cur)
		}
	case keyDelete:
		e.delete(e.cur, e.nextCluster(e.cur))
	default:
		return false
	}
	return true
}

func (e *editor) ctrlKey(r rune, width int) bool {
	switch r {
	case 'a':
		e.cur = e.lineStart(e.cur)
	case 'e':
		e.cur = e.lineEnd(e.cur)
	case 'b':
		e.cur = e.prevCluster(e.cur)
	case 'f':
		e.cur = e.nextCluster(e.cur)
	case 'd':
		e.delete(e.cur, e.nextCluster(e.cur))
	case 'h':
		if e.cur > 0 {
			e.delete(e.prevCluster(e.cur), e.cur)
		}
	case 'j':
		e.insert([]rune{'\n'})
	case 'k':
		end := e.lineEnd(e.cur)
		if end == e.cur && end < len(e.buf) {
			end++ // at the end of a line: join the next one
		}
		e.killRange(e.cur, end)
	case 'u':
		start := e.lineStart(e.cur)
		if start == e.cur && start > 0 {
			start-- // at the start of a line: join the previous one
		}
		e.killRange(start, e.cur)
	case 'w':
		start := e.cur
		for start > 0 && unicode.IsSpace(e.buf[start-1]) {
			start--
		}
		for start > 0 && !unicode.IsSpace(e.buf[start-1]) {
			start--
		}
		e.killRange(start, e.cur)
	case 'y':
		e.insert(e.kill)
	case 'p':
		e.vertical(-1, width)
	case 'n':
		e.vertical(1, width)
	default:
		return false
	}
	return true
}

func (e *editor) altKey(r rune) bool {
	switch r {
	case 'b':
		e.cur = e.wordStart(e.cur)
	case 'f':
		e.cur = e.wordEnd(e.cur)
	case 'd':
		e.killRange(e.cur, e.wordEnd(e.cur))
	default:
		return false
	}
	return true
}

func (e *editor) delete(from, to int) {
	if from < to {
		e.buf = append(e.buf[:from], e.buf[to:]...)
		e.cur = from
	}
}

func (e *editor) killRange(from, to int) {
	if from < to {
		e.kill = append([]rune(nil), e.buf[from:to]...)
		e.delete(from, to)
	}
}

// prevCluster and nextCluster step over a rune and the zero-width runes
// that combine with it, so the cursor never sits inside a character.
func (e *editor) prevCluster(i int) int {
	for i > 0 {
		i--
		if startsCluster(e.buf[i]) {
			break
		}
	}
	return i
}

func (e *editor) nextCluster(i int) int {
	if i >= len(e.buf) {
		return len(e.buf)
	}
	i++
	for i < len(e.buf) && !startsCluster(e.buf[i]) {
		i++
	}
	return i
}

// startsCluster reports whether r is a character of its own rather than
// one that joins the character before it.
func startsCluster(r rune) bool { return runeWidth(r) != 0 || r == '\n' || r == '\t' }

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

func (e *editor) wordStart(i int) int {
	for i > 0 && !isWord(e.buf[i-1]) {
		i--
	}
	for i > 0 && isWord(e.buf[i-1]) {
		i--
	}
	return i
}

func (e *editor) wordEnd(i int) int {
	for i < len(e.buf) && !isWord(e.buf[i]) {
		i++
	}
	for i < len(e.buf) && isWord(e.buf[i]) {
		i++
	}
	return i
}

func (e *editor) lineStart(i int) int {
	for i > 0 && e.buf[i-1] != '\n' {
		i--
	}
	return i
}

func (e *editor) lineEnd(i int) int {
	for i < len(e.buf) && e.buf[i] != '\n' {
		i++
	}
	return i
}

// vertical moves the cursor a screen row up or down, keeping its column;
// past the first or last row it walks the history instead.
func (e *editor) vertical(dir, width int) {
	if width <= 0 {
		width = 1 << 20
	}
	rows, crow, ccol := e.layout(width)
	target := crow + dir
	if target < 0 || target >= len(rows) {
		e.walkHistory(dir)
		return
	}
	r := rows[target]
	col, i := 0, r.start
	for i < r.end {
		w := editorRuneWidth(e.buf[i], col)
		if col+w > ccol-r.indent {
			break
		}
		col += w
		i = e.nextCluster(i)
	}
	if i >= r.end && r.end < len(e.buf) && e.buf[r.end] != '\n' && r.end > r.start {
		i = e.prevCluster(r.end) // stay on a wrapped row rather than slip to the next
	}
	e.cur = min(i, r.end)
}

func (e *editor) walkHistory(dir int) {
	next := e.histAt - dir
	if next < -1 || next >= len(e.hist) {
		return
	}
	if e.histAt == -1 {
		e.draft = append([]rune(nil), e.buf...)
	}
	e.histAt = next
	if next == -1 {
		e.buf = append([]rune(nil), e.draft...)
	} else {
		e.buf = []rune(e.hist[next])
	}
	e.cur = len(e.buf)
}

// editorRow is one screen row of the editor: runes [start, end) of the
// buffer, drawn after indent columns of prompt or padding.
type editorRow struct {
	start, end int
	indent     int
}

const (
	editorPrompt = "› "
	editorIndent = 2
)

// editorRuneWidth is the columns r takes at column col of a row: a tab
// reaches the next tab stop, as the transcript draws it.
func editorRuneWidth(r rune, col int) int {
	if r == '\t' {
		return tabWidth - col%tabWidth
	}
	return runeWidth(r)
}

func isBlank(r rune) bool { return r == ' ' || r == '\t' }

// layout breaks the text into screen rows of the given width and finds the
// cursor's row and column. A row breaks after the last blank that fits, so
// words stay whole; a word wider than the row breaks where the row ends,
// and a wide character is never split. A blank that meets the edge hangs
// past it, undrawn, so the next row starts with the next word. A cursor
// after a full row goes to the start of an extra row.
func (e *editor) layout(width int) (rows []editorRow, crow, ccol int) {
	avail := max(width-editorIndent, 1)
	for start := 0; ; {
		end := e.lineEnd(start)
		rows = e.wrapLine(rows, start, end, avail)
		if end >= len(e.buf) {
			break
		}
		start = end + 1
	}
	for k, r := range rows {
		atLineEnd := r.end >= len(e.buf) || e.buf[r.end] == '\n'
		if e.cur < r.start || e.cur > r.end || (e.cur == r.end && !atLineEnd) {
			continue
		}
		col := e.cols(r.start, e.cur)
		switch {
		case e.cur == r.end && col >= avail && r.end > r.start:
			rows = append(rows[:k+1], append([]editorRow{{e.cur, e.cur, editorIndent}}, rows[k+1:]...)...)
			return rows, k + 1, editorIndent
		case col >= avail: // on a blank hanging past the edge
			col = avail - 1
		}
		return rows, k, editorIndent + col
	}
	return rows, 0, editorIndent
}

// wrapLine appends the rows of the line buf[start:end].
func (e *editor) wrapLine(rows []editorRow, start, end, avail int) []editorRow {
	rowStart, col, brk := start, 0, -1 // brk: where the row may break, after a blank
	for i := start; i < end; i++ {
		w := editorRuneWidth(e.buf[i], col)
		for col+w > avail && i > rowStart && w > 0 {
			switch {
			case isBlank(e.buf[i]):
				rows = append(rows, editorRow{rowStart, i + 1, editorIndent})
				rowStart, col, brk = i+1, 0, -1
				w = -1 // taken: it hangs at the end of the row
			case brk > rowStart:
				rows = append(rows, editorRow{rowStart, brk, editorIndent})
				rowStart, col, brk = brk, e.cols(brk, i), -1
				w = editorRuneWidth(e.buf[i], col)
			default:
				rows = append(rows, editorRow{rowStart, i, editorIndent})
				rowStart, col, brk = i, 0, -1
				w = editorRuneWidth(e.buf[i], col)
			}
		}
		if w < 0 {
			continue
		}
		col += w
		if isBlank(e.buf[i]) {
			brk = i + 1
		}
	}
	return append(rows, editorRow{rowStart, end, editorIndent})
}

// cols is the width of buf[from:to], which lie on one row starting at from.
func (e *editor) cols(from, to int) int {
	col := 0
	for i := from; i < to; i++ {
		col += editorRuneWidth(e.buf[i], col)
	}
	return col
}

// rowCells draws one row: tabs as spaces, nothing past avail columns (a
// blank that hangs there).
func (e *editor) rowCells(dst []cell, r editorRow, avail int) []cell {
	text := string(e.buf[r.start:r.end])
	col := 0
	for i, c := range text {
		w := editorRuneWidth(c, col)
		if col+w > avail {
			break
		}
		if c == '\t' {
			for range w {
				dst = append(dst, cell{s: " ", w: 1})
			}
		} else {
			dst = appendCells(dst, text[i:i+utf8.RuneLen(c)], 0)
		}
		col += w
	}
	return dst
}

// view renders the editor: at most maxRows rows, scrolled to keep the
// cursor in sight, with the cursor's row and column among them.
func (e *editor) view(width, maxRows int, placeholder string) (out []string, crow, ccol int) {
	rows, crow, ccol := e.layout(width)
	first := 0
	if maxRows > 0 && len(rows) > maxRows {
		first = min(max(crow-maxRows/2, 0), len(rows)-maxRows)
		rows = rows[first : first+maxRows]
	}
	var cells []cell
	for _, r := range rows {
		prefix := span{"  ", 0}
		if r.start == 0 {
			prefix = span{editorPrompt, fgCyan | sBold}
		}
		if len(e.buf) == 0 && placeholder != "" {
			out = append(out, fitLine(width, prefix, span{placeholder, sDim}))
			continue
		}
		cells = e.rowCells(cells[:0], r, max(width-editorIndent, 1))
		out = append(out, string(renderRow(nil, []span{prefix}, cells)))
	}
	return out, crow - first, ccol
}

// History.

// promptHistory is $ZOT_HOME/history: one JSON line per prompt sent, with the
// directory it was sent in. Up walks this directory's prompts first, newest
// first, then those of other directories.
type promptHistory struct {
	path string
	cwd  string
	last string
}

// historyRow is one line of the history file.
type historyRow struct {
	Time time.Time `json:"time"`
	Cwd  string    `json:"cwd"`
	Text string    `json:"text"`
}

const (
	historyReadLimit = 4 << 20 // bytes read from the end of the file
	historyKeep      = 1000    // entries offered per list
	historyMaxText   = 64 << 10
)

// loadHistory reads the history for cwd. A missing file is an empty
// history; unreadable lines are skipped. A history with no path is off.
func loadHistory(path, cwd string) (*promptHistory, []string, error) {
	h := &promptHistory{path: path, cwd: cwd}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return h, nil, nil
	}
	if err != nil {
		return h, nil, fmt.Errorf("read history %s: %w", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > historyReadLimit {
		f.Seek(st.Size()-historyReadLimit, io.SeekStart)
	}
	var here, elsewhere []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), historyMaxText*8)
	for sc.Scan() {
		var row historyRow
		if json.Unmarshal(sc.Bytes(), &row) != nil || row.Text == "" {
			continue
		}
		if row.Cwd == cwd {
			here = append(here, row.Text)
		} else {
			elsewhere = append(elsewhere, row.Text)
		}
	}
	seen := map[string]bool{}
	var list []string
	for _, part := range [][]string{here, elsewhere} {
		for i := len(part) - 1; i >= 0 && len(list) < 2*historyKeep; i-- {
			if !seen[part[i]] {
				seen[part[i]] = true
				list = append(list, part[i])
			}
		}
	}
	if len(here) > 0 {
		h.last = here[len(here)-1]
	}
	return h, list, nil
}

// add appends a prompt: one write of one line on a file opened for
// appending, so concurrent zots never tear each other's lines. The file is
// private (mode 0600): prompts can hold anything.
func (h *promptHistory) add(text string) error {
	if h.path == "" || text == "" || text == h.last || len(text) > historyMaxText {
		return nil
	}
	h.last = text
	line, err := json.Marshal(historyRow{Time: time.Now().UTC(), Cwd: h.cwd, Text: text})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return fmt.Errorf("write history %s: %w", h.path, err)
	}
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("write history %s: %w", h.path, err)
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write history %s: %w", h.path, err)
	}
	return nil
}

// atWord finds the @reference around the cursor: its start and the text
// after the @.
func (e *editor) atWord() (start int, ref string, ok bool) {
	start = e.cur
	for start > 0 && !unicode.IsSpace(e.buf[start-1]) {
		start--
	}
	if start >= len(e.buf) || e.buf[start] != '@' || start == e.cur {
		return 0, "", false
	}
	return start, string(e.buf[start+1 : e.cur]), true
}

// replaceRange swaps runes [from, e.cur) for s.
func (e *editor) replaceRange(from int, s string) {
	rest := append([]rune(nil), e.buf[e.cur:]...)
	e.buf = append(append(e.buf[:from], []rune(s)...), rest...)
	e.cur = from + len([]rune(s))
}

// atRefs finds the @path words of a prompt.
func atRefs(text string) []string {
	var refs []string
	for _, w := range strings.Fields(text) {
		if len(w) > 1 && w[0] == '@' {
			refs = append(refs, strings.TrimRight(w[1:], ".,;:!?)"))
		}
	}
	return refs
}

// attachLimit bounds a file attached with @path.
const attachLimit = 256 << 10

// attachFile reads a file named by @path for the prompt: text as a block
// that names it, images as image blocks. env opens it as the read tool
// does: the jail and the sandbox judge it, and what is read is what was
// judged.
func attachFile(ref string, env *ToolEnv) (Block, string, error) {
	f, st, err := env.openRead(context.Background(), ref)
	if err != nil {
		return Block{}, "", err
	}
	if f == nil {
		return Block{}, "", fmt.Errorf("@%s is not a regular file", ref)
	}
	defer f.Close()
	if st.Size() > attachLimit {
		return Block{}, "", fmt.Errorf("@%s is %s, more than the %s an attachment may be; ask the model to read it instead", ref, sizeString(st.Size()), sizeString(attachLimit))
	}
	data, err := readUntrustedOpen(f, "@"+ref, attachLimit)
	if err != nil {
		return Block{}, "", err
	}
	if mime := imageType(data); mime != "" {
		b := Block{Type: BlockImage, MimeType: mime, Data: base64.StdEncoding.EncodeToString(data)}
		desc, _ := describeAttachment(b)
		return b, "@" + ref + " " + desc, nil
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return Block{}, "", fmt.Errorf("@%s looks binary; not attached", ref)
	}
	b := TextBlock(fmt.Sprintf("%s%q>\n%s%s", fileOpen, ref, strings.TrimRight(string(data), "\n"), fileClose))
	desc, _ := describeAttachment(b)
	return b, desc, nil
}

// The text block of an attached file is the file between these, its path
// quoted as Go quotes it.
const (
	fileOpen  = "<file path="
	fileClose = "\n</file>"
)

// describeAttachment is the line that lists a block attached to a prompt:
// "@path (N lines)" for a file, "[image PNG 640×480, 12.0 KiB]" for an
// image (read from its bytes). It reports false for other blocks: the
// typed text, a hook's context.
func describeAttachment(b Block) (string, bool) {
	switch b.Type {
	case BlockImage:
		return readImageBlock(b).placeholder(), true
	case BlockText:
		rest, isFile := strings.CutPrefix(b.Text, fileOpen)
		quoted, body, _ := strings.Cut(rest, ">\n")
		path, err := strconv.Unquote(quoted)
		if !isFile || err != nil || !strings.HasSuffix(body, fileClose) {
			return "", false
		}
		return fmt.Sprintf("@%s (%d lines)", path, textLines(strings.TrimSuffix(body, fileClose))), true
	}
	return "", false
}
