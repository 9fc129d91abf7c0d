//go:build linux

package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
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

// growPipe makes the pipe f reads from hold bigPipe bytes where the
// kernel allows it (pipe-max-size), so that a command printing much is
// read in a sixteenth of the reads, and wakes zot's reader as seldom. A
// pipe the kernel keeps at its size works the same, only slower. It
// reports whether the pipe holds bigPipe bytes.
func growPipe(f *os.File) bool {
	const fSetPipeSz = 1031
	size := uintptr(0)
	if c, err := f.SyscallConn(); err == nil {
		c.Control(func(fd uintptr) { size, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSz, bigPipe) })
	}
	return size >= bigPipe && size < 1<<31 // an error is -errno
}

// exitedChild returns the pid of a child of zot's that has exited and is
// not reaped yet, leaving it unreaped, or 0 when there is none: the
// kernel's pick, the first it finds.
func exitedChild() int {
	const pAll = 0
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOHANG|syscall.WNOWAIT, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return 0
		}
		// si_pid follows si_signo, si_errno and si_code, at the union's
		// alignment: a pointer's.
		return int(*(*int32)(unsafe.Pointer(&info[(3*4+unsafe.Sizeof(uintptr(0))-1)&^(unsafe.Sizeof(uintptr(0))-1)])))
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

// forwardSignals makes PID 1 of a PID namespace (the sandbox launcher)
// pass the signals that ask a process to end on to every other process of
// the namespace: a signal zot sends its session reaches the whole command.
func forwardSignals() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	// The forwarder lives as long as the process.
	go func() {
		for s := range sigs {
			syscall.Kill(-1, s.(syscall.Signal)) // everyone in the namespace but init
		}
	}()
}

// runAsInit is PID 1 of a PID namespace (the sandbox launcher, which
// called forwardSignals): it starts program from the calling thread, so
// that the thread's restrictions are the command's, and reaps what is
// orphaned to it. Once the command has exited it kills every other
// process of the namespace and reaps them all, so that nothing of the
// command runs, and returns the command's exit status (128+N when a
// signal N ended it). When report is not -1 it also writes that status
// there (a pipe to zot), its stdout and stderr closed first: zot then has
// the command's end and all its output without waiting for the kernel to
// tear the namespaces down as the launcher exits, which costs more than
// the rest of a short command.
func runAsInit(program string, argv []string, report int) (int, error) {
	pid, err := syscall.ForkExec(program, argv, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", argv[0], err)
	}
	status := -1
	for status < 0 {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == syscall.EINTR:
		case err != nil:
			return 0, fmt.Errorf("wait for %s: %w", argv[0], err)
		case wpid != pid:
			// an orphan of the command, reaped
		case ws.Signaled():
			status = 128 + int(ws.Signal())
		default:
			status = ws.ExitStatus()
		}
	}
	// kill(-1) reaches every process of the namespace but init, and one
	// that is forking has its child killed with it; each ends up a child
	// of init, so ECHILD means none is left.
	syscall.Kill(-1, syscall.SIGKILL)
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(-1, &ws, 0, nil); err != nil && err != syscall.EINTR {
			break
		}
	}
	if report >= 0 {
		syscall.Close(1)
		syscall.Close(2)
		if _, err := syscall.Write(report, []byte(strconv.Itoa(status)+"\n")); err != nil {
			return 0, fmt.Errorf("report the command's end to zot: %w", err)
		}
	}
	return status, nil
}

// execInPlace replaces the process with program, from the calling thread
// (whose restrictions the program keeps).
func execInPlace(program string, argv []string) error {
	return syscall.Exec(program, argv, os.Environ())
}

// kernelsLoadavg reports whether /proc/loadavg is the kernel's, whose
// last pid is current (readLoadavg), and not a file mounted
// over it, as lxcfs does in containers with its own, cached figures.
var kernelsLoadavg = sync.OnceValue(func() bool {
	const procSuperMagic = 0x9fa0
	var st syscall.Statfs_t
	return syscall.Statfs("/proc/loadavg", &st) == nil && st.Type == procSuperMagic
})
