package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// What the built binary leaves behind once it exited: processes the
// model's commands started, and spill files.

// TestZotStopsAdoptedOrphansAtExit: a process that left the command's
// session (setsid) and whose parent exited is adopted by zot (the
// subreaper) and stopped when zot exits.
func TestZotStopsAdoptedOrphansAtExit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the subreaper is Linux's")
	}
	t.Parallel()
	z := newZotRun(t)
	pidFile := filepath.Join(z.cwd, "orphan.pid")
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": escapeCommand(t, "setsid", pidFile)}),
		replayStep{Events: anthropicEvents(gen{Text: "started"})})
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "start it")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if pid := readPid(t, pidFile); !processGone(pid) {
		t.Errorf("process %d in a session of its own outlived zot", pid)
	}
}

// TestZotReapsAdoptedOrphans: while zot runs, an orphan of a command is
// zot's child, and when it exits zot reaps it: no zombie is left.
func TestZotReapsAdoptedOrphans(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the subreaper is Linux's")
	}
	t.Parallel()
	z := newZotRun(t)
	pidFile, until := filepath.Join(z.cwd, "orphan.pid"), filepath.Join(z.cwd, "exit-now")
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": escapeCommand(t, "setsid", pidFile, until)}),
		replayStep{Events: anthropicEvents(gen{Text: "started"})})
	p := startRPCProc(t, z, append([]string{"rpc"}, anthropicFlags(srv)...)...)
	p.send(`{"type":"prompt","message":"start it"}`)
	p.until(func(o rpcOut) bool { return o.Type == "done" })
	pid := readPid(t, pidFile)
	if s, _ := readProcStat(fmt.Sprint(pid)); s.ppid != p.cmd.Process.Pid {
		t.Fatalf("the orphan's parent is %d, not zot (%d)", s.ppid, p.cmd.Process.Pid)
	}
	if err := os.WriteFile(until, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, fmt.Sprintf("orphan %d to be reaped", pid), func() bool { return procState(pid) == "gone" })
}

// TestZotRemovesSpillFiles: the spill files of a run go when it ends; at
// start, those a zot left a day ago go too, and only those.
func TestZotRemovesSpillFiles(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	tmp := t.TempDir()
	z.env = append(z.env, "TMPDIR="+tmp)
	old := time.Now().Add(-25 * time.Hour)
	for _, name := range []string{"zot-bash-1.log", "zot-bash-2.log"} {
		os.WriteFile(filepath.Join(tmp, name), nil, 0o600)
	}
	os.Chtimes(filepath.Join(tmp, "zot-bash-1.log"), old, old)
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "seq 1 100000; ls $TMPDIR"}),
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "count")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	spilled := false
	for _, r := range srv.Requests() {
		spilled = spilled || strings.Contains(string(r.Body), "full output in "+tmp)
	}
	if !spilled {
		t.Fatal("the command's output was not spilled")
	}
	entries, _ := os.ReadDir(tmp)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if strings.Join(left, " ") != "zot-bash-2.log" {
		t.Errorf("left in TMPDIR: %v, want only the recent zot-bash-2.log", left)
	}
}
