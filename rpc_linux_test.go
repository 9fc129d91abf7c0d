package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// A client that stops reading must not make zot deaf to signals: with its
// stdout pipe full, SIGTERM still stops zot.
func TestRPCBinarySIGTERMWhileTheClientStopsReading(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	cmd := z.cmd("rpc", "--provider", "anthropic", "--api-key", "k")
	cmd.Stdin = nil
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdoutR.Close()
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdoutW, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdoutW.Close()
	exited := make(chan error, 1)
	// Owned by the test; ends when zot exits.
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	// Owned by the test; ends when all is written or zot's stdin closes.
	go func() {
		defer stdin.Close()
		for i := 0; i < 20000; i++ {
			if _, err := io.WriteString(stdin, `{"type":"get_state"}`+"\n"); err != nil {
				return
			}
		}
	}()
	// Nearly full: zot has thousands of answers still to write, so it is
	// blocked on the pipe now or will be after its next few. (A page of
	// the pipe holds only whole answers of get_state, so a full pipe of
	// 64 KiB queues less: 58880 bytes for answers of 460.)
	waitFor(t, "zot's stdout pipe to fill up", func() bool {
		n, err := pipeQueued(stdoutR)
		return err == nil && n > 48<<10
	})
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
			t.Errorf("exit: %v (want %d); stderr %s", err, exitInterrupted, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("zot ignored SIGTERM while its stdout was full; stderr %s", stderr.String())
	}
}

// pipeQueued is how many bytes wait in the pipe for its reader.
func pipeQueued(f *os.File) (int, error) {
	var n int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// The pipe zot writes to may be shared (`(zot rpc; echo done) | client`):
// zot leaves it blocking, as it found it.
func TestRPCBinaryLeavesStdoutBlocking(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	z.stdin = `{"type":"ping"}` + "\n"
	cmd := z.cmd("rpc", "--provider", "anthropic", "--api-key", "k")
	// A raw pipe: os.Pipe's files would switch modes themselves.
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer r.Close()
	defer w.Close()
	cmd.Stdout = w
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fds[1]), syscall.F_GETFL, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	if flags&syscall.O_NONBLOCK != 0 {
		t.Error("zot left its stdout pipe non-blocking")
	}
}
