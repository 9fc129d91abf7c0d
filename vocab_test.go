package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// protocolVocabularies are the named string types whose values are a wire
// protocol's names. Each lists its values as constants beside it; the
// code uses the constants, so that a misspelt name does not compile and
// one search finds every use.
var protocolVocabularies = map[string]string{
	"EventType":      "the --json / rpc event schema",
	"BlockType":      "content blocks",
	"Role":           "message roles",
	"rpcCommand":     "rpc commands",
	"extFrame":       "extension protocol frames",
	"extEventName":   "extension protocol events",
	"MCPServerState": "MCP server states",
	"ElicitMode":     "MCP elicitation modes",
	"ElicitAction":   "answers to MCP elicitations",
	"GateDecision":   "the audit log's decisions",
}

// TestProtocolNamesAreConstants type-checks the package and fails on a
// string literal used as one of protocolVocabularies anywhere but in the
// constants that define it: "tool_reslt" where an EventType is expected
// compiles, EventToolReslt does not.
func TestProtocolNamesAreConstants(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the package")
	}
	t.Parallel()
	fset := token.NewFileSet()
	var files []*ast.File
	names, _ := filepath.Glob("*.go")
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(".", name); err != nil || !ok {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", exportData(t))}
	if _, err := conf.Check("zot", fset, files, info); err != nil {
		t.Fatalf("type-check: %v", err)
	}
	var found []string
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if d, ok := n.(*ast.GenDecl); ok && d.Tok == token.CONST {
				return false // where the names are defined
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || lit.Value == `""` {
				return true
			}
			named, ok := info.Types[lit].Type.(*types.Named)
			if ok && protocolVocabularies[named.Obj().Name()] != "" {
				found = append(found, fmt.Sprintf("%s: literal %s of type %s (%s): use its constant", fset.Position(lit.Pos()), lit.Value, named.Obj().Name(), protocolVocabularies[named.Obj().Name()]))
			}
			return true
		})
	}
	sort.Strings(found)
	for _, f := range found {
		t.Error(f)
	}
}

// exportData finds the compiled export data of the package's imports
// (go list builds them into the build cache).
func exportData(t *testing.T) func(path string) (io.ReadCloser, error) {
	t.Helper()
	files, err := exportFiles()
	if err != nil {
		t.Fatal(err)
	}
	return func(path string) (io.ReadCloser, error) {
		if files[path] == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(files[path])
	}
}

// exportFiles is the export data file of each import, listed once for the
// type-checking tests: two go list runs cost half a second of CPU. The
// export data of what zot imports, not of zot itself: compiling the
// package again would cost the suite seconds for nothing.
var exportFiles = sync.OnceValues(func() (map[string]string, error) {
	imports, err := exec.Command("go", "list", "-f", "{{join .Imports \"\\n\"}}", ".").Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v", err)
	}
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}"}, strings.Fields(string(imports))...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %v", err)
	}
	files := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), " "); ok && file != "" {
			files[path] = file
		}
	}
	return files, nil
})
