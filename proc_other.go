//go:build !linux && !darwin

package main

import (
	"errors"
	"os"
)

// waitUnreaped cannot wait for an exit without reaping here, so the
// watcher reaps the leader as it exits, and a group is signalled after its
// leader was reaped: an id reused in that moment could be signalled.
func waitUnreaped(pid int) bool { return false }

// setSubreaper: no subreaper is used here; an orphan is adopted by init.
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
