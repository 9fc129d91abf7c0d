//go:build !linux && !darwin

package main

import (
	"fmt"
	"os"
	"runtime"
)

// On other systems zot has no sandbox: every mode but off is refused.

func (sb *Sandbox) choosePath(force string) error {
	return fmt.Errorf("zot has no sandbox for %s (Linux and macOS only); use --sandbox off", runtime.GOOS)
}

func (sb *Sandbox) Confine(spec procSpec) (procSpec, error) {
	return spec, fmt.Errorf("zot has no sandbox for %s", runtime.GOOS)
}

func sandboxSystemReport() string {
	return fmt.Sprintf("system:   %s (%s): zot has no sandbox here\n", runtime.GOOS, runtime.GOARCH)
}

func runSandboxLauncher([]string) int {
	fmt.Fprintf(os.Stderr, "zot: sandbox: no sandbox on %s\n", runtime.GOOS)
	return exitUsage
}
