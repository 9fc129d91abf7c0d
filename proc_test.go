package main

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// groupAlive reports whether a live process is in the process group: a
// zombie does not count, since an init that never reaps orphans (common
// in containers) would keep a dead group alive forever.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) == syscall.ESRCH {
		return false
	}
	procs, ok := readProcs()
	if !ok {
		return true
	}
	for _, s := range procs {
		if s.pgrp == pgid && !s.zombie() {
			return true
		}
	}
	return false
}

func procTestdata(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "proc", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// escapeCommand is a shell command that leaves a process behind the way
// mode says (testdata/proc/escape.py) and writes its pid to pidFile.
func escapeCommand(t testing.TB, mode, pidFile string, until ...string) string {
	cmd := "python3 " + strconv.Quote(procTestdata(t, "escape.py")) + " " + mode + " " + strconv.Quote(pidFile)
	for _, u := range until {
		cmd += " " + strconv.Quote(u)
	}
	return cmd
}

// readPid reads the pid a process wrote to path, and makes sure the test
// does not leave that process running.
func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		t.Fatalf("no pid in %s: %v", path, err)
	}
	t.Cleanup(func() {
		if !processGone(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pid
}

func procState(pid int) string {
	s, ok := readProcStat(strconv.Itoa(pid))
	if !ok {
		return "gone"
	}
	return string(s.state)
}

func TestStartProcRefusesAMissingEnvPolicy(t *testing.T) {
	t.Parallel()
	_, err := startProc(procSpec{argv: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), "no environment policy") {
		t.Fatalf("err = %v", err)
	}
}

// TestProcEnvNoSecrets: the policy drops every secret, keeps the rest, and
// the added variables come last.
func TestProcEnvNoSecrets(t *testing.T) {
	for _, name := range secretEnvVars {
		t.Setenv(name, "secret-"+name)
	}
	t.Setenv("ZOT_PROC_TEST_KEPT", "kept")
	run, err := runToEnd(context.Background(), procSpec{argv: []string{"env"}, env: envNoSecrets, addEnv: []string{"ZOT_PROC_TEST_ADDED=added"}}, nil, 1<<20, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := string(run.stdout.Bytes())
	if strings.Contains(got, "secret-") || !strings.Contains(got, "ZOT_PROC_TEST_KEPT=kept\n") || !strings.Contains(got, "ZOT_PROC_TEST_ADDED=added\n") {
		t.Errorf("environment:\n%s", got)
	}
}

// TestProcStopReachesTheSessionBeforeTheLeaderIsReaped: what a process
// leaves in its group and in its session gets SIGTERM while the leader is
// still an unreaped zombie, so its ids cannot have been reused; Reap
// releases the leader after.
func TestProcStopReachesTheSessionBeforeTheLeaderIsReaped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := startProc(procSpec{argv: []string{"python3", procTestdata(t, "witness.py"), dir}, env: envNoSecrets})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	if got := procState(p.pid); got != "Z" {
		t.Fatalf("the exited leader is %s, want an unreaped zombie", got)
	}
	if got := p.Stop(5 * time.Second); got != endedAtTERM {
		t.Errorf("Stop = %d, want endedAtTERM", got)
	}
	for _, name := range []string{"in-group", "out-of-group"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if got := string(b); err != nil || got != "Z" {
			t.Errorf("%s: at SIGTERM the leader was %q (%v), want Z", name, got, err)
		}
	}
	state, err := p.Reap()
	if err != nil || !state.Success() {
		t.Errorf("Reap = %v, %v", state, err)
	}
	if got := procState(p.pid); got != "gone" {
		t.Errorf("after Reap the leader is %s", got)
	}
	if p.Stop(0) != nothingLeft {
		t.Error("Stop after Reap signalled something")
	}
}

func TestProcStopEscalatesToSIGKILL(t *testing.T) {
	t.Parallel()
	p, err := startProc(procSpec{argv: []string{"sh", "-c", `trap "" TERM; echo ready; while :; do sleep 1; done`}, env: envNoSecrets, stdout: streamPipe})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := p.stdout.Read(buf); err != nil {
		t.Fatal(err)
	}
	p.stdout.Close()
	if got := p.Stop(100 * time.Millisecond); got != neededSIGKILL {
		t.Errorf("Stop = %d, want neededSIGKILL", got)
	}
	state, _ := p.Reap()
	if ws, _ := state.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("state = %v", state)
	}
}

// TestProcReapStopsWhatTheLeaderLeft: the attacker's escapes from the
// process group (setpgid, setpgrp) stay in the session, and Reap kills
// them with the group.
func TestProcReapStopsWhatTheLeaderLeft(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := "sleep 405 & " + escapeCommand(t, "setpgid", filepath.Join(dir, "a")) + "; " + escapeCommand(t, "setpgrp", filepath.Join(dir, "b"))
	p, err := startProc(procSpec{argv: []string{"sh", "-c", cmd}, env: envNoSecrets})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	a, b := readPid(t, filepath.Join(dir, "a")), readPid(t, filepath.Join(dir, "b"))
	p.Reap()
	if groupAlive(p.pid) || !processGone(a) || !processGone(b) {
		t.Errorf("left running after Reap: group %v, setpgid %v, setpgrp %v", groupAlive(p.pid), !processGone(a), !processGone(b))
	}
}

func TestRunToEndBoundsOutputAndKillsAtTheDeadline(t *testing.T) {
	t.Parallel()
	// The deadline comes once the output is written, not after a time a
	// loaded machine may not have written it in: the command then opens a
	// FIFO, and this test's open of its other end returns.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	written := filepath.Join(t.TempDir(), "written")
	if err := syscall.Mkfifo(written, 0o600); err != nil {
		t.Fatal(err)
	}
	spec := procSpec{argv: []string{"sh", "-c", "head -c 5000 /dev/zero; echo err >&2; : >\"$1\"; exec sleep 30", "sh", written}, env: envNoSecrets}
	opened := make(chan struct{})
	go func() {
		defer close(opened)
		if f, err := os.Open(written); err == nil {
			f.Close()
		}
		cancel()
	}()
	run, err := runToEnd(ctx, spec, nil, 1000, time.Second)
	// A command that never opened the FIFO leaves the open above waiting:
	// an open for reading and writing does not wait, and releases it.
	if w, err := os.OpenFile(written, os.O_RDWR, 0); err == nil {
		<-opened
		w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if !run.stopped || run.stdout.buf.Len() != 1000 || !run.stdout.truncated || string(run.stderr.Bytes()) != "err\n" {
		t.Errorf("stopped %v, stdout %d bytes (cut %v), stderr %q", run.stopped, run.stdout.buf.Len(), run.stdout.truncated, run.stderr.Bytes())
	}
	if ws, _ := run.state.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("state = %v, want killed", run.state)
	}
}

// TestOnlyProcStartsAndSignalsProcesses keeps proc.go the one way: no other
// file of zot starts, signals or reaps a process by itself.
func TestOnlyProcStartsAndSignalsProcesses(t *testing.T) {
	t.Parallel()
	banned := map[string]bool{
		"exec.Command": true, "exec.CommandContext": true, "os.StartProcess": true, "os.FindProcess": true,
		"syscall.ForkExec": true, "syscall.StartProcess": true, "syscall.Exec": true,
		"syscall.Kill": true, "syscall.Wait4": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "proc") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && banned[pkg.Name+"."+sel.Sel.Name] {
					t.Errorf("%s: %s.%s: start and stop processes through proc.go", fset.Position(sel.Pos()), pkg.Name, sel.Sel.Name)
				}
			}
			return true
		})
	}
}

// The kill grace knob only shortens the grace: an empty, unreadable,
// negative or longer value leaves the default.
func TestKillGraceKnobOnlyShortens(t *testing.T) {
	t.Parallel()
	def := 2 * time.Second
	for v, want := range map[string]time.Duration{
		"": def, "50ms": 50 * time.Millisecond, "0s": 0, "1h": def, "-1s": def, "soon": def,
	} {
		if got := graceFromEnv(v, def); got != want {
			t.Errorf("graceFromEnv(%q) = %v, want %v", v, got, want)
		}
	}
}
