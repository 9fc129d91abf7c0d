package main

import (
	"errors"
	"sync"
	"syscall"
	"unsafe"
)

// The terminal the TUI draws on, through ioctls on its file descriptors.
// The per-OS request numbers are in term_linux.go, term_darwin.go and
// term_bsd.go; everything else is the same on every Unix.

// ttyMode is a terminal switched into the mode the TUI needs, with what it
// takes to switch it back. Restore may be called any number of times, from
// any goroutine, on every way out: normal exit, panic and signals.
type ttyMode struct {
	fd    int
	saved syscall.Termios
	once  sync.Once
	// leave is written to the terminal on restore: escapes that undo what
	// the TUI turned on (bracketed paste, a hidden cursor).
	leave []byte
	out   int
}

func getTermios(fd int) (syscall.Termios, error) {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(ioctlGetTermios), uintptr(unsafe.Pointer(&t)))
	if errno != 0 {
		return t, errno
	}
	return t, nil
}

func setTermios(fd int, t *syscall.Termios) error {
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(ioctlSetTermios), uintptr(unsafe.Pointer(t)))
	if errno != 0 {
		return errno
	}
	return nil
}

// isTerminal reports whether fd is a terminal.
func isTerminal(fd int) bool {
	_, err := getTermios(fd)
	return err == nil
}

// terminalSize returns the width and height of the terminal on fd.
func terminalSize(fd int) (width, height int, err error) {
	var ws struct{ Row, Col, X, Y uint16 }
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(syscall.TIOCGWINSZ), uintptr(unsafe.Pointer(&ws)))
	if errno != 0 {
		return 0, 0, errno
	}
	if ws.Col == 0 || ws.Row == 0 {
		return 0, 0, errors.New("terminal reports a size of zero")
	}
	return int(ws.Col), int(ws.Row), nil
}

// enterRawMode turns off echo, line editing, signal keys and flow control
// on the input terminal fd, so every key reaches zot as bytes. Output
// processing stays on (a stray "\n" still returns the carriage). Reads time
// out after a tenth of a second (VMIN 0, VTIME 1), so the reader goroutine
// can notice that it should stop without closing the terminal.
func enterRawMode(in, out int, leave string) (*ttyMode, error) {
	saved, err := getTermios(in)
	if err != nil {
		return nil, err
	}
	raw := saved
	raw.Iflag &^= syscall.IGNBRK | syscall.BRKINT | syscall.PARMRK | syscall.ISTRIP | syscall.INLCR | syscall.IGNCR | syscall.ICRNL | syscall.IXON | syscall.IXOFF
	raw.Lflag &^= syscall.ECHO | syscall.ECHONL | syscall.ICANON | syscall.ISIG | syscall.IEXTEN
	raw.Cflag &^= syscall.CSIZE | syscall.PARENB
	raw.Cflag |= syscall.CS8
	raw.Cc[syscall.VMIN] = 0
	raw.Cc[syscall.VTIME] = 1
	if err := setTermios(in, &raw); err != nil {
		return nil, err
	}
	return &ttyMode{fd: in, saved: saved, leave: []byte(leave), out: out}, nil
}

// Restore writes the leave escapes and puts the saved attributes back.
func (m *ttyMode) Restore() {
	m.once.Do(func() {
		if len(m.leave) > 0 {
			syscall.Write(m.out, m.leave)
		}
		setTermios(m.fd, &m.saved)
	})
}
