//go:build darwin

package main

import (
	"errors"
	"os"
	"syscall"
)

// waitUnreaped blocks until the child pid has exited, leaving it unreaped
// (a kqueue NOTE_EXIT), and reports whether it could.
func waitUnreaped(pid int) bool {
	kq, err := syscall.Kqueue()
	if err != nil {
		return false
	}
	defer syscall.Close(kq)
	var change syscall.Kevent_t
	syscall.SetKevent(&change, pid, syscall.EVFILT_PROC, syscall.EV_ADD|syscall.EV_ONESHOT)
	change.Fflags = syscall.NOTE_EXIT
	changes := []syscall.Kevent_t{change}
	events := make([]syscall.Kevent_t, 1)
	for {
		n, err := syscall.Kevent(kq, changes, events, nil)
		switch {
		case err == syscall.EINTR:
			changes = nil // registered already
			continue
		case errors.Is(err, syscall.ESRCH):
			return true // already a zombie: it is our unreaped child
		case err != nil || n != 1:
			return false
		case events[0].Flags&syscall.EV_ERROR != 0:
			return syscall.Errno(events[0].Data) == syscall.ESRCH
		}
		return true
	}
}

// setSubreaper: macOS has no subreaper; an orphan is adopted by launchd.
func setSubreaper() error { return errors.ErrUnsupported }

// exitedChild: there is no subreaper here, so no orphan to reap.
func exitedChild() int { return 0 }

func growPipe(*os.File) bool { return false }

// unwatchedPipe is os.Pipe here, watched by the poller, and its reader
// the file itself (proc_pipe_linux.go says why Linux's is not watched).
func unwatchedPipe() (r, w *os.File, err error) { return os.Pipe() }

func newPipeReader(f *os.File) deadlineReader { return f }

// kernelsLoadavg: no /proc/loadavg to read here.
func kernelsLoadavg() bool { return false }
