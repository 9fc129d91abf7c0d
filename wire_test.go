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

// copyBuildCore are the files every copy build starts from: the core, and
// the files the plugins share — the one way to run a process, the one
// door for outside text, the configuration and the command-line
// conventions, the models beyond the catalogue and the portable sessions
// (the TUI's /model and /session use them as zot's command line does), and
// the one YAML-subset reader (skills, templates and runok.yml use it).
var copyBuildCore = append([]string{"config.go", "cli.go", "models*.go", "session_port.go", "yaml.go"}, coreFiles...)

// coreFiles are the core alone: what an embedder copies (docs/embedding.md).
var coreFiles = []string{
	"agent.go", "agent_pipeline.go", "session.go", "providers*.go", "tools.go", "tools_edit.go", "tools_args.go",
	"proc*.go", "nodump_*.go", "untrusted.go",
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

// copyBuilds are the plugins, each with its files. Each builds with
// copyBuildCore and nothing else: no plugin reaches into another, or into
// main.go and wire.go, which alone know them all.
var copyBuilds = []struct {
	name  string
	files []string
	dirs  []string // embedded
}{
	{name: "shared"},
	{name: "ext", files: []string{"ext*.go"}},
	{name: "mcp", files: []string{"mcp*.go"}},
	{name: "hooks", files: []string{"hooks.go"}},
	// The validators and the permission rules are one gate.
	{name: "validate", files: []string{"validate*.go", "audit.go", "permissions*.go"}},
	{name: "skills", files: []string{"skills.go", "prompts.go"}, dirs: []string{"skills"}},
	{name: "plugins", files: []string{"plugins.go"}},
	{name: "rpc", files: []string{"rpc.go"}},
	{name: "sandbox", files: []string{"sandbox*.go"}},
	{name: "trust", files: []string{"trust.go"}},
	{name: "tui", files: []string{"tui*.go", "term_*.go"}},
}

// TestPluginsBuildAlone copies the core and one plugin into a package of
// its own, for every plugin, and the core alone with an embedder's lines
// into another, and builds them all with one go build: the
// compiler holds the layout of docs/embedding.md. The copies are library
// packages, so that go build compiles them in parallel and links none, and
// -trimpath lets the build cache serve a copy that did not change.
func TestPluginsBuildAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	t.Parallel()
	mod := t.TempDir()
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module copybuild\n\ngo 1.22\n"), 0o644)
	for _, b := range copyBuilds {
		dir := filepath.Join(mod, b.name)
		os.Mkdir(dir, 0o755)
		for _, pattern := range append(copyBuildCore, b.files...) {
			copyGoFiles(t, pattern, dir)
		}
		for _, d := range b.dirs {
			copyDir(t, d, filepath.Join(dir, d))
		}
	}
	// The core alone, with the lines an embedder writes around it.
	core := filepath.Join(mod, "core")
	os.Mkdir(core, 0o755)
	for _, pattern := range coreFiles {
		copyGoFiles(t, pattern, core)
	}
	os.WriteFile(filepath.Join(core, "embed.go"), []byte(embedExample), 0o644)
	cmd := exec.Command("go", "build", "-trimpath", "./...")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("a plugin does not build with the core alone (the directory names it): %v\n%s", err, out)
	}
}

// TestCopyBuildsCoverEveryFile keeps TestPluginsBuildAlone honest: every
// source file is the wiring's (main.go, wire.go and main's helpers), the
// core's or one plugin's.
func TestCopyBuildsCoverEveryFile(t *testing.T) {
	t.Parallel()
	owner := map[string]string{}
	claim := func(pattern, by string) {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if strings.HasSuffix(m, "_test.go") {
				continue
			}
			if owner[m] != "" && owner[m] != by {
				t.Errorf("%s is in both %s and %s", m, owner[m], by)
			}
			owner[m] = by
		}
	}
	for _, p := range []string{"main.go", "wire.go", "wire_gates.go"} {
		claim(p, "the wiring")
	}
	for _, p := range copyBuildCore {
		claim(p, "core")
	}
	for _, b := range copyBuilds {
		for _, p := range b.files {
			claim(p, b.name)
		}
	}
	all, _ := filepath.Glob("*.go")
	for _, f := range all {
		if !strings.HasSuffix(f, "_test.go") && owner[f] == "" {
			t.Errorf("%s is in no copy build: add it to the core or to its plugin", f)
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
