package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writePrompt writes a template file, making its directories.
func writePrompt(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParsePromptFrontMatter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, in string
		want     PromptTemplate
		err      string
	}{
		{"no front matter", "# Review the code\n\nLook at $ARGUMENTS.\n",
			PromptTemplate{Description: "Review the code", Body: "# Review the code\n\nLook at $ARGUMENTS."}, ""},
		{"all keys", "---\ndescription: Make a commit\nargument-hint: [message]\nmodel: claude-haiku-4-5\nallowed-tools: Bash(git add:*), Bash(git commit:*)\n---\nCommit with $1.\n",
			PromptTemplate{Description: "Make a commit", ArgumentHint: "[message]", Model: "claude-haiku-4-5",
				AllowedTools: []string{"Bash(git add:*)", "Bash(git commit:*)"}, Body: "Commit with $1."}, ""},
		{"hint YAML cannot read", "---\nargument-hint: [add|remove|list] [tagId]\n---\nTags.\n",
			PromptTemplate{Description: "Tags.", ArgumentHint: "[add|remove|list] [tagId]", Body: "Tags."}, ""},
		{"unclosed", "---\ndescription: x\nbody\n", PromptTemplate{}, "bad.md:1: the front matter opened here is never closed"},
		{"bad YAML", "---\ndescription: x\n  oops: y\n---\nbody\n", PromptTemplate{}, "bad.md:3: bad indentation"},
		{"description a list", "---\ndescription:\n  - a\n---\nbody\n", PromptTemplate{}, `bad.md:2: "description" must be text`},
	} {
		got, err := parsePrompt("bad.md", []byte(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.name, err, tt.err)
			}
			continue
		}
		got.Path = ""
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v, %v\nwant %+v", tt.name, got, err, tt.want)
		}
	}
}

func TestPromptArgumentsAreSubstitutedNeverRun(t *testing.T) {
	t.Parallel()
	p := NewPrompts(PromptConfig{})
	tmpl := PromptTemplate{Name: "t", Body: "All: $ARGUMENTS\nFirst: $1, second: $2, tenth: $9."}
	x := p.Expand(context.Background(), nil, tmpl, `one "two words" !`+"`touch pwned`")
	want := "All: one \"two words\" !`touch pwned`\nFirst: one, second: two words, tenth: ."
	if x.Text != want {
		t.Errorf("expanded:\n%s\nwant:\n%s", x.Text, want)
	}
	x = p.Expand(context.Background(), nil, PromptTemplate{Name: "t", Body: "Fix the tests."}, "in pkg/a")
	if x.Text != "Fix the tests.\n\nARGUMENTS: in pkg/a" {
		t.Errorf("a body without $ARGUMENTS: %q", x.Text)
	}
}

// TestPromptsFromEveryDirectory: the four directories in their order of
// precedence, a namespace, a shadowed name, broken files each named in
// one line, and zot prompts show.
func TestPromptsFromEveryDirectory(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	writePrompt(t, filepath.Join(z.cwd, ".zot", "prompts", "review.md"), "---\ndescription: project review\n---\nReview (project).")
	writePrompt(t, filepath.Join(z.cwd, ".claude", "commands", "frontend", "component.md"), "---\ndescription: Make a component\nargument-hint: [name]\n---\nMake $1.")
	writePrompt(t, filepath.Join(z.cwd, ".claude", "commands", "review.md"), "Review (claude project).")
	writePrompt(t, filepath.Join(z.home, "prompts", "mine.md"), "---\ndescription: my own\n---\nMine.")
	writePrompt(t, filepath.Join(z.home, "prompts", "review.md"), "Review (mine).")
	writePrompt(t, filepath.Join(z.home, ".claude", "commands", "theirs.md"), "Claude user command.")
	writePrompt(t, filepath.Join(z.home, "prompts", "broken.md"), "---\ndescription: never closed\n")
	writePrompt(t, filepath.Join(z.home, "prompts", "two words.md"), "Spaces.")
	stdout, stderr, code := z.run("prompts", "list")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"/frontend:component [name]  .claude/commands    Make a component",
		"/mine                       $ZOT_HOME/prompts   my own",
		"/review                     .zot/prompts        project review",
		"/theirs                     ~/.claude/commands  Claude user command.",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("list lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "broken") || strings.Contains(stdout, "two") || strings.Count(stdout, "/review") != 1 {
		t.Errorf("list:\n%s", stdout)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 2 || !strings.Contains(stderr, "skipped prompt template "+filepath.Join(z.home, "prompts", "broken.md")+":1: the front matter opened here is never closed") ||
		!strings.Contains(stderr, `two words.md: "two words" cannot be typed as a command name`) {
		t.Errorf("stderr:\n%s", stderr)
	}
	stdout, stderr, code = z.run("prompts", "show", "frontend:component")
	if code != 0 || stdout != "Make $1.\n" || !strings.Contains(stderr, "argument-hint: [name]") {
		t.Errorf("show: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	if _, _, code := z.run("prompts", "show", "nosuch"); code != 1 {
		t.Errorf("show nosuch: exit %d", code)
	}
	if stdout, _, code := z.run("prompts", "--help"); code != 0 || !strings.Contains(stdout, "zot prompts list") {
		t.Errorf("--help: exit %d %q", code, stdout)
	}
}

// TestPromptTemplateInPrintMode: arguments, a !`command` through the
// gates (and the audit log, naming the template), an @file attached.
func TestPromptTemplateInPrintMode(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	os.WriteFile(filepath.Join(z.cwd, "notes.txt"), []byte("the notes\n"), 0o644)
	os.WriteFile(filepath.Join(z.cwd, "secret.txt"), []byte("not for the prompt\n"), 0o644)
	writePrompt(t, filepath.Join(z.home, "prompts", "review.md"),
		"---\ndescription: review\nmodel: claude-haiku-4-5\n---\nReview $1, then $ARGUMENTS.\nBranch: !`echo cmd-output-$1 @secret.txt`\nSee @notes.txt")
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "Reviewed."})})
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "/review", "src", "fast")...)
	if code != 0 || stdout != "Reviewed.\n" {
		t.Fatalf("exit %d stdout %q stderr:\n%s", code, stdout, stderr)
	}
	body := string(srv.Requests()[0].Body)
	for _, want := range []string{
		`Review src, then src fast.\nBranch: cmd-output-src @secret.txt\nSee @notes.txt`,
		`\u003cfile path=\"notes.txt\"\u003e\nthe notes\n\u003c/file\u003e`,
		`"model":"claude-haiku-4-5"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("request lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "not for the prompt") {
		t.Errorf("an @path in a command's output attached a file")
	}
	audit := auditLines(t, z.home)
	if len(audit) != 1 || audit[0].Tool != "bash" || audit[0].Outcome != "ran" || len(audit[0].Decisions) == 0 ||
		audit[0].Decisions[0].By != "prompt:review" || !strings.Contains(string(audit[0].Args), "echo cmd-output-src") {
		t.Errorf("audit: %+v", audit)
	}
}

// TestPromptCommandGates: a !`command` a validator denies is left out
// with a note, and does not run; a project's template runs no command
// while the project is not trusted.
func TestPromptCommandGates(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	os.WriteFile(filepath.Join(z.cwd, "keep.txt"), []byte("x"), 0o644)
	withValidators(t, z.home, obj{"name": "no-rm", "script": "deny_rm.sh"})
	writePrompt(t, filepath.Join(z.home, "prompts", "clean.md"), "Clean up.\nRemoved: !`rm keep.txt`\nListed: !`echo listed`")
	writePrompt(t, filepath.Join(z.cwd, ".claude", "commands", "evil.md"), "Hello.\n!`touch pwned`\nBye.")
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})}, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	_, stderr, code := z.run(append(anthropicFlags(srv), "-p", "/clean")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "keep.txt")); err != nil {
		t.Errorf("the denied command ran: %v", err)
	}
	body := string(srv.Requests()[0].Body)
	if !strings.Contains(body, `Clean up.\nRemoved:\nListed: listed`) {
		t.Errorf("request:\n%s", body)
	}
	if !strings.Contains(stderr, "/clean: line 2 of "+filepath.Join(z.home, "prompts", "clean.md")+": !`rm keep.txt` did not run: ") || !strings.Contains(stderr, "rm is not allowed") {
		t.Errorf("stderr:\n%s", stderr)
	}
	_, stderr, _ = z.run(append(anthropicFlags(srv), "-p", "/evil")...)
	if _, err := os.Stat(filepath.Join(z.cwd, "pwned")); err == nil {
		t.Errorf("an untrusted project's template ran a command")
	}
	if body := string(srv.Requests()[1].Body); !strings.Contains(body, `Hello.\nBye.`) {
		t.Errorf("request:\n%s", body)
	}
	if !strings.Contains(stderr, "!`command` left out: the template is the project's (.claude/commands) and this project is not trusted") ||
		!strings.Contains(stderr, "zot trust") {
		t.Errorf("stderr:\n%s", stderr)
	}
	// Trusted, the template runs its command; changed after, it does not.
	if out, stderr, code := z.run("trust", "--yes", z.cwd); code != 0 || !strings.Contains(out+stderr, "/evil") {
		t.Fatalf("zot trust: exit %d\n%s%s", code, out, stderr)
	}
	srv = startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})}, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	if _, stderr, _ = z.run(append(anthropicFlags(srv), "-p", "/evil")...); !pathExists(filepath.Join(z.cwd, "pwned")) {
		t.Errorf("a trusted project's template did not run its command:\n%s", stderr)
	}
	os.Remove(filepath.Join(z.cwd, "pwned"))
	writePrompt(t, filepath.Join(z.cwd, ".claude", "commands", "evil.md"), "Hello.\n!`touch pwned; touch more`\nBye.")
	_, stderr, _ = z.run(append(anthropicFlags(srv), "-p", "/evil")...)
	if pathExists(filepath.Join(z.cwd, "pwned")) || !strings.Contains(stderr, "not trusted") {
		t.Errorf("a template changed after the trust ran its command:\n%s", stderr)
	}
}

// TestPromptUnknownAndClashingNames: an unknown /word goes as typed; a
// template named like a built-in command is never used, and says so.
func TestPromptUnknownAndClashingNames(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	writePrompt(t, filepath.Join(z.home, "prompts", "help.md"), "Helpful template.")
	writePrompt(t, filepath.Join(z.home, "prompts", "other.md"), "Other.")
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "a"})}, replayStep{Events: anthropicEvents(gen{Text: "b"})})
	_, stderr, code := z.run(append(anthropicFlags(srv), "-p", "/nosuch", "thing")...)
	if code != 0 || !strings.Contains(string(srv.Requests()[0].Body), `"text":"/nosuch thing"`) {
		t.Errorf("exit %d, request %s", code, srv.Requests()[0].Body)
	}
	if !strings.Contains(stderr, "prompt template "+filepath.Join(z.home, "prompts", "help.md")+" is not used: /help is a built-in command") {
		t.Errorf("stderr: %s", stderr)
	}
	z.run(append(anthropicFlags(srv), "-p", "--no-prompts", "/other")...)
	if !strings.Contains(string(srv.Requests()[1].Body), `"text":"/other"`) {
		t.Errorf("--no-prompts: %s", srv.Requests()[1].Body)
	}
}

func TestPromptTemplateOverRPC(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	writePrompt(t, filepath.Join(z.home, "prompts", "fix.md"), "---\ndescription: fix\n---\nFix $ARGUMENTS now.\n!`echo from-rpc`")
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "fixed"})}, replayStep{Events: anthropicEvents(gen{Text: "plain"})})
	p := startRPCProc(t, z, append([]string{"rpc"}, anthropicFlags(srv)...)...)
	p.send(`{"id":"1","type":"prompt","message":"/fix the tests"}`)
	p.until(func(o rpcOut) bool { return o.Type == "done" })
	p.send(`{"id":"2","type":"prompt","message":"/unknown words"}`)
	p.until(func(o rpcOut) bool { return o.Type == "done" })
	p.stdin.Close()
	if code := p.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[0].Body), `Fix the tests now.\nfrom-rpc`) || !strings.Contains(string(reqs[1].Body), `"text":"/unknown words"`) {
		for _, r := range reqs {
			t.Logf("request: %s", r.Body)
		}
		t.Errorf("requests: %d", len(reqs))
	}
}

func TestTUIPromptTemplates(t *testing.T) {
	t.Parallel()
	needTmux(t)
	z := newZotRun(t)
	writePrompt(t, filepath.Join(z.home, "prompts", "frontend", "component.md"),
		"---\ndescription: Make a UI component\nargument-hint: [name]\n---\nMake component $1.\n!`echo tui-cmd-ran`")
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "Component made."})})
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("/help")
	tm.keys("Enter")
	screen := tm.waitFor("Prompt templates")
	if !strings.Contains(screen, "/frontend:component [name]") || !strings.Contains(screen, "Make a UI component  [$ZOT_HOME/prompts]") {
		t.Errorf("/help:\n%s", screen)
	}
	tm.typeText("/front")
	screen = tm.waitFor("prompt templates")
	if !strings.Contains(screen, "frontend:component") {
		t.Errorf("completion:\n%s", screen)
	}
	tm.keys("Tab")
	tm.typeText("Button")
	tm.keys("Enter")
	tm.waitFor("Component made.")
	body := string(srv.Requests()[0].Body)
	if !strings.Contains(body, `Make component Button.\ntui-cmd-ran`) {
		t.Errorf("request:\n%s", body)
	}
	tm.exitAndCheck()
}

func TestPromptsCanBeTurnedOffInConfig(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if on, err := promptsEnabled(false, home); !on || err != nil {
		t.Errorf("default: %v %v", on, err)
	}
	os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"prompts": false}`), 0o600)
	if on, err := promptsEnabled(false, home); on || err != nil {
		t.Errorf("off: %v %v", on, err)
	}
	os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"prompts": "no"}`), 0o600)
	if on, err := promptsEnabled(false, home); on || err == nil || !strings.Contains(err.Error(), `"prompts" must be true or false; prompt templates stay off`) {
		t.Errorf("bad: %v %v", on, err)
	}
	if on, _ := promptsEnabled(true, t.TempDir()); on {
		t.Errorf("--no-prompts")
	}
}

func pathExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// An argument put into a !`command` is one shell word however it is
// spelled: checked by real bash, which prints each word it got.
func TestPromptArgumentsInACommandAreWordsNotSyntax(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	positional := splitPromptArgs(`"x; touch pwned" '$(touch pwned2)' "it's" ` + "`touch pwned3`")
	cmd := substituteCommandArgs(`printf '%s|' $1 $ARGUMENTS`, positional)
	c := exec.Command("bash", "-c", cmd)
	c.Dir = dir
	out, err := c.Output()
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	want := "x; touch pwned|x; touch pwned|$(touch pwned2)|it's|`touch|pwned3`|"
	if string(out) != want {
		t.Errorf("bash got %q from %s, want %q", out, cmd, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("an argument ran as a command: %v", entries)
	}
}

// A template of an untrusted project whose only line holds a !`command`
// keeps its arguments when the command is left out, for either provider;
// one with nothing else is refused with a line saying so, and no request
// goes out (an empty or null message list would be a 400 and poison the
// session).
func TestTemplateOfOnlyACommandKeepsItsArgumentsOrIsRefused(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	writePrompt(t, filepath.Join(z.cwd, ".claude", "commands", "changes.md"), "!`git diff` $ARGUMENTS")
	writePrompt(t, filepath.Join(z.cwd, ".claude", "commands", "log.md"), "!`git log -1`")
	anth := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	if _, stderr, code := z.run(append(anthropicFlags(anth), "-p", "/changes focus on the tests")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	oai := startReplay(t, replayStep{Events: openaiEvents(gen{Text: "ok"})})
	if _, stderr, code := z.run("-p", "--provider", "openai", "--model", "m", "--base-url", oai.URL, "--api-key", "k", "/changes focus on the tests"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, req := range []capturedRequest{anth.Requests()[0], oai.Requests()[0]} {
		var body struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal(req.Body, &body)
		last := body.Messages[len(body.Messages)-1]
		if last.Role != "user" || !strings.Contains(string(last.Content), `"focus on the tests"`) {
			t.Errorf("%s: the prompt sent: %s %s", req.Path, last.Role, last.Content)
		}
	}

	before := len(anth.Requests())
	_, stderr, code := z.run(append(anthropicFlags(anth), "-p", "/log")...)
	if code != exitFailure || !strings.Contains(stderr, "/log: nothing is left of "+filepath.Join(z.cwd, ".claude", "commands", "log.md")+" to send") ||
		!strings.Contains(stderr, "nothing to send: the prompt is empty") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if n := len(anth.Requests()); n != before {
		t.Errorf("an empty prompt was sent: %d requests", n-before)
	}
}
