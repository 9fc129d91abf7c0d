package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What the rules add to a bash call is the time of the gate: split the line
// once, then each rule source judges each simple command. The runok
// configuration here is the size of a real one with presets: 200 rules,
// wrappers, a Claude Code settings file with 50 rules beside it.

func benchmarkRules(b *testing.B) (*PermissionRules, string) {
	dir := b.TempDir()
	home := filepath.Join(dir, "home")
	cwd := filepath.Join(dir, "proj")
	os.MkdirAll(filepath.Join(home, ".config", "runok"), 0o755)
	os.MkdirAll(cwd, 0o755)
	var y strings.Builder
	y.WriteString("definitions:\n  wrappers:\n    - 'sudo <cmd>'\n    - 'env <opts> <vars> <cmd>'\n    - 'xargs <opts> <cmd>'\n    - \"find * -exec|-execdir <cmd> \\\\;|+\"\nrules:\n")
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&y, "  - allow: 'tool%d *'\n  - deny: 'tool%d -f|--force *'\n  - ask: 'tool%d push [-u *] *'\n  - allow: 'tool%d -X|--request GET|HEAD *'\n", i, i, i, i)
	}
	y.WriteString("  - allow: 'git *'\n  - deny: 'git push -f|--force *'\n  - allow: 'curl [-s] -X|--request GET *'\n")
	os.WriteFile(filepath.Join(home, ".config", "runok", "runok.yml"), []byte(y.String()), 0o644)
	var allow []string
	for i := 0; i < 50; i++ {
		allow = append(allow, fmt.Sprintf("Bash(tool%d:*)", i))
	}
	b2, _ := json.Marshal(perms("allow", append(allow, "Bash(git:*)", "Bash(curl:*)"), "deny", []string{"Read(./.env)"}))
	os.MkdirAll(filepath.Join(home, ".claude"), 0o755)
	os.WriteFile(filepath.Join(home, ".claude", "settings.json"), b2, 0o644)
	rules := LoadPermissionRules(PermissionSources{Cwd: cwd, UserHome: home, ConfigHome: filepath.Join(home, ".config")})
	if !rules.Active() || len(rules.StartupProblems()) > 0 {
		b.Fatalf("rules: %v", rules.StartupProblems())
	}
	return rules, cwd
}

func BenchmarkPermissionGateBash(b *testing.B) {
	rules, cwd := benchmarkRules(b)
	gate := PermissionGate(nil, rules, cwd)
	call := ToolCall{Name: "bash", Args: json.RawMessage(`{"command":"git status && sudo git log --oneline -n 5 | xargs -n1 echo; curl -s -X GET https://api.example.com/v1/items"}`)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := gate(context.Background(), call); r.Verdict != GateAsk {
			b.Fatalf("%+v", r)
		}
	}
}

func BenchmarkPermissionGateRead(b *testing.B) {
	rules, cwd := benchmarkRules(b)
	gate := PermissionGate(nil, rules, cwd)
	call := ToolCall{Name: "read", Args: json.RawMessage(`{"path":"src/main.go"}`)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		gate(context.Background(), call)
	}
}

func BenchmarkLoadPermissionRules(b *testing.B) {
	_, cwd := benchmarkRules(b)
	home := filepath.Join(filepath.Dir(cwd), "home")
	for i := 0; i < b.N; i++ {
		LoadPermissionRules(PermissionSources{Cwd: cwd, UserHome: home, ConfigHome: filepath.Join(home, ".config")})
	}
}
