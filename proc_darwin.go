//go:build darwin

package main

import (
	"errors"
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
