//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// zotTemps lists the temp files of zot's naming in dir.
func zotTemps(dir string) []string {
	var out []string
	names, _ := filepath.Glob(filepath.Join(dir, ".*.zot-*.tmp"))
	for _, n := range names {
		if _, ok := tempPID(filepath.Base(n)); ok {
			out = append(out, filepath.Base(n))
		}
	}
	return out
}

// zot killed (-9) once write or edit has made its temp file — held in
// the temp file's open (killWhenCreated) — leaves the file whole (the old
// bytes) and the temp file behind, and the next run removes it: a write
// into the same directory does, with checkpoints off; the checkpoint walk
// of any next call does.
func TestWriteAndEditKilledMidTempLeaveNothingBehind(t *testing.T) {
	t.Parallel()
	// 1.5 MiB: under the 2 MiB a reply may grow to, and the write and its
	// fsync take a while.
	content := strings.Repeat("0123456789abcdef", 3<<15)
	for _, tool := range []string{"write", "edit"} {
		z := newZotRun(t)
		big := filepath.Join(z.cwd, "big.txt")
		step := bigToolStep("t1", "write", obj{"path": "big.txt", "content": "new " + content})
		if tool == "edit" {
			step = toolStep("t1", "edit", obj{"path": "big.txt", "oldText": "old ", "newText": "new "})
		}
		var left []string
		for try := 0; len(left) == 0; try++ {
			if try == 3 {
				t.Fatalf("%s: in %d tries the temp file never outlived the kill", tool, try)
			}
			mustWrite(t, big, "old "+content, 0o644)
			srv := startReplay(t, step, replayStep{Events: anthropicEvents(gen{Text: "never"})})
			killWhenCreated(t, z.cmd(append(anthropicFlags(srv), "-p", "--no-session", "go")...), z.cwd, ".big.txt.zot-*.tmp")
			left = zotTemps(z.cwd)
		}
		if b, _ := os.ReadFile(big); string(b) != "old "+content {
			t.Fatalf("%s: big.txt is %d bytes starting %.10q: not the old file whole", tool, len(b), b)
		}

		if tool == "write" {
			mustWrite(t, filepath.Join(z.home, "config.json"), `{"checkpoints": {"enabled": false}}`, 0o600)
		}
		next := toolStep("t2", "write", obj{"path": "small.txt", "content": "small\n"})
		if tool == "edit" {
			next = toolStep("t2", "bash", obj{"command": "true"})
		}
		again := startReplay(t, next, replayStep{Events: anthropicEvents(gen{Text: "done"})})
		if _, stderr, code := z.run(append(anthropicFlags(again), "-p", "--no-session", "go")...); code != 0 {
			t.Fatalf("%s: the next run: exit %d: %s", tool, code, stderr)
		}
		if now := zotTemps(z.cwd); len(now) != 0 {
			t.Errorf("%s: the next run left %v (the kill left %v)", tool, now, left)
		}
		if b, _ := os.ReadFile(big); string(b) != "old "+content {
			t.Errorf("%s: big.txt changed: %d bytes", tool, len(b))
		}
	}
}

// The sweep removes only what a dead zot left: a file of another name, a
// live process's, one another zot holds its lock on (a zot in another PID
// namespace, whose pid means nothing here) and another user's all stay.
func TestStaleTempSweepSparesWhatIsNotADeadZots(t *testing.T) {
	t.Parallel()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := gone.Process.Pid
	z := newZotRun(t)
	name := func(base string, pid int) string { return fmt.Sprintf(".%s.zot-%d-0123456789ab.tmp", base, pid) }
	removed := name("a.txt", dead)
	kept := []string{
		name("b.txt", 1),
		name("locked.txt", dead),
		name("d.txt", dead) + ".bak",
		".e.txt.zot-0123456789ab.tmp",
		".f.txt.zot-restore-0123456789ab",
		strings.TrimPrefix(name("g.txt", dead), "."),
		strings.ToUpper(name("h.txt", dead)),
		".zot-" + fmt.Sprint(dead) + "-0123456789ab.tmp",
	}
	for _, n := range append(kept, removed) {
		mustWrite(t, filepath.Join(z.cwd, n), "x", 0o600)
	}
	lock, err := os.Open(filepath.Join(z.cwd, name("locked.txt", dead)))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		other := name("other-user.txt", dead)
		mustWrite(t, filepath.Join(z.cwd, other), "x", 0o600)
		os.Lchown(filepath.Join(z.cwd, other), 65534, 65534)
		kept = append(kept, other)
	}

	srv := startReplay(t, toolStep("t1", "write", obj{"path": "new.txt", "content": "n\n"}), replayStep{Events: anthropicEvents(gen{Text: "done"})})
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--no-session", "go")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Lstat(filepath.Join(z.cwd, removed)); err == nil {
		t.Errorf("%s (pid %d is gone) is still there", removed, dead)
	}
	for _, n := range kept {
		if _, err := os.Lstat(filepath.Join(z.cwd, n)); err != nil {
			t.Errorf("%s was removed: %v", n, err)
		}
	}
}

// A child forked while a file is being placed holds a copy of its
// descriptor until its exec; the placed file must not stay locked by that
// copy, or a session imported at that moment cannot be opened ("in use by
// another process"). The copy is made here by dup, as the fork would.
func TestPlacedFileIsNotLockedByAForkedCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, tmp := filepath.Join(dir, "session.jsonl"), filepath.Join(dir, tempName("session.jsonl"))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	copyFD := -1
	fill := func(w io.Writer) error {
		copyFD, err = syscall.Dup(int(w.(*os.File).Fd()))
		return err
	}
	if err := placeTemp(f, fill, 0o600, nil, func() error { return os.Rename(tmp, path) }, func() error { return os.Remove(tmp) }); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(copyFD)
	placed, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer placed.Close()
	if err := syscall.Flock(int(placed.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("the placed file is still locked while a copy of its temp descriptor lives: %v", err)
	}
}
