package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestEveryCommandAnswersHelp asks every command and subcommand of the
// commands table for help in every way there is: each prints its own usage
// on stdout, nothing on stderr, and exits 0. The real binary answers zot's
// own forms and one form per command (16 starts); the other ~150 forms go
// to runZot, main's whole dispatch past its process set-up, in this
// process: a start of the binary costs ~20 ms of CPU. A form runs here
// only if its answer cannot run the command (help, or answerHelp takes
// it), so a mistake cannot touch the user's files.
func TestEveryCommandAnswersHelp(t *testing.T) {
	t.Parallel()
	type ask struct {
		args   []string
		want   string // the usage printed names this
		binary bool   // asked of the real binary
	}
	asks := []ask{
		{[]string{"help"}, "zot -p|--print", true},
		{[]string{"--help"}, "zot -p|--print", true},
		{[]string{"-h"}, "zot -p|--print", true},
		{[]string{"--rpc", "--help"}, "zot rpc [flags]", true},
	}
	for _, name := range commandNames() {
		c := commands[name]
		cmd := "zot " + name
		asks = append(asks, ask{[]string{name, "--help"}, cmd, true}, ask{[]string{name, "-h"}, cmd, false}, ask{[]string{"help", name}, cmd, false})
		for _, s := range c.help.subs {
			if s.name == "help" {
				asks = append(asks, ask{[]string{name, "help"}, cmd, false})
				continue
			}
			sub := cmd + " " + s.name
			asks = append(asks,
				ask{[]string{name, s.name, "--help"}, sub, false},
				ask{[]string{name, s.name, "-h"}, sub, false},
				ask{[]string{name, "help", s.name}, sub, false},
				ask{[]string{"help", name, s.name}, sub, false},
			)
		}
	}
	for _, a := range asks {
		t.Run(strings.Join(a.args, " "), func(t *testing.T) {
			t.Parallel()
			var stdout, stderr string
			var code int
			if a.binary {
				stdout, stderr, code = newZotRun(t).run(a.args...)
			} else {
				if c, ok := commands[a.args[0]]; a.args[0] != "help" && (!ok || !c.help.answerHelp(a.args[1:], io.Discard)) {
					t.Fatalf("%q would run the command, not answer with its usage", a.args)
				}
				var out, errb bytes.Buffer
				code = runZot(a.args, strings.NewReader(""), &out, &errb)
				stdout, stderr = out.String(), errb.String()
			}
			if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage") || !strings.Contains(stdout, a.want) {
				t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant exit 0, no stderr, usage naming %q", code, stderr, stdout, a.want)
			}
		})
	}
}

// TestHelpListsEveryCommand: a command named in zot --help that is not
// in the commands table would not answer --help the same way.
func TestHelpListsEveryCommand(t *testing.T) {
	t.Parallel()
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  zot ([a-z]+)`).FindAllStringSubmatch(helpText(), -1) {
		named[m[1]] = true
	}
	for name := range named {
		if _, ok := commands[name]; !ok && name != "help" && name != "version" {
			t.Errorf("zot --help names zot %s, which is not in the commands table", name)
		}
	}
	for name := range commands {
		if !named[name] {
			t.Errorf("zot --help does not list zot %s", name)
		}
	}
}

// TestHelpAndVersionWords: `zot help` and `zot version` are not prompts;
// a prompt that starts with either word is refused with how to send it,
// and one in quotes, or later on the line, stays a prompt.
func TestHelpAndVersionWords(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	if stdout, stderr, code := z.run("version"); code != 0 || stdout != "zot "+version+"\n" || stderr != "" {
		t.Errorf("zot version: exit %d %q %q", code, stdout, stderr)
	}
	if _, stderr, code := z.run("help", "me", "fix", "this"); code != 2 || !strings.Contains(stderr, `zot "help me fix this"`) {
		t.Errorf("zot help me fix this: exit %d %q", code, stderr)
	}
	if _, stderr, code := z.run("version", "bump"); code != 2 || !strings.Contains(stderr, `zot "version bump"`) {
		t.Errorf("zot version bump: exit %d %q", code, stderr)
	}
	// Without a terminal, a prompt reaches the TUI's refusal: it was read
	// as a prompt, not as a command.
	if _, stderr, code := z.run("help me fix this"); code != 2 || !strings.Contains(stderr, "needs a terminal") {
		t.Errorf(`zot "help me fix this": exit %d %q`, code, stderr)
	}
	// After --, -h belongs to the command line being checked.
	if stdout, _, _ := z.run("validate", "--", "ls", "-h"); strings.Contains(stdout, "Usage") {
		t.Errorf("zot validate -- ls -h printed the usage:\n%s", stdout)
	}
}

// TestToolsPatternThatMatchesNothing: `--tools nonexistent` is a usage
// error naming the tools there are, not a run with no tools; an MCP
// server's tools count by their prefix before the server is ready.
func TestToolsPatternThatMatchesNothing(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	writeFile(t, filepath.Join(z.cwd, "servers.json"), fmt.Sprintf(`{"mcpServers": {"fake": %s}}`, fakeServer(t, "normal", t.TempDir(), "")), 0o644)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})}, replayStep{Events: anthropicEvents(gen{Text: "ok"})}, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	for _, tt := range []struct {
		tools  string
		code   int
		stderr string
	}{
		{"nonexistent", 2, "--tools: nonexistent matches no tool; the tools are bash, edit, read, skill, write, mcp__fake__* (MCP)"},
		{"read,mcp__other__*", 2, "--tools: mcp__other__* matches no tool"},
		{"mcp__fake", 2, "mcp__fake matches no tool"},
		{"[", 2, "[ matches no tool"},
		{"read,b*", 0, ""},
		{"mcp__fake__*", 0, ""},
		{"mcp__fake__echo", 0, ""},
	} {
		_, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--no-mcp", "--mcp-config", "servers.json", "--tools", tt.tools, "hi")...)
		if code != tt.code || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("--tools %s: exit %d %q; want %d with %q", tt.tools, code, stderr, tt.code, tt.stderr)
		}
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d model requests; want 3, one per accepted --tools", n)
	}
}

// TestDocumentedUsageErrors runs every example of docs/usage.md's list of
// usage errors, without a terminal (its own session: no /dev/tty either),
// and checks each exits 2 without a model request: the list says what
// exits 2, and the examples do. The configured provider is a server that
// counts what reaches it.
func TestDocumentedUsageErrors(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("docs/usage.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "### Usage errors")
	section, _, _ = strings.Cut(section, "\n\n## ")
	var examples []string
	for _, line := range strings.Split(section, "\n") {
		if cells := strings.Split(line, "|"); len(cells) == 4 {
			for _, m := range regexp.MustCompile("`([A-Z_]+= )?zot[^`]*`").FindAllString(cells[2], -1) {
				examples = append(examples, strings.Trim(m, "`"))
			}
		}
	}
	if len(examples) < 20 {
		t.Fatalf("found %d examples in docs/usage.md's usage errors: %q", len(examples), examples)
	}
	srv := startReplay(t)
	for _, ex := range examples {
		t.Run(ex, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			writeFile(t, filepath.Join(z.home, "config.json"), fmt.Sprintf(`{"provider": "anthropic", "base_url": %q}`, srv.URL), 0o600)
			z.env = append(z.env, "ANTHROPIC_API_KEY=test-key")
			words := shellWords(t, ex)
			for len(words) > 0 && strings.Contains(words[0], "=") {
				z.env = append(z.env, words[0])
				words = words[1:]
			}
			cmd := z.cmd(words[1:]...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if code := exitCode(err); code != 2 || stderr.Len() == 0 {
				t.Errorf("%s: exit %d, stderr %q; want 2 and a message", ex, code, stderr.String())
			}
		})
	}
	t.Cleanup(func() {
		if n := len(srv.Requests()); n > 0 {
			t.Errorf("%d model requests went out; a usage error sends none", n)
		}
	})
}

// shellWords splits an example command line as sh would, for the plain
// words and single quotes the docs use.
func shellWords(t *testing.T, line string) []string {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, w.String())
			}
			w.Reset()
			inWord = false
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// TestJailRefusalNamesWhatTheReaderCanDo: outside the TUI the jail's
// refusal names --jail, never the TUI's /unjail; in the TUI, /unjail.
func TestJailRefusalNamesWhatTheReaderCanDo(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("t1", "read", obj{"path": "/etc/hostname"}),
		replayStep{Events: anthropicEvents(gen{Text: "refused"})})
	stdout, stderr, code := newZotRun(t).run(append(anthropicFlags(srv), "--json", "--jail", "read it")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var result string
	for _, line := range strings.Split(stdout, "\n") {
		if strings.Contains(line, `"type":"tool_result"`) {
			result = line
		}
	}
	if !strings.Contains(result, "outside the working directory") || !strings.Contains(result, "without --jail") || strings.Contains(result, "unjail") {
		t.Errorf("tool_result = %s", result)
	}

	tui, _ := newTestTUI(t, 80, 24)
	read, _ := tui.agent.Tools.Lookup("read")
	tui.cfg.ToolEnv.SetJail(true)
	if r := read.Run(context.Background(), json.RawMessage(`{"path":"/etc/hostname"}`), nil); !strings.Contains(textOf(r), "/unjail to allow") {
		t.Errorf("in the TUI: %s", textOf(r))
	}
}

// TestNoToolsPromptSpeaksOfNone: with --no-tools the request offers no
// tools and its system prompt gives no advice about any.
func TestNoToolsPromptSpeaksOfNone(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	if _, stderr, code := newZotRun(t).run(append(anthropicFlags(srv), "-p", "--no-tools", "hi")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var body struct {
		System []struct{ Text string } `json:"system"`
		Tools  []any                   `json:"tools"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil || len(body.System) == 0 {
		t.Fatalf("request %s: %v", srv.Requests()[0].Body, err)
	}
	system := body.System[0].Text
	for _, word := range []string{"read files", "edit", "write", "bash", "Tools:"} {
		if strings.Contains(system, word) {
			t.Errorf("the system prompt speaks of %q:\n%s", word, system)
		}
	}
	if len(body.Tools) != 0 || !strings.Contains(system, "no tools") {
		t.Errorf("tools %v, system prompt:\n%s", body.Tools, system)
	}
}

// TestCostsAreShortDecimals: five calls of 0.0006525 dollars sum to
// 0.0032624999999999998 in float64; events carry 0.0032625.
func TestCostsAreShortDecimals(t *testing.T) {
	t.Parallel()
	var steps []replayStep
	for i := range 4 {
		steps = append(steps, toolStep(fmt.Sprint("t", i), "bash", obj{"command": "true"}))
	}
	srv := startReplay(t, append(steps, replayStep{Events: anthropicEvents(gen{Text: "done"})})...)
	stdout, stderr, code := newZotRun(t).run(append(anthropicFlags(srv), "--json", "go")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	costs := regexp.MustCompile(`"cost_usd":([^,}]*)`).FindAllStringSubmatch(stdout, -1)
	if len(costs) != 10 {
		t.Fatalf("%d costs in:\n%s", len(costs), stdout)
	}
	for _, c := range costs {
		if _, frac, _ := strings.Cut(c[1], "."); len(frac) > 9 || strings.ContainsAny(c[1], "eE") {
			t.Errorf("cost_usd %s is not a short decimal", c[1])
		}
	}
	if !strings.Contains(stdout, `"cost_usd":0.0032625}`) {
		t.Errorf("the last cumulative cost is not 0.0032625:\n%s", stdout)
	}
	for _, tt := range []struct {
		in   USD
		want string
	}{{0.00037600000000000003, "0.000376"}, {0, "0"}, {12.5, "12.5"}, {1e-10, "0"}, {3e-9, "0.000000003"}} {
		if b, _ := json.Marshal(tt.in); string(b) != tt.want {
			t.Errorf("USD(%v) = %s, want %s", float64(tt.in), b, tt.want)
		}
	}
}

// TestBaseURLWithoutKeySendsNoKeyHeader: a server given with --base-url
// and no key gets no key header at all, not an empty one.
func TestBaseURLWithoutKeySendsNoKeyHeader(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ provider, header string }{{"anthropic", "X-Api-Key"}, {"openai", "Authorization"}} {
		events := anthropicEvents(gen{Text: "ok"})
		if tt.provider == "openai" {
			events = openaiEvents(gen{Text: "ok"})
		}
		srv := startReplay(t, replayStep{Events: events})
		stdout, stderr, code := newZotRun(t).run("-p", "--provider", tt.provider, "--model", "m", "--base-url", srv.URL, "hi")
		if code != 0 || stdout != "ok\n" {
			t.Fatalf("%s: exit %d %q %q", tt.provider, code, stdout, stderr)
		}
		if v, present := srv.Requests()[0].Header[tt.header]; present {
			t.Errorf("%s: %s header %q sent without a key", tt.provider, tt.header, v)
		}
	}
}

// TestExtCheckSaysWhatIsMissing: a directory that does not exist, and a Go
// example not built yet, each get a message that says what to do.
func TestExtCheckSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	missing := filepath.Join(z.cwd, "nonexistent")
	if stdout, _, code := z.run("ext", "check", missing); code != 1 || !strings.Contains(stdout, "directory "+missing+" does not exist") {
		t.Errorf("check %s: exit %d\n%s", missing, code, stdout)
	}
	unbuilt := filepath.Join(z.cwd, "calc-go")
	for _, f := range []string{"extension.json", "go.mod", "main.go"} {
		b, err := os.ReadFile(filepath.Join("examples/extensions/calc-go", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(unbuilt, f), string(b), 0o644)
	}
	want := "exec " + filepath.Join(unbuilt, "calc") + " is missing: it is a Go program that was not built: run `go build -o calc .` in " + unbuilt
	if stdout, _, code := z.run("ext", "check", unbuilt); code != 1 || !strings.Contains(stdout, want) {
		t.Errorf("check the unbuilt example: exit %d\n%s\nwant %q", code, stdout, want)
	}
}

// TestBlockedAssistantMessageShowsItsReason: an assistant_message
// interceptor that blocks has its reason shown in every mode: stderr in
// -p (and no empty line on stdout), an event in --json, a line in the TUI.
func TestBlockedAssistantMessageShowsItsReason(t *testing.T) {
	t.Parallel()
	guard := scriptedExt(t, "guard", obj{
		"frames":    []obj{{"type": "subscribe", "intercept": []string{"assistant_message"}}},
		"intercept": obj{"assistant_message": []obj{{"match": "SECRET", "reply": obj{"block": true, "reason": "it names a secret\x1b[31m"}}}},
	})
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "the key is SECRET"})})
	z := newZotRun(t)
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--ext", guard, "tell me")...)
	want := `extension "guard" blocked the assistant's message: it names a secret`
	if code != 0 || stdout != "" || !strings.Contains(stderr, "zot: "+want+"\n") {
		t.Errorf("-p: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	stdout, stderr, code = z.run(append(anthropicFlags(srv), "--json", "--ext", guard, "tell me")...)
	reason, _ := json.Marshal(want + "\x1b[31m")
	if code != 0 || !strings.Contains(stdout, `{"type":"assistant_message_blocked","reason":`+string(reason)+`}`) {
		t.Errorf("--json: exit %d %s\n%s", code, stderr, stdout)
	}

	tui, v := newTestTUI(t, 80, 24)
	feed(tui, Event{Type: EventMessageBlocked, Reason: want + "\x1b[31m"})
	if screen := v.String(); !strings.Contains(screen, want) || strings.Contains(screen, "\x1b") {
		t.Errorf("the TUI shows:\n%s", screen)
	}
}

// TestFirstRequestWaitsForStartingMCPServers: -p, --json and the first
// prompt of rpc wait, bounded, for MCP servers still starting, so the
// first request offers their tools; one not ready in time is reported and
// the run goes on without it.
func TestFirstRequestWaitsForStartingMCPServers(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	writeFile(t, filepath.Join(z.cwd, "slow.json"), fmt.Sprintf(`{"mcpServers": {"slow": %s}}`, fakeServer(t, "slowinit", t.TempDir(), "")), 0o644)
	writeFile(t, filepath.Join(z.cwd, "dead.json"), fmt.Sprintf(`{"mcpServers": {"dead": %s}}`, fakeServer(t, "noinit", t.TempDir(), "")), 0o644)
	// A bound far past the server's second, so a loaded machine does not
	// fail the test; the wait ends when the server is ready.
	writeFile(t, filepath.Join(z.home, "config.json"), `{"mcp_wait": "2m"}`, 0o600)
	offers := func(srv *replayServer, tool string) bool {
		return strings.Contains(string(srv.Requests()[0].Body), `"name":"`+tool+`"`)
	}
	for _, mode := range []string{"-p", "--json", "rpc"} {
		srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
		args := append(anthropicFlags(srv), "--no-mcp", "--mcp-config", "slow.json")
		z.stdin = ""
		if mode == "rpc" {
			args = append([]string{"rpc"}, args...)
			z.stdin = `{"type":"prompt","message":"hi"}` + "\n"
		} else {
			args = append(args, mode, "hi")
		}
		_, stderr, code := z.run(args...)
		if code != 0 || !offers(srv, "mcp__slow__echo") {
			t.Errorf("%s: exit %d %s; the first request does not offer the slow server's tools:\n%s", mode, code, stderr, srv.Requests()[0].Body)
		}
	}

	z.stdin = ""
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "--no-mcp", "--mcp-config", "dead.json", "--mcp-wait", "300ms", "-p", "hi")...)
	if code != 0 || stdout != "ok\n" || !strings.Contains(stderr, `mcp server "dead": not ready after 300ms`) || offers(srv, "mcp__dead__echo") {
		t.Errorf("a server that does not start: exit %d %q %q", code, stdout, stderr)
	}
}

// A mistyped --cwd is a usage error for every command that takes one:
// rules and configuration looked for under a path that is not there
// would answer for a project that is not there (zot validate would allow
// what the real project's rules deny).
func TestCommandsRefuseACwdThatIsNotADirectory(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	missing := filepath.Join(z.cwd, "missing")
	for _, args := range [][]string{
		{"validate", "--cwd", missing, "--", "ls"},
		{"validate", "--check", "--cwd", missing},
		{"mcp", "list", "--cwd", missing},
		{"skills", "list", "--cwd", missing},
	} {
		if _, stderr, code := z.run(args...); code != 2 || !strings.Contains(stderr, "--cwd "+missing+" is not a directory") {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming the directory", args, code, stderr)
		}
	}
}
