package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// What the search tools (grep, find, ls) share: how a search starts, how
// it walks what lies beneath, the glob they match names with, and their
// limits.
//
// A search starts where read would: the path the model gives is walked
// as tools_open.go walks it, and the jail, the sandbox and the hidden
// directories judge where it ended; the permission rules judged it
// before the call ran (the gate). Beneath it the walk goes from opened
// directory to opened directory and never follows a symlink: a symlink
// is listed as one, never entered or read, so nothing a search meets
// leads it out of where its start was judged. Every path it meets is put
// to the sandbox and to the permission rules (ToolEnv.ReadRule) before
// it is listed, read or entered: what a Read deny rule keeps from read
// is neither listed nor searched. $ZOT_HOME (ToolEnv.Private) is never
// entered, sandbox or not: a search must not find zot's keys for the
// model without its naming them.

// Limits of the search tools: they keep a result within what a model
// can use and a call within bounded time and memory, whatever the tree.
const (
	searchMaxBytes    = 16 << 10 // of a result
	searchMaxNames    = 50000    // names one call looks at
	searchMaxDirNames = 100000   // names read of one directory
	searchMaxDepth    = 64       // directories deep
	grepMaxMatches    = 200
	grepMaxFiles      = 20000
	grepMaxRead       = 128 << 20 // bytes of files read in one call
	grepLineKeep      = 64 << 10  // a line is matched in its first 64 KiB
	grepLineShow      = 300       // bytes of a matching line shown
	findMaxResults    = 500
	lsMaxEntries      = 500
)

// PathVerdict is what the permission rules say of reading one path a
// search tool meets: allowed, asked about, or denied. Only an allowed
// path is listed or read: a search cannot stop to ask.
type PathVerdict int

const (
	PathAllowed PathVerdict = iota
	PathAsk
	PathDenied
)

// searchStart is where a search begins, opened: a directory, or for
// grep a regular file.
type searchStart struct {
	given string // the path as the model gave it, "." for none
	named string // the same, absolute
	dir   *openedDir
	file  *os.File
	info  fs.FileInfo
}

func (s *searchStart) close() {
	if s.dir != nil {
		s.dir.close()
	}
	if s.file != nil {
		s.file.Close()
	}
}

// searchRules are read's path rules in the sandbox the call runs in, with
// the search tools' own hidden directories added.
func (e *ToolEnv) searchRules(ctx context.Context) pathRules {
	r := e.toolRules(e.sandbox(ctx), false)
	if len(e.Private) > 0 {
		r.hidden = append(slices.Clone(r.hidden), e.Private...)
		r.fast = slices.DeleteFunc(r.fast, r.hides)
	}
	return r
}

// openSearch opens the directory or file p names ("" is the working
// directory), by read's rules; tool names the tool in errors.
func (e *ToolEnv) openSearch(ctx context.Context, tool, p string) (*searchStart, error) {
	if p == "" {
		p = "."
	}
	r := e.searchRules(ctx)
	abs := absPath(e.Cwd, p)
	for tries := 0; ; tries++ {
		at, err := walkPath(abs, &r)
		if err != nil {
			return nil, walkError(p, err, &r)
		}
		s := &searchStart{given: p, named: abs}
		err = r.allows(p, at.real())
		switch {
		case err != nil:
		case !at.found:
			err = fmt.Errorf("%s %s: no such file or directory (relative paths start at %s)", tool, p, e.Cwd)
		case at.info().IsDir():
			s.info = at.info()
			s.dir, err = at.openDirectory(r.hidden)
		case at.info().Mode().IsRegular() && tool == ToolGrep:
			s.info = at.info()
			s.file, err = at.openExisting()
		case tool == ToolGrep:
			err = fmt.Errorf("grep %s: not a regular file or a directory (a device, pipe or socket)", p)
		default:
			err = fmt.Errorf("%s %s: not a directory; read a file with read", tool, p)
		}
		at.close()
		if errors.Is(err, errChanged) && tries < 3 {
			continue
		}
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// display is how a result names the path rel beneath the start: as the
// model would give it to read.
func (s *searchStart) display(rel string) string {
	if s.given == "." || s.given == "./" {
		return rel
	}
	return filepath.Join(s.given, rel)
}

// searchEntry is one thing a walk met.
type searchEntry struct {
	rel  string // from the start, slash-separated
	name string
	info fs.FileInfo // a symlink as a symlink
	dir  *openedDir  // the directory it is in
}

// searchWalk walks beneath a search's directory, depth first in name
// order. cut says why it stopped early ("" when it did not); asked
// counts the paths an ask rule kept out, skipped what it could not look
// into (too deep, unreadable).
type searchWalk struct {
	env     *ToolEnv
	start   *searchStart
	skipGit bool // .git directories are not entered or listed
	names   int
	cut     string
	asked   int
	skipped int
}

// run calls visit on every entry the rules allow; visit says whether to
// go into a directory, and whether to stop.
func (w *searchWalk) run(ctx context.Context, visit func(searchEntry) (enter, stop bool)) {
	w.dir(ctx, w.start.dir, "", 0, visit)
}

func (w *searchWalk) dir(ctx context.Context, d *openedDir, rel string, depth int, visit func(searchEntry) (enter, stop bool)) (stop bool) {
	names, more, err := d.names(searchMaxDirNames)
	if err != nil {
		w.skipped++
		return false
	}
	if more && w.cut == "" {
		w.cut = fmt.Sprintf("%s has more than %d entries; only %d were looked at", w.start.display(rel), searchMaxDirNames, searchMaxDirNames)
	}
	for _, name := range names {
		if ctx.Err() != nil {
			w.cut = "aborted"
			return true
		}
		if w.names++; w.names > searchMaxNames {
			w.cut = fmt.Sprintf("looked at %d names, the most one call looks at", searchMaxNames)
			return true
		}
		if w.skipGit && name == ".git" {
			continue
		}
		r := path.Join(rel, name)
		if !w.allowed(r, filepath.Join(d.path, name)) {
			continue
		}
		info, err := d.stat(name)
		if err != nil {
			continue // gone since the listing
		}
		enter, stop := visit(searchEntry{rel: r, name: name, info: info, dir: d})
		if stop {
			return true
		}
		if !enter || !info.IsDir() {
			continue
		}
		if depth+1 >= searchMaxDepth {
			w.skipped++
			continue
		}
		sub, err := d.openDir(name, info)
		if err != nil {
			continue // hidden, unreadable, or swapped since the stat
		}
		stop = w.dir(ctx, sub, r, depth+1, visit)
		sub.close()
		if stop {
			return true
		}
	}
	return false
}

// allowed puts a path the walk met to the sandbox and the permission
// rules: named as the model would reach it, real where it is.
func (w *searchWalk) allowed(rel, real string) bool {
	if sb := w.env.Sandbox; sb != nil && sb.CheckRead(real) != nil {
		return false
	}
	if w.env.ReadRule == nil {
		return true
	}
	switch w.env.ReadRule(filepath.Join(w.start.named, rel), real) {
	case PathAllowed:
		return true
	case PathAsk:
		w.asked++
	}
	return false
}

// notes are the lines a result ends with about what the walk left out.
func (w *searchWalk) notes(narrow string) []string {
	var out []string
	if w.cut != "" && w.cut != "aborted" {
		out = append(out, fmt.Sprintf("[stopped: %s; %s]", w.cut, narrow))
	}
	if w.asked > 0 {
		out = append(out, fmt.Sprintf("[%d %s left out: the permission rules ask before reading them; read one with read to be asked]", w.asked, pluralNoun(w.asked, "path", "paths")))
	}
	if w.skipped > 0 {
		out = append(out, fmt.Sprintf("[%d %s could not be looked into (unreadable, or over %d levels deep)]", w.skipped, pluralNoun(w.skipped, "directory", "directories"), searchMaxDepth))
	}
	return out
}

// searchOutput gathers a result's lines, at most searchMaxBytes.
type searchOutput struct {
	b     strings.Builder
	lines int
	full  bool
}

// add adds a line, or says the result is full.
func (o *searchOutput) add(line string) bool {
	if o.full || o.b.Len()+len(line)+1 > searchMaxBytes {
		o.full = true
		return false
	}
	o.b.WriteString(line)
	o.b.WriteByte('\n')
	o.lines++
	return true
}

// result is the lines and the notes after them.
func (o *searchOutput) result(notes []string) ToolResult {
	text := o.b.String()
	for _, n := range notes {
		text += n + "\n"
	}
	return textResult(strings.TrimSuffix(text, "\n"))
}

// entryMark is how find and ls mark what is not a regular file, as ls -F
// does: a directory "/", a symlink "@", a FIFO "|", a socket "=", an
// executable file "*".
func entryMark(info fs.FileInfo) string {
	m := info.Mode()
	switch {
	case m.IsDir():
		return "/"
	case m&fs.ModeSymlink != 0:
		return "@"
	case m&fs.ModeNamedPipe != 0:
		return "|"
	case m&fs.ModeSocket != 0:
		return "="
	case m.IsRegular() && m&0o111 != 0:
		return "*"
	}
	return ""
}

// searchGlob is find's pattern and grep's glob: a pattern without a "/"
// matches a name at any depth ("*.go"); one with a "/" matches the path
// from the search's directory ("cmd/**/*_test.go"), "**" standing for
// any number of directories. {a,b} gives alternatives; the rest is
// path.Match's syntax.
type searchGlob struct {
	alts []globAlt
}

type globAlt struct {
	segs   []string
	byName bool
}

const maxGlobAlternatives = 64

func compileSearchGlob(pattern string) (*searchGlob, error) {
	alts, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &searchGlob{}
	for _, a := range alts {
		if strings.HasPrefix(a, "/") {
			return nil, fmt.Errorf("%q is absolute; patterns are relative to path: give the directory as path", a)
		}
		a = strings.TrimPrefix(a, "./")
		if a == "" {
			return nil, errors.New("an empty pattern matches nothing")
		}
		alt := globAlt{segs: strings.Split(strings.TrimSuffix(a, "/"), "/"), byName: !strings.Contains(strings.TrimSuffix(a, "/"), "/")}
		for _, s := range alt.segs {
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("%q: %v", a, err)
			}
		}
		g.alts = append(g.alts, alt)
	}
	return g, nil
}

// match says whether rel (slash-separated, from the search's directory)
// matches.
func (g *searchGlob) match(rel string) bool {
	for _, a := range g.alts {
		if a.byName {
			if ok, _ := path.Match(a.segs[0], path.Base(rel)); ok {
				return true
			}
		} else if globSegments(a.segs, strings.Split(rel, "/")) {
			return true
		}
	}
	return false
}

// globSegments matches path segments against pattern segments, "**"
// standing for any number of segments.
func globSegments(pat, segs []string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if globSegments(pat[1:], segs[i:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	ok, err := path.Match(pat[0], segs[0])
	return err == nil && ok && globSegments(pat[1:], segs[1:])
}

// expandBraces expands {a,b} alternatives, nested too: "*.{go,md}" is
// "*.go" and "*.md". A brace without its pair is a literal one.
func expandBraces(p string) ([]string, error) {
	open := -1
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			if depth--; depth > 0 {
				continue
			}
			var parts []string
			start, inner := open+1, 0
			for j := open + 1; j < i; j++ {
				switch p[j] {
				case '\\':
					j++
				case '{':
					inner++
				case '}':
					inner--
				case ',':
					if inner == 0 {
						parts = append(parts, p[start:j])
						start = j + 1
					}
				}
			}
			parts = append(parts, p[start:i])
			var out []string
			for _, part := range parts {
				rest, err := expandBraces(p[:open] + part + p[i+1:])
				if err != nil {
					return nil, err
				}
				out = append(out, rest...)
				if len(out) > maxGlobAlternatives {
					return nil, fmt.Errorf("%q has more than %d alternatives", p, maxGlobAlternatives)
				}
			}
			return out, nil
		}
	}
	return []string{p}, nil
}

// pluralNoun is one or many, by n.
func pluralNoun(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
