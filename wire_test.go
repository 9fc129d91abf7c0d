package main

import (
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// architecturePart is one row of docs/architecture.md's table of parts.
type architecturePart struct {
	name   string
	files  []string // globs
	dirs   []string // embedded directories
	mayUse []string // other parts; "everything" for the wiring
	wiring bool
}

// readArchitecture reads the parts table of docs/architecture.md: the one
// description of the layout, which the copy builds below hold the code to.
func readArchitecture(t *testing.T) []architecturePart {
	t.Helper()
	b, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "\n## Parts\n")
	section, _, _ = strings.Cut(section, "\n## ")
	var parts []architecturePart
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| part ") || strings.HasPrefix(line, "| ---") {
			continue
		}
		p := architecturePart{name: strings.TrimSpace(cells[1])}
		for _, f := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[2], -1) {
			if d, ok := strings.CutSuffix(f[1], "/"); ok {
				p.dirs = append(p.dirs, d)
			} else {
				p.files = append(p.files, f[1])
			}
		}
		for _, u := range strings.Split(cells[3], ",") {
			if u = strings.TrimSpace(u); u == "everything" {
				p.wiring = true
			} else if u != "" {
				p.mayUse = append(p.mayUse, u)
			}
		}
		parts = append(parts, p)
	}
	if len(parts) < 3 {
		t.Fatalf("docs/architecture.md: no table of parts under \"## Parts\" (%d rows)", len(parts))
	}
	return parts
}

// embedExample is the ten-line main of docs/embedding.md, as a function of
// the core's copy.
const embedExample = `package main

import ("context"; "fmt"; "os")

func embed() {
	p, _ := NewProvider(ProviderConfig{Name: "anthropic", APIKey: os.Getenv("ANTHROPIC_API_KEY")})
	reg := NewToolRegistry()
	reg.SetSource("builtin", BuiltinTools(NewToolEnv(".", false)))
	a := NewAgent(p, "claude-sonnet-4-5", reg)
	fmt.Println(a.Prompt(context.Background(), os.Args[1], nil, func(e Event) { fmt.Println(e.Type) }))
}
`

// TestPluginsBuildAlone type-checks each part of docs/architecture.md with
// the parts it may use, and nothing else, as a package of its own (the
// core with an embedder's lines around it), as the compiler would for
// this system: the layout the doc states holds. It type-checks instead of
// building copies, which cost the suite a compile of each part.
func TestPluginsBuildAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks every part")
	}
	t.Parallel()
	parts := readArchitecture(t)
	byName := map[string]architecturePart{}
	for _, p := range parts {
		byName[p.name] = p
	}
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	parse := func(name string, src any) *ast.File {
		if f := parsed[name]; f != nil {
			return f
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed[name] = f
		return f
	}
	imports := importer.ForCompiler(fset, "gc", exportData(t))
	for _, p := range parts {
		if p.wiring {
			continue // the wiring is the binary itself
		}
		var files []*ast.File
		for _, name := range append([]string{p.name}, p.mayUse...) {
			used, ok := byName[name]
			if !ok {
				t.Fatalf("docs/architecture.md: part %q may use %q, which is no part", p.name, name)
			}
			for _, pattern := range used.files {
				matches, _ := filepath.Glob(pattern)
				for _, m := range matches {
					if ok, err := build.Default.MatchFile(".", m); err == nil && ok && !strings.HasSuffix(m, "_test.go") {
						files = append(files, parse(m, nil))
					}
				}
			}
			for _, d := range used.dirs {
				if info, err := os.Stat(d); err != nil || !info.IsDir() {
					t.Errorf("docs/architecture.md: part %s embeds %s/, which is no directory", used.name, d)
				}
			}
		}
		if len(p.mayUse) == 0 {
			files = append(files, parse("embed.go", embedExample))
		}
		var errs []string
		conf := types.Config{Importer: imports, Error: func(err error) {
			if len(errs) < 10 {
				errs = append(errs, err.Error())
			}
		}}
		conf.Check("copybuild/"+p.name, fset, files, nil)
		if len(errs) > 0 {
			t.Errorf("part %s does not build from what docs/architecture.md says it may use:\n%s", p.name, strings.Join(errs, "\n"))
		}
	}
}

// TestCopyBuildsCoverEveryFile keeps TestPluginsBuildAlone honest: every
// source file is in exactly one part of docs/architecture.md.
func TestCopyBuildsCoverEveryFile(t *testing.T) {
	t.Parallel()
	owner := map[string]string{}
	for _, p := range readArchitecture(t) {
		for _, pattern := range p.files {
			matches, _ := filepath.Glob(pattern)
			if len(matches) == 0 {
				t.Errorf("docs/architecture.md: %s of part %s matches no file", pattern, p.name)
			}
			for _, m := range matches {
				if strings.HasSuffix(m, "_test.go") {
					continue
				}
				if owner[m] != "" && owner[m] != p.name {
					t.Errorf("%s is in both %s and %s", m, owner[m], p.name)
				}
				owner[m] = p.name
			}
		}
	}
	all, _ := filepath.Glob("*.go")
	for _, f := range all {
		if !strings.HasSuffix(f, "_test.go") && owner[f] == "" {
			t.Errorf("%s is in no part of docs/architecture.md: add it to the part it belongs to", f)
		}
	}
}
