package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testBinDir holds the binary under test and the Go fixtures buildGo
// makes. TestMain builds zot there in the background, while the tests
// that need no zot run; zotBin waits for it.
var (
	testBinDir string
	zotBuild   struct {
		done chan struct{} // closed when the build has ended; nil in a child test process
		path string
		err  error
	}
)

// zotBin returns the binary under test once TestMain's build of it has
// ended.
func zotBin(t testing.TB) string {
	t.Helper()
	if zotBuild.done == nil {
		t.Fatal("no zot binary in a child test process (runsAlone): start zot in the parent")
	}
	<-zotBuild.done
	if zotBuild.err != nil {
		t.Fatalf("zot did not build: %v", zotBuild.err)
	}
	return zotBuild.path
}

func TestMain(m *testing.M) {
	removeTemp := func() {}
	if os.Getenv("ZOT_TEST_CHILD") == "" {
		removeTemp = tmpfsTempDir()
	}
	dir, err := os.MkdirTemp("", "zot-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		removeTemp()
		os.Exit(1)
	}
	testBinDir = dir
	// A test re-ran this binary for one test (see runsAlone); it inherits
	// the PATH set below and needs no zot build.
	if os.Getenv("ZOT_TEST_CHILD") == "" {
		zotBuild.path, zotBuild.done = filepath.Join(dir, "zot"), make(chan struct{})
		// As README builds it: static, no libc. Cold (a fresh clone) the
		// build takes a quarter of a minute: the tests that start no zot
		// run meanwhile.
		build := goBuildCached(".", zotBuild.path)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		go func() {
			defer close(zotBuild.done)
			if out, err := build.CombinedOutput(); err != nil {
				zotBuild.err = fmt.Errorf("go build: %v\n%s", err, out)
			}
		}()
		skipInterpreterShims(filepath.Join(dir, "path"))
		runMoreInParallel()
	}
	code := m.Run()
	removeSpareCgroup()
	if zotBuild.done != nil {
		<-zotBuild.done // before its directory goes
	}
	os.RemoveAll(dir)
	removeTemp()
	os.Exit(code)
}

// skipInterpreterShims puts the interpreters the tests start first on PATH
// as links to the real binaries. A version manager's shim (pyenv, asdf)
// runs a shell and the manager on every start, half a second of CPU, and
// the suite starts hundreds of interpreters. Of the Pythons at hand (the
// one on PATH, the system's) it takes the one that imports the fewest
// modules before a script's first line: a version manager's may load
// hooks from its site-packages on every start (certifi through a .pth
// file here: 66 ms of CPU a start against the system Python's 24 ms;
// the suite starts about 300).
func skipInterpreterShims(dir string) {
	link := func(name, real string) {
		os.MkdirAll(dir, 0o755)
		if os.Symlink(real, filepath.Join(dir, name)) == nil && !strings.HasPrefix(os.Getenv("PATH"), dir) {
			os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		}
	}
	if found, err := exec.LookPath("python3"); err == nil {
		best, fewest := found, -1
		for i, candidate := range []string{found, "/usr/bin/python3", "/usr/local/bin/python3"} {
			if i > 0 && candidate == found {
				continue
			}
			out, err := exec.Command(candidate, "-c", "import sys; print(len(sys.modules), sys.executable)").Output()
			count, real, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
			n, nerr := strconv.Atoi(count)
			if err == nil && ok && nerr == nil && real != "" && (fewest < 0 || n < fewest) {
				best, fewest = real, n
			}
		}
		if best != found {
			link("python3", best)
		}
	}
	if found, err := exec.LookPath("node"); err == nil {
		out, err := exec.Command(found, "-e", "console.log(process.execPath)").Output()
		if real := strings.TrimSpace(string(out)); err == nil && real != "" && real != found {
			link("node", real)
		}
	}
}

// runMoreInParallel raises -parallel, unless it was given, from GOMAXPROCS
// to four times that: most tests spend their time waiting on child
// processes and timers, not on the CPU. On two quiet cores the suite took
// 101–105 s at twice, 90 s at four times, 91 s at three times.
func runMoreInParallel() {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(4*runtime.GOMAXPROCS(0)))
	}
}

// runsAlone lets a test that measures the whole process (its goroutines,
// its heap) or sets environment variables run beside the parallel tests:
// it runs the test again, alone, in a child test process, and passes or
// fails with it. It returns true in that child, where the test's body runs,
// and false in the parent, which has nothing left to do. The child has no
// zot binary; env is added to its environment.
func runsAlone(t *testing.T, env ...string) bool {
	if os.Getenv("ZOT_TEST_ALONE") == t.Name() {
		return true
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v",
		"-test.timeout="+flag.Lookup("test.timeout").Value.String(), "-test.short="+strconv.FormatBool(testing.Short()))
	cmd.Env = append(append(os.Environ(), env...), "ZOT_TEST_CHILD=1", "ZOT_TEST_ALONE="+t.Name())
	out, err := cmd.CombinedOutput()
	switch {
	case strings.Contains(string(out), "--- SKIP: "+t.Name()):
		t.Skipf("in a child process:\n%s", out)
	case err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()):
		t.Fatalf("in a child process: %v\n%s", err, out)
	}
	return false
}

// zotRun is one run of the built binary in a private ZOT_HOME and HOME, with
// no provider keys from the developer's environment.
type zotRun struct {
	t     *testing.T
	home  string
	cwd   string
	env   []string
	stdin string
	wrap  []string // a program and its arguments that run zot (prlimit …)
}

func newZotRun(t *testing.T) *zotRun {
	z := &zotRun{t: t, home: t.TempDir(), cwd: t.TempDir()}
	// As a user who has seen it: the note naming the mode nobody chose
	// comes once per $ZOT_HOME (wire_modes_test.go forgets this).
	os.Mkdir(filepath.Join(z.home, "noted"), 0o700)
	for _, kind := range []string{"mode-print", "mode-tui"} {
		os.WriteFile(filepath.Join(z.home, "noted", kind), nil, 0o600)
	}
	return z
}

// unnoted makes z's $ZOT_HOME one that has shown no note yet.
func (z *zotRun) unnoted() *zotRun {
	os.RemoveAll(filepath.Join(z.home, "noted"))
	return z
}

func (z *zotRun) cmd(args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, z.wrap...), zotBin(z.t)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = z.cwd
	env := []string{"ZOT_HOME=" + z.home, "HOME=" + z.home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir()}
	cmd.Env = append(env, z.env...)
	cmd.Stdin = strings.NewReader(z.stdin)
	return cmd
}

func (z *zotRun) run(args ...string) (stdout, stderr string, code int) {
	z.t.Helper()
	cmd := z.cmd(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		z.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func anthropicFlags(srv *replayServer) []string {
	return []string{"--provider", "anthropic", "--base-url", srv.URL, "--api-key", "test-key"}
}

func toolStep(id, name string, args any) replayStep {
	b, _ := json.Marshal(args)
	return replayStep{Events: anthropicEvents(gen{ToolID: id, ToolName: name, ToolArgs: string(b)})}
}

func TestPrintModeRunsARealToolLoop(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("t1", "write", obj{"path": "notes.txt", "content": "alpha\nbeta\n"}),
		toolStep("t2", "edit", obj{"path": "notes.txt", "edits": []any{obj{"oldText": "beta", "newText": "gamma"}}}),
		toolStep("t3", "read", obj{"path": "notes.txt"}),
		toolStep("t4", "bash", obj{"command": "wc -l < notes.txt; echo to-stderr >&2; exit 3"}),
		replayStep{Events: anthropicEvents(gen{Text: "All done."})})
	z := newZotRun(t)
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "make", "notes")...)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if stdout != "All done.\n" {
		t.Errorf("stdout = %q", stdout)
	}
	got, _ := os.ReadFile(filepath.Join(z.cwd, "notes.txt"))
	if string(got) != "alpha\ngamma\n" {
		t.Errorf("notes.txt = %q", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("requests = %d", len(reqs))
	}
	results := []string{}
	for _, r := range reqs[1:] {
		var body anthRequest
		json.Unmarshal(r.Body, &body)
		last := body.Messages[len(body.Messages)-1].Content[0]
		var text []string
		for _, c := range last.Content {
			if c.Text != nil {
				text = append(text, *c.Text)
			}
		}
		results = append(results, fmt.Sprintf("%s error=%v %s", last.ToolUseID, last.IsError, strings.Join(text, "")))
	}
	checks := []string{"t1 error=false", "t2 error=false", "t3 error=false", "t4 error=true"}
	contains := []string{"notes.txt", "+gamma", "gamma", "to-stderr"}
	for i := range checks {
		if !strings.HasPrefix(results[i], checks[i]) || !strings.Contains(results[i], contains[i]) {
			t.Errorf("result %d = %q, want %q containing %q", i, results[i], checks[i], contains[i])
		}
	}
	if !strings.Contains(results[3], "2") || !strings.Contains(results[3], "exit code 3") {
		t.Errorf("bash result = %q", results[3])
	}
}

// TestPrintAndJSONSayTheModelRefused: a model's refusal (Anthropic's
// stop_reason refusal, recorded by the SDK authors) is no answer to take
// for one: -p prints what the model said and fails naming the refusal;
// --json ends the turn end_turn marked refusal (the seed's five stops
// hold), and the run with the error.
func TestPrintAndJSONSayTheModelRefused(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, fixtureStep(t, "anthropic_thinking_signature_refusal.sse"))
	z := newZotRun(t)
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "what is an eclipse?")...)
	if code != exitFailure || stdout != "Hi\n" || !strings.Contains(stderr, "zot: the model refused to answer (stop: refusal)") {
		t.Errorf("-p: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	stdout, _, code = z.run(append(anthropicFlags(srv), "--json", "what is an eclipse?")...)
	var ends []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev struct {
			Type    string `json:"type"`
			Stop    string `json:"stop"`
			Refusal bool   `json:"refusal"`
			Message string `json:"message"`
		}
		json.Unmarshal([]byte(line), &ev)
		switch ev.Type {
		case "turn_end":
			ends = append(ends, fmt.Sprintf("turn_end %s refusal=%v", ev.Stop, ev.Refusal))
		case "error":
			ends = append(ends, "error "+ev.Message)
		case "done":
			ends = append(ends, "done")
		}
	}
	want := []string{"turn_end end_turn refusal=true", "done", "error the model refused to answer (stop: refusal); rephrase the prompt, or try another model"}
	if code != exitFailure || !slices.Equal(ends, want) {
		t.Errorf("--json: exit %d, events %q, want %q", code, ends, want)
	}
}

func TestJSONModeStreamsEvents(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "echo hello"}),
		replayStep{Events: anthropicEvents(gen{Text: "It said hello."})})
	z := newZotRun(t)
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "--json", "say hello")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var types []string
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var ev struct {
			Type    string `json:"type"`
			IsError *bool  `json:"is_error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("bad line %q: %v", sc.Text(), err)
		}
		if ev.Type == "tool_result" && (ev.IsError == nil || *ev.IsError) {
			t.Errorf("tool_result line %s", sc.Text())
		}
		if n := len(types); n == 0 || types[n-1] != ev.Type {
			types = append(types, ev.Type)
		}
	}
	got := strings.Join(types, " ")
	for _, want := range []string{"user_message turn_start assistant_start", "tool_call tool_progress tool_result turn_end", "usage turn_end done"} {
		if !strings.Contains(got, want) {
			t.Errorf("events %q lack %q", got, want)
		}
	}
}

func TestPromptFromStdin(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "piped answer"})})
	z := newZotRun(t)
	z.stdin = "summarise this\nplease\n"
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p")...)
	if code != 0 || stdout != "piped answer\n" {
		t.Fatalf("exit %d stdout %q stderr %s", code, stdout, stderr)
	}
	if !strings.Contains(string(srv.Requests()[0].Body), `summarise this\nplease`) {
		t.Errorf("stdin was not the prompt")
	}
}

func TestPromptWordsAndPipedStdinGoTogether(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "reviewed"})})
	z := newZotRun(t)
	z.stdin = "diff --git a/x b/x\n+added line\n"
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "review", "this")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if body := string(srv.Requests()[0].Body); !strings.Contains(body, `review this\n\ndiff --git a/x b/x\n+added line`) {
		t.Errorf("request does not carry the words then stdin: %s", truncate(body, 2000))
	}
}

// A program that runs `zot -p words` and leaves a socket on stdin open, as
// Node's spawn does, gets its answer: zot does not wait for that stdin.
func TestPromptWordsDoNotWaitForAnOpenSocketOnStdin(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "answered"})})
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "theirs")
	defer ours.Close() // held open until zot is done
	z := newZotRun(t)
	cmd := z.cmd(append(anthropicFlags(srv), "-p", "hi")...)
	cmd.Stdin = theirs
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	done := make(chan error, 1)
	// Owned by the test; ends when zot exits.
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || stdout.String() != "answered\n" {
			t.Errorf("exit %v, stdout %q", err, stdout.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("zot -p with prompt words waited for its stdin socket")
	}
}

func TestFlagsAfterPromptWordsAndEqualsForm(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: openaiEvents(gen{Text: "compat"})})
	z := newZotRun(t)
	stdout, stderr, code := z.run("fix", "it", "--provider=ollama", "--model", "qwen3", "--base-url="+srv.URL+"/v1", "-p")
	if code != 0 || stdout != "compat\n" {
		t.Fatalf("exit %d stdout %q stderr %s", code, stdout, stderr)
	}
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(srv.Requests()[0].Body, &body)
	if body.Model != "qwen3" || string(body.Messages[len(body.Messages)-1].Content) != `"fix it"` {
		t.Errorf("request = %s", srv.Requests()[0].Body)
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	srv401 := startReplay(t, replayStep{Status: 401, Body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`})
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"unknown flag", []string{"-p", "--frobnicate", "x"}, 2, "unknown flag --frobnicate"},
		{"missing value", []string{"-p", "x", "--model"}, 2, "--model needs a value"},
		{"bad reasoning", []string{"-p", "--reasoning", "extreme", "x"}, 2, "--reasoning must be off, low, medium, high, xhigh or max"},
		{"no prompt", []string{"-p"}, 2, "no prompt"},
		{"no key", []string{"-p", "--provider", "anthropic", "hi"}, 1, "no API key for anthropic: set ANTHROPIC_API_KEY"},
		{"ollama without model", []string{"-p", "--provider", "ollama", "hi"}, 2, "--provider ollama needs --model"},
		{"model error", append(anthropicFlags(srv401), "-p", "hi"), 1, "HTTP 401: authentication_error: invalid x-api-key (the key came from --api-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, stderr, code := newZotRun(t).run(tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d stderr %q; want %d containing %q", code, stderr, tt.code, tt.stderr)
			}
		})
	}
}

func TestHelpListsEveryFlag(t *testing.T) {
	t.Parallel()
	stdout, _, code := newZotRun(t).run("--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, f := range flagTable {
		if !strings.Contains(stdout, "--"+f.long) {
			t.Errorf("--help lacks --%s", f.long)
		}
	}
	stdout, _, _ = newZotRun(t).run("--version")
	if stdout != "zot "+version+"\n" {
		t.Errorf("--version = %q", stdout)
	}
}

func TestMaxStepsExitsWithError(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "true"}))
	_, stderr, code := newZotRun(t).run(append(anthropicFlags(srv), "-p", "--max-steps", "2", "loop")...)
	if code != 1 || !strings.Contains(stderr, "--max-steps 2") {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("requests = %d", n)
	}
}

func TestInterruptAbortsTheStream(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "slow answer that never finishes"}), HangAfter: 3})
	z := newZotRun(t)
	cmd := z.cmd(append(anthropicFlags(srv), "--json", "hi")...)
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), `"text_delta"`) {
			cmd.Process.Signal(syscall.SIGINT)
		}
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("wait: %v, stderr %s", err, stderr.String())
	}
	n := len(lines)
	if n < 2 || lines[n-2] != `{"type":"turn_end","stop":"aborted"}` || lines[n-1] != `{"type":"done"}` {
		t.Fatalf("last lines = %q", lines)
	}
	for _, l := range lines {
		if strings.Contains(l, `"type":"error"`) {
			t.Errorf("an abort is not an error: %s", l)
		}
	}
}

// startSleeperRun starts zot with a model whose bash call leaves a
// background sleeper and keeps printing, and returns once the sleeper runs.
func startSleeperRun(t *testing.T, args ...string) (cmd *exec.Cmd, stdout io.ReadCloser, stderr *bytes.Buffer, sleeper int) {
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "sleep 300 & echo $! > sleeper.pid; while :; do echo tick; sleep 0.05; done"}))
	z := newZotRun(t)
	cmd = z.cmd(append(anthropicFlags(srv), args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr = &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	waitFor(t, "the tool to start its sleeper", func() bool {
		b, _ := os.ReadFile(filepath.Join(z.cwd, "sleeper.pid"))
		sleeper, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return sleeper > 0
	})
	return cmd, stdout, stderr, sleeper
}

// A closed terminal or ssh session (SIGHUP) stops zot as SIGINT does: the
// tool's process group is killed, nothing outlives zot.
func TestHangupStopsTheToolAndExits(t *testing.T) {
	t.Parallel()
	cmd, stdout, stderr, sleeper := startSleeperRun(t, "-p", "go")
	cmd.Process.Signal(syscall.SIGHUP)
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); exitCode(err) != exitInterrupted {
		t.Fatalf("wait: %v, stderr %s", err, stderr)
	}
	waitFor(t, "the sleeper to be gone", func() bool { return !processAlive(sleeper) })
}

// `zot --json | head`: when the reader goes away, zot stops the run and
// its tools and says why, instead of dying of SIGPIPE and leaving them.
func TestJSONReaderGoneStopsTheToolAndExits(t *testing.T) {
	t.Parallel()
	cmd, stdout, stderr, sleeper := startSleeperRun(t, "--json", "go")
	stdout.Close()
	if err := cmd.Wait(); exitCode(err) != exitFailure || !strings.Contains(stderr.String(), "write events") {
		t.Fatalf("wait: %v (a signal death shows as -1), stderr %s", err, stderr)
	}
	waitFor(t, "the sleeper to be gone", func() bool { return !processAlive(sleeper) })
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -2
	}
	return 0
}

func TestContinueResumesTheLatestSession(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "first answer"})}, replayStep{Events: anthropicEvents(gen{Text: "second answer"})})
	z := newZotRun(t)
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "remember kiwi")...); code != 0 {
		t.Fatal(stderr)
	}
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "-c", "what fruit?")...)
	if code != 0 || stdout != "second answer\n" {
		t.Fatalf("exit %d %q %s", code, stdout, stderr)
	}
	body := string(srv.Requests()[1].Body)
	if !strings.Contains(body, "remember kiwi") || !strings.Contains(body, "first answer") {
		t.Errorf("-c did not carry the earlier conversation: %s", truncate(body, 600))
	}
	list, _ := ListSessions(z.home, z.cwd)
	if len(list) != 1 || list[0].Messages != 4 {
		t.Errorf("sessions = %+v", list)
	}
	// --no-session leaves nothing behind.
	z2 := newZotRun(t)
	z2.run(append(anthropicFlags(srv), "-p", "--no-session", "x")...)
	if entries, _ := os.ReadDir(filepath.Join(z2.home, "sessions")); len(entries) != 0 {
		t.Errorf("--no-session wrote %v", entries)
	}
}

func TestAuthFileMustBePrivate(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "keyed"})})
	z := newZotRun(t)
	auth := filepath.Join(z.home, "auth.json")
	os.WriteFile(auth, []byte(`{"anthropic":{"api_key":"from-file"}}`), 0o644)
	os.Chmod(auth, 0o644)
	_, stderr, code := z.run("-p", "--provider", "anthropic", "--base-url", srv.URL, "hi")
	if code != 1 || !strings.Contains(stderr, "readable by other users (mode 0644); run: chmod 600") {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
	os.Chmod(auth, 0o600)
	stdout, stderr, code := z.run("-p", "--provider", "anthropic", "--base-url", srv.URL, "hi")
	if code != 0 || stdout != "keyed\n" {
		t.Fatalf("exit %d %q %s", code, stdout, stderr)
	}
	if k := srv.Requests()[0].Header.Get("x-api-key"); k != "from-file" {
		t.Errorf("key = %q", k)
	}
}

// waitFor polls cond until it holds, failing after a deadline generous
// enough for a loaded machine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// --response-timeout bounds the wait for a server that never answers, so
// -p ends with an error instead of hanging.
func TestResponseTimeoutFlagEndsAHangingRun(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	z := newZotRun(t)
	_, stderr, code := z.run("-p", "--provider", "openai", "--model", "m", "--base-url", srv.URL, "--response-timeout", "200ms", "hi")
	if code != 1 || !strings.Contains(stderr, "openai: no response within 200ms of sending the request") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
	_, stderr, code = z.run("-p", "--response-timeout", "soon", "hi")
	if code != 2 || !strings.Contains(stderr, "--response-timeout needs a positive duration") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
}

// skipMissing skips a test for a tool that is not installed, saying so
// where it will be read: go test ./... shows a passing package's output to
// no one, so the reason is also appended to the file ZOT_TEST_SKIPS names
// (.ci/run sets it and prints the file after go test).
func skipMissing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if path := os.Getenv("ZOT_TEST_SKIPS"); path != "" {
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			fmt.Fprintf(f, "SKIP %s: %s\n", t.Name(), strings.ReplaceAll(msg, "\n", " "))
			f.Close()
		}
	}
	t.Skip(msg)
}
