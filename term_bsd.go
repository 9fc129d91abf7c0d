//go:build freebsd || netbsd || openbsd || dragonfly

package main

import "syscall"

// ioctl requests that read and set a terminal's attributes.
const (
	ioctlGetTermios = syscall.TIOCGETA
	ioctlSetTermios = syscall.TIOCSETA
)
