//go:build !linux && !darwin

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
)

// On other systems zot has no sandbox: every mode but off is refused.

func (sb *Sandbox) choosePath(force string) error {
	return fmt.Errorf("zot has no sandbox for %s (Linux and macOS only); use --sandbox off", runtime.GOOS)
}

type spareLauncher struct{}

func (sb *Sandbox) confine(spec procSpec) (procSpec, error) {
	return spec, fmt.Errorf("zot has no sandbox for %s", runtime.GOOS)
}

func (sb *Sandbox) Start(spec procSpec) (*proc, error) {
	_, err := sb.confine(spec)
	return nil, err
}

func (sb *Sandbox) Close() error { return nil }

func sandboxSystemReport() string {
	return fmt.Sprintf("system:   %s (%s): zot has no sandbox here\n", runtime.GOOS, runtime.GOARCH)
}

func runSandboxLauncher([]string) int {
	fmt.Fprintf(os.Stderr, "zot: sandbox: no sandbox on %s\n", runtime.GOOS)
	return exitUsage
}

func statIDs(fs.FileInfo) (dev, ino uint64, ctime int64) { return 0, 0, 0 }

func openDirHandle(string) (*os.File, error) { return nil, errors.ErrUnsupported }

func handlePath(*os.File) string { return "" }
