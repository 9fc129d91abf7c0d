//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// killWhenCreated starts cmd and kills it (-9) the moment a file whose
// name matches pattern is created in dir, as inotify tells; it returns
// that name, or "" when cmd ended without making one.
func killWhenCreated(t *testing.T, cmd *exec.Cmd, dir, pattern string) string {
	t.Helper()
	ino, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	events := os.NewFile(uintptr(ino), "inotify")
	defer events.Close()
	if _, err := syscall.InotifyAddWatch(ino, dir, syscall.IN_CREATE); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	found := make(chan string, 1)
	// Ends when it finds the name or when events is closed (on return).
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := events.Read(buf)
			if err != nil {
				return
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := string(bytes.TrimRight(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+int(ev.Len)], "\x00"))
				off += syscall.SizeofInotifyEvent + int(ev.Len)
				if ok, _ := filepath.Match(pattern, name); ok {
					found <- name // before the kill, so that it is there once cmd ends
					cmd.Process.Signal(syscall.SIGKILL)
					return
				}
			}
		}
	}()
	<-done
	select {
	case name := <-found:
		return name
	default:
		return ""
	}
}
