package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Finished tool calls in the transcript: a line saying what ran and how it
// ended, then the first lines of its result, or for an edit its diff with
// line numbers and a line of context; ctrl+o prints the last folded
// result whole, and pressed again, the one before, and so on.

// toolResult is a finished tool call as the transcript shows it; took
// is how long it ran (0 when not known: a loaded session).
type toolResult struct {
	name, summary, details string
	isErr                  bool
	content                []Block
	took                   time.Duration
}

const (
	// toolPreviewLines is how many lines of a result are shown at first.
	toolPreviewLines = 4
	// fullResultLines bounds what ctrl+o prints of one result.
	fullResultLines = 5000
	// maxFolded bounds the results ctrl+o can step back to.
	maxFolded = 200
)

// commitToolResult prints a finished tool call: ✓ or ✗, the tool, the
// summary of its arguments and the result's details (which extension ran
// it), then a preview of the result. A result the preview cuts is one
// ctrl+o shows.
func (t *TUI) commitToolResult(name, summary, details string, isErr bool, content []Block, took time.Duration) {
	t.blockBreak("tool")
	r := &toolResult{name: name, summary: summary, details: details, isErr: isErr, content: content, took: took}
	t.commitLine(r.headline()...)
	rows, folded := r.preview(t.width, t.screenful())
	t.commitRows(rows)
	t.commitRows(t.pictures(content))
	if folded {
		if len(t.folded) == maxFolded {
			t.folded = append(t.folded[:0], t.folded[1:]...)
		}
		t.folded = append(t.folded, r)
	}
}

// expandFolded is ctrl+o: the last folded tool result, all of it; each
// ctrl+o that follows shows the one before.
func (t *TUI) expandFolded() {
	n := len(t.folded)
	switch {
	case n == 0:
		t.hint = "no folded tool result yet: ctrl+o shows one in full"
		return
	case t.expandBack >= n:
		t.hint = "that was the first folded result; ctrl+o again starts from the last"
		t.expandBack = 0
		return
	}
	r := t.folded[n-1-t.expandBack]
	t.expandBack++
	t.blockBreak("tool")
	label := "in full"
	if n > 1 {
		label = fmt.Sprintf("in full: folded result %d of %d", n-t.expandBack+1, n)
		if t.expandBack < n {
			label += " (ctrl+o again: the one before)"
		}
	}
	t.commitRule(label)
	t.commitLine(r.headline()...)
	t.commitRows(r.rows(t.width, 0, true))
	t.commitRows(t.pictures(r.content))
}

// preview is the result as the transcript first shows it, and whether
// that leaves some of it out: an edit's unchanged lines, lines past the
// first few.
func (r *toolResult) preview(width, limit int) (rows []string, folded bool) {
	raw := r.text()
	if r.isDiff(raw) {
		return r.rows(width, limit, false), true
	}
	return r.rows(width, limit, false), strings.Count(raw, "\n") >= toolPreviewLines
}

// text is the result as text, an image as its placeholder line.
func (r *toolResult) text() string {
	var text strings.Builder
	for _, b := range r.content {
		switch b.Type {
		case BlockText:
			text.WriteString(b.Text)
		case BlockImage:
			text.WriteString(readImageBlock(b).placeholder() + "\n")
		}
	}
	return strings.TrimRight(text.String(), "\n")
}

// isDiff says whether the result is shown as an edit's diff.
func (r *toolResult) isDiff(raw string) bool {
	return r.name == "edit" && !r.isErr && len(parseDiff(raw).hunks) > 0
}

// screenful is how many rows a result may take before it is folded: about
// a terminal's height, beside the live region.
func (t *TUI) screenful() int { return max(t.height-6, 2*toolPreviewLines) }

func (r *toolResult) headline() []span {
	mark, markSt := "✓ ", fgGreen
	if r.isErr {
		mark, markSt = "✗ ", fgRed
	}
	details := ""
	if r.details != "" {
		details = "  (" + oneLine(r.details) + ")"
	}
	if r.took > 0 {
		details += "  " + runTime(r.took)
	}
	return []span{{mark, markSt}, {oneLine(r.name), sBold}, {"  " + r.summary, 0}, {details, sDim}}
}

// runTime is how long a tool ran: tenths of a second under a minute.
func runTime(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return elapsed(d)
}

// rows lays out the result under its headline: an edit's diff within
// limit rows (all of it when full), or the first lines of anything else.
func (r *toolResult) rows(width, limit int, full bool) []string {
	raw := r.text()
	if raw == "" {
		return nil
	}
	// An edit's result is a sentence and a unified diff; what the user
	// wants to see is the lines it changed, where they are.
	if r.name == ToolEdit && !r.isErr {
		if d := parseDiff(raw); len(d.hunks) > 0 {
			return d.rows(width, limit, full)
		}
	}
	lines := strings.Split(drawText(raw), "\n")
	show := toolPreviewLines
	if full {
		show = fullResultLines
	}
	st := sDim
	if r.isErr {
		st = fgRed
	}
	var rows []string
	row := func(line string) { rows = append(rows, fitLine(width, span{"  │ ", sDim}, span{line, st})) }
	if !full && r.name == "bash" && len(lines) > show {
		// A command's last lines say how it went (a test run's summary,
		// the error it stopped on): the preview is its tail.
		n := len(lines) - show
		rows = append(rows, fitLine(width, span{fmt.Sprintf("  … %d earlier %s (ctrl+o shows all)", n, pluralNoun(n, "line", "lines")), sDim}))
		for _, line := range lines[n:] {
			row(line)
		}
		return rows
	}
	for i, line := range lines {
		if i == show {
			n := len(lines) - i
			more := fmt.Sprintf("  … %d more %s", n, pluralNoun(n, "line", "lines"))
			if !full {
				more += " (ctrl+o shows all)"
			}
			rows = append(rows, fitLine(width, span{more, sDim}))
			break
		}
		row(line)
	}
	return rows
}

// An edit's diff, read back from the unified diff the edit tool returns.

// diffLine is one line of a hunk: kind ' ', '-' or '+', the line's number
// in the file before (for '-') or after (for ' ' and '+'), and its text,
// clean.
type diffLine struct {
	kind byte
	num  int
	text string
}

type diffView struct {
	hunks [][]diffLine
	notes []string // lines after the hunks: the tool's note that it cut the diff
}

// parseDiff reads the hunks of a unified diff out of raw, the edit tool's
// text; anything before the first hunk is the tool's sentence and the file
// headers.
func parseDiff(raw string) diffView {
	var d diffView
	var oldNum, newNum int
	in := false
	for _, l := range strings.Split(raw, "\n") {
		if strings.HasPrefix(l, "@@ ") {
			o, n, ok := hunkStarts(l)
			if ok {
				oldNum, newNum, in = o, n, true
				d.hunks = append(d.hunks, nil)
				continue
			}
		}
		if !in {
			continue
		}
		h := &d.hunks[len(d.hunks)-1]
		switch {
		case l == "": // not a line of the hunk: every one has its mark
		case l[0] == ' ':
			*h = append(*h, diffLine{' ', newNum, drawText(l[1:])})
			oldNum, newNum = oldNum+1, newNum+1
		case l[0] == '-':
			*h = append(*h, diffLine{'-', oldNum, drawText(l[1:])})
			oldNum++
		case l[0] == '+':
			*h = append(*h, diffLine{'+', newNum, drawText(l[1:])})
			newNum++
		case l[0] == '\\': // "\ No newline at end of file"
		default:
			d.notes = append(d.notes, drawText(l))
			in = false
		}
	}
	return d
}

// hunkStarts reads "@@ -12,3 +12,4 @@": the first line numbers of a hunk.
func hunkStarts(l string) (oldNum, newNum int, ok bool) {
	f := strings.Fields(l)
	if len(f) < 4 || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return 0, 0, false
	}
	o, err1 := strconv.Atoi(strings.Split(f[1][1:], ",")[0])
	n, err2 := strconv.Atoi(strings.Split(f[2][1:], ",")[0])
	return max(o, 1), max(n, 1), err1 == nil && err2 == nil
}

// diffContext is how many unchanged lines are shown around a change.
const diffContext = 1

// groups cuts the hunks into the runs of lines shown: each change with
// diffContext unchanged lines around it, or, when full, every line the
// tool sent.
func (d diffView) groups(full bool) [][]diffLine {
	var out [][]diffLine
	for _, h := range d.hunks {
		if full {
			out = append(out, h)
			continue
		}
		keep := make([]bool, len(h))
		for i, l := range h {
			if l.kind != ' ' {
				for j := max(i-diffContext, 0); j <= min(i+diffContext, len(h)-1); j++ {
					keep[j] = true
				}
			}
		}
		var g []diffLine
		for i, l := range h {
			if keep[i] {
				g = append(g, l)
				continue
			}
			if g != nil {
				out, g = append(out, g), nil
			}
		}
		if g != nil {
			out = append(out, g)
		}
	}
	return out
}

// rows draws the diff: line numbers, removed lines red, added green, the
// characters that changed within a line reversed, a ⋮ between runs. When
// it is longer than limit rows (and not full), each run is cut to an
// equal share, so that no edit is hidden behind another.
func (d diffView) rows(width, limit int, full bool) []string {
	groups := d.groups(full)
	numW := 1
	for _, g := range groups {
		for _, l := range g {
			numW = max(numW, len(strconv.Itoa(l.num)))
		}
	}
	shares := make([]int, len(groups))
	total := len(groups) - 1 // the ⋮ rows
	for i, g := range groups {
		shares[i] = len(g)
		total += len(g)
	}
	if !full && limit > 0 && total > limit {
		fairShares(shares, limit-(len(groups)-1))
	}
	cont := []span{{"  │ " + strings.Repeat(" ", numW+3), sDim}}
	var rows []string
	for gi, g := range groups {
		if gi > 0 {
			rows = append(rows, fitLine(width, span{"  │ " + strings.Repeat(" ", max(numW-1, 0)) + "⋮", sDim}))
		}
		marks := changedRanges(g)
		for i, l := range g {
			if i == shares[gi] {
				n := len(g) - i
				rows = append(rows, fitLine(width, span{fmt.Sprintf("  │ %*s … %d more %s (ctrl+o shows all)", numW, "", n, pluralNoun(n, "line", "lines")), sDim}))
				break
			}
			st := style(0)
			switch l.kind {
			case '-':
				st = fgRed
			case '+':
				st = fgGreen
			}
			first := []span{{"  │ ", sDim}, {fmt.Sprintf("%*d ", numW, l.num), sDim}, {string(l.kind) + " ", st}}
			cells := appendCells(nil, l.text, st)
			if m := marks[i]; m[1] > m[0] {
				for c := m[0]; c < m[1] && c < len(cells); c++ {
					cells[c].st |= sReverse
				}
			}
			r, _ := wrapCells(cells, wrapSpec{width: width, first: first, cont: cont, hard: true})
			rows = append(rows, r...)
		}
	}
	for _, n := range d.notes {
		rows = append(rows, plainRows(n, width, sDim, []span{{"  ", 0}}, []span{{"  ", 0}})...)
	}
	return rows
}

// fairShares cuts sizes (lines of each run) so that the rows they take
// fit budget: a run longer than its share shows that many lines and a row
// saying how many more there are. Short runs keep all their lines; long
// ones share the rest equally, and each shows at least minShare lines.
func fairShares(sizes []int, budget int) {
	const minShare = 2
	cost := func(c int) int {
		sum := 0
		for _, s := range sizes {
			if s <= c {
				sum += s
			} else {
				sum += c + 1
			}
		}
		return sum
	}
	longest := 0
	for _, s := range sizes {
		longest = max(longest, s)
	}
	c := minShare
	for c < longest && cost(c+1) <= budget {
		c++
	}
	for i, s := range sizes {
		sizes[i] = min(s, c)
	}
}

// changedRanges finds, for a removed line followed by the line that
// replaced it (runs of as many '-' as '+' lines, paired in order), the
// cells of each that differ: what is between their common start and end.
// A pair that shares nothing is left unmarked.
func changedRanges(g []diffLine) [][2]int {
	marks := make([][2]int, len(g))
	for i := 0; i < len(g); {
		j := i
		for j < len(g) && g[j].kind == '-' {
			j++
		}
		k := j
		for k < len(g) && g[k].kind == '+' {
			k++
		}
		if j > i && k-j == j-i {
			for p := 0; p < j-i; p++ {
				a, b := markChange(g[i+p].text, g[j+p].text)
				marks[i+p], marks[j+p] = a, b
			}
		}
		i = max(k, i+1)
	}
	return marks
}

// markChange returns the cell ranges of a and b between their common
// prefix and suffix, or nothing when they share neither.
func markChange(a, b string) (ra, rb [2]int) {
	ca, cb := appendCells(nil, a, 0), appendCells(nil, b, 0)
	pre := 0
	for pre < len(ca) && pre < len(cb) && ca[pre].s == cb[pre].s {
		pre++
	}
	suf := 0
	for suf < len(ca)-pre && suf < len(cb)-pre && ca[len(ca)-1-suf].s == cb[len(cb)-1-suf].s {
		suf++
	}
	if pre == 0 && suf == 0 {
		return
	}
	return [2]int{pre, len(ca) - suf}, [2]int{pre, len(cb) - suf}
}
