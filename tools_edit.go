package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// The edit tool: exact-text replacements, all or nothing, the closest lines
// when an oldText does not match, and a unified diff of what changed. Part
// of the core with tools.go (docs/embedding.md).

type editTool struct{ env *ToolEnv }

func (editTool) Name() string { return ToolEdit }

func (editTool) Description() string {
	return "Replace text in a file. Each oldText must occur exactly once; all edits apply or none."
}

func (editTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"edits":{"type":"array","items":{"type":"object",` +
		`"properties":{"oldText":{"type":"string"},"newText":{"type":"string"}},"required":["oldText","newText"]}}},"required":["path","edits"]}`)
}

// editSpan is an edit located in the file: bytes [start, end) become newText.
type editSpan struct {
	index      int // 1-based, as the model numbers its edits
	start, end int
	newText    string
}

const utf8BOM = "\uFEFF"

func (t editTool) Run(ctx context.Context, raw json.RawMessage, _ func(string)) ToolResult {
	args, err := ParseEditArgs(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	p, edits := args.Path, args.Edits
	if ctx.Err() != nil {
		return errorResult("edit %s: aborted before editing", p)
	}
	w, err := t.env.openWrite(ctx, p)
	if err != nil {
		return errorResult("%v", err)
	}
	defer w.Close()
	switch info := w.Info; {
	case info == nil:
		return errorResult("edit %s: no such file (relative paths start at %s); create it with write", p, t.env.Cwd)
	case info.IsDir():
		return errorResult("edit %s: it is a directory", p)
	case !info.Mode().IsRegular():
		return errorResult("edit %s: not a regular file (a device, pipe or socket)", p)
	case info.Size() > editMaxBytes:
		return errorResult("edit %s: the file is %s, above the %s edit handles; change it with bash (e.g. sed)", p, sizeString(info.Size()), sizeString(editMaxBytes))
	}
	text, err := w.text(ctx, t.env, editMaxBytes)
	if err != nil {
		return errorResult("edit %s: %v", p, err)
	}
	// Match against the text with LF endings and no BOM, the way the model
	// sees it in read, then write back the file's own conventions.
	bom := strings.HasPrefix(text, utf8BOM)
	text = strings.TrimPrefix(text, utf8BOM)
	old, endings := lfOnly(text)

	spans, problem := locateEdits(old, edits)
	if problem != "" {
		if len(problem) > editMaxDiff {
			problem = prefixOf(problem, editMaxDiff) + "\n[… more problems cut; fix these first]"
		}
		return errorResult("edit %s failed; nothing was changed.\n%s", p, problem)
	}
	updated := applySpans(old, spans)
	if updated == old {
		return errorResult("edit %s: the edits change nothing (each newText equals its oldText)", p)
	}
	// Untouched text is copied from the file as it was, so a file with
	// mixed endings keeps each line's own; new text takes the ending of
	// the line it lands on.
	var ob strings.Builder
	if bom {
		ob.WriteString(utf8BOM)
	}
	pos := 0
	for _, s := range spans {
		ob.WriteString(text[endings.original(pos):endings.original(s.start)])
		ob.WriteString(strings.ReplaceAll(s.newText, "\n", endings.lineEnding(old, s.start)))
		pos = s.end
	}
	ob.WriteString(text[endings.original(pos):])
	out := ob.String()
	if err := w.replace(ctx, t.env, out); err != nil {
		return errorResult("edit %s: %v (the file is unchanged)", p, err)
	}
	noun := "edits"
	if len(spans) == 1 {
		noun = "edit"
	}
	return textResult(fmt.Sprintf("Applied %d %s to %s.\n\n%s", len(spans), noun, p, unifiedDiff(strings.TrimPrefix(filepath.ToSlash(filepath.Clean(p)), "/"), old, updated, spans)))
}

// crlfAt lists, in the LF-only form of a text, where each \n stood for a
// \r\n, so an edit made on the LF-only text maps back onto the original.
type crlfAt []int

// lfOnly turns every \r\n of text into \n.
func lfOnly(text string) (string, crlfAt) {
	var at crlfAt
	for i, removed := 0, 0; ; {
		j := strings.Index(text[i:], "\r\n")
		if j < 0 {
			break
		}
		at = append(at, i+j-removed)
		i, removed = i+j+2, removed+1
	}
	if len(at) == 0 {
		return text, nil
	}
	return strings.ReplaceAll(text, "\r\n", "\n"), at
}

// original is the offset in the original text of offset pos of the
// LF-only one.
func (at crlfAt) original(pos int) int {
	n, _ := slices.BinarySearch(at, pos)
	return pos + n
}

// lineEnding is the ending of the line that holds pos in lf (the last
// line's, for a position after the final newline).
func (at crlfAt) lineEnding(lf string, pos int) string {
	nl := strings.IndexByte(lf[pos:], '\n')
	switch {
	case nl >= 0:
		nl += pos
	case pos > 0:
		nl = strings.LastIndexByte(lf[:pos], '\n')
	}
	if _, crlf := slices.BinarySearch(at, nl); crlf && nl >= 0 {
		return "\r\n"
	}
	return "\n"
}

// locateEdits finds every edit in old, each exactly once and none
// overlapping another, and returns them in file order. problem explains
// every edit that cannot be placed, in terms the model can fix.
func locateEdits(old string, edits []TextEdit) (spans []editSpan, problem string) {
	var problems []string
	for i, e := range edits {
		n := i + 1
		find := strings.ReplaceAll(e.OldText, "\r\n", "\n")
		if find == "" {
			problems = append(problems, fmt.Sprintf("edit %d: oldText is empty; to replace a whole file use write.", n))
			continue
		}
		at := strings.Index(old, find)
		if at < 0 {
			problems = append(problems, fmt.Sprintf("edit %d: oldText was not found. %s", n, closestLines(old, find)))
			continue
		}
		if count, more, lines := occurrences(old, find, at); count > 1 {
			times := fmt.Sprintf("%d times", count)
			if more {
				times = "more than " + times
			}
			problems = append(problems, fmt.Sprintf("edit %d: oldText was found %s (at lines %s); include more of the surrounding text so it matches once.", n, times, strings.Join(lines, ", ")))
			continue
		}
		spans = append(spans, editSpan{index: n, start: at, end: at + len(find), newText: strings.ReplaceAll(e.NewText, "\r\n", "\n")})
	}
	if len(problems) > 0 {
		return nil, strings.Join(problems, "\n")
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	for k := 1; k < len(spans); k++ {
		if prev, cur := spans[k-1], spans[k]; cur.start < prev.end {
			first, second := min(prev.index, cur.index), max(prev.index, cur.index)
			line := 1 + strings.Count(old[:cur.start], "\n")
			return nil, fmt.Sprintf("edit %d: its oldText overlaps edit %d (both cover line %d); merge them into one edit.", second, first, line)
		}
	}
	return spans, ""
}

// maxCountedMatches bounds the counting of an ambiguous oldText: one
// letter in a huge file would otherwise take a pass per match.
const maxCountedMatches = 1000

// occurrences counts the matches of find in s, overlapping ones included,
// from the first at index first, and lists the lines of the first few. It
// stops at maxCountedMatches; more says there are others after those.
func occurrences(s, find string, first int) (count int, more bool, lines []string) {
	for at := first; at >= 0; count++ {
		if count == maxCountedMatches {
			return count, true, lines
		}
		if len(lines) < 10 {
			lines = append(lines, strconv.Itoa(1+strings.Count(s[:at], "\n")))
		}
		next := strings.Index(s[at+1:], find)
		at += 1 + next
		if next < 0 {
			at = -1
		}
	}
	return count, false, lines
}

// closestLines shows the model where its oldText probably was meant to
// match: the region whose first line is most like oldText's first
// non-blank line, whitespace ignored, with line numbers.
func closestLines(old, find string) string {
	want := strings.Split(find, "\n")
	k := 0 // the first line of oldText that is not blank
	for k < len(want)-1 && strings.TrimSpace(want[k]) == "" {
		k++
	}
	key, lines := squeezeSpace(want[k]), strings.Split(old, "\n")
	if key == "" {
		return "Read the file again and copy the text exactly."
	}
	keyGrams, grams := bigrams(key, nil), []uint16(nil)
	best, bestScore, bestRun := -1, 0.3, -1 // below 0.3, lines are not alike
	for i, l := range lines {
		score := 2.0 // above any similarity: equal but for whitespace
		if s := squeezeSpace(l); s != key {
			grams = bigrams(s, grams[:0])
			score = diceSimilarity(keyGrams, grams)
		}
		if score < bestScore {
			continue
		}
		// Of equally good first lines, prefer one whose next lines match too.
		run := 0
		for j := k + 1; j < min(len(want), k+20) && i-k+j < len(lines); j++ {
			if squeezeSpace(lines[i-k+j]) == squeezeSpace(want[j]) {
				run++
			}
		}
		if score > bestScore || run > bestRun {
			best, bestScore, bestRun = i, score, run
		}
	}
	if best < 0 {
		return "No line of the file resembles its first line; read the file again and copy the text exactly."
	}
	how := "is the most similar line to"
	if bestScore == 2 {
		how = "matches, except for whitespace,"
	}
	from := max(0, best-k-1)
	to := min(len(lines), best-k+len(want)+1, from+16)
	if to == len(lines) && to > from+1 && lines[to-1] == "" {
		to-- // the empty string after a final newline is not a line
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Line %d %s the first line of oldText. The file around it (line numbers are not part of the file):\n", best+1, how)
	for i := from; i < to; i++ {
		line := lines[i]
		if len(line) > closestLineMax {
			// The whole of a minified line would drown the answer.
			line = fmt.Sprintf("%s… [%d more bytes on this line]", prefixOf(line, closestLineMax), len(line)-closestLineMax)
		}
		fmt.Fprintf(&b, "%d\t%s\n", i+1, line)
	}
	b.WriteString("Copy the text exactly as the file has it and retry.")
	return b.String()
}

// closestLineMax is how much of each line closestLines shows.
const closestLineMax = 1 << 10

// squeezeSpace removes all white space, so indentation and spacing
// differences do not hide a match.
func squeezeSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// bigrams lists the byte pairs of s, sorted, for dice. Long lines are cut
// so one minified line cannot make the search slow.
func bigrams(s string, buf []uint16) []uint16 {
	if len(s) > 256 {
		s = s[:256]
	}
	for i := 0; i+1 < len(s); i++ {
		buf = append(buf, uint16(s[i])<<8|uint16(s[i+1]))
	}
	slices.Sort(buf)
	return buf
}

// diceSimilarity is the Sørensen–Dice similarity of two sorted bigram lists.
func diceSimilarity(a, b []uint16) float64 {
	if len(a)+len(b) == 0 {
		return 0
	}
	common := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			common, i, j = common+1, i+1, j+1
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return 2 * float64(common) / float64(len(a)+len(b))
}

// unifiedDiff renders the applied spans as a unified diff with three lines
// of context. The changed regions are known from the spans, so no general
// diff algorithm is needed: each span grows to whole lines, spans sharing
// a line merge, and lines a region leaves as they were are trimmed off.
func unifiedDiff(name, old, updated string, spans []editSpan) string {
	type region struct{ oldFrom, oldTo, newFrom, newTo int } // bytes, then lines
	var regions []region
	shift := 0 // how far text after the previous span moved
	for _, s := range spans {
		d := len(s.newText) - (s.end - s.start)
		from := strings.LastIndexByte(old[:s.start], '\n') + 1
		to := s.end
		if !atLineStart(old, to) || !atLineStart(updated, to+shift+d) {
			to = lineEnd(old, to)
		}
		if n := len(regions); n > 0 && from < regions[n-1].oldTo {
			regions[n-1].oldTo, regions[n-1].newTo = to, to+shift+d
		} else {
			regions = append(regions, region{from, to, from + shift, to + shift + d})
		}
		shift += d
	}
	oldLines, newLines := splitLines(old), splitLines(updated)
	changes := regions[:0]
	for _, r := range regions {
		c := region{oldFrom: strings.Count(old[:r.oldFrom], "\n"), newFrom: strings.Count(updated[:r.newFrom], "\n")}
		c.oldTo = c.oldFrom + len(splitLines(old[r.oldFrom:r.oldTo]))
		c.newTo = c.newFrom + len(splitLines(updated[r.newFrom:r.newTo]))
		for c.oldFrom < c.oldTo && c.newFrom < c.newTo && oldLines[c.oldFrom] == newLines[c.newFrom] {
			c.oldFrom, c.newFrom = c.oldFrom+1, c.newFrom+1
		}
		for c.oldFrom < c.oldTo && c.newFrom < c.newTo && oldLines[c.oldTo-1] == newLines[c.newTo-1] {
			c.oldTo, c.newTo = c.oldTo-1, c.newTo-1
		}
		if c.oldFrom < c.oldTo || c.newFrom < c.newTo {
			changes = append(changes, c)
		}
	}

	const context = 3
	b := &diffBuilder{room: editMaxDiff}
	b.add(fmt.Sprintf("--- a/%s\n+++ b/%s\n", name, name))
	for i := 0; i < len(changes) && !b.full; {
		j := i
		for j+1 < len(changes) && changes[j+1].oldFrom-changes[j].oldTo <= 2*context {
			j++
		}
		first, last := changes[i], changes[j]
		oldFrom, oldTo := max(0, first.oldFrom-context), min(len(oldLines), last.oldTo+context)
		newFrom, newTo := first.newFrom-(first.oldFrom-oldFrom), last.newTo+(oldTo-last.oldTo)
		b.add(fmt.Sprintf("@@ -%s +%s @@\n", hunkRange(oldFrom, oldTo), hunkRange(newFrom, newTo)))
		at := oldFrom
		for _, c := range changes[i : j+1] {
			b.lines(' ', oldLines[at:c.oldFrom])
			b.lines('-', oldLines[c.oldFrom:c.oldTo])
			b.lines('+', newLines[c.newFrom:c.newTo])
			at = c.oldTo
		}
		b.lines(' ', oldLines[at:oldTo])
		i = j + 1
	}
	if b.full {
		fmt.Fprintf(&b.out, "\n[… the diff is longer than %s and was cut here; every edit was applied. Read the file to check the rest.]\n", sizeString(editMaxDiff))
	}
	return b.out.String()
}

// editMaxDiff bounds the diff an edit returns, like read's and bash's
// limits: a change to a huge line must not put megabytes into the
// conversation, the session and every later request.
const editMaxDiff = 50 << 10

// diffBuilder holds at most room bytes of diff; what does not fit is
// dropped and full is set, so a huge file costs no more than the cap.
type diffBuilder struct {
	out  strings.Builder
	room int
	full bool
}

func (b *diffBuilder) add(s string) {
	if b.full {
		return
	}
	if room := b.room - b.out.Len(); len(s) > room {
		s = prefixOf(s, room)
		b.full = true
	}
	b.out.WriteString(s)
}

func (b *diffBuilder) lines(mark byte, lines []string) {
	for _, l := range lines {
		b.add(string(mark))
		b.add(l)
		if !strings.HasSuffix(l, "\n") {
			b.add("\n\\ No newline at end of file\n")
		}
	}
}

// prefixOf cuts s to at most n bytes without splitting a character.
func prefixOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return string(utf8Prefix([]byte(s[:n]), n))
}

func atLineStart(s string, i int) bool { return i == 0 || i == len(s) || s[i-1] == '\n' }

func lineEnd(s string, i int) int {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(s)
}

// splitLines splits s into lines that keep their newline.
func splitLines(s string) []string {
	var lines []string
	for s != "" {
		i := lineEnd(s, 0)
		lines = append(lines, s[:i])
		s = s[i:]
	}
	return lines
}

// hunkRange writes a hunk's line range; an empty range names the line
// before it, as diff and patch expect.
func hunkRange(from, to int) string {
	if from == to {
		return fmt.Sprintf("%d,0", from)
	}
	return fmt.Sprintf("%d,%d", from+1, to-from)
}

// applySpans is old with each located edit's text in place of its span.
func applySpans(old string, spans []editSpan) string {
	var b strings.Builder
	pos := 0
	for _, s := range spans {
		b.WriteString(old[pos:s.start])
		b.WriteString(s.newText)
		pos = s.end
	}
	b.WriteString(old[pos:])
	return b.String()
}
