package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// hookNotes records what the hooks showed the user.
type hookNotes struct {
	mu    sync.Mutex
	lines []string
}

func (n *hookNotes) add(level, msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lines = append(n.lines, level+": "+msg)
}

func (n *hookNotes) text() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.lines, "\n")
}

func hooksTestdata(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "hooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// specHook is the command running testdata/hooks/spechook with spec.
func specHook(t testing.TB, spec obj) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "spec-*.json")
	if err != nil {
		t.Fatal(err)
	}
	json.NewEncoder(f).Encode(spec)
	f.Close()
	return strconv.Quote(buildGo(t, hooksTestdata(t, "spechook"))) + " " + strconv.Quote(f.Name())
}

// shHook is the command running one of the sh scripts in testdata/hooks.
func shHook(t testing.TB, script string, args ...string) string {
	cmd := strconv.Quote(hooksTestdata(t, script))
	for _, a := range args {
		cmd += " " + strconv.Quote(a)
	}
	return cmd
}

func writeSettings(t testing.TB, path string, hooks obj) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	b, _ := json.MarshalIndent(obj{"hooks": hooks}, "", "  ")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// group is one matcher group of a settings file.
func group(matcher string, commands ...string) obj {
	var hs []obj
	for _, c := range commands {
		hs = append(hs, obj{"type": "command", "command": c})
	}
	return obj{"matcher": matcher, "hooks": hs}
}

// newTestHooks loads hooks from cwd/.claude/settings.json holding hooks.
func newTestHooks(t *testing.T, hooks obj) (*Hooks, *hookNotes, string) {
	t.Helper()
	cwd := t.TempDir()
	writeSettings(t, filepath.Join(cwd, ".claude", "settings.json"), hooks)
	notes := &hookNotes{}
	h := NewHooks(HookConfig{Files: hookSettingsFiles(cwd, ""), Cwd: cwd, SessionID: "sess-1", TranscriptPath: "/tmp/sess-1.jsonl", Model: "m1", Source: "startup", OnNote: notes.add})
	return h, notes, cwd
}

func readRecords(t *testing.T, path string) []obj {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no hook input recorded: %v", err)
	}
	var out []obj
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var o obj
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("recorded %q: %v", line, err)
		}
		out = append(out, o)
	}
	return out
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestHooksMatcherFollowsClaudeCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		matcher string
		yes     []string
		no      []string
	}{
		{"", []string{"Bash", "mcp__fs__read"}, nil},
		{"*", []string{"Bash", "weather"}, nil},
		{"Bash", []string{"Bash"}, []string{"BashOutput", "bash", "Bash2"}},
		{"Edit|Write", []string{"Edit", "Write"}, []string{"MultiEdit", "Read"}},
		{"Edit, Write", []string{"Edit", "Write"}, []string{"Edit, Write"}},
		{"mcp__my-server__get", []string{"mcp__my-server__get"}, []string{"mcp__my-server__getx"}},
		{"mcp__.*", []string{"mcp__fs__read", "mcp__git__log"}, []string{"Bash"}},
		{"mcp__fs__.*", []string{"mcp__fs__read"}, []string{"mcp__git__log"}},
		{"Notebook.*", []string{"NotebookEdit"}, []string{"Edit"}},
		{".*Edit", []string{"Edit", "MultiEdit"}, []string{"Write"}},
	}
	for _, tt := range tests {
		match, err := compileHookMatcher(tt.matcher)
		if err != nil {
			t.Fatalf("%q: %v", tt.matcher, err)
		}
		for _, s := range tt.yes {
			if !match(s) {
				t.Errorf("%q does not match %q", tt.matcher, s)
			}
		}
		for _, s := range tt.no {
			if match(s) {
				t.Errorf("%q matches %q", tt.matcher, s)
			}
		}
	}
	match, err := compileHookMatcher("(?<=x)Bash")
	if err == nil || !match("(?<=x)Bash") || match("Bash") {
		t.Errorf("a matcher Go cannot compile must match only itself and say why: %v", err)
	}
}

func TestHooksSettingsFilesMergeInOrderAndDeduplicate(t *testing.T) {
	t.Parallel()
	cwd, home := t.TempDir(), t.TempDir()
	writeSettings(t, filepath.Join(cwd, ".claude", "settings.json"), obj{"PreToolUse": []obj{group("Bash", "echo project", "echo shared")}})
	writeSettings(t, filepath.Join(cwd, ".claude", "settings.local.json"), obj{"PreToolUse": []obj{group("*", "echo local")}})
	writeSettings(t, filepath.Join(home, ".claude", "settings.json"), obj{"PreToolUse": []obj{group("Edit", "echo user")}})
	writeSettings(t, filepath.Join(cwd, ".zot", "settings.json"), obj{"PreToolUse": []obj{group("", "echo zot", "echo shared")}})
	notes := &hookNotes{}
	h := NewHooks(HookConfig{Files: hookSettingsFiles(cwd, home), Cwd: cwd, OnNote: notes.add})
	var got []string
	for _, hd := range h.handlers("PreToolUse", "Bash") {
		got = append(got, hd.Command)
	}
	if want := "echo project,echo shared,echo local,echo zot"; strings.Join(got, ",") != want {
		t.Errorf("Bash runs %v, want %s", got, want)
	}
	got = nil
	for _, hd := range h.handlers("PreToolUse", "Edit") {
		got = append(got, hd.Command)
	}
	if want := "echo local,echo user,echo zot,echo shared"; strings.Join(got, ",") != want {
		t.Errorf("Edit runs %v, want %s", got, want)
	}
	if notes.text() != "" {
		t.Errorf("notes: %s", notes.text())
	}
	if h.handlers("PreToolUse", "Bash")[0].Timeout != hookDefaultTimeout {
		t.Errorf("default timeout is not %s", hookDefaultTimeout)
	}
}

func TestHooksSettingsProblemsAreReportedAndSkipped(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	os.MkdirAll(filepath.Join(cwd, ".claude"), 0o755)
	os.WriteFile(filepath.Join(cwd, ".claude", "settings.json"), []byte(`{"hooks": [1, 2]}`), 0o644)
	writeSettings(t, filepath.Join(cwd, ".claude", "settings.local.json"), obj{
		"SubagentStop": []obj{group("", "notify-send hi")},
		"PreCompact":   []obj{{"hooks": []obj{{"type": "http", "url": "ftp://example.com/x"}}}},
		"Stop":         "not a list",
		"PreToolUse": []any{
			"not a group",
			obj{"matcher": "(", "hooks": []obj{{"type": "command", "command": "echo bad-matcher"}}},
			obj{"matcher": "Bash", "hooks": []any{
				obj{"type": "prompt", "prompt": "is this safe?"},
				obj{"type": "command"},
				obj{"type": "command", "command": "echo slow", "timeout": -3},
				obj{"type": "command", "command": "echo ok", "timeout": 2},
				"nonsense",
			}},
		},
	})
	notes := &hookNotes{}
	h := NewHooks(HookConfig{Files: hookSettingsFiles(cwd, ""), Cwd: cwd, OnNote: notes.add})
	text := notes.text()
	for _, want := range []string{
		`warn: hooks: ` + filepath.Join(cwd, ".claude", "settings.json") + `: not a settings object`,
		`info: hooks: ` + filepath.Join(cwd, ".claude", "settings.local.json") + `: zot has no SubagentStop event`,
		`hooks.PreCompact[0].hooks[0]: url "ftp://example.com/x" is not an http or https URL; skipped`,
		`hooks.Stop must be a list`,
		`hooks.PreToolUse[0]: want {"matcher"`,
		`hooks.PreToolUse[1]: matcher "(" is not a regular expression`,
		`hooks.PreToolUse[2].hooks[0]: type "prompt" is not supported by zot`,
		`hooks.PreToolUse[2].hooks[1]: no command`,
		`hooks.PreToolUse[2].hooks[2]: timeout -3 is not a positive number of seconds; using 1m0s`,
		`hooks.PreToolUse[2].hooks[4]: want {"type": "command"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("notes lack %q:\n%s", want, text)
		}
	}
	var got []string
	for _, hd := range h.handlers("PreToolUse", "Bash") {
		got = append(got, fmt.Sprintf("%s/%s", hd.Command, hd.Timeout))
	}
	if strings.Join(got, ",") != "echo slow/1m0s,echo ok/2s" {
		t.Errorf("Bash runs %v", got)
	}
	if hs := h.handlers("PreToolUse", "("); len(hs) != 1 || hs[0].Command != "echo bad-matcher" {
		t.Errorf("the bad matcher should match its own text only")
	}

	writeSettings(t, filepath.Join(cwd, ".zot", "settings.json"), obj{})
	os.WriteFile(filepath.Join(cwd, ".zot", "settings.json"), []byte(`{"disableAllHooks": true}`), 0o644)
	notes = &hookNotes{}
	if h := NewHooks(HookConfig{Files: hookSettingsFiles(cwd, ""), Cwd: cwd, OnNote: notes.add}); h.Has("PreToolUse") || !strings.Contains(notes.text(), `"disableAllHooks": true; no hook of a settings file runs`) {
		t.Errorf("disableAllHooks: %v %s", h.Has("PreToolUse"), notes.text())
	}
}

func TestHooksToolInputIsClaudeShaped(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "in.jsonl")
	h, _, cwd := newTestHooks(t, obj{"PreToolUse": []obj{group("", specHook(t, obj{"record": rec}))}})
	calls := []struct{ tool, args, name, input string }{
		{"bash", `{"command":"ls -la","timeout":2.5}`, "Bash", `{"command":"ls -la","timeout":2500}`},
		{"read", `{"path":"notes.txt","offset":3,"limit":10}`, "Read", `{"file_path":` + jsonOf(filepath.Join(cwd, "notes.txt")) + `,"limit":10,"offset":3}`},
		{"write", `{"path":"/abs/x.txt","content":"hi"}`, "Write", `{"content":"hi","file_path":"/abs/x.txt"}`},
		{"edit", `{"path":"/a","edits":[{"oldText":"x","newText":"y"}]}`, "Edit", `{"file_path":"/a","new_string":"y","old_string":"x"}`},
		{"edit", `{"path":"/a","edits":[{"oldText":"x","newText":"y"},{"oldText":"p","newText":"q"}]}`, "Edit", `{"edits":[{"new_string":"y","old_string":"x"},{"new_string":"q","old_string":"p"}],"file_path":"/a"}`},
		{"edit", `{"path":"/a","oldText":"x","newText":"y"}`, "Edit", `{"file_path":"/a","new_string":"y","old_string":"x"}`},
		{"mcp__fs__read", `{"p":1}`, "mcp__fs__read", `{"p":1}`},
		{"weather", `{"city":"Oslo"}`, "weather", `{"city":"Oslo"}`},
	}
	for i, c := range calls {
		if r := h.ToolGate(context.Background(), ToolCall{ID: fmt.Sprintf("toolu_%d", i), Name: c.tool, Args: json.RawMessage(c.args)}); r.Verdict != GateAllow || r.Args != nil {
			t.Fatalf("%s: %+v", c.tool, r)
		}
	}
	got := readRecords(t, rec)
	if len(got) != len(calls) {
		t.Fatalf("%d inputs recorded", len(got))
	}
	for i, c := range calls {
		in := got[i]
		if in["tool_name"] != c.name || jsonOf(in["tool_input"]) != c.input || in["tool_use_id"] != fmt.Sprintf("toolu_%d", i) {
			t.Errorf("%s %s: got %s %s %v, want %s %s", c.tool, c.args, in["tool_name"], jsonOf(in["tool_input"]), in["tool_use_id"], c.name, c.input)
		}
	}
	common := got[0]
	for k, v := range map[string]any{"session_id": "sess-1", "transcript_path": "/tmp/sess-1.jsonl", "cwd": cwd, "permission_mode": "default", "hook_event_name": "PreToolUse"} {
		if common[k] != v {
			t.Errorf("%s = %v, want %v", k, common[k], v)
		}
	}
}

func TestHooksUpdatedInputMapsBackToOurArguments(t *testing.T) {
	t.Parallel()
	tests := []struct{ tool, updated, want, err string }{
		{"bash", `{"command":"ls -la","timeout":1500,"description":"list"}`, `{"command":"ls -la","timeout":1.5}`, ""},
		{"bash", `{"command":"ls"}`, `{"command":"ls"}`, ""},
		{"bash", `{"timeout":1}`, "", `Bash needs "command"`},
		{"bash", `{"command":"ls","timeout":"soon"}`, "", "milliseconds"},
		{"read", `{"file_path":"/x","offset":2}`, `{"offset":2,"path":"/x"}`, ""},
		{"write", `{"file_path":"/x","content":"new"}`, `{"content":"new","path":"/x"}`, ""},
		{"write", `{"file_path":"/x"}`, "", `Write needs "content"`},
		{"edit", `{"file_path":"/x","old_string":"a","new_string":"b","replace_all":true}`, `{"edits":[{"oldText":"a","newText":"b"}],"path":"/x"}`, ""},
		{"edit", `{"file_path":"/x","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d"}]}`, `{"edits":[{"oldText":"a","newText":"b"},{"oldText":"c","newText":"d"}],"path":"/x"}`, ""},
		{"edit", `{"file_path":"/x","edits":"all"}`, "", "list of"},
		{"edit", `{"file_path":"/x"}`, "", `Edit needs "old_string"`},
		{"mcp__fs__write", `{ "path": "/y" }`, `{"path":"/y"}`, ""},
		{"bash", `[1]`, "", "not a JSON object"},
	}
	for _, tt := range tests {
		got, err := zotToolArgs(tt.tool, json.RawMessage(tt.updated))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s %s: err %v, want %q", tt.tool, tt.updated, err, tt.err)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("%s %s: %s %v, want %s", tt.tool, tt.updated, got, err, tt.want)
		}
	}
}

func TestHooksPreToolUseDecisions(t *testing.T) {
	t.Parallel()
	ask := obj{"hookSpecificOutput": obj{"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "pushing needs a human"}}
	tests := []struct {
		name     string
		commands func(t *testing.T) []string
		command  string
		verdict  GateVerdict
		reason   string // substring of the gate's reason
		args     string
		trail    string // decisions of the notes
		note     string // substring of what the user was shown
	}{
		{"silent exit 0 allows", func(t *testing.T) []string { return []string{specHook(t, obj{})} }, "git status", GateAllow, "", "", "allow", ""},
		{"exit 2 blocks with stderr", func(t *testing.T) []string { return []string{shHook(t, "block-rm.sh")} }, "rm -rf build", GateDeny, "refused by block-rm.sh: rm -rf is not allowed here", "", "deny", ""},
		{"exit 2 without stderr names the hook", func(t *testing.T) []string { return []string{specHook(t, obj{"exit": 2})} }, "ls", GateDeny, "blocked by PreToolUse hook", "", "deny", ""},
		{"other exit codes do not block", func(t *testing.T) []string { return []string{shHook(t, "fail.sh")} }, "ls", GateAllow, "", "", "allow", "failed with exit status 1; ignored: fail.sh: something is wrong"},
		{"JSON deny", func(t *testing.T) []string {
			return []string{specHook(t, obj{"stdout": obj{"hookSpecificOutput": obj{"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no network from here"}}})}
		}, "curl x", GateDeny, "no network from here", "", "deny", ""},
		{"JSON ask", func(t *testing.T) []string { return []string{specHook(t, obj{"stdout": ask})} }, "git push", GateAsk, "", "", "ask", ""},
		{"deprecated decision block", func(t *testing.T) []string {
			return []string{specHook(t, obj{"stdout": obj{"decision": "block", "reason": "old style no"}})}
		}, "ls", GateDeny, "old style no", "", "deny", ""},
		{"deprecated decision approve", func(t *testing.T) []string {
			return []string{specHook(t, obj{"stdout": obj{"decision": "approve", "reason": "fine"}})}
		}, "ls", GateAllow, "", "", "allow", ""},
		{"updatedInput rewrites in our names", func(t *testing.T) []string {
			return []string{specHook(t, obj{"stdout": obj{"hookSpecificOutput": obj{"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": obj{"command": "git status --short", "timeout": 5000}}}})}
		}, "git status", GateAllow, "", `{"command":"git status --short","timeout":5}`, "allow rewrite", ""},
		{"ask with updatedInput", func(t *testing.T) []string {
			return []string{specHook(t, obj{"stdout": obj{"hookSpecificOutput": obj{"permissionDecision": "ask", "updatedInput": obj{"command": "git push --dry-run"}}}})}
		}, "git push", GateAsk, "", `{"command":"git push --dry-run"}`, "ask rewrite", ""},
		{"unusable updatedInput denies", func(t *testing.T) []string {
			return []string{specHook(t, obj{"stdout": obj{"hookSpecificOutput": obj{"permissionDecision": "allow", "updatedInput": obj{"cmd": "ls"}}}})}
		}, "ls", GateDeny, `returned an updatedInput zot cannot use: Bash needs "command"`, "", "allow deny", ""},
		{"continue false stops", func(t *testing.T) []string {
			return []string{specHook(t, obj{"stdout": obj{"continue": false, "stopReason": "budget spent"}})}
		}, "ls", GateDeny, "budget spent", "", "deny", ""},
		{"invalid JSON is a failure, not a block", func(t *testing.T) []string { return []string{specHook(t, obj{"stdout": "{nope"})} }, "ls", GateAllow, "", "", "allow", "its JSON output is invalid"},
		{"unknown permissionDecision is a failure", func(t *testing.T) []string {
			return []string{specHook(t, obj{"stdout": obj{"hookSpecificOutput": obj{"permissionDecision": "maybe"}}})}
		}, "ls", GateAllow, "", "", "allow", `"permissionDecision": "maybe"`},
		{"systemMessage is shown", func(t *testing.T) []string {
			return []string{specHook(t, obj{"stdout": obj{"systemMessage": "careful\x1b[31m now"}})}
		}, "ls", GateAllow, "", "", "allow", "PreToolUse hook: careful now"},
		{"one deny among allows wins", func(t *testing.T) []string {
			return []string{specHook(t, obj{}), shHook(t, "block-rm.sh"), specHook(t, obj{"stdout": ask})}
		}, "rm -rf /", GateDeny, "rm -rf is not allowed", "", "allow deny ask", ""},
		{"plain stdout is ignored", func(t *testing.T) []string { return []string{shHook(t, "context.sh", "hello")} }, "ls", GateAllow, "", "", "allow", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, notes, _ := newTestHooks(t, obj{"PreToolUse": []obj{group("Bash", tt.commands(t)...)}})
			r := h.ToolGate(context.Background(), ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(jsonOf(obj{"command": tt.command}))})
			var trail []string
			for _, n := range r.Notes {
				trail = append(trail, string(n.Decision))
				if !strings.HasPrefix(n.By, "hook:") {
					t.Errorf("note by %q", n.By)
				}
			}
			if r.Verdict != tt.verdict || !strings.Contains(r.Reason, tt.reason) || string(r.Args) != tt.args || strings.Join(trail, " ") != tt.trail {
				t.Errorf("got %v %q args %s trail %v; want %v %q %s %q", r.Verdict, r.Reason, r.Args, trail, tt.verdict, tt.reason, tt.args, tt.trail)
			}
			if !strings.Contains(notes.text(), tt.note) || (tt.note == "" && notes.text() != "") {
				t.Errorf("notes %q, want %q", notes.text(), tt.note)
			}
			if _, stopped := h.takeStop(); stopped != (tt.name == "continue false stops") {
				t.Errorf("stop requested: %v", stopped)
			}
		})
	}
}

// TestHooksAskJoinsTheConfirmPath checks that an asking hook reaches the
// confirm function, with the hook named, in the chain after extensions.
func TestHooksAskJoinsTheConfirmPath(t *testing.T) {
	t.Parallel()
	h, _, _ := newTestHooks(t, obj{"PreToolUse": []obj{group("Bash", specHook(t, obj{"stdout": obj{"hookSpecificOutput": obj{"permissionDecision": "ask", "permissionDecisionReason": "are you sure?"}}}))}})
	var asked []GateNote
	gate := decideWith(func(_ context.Context, _ ToolCall, asks []GateNote) (bool, string) {
		asked = asks
		return false, "test user"
	}, h.ToolGate)
	d := gate(context.Background(), ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"git push"}`)})
	if !d.Block || len(asked) != 1 || asked[0].Reason != "are you sure?" || !strings.Contains(d.Reason, "declined by test user") {
		t.Errorf("decision %+v, asked %+v", d, asked)
	}
	if last := d.Trail[len(d.Trail)-1]; last.By != "test user" || last.Decision != DecisionDeny {
		t.Errorf("trail %+v", d.Trail)
	}
}

func TestHooksMatchersChooseTheHooks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hook := func(name string) string { return specHook(t, obj{"record": filepath.Join(dir, name)}) }
	h, _, _ := newTestHooks(t, obj{"PreToolUse": []obj{
		group("Bash", hook("bash")),
		group("Edit|Write", hook("files")),
		group("mcp__.*", hook("mcp")),
		group("weather", hook("weather")),
	}})
	for _, tool := range []string{"bash", "edit", "write", "read", "mcp__fs__list", "weather"} {
		h.ToolGate(context.Background(), ToolCall{ID: "c", Name: tool, Args: json.RawMessage(`{"path":"x","command":"y"}`)})
	}
	for name, want := range map[string]int{"bash": 1, "files": 2, "mcp": 1, "weather": 1} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		if n := strings.Count(string(b), "\n"); n != want {
			t.Errorf("hook %s ran %d times, want %d", name, n, want)
		}
	}
}

// TestHooksOfOneEventRunInParallel: each hook waits for the other's file,
// so run one after the other they would time out.
func TestHooksOfOneEventRunInParallel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	h, notes, _ := newTestHooks(t, obj{"PreToolUse": []obj{{"matcher": "", "hooks": []obj{
		{"type": "command", "command": specHook(t, obj{"touch": a, "wait_for": b, "stdout": obj{"systemMessage": "a saw b"}}), "timeout": 8},
		{"type": "command", "command": specHook(t, obj{"touch": b, "wait_for": a, "stdout": obj{"systemMessage": "b saw a"}}), "timeout": 8},
	}}}})
	r := h.ToolGate(context.Background(), ToolCall{ID: "c", Name: "read", Args: json.RawMessage(`{"path":"x"}`)})
	if r.Verdict != GateAllow || len(r.Notes) != 2 || notes.text() != "warn: PreToolUse hook: a saw b\nwarn: PreToolUse hook: b saw a" {
		t.Errorf("%+v notes %q", r, notes.text())
	}
}

func TestHooksTimeoutAndExitKillTheProcessGroup(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, sleep string
		timeout     float64
		note        string
	}{
		{"timeout", "30", 2, "timed out after 2s (its processes were killed); ignored"},
		{"exit leaves a child", "0", 10, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pgid")
			h, notes, _ := newTestHooks(t, obj{"PreToolUse": []obj{{"hooks": []obj{{"type": "command", "command": shHook(t, "linger.sh", pidFile, tt.sleep), "timeout": tt.timeout}}}}})
			r := h.ToolGate(context.Background(), ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)})
			if r.Verdict != GateAllow || !strings.Contains(notes.text(), tt.note) || (tt.note == "" && notes.text() != "") {
				t.Errorf("%+v notes %q", r, notes.text())
			}
			b, err := os.ReadFile(pidFile)
			pgid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pgid == 0 {
				t.Fatalf("no pgid: %v", err)
			}
			if groupAlive(pgid) {
				t.Errorf("process group %d outlived the hook", pgid)
			}
		})
	}
}

func TestHooksOutputIsBounded(t *testing.T) {
	t.Parallel()
	h, notes, _ := newTestHooks(t, obj{"PreToolUse": []obj{
		group("Bash", specHook(t, obj{"stdout": strings.Repeat("x", 3<<20)})),
		group("Read", specHook(t, obj{"stderr": strings.Repeat("y", 3<<20), "exit": 2})),
	}})
	r := h.ToolGate(context.Background(), ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)})
	if r.Verdict != GateAllow || !strings.Contains(notes.text(), "its output is longer than 1048576 bytes") {
		t.Errorf("%+v notes %q", r.Verdict, truncate(notes.text(), 300))
	}
	r = h.ToolGate(context.Background(), ToolCall{ID: "c", Name: "read", Args: json.RawMessage(`{"path":"x"}`)})
	if r.Verdict != GateDeny || len(r.Reason) > hookReasonLimit+10 || !strings.HasPrefix(r.Reason, "yyyy") {
		t.Errorf("%v reason of %d bytes", r.Verdict, len(r.Reason))
	}
}

func TestHooksAbortStopsTheHooks(t *testing.T) {
	t.Parallel()
	h, _, _ := newTestHooks(t, obj{"PreToolUse": []obj{group("", specHook(t, obj{"sleep": 30}))}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := h.ToolGate(ctx, ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}); r.Verdict != GateDeny || !strings.Contains(r.Reason, "aborted") {
		t.Errorf("%+v", r)
	}
}

func TestHooksPostToolUseFeedbackReachesTheResult(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "post.jsonl")
	h, _, cwd := newTestHooks(t, obj{
		"PreToolUse": []obj{group("Bash", specHook(t, obj{"stdout": obj{"hookSpecificOutput": obj{"hookEventName": "PreToolUse", "additionalContext": "prod database, careful"}}}))},
		"PostToolUse": []obj{
			group("Bash", specHook(t, obj{"record": rec})),
			group("Bash", specHook(t, obj{"stderr": "lint failed: 2 problems", "exit": 2})),
			group("Write", specHook(t, obj{"stdout": obj{"decision": "block", "reason": "file is not formatted", "hookSpecificOutput": obj{"hookEventName": "PostToolUse", "additionalContext": "run gofmt"}}})),
			group("Read", shHook(t, "fail.sh")),
		},
	})
	call := ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"make"}`)}
	if r := h.ToolGate(context.Background(), call); r.Verdict != GateAllow {
		t.Fatalf("%+v", r)
	}
	r := ToolRecord{Call: call, Ran: true, Result: ToolResult{Content: []Block{TextBlock("built")}}}
	h.AfterTool(context.Background(), &r)
	if got := (Message{Content: r.Result.Content}).Text(); got != "builtPreToolUse hook: prod database, carefulPostToolUse hook: lint failed: 2 problems" {
		t.Errorf("bash result: %q", got)
	}
	in := readRecords(t, rec)[0]
	if in["hook_event_name"] != "PostToolUse" || jsonOf(in["tool_input"]) != `{"command":"make"}` || jsonOf(in["tool_response"]) != `{"interrupted":false,"isImage":false,"stderr":"","stdout":"built"}` || in["tool_use_id"] != "c1" {
		t.Errorf("PostToolUse input %v", in)
	}

	w := ToolRecord{Call: ToolCall{ID: "c2", Name: "write", Args: json.RawMessage(`{"path":"a.go","content":"x"}`)}, Ran: true, Result: ToolResult{Content: []Block{TextBlock("wrote a.go")}}}
	h.AfterTool(context.Background(), &w)
	if got := (Message{Content: w.Result.Content}).Text(); got != "wrote a.goPostToolUse hook: file is not formattedPostToolUse hook: run gofmt" {
		t.Errorf("write result: %q", got)
	}
	read := ToolRecord{Call: ToolCall{ID: "c3", Name: "read", Args: json.RawMessage(`{"path":"a.go"}`)}, Ran: true, Result: ToolResult{Content: []Block{TextBlock("x")}}}
	h.AfterTool(context.Background(), &read)
	if len(read.Result.Content) != 1 {
		t.Errorf("a failing hook changed the result: %+v", read.Result)
	}
	// Failed and blocked calls do not run PostToolUse (Claude Code runs it
	// after successes only).
	failed := ToolRecord{Call: ToolCall{ID: "c4", Name: "bash", Args: json.RawMessage(`{"command":"false"}`)}, Ran: true, Result: errorResult("exit code 1")}
	h.AfterTool(context.Background(), &failed)
	if len(readRecords(t, rec)) != 1 || len(failed.Result.Content) != 1 {
		t.Errorf("PostToolUse ran after a failure")
	}
	_ = cwd
}

func TestHooksPostToolUseResponseShapes(t *testing.T) {
	t.Parallel()
	res := ToolResult{Content: []Block{TextBlock("out"), {Type: "image", MimeType: "image/png", Data: "AAAA"}}}
	for _, tt := range []struct{ tool, args, want string }{
		{"read", `{"path":"rel.txt"}`, `{"file":{"content":"out","filePath":"/w/rel.txt"},"type":"text"}`},
		{"write", `{"path":"/x","content":"y"}`, `{"filePath":"/x","success":true}`},
		{"edit", `{"path":"e.txt","edits":[{"oldText":"a","newText":"b"}]}`, `{"filePath":"/w/e.txt","success":true}`},
		{"mcp__s__t", `{}`, `[{"text":"out","type":"text"},{"data":"AAAA","mimeType":"image/png","type":"image"}]`},
	} {
		if got := string(claudeToolResponse(tt.tool, json.RawMessage(tt.args), res, "/w")); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.tool, got, tt.want)
		}
	}
}

func TestHooksUserPromptSubmit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    obj
		block   bool
		reason  string
		context string
	}{
		{"plain stdout is context", obj{"stdout": "branch: main\n"}, false, "", "branch: main"},
		{"additionalContext is context", obj{"stdout": obj{"hookSpecificOutput": obj{"hookEventName": "UserPromptSubmit", "additionalContext": "ticket ZOT-9"}}}, false, "", "ticket ZOT-9"},
		{"exit 2 refuses with stderr", obj{"stderr": "no secrets in prompts", "exit": 2}, true, "no secrets in prompts", ""},
		{"decision block refuses with reason", obj{"stdout": obj{"decision": "block", "reason": "rephrase without the token"}}, true, "rephrase without the token", ""},
		{"continue false refuses with stopReason", obj{"stdout": obj{"continue": false, "stopReason": "maintenance window"}}, true, "maintenance window", ""},
		{"exit 1 is ignored", obj{"stdout": "not context", "exit": 1}, false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := filepath.Join(t.TempDir(), "in.jsonl")
			spec := obj{"record": rec}
			for k, v := range tt.spec {
				spec[k] = v
			}
			h, _, _ := newTestHooks(t, obj{"UserPromptSubmit": []obj{group("ignored-matcher", specHook(t, spec))}})
			block, reason, extra := h.BeforePrompt(context.Background(), "fix the token=abc bug")
			if block != tt.block || reason != tt.reason || extra != tt.context {
				t.Errorf("got %v %q %q", block, reason, extra)
			}
			if in := readRecords(t, rec)[0]; in["prompt"] != "fix the token=abc bug" || in["hook_event_name"] != "UserPromptSubmit" {
				t.Errorf("input %v", in)
			}
		})
	}
}

func TestHooksStopDecisions(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "stop.jsonl")
	h, _, _ := newTestHooks(t, obj{"Stop": []obj{group("", shHook(t, "keep-going.sh", rec))}})
	for i := 0; i < 2; i++ {
		if cont, msg := h.OnStop(context.Background(), Message{}); !cont || msg != "keep going: the tests are not green yet" {
			t.Fatalf("call %d: %v %q", i, cont, msg)
		}
	}
	ins := readRecords(t, rec)
	if ins[0]["stop_hook_active"] != false || ins[1]["stop_hook_active"] != true {
		t.Errorf("stop_hook_active: %v %v", ins[0]["stop_hook_active"], ins[1]["stop_hook_active"])
	}
	h.BeforePrompt(context.Background(), "next") // a new prompt starts afresh
	h.OnStop(context.Background(), Message{})
	if ins := readRecords(t, rec); ins[2]["stop_hook_active"] != false {
		t.Errorf("stop_hook_active after a new prompt: %v", ins[2]["stop_hook_active"])
	}

	h, _, _ = newTestHooks(t, obj{"Stop": []obj{group("",
		specHook(t, obj{"stdout": obj{"decision": "block", "reason": "write the changelog"}}),
		specHook(t, obj{"stdout": obj{"continue": false}}))}})
	if cont, _ := h.OnStop(context.Background(), Message{}); cont {
		t.Errorf("continue false must win over block")
	}
	h, _, _ = newTestHooks(t, obj{"Stop": []obj{group("", specHook(t, obj{"stdout": obj{"decision": "block", "reason": "write the changelog"}}))}})
	if cont, msg := h.OnStop(context.Background(), Message{}); !cont || msg != "write the changelog" {
		t.Errorf("block: %v %q", cont, msg)
	}
}

func TestHooksSessionStartAndEnd(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "s.jsonl")
	h, notes, _ := newTestHooks(t, obj{
		"SessionStart": []obj{
			group("startup", shHook(t, "context.sh", "repo uses tabs"), specHook(t, obj{"record": rec, "stdout": obj{"hookSpecificOutput": obj{"hookEventName": "SessionStart", "additionalContext": "on call: ada"}}})),
			group("resume", shHook(t, "context.sh", "resumed")),
			group("", specHook(t, obj{"stderr": "cannot block a start", "exit": 2})),
		},
		"SessionEnd": []obj{group("other", specHook(t, obj{"record": rec}))},
	})
	if got := h.SessionStart(context.Background()); got != "repo uses tabs\n\non call: ada" {
		t.Errorf("context %q", got)
	}
	h.SessionEnd(context.Background())
	ins := readRecords(t, rec)
	if ins[0]["source"] != "startup" || ins[0]["model"] != "m1" || ins[1]["hook_event_name"] != "SessionEnd" || ins[1]["reason"] != "other" {
		t.Errorf("inputs %v", ins)
	}
	if notes.text() != "warn: SessionStart hook: cannot block a start" {
		t.Errorf("notes %q", notes.text())
	}
}

func TestHooksAttachChainsWithTheAgent(t *testing.T) {
	t.Parallel()
	h, _, _ := newTestHooks(t, obj{
		"UserPromptSubmit": []obj{group("", shHook(t, "context.sh", "from hook"))},
		"PostToolUse":      []obj{group("", specHook(t, obj{"stdout": obj{"continue": false, "stopReason": "enough for today"}}))},
	})
	a := NewAgent(nil, "m", NewToolRegistry())
	a.Pipeline.AddPromptGate(Stage{Name: "before", Order: OrderIntercept}, func(context.Context, string) (bool, string, string) { return false, "", "from before" })
	h.Attach(a)
	if block, _, extra := a.Pipeline.beforePrompt(context.Background(), "x"); block || extra != "from before\n\nfrom hook" {
		t.Errorf("prompt extra %q", extra)
	}
	rec := ToolRecord{Call: ToolCall{ID: "c", Name: "read", Args: json.RawMessage(`{"path":"x"}`)}, Ran: true, Result: textResult("x")}
	a.Pipeline.afterTool(context.Background(), &rec)
	if block, reason := a.Pipeline.beforeTurn(context.Background(), 2); !block || reason != "enough for today" {
		t.Errorf("turn after continue:false: %v %q", block, reason)
	}
	if block, _ := a.Pipeline.beforeTurn(context.Background(), 3); block {
		t.Errorf("the stop is consumed once")
	}
	if cont, _ := a.Pipeline.onStop(context.Background(), Message{}); cont {
		t.Errorf("went on without Stop hooks")
	}

	// No hooks at all still make stages, which let everything pass.
	var nothing *Hooks
	b := NewAgent(nil, "m", NewToolRegistry())
	nothing.Attach(b)
	for _, point := range []HookPoint{HookBeforePrompt, HookBeforeTurn, HookBeforeToolExecute, HookAfterToolExecute, HookOnStop} {
		if got := b.Pipeline.Stages(point); len(got) != 1 || got[0] != HookStage {
			t.Errorf("%s: %v", point, got)
		}
	}
	rec = ToolRecord{Call: ToolCall{ID: "c", Name: "read"}, Ran: true, Result: textResult("x")}
	b.Pipeline.afterTool(context.Background(), &rec)
	if d := b.Pipeline.Decide(context.Background(), ToolCall{}); d.Block || len(rec.Result.Content) != 1 {
		t.Errorf("a nil Hooks gates: %+v, result %+v", d, rec.Result)
	}
	if block, _, _ := b.Pipeline.beforePrompt(context.Background(), "x"); block {
		t.Errorf("a nil Hooks refuses prompts")
	}
	if block, _ := b.Pipeline.beforeTurn(context.Background(), 1); block {
		t.Errorf("a nil Hooks refuses turns")
	}
}

func FuzzHookOutput(f *testing.F) {
	for _, seed := range []string{
		``, `plain text`, `{}`, `{"continue":false,"stopReason":"x"}`,
		`{"decision":"block","reason":"r"}`, `{"decision":"approve"}`, `{"decision":"maybe"}`,
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}`,
		`{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls"}}}`,
		`{"hookSpecificOutput":{"updatedInput":[1]}}`, `{"hookSpecificOutput":null}`,
		`{"continue":"no"}`, `{"suppressOutput":true,"systemMessage":"s"}`, "  {\"a\":1}\n", `{`, `{"x":1}{"y":2}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, isJSON, err := decodeHookOutput(b)
		if !isJSON && err != nil {
			t.Fatalf("plain text with an error: %v", err)
		}
		if err != nil {
			return
		}
		d, _ := out.permission()
		switch d {
		case "", "allow", "deny", "ask":
		default:
			t.Fatalf("permission %q accepted", d)
		}
		if u := out.updatedInput(); u != nil && !isJSONObject(u) {
			t.Fatalf("updatedInput %s accepted", u)
		}
		if u := out.updatedInput(); u != nil {
			zotToolArgs("edit", u)
			zotToolArgs("bash", u)
		}
	})
}

// BenchmarkHooksPreToolUse is the cost a hook adds to each tool call: one
// sh hook that reads its input and exits 0.
func BenchmarkHooksPreToolUse(b *testing.B) {
	cwd := b.TempDir()
	writeSettings(b, filepath.Join(cwd, ".claude", "settings.json"), obj{"PreToolUse": []obj{group("Bash", "cat >/dev/null")}})
	h := NewHooks(HookConfig{Files: hookSettingsFiles(cwd, ""), Cwd: cwd})
	call := ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"go test ./..."}`)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := h.ToolGate(context.Background(), call); r.Verdict != GateAllow {
			b.Fatal(r)
		}
	}
}

// BenchmarkHooksDecodeOutput is the JSON decoder on a typical answer.
func BenchmarkHooksDecodeOutput(b *testing.B) {
	out := []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"ls -la"}},"systemMessage":"ok"}`)
	for i := 0; i < b.N; i++ {
		decodeHookOutput(out)
	}
}

// TestHooksGetNoProviderKeys: a hook is a command like the model's: it gets
// zot's environment without zot's secrets, plus CLAUDE_PROJECT_DIR.
func TestHooksGetNoProviderKeys(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-not-for-hooks")
	out := filepath.Join(t.TempDir(), "env")
	h, notes, cwd := newTestHooks(t, obj{"PreToolUse": []obj{{"hooks": []obj{{"type": "command", "command": "env > " + strconv.Quote(out)}}}}})
	if r := h.ToolGate(context.Background(), ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}); r.Verdict != GateAllow {
		t.Fatalf("%+v notes %q", r, notes.text())
	}
	got := fileContent(t, out)
	if strings.Contains(got, "ANTHROPIC_API_KEY") || !strings.Contains(got, "CLAUDE_PROJECT_DIR="+cwd+"\n") {
		t.Errorf("the hook's environment:\n%s", got)
	}
}

// TestHooksKillWhatAHookLeftInItsSession: a process that left the hook's
// process group (setpgid) but not its session does not outlive the hook.
func TestHooksKillWhatAHookLeftInItsSession(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	h, notes, _ := newTestHooks(t, obj{"PreToolUse": []obj{{"hooks": []obj{{"type": "command", "command": escapeCommand(t, "setpgid", pidFile)}}}}})
	if r := h.ToolGate(context.Background(), ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}); r.Verdict != GateAllow {
		t.Fatalf("%+v notes %q", r, notes.text())
	}
	if pid := readPid(t, pidFile); !processGone(pid) {
		t.Errorf("process %d outlived the hook", pid)
	}
}

// A hook is told the mode the call is judged in, by Claude Code's name,
// and hears a switch at the next event; sandboxed-auto, which Claude Code
// lacks, asks nothing as bypassPermissions does.
func TestHooksPermissionModeFollowsTheMode(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "in.jsonl")
	cwd := t.TempDir()
	writeSettings(t, filepath.Join(cwd, ".claude", "settings.json"), obj{"PreToolUse": []obj{group("", specHook(t, obj{"record": rec}))}})
	modes, err := NewModes(ModesConfig{Start: ModePlan})
	if err != nil {
		t.Fatal(err)
	}
	h := NewHooks(HookConfig{Files: hookSettingsFiles(cwd, ""), Cwd: cwd, Modes: modes})
	want := []string{}
	for _, m := range []Mode{ModePlan, ModeAsk, ModeAcceptEdits, ModeAuto, ModeSandboxedAuto, ModeDontAsk} {
		if err := modes.Set(m); err != nil {
			t.Fatal(err)
		}
		h.ToolGate(context.Background(), ToolCall{ID: "toolu_" + string(m), Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)})
		want = append(want, map[Mode]string{ModePlan: "plan", ModeAsk: "default", ModeAcceptEdits: "acceptEdits", ModeAuto: "bypassPermissions", ModeSandboxedAuto: "bypassPermissions", ModeDontAsk: "dontAsk"}[m])
	}
	var got []string
	for _, in := range readRecords(t, rec) {
		got = append(got, fmt.Sprint(in["permission_mode"]))
	}
	if !slices.Equal(got, want) {
		t.Errorf("permission_mode %v, want %v", got, want)
	}
}

// FuzzHookGroup: the attacker is a repository, which writes the hooks of
// its .claude/settings.json. No group panics; every hook kept runs a
// command or posts to a URL, not both.
func FuzzHookGroup(f *testing.F) {
	for _, s := range []string{
		`{"matcher":"Bash|Edit","hooks":[{"type":"command","command":"./check.sh","timeout":5}]}`,
		`{"matcher":"*","hooks":[{"type":"prompt","prompt":"x"},{"type":"command"}]}`,
		`{"hooks":null}`, `[]`, `{"matcher":"(","hooks":[{"type":"command","command":"x","timeout":-1}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		g, _ := parseHookGroup(raw, "settings.json")
		for _, h := range g.handlers {
			if (h.Command == "") == (h.URL == "") {
				t.Fatalf("kept a hook with a command and a URL, or neither: %+v", h)
			}
		}
	})
}
