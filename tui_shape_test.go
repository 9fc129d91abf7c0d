package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// tuiShape is what the TUI's files are made of: the methods of each
// receiver type, where each type is declared, and the functions longer
// than longFuncLines.
type tuiShape struct {
	methods  map[string]int    // receiver type → number of methods
	declared map[string]string // type → file
	tuiIn    map[string]int    // file → number of methods on *TUI
	long     []string          // "file:func (lines)"
}

const longFuncLines = 80

// readTUIShape parses the TUI's non-test files in dir.
func readTUIShape(t *testing.T, dir string) tuiShape {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "tui*.go"))
	if err != nil {
		t.Fatal(err)
	}
	s := tuiShape{methods: map[string]int{}, declared: map[string]string{}, tuiIn: map[string]int{}}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(path)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if ts, ok := spec.(*ast.TypeSpec); ok {
						s.declared[ts.Name.Name] = name
					}
				}
			case *ast.FuncDecl:
				fn := d.Name.Name
				if d.Recv != nil && len(d.Recv.List) == 1 {
					recv := receiverName(d.Recv.List[0].Type)
					s.methods[recv]++
					if recv == "TUI" {
						s.tuiIn[name]++
					}
					fn = "(" + recv + ")." + fn
				}
				lines := fset.Position(d.End()).Line - fset.Position(d.Pos()).Line + 1
				if lines > longFuncLines {
					s.long = append(s.long, name+":"+fn)
				}
			}
		}
	}
	sort.Strings(s.long)
	return s
}

func receiverName(e ast.Expr) string {
	if st, ok := e.(*ast.StarExpr); ok {
		e = st.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}

// TestTUIComponents keeps the dialogs and the popup components of their
// own: each has a state type in its file, and neither file adds methods to
// *TUI beyond the few that join a component to the rest of the UI. It
// logs the counts (bench/tui-shape.sh prints them).
func TestTUIComponents(t *testing.T) {
	t.Parallel()
	s := readTUIShape(t, ".")
	for typ, file := range map[string]string{
		"dialog": "tui_dialogs.go", "dialogStack": "tui_dialogs.go",
		"pickerDialog": "tui_dialogs.go", "secretDialog": "tui_dialogs.go",
		"confirmDialog": "tui_dialogs.go", "panelDialog": "tui_dialogs.go",
		"popup": "tui_popup.go", "popupState": "tui_popup.go", "popupItem": "tui_popup.go",
	} {
		if got := s.declared[typ]; got != file {
			t.Errorf("type %s is declared in %q, want %s", typ, got, file)
		}
	}
	// What may join a component to the UI: opening a dialog closes the
	// popup, and a panel's keys go to the extension host.
	for file, limit := range map[string]int{"tui_dialogs.go": 3, "tui_popup.go": 3} {
		if n := s.tuiIn[file]; n > limit {
			t.Errorf("%s has %d methods on *TUI, at most %d: give the component the method", file, n, limit)
		}
	}
	if s.methods["dialogStack"] == 0 || s.methods["popupState"] == 0 {
		t.Errorf("components without methods: dialogStack %d, popupState %d", s.methods["dialogStack"], s.methods["popupState"])
	}
	var types []string
	for typ := range s.methods {
		types = append(types, typ)
	}
	sort.Strings(types)
	for _, typ := range types {
		t.Logf("methods on %s: %d", typ, s.methods[typ])
	}
	t.Logf("functions over %d lines: %d %v", longFuncLines, len(s.long), s.long)
}
