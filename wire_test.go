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
	"sort"
	"strings"
	"testing"
)

// architecturePart is one row of a table of docs/architecture.md: a part
// of the layout (## Parts) or a layer inside the core (## Inside the core).
type architecturePart struct {
	name   string
	files  []string // globs
	dirs   []string // embedded directories
	mayUse []string // other rows; "everything" for the wiring
	wiring bool
}

// readArchitecture reads the parts table of docs/architecture.md: the one
// description of the layout, which the copy builds below hold the code to.
func readArchitecture(t *testing.T) []architecturePart {
	t.Helper()
	return readArchitectureTable(t, ".", "Parts")
}

// readArchitectureTable reads the table under "## heading" in dir's
// docs/architecture.md. Its first column names a row, the second lists its
// files, the third the rows it may use.
func readArchitectureTable(t *testing.T, dir, heading string) []architecturePart {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "\n## "+heading+"\n")
	section, _, _ = strings.Cut(section, "\n## ")
	var parts []architecturePart
	header := true
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| ---") {
			continue
		}
		if header { // the column names
			header = false
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
		t.Fatalf("docs/architecture.md: no table under \"## %s\" (%d rows)", heading, len(parts))
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
	for name, errs := range buildAlone(t, ".", readArchitecture(t), true) {
		t.Errorf("part %s does not build from what docs/architecture.md says it may use:\n%s", name, errs)
	}
}

// buildAlone type-checks each row of a table of dir's docs/architecture.md
// with the rows it may use, and nothing else, as a package of its own,
// and returns the type errors of each row that does not build. With
// embedCore, a row that may use nothing (the core) gets embedding.md's
// lines around it.
func buildAlone(t *testing.T, dir string, rows []architecturePart, embedCore bool) map[string]string {
	t.Helper()
	byName := map[string]architecturePart{}
	for _, p := range rows {
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
	failed := map[string]string{}
	for _, p := range rows {
		if p.wiring {
			continue // the wiring is the binary itself
		}
		var files []*ast.File
		for _, name := range append([]string{p.name}, p.mayUse...) {
			used, ok := byName[name]
			if !ok {
				t.Fatalf("docs/architecture.md: %s may use %q, which is no row of its table", p.name, name)
			}
			for _, pattern := range used.files {
				matches, _ := filepath.Glob(filepath.Join(dir, pattern))
				for _, m := range matches {
					if ok, err := build.Default.MatchFile(dir, filepath.Base(m)); err == nil && ok && !strings.HasSuffix(m, "_test.go") {
						files = append(files, parse(m, nil))
					}
				}
			}
			for _, d := range used.dirs {
				if info, err := os.Stat(filepath.Join(dir, d)); err != nil || !info.IsDir() {
					t.Errorf("docs/architecture.md: part %s embeds %s/, which is no directory", used.name, d)
				}
			}
		}
		if embedCore && len(p.mayUse) == 0 {
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
			failed[p.name] = strings.Join(errs, "\n")
		}
	}
	return failed
}

// TestCopyBuildsCoverEveryFile keeps TestPluginsBuildAlone and
// TestCoreLayersBuildAlone honest: every source file is in exactly one
// part of docs/architecture.md, and every file of the core in exactly one
// of its layers.
func TestCopyBuildsCoverEveryFile(t *testing.T) {
	t.Parallel()
	owner := fileOwners(t, readArchitecture(t), "part")
	all, _ := filepath.Glob("*.go")
	for _, f := range all {
		if !strings.HasSuffix(f, "_test.go") && owner[f] == "" {
			t.Errorf("%s is in no part of docs/architecture.md: add it to the part it belongs to", f)
		}
	}
	layer := fileOwners(t, readCoreLayers(t, "."), "layer")
	for f, part := range owner {
		if part == "core" && layer[f] == "" {
			t.Errorf("%s is in the core but in no layer of \"Inside the core\" in docs/architecture.md", f)
		}
		if part != "core" && layer[f] != "" {
			t.Errorf("%s is in layer %s of the core but in part %s", f, layer[f], part)
		}
	}
}

// fileOwners maps each source file in dir . to the row of a table whose
// globs match it, reporting a glob that matches nothing and a file in two
// rows.
func fileOwners(t *testing.T, rows []architecturePart, kind string) map[string]string {
	t.Helper()
	owner := map[string]string{}
	for _, p := range rows {
		for _, pattern := range p.files {
			matches, _ := filepath.Glob(pattern)
			if len(matches) == 0 {
				t.Errorf("docs/architecture.md: %s of %s %s matches no file", pattern, kind, p.name)
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
	return owner
}

// readCoreLayers reads the layers of "Inside the core" in dir's
// docs/architecture.md and holds them to an order: the table lists them
// from the bottom up, and a layer may use only layers listed before it.
func readCoreLayers(t *testing.T, dir string) []architecturePart {
	t.Helper()
	layers := readArchitectureTable(t, dir, "Inside the core")
	below := map[string]bool{}
	for _, l := range layers {
		if l.wiring {
			t.Errorf("docs/architecture.md: layer %s of the core may use everything; a layer names the layers below it", l.name)
		}
		for _, u := range l.mayUse {
			if !below[u] {
				t.Errorf("docs/architecture.md: layer %s of the core may use %s, which is not listed before it", l.name, u)
			}
		}
		below[l.name] = true
	}
	return layers
}

// TestCoreLayersBuildAlone type-checks each layer of the core, as
// TestPluginsBuildAlone does each part: from its files and the layers it
// may use, nothing else. The order docs/architecture.md states inside the
// core holds.
func TestCoreLayersBuildAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks every layer of the core")
	}
	t.Parallel()
	for name, errs := range buildAlone(t, ".", readCoreLayers(t, "."), false) {
		t.Errorf("layer %s of the core does not build from the layers docs/architecture.md says it may use:\n%s", name, errs)
	}
}

// TestCoreLayerReachingUpFails makes, in a copy of the core, the edit the
// layer test exists to catch: processes, low in the core, names the
// providers' Provider. The layers whose copy holds processes without the
// providers must fail, and only they.
func TestCoreLayerReachingUpFails(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks every layer of a copy of the core")
	}
	t.Parallel()
	dir := t.TempDir()
	copyFile := func(name string, extra string) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), append(b, extra...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(filepath.Join("docs", "architecture.md"), "")
	for f := range fileOwners(t, readCoreLayers(t, "."), "layer") {
		copyFile(f, "")
	}
	copyFile("proc.go", "\nfunc reachUp(p Provider) string { return p.Name() }\n")

	failed := buildAlone(t, dir, readCoreLayers(t, dir), false)
	var names []string
	for name := range failed {
		names = append(names, name)
	}
	sort.Strings(names)
	if got := strings.Join(names, " "); got != "processes tools" {
		t.Fatalf("layers failing after processes names Provider: %q, want \"processes tools\"\n%v", got, failed)
	}
	if !strings.Contains(failed["processes"], "undefined: Provider") {
		t.Errorf("processes fails for another reason than the reach up:\n%s", failed["processes"])
	}
}
