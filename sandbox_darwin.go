//go:build darwin

package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// On macOS a sandboxed command runs under sandbox-exec with a Seatbelt
// profile generated from the mode (seatbeltProfile): writes only beneath
// the writable set, nothing of $ZOT_HOME, and in the offline modes no
// network at all. CI runs Linux only; docs/sandbox.md says what this
// covers.

const sandboxExec = "/usr/bin/sandbox-exec"

// choosePath checks that sandbox-exec is there and accepts the profile.
func (sb *Sandbox) choosePath(force string) error {
	if force == "unavailable" {
		return fmt.Errorf("%s=unavailable pretends there is no sandbox-exec; use --sandbox off", sandboxForceEnv)
	}
	if _, err := os.Stat(sandboxExec); err != nil {
		return fmt.Errorf("%s is missing (%v); use --sandbox off", sandboxExec, err)
	}
	sb.path, sb.launcher = "seatbelt", sandboxExec
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	spec, _ := sb.confine(procSpec{argv: []string{"/usr/bin/true"}, dir: "/", env: envNoSecrets, stderr: streamStdout})
	run, err := runToEnd(ctx, spec, nil, 4<<10, bashDrain)
	switch {
	case err != nil:
		return fmt.Errorf("start %s: %w", sandboxExec, err)
	case run.state.ExitCode() != 0:
		return fmt.Errorf("%s refused zot's profile: %s", sandboxExec, strings.TrimSpace(string(run.stdout.Bytes())))
	}
	return nil
}

// confine runs spec's program under sandbox-exec with sb's profile.
func (sb *Sandbox) confine(spec procSpec) (procSpec, error) {
	spec.argv = append([]string{sb.launcher, "-p", seatbeltProfile(sb)}, spec.argv...)
	return spec, nil
}

// spareLauncher: sandbox-exec starts fast; nothing is kept ready.
type spareLauncher struct{}

// Start starts spec's program under sandbox-exec.
func (sb *Sandbox) Start(spec procSpec) (*proc, error) {
	spec, _ = sb.confine(spec)
	before := sb.guard.begin()
	p, err := startProc(spec)
	if err == nil {
		sb.guard.track(p, before)
	}
	return p, err
}

func (sb *Sandbox) Close() error {
	sb.guard.close()
	return nil
}

func sandboxSystemReport() string {
	have := "present"
	if _, err := os.Stat(sandboxExec); err != nil {
		have = "missing"
	}
	return fmt.Sprintf("system:   macOS (%s)\nseatbelt: %s %s\n", runtime.GOARCH, sandboxExec, have)
}

// runSandboxLauncher: macOS needs no launcher of zot's own.
func runSandboxLauncher([]string) int {
	fmt.Fprintln(os.Stderr, "zot: sandbox: "+errors.ErrUnsupported.Error()+" on macOS (sandbox-exec is the launcher)")
	return exitUsage
}

// statIDs are a file's device, inode and change time.
func statIDs(st fs.FileInfo) (dev, ino uint64, ctime int64) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Dev), s.Ino, s.Ctimespec.Nano()
	}
	return 0, 0, 0
}

// openDirHandle opens a directory to know it again by its identity.
func openDirHandle(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
}

// handlePath: macOS offers no portable way from Go's syscall package to
// where a renamed directory went; the guard puts an empty one back.
func handlePath(*os.File) string { return "" }
