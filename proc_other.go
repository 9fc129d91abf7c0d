//go:build !linux

package main

import (
	"errors"
	"os"
)

// setSubreaper: only Linux has a subreaper; an orphan is adopted by init
// (launchd on macOS).
func setSubreaper() error { return errors.ErrUnsupported }

// exitedChild: there is no subreaper here, so no orphan to reap.
func exitedChild() int { return 0 }

func growPipe(*os.File) bool { return false }

// kernelsLoadavg: no /proc/loadavg to read here.
func kernelsLoadavg() bool { return false }

// unwatchedPipe is os.Pipe here, watched by the poller, and its reader
// the file itself (proc_pipe_linux.go says why Linux differs).
func unwatchedPipe() (r, w *os.File, err error) { return os.Pipe() }

func newPipeReader(f *os.File) deadlineReader { return f }
