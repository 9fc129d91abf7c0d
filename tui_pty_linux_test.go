package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPty makes a pseudo-terminal pair: what the tests type goes in at
// master, and the TUI sees a real terminal at slave.
func openPty(t testing.TB) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("SKIPPED: no pseudo-terminals here (%v)", err)
	}
	ioctl := func(req uintptr, arg unsafe.Pointer) {
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), req, uintptr(arg)); errno != 0 {
			t.Fatalf("ioctl %#x: %v", req, errno)
		}
	}
	var unlock int32
	ioctl(syscall.TIOCSPTLCK, unsafe.Pointer(&unlock))
	var n uint32
	ioctl(syscall.TIOCGPTN, unsafe.Pointer(&n))
	ws := struct{ Row, Col, X, Y uint16 }{24, 80, 0, 0}
	ioctl(syscall.TIOCSWINSZ, unsafe.Pointer(&ws))
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// TestTUIRestoresTheTerminalWhenItPanics runs the TUI on a pseudo-terminal
// and makes the UI loop panic: the terminal must be back in the mode it was
// in before the panic reaches the caller.
func TestTUIRestoresTheTerminalWhenItPanics(t *testing.T) {
	t.Parallel()
	master, slave := openPty(t)
	fd := int(slave.Fd())
	before, err := getTermios(fd)
	if err != nil {
		t.Fatal(err)
	}
	tui, _ := newTestTUI(t, 80, 24)
	tui.out = slave
	tui.Skills = func() (string, func(string) (string, error)) { panic("skills exploded") }
	go io.Copy(io.Discard, master) // the terminal's output; ends when master closes
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		tui.Run(slave, slave, "", false)
	}()
	waitFor(t, "raw mode", func() bool {
		tm, err := getTermios(fd)
		return err == nil && tm.Lflag&syscall.ICANON == 0
	})
	master.Write([]byte("/skills\r"))
	select {
	case r := <-done:
		if r != "skills exploded" {
			t.Fatalf("Run ended with %v, want the panic", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the panic never came")
	}
	after, err := getTermios(fd)
	if err != nil || after != before {
		t.Errorf("terminal not restored after a panic:\nbefore %+v\nafter  %+v", before, after)
	}
}

// BenchmarkTUIKeystrokeEchoPty measures keystroke-to-echo latency end to
// end on a pseudo-terminal: a key written at the terminal until the frame
// that shows it has been read back, through the key reader goroutine, the
// UI loop and the tty driver.
func BenchmarkTUIKeystrokeEchoPty(b *testing.B) {
	master, slave := openPty(b)
	tui, _ := newTestTUI(b, 80, 24)
	tui.out = slave
	done := make(chan int, 1)
	go func() { done <- tui.Run(slave, slave, "", false) }()
	buf := make([]byte, 64<<10)
	waitFrame := func() {
		var seen []byte
		for !strings.Contains(string(seen), "\x1b[?25h") {
			n, err := master.Read(buf)
			if err != nil {
				b.Fatal(err)
			}
			seen = append(seen, buf[:n]...)
		}
	}
	waitFrame() // the first frame
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key := []byte{byte('a' + i%26)}
		if i%100 == 99 {
			key = []byte{0x15} // ctrl+u keeps the prompt short
		}
		master.Write(key)
		waitFrame()
	}
	b.StopTimer()
	master.Write([]byte{0x15, 0x04}) // ctrl+u, ctrl+d: exit
	<-done
}
