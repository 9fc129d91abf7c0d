package main

import (
	"strings"
)

// Markdown tables: a line that starts with '|', then a delimiter row
// (|---|:--:|--:|) with as many cells, then rows, drawn as a box with
// aligned columns that fit the width, cells wrapped between words. A
// table is known only once its delimiter row has come and laid out only
// once its rows are known, so its lines are held back — shown in the live
// region as they arrive — until a line that is not a row ends it. A table
// taller than the live region fixes its column widths there and sends
// its rows on to the scrollback as they come. When even the narrowest
// columns do not fit, the lines are drawn as they were written.

// tableRowLimit bounds a table row: a longer line is drawn as text, so
// that a line of megabytes that starts with '|' still streams in time
// proportional to its length.
const tableRowLimit = 4096

// tableMinColumn is the narrowest a column is made to fit the width.
const tableMinColumn = 3

// mdTable gathers the lines of a table as they end.
type mdTable struct {
	base   style
	header string     // the first line, until the delimiter row shows it heads a table
	head   []string   // the header's cells, once it does
	align  []byte     // per column: 'l', 'c' or 'r'
	rows   [][]string // body rows not yet sent to the scrollback
	lines  []string   // the lines held, as written: the header, the delimiter, the rows
	sent   bool       // the top, header and some rows went out …
	widths []int      // … with these column widths (nil: as text)

	added     int      // lines taken so far
	view      []string // the held rows as last laid out …
	viewWidth int      // … at this width …
	viewAdded int      // … after this many lines
}

// add takes the next finished line of the table (clean text) and returns
// the rows it sends to the scrollback: a first line the second shows not
// to head a table, or, past hold rows held (0: no limit), the table so far.
func (tb *mdTable) add(line string, width, hold int) []string {
	tb.added++
	switch {
	case tb.header == "" && tb.head == nil:
		tb.header = line
		return nil
	case tb.head == nil:
		head := splitTableRow(tb.header)
		align, ok := delimiterRow(line, len(head))
		if !ok {
			out := tb.textRows([]string{tb.header}, width)
			tb.header = line
			return out
		}
		tb.head, tb.align, tb.lines = head, align, []string{tb.header, line}
		return nil
	}
	tb.rows = append(tb.rows, fitCells(splitTableRow(line), len(tb.head)))
	tb.lines = append(tb.lines, line)
	if tb.sent || hold > 0 && len(tb.rows) >= hold {
		out := tb.layout(width, false)
		tb.rows, tb.lines, tb.sent = nil, nil, true
		return out
	}
	return nil
}

// finish returns the rows of what is still held: the table ends.
func (tb *mdTable) finish(width int) []string {
	if tb.head == nil {
		if tb.header == "" {
			return nil
		}
		return tb.textRows([]string{tb.header}, width)
	}
	return tb.layout(width, true)
}

// held is what the live region shows of the table while it streams.
func (tb *mdTable) held(width int) []string {
	if tb.view == nil || tb.viewWidth != width || tb.viewAdded != tb.added {
		tb.view, tb.viewWidth, tb.viewAdded = tb.finish(width), width, tb.added
		if tb.view == nil {
			tb.view = []string{}
		}
	}
	return tb.view
}

// layout draws the header (unless it went out already) and the held rows,
// and the bottom when last.
func (tb *mdTable) layout(width int, last bool) []string {
	if !tb.sent {
		tb.widths = tb.fit(width)
	} else if tb.widths != nil {
		tb.widths = fitColumns(tb.widths, width) // the terminal may have narrowed
	}
	ws := tb.widths
	if ws == nil {
		return tb.textRows(tb.lines, width)
	}
	var out []string
	if !tb.sent {
		out = append(out, tb.border(ws, "┌", "┬", "┐"))
		out = append(out, tb.rowLines(tb.head, ws, sBold)...)
		out = append(out, tb.border(ws, "├", "┼", "┤"))
	}
	for _, r := range tb.rows {
		out = append(out, tb.rowLines(r, ws, 0)...)
	}
	if last {
		out = append(out, tb.border(ws, "└", "┴", "┘"))
	}
	return out
}

// fit chooses column widths for the table at width, nil when even the
// narrowest columns do not fit.
func (tb *mdTable) fit(width int) []int {
	natural := make([]int, len(tb.head))
	for _, r := range append([][]string{tb.head}, tb.rows...) {
		for i, c := range r {
			natural[i] = max(natural[i], cellsWidth(inlineCells(c, 0)))
		}
	}
	return fitColumns(natural, width)
}

// fitColumns shrinks natural column widths to fit width with the borders:
// narrow columns keep their width, wide ones share what is left. It
// returns nil when columns tableMinColumn wide do not fit.
func fitColumns(natural []int, width int) []int {
	n := len(natural)
	room := width - 3*n - 1
	ws := make([]int, n)
	sum := 0
	for i, w := range natural {
		ws[i] = max(w, 1)
		sum += ws[i]
	}
	if sum <= room {
		return ws
	}
	if room < n*tableMinColumn {
		return nil
	}
	// The widest width c that every column may have, the narrower keeping theirs.
	c := tableMinColumn
	for {
		total := 0
		for _, w := range ws {
			total += min(w, c+1)
		}
		if total > room {
			break
		}
		c++
	}
	left := room
	for i, w := range ws {
		ws[i] = min(w, max(c, tableMinColumn))
		left -= ws[i]
	}
	for i := range ws {
		if left > 0 && natural[i] > ws[i] {
			ws[i]++
			left--
		}
	}
	return ws
}

func (tb *mdTable) border(ws []int, left, mid, right string) string {
	var b strings.Builder
	b.WriteString(left)
	for i, w := range ws {
		if i > 0 {
			b.WriteString(mid)
		}
		b.WriteString(strings.Repeat("─", w+2))
	}
	b.WriteString(right)
	return string(renderRow(nil, []span{{b.String(), tb.base | sDim}}, nil))
}

// rowLines draws one row: each cell wrapped to its column and aligned.
func (tb *mdTable) rowLines(cells []string, ws []int, st style) []string {
	wrapped := make([][]string, len(ws))
	height := 1
	for i, c := range cells {
		cs := inlineCells(c, tb.base|st)
		if len(cs) > 0 {
			wrapped[i], _ = wrapCells(cs, wrapSpec{width: ws[i]})
		}
		height = max(height, len(wrapped[i]))
	}
	bar := string(renderRow(nil, []span{{"│", tb.base | sDim}}, nil))
	out := make([]string, height)
	for k := range out {
		var b strings.Builder
		b.WriteString(bar)
		for i, w := range ws {
			text := ""
			if k < len(wrapped[i]) {
				text = wrapped[i][k]
			}
			pad := max(w-visibleWidth(text), 0)
			left := 0
			switch tb.align[i] {
			case 'r':
				left = pad
			case 'c':
				left = pad / 2
			}
			b.WriteString(strings.Repeat(" ", 1+left))
			b.WriteString(text)
			b.WriteString(strings.Repeat(" ", 1+pad-left))
			b.WriteString(bar)
		}
		out[k] = b.String()
	}
	return out
}

// textRows draws table lines as the text they are: what is shown when
// they are no table, or when it cannot fit.
func (tb *mdTable) textRows(lines []string, width int) []string {
	var out []string
	for _, l := range lines {
		var st mdState
		m := parseMarkdownLine(nil, l, &st, tb.base)
		r, _ := wrapCells(m.cells, wrapSpec{width: width, first: m.first, cont: m.cont, hard: m.hard})
		out = append(out, r...)
	}
	return out
}

// inlineCells draws text (clean) as inline markdown: bold, code, links.
func inlineCells(text string, st style) []cell {
	m := mdStream{blk: mdBlock{inline: true, st: st}, known: true, in: inlineState{prev: ' '}}
	m.inline(text)
	return m.in.end(m.cells, st)
}

func cellsWidth(cells []cell) int {
	w := 0
	for _, c := range cells {
		w += int(c.w)
	}
	return w
}

// splitTableRow cuts a row into its cells at each '|' not escaped as
// "\|", the outer bars dropped, each cell trimmed.
func splitTableRow(line string) []string {
	s := strings.TrimSpace(line)
	s = strings.TrimPrefix(s, "|")
	if strings.HasSuffix(s, "|") && !strings.HasSuffix(s, "\\|") {
		s = s[:len(s)-1]
	}
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '|':
			cur.WriteByte('|')
			i++
		case s[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(s[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// fitCells gives a row exactly n cells: extra ones dropped, missing empty.
func fitCells(cells []string, n int) []string {
	for len(cells) < n {
		cells = append(cells, "")
	}
	return cells[:n]
}

// delimiterRow reads the row under a table's header: n cells of dashes,
// with a colon on the left (left-aligned), both sides (centred) or the
// right (right-aligned).
func delimiterRow(line string, n int) (align []byte, ok bool) {
	cells := splitTableRow(line)
	if len(cells) != n {
		return nil, false
	}
	for _, c := range cells {
		d := strings.TrimSuffix(strings.TrimPrefix(c, ":"), ":")
		if d == "" || strings.Trim(d, "-") != "" {
			return nil, false
		}
		a := byte('l')
		switch {
		case strings.HasPrefix(c, ":") && strings.HasSuffix(c, ":"):
			a = 'c'
		case strings.HasSuffix(c, ":"):
			a = 'r'
		}
		align = append(align, a)
	}
	return align, true
}
