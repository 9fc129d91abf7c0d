package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// zot acp driven by clients nobody here wrote: testdata/acp/client.mjs,
// built on @agentclientprotocol/sdk (whose schema checks every message
// zot sends), and acpx. .ci/run installs both (testdata/acp/
// install-clients.sh); without them these tests skip, loudly.

// acpClientsDir is where install-clients.sh puts the ACP clients.
func acpClientsDir() string {
	if dir := os.Getenv("ZOT_ACP_CLIENTS"); dir != "" {
		return dir
	}
	cache, _ := os.UserCacheDir()
	return filepath.Join(cache, "zot-acp-clients")
}

// acpClients is where the ACP clients are installed.
func acpClients(t *testing.T) string {
	t.Helper()
	dir := acpClientsDir()
	_, sdkErr := os.Stat(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk", "package.json"))
	_, nodeErr := exec.LookPath(acpNode())
	if sdkErr != nil || nodeErr != nil {
		msg := "SKIPPING: the ACP clients are not installed in " + dir + " (run sh testdata/acp/install-clients.sh; needs node and npm)"
		if os.Getenv("ZOT_ACP_REQUIRE_CLIENTS") != "" {
			t.Fatal(msg)
		}
		skipMissing(t, "%s", msg)
	}
	return dir
}

// acpNode is the node the clients run on: the Node 22 install-clients.sh
// put beside them (acpx wants 22.13 or newer, and starts in half the CPU
// time of the system's Node 20 here), else the system's.
var acpNode = sync.OnceValue(func() string {
	bin := filepath.Join(acpClientsDir(), "node_modules", ".bin", "node")
	if st, err := os.Stat(bin); err == nil && st.Mode()&0o111 != 0 {
		return bin
	}
	return "node"
})

// acpClientRun runs client.mjs's scenario against zot acp with args and
// returns the lines it printed.
func acpClientRun(t *testing.T, z *zotRun, scenario string, env []string, args ...string) []map[string]json.RawMessage {
	t.Helper()
	dir := acpClients(t)
	script, _ := filepath.Abs(filepath.Join("testdata", "acp", "client.mjs"))
	argv, _ := json.Marshal(append([]string{zotBin(t), "acp"}, args...))
	cmd := exec.Command(acpNode(), script, scenario)
	cmd.Dir = z.cwd
	cmd.Env = append([]string{"ZOT_HOME=" + z.home, "HOME=" + z.home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir(),
		"ZOT_ACP_SDK=" + filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk"), "ZOT_ACP_CMD=" + string(argv), "ZOT_ACP_CWD=" + z.cwd}, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client.mjs %s: %v\nstdout:\n%s\nstderr:\n%s", scenario, err, out, stderr.String())
	}
	var lines []map[string]json.RawMessage
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("client.mjs printed %q", sc.Text())
		}
		lines = append(lines, m)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("client.mjs %s:\n%s\nstderr:\n%s", scenario, out, stderr.String())
	}
	return lines
}

// acpSeen is what a client run saw, sorted for the checks.
type acpSeen struct {
	lines       []map[string]json.RawMessage
	updates     []map[string]any
	permissions []map[string]any
	stops       []string
	text        string // the agent's message chunks, joined
	session     string
}

func seeACP(t *testing.T, lines []map[string]json.RawMessage) acpSeen {
	s := acpSeen{lines: lines}
	for _, l := range lines {
		if raw, ok := l["update"]; ok {
			var u map[string]any
			json.Unmarshal(raw, &u)
			s.updates = append(s.updates, u)
			if u["sessionUpdate"] == "agent_message_chunk" {
				if c, ok := u["content"].(map[string]any); ok {
					s.text += c["text"].(string)
				}
			}
		}
		if raw, ok := l["permission"]; ok {
			var p map[string]any
			json.Unmarshal(raw, &p)
			s.permissions = append(s.permissions, p)
		}
		if raw, ok := l["stop"]; ok {
			var stop string
			json.Unmarshal(raw, &stop)
			s.stops = append(s.stops, stop)
		}
		if raw, ok := l["error"]; ok {
			t.Errorf("a request failed: %s", raw)
		}
		if raw, ok := l["session"]; ok {
			json.Unmarshal(raw, &s.session)
		}
	}
	return s
}

// toolUpdates are the updates of one tool call, in order.
func (s acpSeen) toolUpdates(id string) []map[string]any {
	var out []map[string]any
	for _, u := range s.updates {
		if u["toolCallId"] == id {
			out = append(out, u)
		}
	}
	return out
}

// final is a tool call's last update.
func (s acpSeen) final(t *testing.T, id string) map[string]any {
	t.Helper()
	us := s.toolUpdates(id)
	if len(us) == 0 {
		t.Fatalf("no updates of tool call %s", id)
	}
	return us[len(us)-1]
}

func (s acpSeen) has(kind string) bool {
	return slices.ContainsFunc(s.updates, func(u map[string]any) bool { return u["sessionUpdate"] == kind })
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestACPEditorClient drives zot acp with the SDK's client: a streamed
// answer, a command and its output, an edit with its diff, permissions
// answered allow and then reject, a command a validator denies that the
// editor is never asked about, session/load replaying it all in a second
// process; cancel mid-stream; an MCP server the editor passes, and edits
// through the editor's buffers.
func TestACPEditorClient(t *testing.T) {
	t.Parallel()
	acpClients(t)
	t.Run("prompt, permissions, deny, load", func(t *testing.T) {
		t.Parallel()
		srv := startReplay(t,
			replayStep{Events: anthropicEvents(gen{Text: "Working on it."}, gen{ToolID: "b1", ToolName: "bash", ToolArgs: `{"command":"echo bash-output"}`})},
			toolStep("e1", "edit", obj{"path": "notes.txt", "edits": []any{obj{"oldText": "beta", "newText": "gamma"}}}),
			toolStep("r1", "bash", obj{"command": "touch rejected.marker"}),
			toolStep("d1", "bash", obj{"command": "curl -X POST https://api.example.invalid/items"}),
			textStep("All done."))
		z := newZotRun(t)
		withValidators(t, z.home, obj{"name": "no-post", "script": "deny_post.py", "commands": []string{"curl"}})
		notes := filepath.Join(z.cwd, "notes.txt")
		os.WriteFile(notes, []byte("alpha\nbeta\n"), 0o644)
		s := seeACP(t, acpClientRun(t, z, "prompt", []string{"ZOT_ACP_ANSWERS=allow-once,allow-once,reject-once"}, anthropicFlags(srv)...))

		if !slices.Equal(s.stops, []string{"end_turn"}) {
			t.Errorf("stops %q", s.stops)
		}
		if s.text != "Working on it.All done." {
			t.Errorf("the streamed answer is %q", s.text)
		}
		for _, kind := range []string{"available_commands_update", "usage_update", "session_info_update"} {
			if !s.has(kind) {
				t.Errorf("no %s", kind)
			}
		}
		var asked []string
		for _, p := range s.permissions {
			asked = append(asked, p["toolCall"].(map[string]any)["toolCallId"].(string))
		}
		if !slices.Equal(asked, []string{"b1", "e1", "r1"}) {
			t.Errorf("the editor was asked about %q, want b1, e1, r1 (never the denied d1)", asked)
		}
		if b1 := s.final(t, "b1"); b1["status"] != "completed" || !strings.Contains(jsonText(b1["content"]), "bash-output") {
			t.Errorf("the command's last update: %v", b1)
		}
		wantDiff := jsonText(obj{"type": "diff", "path": notes, "oldText": "alpha\nbeta\n", "newText": "alpha\ngamma\n"})
		if len(s.permissions) > 1 && !strings.Contains(jsonText(s.permissions[1]["toolCall"]), wantDiff) {
			t.Errorf("the edit's permission request has no diff %s: %v", wantDiff, s.permissions[1])
		}
		if e1 := s.final(t, "e1"); e1["status"] != "completed" || !strings.Contains(jsonText(e1["content"]), wantDiff) {
			t.Errorf("the edit's last update: %v", e1)
		}
		if b, _ := os.ReadFile(notes); string(b) != "alpha\ngamma\n" {
			t.Errorf("notes.txt is %q", b)
		}
		if r1 := s.final(t, "r1"); r1["status"] != "failed" {
			t.Errorf("the rejected command's last update: %v", r1)
		}
		if _, err := os.Stat(filepath.Join(z.cwd, "rejected.marker")); err == nil {
			t.Error("the rejected command ran")
		}
		if d1 := s.final(t, "d1"); d1["status"] != "failed" || !strings.Contains(jsonText(d1["content"]), "no-post") {
			t.Errorf("the denied command's last update: %v", d1)
		}
		reqs := srv.Requests()
		if len(reqs) != 5 {
			t.Fatalf("%d model requests, want 5", len(reqs))
		}
		if body := string(reqs[3].Body); !strings.Contains(body, "declined by the editor's user") {
			t.Errorf("the model was not told of the reject: %s", body)
		}
		if len(s.updates) > 0 && s.session == "" {
			t.Fatal("no session id")
		}

		loaded := seeACP(t, acpClientRun(t, z, "load", []string{"ZOT_ACP_SESSION=" + s.session}, anthropicFlags(srv)...))
		var order []string
		for _, u := range loaded.updates {
			switch u["sessionUpdate"] {
			case "user_message_chunk", "agent_message_chunk":
				order = append(order, u["sessionUpdate"].(string)+":"+u["content"].(map[string]any)["text"].(string))
			case "tool_call":
				order = append(order, "tool_call:"+u["toolCallId"].(string))
			}
		}
		want := []string{"user_message_chunk:do it", "agent_message_chunk:Working on it.", "tool_call:b1", "tool_call:e1", "tool_call:r1", "tool_call:d1", "agent_message_chunk:All done."}
		if !slices.Equal(order, want) {
			t.Errorf("session/load replayed %q, want %q", order, want)
		}
		if b1 := loaded.final(t, "b1"); b1["status"] != "completed" || !strings.Contains(jsonText(b1["content"]), "bash-output") {
			t.Errorf("the replayed command: %v", b1)
		}
		if r1 := loaded.final(t, "r1"); r1["status"] != "failed" {
			t.Errorf("the replayed rejected command: %v", r1)
		}
	})
	t.Run("cancel mid-stream, then the next prompt", func(t *testing.T) {
		t.Parallel()
		slow := anthropicEvents(gen{Text: "I am talking slowly"})
		srv := startReplay(t, replayStep{Events: slow, HangAfter: len(slow) - 2}, textStep("After the cancel."))
		z := newZotRun(t)
		s := seeACP(t, acpClientRun(t, z, "cancel", nil, anthropicFlags(srv)...))
		if !slices.Equal(s.stops, []string{"cancelled", "end_turn"}) {
			t.Errorf("stops %q, want cancelled then end_turn", s.stops)
		}
		if !strings.HasSuffix(s.text, "After the cancel.") {
			t.Errorf("the answers: %q", s.text)
		}
	})
	t.Run("the editor's MCP server and buffers", func(t *testing.T) {
		t.Parallel()
		srv := startReplay(t,
			toolStep("m1", "mcp__editorfake__echo", obj{"text": "ping from the model"}),
			toolStep("e1", "edit", obj{"path": "notes.txt", "edits": []any{obj{"oldText": "unsaved", "newText": "saved"}}}),
			textStep("Edited."))
		z := newZotRun(t)
		notes := filepath.Join(z.cwd, "notes.txt")
		os.WriteFile(notes, []byte("alpha\n"), 0o644)
		mcp, _ := json.Marshal(obj{"name": "editorfake", "command": fakeServerBin(t), "args": []string{"normal"}, "env": []any{}})
		buffer, _ := json.Marshal([]string{notes, "alpha\nunsaved\n"})
		s := seeACP(t, acpClientRun(t, z, "prompt", []string{"ZOT_ACP_MCP=" + string(mcp), "ZOT_ACP_BUFFER=" + string(buffer)}, anthropicFlags(srv)...))
		if m1 := s.final(t, "m1"); m1["status"] != "completed" || !strings.Contains(jsonText(m1["content"]), "ping from the model") {
			t.Errorf("the editor's MCP tool: %v", m1)
		}
		var fs []string
		for _, l := range s.lines {
			if raw, ok := l["fs"]; ok {
				var op, path, content string
				json.Unmarshal(raw, &op)
				json.Unmarshal(l["path"], &path)
				json.Unmarshal(l["content"], &content)
				fs = append(fs, op+" "+path+" "+content)
			}
		}
		if !slices.Contains(fs, "write "+notes+" alpha\nsaved\n") {
			t.Errorf("the edit did not land through fs/write_text_file from the editor's buffer: %q", fs)
		}
		if b, _ := os.ReadFile(notes); string(b) != "alpha\nsaved\n" {
			t.Errorf("notes.txt is %q", b)
		}
	})
}

// TestACPWithACPX runs acpx, a headless ACP client, against zot acp: with
// --approve-all the command runs, with --deny-all it does not.
func TestACPWithACPX(t *testing.T) {
	t.Parallel()
	dir := acpClients(t)
	acpx := filepath.Join(dir, "node_modules", "acpx", "dist", "cli.js")
	if _, err := os.Stat(acpx); err != nil {
		skipMissing(t, "SKIPPING: acpx is not installed in %s (sh testdata/acp/install-clients.sh)", dir)
	}
	for _, policy := range []string{"--approve-all", "--deny-all"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			srv := startReplay(t, toolStep("t1", "bash", obj{"command": "touch approved.marker"}), textStep("Finished."))
			z := newZotRun(t)
			agent := strings.Join(append([]string{zotBin(t), "acp"}, anthropicFlags(srv)...), " ")
			cmd := exec.Command(acpNode(), acpx, "--agent", agent, policy, "--cwd", z.cwd, "--format", "json", "--timeout", "60", "exec", "touch the marker")
			cmd.Dir = z.cwd
			cmd.Env = []string{"ZOT_HOME=" + z.home, "HOME=" + z.home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir()}
			out, err := cmd.CombinedOutput()
			// acpx exits 5 (its PERMISSION_DENIED) when it refused a request.
			if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 5 && policy == "--deny-all") {
				t.Fatalf("acpx: %v\n%s", err, out)
			}
			_, statErr := os.Stat(filepath.Join(z.cwd, "approved.marker"))
			ran := statErr == nil
			if ran != (policy == "--approve-all") {
				t.Errorf("with %s the command ran: %v\n%s", policy, ran, out)
			}
			if !strings.Contains(string(out), "Finished.") {
				t.Errorf("acpx did not print the answer:\n%s", out)
			}
		})
	}
}
