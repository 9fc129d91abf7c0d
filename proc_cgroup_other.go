//go:build !linux

package main

import "syscall"

// Only Linux has cgroups: every process goes without one.
type procCgroup struct{}

func newProcCgroup(*syscall.SysProcAttr) *procCgroup { return nil }
func cgroupsFailed()                                 {}
func (*procCgroup) started()                         {}
func (*procCgroup) discard()                         {}
func (*procCgroup) remove()                          {}
func (*procCgroup) keep()                            {}
func removeSpareCgroup()                             {}

func (*procCgroup) stopSession(int, *escalation, func(procStat) int) (left, ok bool) {
	return false, false
}
