package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Two zots on one session: the second is refused while the first appends,
// naming it. Then the first is killed (-9) in the middle of a tool call:
// its lock goes with it, and the next -c tells the model the call may
// have run, rather than that it never did.
func TestSessionInUseAndKilledDuringATool(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "sleep 300 & echo $! > sleeper.pid; wait"}),
		replayStep{Events: anthropicEvents(gen{Text: "checked"})})
	z := newZotRun(t)
	first := z.cmd(append(anthropicFlags(srv), "-p", "--no-audit", "start the job")...)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	sleeper := 0
	t.Cleanup(func() {
		first.Process.Kill()
		if sleeper > 0 {
			syscall.Kill(sleeper, syscall.SIGKILL)
		}
	})
	waitFor(t, "the tool to start", func() bool {
		b, _ := os.ReadFile(filepath.Join(z.cwd, "sleeper.pid"))
		sleeper, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return sleeper > 0
	})

	_, stderr, code := z.run(append(anthropicFlags(srv), "-p", "-c", "--no-audit", "me too")...)
	if code != 1 || !strings.Contains(stderr, fmt.Sprintf("is in use by another process (pid %d)", first.Process.Pid)) || !strings.Contains(stderr, "without --continue") {
		t.Fatalf("second zot: exit %d, stderr %s", code, stderr)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the refused zot sent %d requests", n-1)
	}

	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "-c", "--no-audit", "did it run?")...)
	if code != 0 || stdout != "checked\n" {
		t.Fatalf("after kill -9: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "answered them as interrupted (they may have run)") {
		t.Errorf("the repair was not reported: %s", stderr)
	}
	body := string(srv.Requests()[1].Body)
	if !strings.Contains(body, "it may have run, in part or in full, so check before repeating it") || strings.Contains(body, "before it ran") {
		t.Errorf("the model was not told the call may have run: %s", truncate(body, 2000))
	}
}

// One process, two opens: the lock is per open file, so a second Session
// on a file cannot append beside the first; once the first closes it can.
func TestSessionLockIsPerOpenFile(t *testing.T) {
	t.Parallel()
	path := newTestSession(t, t.TempDir(), t.TempDir(), sampleTranscript())
	first, _, err := OpenSession(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenSession(path); !errorsIsInUse(err) || !strings.Contains(err.Error(), fmt.Sprintf("session %s is in use by another process (pid %d)", path, os.Getpid())) {
		t.Fatalf("second open: %v", err)
	}
	first.Close()
	second, _, err := OpenSession(path)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	second.Close()

	// A new session holds its lock from the moment its file exists.
	s := NewSession(t.TempDir(), t.TempDir(), "anthropic", "m")
	if err := s.Append(userMsg("hi", 1)); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := OpenSession(s.Path); !errorsIsInUse(err) {
		t.Fatalf("open of a new session being written: %v", err)
	}
}

func errorsIsInUse(err error) bool { return errors.Is(err, ErrSessionInUse) }

// A row that cannot be written (here: past the file size limit, as on a
// full disk) ends the run with exit 1 and says what was not saved; the
// tool call it carried does not run, and no later, smaller row is written
// after it, so the saved transcript has no hole.
func TestSessionWriteFailureEndsTheRun(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a long explanation ", 4000) // ~76 KB: past the limit
	srv := startReplay(t,
		replayStep{Events: anthropicEvents(gen{Text: big}, gen{ToolID: "t1", ToolName: "write", ToolArgs: `{"path":"made.txt","content":"x"}`})},
		replayStep{Events: anthropicEvents(gen{Text: "never asked"})})
	z := newZotRun(t)
	cmd := z.cmd(append(anthropicFlags(srv), "-p", "--no-audit", "explain")...)
	// 16 blocks is 8 or 16 KiB, depending on the shell: room for the meta
	// row and the prompt, not for the answer.
	cmd.Args = append([]string{"/bin/sh", "-c", `ulimit -f 16 && exec "$0" "$@"`, zotBin(t)}, cmd.Args[1:]...)
	cmd.Path = "/bin/sh"
	out, err := cmd.CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(out), "could not save the assistant's message") || !strings.Contains(string(out), "file too large") {
		t.Fatalf("exit %v, output:\n%s", err, truncate(string(out), 2000))
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "made.txt")); err == nil {
		t.Error("the tool ran although its call was not saved")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests; the run went on after the failed write", n)
	}
	list, err := filepath.Glob(filepath.Join(z.home, "sessions", "*", "*.jsonl"))
	if err != nil || len(list) != 1 {
		t.Fatalf("sessions: %v %v", list, err)
	}
	data, _ := os.ReadFile(list[0])
	var types []string
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		var row struct{ Type string }
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("a torn row was left: %q", truncate(line, 200))
		}
		types = append(types, row.Type)
	}
	if got := strings.Join(types, ","); got != "meta,message" {
		t.Errorf("rows %s, want meta,message: nothing after the row that failed", got)
	}
}
