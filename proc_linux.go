//go:build linux

package main

import (
	"syscall"
	"unsafe"
)

// waitUnreaped blocks until the child pid has exited, leaving it unreaped
// (waitid with WNOWAIT), and reports whether it could.
func waitUnreaped(pid int) bool {
	const pPID = 1     // waitid's idtype for one process
	var info [128]byte // siginfo_t; only the wait matters
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return errno == 0
		}
	}
}

// setSubreaper makes zot the reaper of its descendants' orphans.
func setSubreaper() error {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return errno
	}
	return nil
}
