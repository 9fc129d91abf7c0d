package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A repository's AGENTS.md and CLAUDE.md are its text: the system prompt
// takes them from the project's root down to the working directory, and
// never lets them be a way to another file — one above the project, one
// outside it through a symlink, one in $ZOT_HOME, a FIFO, a device.
func TestContextFilesAreTheProjectsTextOnly(t *testing.T) {
	t.Parallel()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	repo := filepath.Join(base, "repo")
	cwd := filepath.Join(repo, "sub", "deeper")
	home := filepath.Join(repo, ".zot-home") // $ZOT_HOME inside the project, as when zot runs in ~
	for _, d := range []string{cwd, home, filepath.Join(repo, ".git")} {
		os.MkdirAll(d, 0o755)
	}
	write := func(path, text string) { os.WriteFile(path, []byte(text), 0o644) }
	link := func(target, path string) {
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(base, "AGENTS.md"), "ABOVE THE PROJECT")
	write(filepath.Join(base, "secret"), "SECRET OUTSIDE")
	write(filepath.Join(home, "auth.json"), `{"anthropic":{"api_key":"sk-ant-CONTEXT-KEY"}}`)
	write(filepath.Join(home, "AGENTS.md"), "the user's own rules")
	write(filepath.Join(repo, "AGENTS.md"), "root rules")
	write(filepath.Join(repo, "sub", "CLAUDE.md"), strings.Repeat("long line\n", contextFileLimit/10+100))
	link("../../secret", filepath.Join(repo, "sub", "AGENTS.md"))
	link("../../.zot-home/auth.json", filepath.Join(cwd, "AGENTS.md"))
	if err := syscall.Mkfifo(filepath.Join(repo, "CLAUDE.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	link("/dev/zero", filepath.Join(cwd, "CLAUDE.md"))

	p := BuildSystemPrompt(SystemPromptOptions{Cwd: cwd, Home: home})
	for _, want := range []string{
		"User context from " + filepath.Join(home, "AGENTS.md") + ":\n\nthe user's own rules",
		"Project context from " + filepath.Join(repo, "AGENTS.md") + ":\n\nroot rules",
		"[… CLAUDE.md is ",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("the prompt lacks %q", want)
		}
	}
	for _, not := range []string{"ABOVE THE PROJECT", "SECRET OUTSIDE", "sk-ant-CONTEXT-KEY"} {
		if strings.Contains(p, not) {
			t.Errorf("the prompt holds %q", not)
		}
	}
	if len(p) > 2*contextFileLimit {
		t.Errorf("the prompt is %d bytes: a context file was not cut", len(p))
	}
}

// The attack of the issue through the real binary: an untrusted clone
// whose AGENTS.md is a symlink to $ZOT_HOME/auth.json, and whose prompt
// template (no !`command`, so no trust needed) attaches @ that file, run
// with the sandbox and the jail. The key must be in no request.
func TestRepositoryCannotPutAuthJSONInTheRequest(t *testing.T) {
	t.Parallel()
	const key = "sk-ant-REPOSITORY-LEAK"
	z := newZotRun(t)
	state := filepath.Join(z.home, ".local", "state", "zot")
	z.env = append(z.env, "ZOT_HOME="+state)
	z.cwd = filepath.Join(z.home, "src", "clone")
	for _, d := range []string{state, filepath.Join(z.cwd, ".zot", "prompts")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(state, "auth.json"), []byte(`{"anthropic":{"api_key":"`+key+`"}}`), 0o600)
	os.Symlink("../../.local/state/zot/auth.json", filepath.Join(z.cwd, "AGENTS.md"))
	os.Symlink("../../.local/state/zot/auth.json", filepath.Join(z.cwd, "CLAUDE.md"))
	os.WriteFile(filepath.Join(z.cwd, ".zot", "prompts", "explain.md"), []byte("Explain the project.\n@../../.local/state/zot/auth.json\n"), 0o644)
	os.Symlink("../../../../.local/state/zot/auth.json", filepath.Join(z.cwd, ".zot", "prompts", "body.md"))
	for _, mode := range []string{"workspace-offline", "off"} {
		for _, prompt := range []string{"/explain", "/body", "hello"} {
			srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
			args := append(anthropicFlags(srv), "--sandbox", mode, "--jail", "-p", prompt)
			stdout, stderr, code := z.run(args...)
			if code != 0 && !strings.Contains(stderr, "sandbox") {
				t.Fatalf("%s %s: exit %d\n%s%s", mode, prompt, code, stdout, stderr)
			}
			for _, r := range srv.Requests() {
				var body struct {
					System   json.RawMessage `json:"system"`
					Messages json.RawMessage `json:"messages"`
				}
				json.Unmarshal(r.Body, &body)
				if strings.Contains(string(r.Body), key) {
					t.Errorf("--sandbox %s, prompt %q: the key is in the request:\nsystem: %.300s\nmessages: %.300s", mode, prompt, body.System, body.Messages)
				}
			}
		}
	}
}
