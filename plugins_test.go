package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// demoPlugin copies testdata/plugins/demo, with the fake MCP server of
// testdata/mcp beside its .mcp.json, into a directory of its own.
func demoPlugin(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo-src")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyTree("testdata/plugins/demo", dir); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "mcp"), 0o755)
	if err := copyFile(fakeServerBin(t), filepath.Join(dir, "mcp", "fakeserver"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPluginInstallUseDisableRemove takes the demo plugin through its
// life: each part used, with its origin shown, then disabled and removed.
func TestPluginInstallUseDisableRemove(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	stdout, stderr, code := z.run("plugin", "install", demoPlugin(t))
	installed := filepath.Join(z.home, "plugins", "demo")
	if code != 0 || !strings.Contains(stdout, "installed plugin demo 1.2.0 at "+installed+", enabled") ||
		!strings.Contains(stdout, "loads: hooks, skills, commands, mcp") || !strings.Contains(stdout, "not supported by zot: agents/ (subagents)") {
		t.Fatalf("install: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, _, _ = z.run("plugin", "list", "--json")
	var rows []pluginListRow
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 1 || !rows[0].Enabled ||
		strings.Join(rows[0].Unsupported, ";") != "agents/ (subagents)" {
		t.Errorf("list --json: %v %s", err, stdout)
	}

	if stdout, _, _ := z.run("skills", "list"); !strings.Contains(stdout, "demo:tidy") || !strings.Contains(stdout, "plugin:demo") {
		t.Errorf("skills list:\n%s", stdout)
	}
	if stdout, _, _ := z.run("prompts", "list"); !strings.Contains(stdout, "/demo:hello [name]") || !strings.Contains(stdout, "/demo:git:status") || !strings.Contains(stdout, "plugin:demo") {
		t.Errorf("prompts list:\n%s", stdout)
	}
	stdout, stderr, code = z.run("mcp", "list")
	if code != 0 || !strings.Contains(stdout, "demo:fake") || !strings.Contains(stdout, "ready") || !strings.Contains(stdout, filepath.Join(installed, ".mcp.json")) {
		t.Errorf("mcp list: exit %d\n%s%s", code, stdout, stderr)
	}

	// One session: the hook refuses a command, the plugin's command
	// expands and runs its !command (no trust needed), the MCP tool
	// answers, the skill loads.
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "echo forbidden"}),
		toolStep("t2", "mcp__demo_fake__echo", obj{"text": "via-plugin-server"}),
		toolStep("t3", "skill", obj{"name": "demo:tidy"}),
		replayStep{Events: anthropicEvents(gen{Text: "Done."})})
	stdout, stderr, code = z.run(append(anthropicFlags(srv), "-p", "/demo:hello", "Ann")...)
	if code != 0 || stdout != "Done.\n" {
		t.Fatalf("run: exit %d stdout %q stderr:\n%s", code, stdout, stderr)
	}
	reqs := srv.Requests()
	for i, want := range []string{
		`Say hello to Ann from the demo plugin.\nPlugin says: plugin-command-ran`,
		`demo guard: forbidden commands are refused`,
		`via-plugin-server`,
		`Remove the files nobody needs.`,
	} {
		if i >= len(reqs) || !strings.Contains(string(reqs[i].Body), want) {
			t.Errorf("request %d lacks %s", i, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(z.cwd, "plugin-root.txt")); strings.TrimSpace(string(b)) != installed {
		t.Errorf("the hook's CLAUDE_PLUGIN_ROOT = %q, want %q", b, installed)
	}
	var bys []string
	for _, e := range auditLines(t, z.home) {
		for _, d := range e.Decisions {
			bys = append(bys, d.By+"="+string(d.Decision))
		}
	}
	all := strings.Join(bys, "\n")
	for _, want := range []string{"prompt:demo:hello=request", "plugin:demo/hook:" + installed + "/hooks/guard.sh=deny"} {
		if !strings.Contains(all, want) {
			t.Errorf("audit decisions lack %s:\n%s", want, all)
		}
	}

	if stdout, _, code := z.run("plugin", "disable", "demo"); code != 0 || stdout != "plugin demo disabled\n" {
		t.Errorf("disable: %d %q", code, stdout)
	}
	if stdout, _, _ := z.run("plugin", "list"); !strings.Contains(stdout, "demo 1.2.0  disabled") {
		t.Errorf("list:\n%s", stdout)
	}
	if stdout, _, _ := z.run("skills", "list"); strings.Contains(stdout, "demo:tidy") {
		t.Errorf("a disabled plugin's skill loads:\n%s", stdout)
	}
	if stdout, _, _ := z.run("prompts", "list"); strings.Contains(stdout, "demo:hello") {
		t.Errorf("a disabled plugin's command loads:\n%s", stdout)
	}
	if stdout, _, code := z.run("plugin", "enable", "demo"); code != 0 || stdout != "plugin demo enabled\n" {
		t.Errorf("enable: %d %q", code, stdout)
	}
	if stdout, _, code := z.run("plugin", "remove", "demo", "-y"); code != 0 || !strings.Contains(stdout, "removed plugin demo") {
		t.Errorf("remove: %d %q", code, stdout)
	}
	if _, err := os.Stat(installed); err == nil {
		t.Errorf("%s is left after remove", installed)
	}
	if _, _, code := z.run("plugin", "remove", "demo", "-y"); code != 1 {
		t.Errorf("removing it again: exit %d", code)
	}
}

// TestPluginFailedInstallLeavesNothing: a bad name, a broken hooks.json, a
// directory that is no plugin and a git URL that cannot be cloned fail,
// and leave the plugins directory as it was.
func TestPluginFailedInstallLeavesNothing(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	badName := demoPlugin(t)
	os.WriteFile(filepath.Join(badName, ".claude-plugin", "plugin.json"), []byte(`{"name": "../escape"}`), 0o644)
	badHooks := demoPlugin(t)
	os.WriteFile(filepath.Join(badHooks, "hooks", "hooks.json"), []byte(`{"hooks": `), 0o644)
	for _, tt := range []struct{ src, want string }{
		{badName, `name "../escape" is not a plugin name`},
		{badHooks, "hooks.json: not a JSON object"},
		{t.TempDir(), "has no .claude-plugin/plugin.json: it is not a Claude Code plugin"},
		{"file://" + filepath.Join(t.TempDir(), "missing.git"), "git clone"},
	} {
		_, stderr, code := z.run("plugin", "install", tt.src)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("install %s: exit %d, stderr %q, want %q", tt.src, code, stderr, tt.want)
		}
		if entries, _ := os.ReadDir(filepath.Join(z.home, "plugins")); len(entries) != 0 {
			t.Errorf("install %s left %v behind", tt.src, entries)
		}
	}
	if _, stderr, code := z.run("plugin", "enable", "../x"); code != 1 || !strings.Contains(stderr, `"../x" is not a plugin name`) {
		t.Errorf("enable ../x: %d %s", code, stderr)
	}
	if stdout, _, code := z.run("plugin", "--help"); code != 0 || !strings.Contains(stdout, "zot plugin install") {
		t.Errorf("--help: %d %s", code, stdout)
	}
	if _, _, code := z.run("plugin", "frobnicate"); code != 2 {
		t.Errorf("unknown subcommand: exit %d", code)
	}
}
