package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rpcProc is the built binary serving `zot rpc` as a subprocess.
type rpcProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  <-chan rpcOut
	stderr *bytes.Buffer
}

func startRPCProc(t *testing.T, z *zotRun, args ...string) *rpcProc {
	t.Helper()
	cmd := z.cmd(args...)
	cmd.Stdin = nil
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &rpcProc{t: t, cmd: cmd, stdin: stdin, stderr: &bytes.Buffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	p.lines = queueLines(stdout, stop)
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
		close(stop)
	})
	return p
}

func (p *rpcProc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("send: %v", err)
	}
}

func (p *rpcProc) until(match func(rpcOut) bool) []rpcOut {
	p.t.Helper()
	var got []rpcOut
	deadline := time.After(20 * time.Second)
	for {
		select {
		case o, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("zot closed its output; stderr:\n%s", p.stderr)
			}
			if o.Type == "BAD LINE" {
				p.t.Fatalf("not a JSON line: %q", o.Raw)
			}
			got = append(got, o)
			if match(o) {
				return got
			}
		case <-deadline:
			p.t.Fatalf("timed out; stderr:\n%s", p.stderr)
		}
	}
}

func (p *rpcProc) rest() []rpcOut {
	var got []rpcOut
	for o := range p.lines {
		got = append(got, o)
	}
	return got
}

// wait returns zot's exit status once it has exited.
func (p *rpcProc) wait() int {
	p.t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		} else if err != nil {
			p.t.Fatal(err)
		}
		return 0
	case <-time.After(20 * time.Second):
		p.t.Fatalf("zot did not exit; stderr:\n%s", p.stderr)
	}
	return -1
}

func isResponse(id string) func(rpcOut) bool {
	return func(o rpcOut) bool { return o.Type == "response" && string(o.ID) == `"`+id+`"` }
}

func TestRPCBinaryToolLoopAndCommands(t *testing.T) {
	t.Parallel()
	for _, mode := range [][]string{{"rpc"}, {"--rpc"}} {
		t.Run(mode[0], func(t *testing.T) {
			t.Parallel()
			srv := startReplay(t, toolStep("t1", "bash", obj{"command": "echo from-the-tool"}), textStep("All done."))
			z := newZotRun(t)
			p := startRPCProc(t, z, append(mode, anthropicFlags(srv)...)...)
			p.send(`{"id":"h","type":"hello"}`)
			if r := p.until(isResponse("h")); !strings.Contains(r[0].Raw, `"data":{"protocol_version":1,"version":"`+version+`","provider":"anthropic","model":"`+defaultModels["anthropic"]+`"}`) {
				t.Errorf("hello = %s", r[0].Raw)
			}
			p.send(`{"id":"p","type":"prompt","message":"run it"}`)
			events := p.until(isType("done"))
			want := "response user_message turn_start assistant_start tool_use_start tool_use_args tool_use_end assistant_message usage " +
				"tool_call tool_progress tool_result turn_end:tool_use turn_start assistant_start text_delta assistant_message usage turn_end:end_turn done"
			if got := eventTypesWithResponses(events); got != want {
				t.Errorf("events:\n got %s\nwant %s", got, want)
			}
			p.send(`{"id":"m","type":"get_messages"}`)
			msgs := p.until(isResponse("m"))[0].Raw
			for _, w := range []string{`"name":"bash","args":{"command":"echo from-the-tool"}`, `"call_id":"t1","is_error":false,"content":[{"type":"text","text":"from-the-tool`, `"text":"All done."`} {
				if !strings.Contains(msgs, w) {
					t.Errorf("get_messages lacks %s:\n%s", w, msgs)
				}
			}
			p.stdin.Close()
			if code := p.wait(); code != 0 {
				t.Errorf("exit %d: %s", code, p.stderr)
			}
			// Sessions are off unless asked for.
			if entries, _ := os.ReadDir(filepath.Join(z.home, "sessions")); len(entries) != 0 {
				t.Errorf("rpc wrote a session without --session: %v", entries)
			}
		})
	}
}

func eventTypesWithResponses(lines []rpcOut) string {
	s := eventTypes(lines)
	if len(lines) > 0 && lines[0].Type == "response" {
		s = "response " + s
	}
	return s
}

func TestRPCBinarySessionWhenAsked(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("kept"))
	z := newZotRun(t)
	path := filepath.Join(z.cwd, "conv.jsonl")
	p := startRPCProc(t, z, append([]string{"rpc", "--session", path}, anthropicFlags(srv)...)...)
	p.send(`{"type":"prompt","message":"remember"}`)
	p.until(isType("done"))
	p.stdin.Close()
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d: %s", code, p.stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "remember") || !strings.Contains(string(b), "kept") {
		t.Errorf("session %s: %v %s", path, err, b)
	}
}

func TestRPCBinaryAuth(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": `echo "token=[$ZOTCORE_RPC_TOKEN]"`}), textStep("ok"))
	t.Run("wrong token exits 1", func(t *testing.T) {
		t.Parallel()
		z := newZotRun(t)
		z.env = append(z.env, "ZOTCORE_RPC_TOKEN=open-sesame")
		p := startRPCProc(t, z, append([]string{"rpc"}, anthropicFlags(srv)...)...)
		p.send(`{"id":"0","type":"hello","token":"open-barley"}`)
		r := p.until(isResponse("0"))[0]
		if r.Success || !strings.Contains(r.Error, "invalid token") {
			t.Errorf("reply = %s", r.Raw)
		}
		if code := p.wait(); code != 1 {
			t.Errorf("exit %d", code)
		}
		if strings.Contains(p.stderr.String(), "open-sesame") {
			t.Errorf("stderr shows the token: %s", p.stderr)
		}
	})
	t.Run("right token; tools cannot read it", func(t *testing.T) {
		t.Parallel()
		z := newZotRun(t)
		z.env = append(z.env, "ZOTCORE_RPC_TOKEN=open-sesame")
		p := startRPCProc(t, z, append([]string{"rpc"}, anthropicFlags(srv)...)...)
		p.send(`{"id":"1","type":"ping"}`)
		if r := p.until(isResponse("1"))[0]; r.Success || r.Error != "auth required" {
			t.Errorf("ping before hello = %s", r.Raw)
		}
		p.send(`{"id":"0","type":"hello","token":"open-sesame"}`)
		if r := p.until(isResponse("0"))[0]; !r.Success {
			t.Fatalf("hello = %s", r.Raw)
		}
		p.send(`{"id":"p","type":"prompt","message":"print the token"}`)
		events := p.until(isType("done"))
		var out string
		for _, e := range events {
			out += e.Raw + "\n"
		}
		if !strings.Contains(out, "token=[]") || strings.Contains(out, "open-sesame") {
			t.Errorf("the tool saw the token:\n%s", out)
		}
	})
}

func TestRPCBinaryUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"rpc", "hello"}, {"rpc", "-p"}, {"--rpc", "--json"}} {
		_, stderr, code := newZotRun(t).run(args...)
		if code != 2 || !strings.Contains(stderr, "zot: ") {
			t.Errorf("%v: exit %d %s", args, code, stderr)
		}
	}
}

// A token variable that is set but empty (one that did not expand) is a
// mistake, not a request to run without auth.
func TestRPCBinaryEmptyTokenIsAUsageError(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("never"))
	z := newZotRun(t)
	z.env = append(z.env, "ZOTCORE_RPC_TOKEN=")
	z.stdin = `{"id":"1","type":"prompt","message":"hi"}` + "\n"
	stdout, stderr, code := z.run(append([]string{"rpc"}, anthropicFlags(srv)...)...)
	if code != 2 || !strings.Contains(stderr, "ZOTCORE_RPC_TOKEN is set but empty") || stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests reached the provider", n)
	}
}

func TestRPCBinaryStdinEOFWithAPromptInFlight(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "sleep 0.3; echo slept"}), textStep("finished"))
	z := newZotRun(t)
	p := startRPCProc(t, z, append([]string{"rpc"}, anthropicFlags(srv)...)...)
	p.send(`{"type":"prompt","message":"one"}`)
	p.send(`{"type":"prompt","message":"two"}`)
	p.stdin.Close()
	lines := p.rest()
	var dones, answers int
	for _, o := range lines {
		switch o.Type {
		case "done":
			dones++
		case "assistant_message":
			if strings.Contains(o.Raw, "finished") {
				answers++
			}
		}
	}
	if code := p.wait(); code != 0 || dones != 2 || answers != 2 {
		t.Errorf("exit %d, dones %d, answers %d; stderr %s", code, dones, answers, p.stderr)
	}
}

func TestRPCBinarySIGTERMStopsTheToolAndExits(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "sleep 300 & echo $! > sleeper.pid; wait"}))
	z := newZotRun(t)
	p := startRPCProc(t, z, append([]string{"rpc"}, anthropicFlags(srv)...)...)
	p.send(`{"type":"prompt","message":"sleep"}`)
	p.send(`{"type":"prompt","message":"queued"}`)
	var pid int
	waitFor(t, "the tool to start its sleeper", func() bool {
		b, _ := os.ReadFile(filepath.Join(z.cwd, "sleeper.pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	})
	p.cmd.Process.Signal(syscall.SIGTERM)
	lines := p.rest()
	if code := p.wait(); code != exitInterrupted {
		t.Errorf("exit %d; stderr %s", code, p.stderr)
	}
	if got := eventTypes(lines); !strings.HasSuffix(got, "tool_result turn_end:aborted done done") {
		t.Errorf("events = %s", got)
	}
	waitFor(t, fmt.Sprintf("sleeper %d to be gone", pid), func() bool { return !processAlive(pid) })
}

// The extension host's problems reach the client, not only stderr.
func TestRPCBinaryReportsExtensionProblems(t *testing.T) {
	t.Parallel()
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "extension.json"), []byte(`{"name":"broken"}`), 0o644)
	z := newZotRun(t)
	p := startRPCProc(t, z, "rpc", "--provider", "anthropic", "--api-key", "k", "--ext", bad)
	p.send(`{"id":"1","type":"ping"}`)
	var note rpcOut
	for _, o := range p.until(isResponse("1")) {
		if o.Type == "ext_notify" {
			note = o
		}
	}
	if !strings.Contains(note.Raw, `"extension":"extensions","level":"warn"`) || !strings.Contains(note.Raw, "exec") {
		t.Errorf("no ext_notify about the bad manifest; got %q, stderr %s", note.Raw, p.stderr)
	}
}

// processAlive says whether pid runs; a zombie waiting for its reaper does
// not count.
func processAlive(pid int) bool {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		return len(f) > 0 && f[0] != "Z" && f[0] != "X"
	}
	return syscall.Kill(pid, 0) == nil
}

// The example clients, run unmodified against the built binary, print the
// same thing.
func TestRPCExampleClients(t *testing.T) {
	t.Parallel()
	clients := []struct {
		name string
		need string
		argv []string
	}{
		{"python", "python3", []string{"python3", "examples/rpc/python/zot_client.py"}},
		{"node", "node", []string{"node", "examples/rpc/node/zot-client.js"}},
		{"shell", "jq", []string{"bash", "examples/rpc/shell/prompt.sh"}},
		{"go", "go", nil},
	}
	want := "\n[tool] bash {\"command\":\"echo from-the-tool\"}\nAll done. Ünïcødé ✓\ncost: $0.001305 (200 in, 40 out tokens)\n"
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(c.need); err != nil {
				skipMissing(t, "%s is not installed; .ci/run installs it", c.need)
			}
			if c.name == "go" {
				src, _ := filepath.Abs(filepath.Join("examples", "rpc", "go"))
				c.argv = []string{buildGo(t, src)}
			}
			srv := startReplay(t, toolStep("t1", "bash", obj{"command": "echo from-the-tool"}), textStep("All done. Ünïcødé ✓"))
			z := newZotRun(t)
			argv := append(append([]string{}, c.argv...), "run the tool")
			argv = append(argv, anthropicFlags(srv)...)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), "ZOT_BIN="+zotBin(t), "ZOT_HOME="+z.home, "ZOTCORE_RPC_TOKEN=example-token", "ANTHROPIC_API_KEY=")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
			if stdout.String() != want {
				t.Errorf("stdout:\n%q\nwant\n%q\nstderr: %s", stdout.String(), want, stderr.String())
			}
		})
	}
}

// A client that closes zot's stdout makes zot stop cleanly (exit 1), not die
// of SIGPIPE with its tools still running.
func TestRPCBinaryClientClosedStdout(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "sleep 300 & echo $! > sleeper.pid; wait"}))
	z := newZotRun(t)
	cmd := z.cmd(append([]string{"rpc"}, anthropicFlags(srv)...)...)
	cmd.Stdin = nil
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	io.WriteString(stdin, `{"type":"prompt","message":"sleep"}`+"\n")
	var pid int
	waitFor(t, "the tool to start its sleeper", func() bool {
		b, _ := os.ReadFile(filepath.Join(z.cwd, "sleeper.pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	})
	stdout.Close()
	io.WriteString(stdin, `{"type":"ping"}`+"\n")
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("wait: %v (a signal death shows as exit -1); stderr %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "write to client") {
		t.Errorf("stderr = %s", stderr.String())
	}
	waitFor(t, "the sleeper to be gone", func() bool { return !processAlive(pid) })
}
