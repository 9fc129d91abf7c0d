package main

import (
	"bytes"
	"fmt"
	"strings"
)

// What a session changed, from its checkpoints: each covered directory's
// tree before the session's first checkpoint of it against its tree after
// the last one that finished. A restore is a checkpoint too, so what
// /undo took back is not a change.

// ckFileDiff is one file a session changed.
type ckFileDiff struct {
	Path   string // relative in the project, absolute elsewhere
	Change string // added, modified, deleted
	Diff   string // a unified diff; "" when Note says why there is none
	Note   string // binary, a symbolic link, too big, not recorded
}

// ckDiffMaxFile is the largest file SessionDiff compares; a bigger one is
// named with its change, without its lines.
const ckDiffMaxFile = 1 << 20

// SessionDiff lists what session changed, in path order per directory.
func (c *Checkpoints) SessionDiff(session string) ([]ckFileDiff, error) {
	unlock, err := c.lockBoth()
	if err != nil {
		return nil, err
	}
	defer unlock()
	recs, err := c.sessionRecords(session)
	if err != nil {
		return nil, err
	}
	type span struct{ before, after string }
	var order []string
	roots := map[string]*span{}
	for _, r := range recs.Records {
		for _, root := range r.Roots {
			s := roots[root.Path]
			if s == nil && root.Before != "" {
				s = &span{before: root.Before}
				roots[root.Path] = s
				order = append(order, root.Path)
			}
			if s != nil && r.Done && root.After != "" {
				s.after = root.After
			}
		}
	}
	var out []ckFileDiff
	for _, root := range order {
		s := roots[root]
		if s.after == "" {
			continue // no call that covered it has finished
		}
		prefix := c.displayPrefix(root)
		var changed []string
		if err := c.diffPaths(s.before, s.after, "", func(rel string) { changed = append(changed, rel) }); err != nil {
			return out, err
		}
		for _, rel := range changed {
			out = append(out, c.fileDiff(s.before, s.after, rel, prefix))
		}
	}
	return out, nil
}

// fileDiff compares rel in two trees.
func (c *Checkpoints) fileDiff(before, after, rel, prefix string) ckFileDiff {
	d := ckFileDiff{Path: prefix + rel, Change: "modified"}
	x, inX, errX := c.lookup(before, rel)
	y, inY, errY := c.lookup(after, rel)
	switch {
	case errX != nil || errY != nil:
		d.Note = fmt.Sprintf("cannot be compared: %v", cmpErr(errX, errY))
		return d
	case !inX || x.Kind == kindDir:
		d.Change = "added"
	case !inY || y.Kind == kindDir:
		d.Change = "deleted"
	}
	text := func(e ckEntry, in bool) (string, string) {
		switch {
		case !in || e.Kind == kindDir:
			return "", ""
		case e.Kind == kindExcluded:
			return "", "not recorded (ignored or too big for the checkpoints)"
		case e.Kind == kindLink:
			return "", "a symbolic link"
		}
		b, err := c.readObject(e.Hash)
		switch {
		case err != nil:
			return "", err.Error()
		case len(b) > ckDiffMaxFile:
			return "", fmt.Sprintf("larger than %d KiB: lines not shown", ckDiffMaxFile>>10)
		case bytes.IndexByte(b, 0) >= 0:
			return "", "binary"
		}
		return string(b), ""
	}
	old, noteX := text(x, inX)
	updated, noteY := text(y, inY)
	if d.Note = cmpNote(noteX, noteY); d.Note != "" {
		return d
	}
	if old != updated || d.Change != "modified" {
		d.Diff = unifiedDiff(strings.TrimPrefix(d.Path, "/"), old, updated, lineSpans(old, updated))
	} else {
		d.Note = "only its mode changed"
	}
	return d
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func cmpNote(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ckDiffMaxCells bounds the line comparison (lines of one × lines of the
// other, after the common head and tail): past it the changed middle is
// one region.
const ckDiffMaxCells = 4 << 20

// lineSpans are the regions of old that differ from updated, line by
// line, as the edit tool's spans, for unifiedDiff: the longest common
// subsequence of lines keeps what did not change.
func lineSpans(old, updated string) []editSpan {
	a, b := splitLines(old), splitLines(updated)
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	offset := make([]int, len(a)+1) // byte offset of each line of old
	for i, l := range a {
		offset[i+1] = offset[i] + len(l)
	}
	ma, mb := a[head:len(a)-tail], b[head:len(b)-tail]
	whole := []editSpan{{start: offset[head], end: offset[len(a)-tail], newText: strings.Join(mb, "")}}
	if len(ma) == 0 || len(mb) == 0 || len(ma)*len(mb) > ckDiffMaxCells {
		return whole
	}
	// lcs[i][j]: the longest common subsequence of ma[i:] and mb[j:].
	n, m := len(ma), len(mb)
	lcs := make([]int32, (n+1)*(m+1))
	at := func(i, j int) int { return i*(m+1) + j }
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if ma[i] == mb[j] {
				lcs[at(i, j)] = lcs[at(i+1, j+1)] + 1
			} else {
				lcs[at(i, j)] = max(lcs[at(i+1, j)], lcs[at(i, j+1)])
			}
		}
	}
	var spans []editSpan
	i, j := 0, 0
	for i < n || j < m {
		if i < n && j < m && ma[i] == mb[j] {
			i, j = i+1, j+1
			continue
		}
		fi, fj := i, j
		for (i < n || j < m) && !(i < n && j < m && ma[i] == mb[j]) {
			if j == m || i < n && lcs[at(i+1, j)] >= lcs[at(i, j+1)] {
				i++
			} else {
				j++
			}
		}
		spans = append(spans, editSpan{start: offset[head+fi], end: offset[head+i], newText: strings.Join(mb[fj:j], "")})
	}
	return spans
}
