//go:build linux

package main

import "syscall"

// ioctl requests that read and set a terminal's attributes.
const (
	ioctlGetTermios = syscall.TCGETS
	ioctlSetTermios = syscall.TCSETS
)
