package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// End-to-end tests of the TUI: the built binary in a real terminal under
// tmux, against the replay provider. Each test has its own tmux server
// (its own socket), killed when the test ends.

var tmuxSeq atomic.Int64

// tmuxTerm is zot running in a tmux pane.
type tmuxTerm struct {
	t    *testing.T
	sock string
	dir  string       // stty snapshots and the exit status
	ctl  *tmuxControl // the test's commands go through it once started
}

func needTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		skipMissing(t, "SKIPPED: tmux is not installed, so the TUI end-to-end tests did NOT run (.ci/run installs it)")
	}
}

// startTUI runs zot with args in a 120x40 tmux pane, in z's directories.
// The pane records `stty -a` before and after zot and zot's exit status.
func startTUI(t *testing.T, z *zotRun, args ...string) *tmuxTerm {
	t.Helper()
	needTmux(t)
	tm := &tmuxTerm{t: t, sock: fmt.Sprintf("zot-test-%d-%d", os.Getpid(), tmuxSeq.Add(1)), dir: t.TempDir()}
	var cmd strings.Builder
	fmt.Fprintf(&cmd, "cd %s && stty -a > %s/before; env -i ZOT_HOME=%s HOME=%s PATH=%s TERM=$TERM TMPDIR=%s",
		shq(z.cwd), shq(tm.dir), shq(z.home), shq(z.home), shq(os.Getenv("PATH")), shq(os.TempDir()))
	for _, e := range z.env {
		cmd.WriteString(" " + shq(e))
	}
	fmt.Fprintf(&cmd, " sh -c 'echo $$ > %s/pid; exec \"$0\" \"$@\"' %s", tm.dir, shq(zotBin(t)))
	for _, a := range args {
		cmd.WriteString(" " + shq(a))
	}
	fmt.Fprintf(&cmd, "; echo $? > %s/status; stty -a > %s/after; echo '[zot exited]'; exec sleep 600", shq(tm.dir), shq(tm.dir))
	tm.tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "120", "-y", "40", "sh", "-c", cmd.String())
	ctl, err := startTmuxControl(tm.sock)
	t.Cleanup(func() {
		exec.Command("tmux", "-L", tm.sock, "kill-server").Run()
		if ctl != nil {
			ctl.close()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	tm.ctl = ctl
	return tm
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// tmux runs a tmux command: through the test's control client once there
// is one, else (the session's start, a line break in an argument, which
// ends a control client's command) as a client of its own.
func (tm *tmuxTerm) tmux(args ...string) string {
	tm.t.Helper()
	if tm.ctl != nil && !strings.ContainsAny(strings.Join(args, ""), "\r\n") {
		out, err := tm.ctl.run(args)
		if err != nil {
			tm.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	out, err := exec.Command("tmux", append([]string{"-L", tm.sock}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen is what the pane shows now.
func (tm *tmuxTerm) screen() string { return tm.tmux("capture-pane", "-p", "-t", "t") }

// typeText types literal text; keys sends named keys (Enter, Escape, C-c).
func (tm *tmuxTerm) typeText(s string) { tm.tmux("send-keys", "-t", "t", "-l", s) }
func (tm *tmuxTerm) keys(k ...string)  { tm.tmux(append([]string{"send-keys", "-t", "t"}, k...)...) }

// waitScreen waits until the screen satisfies cond, failing with the
// screen after 30 s. The looks thin out from every 10 ms to every 100 ms
// while the wait goes on.
func (tm *tmuxTerm) waitScreen(what string, cond func(string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for pause := 10 * time.Millisecond; ; pause = min(pause*3/2, 100*time.Millisecond) {
		s := tm.screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("timed out waiting for %s; the screen:\n%s", what, s)
		}
		time.Sleep(pause)
	}
}

func (tm *tmuxTerm) waitFor(text string) string {
	tm.t.Helper()
	return tm.waitScreen(fmt.Sprintf("%q on screen", text), func(s string) bool { return strings.Contains(s, text) })
}

// pid is zot's process id.
func (tm *tmuxTerm) pid() int {
	tm.t.Helper()
	b, err := os.ReadFile(filepath.Join(tm.dir, "pid"))
	if err != nil {
		tm.t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	return pid
}

// checkExit waits for zot to end and checks its exit status and that the
// terminal settings are what they were before.
func (tm *tmuxTerm) checkExit(status int) string {
	tm.t.Helper()
	screen := tm.waitFor("[zot exited]")
	got, _ := os.ReadFile(filepath.Join(tm.dir, "status"))
	if strings.TrimSpace(string(got)) != fmt.Sprint(status) {
		tm.t.Errorf("exit status %q, want %d; screen:\n%s", got, status, screen)
	}
	before, _ := os.ReadFile(filepath.Join(tm.dir, "before"))
	after, _ := os.ReadFile(filepath.Join(tm.dir, "after"))
	// The size line differs after a resize; the settings must not.
	size := regexp.MustCompile(`rows \d+; columns \d+;`)
	if len(before) == 0 || size.ReplaceAllString(string(before), "") != size.ReplaceAllString(string(after), "") {
		tm.t.Errorf("stty -a changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if cursor := strings.TrimSpace(tm.tmux("display-message", "-p", "-t", "t", "#{cursor_flag}")); cursor != "1" {
		tm.t.Errorf("the cursor was left hidden")
	}
	return screen
}

// exitAndCheck leaves zot with ctrl+d and checks the exit status and that
// the terminal settings are what they were before.
func (tm *tmuxTerm) exitAndCheck() string {
	tm.t.Helper()
	tm.keys("C-u", "C-d")
	return tm.checkExit(0)
}

func TestTUINeedsATerminal(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	_, stderr, code := z.run("hello")
	if code != exitUsage || !strings.Contains(stderr, "needs a terminal") || !strings.Contains(stderr, "-p") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = z.run("-p", "--no-yolo", "hello")
	if code != exitUsage || !strings.Contains(stderr, "--no-yolo") {
		t.Errorf("-p --no-yolo: exit %d, stderr %q", code, stderr)
	}
}

func TestTUIRestoresTheTerminalOnSignals(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "stalls"}), HangAfter: 3})
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT} {
		z := newZotRun(t)
		tm := startTUI(t, z, anthropicFlags(srv)...)
		tm.waitFor("/help for keys")
		tm.typeText("busy")
		tm.keys("Enter")
		tm.waitFor("stalls")
		tm.typeText("half-typed")
		if err := syscall.Kill(tm.pid(), sig); err != nil {
			t.Fatal(err)
		}
		screen := tm.checkExit(128 + int(sig))
		if !strings.Contains(screen, "› busy") || strings.Contains(screen, "half-typed") {
			t.Errorf("%v: the transcript should stay and the live region go:\n%s", sig, screen)
		}
	}
}

func TestTUIStreamsAnswerWithToolSummaryAndMarkdown(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "echo hi-from-bash; echo second; echo third; echo fourth; echo fifth; echo sixth"}),
		replayStep{Events: anthropicEvents(gen{Text: "# Result\n\nIt printed **six** lines with `echo`.\n\n- first item\n- second item\n"})})
	z := newZotRun(t)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("run the echoes")
	tm.keys("Enter")
	screen := tm.waitFor("second item")
	for _, want := range []string{"› run the echoes", "bash  echo hi-from-bash; echo second", "… 3 earlier lines", "│ sixth", "│ [exit code 0]", "It printed six lines with echo.", "• first item", "Result"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "**") || strings.Contains(screen, "# Result") {
		t.Errorf("markdown markers shown:\n%s", screen)
	}
	tm.exitAndCheck()
}

func TestTUIEscAbortsASlowStream(t *testing.T) {
	t.Parallel()
	needTmux(t)
	events := anthropicEvents(gen{Text: "The answer begins here and then the model stalls forever"})
	srv := startReplay(t, replayStep{Events: events, HangAfter: 4},
		replayStep{Events: anthropicEvents(gen{Text: "Second answer."})})
	z := newZotRun(t)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("go slow")
	tm.keys("Enter")
	tm.waitFor("The answer")
	tm.keys("Escape")
	tm.waitFor("■ aborted")
	tm.typeText("again")
	tm.keys("Enter")
	tm.waitFor("Second answer.")
	tm.exitAndCheck()
}

func TestTUIQueuesPromptsWhileTheAgentWorks(t *testing.T) {
	t.Parallel()
	needTmux(t)
	z := newZotRun(t)
	gate := filepath.Join(z.cwd, "go-on")
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "while [ ! -e go-on ]; do sleep 0.02; done; echo released"}),
		replayStep{Events: anthropicEvents(gen{Text: "First done."})},
		replayStep{Events: anthropicEvents(gen{Text: "Queued one answered."})})
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("first prompt")
	tm.keys("Enter")
	tm.waitFor("bash  while")
	tm.typeText("the queued prompt")
	tm.keys("Enter")
	tm.waitFor("queued: the queued prompt")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	screen := tm.waitFor("Queued one answered.")
	if !strings.Contains(screen, "First done.") || !strings.Contains(screen, "› the queued prompt") {
		t.Errorf("screen:\n%s", screen)
	}
	if strings.Contains(screen, "queued: the queued prompt") {
		t.Errorf("queued line still shown:\n%s", screen)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || !strings.Contains(string(reqs[2].Body), "the queued prompt") {
		t.Errorf("requests: %d", len(reqs))
	}
	tm.exitAndCheck()
}

func TestTUISlashPopupAndModelSwitch(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	z := newZotRun(t)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("/")
	screen := tm.waitFor("sessions")
	for _, want := range []string{"› help", "model", "compact", fmt.Sprintf("1/%d", len(builtinCommands()))} {
		if !strings.Contains(screen, want) {
			t.Errorf("popup lacks %s:\n%s", want, screen)
		}
	}
	tm.typeText("mo")
	tm.waitScreen("popup filtered to /model", func(s string) bool {
		return strings.Contains(s, "› model") && !strings.Contains(s, "sessions")
	})
	tm.keys("Enter")
	tm.waitFor("choose a model")
	tm.keys("Escape")
	tm.waitScreen("the picker closed", func(s string) bool { return !strings.Contains(s, "choose a model") })
	tm.typeText("/model claude-haiku-4-5")
	tm.keys("Enter")
	tm.waitFor("model: anthropic/claude-haiku-4-5")
	tm.waitFor("anthropic/claude-haiku-4-5 ·")
	var cfg userConfig
	b, _ := os.ReadFile(filepath.Join(z.home, "config.json"))
	if json.Unmarshal(b, &cfg) != nil || cfg.Model != "claude-haiku-4-5" || cfg.Provider != "anthropic" {
		t.Errorf("config.json = %s", b)
	}
	// The picker: down from the current model, enter.
	tm.typeText("/model")
	tm.keys("Enter")
	tm.waitFor("choose a model")
	tm.keys("Down", "Enter")
	tm.waitScreen("a model switch from the picker", func(s string) bool {
		return strings.Count(s, "model: anthropic/") == 2
	})
	tm.exitAndCheck()
}

func TestTUISessionsResumeAndContinue(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "Remembered answer."})})
	z := newZotRun(t)
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "the very first prompt")...); code != 0 {
		t.Fatalf("-p: %s", stderr)
	}
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("/sessions")
	tm.keys("Enter")
	tm.waitFor("the very first prompt")
	tm.keys("Enter")
	screen := tm.waitFor("end of the resumed transcript")
	if !strings.Contains(screen, "Remembered answer.") || !strings.Contains(screen, "› the very first prompt") {
		t.Errorf("resumed transcript not shown:\n%s", screen)
	}
	tm.exitAndCheck()

	tm2 := startTUI(t, z, append(anthropicFlags(srv), "-c", "a follow-up")...)
	screen = tm2.waitScreen("the continued session and the new answer", func(s string) bool {
		return strings.Contains(s, "continuing session") && strings.Count(s, "Remembered answer.") == 2
	})
	if !strings.Contains(screen, "› a follow-up") {
		t.Errorf("screen:\n%s", screen)
	}
	tm2.exitAndCheck()
}

func TestTUIResizeRewrapsTheLiveRegion(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	z := newZotRun(t)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	long := strings.Repeat("abcdefghij", 9) // 90 columns: one row at 120
	tm.typeText(long)
	tm.waitFor(long)
	tm.tmux("resize-window", "-t", "t", "-x", "60", "-y", "30")
	screen := tm.waitScreen("the editor re-wrapped at 60 columns", func(s string) bool {
		return strings.Contains(s, "› "+long[:58]) && strings.Contains(s, "  "+long[58:])
	})
	for i, line := range strings.Split(screen, "\n") {
		if stringWidth(line) > 60 {
			t.Errorf("line %d wider than 60: %q", i, line)
		}
	}
	if strings.Count("\n"+screen, "\n────") != 1 {
		t.Errorf("the live region was drawn more than once:\n%s", screen)
	}
	tm.exitAndCheck()
}

func TestTUIOpensWithoutCredentials(t *testing.T) {
	t.Parallel()
	needTmux(t)
	z := newZotRun(t)
	tm := startTUI(t, z)
	screen := tm.waitFor("No API key for anthropic")
	for _, want := range []string{"/login", "ANTHROPIC_API_KEY", "--provider ollama", "--base-url"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	// /login saves a key without showing it.
	tm.typeText("/login anthropic")
	tm.keys("Enter")
	tm.waitFor("typing is not shown")
	tm.typeText("sk-secret-test-key")
	tm.waitFor("18 characters, hidden")
	if s := tm.screen(); strings.Contains(s, "sk-secret") {
		t.Fatalf("the key is echoed:\n%s", s)
	}
	tm.keys("Enter")
	tm.waitFor("saved the anthropic key")
	st, err := os.Stat(filepath.Join(z.home, "auth.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("auth.json: %v %v", st, err)
	}
	auth, err := loadAuth(z.home)
	if err != nil || auth["anthropic"].APIKey != "sk-secret-test-key" {
		t.Errorf("auth = %v, %v", auth, err)
	}
	tm.typeText("/logout")
	tm.keys("Enter")
	tm.waitFor("removed the anthropic key")
	auth, _ = loadAuth(z.home)
	if auth["anthropic"].APIKey != "" {
		t.Errorf("key still saved: %v", auth)
	}
	tm.exitAndCheck()
}

func TestTUINoYoloAsksBeforeEachTool(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "echo first-call > first.txt"}),
		toolStep("t2", "bash", obj{"command": "echo refused > second.txt"}),
		replayStep{Events: anthropicEvents(gen{Text: "Done asking."})})
	z := newZotRun(t)
	tm := startTUI(t, z, append(anthropicFlags(srv), "--no-yolo")...)
	tm.waitFor("/help for keys")
	tm.typeText("write files")
	tm.keys("Enter")
	tm.waitFor("allow this tool call?")
	tm.waitFor("echo first-call > first.txt")
	tm.waitFor("enter, or the letter") // typing just stopped: the dialog waits a moment
	tm.typeText("y")
	tm.waitFor("echo refused > second.txt")
	tm.waitFor("enter, or the letter")
	tm.typeText("n")
	tm.waitFor("Done asking.")
	if _, err := os.Stat(filepath.Join(z.cwd, "first.txt")); err != nil {
		t.Errorf("the approved call did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "second.txt")); err == nil {
		t.Errorf("the refused call ran")
	}
	if reqs := srv.Requests(); len(reqs) < 3 || !strings.Contains(string(reqs[2].Body), "declined") {
		t.Errorf("the model was not told of the refusal")
	}
	tm.exitAndCheck()
}

// The confirmation shows all of a command: neither a run of spaces nor a
// newline hides its second half behind "echo safe …".
func TestTUINoYoloShowsTheWholeCommand(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "echo safe" + strings.Repeat(" ", 150) + "; echo DANGER > pwned.txt"}),
		toolStep("t2", "bash", obj{"command": "echo hi\necho DANGER > second.txt"}),
		replayStep{Events: anthropicEvents(gen{Text: "Both refused."})})
	z := newZotRun(t)
	tm := startTUI(t, z, append(anthropicFlags(srv), "--no-yolo")...)
	tm.waitFor("/help for keys")
	tm.typeText("run things")
	tm.keys("Enter")
	tm.waitScreen("the padded command whole in the dialog", func(s string) bool {
		return strings.Contains(s, "allow this tool call?") && strings.Contains(s, "; echo DANGER > pwned.txt") && strings.Contains(s, "enter, or the letter")
	})
	tm.typeText("n")
	tm.waitScreen("both lines of the second command in the dialog", func(s string) bool {
		return strings.Contains(s, "1│ echo hi") && strings.Contains(s, "2│ echo DANGER > second.txt") && strings.Contains(s, "enter, or the letter")
	})
	tm.typeText("n")
	tm.waitFor("Both refused.")
	for _, f := range []string{"pwned.txt", "second.txt"} {
		if _, err := os.Stat(filepath.Join(z.cwd, f)); err == nil {
			t.Errorf("the refused command made %s", f)
		}
	}
	tm.exitAndCheck()
}

func TestTUIHostileModelTextIsDefused(t *testing.T) {
	t.Parallel()
	needTmux(t)
	hostile := "Safe start.\x1b]0;PWNED-TITLE\x07 \x1b]52;c;cHduZWQ=\x07 \x1b[2J\x1b[H moved \x1b[31mred\x1b[0m rm -rf /\roverwritten\n"
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: hostile})})
	z := newZotRun(t)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.tmux("set-option", "-g", "set-clipboard", "on")
	tm.waitFor("/help for keys")
	tm.typeText("be evil")
	tm.keys("Enter")
	screen := tm.waitFor("overwritten")
	for _, want := range []string{"Safe start.␛ ␛ ␛␛ moved red rm -rf /␍overwritten", "› be evil"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	if title := tm.tmux("display-message", "-p", "-t", "t", "#{pane_title}"); strings.Contains(title, "PWNED") {
		t.Errorf("the model set the title: %q", title)
	}
	if bufs, _ := exec.Command("tmux", "-L", tm.sock, "list-buffers").CombinedOutput(); strings.TrimSpace(string(bufs)) != "" {
		t.Errorf("the model wrote the clipboard: %q", bufs)
	}
	tm.exitAndCheck()
}

// TestTUIExtensionCommandAndPanel drives an extension's command, note and
// panel through the TUI.
func TestTUIExtensionCommandAndPanel(t *testing.T) {
	t.Parallel()
	needTmux(t)
	z := newZotRun(t)
	ext := filepath.Join(z.cwd, "ext")
	if err := os.MkdirAll(ext, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `import json, sys
def emit(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
emit({"type": "hello", "name": "paneltest", "version": "1.0.0", "capabilities": ["commands"]})
emit({"type": "register_command", "name": "greet", "description": "say hello"})
emit({"type": "register_command", "name": "board", "description": "open a panel"})
emit({"type": "ready"})
keys = []
for line in sys.stdin:
    m = json.loads(line)
    t = m.get("type")
    if t == "command_invoked" and m["name"] == "greet":
        emit({"type": "command_response", "id": m["id"], "action": "display", "display": "hello from the extension"})
        emit({"type": "notify", "level": "info", "message": "a note from paneltest"})
    elif t == "command_invoked" and m["name"] == "board":
        emit({"type": "command_response", "id": m["id"], "action": "noop",
              "open_panel": {"id": "b1", "title": "Board", "lines": ["line one", "line two"], "footer": "press keys"}})
    elif t == "panel_key":
        keys.append(m.get("text") if m.get("key") == "rune" else m.get("key"))
        emit({"type": "panel_render", "panel_id": m.get("panel_id"), "title": "Board", "lines": ["keys: " + " ".join(keys)], "footer": "press keys"})
    elif t == "shutdown":
        emit({"type": "shutdown_ack"}); break
`
	os.WriteFile(filepath.Join(ext, "main.py"), []byte(script), 0o755)
	os.WriteFile(filepath.Join(ext, "extension.json"), []byte(`{"name":"paneltest","version":"1.0.0","exec":"python3","args":["main.py"]}`), 0o644)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	tm := startTUI(t, z, append(anthropicFlags(srv), "--ext", ext)...)
	tm.waitFor("/help for keys")
	tm.typeText("/gre")
	tm.waitFor("greet")
	tm.typeText("et")
	tm.keys("Enter")
	tm.waitFor("hello from the extension")
	tm.waitFor("[paneltest] a note from paneltest")
	tm.typeText("/board")
	tm.keys("Enter")
	tm.waitFor("line two")
	tm.typeText("x")
	tm.keys("Down")
	tm.waitFor("keys: x down")
	tm.keys("Escape")
	tm.waitScreen("the panel closed", func(s string) bool { return !strings.Contains(s, "keys: x down") })
	tm.exitAndCheck()
}
