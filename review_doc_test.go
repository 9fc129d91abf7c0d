package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docs/review.md is only worth an auditor's day while it names what is
// there: a renamed function, a moved test or a count that grew with the
// code would send the reader to the wrong place or the wrong budget.

var (
	reviewRow      = regexp.MustCompile("^\\| \\d+ \\| `([^`]+)` \\| `([^`]+)` \\| (\\d+) \\|")
	reviewTotal    = regexp.MustCompile(`^\| \| \| \*\*total\*\* \| \*\*(\d+)\*\* \|`)
	reviewTest     = regexp.MustCompile("^- `((?:Test|Fuzz)\\w+)` \\(`([^`]+_test\\.go)`\\)")
	reviewOverview = regexp.MustCompile(`^\| \[([^\]]+)\]\(#[^)]*\) \| (\d+) \|`)
	reviewAll      = regexp.MustCompile(`^\| \*\*all\*\* \| \*\*(\d+)\*\* \|`)
)

// reviewBoundary is one "## " section of docs/review.md as written.
type reviewBoundary struct {
	name        string
	rows        []reviewRead
	tests       [][2]string // name, file
	total       int
	statedTotal int
}

type reviewRead struct {
	file, fn string
	lines    int
}

// funcLines gives the lines of each function and method of a Go file,
// from its doc comment to its closing brace (what a reader reads), keyed
// by "Name" or "Recv.Name"; parsed files are cached across calls.
type funcLines map[string]map[string]int

func (fl funcLines) of(fset *token.FileSet, file string) (map[string]int, error) {
	if m, ok := fl[file]; ok {
		return m, nil
	}
	if filepath.Base(file) != file {
		return nil, fmt.Errorf("%q is not a file of this package", file)
	}
	f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	m := map[string]int{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) == 1 {
			typ := fd.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			switch g := typ.(type) {
			case *ast.IndexExpr:
				typ = g.X
			case *ast.IndexListExpr:
				typ = g.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				name = id.Name + "." + name
			}
		}
		start := fd.Pos()
		if fd.Doc != nil {
			start = fd.Doc.Pos()
		}
		m[name] = fset.Position(fd.End()).Line - fset.Position(start).Line + 1
	}
	fl[file] = m
	return m, nil
}

// TestReviewDocNamesWhatIsThere reads docs/review.md and checks that every
// function it sends the reader to is declared in the file it names, that
// each stated line count is within 20% (or 2 lines) of the function's real
// length, that every test it names is declared in its file, that the
// totals add up, and that the whole stays a day's reading. On failure it
// prints the right numbers to paste.
func TestReviewDocNamesWhatIsThere(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("docs/review.md")
	if err != nil {
		t.Fatal(err)
	}
	var bounds []*reviewBoundary
	listed := map[string]int{}
	statedAll := -1
	var cur *reviewBoundary
	for i, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "## ") {
			cur = &reviewBoundary{name: strings.TrimPrefix(line, "## "), statedTotal: -1}
			bounds = append(bounds, cur)
			continue
		}
		if m := reviewOverview.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[2])
			listed[m[1]] = n
			continue
		}
		if m := reviewAll.FindStringSubmatch(line); m != nil {
			statedAll, _ = strconv.Atoi(m[1])
			continue
		}
		if cur == nil {
			continue
		}
		if m := reviewRow.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[3])
			cur.rows = append(cur.rows, reviewRead{m[1], m[2], n})
		} else if m := reviewTotal.FindStringSubmatch(line); m != nil {
			cur.statedTotal, _ = strconv.Atoi(m[1])
		} else if m := reviewTest.FindStringSubmatch(line); m != nil {
			cur.tests = append(cur.tests, [2]string{m[1], m[2]})
		} else if strings.HasPrefix(line, "| ") && strings.Contains(line, "`") && !strings.HasPrefix(line, "| # ") {
			t.Errorf("docs/review.md:%d: a table row the test cannot read: %q", i+1, line)
		}
	}

	fset := token.NewFileSet()
	funcs := funcLines{}
	var fix strings.Builder
	all, boundaries := 0, 0
	for _, b := range bounds {
		if len(b.rows) == 0 {
			continue // an introduction or a closing section, not a boundary
		}
		boundaries++
		if len(b.tests) == 0 {
			t.Errorf("%s: names no test that attacks it", b.name)
		}
		stated := 0
		for _, r := range b.rows {
			stated += r.lines
			m, err := funcs.of(fset, r.file)
			if err != nil {
				t.Errorf("%s: %s: %v", b.name, r.file, err)
				continue
			}
			real, ok := m[r.fn]
			if !ok {
				t.Errorf("%s: %s declares no %s", b.name, r.file, r.fn)
				continue
			}
			b.total += real
			if off := max(real-r.lines, r.lines-real); off > 2 && off*5 > real {
				t.Errorf("%s: %s %s is %d lines, the doc says %d", b.name, r.file, r.fn, real, r.lines)
			}
			fmt.Fprintf(&fix, "| `%s` | `%s` | %d |\n", r.file, r.fn, real)
		}
		for _, tt := range b.tests {
			m, err := funcs.of(fset, tt[1])
			if err != nil {
				t.Errorf("%s: %s: %v", b.name, tt[1], err)
			} else if _, ok := m[tt[0]]; !ok {
				t.Errorf("%s: %s declares no %s", b.name, tt[1], tt[0])
			}
		}
		// The totals are sums of the rows as written, so they are exact.
		if b.statedTotal != stated {
			t.Errorf("%s: the rows add up to %d, the total row says %d", b.name, stated, b.statedTotal)
		}
		if n, ok := listed[b.name]; !ok {
			t.Errorf("the overview table does not list %q", b.name)
		} else if n != stated {
			t.Errorf("the overview table gives %q %d lines, its section %d", b.name, n, stated)
		}
		all += stated
		fmt.Fprintf(&fix, "%s: %d lines (as written: %d)\n", b.name, b.total, stated)
	}
	if boundaries < 6 {
		t.Errorf("docs/review.md maps %d boundaries, want the six of THREATS.md and security.md", boundaries)
	}
	if len(listed) != boundaries {
		t.Errorf("the overview table lists %d boundaries, the doc has %d sections", len(listed), boundaries)
	}
	// The page promises a day's reading; past this it has to be trimmed.
	if all > 5200 {
		t.Errorf("the map asks for %d lines, more than a day's reading (5,200)", all)
	}
	if statedAll != all {
		t.Errorf("the overview's **all** row says %d, the sections add up to %d", statedAll, all)
	}
	if t.Failed() {
		t.Logf("the real counts:\n%s", fix.String())
	}
}
