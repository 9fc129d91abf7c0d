package main

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The renderer turns text into terminal rows: a width table for wide and
// zero-width runes, drawText for anything that did not come from zot
// itself, styled cells wrapped to a width, markdown-lite for assistant
// text, and screen, which draws rows inline by diff. Every escape sequence
// zot writes to the terminal is produced in this file, and those that
// draw pictures in tui_images.go.

// Display width.

type runeRange struct{ lo, hi rune }

// wideRanges are the East Asian Wide and Fullwidth runes and the emoji
// that terminals draw two columns wide.
var wideRanges = []runeRange{
	{0x1100, 0x115f}, {0x231a, 0x231b}, {0x2329, 0x232a}, {0x23e9, 0x23ec}, {0x23f0, 0x23f0},
	{0x23f3, 0x23f3}, {0x25fd, 0x25fe}, {0x2614, 0x2615}, {0x2648, 0x2653}, {0x267f, 0x267f},
	{0x2693, 0x2693}, {0x26a1, 0x26a1}, {0x26aa, 0x26ab}, {0x26bd, 0x26be}, {0x26c4, 0x26c5},
	{0x26ce, 0x26ce}, {0x26d4, 0x26d4}, {0x26ea, 0x26ea}, {0x26f2, 0x26f3}, {0x26f5, 0x26f5},
	{0x26fa, 0x26fa}, {0x26fd, 0x26fd}, {0x2705, 0x2705}, {0x270a, 0x270b}, {0x2728, 0x2728},
	{0x274c, 0x274c}, {0x274e, 0x274e}, {0x2753, 0x2755}, {0x2757, 0x2757}, {0x2795, 0x2797},
	{0x27b0, 0x27b0}, {0x27bf, 0x27bf}, {0x2b1b, 0x2b1c}, {0x2b50, 0x2b50}, {0x2b55, 0x2b55},
	{0x2e80, 0x303e}, {0x3041, 0x33ff}, {0x3400, 0x4dbf}, {0x4e00, 0x9fff}, {0xa000, 0xa4cf},
	{0xa960, 0xa97f}, {0xac00, 0xd7a3}, {0xf900, 0xfaff}, {0xfe10, 0xfe19}, {0xfe30, 0xfe6f},
	{0xff00, 0xff60}, {0xffe0, 0xffe6}, {0x16fe0, 0x16fe4}, {0x17000, 0x18aff}, {0x1b000, 0x1b2ff},
	{0x1f004, 0x1f004}, {0x1f0cf, 0x1f0cf}, {0x1f18e, 0x1f18e}, {0x1f191, 0x1f19a}, {0x1f200, 0x1f251},
	{0x1f260, 0x1f265}, {0x1f300, 0x1f320}, {0x1f32d, 0x1f335}, {0x1f337, 0x1f37c}, {0x1f37e, 0x1f393},
	{0x1f3a0, 0x1f3ca}, {0x1f3cf, 0x1f3d3}, {0x1f3e0, 0x1f3f0}, {0x1f3f4, 0x1f3f4}, {0x1f3f8, 0x1f43e},
	{0x1f440, 0x1f440}, {0x1f442, 0x1f4fc}, {0x1f4ff, 0x1f53d}, {0x1f54b, 0x1f54e}, {0x1f550, 0x1f567},
	{0x1f57a, 0x1f57a}, {0x1f595, 0x1f596}, {0x1f5a4, 0x1f5a4}, {0x1f5fb, 0x1f64f}, {0x1f680, 0x1f6c5},
	{0x1f6cc, 0x1f6cc}, {0x1f6d0, 0x1f6d2}, {0x1f6d5, 0x1f6d7}, {0x1f6dc, 0x1f6df}, {0x1f6eb, 0x1f6ec},
	{0x1f6f4, 0x1f6fc}, {0x1f7e0, 0x1f7eb}, {0x1f7f0, 0x1f7f0}, {0x1f90c, 0x1f93a}, {0x1f93c, 0x1f945},
	{0x1f947, 0x1f9ff}, {0x1fa70, 0x1faff}, {0x20000, 0x2fffd}, {0x30000, 0x3fffd},
}

// runeWidth is how many columns r takes: 0 for combining marks, format
// characters and controls, 2 for wide runes, else 1.
func runeWidth(r rune) int {
	switch {
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return 0
	case r < 0x300, r >= 0x2190 && r <= 0x21ff, r >= 0x2500 && r <= 0x25fc:
		return 1
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf), r >= 0x1160 && r <= 0x11ff:
		return 0
	}
	lo, hi := 0, len(wideRanges)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case r < wideRanges[m].lo:
			hi = m
		case r > wideRanges[m].hi:
			lo = m + 1
		default:
			return 2
		}
	}
	return 1
}

// stringWidth is the display width of s, which holds no escapes.
func stringWidth(s string) int {
	w := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			for _, r := range s[i:] {
				w += runeWidth(r)
			}
			return w
		}
		if s[i] >= 0x20 && s[i] < 0x7f {
			w++
		}
	}
	return w
}

// visibleWidth is the display width of a rendered row: escapes count zero.
func visibleWidth(row string) int {
	w := 0
	for i := 0; i < len(row); {
		if row[i] == 0x1b {
			n, _ := escapeLen(row[i:])
			i += n
			continue
		}
		r, size := utf8.DecodeRuneInString(row[i:])
		w += runeWidth(r)
		i += size
	}
	return w
}

// Untrusted text.

// drawText is sanitize as the renderer needs it: tabs become spaces, as
// the cell builder has no tab stops.
func drawText(s string) string {
	c := sanitizer{width: runeWidth}
	return c.text(s)
}

// escapeLen measures the escape sequence at the start of s (s[0] is ESC):
// CSI (silent when it only sets colours), OSC, DCS, APC, PM and SOS strings
// up to their terminator, or ESC and the bytes of a short sequence. An
// unterminated sequence ends at a control character or the end of s.
func escapeLen(s string) (n int, silent bool) {
	if len(s) < 2 {
		return len(s), false
	}
	switch s[1] {
	case '[':
		i := 2
		for i < len(s) && s[i] >= 0x30 && s[i] <= 0x3f {
			i++
		}
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
			i++
		}
		if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
			return i + 1, s[i] == 'm' && isSGRParams(s[2:i])
		}
		return i, false
	case ']', 'P', '_', '^', 'X':
		for i := 2; i < len(s); i++ {
			switch {
			case s[i] == 0x07:
				return i + 1, false
			case s[i] == 0x1b:
				if i+1 < len(s) && s[i+1] == '\\' {
					return i + 2, false
				}
				return i, false
			case s[i] == '\n':
				return i, false
			}
		}
		return len(s), false
	}
	i := 1
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i, false
}

func isSGRParams(p string) bool {
	for i := 0; i < len(p); i++ {
		if (p[i] < '0' || p[i] > '9') && p[i] != ';' && p[i] != ':' {
			return false
		}
	}
	return true
}

// oneLine cleans s and folds it onto one line (for summaries and lists).
func oneLine(s string) string {
	s = drawText(s)
	if strings.IndexByte(s, '\n') < 0 {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// Styles.

// style is a set of text attributes and a foreground colour.
type style uint16

const (
	sBold style = 1 << iota
	sDim
	sItalic
	sUnderline
	sReverse
)

const (
	fgRed style = (iota + 1) << 8
	fgGreen
	fgYellow
	fgBlue
	fgMagenta
	fgCyan
	fgGray
	fgMask style = 0xf << 8
)

var fgCodes = [...]string{1: "31", 2: "32", 3: "33", 4: "34", 5: "35", 6: "36", 7: "90"}

// appendSGR writes the escape that selects st from a reset state.
func appendSGR(b []byte, st style) []byte {
	b = append(b, "\x1b[0"...)
	for i, code := range []string{"1", "2", "3", "4", "7"} {
		if st&(1<<i) != 0 {
			b = append(b, ';')
			b = append(b, code...)
		}
	}
	if c := st & fgMask >> 8; c != 0 && int(c) < len(fgCodes) {
		b = append(b, ';')
		b = append(b, fgCodes[c]...)
	}
	return append(b, 'm')
}

// span is text (already clean) in one style.
type span struct {
	text string
	st   style
}

// cell is one character on screen: a rune with the zero-width runes that
// combine with it.
type cell struct {
	s  string
	w  uint8
	st style
}

// maxCellBytes bounds a cell: zero-width characters piled on one
// character beyond it (Zalgo text) are dropped, which keeps a line of them
// as cheap to draw as any other.
const maxCellBytes = 64

// appendCells adds the cells of clean text s in style st. Text that was
// not cleaned cannot do harm here either: a control character becomes its
// picture and invalid UTF-8 or a C1 control becomes U+FFFD.
func appendCells(dst []cell, s string, st style) []cell {
	for i := 0; i < len(s); {
		if c := s[i]; c < 0x80 {
			cs := s[i : i+1]
			switch {
			case c == 0x7f:
				cs = "␡"
			case c < 0x20:
				cs = string(rune(0x2400 + int(c)))
			}
			dst = append(dst, cell{s: cs, w: 1, st: st})
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || r < 0xa0 {
			dst = append(dst, cell{s: "\uFFFD", w: 1, st: st})
			i += size
			continue
		}
		w := runeWidth(r)
		if w == 0 && len(dst) > 0 {
			if last := &dst[len(dst)-1]; len(last.s)+size <= maxCellBytes {
				last.s += s[i : i+size]
			}
		} else {
			dst = append(dst, cell{s: s[i : i+size], w: uint8(w), st: st})
		}
		i += size
	}
	return dst
}

// drawable reports whether s can be written as it is: valid UTF-8 with no
// control characters (C0, DEL or C1).
func drawable(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || (c == 0xc2 && i+1 < len(s) && s[i+1] < 0xa0) {
			return false
		}
	}
	return utf8.ValidString(s)
}

func spansWidth(spans []span) int {
	w := 0
	for _, s := range spans {
		w += stringWidth(s.text)
	}
	return w
}

// renderRow writes prefix spans and cells as one row.
func renderRow(b []byte, prefix []span, cells []cell) []byte {
	cur := style(0)
	set := func(st style) {
		if st != cur {
			b = appendSGR(b, st)
			cur = st
		}
	}
	for _, p := range prefix {
		set(p.st)
		b = append(b, p.text...)
	}
	for _, c := range cells {
		set(c.st)
		b = append(b, c.s...)
	}
	if cur != 0 {
		b = append(b, "\x1b[0m"...)
	}
	return b
}

// fitLine renders spans as one row of at most width columns, cutting with
// "…" when they do not fit.
func fitLine(width int, spans ...span) string {
	w, n, safe := 0, 0, true
	for _, s := range spans {
		w += stringWidth(s.text)
		n += len(s.text)
		safe = safe && drawable(s.text)
	}
	// The status bar comes through here for every frame drawn: its bytes
	// and cells are allocated once, not doubled into place a byte at a time.
	if w <= width && safe {
		b := make([]byte, 0, n+len(spans)*len("\x1b[0;1;2;3;4;7;36m"))
		cur := style(0)
		for _, s := range spans {
			if s.text == "" {
				continue
			}
			if s.st != cur {
				b = appendSGR(b, s.st)
				cur = s.st
			}
			b = append(b, s.text...)
		}
		if cur != 0 {
			b = append(b, "\x1b[0m"...)
		}
		return string(b)
	}
	cells := make([]cell, 0, n) // a cell holds one byte or more
	for _, s := range spans {
		cells = appendCells(cells, s.text, s.st)
	}
	w = 0
	for i, c := range cells {
		if w+int(c.w) > width {
			// Make room for the ellipsis.
			for i > 0 && w+1 > width {
				i--
				w -= int(cells[i].w)
			}
			cells = append(cells[:i:i], cell{s: "…", w: 1, st: sDim})
			break
		}
		w += int(c.w)
	}
	return string(renderRow(nil, nil, cells))
}

// Wrapping.

// wrapSpec says how to break cells into rows: the prefixes of the first
// and later rows, and whether to break anywhere (code) or between words.
type wrapSpec struct {
	width       int
	first, cont []span
	hard        bool
}

// wrapCells breaks cells into rows no wider than the width. ends[i] is the
// index of the first cell after row i, counting a space dropped at a break.
// Rows other than the last never change when cells are appended, which is
// what lets streamed text be committed row by row.
func wrapCells(cells []cell, ws wrapSpec) (rows []string, ends []int) {
	pos, first := 0, true
	// prefixFor gives the prefix of the next row and the columns left after it;
	// a prefix that leaves too little room is dropped.
	prefixFor := func() ([]span, int) {
		p := ws.cont
		if first {
			p = ws.first
		}
		if avail := ws.width - spansWidth(p); avail >= 4 {
			return p, avail
		}
		return nil, max(ws.width, 1)
	}
	if len(cells) == 0 {
		p, _ := prefixFor()
		return []string{string(renderRow(nil, p, nil))}, []int{0}
	}
	for {
		prefix, avail := prefixFor()
		i, w, lastSpace := pos, 0, -1
		for i < len(cells) && w+int(cells[i].w) <= avail {
			if cells[i].s == " " {
				lastSpace = i
			}
			w += int(cells[i].w)
			i++
		}
		end, next := i, i
		switch {
		case i == len(cells):
		case ws.hard:
		case cells[i].s == " ":
			next = i + 1
		case lastSpace > pos:
			end, next = lastSpace, lastSpace+1
		}
		if next == pos { // a cell wider than the row
			end, next = pos+1, pos+1
		}
		rows = append(rows, string(renderRow(nil, prefix, cells[pos:end])))
		ends = append(ends, next)
		pos, first = next, false
		if pos >= len(cells) {
			return rows, ends
		}
	}
}

// Markdown-lite.

// mdState is what one line of markdown leaves for the next: whether a
// fenced code block is open, its fence, and for a language zot highlights
// its lexer and what a line of it left open (a comment, a string).
type mdState struct {
	fence string
	code  *lexLang
	lex   lexState
}

// mdLine is one logical line of markdown, parsed: its cells and how to
// wrap them.
type mdLine struct {
	cells       []cell
	first, cont []span
	hard        bool
	tableRow    string // the line, clean, when it may be a row of a table
}

const (
	codeStyle    = fgCyan
	headingStyle = sBold
	quoteStyle   = fgGray
)

// parseMarkdownLine parses one line (no newline) of assistant text in
// state st, which it advances, appending the cells to dst. base is added
// to every style (dim for thinking). The text is cleaned first.
func parseMarkdownLine(dst []cell, raw string, st *mdState, base style) mdLine {
	var m mdStream
	m.reset(*st, base)
	m.cells = dst
	m.write(raw)
	*st = m.end()
	l := mdLine{cells: m.cells, first: m.blk.first, cont: m.blk.cont, hard: m.blk.hard}
	if m.blk.table {
		l.tableRow = string(m.row)
	}
	return l
}

// mdStream parses one line of markdown that arrives in pieces, reading
// each byte once (link text twice): streamed text can be one line of
// megabytes.
// What a piece decides is final and goes to cells; what depends on text
// still to come (how the line is drawn while only its first bytes are
// known, a run of markers, a ']' that may be followed by '(', a '[' that
// opens a link only if a "](" follows) waits, and pending shows it as if
// the line ended there. Once a '[' turns out to open a link, the cells
// from it on that are still in cells are styled again: cells already
// taken away keep the style they were shown in.
type mdStream struct {
	base  style
	fence string
	code  *lexLang  // the language of the code block the line is in, if highlighted
	lex   codeLexer // … reading the line, when it is code
	info  []byte    // the start of a line that opens a fence: its language
	row   []byte    // the line, while it may be a row of a table
	clean sanitizer
	head  []byte // the cleaned line while its block is undecided
	blk   mdBlock
	known bool // blk is decided
	in    inlineState
	cells []cell // the cells decided so far, after the first off
	off   int    // cells taken from the front of cells (committed)

	cand     *inlineState // after the first '[' that may open a link
	candCell int          // the index of that '[' among all the line's cells
	candText []byte       // the line after it

	buf []byte
}

func (m *mdStream) reset(st mdState, base style) {
	*m = mdStream{base: base, fence: st.fence, code: st.code, in: inlineState{prev: ' '}, clean: sanitizer{width: runeWidth},
		head: m.head[:0], cells: m.cells[:0], candText: m.candText[:0], buf: m.buf[:0], info: m.info[:0], row: m.row[:0]}
	if st.code != nil {
		m.lex = newCodeLexer(st.code, st.lex, base)
	}
}

// write adds the next piece of the line.
func (m *mdStream) write(raw string) {
	m.buf = m.clean.write(m.buf[:0], raw)
	m.take(m.buf, false)
}

// end finishes the line, leaving in cells everything still pending, and
// returns the state for the next line.
func (m *mdStream) end() mdState {
	m.buf = m.clean.end(m.buf[:0])
	lex := m.finish(m.buf)
	switch {
	case m.blk.fence == "":
		return mdState{}
	case m.fence == "": // the line opened the block
		return mdState{fence: m.blk.fence, code: codeLang(string(m.info))}
	}
	return mdState{fence: m.blk.fence, code: m.code, lex: lex}
}

// finish reads the clean end of the line and returns what a line of code
// left open.
func (m *mdStream) finish(text []byte) (lex lexState) {
	m.take(text, true)
	switch {
	case m.blk.inline:
		m.cells = m.in.end(m.cells, m.blk.st)
	case m.blk.lexed:
		m.cells, lex = m.lex.end(m.cells)
	}
	m.cand = nil
	return lex
}

// drop forgets the first n cells, which were shown for good.
func (m *mdStream) drop(n int) {
	m.cells = append(m.cells[:0], m.cells[n:]...)
	m.off += n
}

// pending appends to dst the cells of what is still undecided, drawn as
// if the line ended now, and says how the line is wrapped. dst should
// hold a copy of cells: a zero-width character may join the last one.
func (m *mdStream) pending(dst []cell) ([]cell, mdBlock) {
	c := m.clean
	tail := c.end(nil)
	if !m.known {
		line := mdStream{base: m.base, fence: m.fence, code: m.code, lex: m.lex, in: inlineState{prev: ' '},
			head: append([]byte(nil), m.head...), cells: dst}
		line.finish(tail)
		return line.cells, line.blk
	}
	if m.blk.lexed {
		lex := m.lex
		dst, _ = lex.end(lex.write(dst, string(tail)))
		return dst, m.blk
	}
	in := m.in
	return m.blk.cells(dst, &in, string(tail), true), m.blk
}

// take reads clean text: first until the line's block is known, then as
// the block's content.
func (m *mdStream) take(text []byte, final bool) {
	if !m.known {
		m.head = append(m.head, text...)
		b, ok := blockOf(m.head, m.fence, m.base, final)
		if !ok {
			return
		}
		if b.hard && m.code != nil {
			b.st, b.lexed = m.base, true
		}
		m.blk, m.known = b, true
		text = m.head[b.start:]
	}
	if len(text) == 0 && !m.blk.rule {
		return
	}
	if m.fence == "" && m.blk.fence != "" && len(m.info) < 64 {
		m.info = append(m.info, text[:min(len(text), 64)]...)
	}
	if m.blk.lexed {
		m.cells = m.lex.write(m.cells, string(text))
		return
	}
	if m.blk.table {
		if m.blk.table = len(m.row)+len(text) <= tableRowLimit; m.blk.table {
			m.row = append(m.row, text...)
		}
	}
	if !m.blk.inline {
		m.cells = m.blk.cells(m.cells, nil, string(text), final)
		return
	}
	m.inline(string(text))
}

// inline reads inline markdown, noting the first '[' that may open a link
// and reading again from it when a "](" shows that it does.
func (m *mdStream) inline(s string) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		rs := s[i : i+size]
		i += size
		if m.cand != nil {
			m.candText = append(m.candText, rs...)
			if r == '(' && m.in.prev == ']' {
				m.linkFound()
				continue
			}
		}
		m.cells = m.in.rune(m.cells, r, rs, m.blk.st)
		if m.in.maybeLink {
			m.in.maybeLink = false
			if m.cand == nil {
				cand := m.in
				m.cand, m.candCell, m.candText = &cand, m.off+len(m.cells)-1, m.candText[:0]
			}
		}
	}
}

// linkFound reads the text after the pending '[' again now that a "]("
// shows it opens a link, and restyles its cells still in cells.
func (m *mdStream) linkFound() {
	in := *m.cand
	in.link, in.linkAhead = true, true
	cells := appendCells(nil, "[", m.blk.st)
	s := string(m.candText)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		cells = in.rune(cells, r, s[i:i+size], m.blk.st)
		i += size
	}
	in.linkAhead = false
	m.in, m.cand = in, nil
	at := m.candCell - m.off
	if at < 0 {
		cells, at = cells[min(-at, len(cells)):], 0
	}
	m.cells = append(m.cells[:min(at, len(m.cells))], cells...)
}

// blockLookahead bounds how much of a line decides how it is drawn: a
// longer line is never a rule, a ``` fence or the end of a fence, so
// that a line of any length is laid out as it arrives.
const blockLookahead = 256

// mdBlock is how a line is drawn: its wrap prefixes, whether it is code
// (broken anywhere), and its content — from start on — either inline
// markdown in style st, text drawn as it is in st, or a rule.
type mdBlock struct {
	first, cont []span
	st          style
	inline      bool
	rule        bool
	hard        bool
	lexed       bool // code in a language zot highlights
	table       bool // a line that starts with '|': perhaps a row of a table
	start       int
	fence       string // the fence open after the line
}

// blockOf decides the block of a line from its cleaned start h, all of
// it when ended. It reports false while the bytes to come may still
// change the decision; only the first blockLookahead bytes count.
func blockOf(h []byte, fence string, base style, ended bool) (mdBlock, bool) {
	long := len(h) >= blockLookahead
	s := string(h[:min(len(h), blockLookahead)])
	if !ended && !long && !blockSettled(s, fence) {
		return mdBlock{}, false
	}
	return blockFinal(s, fence, base, ended && !long), true
}

// blockFinal is how a line that starts with h is drawn; whole says h is
// all of it.
func blockFinal(h, fence string, base style, whole bool) mdBlock {
	b := mdBlock{fence: fence}
	if fence != "" {
		if whole && isFenceClose(h, fence) {
			b.fence, b.st = "", base|sDim
			return b
		}
		b.st, b.hard = base|codeStyle, true
		return b
	}
	t := strings.TrimLeft(h, " ")
	indent := len(h) - len(t)
	if indent <= 3 {
		if f := fenceOpen(t, whole); f != "" {
			b.fence, b.st = f, base|sDim
			return b
		}
		if n := headingLevel(t); n > 0 {
			b.inline, b.st = true, base|headingStyle
			if n == 1 {
				b.st |= sUnderline
			}
			b.start = len(h) - len(strings.TrimLeft(t[n:], " "))
			return b
		}
		if strings.HasPrefix(t, "|") {
			b.inline, b.st, b.table = true, base, true
			return b
		}
		if whole && isRule(t) {
			b.rule, b.st = true, base|sDim
			return b
		}
		if strings.HasPrefix(t, ">") {
			var bars strings.Builder
			for strings.HasPrefix(t, ">") {
				bars.WriteString("│ ")
				t = strings.TrimPrefix(t[1:], " ")
			}
			p := []span{{bars.String(), base | quoteStyle}}
			b.first, b.cont = p, p
			b.inline, b.st, b.start = true, base|sItalic, len(h)-len(t)
			return b
		}
	}
	if marker, rest, ok := listItem(t); ok {
		pad := strings.Repeat(" ", min(indent, 12))
		b.first = []span{{pad, 0}, {marker, base | fgCyan}}
		b.cont = []span{{pad + strings.Repeat(" ", stringWidth(marker)), 0}}
		b.inline, b.st, b.start = true, base, len(h)-len(rest)
		return b
	}
	b.inline, b.st = true, base
	return b
}

// blockSettled reports whether h, the start of a line, already decides
// its block whatever follows.
func blockSettled(h, fence string) bool {
	if fence != "" {
		return !mayCloseFence(h, fence)
	}
	t := strings.TrimLeft(h, " ")
	if t == "" {
		return false
	}
	c := t[0]
	if len(h)-len(t) <= 3 {
		switch c {
		case '`', '~':
			n := len(t) - len(strings.TrimLeft(t, t[:1]))
			if n == len(t) {
				return false
			}
			return n < 3 || c == '~' || strings.Contains(t[n:], "`")
		case '#':
			n := len(t) - len(strings.TrimLeft(t, "#"))
			if n == len(t) {
				return false
			}
			return n > 6 || t[n] != ' ' || strings.TrimLeft(t[n:], " ") != ""
		case '-', '*', '_':
			if strings.Trim(t, t[:1]+" ") == "" {
				return false // it may be a rule
			}
		case '>':
			for strings.HasPrefix(t, ">") {
				t = strings.TrimPrefix(t[1:], " ")
			}
			return t != ""
		}
	}
	switch {
	case c == '-' || c == '*' || c == '+':
		return len(t) >= 2
	case c >= '0' && c <= '9':
		n := 0
		for n < len(t) && n < 9 && t[n] >= '0' && t[n] <= '9' {
			n++
		}
		return n < len(t) && (t[n] != '.' && t[n] != ')' || n+1 < len(t))
	}
	return true
}

// cells appends the cells of text, content of a line drawn as b, read
// with in (for inline markdown); final ends the line.
func (b *mdBlock) cells(dst []cell, in *inlineState, text string, final bool) []cell {
	switch {
	case b.rule:
		if final {
			return appendCells(dst, strings.Repeat("─", 40), b.st)
		}
		return dst
	case !b.inline:
		return appendCells(dst, text, b.st)
	}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		dst = in.rune(dst, r, text[i:i+size], b.st)
		i += size
	}
	if final {
		dst = in.end(dst, b.st)
	}
	return dst
}

func fenceOpen(s string, whole bool) string {
	for _, c := range []string{"`", "~"} {
		n := len(s) - len(strings.TrimLeft(s, c))
		if n >= 3 && (c == "~" || whole && !strings.Contains(s[n:], "`")) {
			return s[:n]
		}
	}
	return ""
}

func isFenceClose(line, fence string) bool {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 || !strings.HasPrefix(s, fence) {
		return false
	}
	s = strings.TrimLeft(s, fence[:1])
	return strings.TrimSpace(s) == ""
}

// mayCloseFence reports whether a line that starts with h may still turn
// out to close the fence.
func mayCloseFence(h, fence string) bool {
	s := strings.TrimLeft(h, " ")
	switch {
	case len(h)-len(s) > 3:
		return false
	case len(s) < len(fence):
		return strings.HasPrefix(fence, s)
	}
	return isFenceClose(h, fence)
}

func headingLevel(s string) int {
	n := 0
	for n < len(s) && s[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(s) && s[n] != ' ') {
		return 0
	}
	return n
}

func isRule(s string) bool {
	s = strings.TrimRight(s, " ")
	if len(s) < 3 {
		return false
	}
	c := s[0]
	if c != '-' && c != '*' && c != '_' {
		return false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case c:
			n++
		case ' ':
		default:
			return false
		}
	}
	return n >= 3
}

// listItem recognises "- x", "* x", "+ x" (drawn with a bullet) and "12. x"
// or "12) x".
func listItem(s string) (marker, rest string, ok bool) {
	if len(s) >= 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') && s[1] == ' ' {
		return "• ", s[2:], true
	}
	n := 0
	for n < len(s) && n < 9 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n > 0 && n+1 < len(s) && (s[n] == '.' || s[n] == ')') && s[n+1] == ' ' {
		return s[:n+2], s[n+2:], true
	}
	return "", "", false
}

// inlineState reads inline markdown — `code`, **bold**, *italic*,
// _italic_, [links](url) — one rune at a time. Markers that open or close
// a style are hidden; link text is underlined and its address dimmed,
// brackets kept. A run of markers means something only once the rune
// after it is known, and a ']' ending link text only once it is known
// whether '(' follows: until then they wait here.
type inlineState struct {
	bold, italic, link bool
	code               int  // backticks of the open code span
	url                int  // parenthesis depth in a link's address
	prev               rune // the rune before the next one (' ' at the start)

	run     rune // the marker of a run being read ('`', '*', '_'), or 0
	runN    int
	runPrev rune  // the rune before the run
	runLit  bool  // the run can no longer be a marker: it is drawn as it grows
	runSt   style // … in this style
	bracket bool  // a ']' ended link text

	// A '[' opens a link when a "](" follows anywhere later in the line.
	// linkAhead says one does; otherwise the '[' is drawn as text and
	// maybeLink tells the caller, who may read the text again later.
	linkAhead, maybeLink bool
}

// rune reads r, whose encoding is text, appending the cells it decides in
// style base and those of the markers before it that it decides.
func (s *inlineState) rune(dst []cell, r rune, text string, base style) []cell {
	if s.run != 0 {
		if r == s.run {
			s.runN++
			return s.growRun(dst, text, base)
		}
		dst = s.endRun(dst, r, base)
	}
	if s.bracket {
		s.bracket = false
		if r == '(' {
			s.url, s.prev = 1, r
			return appendCells(dst, "](", base|sDim)
		}
		dst = appendCells(dst, "]", base|styleOf(s.bold, s.italic, false))
	}
	st := base
	switch {
	case s.code > 0:
		if r == '`' {
			s.startRun(r)
			return dst
		}
		st |= codeStyle
	case s.url > 0:
		switch r {
		case '(':
			s.url++
		case ')':
			s.url--
		}
		st |= sDim
	case r == '`' || r == '*' || r == '_':
		s.startRun(r)
		return dst
	case r == '[' && !s.link:
		s.link = s.linkAhead
		s.maybeLink = !s.linkAhead
	case r == ']' && s.link:
		s.link, s.bracket, s.prev = false, true, r
		return dst
	}
	if st == base {
		st |= styleOf(s.bold, s.italic, s.link)
		if s.link && r == '[' {
			st = base
		}
	}
	s.prev = r
	return appendCells(dst, text, st)
}

func (s *inlineState) startRun(r rune) {
	s.run, s.runN, s.runPrev, s.runLit = r, 1, s.prev, false
	s.prev = r
}

// growRun takes one more marker of the run. A run of four or more '*' or
// '_', or of more backticks than opened the code span, means nothing
// whatever follows, so it is drawn from then on.
func (s *inlineState) growRun(dst []cell, text string, base style) []cell {
	if s.runLit {
		return appendCells(dst, text, s.runSt)
	}
	switch {
	case s.run == '`' && s.code > 0 && s.runN > s.code:
		s.runSt = base | codeStyle
	case s.run != '`' && s.runN >= 4:
		s.runSt = base | styleOf(s.bold, s.italic, s.link)
	default:
		return dst
	}
	s.runLit = true
	return appendCells(dst, strings.Repeat(string(s.run), s.runN), s.runSt)
}

// endRun decides the run now that the rune after it, next, is known (0 at
// the end of the line).
func (s *inlineState) endRun(dst []cell, next rune, base style) []cell {
	c, n := s.run, s.runN
	s.run = 0
	switch {
	case s.runLit:
		return dst
	case c == '`' && s.code > 0:
		if n == s.code {
			s.code = 0
			return dst
		}
		return appendCells(dst, strings.Repeat("`", n), base|codeStyle)
	case c == '`':
		s.code = n
		return dst
	}
	prev := s.runPrev
	canOpen := !unicode.IsSpace(next) && next != 0 && (c == '*' || !isWordRune(prev))
	canClose := !unicode.IsSpace(prev) && prev != 0 && (c == '*' || !isWordRune(next))
	toggled := false
	if n == 2 || n == 3 {
		if s.bold && canClose || !s.bold && canOpen {
			s.bold, toggled = !s.bold, true
		}
	}
	if n == 1 || n == 3 {
		if s.italic && canClose || !s.italic && canOpen {
			s.italic, toggled = !s.italic, true
		}
	}
	if toggled {
		return dst
	}
	return appendCells(dst, strings.Repeat(string(c), n), base|styleOf(s.bold, s.italic, s.link))
}

// end decides what still waits when the line ends.
func (s *inlineState) end(dst []cell, base style) []cell {
	if s.run != 0 {
		dst = s.endRun(dst, 0, base)
	}
	if s.bracket {
		s.bracket = false
		dst = appendCells(dst, "]", base|styleOf(s.bold, s.italic, false))
	}
	return dst
}

func styleOf(bold, italic, link bool) style {
	var st style
	if bold {
		st |= sBold
	}
	if italic {
		st |= sItalic
	}
	if link {
		st |= sUnderline
	}
	return st
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// renderMarkdown renders whole text to rows of the given width.
func renderMarkdown(text string, width int, base style) []string {
	var st mdState
	var rows []string
	var table *mdTable
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		m := parseMarkdownLine(nil, line, &st, base)
		if m.tableRow != "" {
			if table == nil {
				table = &mdTable{base: base}
			}
			rows = append(rows, table.add(m.tableRow, width, 0)...)
			continue
		}
		if table != nil {
			rows, table = append(rows, table.finish(width)...), nil
		}
		r, _ := wrapCells(m.cells, wrapSpec{width: width, first: m.first, cont: m.cont, hard: m.hard})
		rows = append(rows, r...)
	}
	if table != nil {
		rows = append(rows, table.finish(width)...)
	}
	return rows
}

// plainRows wraps clean text, line by line, in one style.
func plainRows(text string, width int, st style, first, cont []span) []string {
	var rows []string
	for _, line := range strings.Split(text, "\n") {
		cells := appendCells(nil, line, st)
		if len(cells) == 0 {
			rows = append(rows, string(renderRow(nil, first, nil)))
			first = cont
			continue
		}
		r, _ := wrapCells(cells, wrapSpec{width: width, first: first, cont: cont})
		rows = append(rows, r...)
		first = cont
	}
	return rows
}

// The screen.

// screen draws inline, keeping the terminal's scrollback: rows committed
// above the live region are written once and scroll away like any output;
// the live region below them (streaming text, tool status, editor, status
// bar) is redrawn in place, writing only the rows that changed. It never
// moves the cursor above the live region, which is kept no taller than the
// terminal, so it never touches text that has scrolled off.
type screen struct {
	height    int      // of the terminal; 0 turns off inserting lines
	live      []string // live rows as last drawn
	row, col  int      // cursor position in the live region
	cursorOff bool     // the cursor was left hidden
	b         []byte
}

// frame returns the bytes that print committed above the live region and
// turn the live region into live, leaving the cursor at (crow, ccol) of it,
// hidden when ccol < 0. It returns nothing when nothing changed.
func (sc *screen) frame(committed, live []string, crow, ccol int) []byte {
	hide := ccol < 0
	if len(committed) == 0 && crow == sc.row && ccol == sc.col && hide == sc.cursorOff && equalRows(sc.live, live) {
		return nil
	}
	old := sc.live
	total := len(committed) + len(live)
	rowAt := func(i int) string {
		if i < len(committed) {
			return committed[i]
		}
		return live[i-len(committed)]
	}
	b := append(sc.b[:0], "\x1b[?25l\r"...)
	b = cursorUp(b, sc.row)
	cur := 0
	// When rows are added above rows that stay as they are (the bottom of
	// the live region: rule, editor, status bar), blank lines are inserted
	// above those rows instead of redrawing them one row lower.
	at, ins := len(old), 0
	if grow := total - len(old); grow > 0 && len(old) > 0 && len(old)+grow < sc.height {
		same := 0
		for same < len(old) && rowAt(total-1-same) == old[len(old)-1-same] {
			same++
		}
		if same > 0 {
			at, ins = len(old)-same, grow
			b = moveDown(b, len(old)-1, true)
			b = moveDown(b, ins, false) // room below, scrolling if need be
			b = cursorUp(b, len(old)-1+ins-at)
			b = append(b, "\x1b["...)
			b = strconv.AppendInt(b, int64(ins), 10)
			b = append(b, 'L')
			b = cursorUp(b, at)
		}
	}
	// onScreen is what row i of the screen holds now.
	onScreen := func(i int) (string, bool) {
		switch {
		case i < at:
			return old[i], true
		case i < at+ins:
			return "", true
		case i-ins < len(old):
			return old[i-ins], true
		}
		return "", false
	}
	drawn := len(old) + ins
	for i := 0; i < total; i++ {
		r := rowAt(i)
		was, ok := onScreen(i)
		if ok && was == r {
			continue
		}
		b = moveDown(b, i-cur, ok)
		cur = i
		if ok {
			b = rewriteRow(b, was, r)
		} else {
			b = append(b, "\r\x1b[K"...)
			b = append(b, r...)
		}
	}
	if drawn > total {
		b = moveDown(b, total-cur, true)
		cur = total
		b = append(b, "\r\x1b[J"...)
	}
	target := len(committed) + crow
	if target < cur {
		b = cursorUp(b, cur-target)
	} else {
		b = moveDown(b, target-cur, true)
	}
	b = append(b, "\r"...)
	if ccol > 0 {
		b = append(b, "\x1b["...)
		b = strconv.AppendInt(b, int64(ccol+1), 10)
		b = append(b, 'G')
	}
	if !hide {
		b = append(b, "\x1b[?25h"...)
	}
	sc.live = append(sc.live[:0], live...)
	sc.row, sc.col, sc.cursorOff = crow, ccol, hide
	sc.b = b
	return b
}

// forget is called when the terminal changed size: the live region may have
// been re-wrapped by the terminal, so it is erased (from where its top now
// is) and the next frame draws it whole. width is the new width.
func (sc *screen) forget(width int) []byte {
	up := 0
	for i := 0; i < sc.row && i < len(sc.live); i++ {
		up += max(1, (visibleWidth(sc.live[i])+width-1)/max(width, 1))
	}
	up += max(sc.col, 0) / max(width, 1)
	b := append([]byte("\r"), cursorUp(nil, up)...)
	b = append(b, "\x1b[J"...)
	sc.live, sc.row, sc.col = nil, 0, 0
	return b
}

// clear erases the live region and leaves the cursor where it began: what
// the terminal shows when zot exits.
func (sc *screen) clear() []byte {
	b := append([]byte("\r"), cursorUp(nil, sc.row)...)
	b = append(b, "\x1b[J\x1b[?25h"...)
	sc.live, sc.row, sc.col = nil, 0, 0
	return b
}

// rewriteRow turns row old, on screen at the cursor's row, into row new.
// When they start alike, as a row does while text streams into it, only
// the part after what they share is written, in the style in force there.
func rewriteRow(b []byte, old, new string) []byte {
	cut := 0
	for cut < len(old) && cut < len(new) && old[cut] == new[cut] {
		cut++
	}
	// Back off to a character boundary outside any escape sequence.
	for cut > 0 && cut < len(new) && !utf8.RuneStart(new[cut]) {
		cut--
	}
	if esc := strings.LastIndexByte(new[:cut], 0x1b); esc >= 0 {
		if n, _ := escapeLen(new[esc:]); esc+n > cut {
			cut = esc
		}
	}
	if cut == 0 {
		b = append(b, "\r\x1b[K"...)
		return append(b, new...)
	}
	b = append(b, "\x1b["...)
	b = strconv.AppendInt(b, int64(visibleWidth(new[:cut])+1), 10)
	b = append(b, 'G')
	if esc := strings.LastIndex(new[:cut], "\x1b[0"); esc >= 0 {
		n, _ := escapeLen(new[esc:])
		if seq := new[esc : esc+n]; seq != "\x1b[0m" {
			b = append(b, seq...)
		}
	}
	b = append(b, new[cut:]...)
	if visibleWidth(old[cut:]) > visibleWidth(new[cut:]) {
		b = append(b, "\x1b[K"...)
	}
	return b
}

func cursorUp(b []byte, n int) []byte {
	if n <= 0 {
		return b
	}
	b = append(b, "\x1b["...)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, 'A')
}

// moveDown moves n rows down: "\n" (which scrolls at the bottom) into rows
// not drawn before, or a cursor-down escape when the rows are on screen and
// that is shorter.
func moveDown(b []byte, n int, onScreen bool) []byte {
	if n <= 0 {
		return b
	}
	if onScreen && n > 3 {
		b = append(b, "\x1b["...)
		b = strconv.AppendInt(b, int64(n), 10)
		return append(b, 'B')
	}
	for ; n > 0; n-- {
		b = append(b, '\n')
	}
	return b
}

func equalRows(a, b []string) bool {
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
