package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
)

// grepTool searches the lines of files for a regular expression (Go's
// regexp: RE2 syntax, linear time whatever the pattern), as tools_search.go
// walks them: binary files (a NUL byte in the first 8 KiB) and .git are
// skipped, and the result is bounded (grepMaxMatches, searchMaxBytes,
// grepMaxFiles, grepMaxRead) with a note saying what stopped it.
type grepTool struct{ env *ToolEnv }

func (grepTool) Name() string { return ToolGrep }

func (grepTool) ReadOnly() bool { return true }

func (grepTool) Description() string {
	return "Search file contents for a regular expression (RE2 syntax), skipping binary files and .git. Matches come back as path:line:text."
}

func (grepTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"},` +
		`"glob":{"type":"string","description":"files to search, e.g. *.go"},"ignore_case":{"type":"boolean"}},"required":["pattern"]}`)
}

func (t grepTool) Run(ctx context.Context, raw json.RawMessage, _ func(string)) ToolResult {
	args, err := ParseGrepArgs(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	expr := args.Pattern
	if args.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return errorResult("grep: %v (the syntax is RE2: no lookaround or backreferences)", err)
	}
	var glob *searchGlob
	if args.Glob != "" {
		if glob, err = compileSearchGlob(args.Glob); err != nil {
			return errorResult("grep: glob %v", err)
		}
	}
	start, err := t.env.openSearch(ctx, ToolGrep, args.Path)
	if err != nil {
		return errorResult("%v", err)
	}
	defer start.close()

	g := &grepRun{re: re, out: &searchOutput{}}
	if start.file != nil {
		if bin, err := g.file(ctx, start.file, start.given); err != nil {
			return errorResult("grep %s: %v", start.given, err)
		} else if bin {
			return errorResult("grep %s: it looks binary (a NUL byte in its first 8 KiB)", start.given)
		}
		return g.result(start.given, nil)
	}
	w := &searchWalk{env: t.env, start: start, skipGit: true}
	w.run(ctx, func(e searchEntry) (enter, stop bool) {
		if e.info.IsDir() {
			return true, false
		}
		if !e.info.Mode().IsRegular() || glob != nil && !glob.match(e.rel) {
			return false, false // symlinks are not followed
		}
		if g.files++; g.files > grepMaxFiles {
			w.cut = fmt.Sprintf("searched %d files, the most one call searches", grepMaxFiles)
			return false, true
		}
		f, err := e.dir.openFile(e.name, e.info)
		if err != nil {
			g.unreadable++
			return false, false
		}
		bin, err := g.file(ctx, f, start.display(e.rel))
		f.Close()
		switch {
		case err != nil:
			g.unreadable++
		case bin:
			g.binary++
		}
		if g.stop != "" {
			w.cut = g.stop
			return false, true
		}
		return false, false
	})
	return g.result(start.given, w)
}

// grepRun is one call's search: its matches so far and what it skipped.
type grepRun struct {
	re         *regexp.Regexp
	out        *searchOutput
	matches    int
	files      int
	read       int64
	binary     int
	unreadable int
	stop       string // why the search must stop, "" to go on
	buf        []byte
}

// file searches one opened file, shown as name, and says whether it was
// binary (then it is not searched).
func (g *grepRun) file(ctx context.Context, f *os.File, name string) (binary bool, err error) {
	br := bufio.NewReaderSize(f, 64<<10)
	head, err := br.Peek(sniffBytes)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return false, err
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return true, nil
	}
	for line := 1; ; line++ {
		var n int64
		g.buf, n, err = readLine(ctx, br, grepLineKeep, g.buf[:0])
		g.read += n
		if n == 0 {
			if err == io.EOF {
				err = nil
			}
			return false, err
		}
		text := bytes.TrimSuffix(bytes.TrimSuffix(g.buf, []byte("\n")), []byte("\r"))
		if g.re.Match(text) {
			g.matches++
			shown := string(text)
			if len(shown) > grepLineShow {
				shown = truncate(shown, grepLineShow)
			}
			if !g.out.add(name + ":" + strconv.Itoa(line) + ":" + shown) {
				g.stop = fmt.Sprintf("the result reached %s", sizeString(searchMaxBytes))
				return false, nil
			}
			if g.matches >= grepMaxMatches {
				g.stop = fmt.Sprintf("%d matches, the most one call returns", grepMaxMatches)
				return false, nil
			}
		}
		if g.read > grepMaxRead {
			g.stop = fmt.Sprintf("read %s of files, the most one call reads", sizeString(grepMaxRead))
			return false, nil
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// result is the matches and the notes: what stopped the search, what it
// could not search.
func (g *grepRun) result(where string, w *searchWalk) ToolResult {
	var notes []string
	narrow := "narrow the pattern, path or glob"
	if w != nil {
		notes = w.notes(narrow)
	} else if g.stop != "" {
		notes = append(notes, fmt.Sprintf("[stopped: %s; %s]", g.stop, narrow))
	}
	if g.binary > 0 {
		notes = append(notes, fmt.Sprintf("[%d binary %s skipped]", g.binary, pluralNoun(g.binary, "file", "files")))
	}
	if g.unreadable > 0 {
		notes = append(notes, fmt.Sprintf("[%d %s could not be read]", g.unreadable, pluralNoun(g.unreadable, "file", "files")))
	}
	if g.matches == 0 {
		searched := ""
		if w != nil {
			searched = fmt.Sprintf(" (%d %s searched)", min(g.files, grepMaxFiles), pluralNoun(g.files, "file", "files"))
		}
		g.out.add(fmt.Sprintf("No lines match %s in %s%s.", g.re, where, searched))
	}
	return g.out.result(notes)
}
