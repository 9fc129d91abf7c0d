package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lineChildRecorder is what a test's lineChild handed its owner.
type lineChildRecorder struct {
	mu      sync.Mutex
	lines   []string
	tooLong int
	ended   bool
	done    bool
}

func (r *lineChildRecorder) io(maxLine int) lineChildIO {
	return lineChildIO{maxLine: maxLine, overLong: overLongSkip,
		line: func(line []byte, err error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if err != nil {
				r.tooLong++
				return
			}
			if len(r.lines) < 100 {
				r.lines = append(r.lines, string(line))
			}
		},
		ended:  func(error) { r.mu.Lock(); r.ended = true; r.mu.Unlock() },
		stderr: &bytes.Buffer{},
		drain:  100 * time.Millisecond,
		done:   func(error) { r.mu.Lock(); r.done = true; r.mu.Unlock() },
	}
}

func startTestLineChild(t *testing.T, script string, r *lineChildRecorder, maxLine int) *lineChild {
	t.Helper()
	c, err := startLineChild(procSpec{argv: []string{"sh", "-c", script}, env: envNoSecrets,
		stdin: streamPipe, stdout: streamPipe, stderr: streamPipe})
	if err != nil {
		t.Fatal(err)
	}
	c.serve(r.io(maxLine))
	return c
}

// checkGone: the child is reaped, nothing of its session runs, and every
// goroutine that served it has ended with the owner told.
func checkGone(t *testing.T, c *lineChild, r *lineChildRecorder) {
	t.Helper()
	select {
	case <-c.gone:
	default:
		t.Fatal("stop returned before the goroutines serving the child ended")
	}
	select {
	case <-c.reaped:
	default:
		t.Error("not reaped")
	}
	if groupAlive(c.proc.pid) {
		t.Error("its process group still runs")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ended || !r.done {
		t.Errorf("owner told: ended %v, done %v", r.ended, r.done)
	}
}

// A child that floods stdout with lines, or with an over-long line and
// then lines, is read with bounded memory and stopped through the one path.
func TestLineChildFloodIsStoppedAndReaped(t *testing.T) {
	t.Parallel()
	for name, script := range map[string]string{
		"lines":          `yes flood`,
		"over-long line": `head -c 1000000 /dev/zero; echo; yes flood`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := &lineChildRecorder{}
			c := startTestLineChild(t, script, r, 1<<10)
			waitFor(t, "output", func() bool {
				r.mu.Lock()
				defer r.mu.Unlock()
				return len(r.lines) > 10 && (r.tooLong > 0) == strings.HasPrefix(script, "head")
			})
			c.closeStdin()
			c.stop(context.Background(), 0, killGrace, nil)
			checkGone(t, c, r)
		})
	}
}

// A child that never answers and ignores SIGTERM is killed after the
// grace periods, and reaped.
func TestLineChildThatHangsIsKilled(t *testing.T) {
	t.Parallel()
	r := &lineChildRecorder{}
	c := startTestLineChild(t, `trap "" TERM; echo ready; while :; do sleep 1; done`, r, 1<<10)
	waitFor(t, "ready", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.lines) == 1
	})
	late := false
	if got := c.stop(context.Background(), 50*time.Millisecond, 50*time.Millisecond, func() { late = true }); got != neededSIGKILL || !late {
		t.Errorf("stop = %d, late %v; want neededSIGKILL after the grace", got, late)
	}
	if ws, _ := c.state.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("state = %v", c.state)
	}
	checkGone(t, c, r)
}

// A child that dies in the middle of a reply, leaving a process that holds
// its stdout open, is reaped with its status; the half line is handed over
// as the last line, and the leftover is killed so the reader ends.
func TestLineChildThatDiesMidReplyIsReaped(t *testing.T) {
	t.Parallel()
	r := &lineChildRecorder{}
	c := startTestLineChild(t, `sleep 300 & printf '{"id":1,"res'; exit 3`, r, 1<<10)
	<-c.gone // no stop: the child's own end is enough
	if c.state == nil || c.state.ExitCode() != 3 {
		t.Errorf("state = %v", c.state)
	}
	r.mu.Lock()
	got := strings.Join(r.lines, "|")
	r.mu.Unlock()
	if got != `{"id":1,"res` {
		t.Errorf("lines %q", got)
	}
	checkGone(t, c, r)
	if _, err := c.write([]byte("late\n"), time.Now().Add(time.Second)); err == nil {
		t.Error("a write after the end succeeded")
	}
}
