//go:build !linux && !darwin

package main

// waitUnreaped cannot wait for an exit without reaping here, so the
// watcher reaps the leader as it exits, and a group is signalled after its
// leader was reaped: an id reused in that moment could be signalled.
func waitUnreaped(pid int) bool { return false }
