package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// goBuilds holds one build per module directory, so that each is built
// once per test binary however many tests want it, and different modules
// build at the same time.
var goBuilds sync.Map // dir → *goBuild

type goBuild struct {
	once sync.Once
	bin  string
	err  error
}

// buildGo builds the Go module in dir (its own go.mod, standard library
// only, no network) once per test run and returns the binary.
func buildGo(t testing.TB, dir string) string {
	t.Helper()
	v, _ := goBuilds.LoadOrStore(dir, &goBuild{})
	b := v.(*goBuild)
	b.once.Do(func() {
		out, err := os.MkdirTemp(testBinDir, "go-")
		if err != nil {
			b.err = err
			return
		}
		b.bin = filepath.Join(out, filepath.Base(dir))
		// Without a symbol table and DWARF, which no test reads: the
		// link is the build's dearest step, and a fifth cheaper so.
		cmd := goBuildCached(dir, b.bin, "-ldflags=-s -w")
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build in %s: %v\n%s", dir, err, msg)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// goBuildCached builds the main package in dir to bin through the Go
// build cache. `go build -o` links afresh every time, a quarter to half a
// second of CPU for each of the suite's two dozen binaries, sources
// unchanged or not; `go run` keeps what it links in the cache, keyed by
// every input (sources, flags, toolchain), and with -exec hands the
// binary, built or found, to cp instead of running it.
func goBuildCached(dir, bin string, flags ...string) *exec.Cmd {
	args := append(append([]string{"run"}, flags...), "-exec", "cp", ".", bin)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	return cmd
}

// weatherExt is the weather example, built, in a directory of its own.
func weatherExt(t testing.TB) string {
	t.Helper()
	src, _ := filepath.Abs(filepath.Join("examples", "extensions", "weather"))
	bin := buildGo(t, src)
	dir := filepath.Join(t.TempDir(), "weather")
	os.MkdirAll(dir, 0o755)
	mf, err := os.ReadFile(filepath.Join(src, "extension.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "extension.json"), mf, 0o644)
	if err := copyFile(bin, filepath.Join(dir, "weather"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func exampleExt(t testing.TB, name string) string {
	p, err := filepath.Abs(filepath.Join("examples", "extensions", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeWeather answers like wttr.in.
func fakeWeather(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("format") != "3" {
			http.Error(w, "want format=3", 400)
			return
		}
		w.Write([]byte(strings.TrimPrefix(r.URL.Path, "/") + ": ☀️ +16°C\n"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestExtEndToEndFailClosedGuardThatCannotStart runs the built binary with
// the example guard (fail_closed) on a $PATH without python3: the guard
// cannot start, so nothing it guards may run, rm -rf least of all.
func TestExtEndToEndFailClosedGuardThatCannotStart(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	for _, name := range []string{"sh", "rm"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skip(err)
		}
		os.Symlink(p, filepath.Join(bin, name))
	}
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "rm -rf precious"}),
		replayStep{Events: anthropicEvents(gen{Text: "gone"})})
	z := newZotRun(t)
	z.env = append(z.env, "PATH="+bin)
	os.MkdirAll(filepath.Join(z.cwd, "precious"), 0o755)
	stdout, stderr, _ := z.run(append(anthropicFlags(srv), "--json", "-e", exampleExt(t, "guard"), "clean up")...)
	if _, err := os.Stat(filepath.Join(z.cwd, "precious")); err != nil {
		t.Fatalf("rm -rf ran: %v\nstdout:\n%s", err, stdout)
	}
	want := `blocked: extension \"guard\" is fail_closed and gave no valid answer about turn_start: extension \"guard\": exec \"python3\" is not in $PATH`
	if !strings.Contains(stdout, want) || !strings.Contains(stderr, "it is fail_closed: until it is fixed") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
}

// TestExtEndToEndToolAndGuard runs the built binary: the model calls the
// weather extension's tool, then tries rm -rf, which the guard blocks.
func TestExtEndToEndToolAndGuard(t *testing.T) {
	t.Parallel()
	weather := fakeWeather(t)
	srv := startReplay(t,
		toolStep("t1", "weather", obj{"city": "Berlin"}),
		toolStep("t2", "bash", obj{"command": "rm -rf precious"}),
		replayStep{Events: anthropicEvents(gen{Text: "Sunny, and the guard said no."})})
	z := newZotRun(t)
	z.env = append(z.env, "WEATHER_URL="+weather.URL)
	os.MkdirAll(filepath.Join(z.cwd, "precious"), 0o755)
	args := append(anthropicFlags(srv), "-p", "--ext", weatherExt(t), "-e", exampleExt(t, "guard"), "check", "the", "weather")
	stdout, stderr, code := z.run(args...)
	if code != 0 || stdout != "Sunny, and the guard said no.\n" {
		t.Fatalf("exit %d stdout %q stderr:\n%s", code, stdout, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "precious")); err != nil {
		t.Fatalf("rm -rf ran: %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("requests = %d", len(reqs))
	}
	var first anthRequest
	json.Unmarshal(reqs[0].Body, &first)
	var names []string
	for _, tool := range first.Tools {
		names = append(names, tool.Name)
	}
	if offered := "," + strings.Join(names, ",") + ","; !strings.Contains(offered, ",bash,") || !strings.Contains(offered, ",weather,") {
		t.Errorf("tools offered = %v", names)
	}
	if body := string(reqs[1].Body); !strings.Contains(body, `"tool_use_id":"t1","content":[{"type":"text","text":"Berlin: ☀️ +16°C"}]`) {
		t.Errorf("weather result not sent back: %s", truncate(body, 3000))
	}
	if body := string(reqs[2].Body); !strings.Contains(body, `refused by guard: the command matches the danger pattern \"rm -rf\"`) || !strings.Contains(body, `"is_error":true`) {
		t.Errorf("guard refusal not sent back: %s", truncate(body, 3000))
	}
	audit, _ := os.ReadFile(filepath.Join(z.home, "ext-data", "guard", "audit.jsonl"))
	for _, want := range []string{`"event": "session_start"`, `"decision": "block"`, `"event": "turn_end", "stop": "end_turn"`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("audit lacks %s:\n%s", want, audit)
		}
	}
}

// TestExtHostLogOnStderrIsSanitized: a repository names an extension
// directory with a title escape; the host's complaint about it reaches
// stderr with the escape made visible, not raw.
func TestExtHostLogOnStderrIsSanitized(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	z := newZotRun(t)
	bad := filepath.Join(z.cwd, ".zot", "extensions", "evil\x1b]0;pwned\x07")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(bad, "manifest.json"), []byte("{not json"), 0o644)
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "x")...)
	if code != 0 || stdout != "ok\n" || !strings.Contains(stderr, "evil␛") || strings.ContainsAny(stderr, "\x1b\x07") {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}

func TestExtNotesGoToStderrInPrintMode(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	dir := scriptedExt(t, "chatty", obj{"frames": []obj{{"type": "notify", "level": "warn", "message": "hi\x1b[2Jthere"}}})
	stdout, stderr, code := newZotRun(t).run(append(anthropicFlags(srv), "-p", "--ext", dir, "x")...)
	if code != 0 || stdout != "ok\n" || !strings.Contains(stderr, "[chatty] warn: hi␛there\n") {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}

func TestExtNoExtSkipsInstalledButKeepsFlag(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	z := newZotRun(t)
	writeManifest(t, filepath.Join(z.home, "extensions", "installed"), obj{"name": "installed", "exec": scriptedBin(t),
		"args": []string{`{"frames":[{"type":"notify","message":"installed ran"}]}`}})
	flag := scriptedExt(t, "flagged", obj{"frames": []obj{{"type": "notify", "message": "flag ran"}}})
	_, stderr, _ := z.run(append(anthropicFlags(srv), "-p", "-e", flag, "x")...)
	if !strings.Contains(stderr, "installed ran") || !strings.Contains(stderr, "flag ran") {
		t.Errorf("without --no-ext: %s", stderr)
	}
	_, stderr, _ = z.run(append(anthropicFlags(srv), "-p", "--no-ext", "-e", flag, "x")...)
	if strings.Contains(stderr, "installed ran") || !strings.Contains(stderr, "flag ran") {
		t.Errorf("with --no-ext: %s", stderr)
	}
}

func TestExtExampleHelloPy(t *testing.T) {
	t.Parallel()
	h := newExtHarness(t, nil, exampleExt(t, "hello-py"))
	h.start()
	resp, err := h.m.InvokeCommand(context.Background(), "hellopy", "Ada")
	if err != nil || resp.Action != "prompt" || resp.Prompt != "Greet Ada very briefly. Add one emoji." {
		t.Fatalf("%+v %v", resp, err)
	}
}

func TestExtExampleClock(t *testing.T) {
	t.Parallel()
	// The clock says it is ready (zot ext check warns of an extension
	// that does not, issue 38): ready at start, with the watchdog's idle
	// wait far beyond any test's patience.
	h := newExtHarness(t, func(l *extLimits) { l.idle = time.Hour }, exampleExt(t, "clock"))
	if st := h.start(); st.Ready != 1 {
		t.Fatalf("stats %+v", st)
	}
	resp, err := h.m.InvokeCommand(context.Background(), "clock", "")
	if err != nil || resp.Action != "display" || !strings.HasPrefix(resp.Display, "It is ") {
		t.Fatalf("%+v %v", resp, err)
	}
	resp, err = h.m.InvokeCommand(context.Background(), "clock", "live")
	if err != nil || resp.Panel == nil || resp.Panel.Title != "clock" {
		t.Fatalf("%+v %v", resp, err)
	}
	waitFor(t, "a tick", func() bool { return len(h.gotPanels()) >= 2 })
	if u := h.gotPanels()[1]; u.Kind != "render" || u.Panel.ID != resp.Panel.ID || !strings.HasSuffix(u.Panel.Lines[0], " UTC") {
		t.Errorf("tick = %+v", u)
	}
	h.m.PanelKey(resp.Panel.ID, "rune", "q")
	waitFor(t, "the panel to close", func() bool {
		p := h.gotPanels()
		return p[len(p)-1].Kind == "close"
	})
}

func TestExtExampleGuard(t *testing.T) {
	t.Parallel()
	h := newExtHarness(t, nil, exampleExt(t, "guard"))
	h.start()
	h.m.SessionStart()
	gate := func(tool, args string) GateResult {
		return h.m.ToolGate(context.Background(), ToolCall{ID: "c", Name: tool, Args: json.RawMessage(args)})
	}
	for _, cmd := range []string{"rm -rf /", "cd x && rm -fr .", "sudo ls", "mkfs.ext4 /dev/sda1", "dd if=/dev/zero of=/dev/sda", ":(){ :|:& };:", "chmod -R 777 ."} {
		if r := gate("bash", `{"command":`+strconvQuote(cmd)+`}`); r.Verdict != GateDeny || !strings.HasPrefix(r.Reason, "refused by guard") {
			t.Errorf("%s: %+v", cmd, r)
		}
	}
	if r := gate("bash", `{"command":"git push -f origin main","timeout":5}`); r.Verdict != GateAllow || string(r.Args) != `{"command":"git push --force-with-lease origin main","timeout":5}` {
		t.Errorf("force push: %+v %s", r, r.Args)
	}
	for _, call := range [][2]string{{"bash", `{"command":"rm file.txt"}`}, {"bash", `{"command":"git push --force-with-lease"}`}, {"read", `{"path":"rm -rf"}`}} {
		if r := gate(call[0], call[1]); r.Verdict != GateAllow || r.Args != nil {
			t.Errorf("%v: %+v", call, r)
		}
	}
	h.m.Observe(Event{Type: "turn_end", Stop: "end_turn"})
	audit := filepath.Join(h.home, "ext-data", "guard", "audit.jsonl")
	waitFor(t, "the audit lines", func() bool {
		b, _ := os.ReadFile(audit)
		return strings.Contains(string(b), `"event": "session_start"`) && strings.Contains(string(b), `"decision": "rewrite"`) && strings.Contains(string(b), `"event": "turn_end"`)
	})
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestExtExampleRedact(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("jq"); err != nil {
		skipMissing(t, "the redact example needs jq (.ci/run installs it)")
	}
	h := newExtHarness(t, nil, exampleExt(t, "redact"))
	h.start()
	for _, tt := range [][2]string{
		{"your key: sk-ant-api03-abcdefghijklmnopqrstuv, ok", "your key: [redacted], ok"},
		{"AKIAABCDEFGHIJKLMNOP and ghp_abcdefghijklmnopqrstuvwxyz", "[redacted] and [redacted]"},
		{"nothing secret \"here\"\n", "nothing secret \"here\"\n"},
	} {
		if shown, block := h.m.beforeAssistantMessage(context.Background(), tt[0]); block || shown != tt[1] {
			t.Errorf("%q → %q %v, want %q", tt[0], shown, block, tt[1])
		}
	}
}

// TestExtExampleWeather is not parallel: the example reads WEATHER_URL from
// the environment it inherits.
func TestExtExampleWeather(t *testing.T) {
	t.Setenv("WEATHER_URL", fakeWeather(t).URL)
	h := newExtHarness(t, nil, weatherExt(t))
	h.start()
	a := NewAgent(nil, "m", NewToolRegistry())
	h.m.Attach(a)
	tool, ok := a.Tools.Lookup("weather")
	if !ok {
		t.Fatal("no weather tool")
	}
	if r := tool.Run(context.Background(), json.RawMessage(`{"city":"Oslo"}`), func(string) {}); r.IsError || r.Content[0].Text != "Oslo: ☀️ +16°C" || r.Details != "extension weather" {
		t.Errorf("%+v", r)
	}
	if r := tool.Run(context.Background(), json.RawMessage(`{}`), func(string) {}); !r.IsError {
		t.Errorf("no city: %+v", r)
	}
}

func TestExtCLIUsageErrors(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	for _, args := range [][]string{{"ext"}, {"ext", "frob"}, {"ext", "list", "--bogus"}, {"ext", "install"}, {"ext", "remove"}, {"ext", "logs", "../x"}, {"ext", "enable", "a", "b"}} {
		if _, stderr, code := z.run(args...); code != 2 || stderr == "" {
			t.Errorf("%v: exit %d %q", args, code, stderr)
		}
	}
	stdout, _, code := z.run("ext", "help")
	if code != 0 || !strings.Contains(stdout, "zot ext install <path|git-url> [--project] [--force]") {
		t.Errorf("help: %d %q", code, stdout)
	}
}

func TestExtCLIInstallListEnableRemove(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	src := exampleExt(t, "hello-py")
	stdout, stderr, code := z.run("ext", "install", src)
	dest := filepath.Join(z.home, "extensions", "hello-py")
	if code != 0 || !strings.Contains(stdout, "installed hello-py 1.0.0 at "+dest) {
		t.Fatalf("install: %d %q %q", code, stdout, stderr)
	}
	if st, err := os.Stat(filepath.Join(dest, "hello.py")); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Errorf("hello.py not copied with its mode: %v", err)
	}
	if _, stderr, code := z.run("ext", "install", src); code != 1 || !strings.Contains(stderr, `extension "hello-py" is already installed at `+dest+"; use --force to replace it") {
		t.Errorf("second install: %d %q", code, stderr)
	}
	if _, stderr, code := z.run("ext", "install", "--force", src); code != 0 {
		t.Errorf("--force: %d %q", code, stderr)
	}
	stdout, _, _ = z.run("ext", "list")
	if !strings.Contains(stdout, "SCOPE") || !strings.Contains(stdout, "global  hello-py  1.0.0    yes      python    "+dest) {
		t.Errorf("list:\n%s", stdout)
	}

	before, _ := os.ReadFile(filepath.Join(dest, "extension.json"))
	if _, stderr, code := z.run("ext", "disable", "hello-py"); code != 0 {
		t.Fatalf("disable: %d %s", code, stderr)
	}
	after, _ := os.ReadFile(filepath.Join(dest, "extension.json"))
	if string(after) != strings.Replace(string(before), `"enabled": true`, `"enabled": false`, 1) {
		t.Errorf("disable changed more than the field:\n%s", after)
	}
	stdout, _, _ = z.run("ext", "list", "--json")
	var rows []extListRow
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 1 || rows[0].Enabled || rows[0].Name != "hello-py" || rows[0].Scope != "global" {
		t.Errorf("list --json: %v %s", err, stdout)
	}
	z.run("ext", "enable", "hello-py")
	if again, _ := os.ReadFile(filepath.Join(dest, "extension.json")); string(again) != string(before) {
		t.Errorf("enable did not restore the bytes:\n%s", again)
	}
	if stdout, _, code := z.run("ext", "enable", "hello-py"); code != 0 || !strings.Contains(stdout, "already enabled") {
		t.Errorf("enable twice: %q", stdout)
	}

	z.stdin = "n\n"
	if _, stderr, code := z.run("ext", "remove", "hello-py"); code != 1 || !strings.Contains(stderr, "not removed") {
		t.Errorf("remove declined: %d %q", code, stderr)
	}
	z.stdin = "y\n"
	if _, stderr, code := z.run("ext", "remove", "hello-py"); code != 0 {
		t.Errorf("remove: %d %q", code, stderr)
	}
	if entries, _ := os.ReadDir(filepath.Join(z.home, "extensions")); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
	if _, stderr, code := z.run("ext", "remove", "-y", "hello-py"); code != 1 || !strings.Contains(stderr, `no extension "hello-py" in`) {
		t.Errorf("remove missing: %d %q", code, stderr)
	}
}

func TestExtCLIProjectScope(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	if _, stderr, code := z.run("ext", "install", "--project", exampleExt(t, "clock")); code != 0 {
		t.Fatalf("%d %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(z.cwd, ".zot", "extensions", "clock", "index.js")); err != nil {
		t.Fatal(err)
	}
	if _, _, code := z.run("ext", "disable", "clock"); code != 1 {
		t.Error("disable found a project extension without --project")
	}
	if _, _, code := z.run("ext", "disable", "--project", "clock"); code != 0 {
		t.Error("disable --project failed")
	}
	stdout, _, _ := z.run("ext", "list", "--project")
	if !strings.Contains(stdout, "project  clock") || !strings.Contains(stdout, " no ") {
		t.Errorf("list --project:\n%s", stdout)
	}
}

func TestExtCLIFailedInstallLeavesNothing(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	bad := writeManifest(t, filepath.Join(t.TempDir(), "bad"), obj{"name": "bad"})
	fifoDir := writeManifest(t, filepath.Join(t.TempDir(), "fifo"), obj{"name": "fifo", "exec": "x"})
	if err := syscall.Mkfifo(filepath.Join(fifoDir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ src, want string }{
		{bad, `field "exec" is required`},
		{fifoDir, "is not a file, directory or symlink"},
		{"file:///nonexistent/repo.git", "git clone file:///nonexistent/repo.git"},
		{filepath.Join(t.TempDir(), "missing"), "is neither a directory nor a git URL"},
	} {
		_, stderr, code := z.run("ext", "install", tt.src)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d %q", tt.src, code, stderr)
		}
		if entries, _ := os.ReadDir(filepath.Join(z.home, "extensions")); len(entries) != 0 {
			t.Errorf("%s left %v behind", tt.src, entries)
		}
	}
}

func TestExtCLIInstallFromGit(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	copyTree(exampleExt(t, "guard"), repo)
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "guard")
	z := newZotRun(t)
	stdout, stderr, code := z.run("ext", "install", "file://"+repo)
	if code != 0 || !strings.Contains(stdout, "installed guard 1.0.0") {
		t.Fatalf("%d %q %q", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(z.home, "extensions", "guard", "guard.py")); err != nil {
		t.Error(err)
	}
}

func TestExtCLILogs(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	logs := filepath.Join(z.home, "logs")
	os.MkdirAll(logs, 0o700)
	os.WriteFile(filepath.Join(logs, "ext-demo.log"), []byte("line one\nevil \x1b]52;c;aGk=\x07 end\n"), 0o600)
	stdout, _, code := z.run("ext", "logs", "demo")
	if code != 0 || stdout != "line one\nevil ␛ end\n" {
		t.Errorf("logs: %d %q", code, stdout)
	}
	if _, stderr, code := z.run("ext", "logs", "nobody"); code != 1 || !strings.Contains(stderr, `extension "nobody" has no log yet`) {
		t.Errorf("missing: %d %q", code, stderr)
	}

	cmd := z.cmd("ext", "logs", "-f", "demo")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	lines.Scan()
	lines.Scan()
	f, _ := os.OpenFile(filepath.Join(logs, "ext-demo.log"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("appended later\n")
	f.Close()
	if !lines.Scan() || lines.Text() != "appended later" {
		t.Errorf("follow got %q", lines.Text())
	}
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("logs -f after SIGINT: %v", err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("logs -f did not stop on SIGINT")
	}
}

func TestSetManifestEnabledChangesOnlyTheField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		on   bool
		want string
	}{
		{"{\n  \"name\": \"x\",\n  \"enabled\": true\n}\n", false, "{\n  \"name\": \"x\",\n  \"enabled\": false\n}\n"},
		{"{\n  \"name\": \"x\",\n  \"exec\": \"y\"\n}\n", false, "{\n  \"enabled\": false,\n  \"name\": \"x\",\n  \"exec\": \"y\"\n}\n"},
		{`{"name":"x","enabled" :  false,"z":{"enabled":true}}`, true, `{"name":"x","enabled" :  true,"z":{"enabled":true}}`},
		{`{"enabled":true,"opts":{"enabled":false},"enabled":true}`, false, `{"enabled":false,"opts":{"enabled":false},"enabled":false}`},
		{`{"name":"x"}`, true, `{"name":"x"}`},
		{`{}`, false, `{"enabled": false}`},
		{"\t{\"name\": \"x\"}", false, "\t{\"enabled\": false,\"name\": \"x\"}"},
	}
	for _, tt := range tests {
		got, changed, err := setManifestEnabled([]byte(tt.in), tt.on)
		if err != nil || string(got) != tt.want || changed != (tt.in != tt.want) {
			t.Errorf("%q on=%v → %q %v %v; want %q", tt.in, tt.on, got, changed, err, tt.want)
		}
		var v map[string]any
		if json.Unmarshal(got, &v) != nil {
			t.Errorf("%q is not JSON", got)
		}
	}
	if _, _, err := setManifestEnabled([]byte(`[1]`), true); err == nil {
		t.Error("an array was accepted")
	}
}
