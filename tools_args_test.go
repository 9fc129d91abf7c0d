package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuiltinArgsReadOnce: the tool, the Claude Code hooks' tool_input and
// the TUI's one-line summary read a built-in call's arguments with the one
// Parse function, so none of them shows a different call from the one that
// runs — duplicate keys, quoted numbers, the one-edit shape.
func TestBuiltinArgsReadOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := NewToolEnv(dir, false)
	defer env.Close()
	tools := map[string]Tool{}
	for _, tool := range BuiltinTools(env) {
		tools[tool.Name()] = tool
	}
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, tool, args   string
		summary, hookInput string
		ran                func() string // what running the call did
	}{
		{
			name: "a duplicate key: the last one runs", tool: ToolBash,
			args:      `{"command":"echo shown","command":"echo ran","timeout":"30"}`,
			summary:   "echo ran",
			hookInput: `{"command":"echo ran","timeout":30000}`,
		},
		{
			name: "the one-edit shape", tool: ToolEdit,
			args:      `{"path":"f.txt","oldText":"alpha","newText":"beta"}`,
			summary:   "f.txt (1 edit)",
			hookInput: `{"file_path":"` + filepath.Join(dir, "f.txt") + `","new_string":"beta","old_string":"alpha"}`,
			ran: func() string {
				b, _ := os.ReadFile(filepath.Join(dir, "f.txt"))
				return string(b)
			},
		},
		{
			name: "arguments the tool refuses are shown as they are", tool: ToolWrite,
			args:      `{"path":"","content":"x"}`,
			summary:   "content=x path=",
			hookInput: `{"path":"","content":"x"}`,
		},
	}
	for _, tc := range cases {
		if got := toolSummary(tc.tool, json.RawMessage(tc.args)); got != tc.summary {
			t.Errorf("%s: summary %q, want %q", tc.name, got, tc.summary)
		}
		if got := string(claudeToolInput(tc.tool, json.RawMessage(tc.args), dir)); got != tc.hookInput {
			t.Errorf("%s: hook tool_input %s, want %s", tc.name, got, tc.hookInput)
		}
		res := tools[tc.tool].Run(context.Background(), json.RawMessage(tc.args), func(string) {})
		text := Message{Content: res.Content}.Text()
		switch {
		case tc.tool == ToolBash && (res.IsError || !strings.Contains(text, "ran") || strings.Contains(text, "shown")):
			t.Errorf("%s: bash ran %q (error %v), want the summary's command", tc.name, text, res.IsError)
		case tc.ran != nil && tc.ran() != "beta\n":
			t.Errorf("%s: the file holds %q after %q, want the edit the summary names", tc.name, tc.ran(), text)
		case tc.tool == ToolWrite && (!res.IsError || !strings.Contains(text, `"path" must not be empty`)):
			t.Errorf("%s: write answered %q, want the refusal the Parse function gives", tc.name, text)
		}
	}
}

// TestValidatorReadsTheCommandThatRuns: the validators are shown the bash
// command the tool runs, read by ParseBashArgs, not another key's.
func TestValidatorReadsTheCommandThatRuns(t *testing.T) {
	t.Parallel()
	args := json.RawMessage(`{"command":"echo shown","command":"rm -rf ran","Command":"echo case"}`)
	b, err := ParseBashArgs(args)
	if err != nil || b.Command != "rm -rf ran" {
		t.Fatalf("ParseBashArgs = %+v, %v; want the last exact key", b, err)
	}
	// ValidatorGate hands CheckCommandLine what ParseBashArgs read; a
	// validator that denies rm shows it is this command it saw.
	v := testValidator(t, "deny-rm", "deny_rm.sh")
	r := ValidatorGate([]Validator{v}, t.TempDir())(context.Background(), ToolCall{Name: ToolBash, Args: args})
	if r.Verdict != GateDeny {
		t.Errorf("the validators were not shown the command that runs: %+v", r)
	}
}
