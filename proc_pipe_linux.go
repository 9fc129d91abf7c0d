//go:build linux

package main

import (
	"io"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// A bash call's stdout is read without the runtime's poller. The poller
// watches a descriptor edge-triggered, and every write to a pipe is an
// edge: a command that prints 4 KiB at a time (stdio's buffer) woke the
// thread waiting in the poller some 250,000 times a gigabyte, each time
// for nothing, while the reader was pausing to let the pipe fill
// (shellOutput.readFrom); that was two thirds of zot's own CPU for the
// gigabyte. Here only the reader waits, in a poll of its own, and only
// when the pipe is empty: a write to a pipe no one waits on wakes no one.

// unwatchedPipe is os.Pipe, but neither end is given to the poller: files
// made from blocking descriptors are not. The read end is then made
// non-blocking, for pipeReader.
func unwatchedPipe() (r, w *os.File, err error) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1")
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		r.Close()
		w.Close()
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return r, w, nil
}

// pipeReader reads an unwatchedPipe's read end. Read waits in ppoll for the
// pipe and for wake, an eventfd that SetReadDeadline writes to, so that a
// deadline set while Read waits takes effect at once. One goroutine reads;
// SetReadDeadline may come from any.
type pipeReader struct {
	f        *os.File
	mu       sync.Mutex
	deadline time.Time
	wake     int // made at the first wait; -1 before, and once closed
	// waiting, when a test sets it, is told each time Read is about to
	// wait: the moment to move the deadline and see the wait end.
	waiting chan<- struct{}
}

func newPipeReader(f *os.File) deadlineReader { return &pipeReader{f: f, wake: -1} }

// Read returns os.ErrDeadlineExceeded once the deadline has passed, as
// an *os.File's does, even with bytes in the pipe: a writer left in the
// background that never lets the pipe empty cannot hold the read past it.
func (r *pipeReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	fd := int(r.f.Fd())
	for {
		if r.pastDeadline() {
			return 0, os.ErrDeadlineExceeded
		}
		n, err := syscall.Read(fd, b)
		switch {
		case err == syscall.EINTR:
		case err == syscall.EAGAIN:
			if err := r.wait(fd); err != nil {
				return 0, err
			}
		case err != nil:
			return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: err}
		case n == 0:
			return 0, io.EOF
		default:
			return n, nil
		}
	}
}

// wait blocks until the pipe has something to read or no writer, the
// deadline passes or is moved, or a signal comes.
func (r *pipeReader) wait(fd int) error {
	r.mu.Lock()
	if r.wake < 0 {
		efd, _, errno := syscall.RawSyscall(syscall.SYS_EVENTFD2, 0, syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		if errno != 0 {
			r.mu.Unlock()
			return os.NewSyscallError("eventfd2", errno)
		}
		r.wake = int(efd)
	}
	deadline, wake := r.deadline, r.wake
	r.mu.Unlock()
	var timeout *syscall.Timespec
	if !deadline.IsZero() {
		ts := syscall.NsecToTimespec(max(time.Until(deadline), 0).Nanoseconds())
		timeout = &ts
	}
	if r.waiting != nil {
		r.waiting <- struct{}{}
	}
	const pollIn = 0x1
	fds := [2]struct {
		fd              int32
		events, revents int16
	}{{fd: int32(fd), events: pollIn}, {fd: int32(wake), events: pollIn}}
	_, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(unsafe.Pointer(timeout)), 0, 0, 0)
	if errno != 0 && errno != syscall.EINTR {
		return os.NewSyscallError("ppoll", errno)
	}
	if fds[1].revents != 0 {
		var count [8]byte
		syscall.Read(wake, count[:])
	}
	return nil
}

func (r *pipeReader) pastDeadline() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.deadline.IsZero() && !time.Now().Before(r.deadline)
}

func (r *pipeReader) SetReadDeadline(t time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deadline = t
	if r.wake >= 0 {
		one := [8]byte{1} // any non-zero count wakes the poll
		syscall.Write(r.wake, one[:])
	}
	return nil
}

// Close closes the pipe once Read has returned.
func (r *pipeReader) Close() error {
	r.mu.Lock()
	if r.wake >= 0 {
		syscall.Close(r.wake)
		r.wake = -1
	}
	r.mu.Unlock()
	return r.f.Close()
}
