package main

import (
	"io/fs"
	"os"
	"os/exec"
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
const embedExample = `package copybuild

import ("context"; "fmt"; "os")

func embed() {
	p, _ := NewProvider(ProviderConfig{Name: "anthropic", APIKey: os.Getenv("ANTHROPIC_API_KEY")})
	reg := NewToolRegistry()
	reg.SetSource("builtin", BuiltinTools(NewToolEnv(".", false)))
	a := NewAgent(p, "claude-sonnet-4-5", reg)
	fmt.Println(a.Prompt(context.Background(), os.Args[1], nil, func(e Event) { fmt.Println(e.Type) }))
}
`

// TestPluginsBuildAlone copies each part of docs/architecture.md with the
// parts it may use, and nothing else, into a package of its own (the core
// with an embedder's lines around it), and builds them all with one go
// build: the compiler holds the layout the doc states. The copies are
// library packages, so that go build compiles them in parallel and links
// none, and -trimpath lets the build cache serve a copy that did not change.
func TestPluginsBuildAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	t.Parallel()
	parts := readArchitecture(t)
	byName := map[string]architecturePart{}
	for _, p := range parts {
		byName[p.name] = p
	}
	mod := t.TempDir()
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module copybuild\n\ngo 1.22\n"), 0o644)
	for _, p := range parts {
		if p.wiring {
			continue // the wiring is the binary itself
		}
		dir := filepath.Join(mod, p.name)
		os.Mkdir(dir, 0o755)
		for _, name := range append([]string{p.name}, p.mayUse...) {
			used, ok := byName[name]
			if !ok {
				t.Fatalf("docs/architecture.md: part %q may use %q, which is no part", p.name, name)
			}
			for _, pattern := range used.files {
				copyGoFiles(t, pattern, dir)
			}
			for _, d := range used.dirs {
				copyDir(t, d, filepath.Join(dir, d))
			}
		}
		if len(p.mayUse) == 0 {
			os.WriteFile(filepath.Join(dir, "embed.go"), []byte(embedExample), 0o644)
		}
	}
	cmd := exec.Command("go", "build", "-trimpath", "./...")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("a part does not build from what docs/architecture.md says it may use (the directory names it): %v\n%s", err, out)
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

var packageMain = regexp.MustCompile(`(?m)^package main$`)

// copyGoFiles copies the source files that match pattern into dir, as
// files of package copybuild.
func copyGoFiles(t *testing.T, pattern, dir string) {
	t.Helper()
	matches, err := filepath.Glob(pattern)
	if err != nil || len(matches) == 0 {
		t.Fatalf("no file matches %s", pattern)
	}
	for _, m := range matches {
		if strings.HasSuffix(m, "_test.go") {
			continue
		}
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		b = packageMain.ReplaceAll(b, []byte("package copybuild"))
		if err := os.WriteFile(filepath.Join(dir, m), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// copyDir copies a directory tree (a go:embed one).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", from, err)
	}
}
