//go:build !linux

package main

// forbidDumps does nothing where there is no /proc to read another
// process's environment from. On macOS a process of the same user can
// still read zot's environment (ps -E) and memory (with debugger rights).
func forbidDumps() error { return nil }
