package main

import "syscall"

// forbidDumps makes zot's process non-dumpable. Other processes of the
// same user — a command the model runs among them — can then no longer
// read /proc/<zot>/environ (where a key given as an environment variable
// stays), /proc/<zot>/mem or its other private /proc files, nor attach a
// debugger; no core file is written. zot itself still reads its own /proc
// files, and the programs it starts are dumpable again after their exec.
// Root, and anything holding CAP_SYS_PTRACE, can still read it all.
func forbidDumps() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return errno
	}
	return nil
}
