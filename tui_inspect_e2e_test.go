package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// history is the pane's scrollback and screen: what a command printed
// stays there after it scrolled off.
func (tm *tmuxTerm) history() string {
	return tm.tmux("capture-pane", "-p", "-S", "-", "-J", "-t", "t")
}

// waitHistory waits for every text in the scrollback and screen.
func (tm *tmuxTerm) waitHistory(texts ...string) string {
	tm.t.Helper()
	var all string
	tm.waitScreen(fmt.Sprintf("%q in the scrollback", texts), func(string) bool {
		all = tm.history()
		for _, s := range texts {
			if !strings.Contains(all, s) {
				return false
			}
		}
		return true
	})
	return all
}

// TestTUIPermissionsMCPAndStatus: in a project the user went on without
// trusting, /status names the trust and the MCP servers' states, /mcp
// lists each server (ready, failed with its reason, untrusted) and
// /permissions the rules of each file — the project's ask rule applies,
// its allow rule waits for trust, and says so.
func TestTUIPermissionsMCPAndStatus(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	mustWrite(t, filepath.Join(z.home, ".claude", "settings.json"), `{"permissions": {"allow": ["Bash(git status)"], "deny": ["Bash(rm -rf *)"]}}`, 0o600)
	mustWrite(t, filepath.Join(z.cwd, ".claude", "settings.json"), `{"permissions": {"allow": ["Bash(curl *)"], "ask": ["Bash(npm *)"]}}`, 0o644)
	mustWrite(t, filepath.Join(z.home, "mcp.json"), `{"mcpServers": {"good": `+fakeServer(t, "normal", t.TempDir(), "")+`, "broken": {"command": "/nonexistent/zot-mcp-nowhere"}}}`, 0o600)
	mustWrite(t, filepath.Join(z.cwd, ".mcp.json"), `{"mcpServers": {"proj": {"command": "true"}}}`, 0o644)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "noted"})})
	// The prompt on the command line, which the trust dialog puts back
	// in the editor, waits for the servers to settle.
	tm := startTUI(t, z, append(anthropicFlags(srv), "hello")...)
	tm.waitFor("continue without them")
	// Wide enough for /mcp's rows to hold their config files' paths
	// whole, however long $TMPDIR makes them.
	tm.tmux("resize-window", "-t", "t", "-x", "220", "-y", "40")
	tm.waitScreen("the screen redrawn 220 columns wide", func(s string) bool { return strings.Contains(s, strings.Repeat("─", 200)) })
	tm.keys("Enter")
	tm.waitScreen("the dialog to close", func(s string) bool { return !strings.Contains(s, "continue without them") })
	tm.keys("Enter")
	tm.waitFor("noted")

	tm.typeText("/status")
	tm.keys("Enter")
	tm.waitHistory("trust        not trusted: you went on without its programs", `not running: MCP server "proj"`,
		"MCP servers  3: 1 ready, 1 failed, 1 untrusted (/mcp)")

	tm.typeText("/mcp")
	tm.keys("Enter")
	tm.waitHistory("MCP servers\n", "good  ready  stdio · 12 tools · "+fakeServerBin(t)+"  "+filepath.Join(z.home, "mcp.json"),
		"broken  failed  stdio · 0 tools · /nonexistent/zot-mcp-nowhere", "  start /nonexistent/zot-mcp-nowhere in ",
		"proj  untrusted  stdio · 0 tools · true  .mcp.json\n  untrusted (zot trust)")

	tm.typeText("/permissions")
	tm.keys("Enter")
	all := tm.waitHistory("Permissions\n", "deny  Bash(rm -rf *)  deny[0]", "allow Bash(git status)  allow[0]", "ask   Bash(npm *)  ask[0]",
		"its allow rules (and a defaultMode",
		"a call no rule matches goes as the session's mode (ask) says")
	if strings.Contains(all, "allow Bash(curl *)") {
		t.Errorf("/permissions lists the untrusted project's allow rule as in force:\n%s", all)
	}
	tm.exitAndCheck()
}

// TestTUIDiff: /diff shows what the session's tool calls changed — a
// file written, one edited, one removed by a command — as a unified
// diff, and past its cap says how many lines it left out.
func TestTUIDiff(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	mustWrite(t, filepath.Join(z.cwd, "old.txt"), "a\nb\nc\n", 0o644)
	mustWrite(t, filepath.Join(z.cwd, "gone.txt"), "bye\n", 0o644)
	big, _ := json.Marshal(map[string]string{"path": "big.txt", "content": strings.Repeat("line\n", diffMaxLines+50)})
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(
			gen{ToolID: "t1", ToolName: "write", ToolArgs: `{"path":"new.txt","content":"hello\n"}`},
			gen{ToolID: "t2", ToolName: "edit", ToolArgs: `{"path":"old.txt","edits":[{"oldText":"b\n","newText":"B\n"}]}`},
			gen{ToolID: "t3", ToolName: "bash", ToolArgs: `{"command":"rm gone.txt"}`})},
		replayStep{Events: anthropicEvents(gen{Text: "changed three"})},
		replayStep{Events: anthropicEvents(gen{ToolID: "t4", ToolName: "write", ToolArgs: string(big)})},
		replayStep{Events: anthropicEvents(gen{Text: "wrote big"})})
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("ctx 0%")
	tm.typeText("/diff")
	tm.keys("Enter")
	tm.waitFor("this session has changed no files")

	tm.typeText("change them")
	tm.keys("Enter")
	tm.waitFor("changed three")
	if _, err := os.Stat(filepath.Join(z.cwd, "gone.txt")); !os.IsNotExist(err) {
		t.Fatalf("gone.txt is still there: %v", err)
	}
	tm.typeText("/diff")
	tm.keys("Enter")
	tm.waitHistory("Changed in this session: 3 files (1 added, 1 modified, 1 deleted)", "D gone.txt\n", "A new.txt\n", "M old.txt\n",
		"--- a/old.txt\n+++ b/old.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", "--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1,1 @@\n+hello\n", "-bye\n")

	tm.typeText("one more")
	tm.keys("Enter")
	tm.waitFor("wrote big")
	tm.typeText("/diff")
	tm.keys("Enter")
	tm.waitHistory("Changed in this session: 4 files (2 added", "more lines of diff not shown (/diff shows at most 400)")
	tm.exitAndCheck()
}
