//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// killWhenCreated starts cmd and kills it (-9) while it opens the first
// file it creates in dir whose name matches pattern; it returns that name,
// or "" when cmd ended without making one. A fanotify permission event
// holds the open until the kill has landed, so the kill falls between the
// file's creation and its first byte however loaded the machine is. Where
// fanotify's permission events are not allowed (they need CAP_SYS_ADMIN)
// it races the open as killAfterCreated does, which a loaded machine can
// lose.
func killWhenCreated(t *testing.T, cmd *exec.Cmd, dir, pattern string) string {
	t.Helper()
	const (
		fanClassContent, fanCloexec, fanNonblock = 0x04, 0x01, 0x02
		fanMarkAdd, fanOpenPerm, fanEventOnChild = 0x01, 0x00010000, 0x08000000
		fanAllow, atFdcwd                        = 0x01, -100
	)
	group, _, errno := syscall.Syscall(syscall.SYS_FANOTIFY_INIT, fanClassContent|fanCloexec|fanNonblock, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return killAfterCreated(t, cmd, dir, pattern, 1, 0)
	}
	events := os.NewFile(group, "fanotify")
	// Closing the group lets every open it still holds go on.
	defer events.Close()
	path, err := syscall.BytePtrFromString(dir)
	if err != nil {
		t.Fatal(err)
	}
	dirfd := atFdcwd // a variable: the constant -100 does not convert to uintptr
	if _, _, errno := syscall.Syscall6(syscall.SYS_FANOTIFY_MARK, group, fanMarkAdd, fanOpenPerm|fanEventOnChild, uintptr(dirfd), uintptr(unsafe.Pointer(path)), 0); errno != 0 {
		return killAfterCreated(t, cmd, dir, pattern, 1, 0)
	}
	// Answers every open in dir, anyone's (zot reads files there too),
	// until events is closed on return.
	return runKilledBy(t, cmd, func(found chan<- string) {
		buf := make([]byte, 4096)
		for {
			n, err := events.Read(buf)
			if err != nil {
				return
			}
			// struct fanotify_event_metadata: event_len, vers, reserved,
			// metadata_len, mask, fd, pid.
			for off := 0; off+24 <= n; {
				size, fd := int(*(*uint32)(unsafe.Pointer(&buf[off]))), int(*(*int32)(unsafe.Pointer(&buf[off+16])))
				off += max(size, 24)
				if fd < 0 {
					continue
				}
				opened, _ := os.Readlink(fmt.Sprint("/proc/self/fd/", fd))
				if ok, _ := filepath.Match(pattern, filepath.Base(opened)); ok && len(found) == 0 {
					found <- filepath.Base(opened) // before the kill, so that it is there once cmd ends
					cmd.Process.Signal(syscall.SIGKILL)
				}
				// struct fanotify_response: fd, response.
				var answer [8]byte
				*(*int32)(unsafe.Pointer(&answer[0])) = int32(fd)
				*(*uint32)(unsafe.Pointer(&answer[4])) = fanAllow
				events.Write(answer[:])
				syscall.Close(fd)
			}
		}
	})
}

// runKilledBy starts cmd with watch beside it, and returns once cmd has
// ended the name watch sent (before it killed cmd), or "". watch ends
// when its events are closed, on its caller's return.
func runKilledBy(t *testing.T, cmd *exec.Cmd, watch func(found chan<- string)) string {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go watch(found)
	cmd.Wait()
	select {
	case name := <-found:
		return name
	default:
		return ""
	}
}

// killAfterCreated kills cmd (-9) delay after inotify reports the nth
// file matching pattern made in dir: a race, which the kill -9 trials
// run on purpose to land at random moments.
func killAfterCreated(t *testing.T, cmd *exec.Cmd, dir, pattern string, nth int, delay time.Duration) string {
	t.Helper()
	ino, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	events := os.NewFile(uintptr(ino), "inotify")
	defer events.Close()
	if _, err := syscall.InotifyAddWatch(ino, dir, syscall.IN_CREATE); err != nil {
		t.Fatal(err)
	}
	// Ends when it finds the name or when events is closed (on return).
	return runKilledBy(t, cmd, func(found chan<- string) {
		buf := make([]byte, 64<<10)
		for {
			n, err := events.Read(buf)
			if err != nil {
				return
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := string(bytes.TrimRight(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+int(ev.Len)], "\x00"))
				off += syscall.SizeofInotifyEvent + int(ev.Len)
				if ok, _ := filepath.Match(pattern, name); ok {
					if nth--; nth > 0 {
						continue
					}
					found <- name // before the kill, so that it is there once cmd ends
					if delay > 0 {
						time.Sleep(delay)
					}
					cmd.Process.Signal(syscall.SIGKILL)
					return
				}
			}
		}
	})
}

var (
	kill9Trials = flag.Int("kill9.trials", 1, "trials of each kind in TestKill9AtRandomMoments (bench/kill9.sh runs 100)")
	kill9Seed   = flag.Int64("kill9.seed", 0, "the seed of the kill moments (0: a fresh one)")
)

// kill9Tally counts what the trials of one kind found.
type kill9Tally struct {
	trials, hit       int // hit: the kill left something to repair
	torn, stray, fail int // after the rerun: the bar is zero
	notes             []string
}

// TestKill9AtRandomMoments kills zot (-9) at random moments of an audit
// append, a write, an edit and a restore, then runs zot again, and counts
// what a user would find: torn audit lines, files neither old nor new,
// temp files left in the project, reruns that fail. One trial of each here;
// bench/kill9.sh runs 100 (-kill9.trials) and prints the figures.
func TestKill9AtRandomMoments(t *testing.T) {
	t.Parallel()
	seed := *kill9Seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	rng := rand.New(rand.NewSource(seed))
	kinds := []struct {
		name  string
		trial func(*testing.T, *rand.Rand, *kill9Tally)
	}{{"audit append", kill9Audit}, {"write", kill9Write("write")}, {"edit", kill9Write("edit")}, {"restore", kill9Restore}}
	failed := false
	for _, k := range kinds {
		var n kill9Tally
		for i := 0; i < *kill9Trials; i++ {
			n.trials++
			k.trial(t, rng, &n)
		}
		t.Logf("kill -9 during %s: %d trials, %d killed with something to repair; after the rerun: %d torn lines, %d files neither old nor new or stray, %d failed reruns",
			k.name, n.trials, n.hit, n.torn, n.stray, n.fail)
		for _, note := range n.notes {
			t.Logf("  %s", note)
		}
		failed = failed || n.torn+n.stray+n.fail > 0
	}
	t.Logf("seed %d", seed)
	if failed {
		t.Error("a kill -9 left something behind (above)")
	}
}

// kill9Audit: a run of calls with big arguments, killed after a random
// wait once the log has begun; the rerun adds one line.
func kill9Audit(t *testing.T, rng *rand.Rand, n *kill9Tally) {
	z := newZotRun(t)
	path := filepath.Join(z.home, "logs", "audit.jsonl")
	pad := strings.Repeat("y", 16<<10)
	var steps []replayStep
	for i := 0; i < 40; i++ {
		steps = append(steps, bigToolStep(fmt.Sprintf("t%d", i), "nosuch", obj{"pad": pad}))
	}
	srv := startReplay(t, append(steps, replayStep{Events: anthropicEvents(gen{Text: "done"})})...)
	cmd := z.cmd(append(anthropicFlags(srv), "-p", "--no-session", "go")...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the audit log", func() bool { _, err := os.Stat(path); return err == nil })
	time.Sleep(time.Duration(rng.Int63n(int64(60 * time.Millisecond))))
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if b, _ := os.ReadFile(path); len(b) > 0 && b[len(b)-1] != '\n' {
		n.hit++
	}
	again := startReplay(t, toolStep("last", "bash", obj{"command": "true"}), replayStep{Events: anthropicEvents(gen{Text: "done"})})
	if _, stderr, code := z.run(append(anthropicFlags(again), "-p", "--no-session", "go")...); code != 0 {
		n.fail++
		n.notes = append(n.notes, fmt.Sprintf("audit rerun: exit %d: %s", code, stderr))
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			n.torn++
			n.notes = append(n.notes, fmt.Sprintf("torn line %.100q", l))
		}
	}
	if !strings.Contains(lines[len(lines)-1], `"call_id":"last"`) {
		n.fail++
		n.notes = append(n.notes, fmt.Sprintf("the rerun's line is not last: %.100q", lines[len(lines)-1]))
	}
}

// kill9Write: write (or edit) replaces a 1.5 MiB file, killed within 3 ms
// of making its temp file; the rerun is a write into the same directory
// with checkpoints off (write), or any call with them on (edit).
func kill9Write(tool string) func(*testing.T, *rand.Rand, *kill9Tally) {
	return func(t *testing.T, rng *rand.Rand, n *kill9Tally) {
		content := strings.Repeat("0123456789abcdef", 3<<15)
		z := newZotRun(t)
		big := filepath.Join(z.cwd, "big.txt")
		mustWrite(t, big, "old "+content, 0o644)
		step := bigToolStep("t1", "write", obj{"path": "big.txt", "content": "new " + content})
		next := toolStep("t2", "write", obj{"path": "small.txt", "content": "small\n"})
		if tool == "edit" {
			step = toolStep("t1", "edit", obj{"path": "big.txt", "oldText": "old ", "newText": "new "})
			next = toolStep("t2", "bash", obj{"command": "true"})
		} else {
			mustWrite(t, filepath.Join(z.home, "config.json"), `{"checkpoints": {"enabled": false}}`, 0o600)
		}
		srv := startReplay(t, step, replayStep{Events: anthropicEvents(gen{Text: "done"})})
		delay := time.Duration(rng.Int63n(int64(3 * time.Millisecond)))
		killAfterCreated(t, z.cmd(append(anthropicFlags(srv), "-p", "--no-session", "go")...), z.cwd, ".big.txt.zot-*.tmp", 1, delay)
		if len(zotTemps(z.cwd)) > 0 {
			n.hit++
		}
		again := startReplay(t, next, replayStep{Events: anthropicEvents(gen{Text: "done"})})
		if _, stderr, code := z.run(append(anthropicFlags(again), "-p", "--no-session", "go")...); code != 0 {
			n.fail++
			n.notes = append(n.notes, fmt.Sprintf("%s rerun: exit %d: %s", tool, code, stderr))
		}
		if b, _ := os.ReadFile(big); string(b) != "old "+content && string(b) != "new "+content {
			n.stray++
			n.notes = append(n.notes, fmt.Sprintf("%s: big.txt is %d bytes, neither old nor new", tool, len(b)))
		}
		if left := zotTemps(z.cwd); len(left) > 0 {
			n.stray += len(left)
			n.notes = append(n.notes, fmt.Sprintf("%s: left %v", tool, left))
		}
	}
}

// kill9Restore: a restore of 20 files of 64 KiB, one removed and one made,
// killed within 2 ms of making its nth temp file (n from 1 to 20, so that
// the kills spread over the restore however fast the disk is); the rerun
// is the same restore, without --force.
func kill9Restore(t *testing.T, rng *rand.Rand, n *kill9Tally) {
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "for f in f*.txt; do echo changed > $f; done; rm f07.txt; echo new > new.txt"}),
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	z := newZotRun(t)
	for i := 0; i < 20; i++ {
		mustWrite(t, filepath.Join(z.cwd, fmt.Sprintf("f%02d.txt", i)), strings.Repeat(fmt.Sprintf("file %d ", i), 8<<10), 0o644)
	}
	before := treeState(t, z.cwd)
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "work")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	after := treeState(t, z.cwd)
	id := checkpointIDs(t, z)[0]
	nth, delay := 1+rng.Intn(20), time.Duration(rng.Int63n(int64(2*time.Millisecond)))
	killAfterCreated(t, z.cmd("checkpoints", "restore", id), z.cwd, ".*.zot-*.tmp", nth, delay)
	if got := treeState(t, z.cwd); !mapsEqual(got, before) && !mapsEqual(got, after) {
		n.hit++
	}
	if stdout, stderr, code := z.run("checkpoints", "restore", id); code != 0 {
		n.fail++
		n.notes = append(n.notes, fmt.Sprintf("restore rerun: exit %d: %s%s", code, stdout, stderr))
	}
	if got := treeState(t, z.cwd); !mapsEqual(got, before) {
		n.stray++
		n.notes = append(n.notes, fmt.Sprintf("restore: after the rerun %v, want %v", sortedKeys(got), sortedKeys(before)))
	}
}
