//go:build linux

package main

import (
	"fmt"
	"os"
	"os/signal"
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

// runAsInit is PID 1 of a PID namespace (the sandbox launcher): it starts
// program from the calling thread, so that the thread's restrictions are
// the command's, passes the signals it gets on to every process of the
// namespace, reaps what is orphaned to it, and returns the command's exit
// status (128+N when a signal N ended it) once the command has exited.
// When its caller then exits, the kernel kills what is left in the
// namespace.
func runAsInit(program string, argv []string) (int, error) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	pid, err := syscall.ForkExec(program, argv, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", argv[0], err)
	}
	// The forwarder lives as long as the process.
	go func() {
		for s := range sigs {
			syscall.Kill(-1, s.(syscall.Signal)) // everyone in the namespace but init
		}
	}()
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, fmt.Errorf("wait for %s: %w", argv[0], err)
		case wpid != pid:
			continue // an orphan of the command, reaped
		case ws.Signaled():
			return 128 + int(ws.Signal()), nil
		}
		return ws.ExitStatus(), nil
	}
}

// execInPlace replaces the process with program, from the calling thread
// (whose restrictions the program keeps).
func execInPlace(program string, argv []string) error {
	return syscall.Exec(program, argv, os.Environ())
}
