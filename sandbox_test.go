package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSandbox is a Sandbox's rules without a kernel behind them: for the
// checks and notes, which are plain path logic.
func fakeSandbox(t *testing.T, mode sandboxMode) (sb *Sandbox, work, tmp, home string) {
	base := t.TempDir()
	work, tmp, home = filepath.Join(base, "work"), filepath.Join(base, "tmp"), filepath.Join(base, "home")
	for _, d := range []string{work, tmp, home} {
		os.Mkdir(d, 0o700)
	}
	sb = &Sandbox{mode: mode, cwd: work, home: home, hidden: []string{home}, writable: []string{work, tmp}}
	if mode == sandboxReadOnly {
		sb.writable = []string{tmp}
	}
	return sb, work, tmp, home
}

func TestSandboxModesParse(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"off", "workspace", "workspace-offline", "read-only"} {
		if got, err := parseSandboxMode(m); err != nil || string(got) != m {
			t.Errorf("parse %q = %q, %v", m, got, err)
		}
	}
	for _, bad := range []string{"", "on", "Workspace", "readonly"} {
		if _, err := parseSandboxMode(bad); err == nil || !strings.Contains(err.Error(), "workspace-offline") {
			t.Errorf("parse %q: %v", bad, err)
		}
	}
}

func TestSandboxNotesNameTheSettingThatWouldAllowIt(t *testing.T) {
	t.Parallel()
	ws, work, tmp, home := fakeSandbox(t, sandboxWorkspace)
	off, _, _, _ := fakeSandbox(t, sandboxWorkspaceOffline)
	ro, roWork, _, _ := fakeSandbox(t, sandboxReadOnly)
	outside := t.TempDir()
	cases := []struct {
		name   string
		sb     *Sandbox
		output string
		want   string // "" for no note
	}{
		{"write outside", ws, "touch: cannot touch '" + outside + "/x': Permission denied", "sandbox_writable"},
		{"dash create outside", ws, "sh: 1: cannot create " + outside + "/x: Permission denied", "outside the writable directories"},
		{"gnu quotes", ws, "mkdir: cannot create directory ‘" + outside + "/d’: Permission denied", "refused this: " + outside + "/d"},
		{"inside is the file's own permission", ws, "sh: 1: cannot create " + work + "/x: Permission denied", ""},
		{"temp is writable", ws, "cp: cannot create regular file '" + tmp + "/x': Permission denied", ""},
		{"zot home", ws, "cat: " + home + "/auth.json: No such file or directory", "hidden from commands"},
		{"missing outside file is not the sandbox", ws, "cat: " + outside + "/nope: No such file or directory", ""},
		{"network in workspace is not the sandbox", ws, "curl: (7) Failed to connect to 127.0.0.1 port 9: Connection refused", ""},
		{"offline connect", off, "curl: (7) Failed to connect to 127.0.0.1 port 9: Connection refused", "--sandbox workspace"},
		{"offline go dial", off, "dial tcp 10.0.0.1:443: connect: network is unreachable", "no network"},
		{"offline dns", off, "curl: (6) Could not resolve host: example.com", "no network"},
		{"read-only relative", ro, "touch: cannot touch 'f': Permission denied", "--sandbox workspace"},
		{"read-only absolute", ro, "sh: 1: cannot create " + roWork + "/f: Read-only file system", "only the temp directory"},
		{"unrelated failure", ws, "make: *** [all] Error 1", ""},
	}
	for _, c := range cases {
		note, outside := c.sb.Explain(c.output)
		// A run outside the sandbox is offered for a write outside the
		// writable set and the network, never for $ZOT_HOME.
		if want := c.want != "" && c.name != "zot home"; outside != want {
			t.Errorf("%s: outside = %v, want %v", c.name, outside, want)
		}
		switch {
		case c.want == "" && note != "":
			t.Errorf("%s: unexpected note %q", c.name, note)
		case c.want != "" && !strings.Contains(note, c.want):
			t.Errorf("%s: note %q lacks %q", c.name, note, c.want)
		case c.want != "" && !strings.Contains(note, "sandbox "+string(c.sb.mode)):
			t.Errorf("%s: note %q does not name the mode", c.name, note)
		}
	}
}

func TestSandboxFileToolsFollowTheWritableSet(t *testing.T) {
	t.Parallel()
	ws, work, tmp, home := fakeSandbox(t, sandboxWorkspace)
	ro, roWork, roTmp, _ := fakeSandbox(t, sandboxReadOnly)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(home, "auth.json"), []byte(`{"anthropic":{"api_key":"sk-secret"}}`), 0o600)
	os.WriteFile(filepath.Join(outside, "notes.txt"), []byte("old\n"), 0o644)
	os.Symlink(outside, filepath.Join(work, "escape"))
	os.Symlink(home, filepath.Join(work, "zothome"))

	run := func(sb *Sandbox, cwd string, tool string, args obj) ToolResult {
		env := NewToolEnv(cwd, false)
		env.Sandbox = sb
		b, _ := json.Marshal(args)
		for _, tl := range BuiltinTools(env) {
			if tl.Name() == tool {
				return tl.Run(context.Background(), b, nil)
			}
		}
		t.Fatalf("no tool %s", tool)
		return ToolResult{}
	}
	cases := []struct {
		name      string
		sb        *Sandbox
		cwd, tool string
		args      obj
		refused   string // "" when it must succeed
	}{
		{"write in the workspace", ws, work, "write", obj{"path": "a.txt", "content": "x"}, ""},
		{"write in temp", ws, work, "write", obj{"path": filepath.Join(tmp, "a.txt"), "content": "x"}, ""},
		{"write outside", ws, work, "write", obj{"path": filepath.Join(outside, "new.txt"), "content": "x"}, "sandbox_writable"},
		{"write through a symlink out", ws, work, "write", obj{"path": "escape/new.txt", "content": "x"}, "outside the directories"},
		{"edit outside", ws, work, "edit", obj{"path": filepath.Join(outside, "notes.txt"), "edits": []obj{{"oldText": "old", "newText": "new"}}}, "sandbox workspace"},
		{"write zot home", ws, work, "write", obj{"path": filepath.Join(home, "config.json"), "content": `{"sandbox":"off"}`}, "$ZOT_HOME"},
		{"write zot home through a symlink", ws, work, "write", obj{"path": "zothome/config.json", "content": "{}"}, "$ZOT_HOME"},
		{"read zot home", ws, work, "read", obj{"path": filepath.Join(home, "auth.json")}, "hidden in every sandbox mode"},
		{"read outside", ws, work, "read", obj{"path": filepath.Join(outside, "notes.txt")}, ""},
		{"read-only: write in the workspace", ro, roWork, "write", obj{"path": "a.txt", "content": "x"}, "--sandbox workspace"},
		{"read-only: write in temp", ro, roWork, "write", obj{"path": filepath.Join(roTmp, "a.txt"), "content": "x"}, ""},
	}
	for _, c := range cases {
		res := run(c.sb, c.cwd, c.tool, c.args)
		text := Message{Content: res.Content}.Text()
		switch {
		case c.refused == "" && res.IsError:
			t.Errorf("%s: refused: %s", c.name, text)
		case c.refused != "" && (!res.IsError || !strings.Contains(text, c.refused)):
			t.Errorf("%s: got %q, want a refusal naming %q", c.name, text, c.refused)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "notes.txt")); string(b) != "old\n" {
		t.Errorf("the file outside changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(home, "config.json")); err == nil {
		t.Errorf("a config.json was written into $ZOT_HOME")
	}
}

func TestSandboxSettingsFromConfig(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	userHome, _ := os.UserHomeDir()
	write := func(s string) { os.WriteFile(filepath.Join(home, "config.json"), []byte(s), 0o600) }

	if s, err := loadSandboxSettings(home); err != nil || s.Mode != "" {
		t.Errorf("no file: %+v %v", s, err)
	}
	write(`{"provider":"openai","sandbox":"workspace","sandbox_writable":["~/.cache/go-build","/opt/x"]}`)
	s, err := loadSandboxSettings(home)
	if err != nil || s.Mode != "workspace" || s.Writable[0] != filepath.Join(userHome, ".cache/go-build") || s.Writable[1] != "/opt/x" {
		t.Errorf("settings %+v %v", s, err)
	}
	write(`{"sandbox_writable":["relative/dir"]}`)
	if _, err := loadSandboxSettings(home); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("relative entry: %v", err)
	}
	// A file zot cannot read may be asking for a sandbox: refuse rather
	// than run unconfined, unless the flag says what to do.
	write(`{"sandbox": "workspace",`)
	if _, _, err := sandboxFromSettings("", t.TempDir(), home, nil); err == nil || !strings.Contains(err.Error(), "--sandbox") {
		t.Errorf("broken config: %v", err)
	}
	if sb, _, err := sandboxFromSettings("off", t.TempDir(), home, nil); err != nil || sb != nil {
		t.Errorf("broken config with --sandbox off: %v %v", sb, err)
	}
	write(`{"sandbox": "strict"}`)
	if _, _, err := sandboxFromSettings("", t.TempDir(), home, nil); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("unknown mode in config: %v", err)
	}
}

// The TUI's /model must not drop the sandbox (or any other setting) from
// config.json: the next session would run unconfined.
func TestSaveConfigKeepsTheSandboxSettings(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path := filepath.Join(home, "config.json")
	os.WriteFile(path, []byte(`{"provider":"anthropic","sandbox":"workspace-offline","sandbox_writable":["/opt/cache"],"claude_hooks":true}`), 0o600)
	if err := saveConfig(home, userConfig{Provider: "openai", Model: "gpt-5"}); err != nil {
		t.Fatal(err)
	}
	s, err := loadSandboxSettings(home)
	b, _ := os.ReadFile(path)
	if err != nil || s.Mode != "workspace-offline" || len(s.Writable) != 1 || !strings.Contains(string(b), `"claude_hooks": true`) {
		t.Errorf("config.json after saving: %s (%v)", b, err)
	}
	if c, _ := loadConfig(home); c.Provider != "openai" || c.Model != "gpt-5" {
		t.Errorf("saved choice %+v", c)
	}
}

func TestSeatbeltProfile(t *testing.T) {
	t.Parallel()
	sb := &Sandbox{mode: sandboxWorkspaceOffline, writable: []string{"/Users/pat/src/app", `/tmp/we"ird\dir`},
		hidden: []string{"/Users/pat/Library/Application Support/zot"}}
	want := `(version 1)
(allow default)
(deny file-write*
  (require-all
    (require-not (subpath "/Users/pat/src/app"))
    (require-not (subpath "/tmp/we\"ird\\dir"))
    (require-not (literal "/dev/null"))
    (require-not (literal "/dev/zero"))
    (require-not (literal "/dev/full"))
    (require-not (literal "/dev/random"))
    (require-not (literal "/dev/urandom"))
))
(deny file-read* file-write*
  (subpath "/Users/pat/Library/Application Support/zot")
)
(deny network*)
`
	if got := seatbeltProfile(sb); got != want {
		t.Errorf("profile:\n%s\nwant:\n%s", got, want)
	}
	sb.mode = sandboxWorkspace
	if strings.Contains(seatbeltProfile(sb), "network") {
		t.Errorf("workspace keeps the network")
	}
}

func TestStatusBarShowsTheSandboxMode(t *testing.T) {
	t.Parallel()
	tui, _ := newTestTUI(t, 150, 30)
	tui.cfg.ToolEnv.SetJail(true)
	tui.cfg.Sandbox = string(sandboxWorkspaceOffline)
	row := plain(tui.statusRow(150))
	if !strings.Contains(row, "sandbox workspace-offline") || strings.Contains(row, "jail") {
		t.Errorf("status %q", row)
	}
}

func TestRPCStateCarriesTheSandbox(t *testing.T) {
	t.Parallel()
	p := startRPC(t, NewAgent(nil, "claude-sonnet-4-5", NewToolRegistry()), nil)
	if st := decodeData[rpcStateData](t, p.call("get_state")); st.Sandbox != "off" {
		t.Errorf("default state sandbox %q", st.Sandbox)
	}
	p = startRPC(t, NewAgent(nil, "claude-sonnet-4-5", NewToolRegistry()), func(c *rpcConfig) { c.Sandbox = "read-only" })
	if st := decodeData[rpcStateData](t, p.call("get_state")); st.Sandbox != "read-only" {
		t.Errorf("state sandbox %q", st.Sandbox)
	}
}

func TestAuditRecordsTheSandboxOfBashCalls(t *testing.T) {
	t.Parallel()
	l := &AuditLog{Path: filepath.Join(t.TempDir(), "audit.jsonl"), Cwd: "/w", Sandbox: "workspace"}
	for _, tool := range []string{"bash", "read"} {
		l.Record(&ToolRecord{Call: ToolCall{ID: "c-" + tool, Name: tool, Args: json.RawMessage(`{}`)}, Ran: true})
	}
	b, _ := os.ReadFile(l.Path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"sandbox":"workspace"`) || strings.Contains(lines[1], "sandbox") {
		t.Errorf("audit lines:\n%s", b)
	}
}
