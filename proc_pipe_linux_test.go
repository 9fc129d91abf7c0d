//go:build linux

package main

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The bash tool's stdout pipe is out of the runtime's poller (whose every
// wake for it was wasted, proc_pipe_linux.go), and its reader still keeps
// a deadline set while it waits.
func TestUnwatchedPipeIsNotInThePollerAndKeepsDeadlines(t *testing.T) {
	t.Parallel()
	r, w, err := unwatchedPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	pr := newPipeReader(r)
	defer pr.Close()
	if watched := polledFds(t); watched[int(r.Fd())] || watched[int(w.Fd())] {
		t.Fatalf("the runtime's poller watches the pipe (fds %d, %d): %v", r.Fd(), w.Fd(), watched)
	}

	// An empty pipe with a writer never answers: only the deadline, moved
	// while Read waits with none, can end the wait. Were the wait not
	// woken, the test would hang until go test's -timeout names it.
	waiting := make(chan struct{})
	pr.(*pipeReader).waiting = waiting
	read := make(chan error, 1)
	go func() {
		_, err := pr.Read(make([]byte, 8))
		read <- err
	}()
	<-waiting
	pr.SetReadDeadline(time.Now())
	if err := <-read; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read after the deadline passed: %v, want os.ErrDeadlineExceeded", err)
	}
	pr.(*pipeReader).waiting = nil // Read has returned: no one reads the field now

	// A writer left in the background that keeps the pipe from emptying
	// must not hold the read past its deadline: bytes waiting do not
	// extend it, as they do not an *os.File's.
	w.Write([]byte("more"))
	if _, err := pr.Read(make([]byte, 2)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read of a pipe with bytes, after the deadline passed: %v, want os.ErrDeadlineExceeded", err)
	}

	pr.SetReadDeadline(time.Time{})
	go func() {
		b, err := io.ReadAll(pr)
		if err == nil && string(b) != "morehello" {
			err = errors.New("read " + strconv.Quote(string(b)))
		}
		read <- err
	}()
	w.Write([]byte("hel"))
	w.Write([]byte("lo"))
	w.Close()
	if err := <-read; err != nil {
		t.Fatal(err)
	}
}

// polledFds lists the descriptors the epoll instances of this process
// watch (/proc/self/fdinfo: a "tfd:" line each).
func polledFds(t *testing.T) map[int]bool {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	watched := map[int]bool{}
	epolls := 0
	for _, e := range entries {
		if target, _ := os.Readlink("/proc/self/fd/" + e.Name()); target != "anon_inode:[eventpoll]" {
			continue
		}
		epolls++
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(info), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "tfd:" {
				n, _ := strconv.Atoi(f[1])
				watched[n] = true
			}
		}
	}
	if epolls == 0 || len(watched) == 0 {
		t.Fatal("found no epoll instance watching anything: the check would prove nothing")
	}
	return watched
}
