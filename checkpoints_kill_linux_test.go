//go:build linux

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// zot killed (-9) in the middle of a restore — one file already brought
// back, the next half-written into its temp file — leaves nothing that
// blocks running the same restore again: the rerun needs no --force,
// brings every file back, and no temp file is left in the project.
//
// The moment is chosen, not guessed: the checkpoint object of the second
// file is a FIFO, so the restore blocks reading it with the temp file
// made and half of the bytes in it, and is killed there.
func TestCheckpointsRestoreKilledMidWriteRunsAgain(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("t1", "write", obj{"path": "a.txt", "content": "a after\n"}),
		toolStep("t2", "write", obj{"path": "b.txt", "content": "b after\n"}),
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	z := newZotRun(t)
	mustWrite(t, filepath.Join(z.cwd, "a.txt"), "a before\n", 0o644)
	bBefore := "b before, " + strings.Repeat("long ", 1000) + "\n"
	mustWrite(t, filepath.Join(z.cwd, "b.txt"), bBefore, 0o644)
	before := treeState(t, z.cwd)
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "work")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ids := checkpointIDs(t, z)

	sum := sha256.Sum256([]byte(bBefore))
	hash := hex.EncodeToString(sum[:])
	objects, _ := filepath.Glob(filepath.Join(z.home, "checkpoints", "*", "objects", hash[:2], hash[2:]))
	if len(objects) != 1 {
		t.Fatalf("the object of b.txt: %v", objects)
	}
	object := objects[0]
	os.Remove(object)
	if err := syscall.Mkfifo(object, 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := z.cmd("checkpoints", "restore", "--files-only", ids[0])
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// The check of every object before the restore writes: the whole.
	feedFIFO(t, object, bBefore, true)
	waitFor(t, "the restore to finish checking the object", func() bool { return !holdsOpen(cmd.Process.Pid, object) })
	// The write: half, and the restore waits for the rest.
	w := feedFIFO(t, object, bBefore[:len(bBefore)/2], false)
	defer w.Close()
	var temps []string
	waitFor(t, "the temp file of b.txt", func() bool {
		temps, _ = filepath.Glob(filepath.Join(z.cwd, ".b.txt.zot-*.tmp"))
		if len(temps) != 1 {
			return false
		}
		fi, err := os.Stat(temps[0])
		return err == nil && fi.Size() > 0
	})
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if got := treeState(t, z.cwd); got["a.txt"] != before["a.txt"] || got["b.txt"] != "644 b after\n" {
		t.Fatalf("not the moment chosen: %v", got)
	}

	os.Remove(object)
	mustWrite(t, object, bBefore, 0o600)
	if stdout, stderr, code := z.run("checkpoints", "restore", "--files-only", ids[0]); code != 0 {
		t.Fatalf("the rerun: exit %d: %s%s", code, stdout, stderr)
	}
	if got := treeState(t, z.cwd); !mapsEqual(got, before) {
		t.Fatalf("after the rerun: %v, want %v, with the bytes of before", sortedKeys(got), sortedKeys(before))
	}
}

// feedFIFO opens the FIFO at path for writing (which waits for a reader) and
// writes s; it closes it when end is set, else returns it open.
func feedFIFO(t *testing.T, path, s string, end bool) *os.File {
	t.Helper()
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if end {
		w.Close()
	}
	return w
}

// holdsOpen says whether process pid has path open.
func holdsOpen(pid int, path string) bool {
	fds, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "fd", "*"))
	for _, fd := range fds {
		if target, _ := os.Readlink(fd); target == path {
			return true
		}
	}
	return false
}
