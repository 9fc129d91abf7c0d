package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The attacker is a repository whose configuration files are FIFOs (a
// read waits for a writer that never comes) or symlinks to /dev/zero (a
// read never ends and fills memory). zot reads them at start, before
// anything is trusted, and in its management commands: each must end
// promptly with the file named, and zot's memory must stay small.

// untrustedConfigPaths are the files zot reads from a repository.
var untrustedConfigPaths = []string{
	".mcp.json",
	".zot/mcp.json",
	".zot/validators.json",
	".zot/extensions/x/extension.json",
	".zot/settings.json",
	".claude/settings.json",
	".claude/settings.local.json",
	"runok.yml",
	".zot/skills/s/SKILL.md",
	".zot/prompts/p.md",
	".claude/commands/c.md",
	"AGENTS.md",
	"CLAUDE.md",
}

// untrustedRunLimit is how long one run may take before the test calls
// it hung; untrustedRSSLimit is the most memory it may have used.
const (
	untrustedRunLimit = 60 * time.Second
	untrustedRSSLimit = 200 << 20
)

func TestHostileConfigFilesAreRefusedNotWaitedOn(t *testing.T) {
	t.Parallel()
	kinds := map[string]func(t *testing.T, path string){
		"fifo": func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"dev-zero": func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		},
	}
	for kind, lay := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			for _, rel := range untrustedConfigPaths {
				path := filepath.Join(z.cwd, rel)
				os.MkdirAll(filepath.Dir(path), 0o755)
				lay(t, path)
			}
			srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "fine"})}, replayStep{Events: anthropicEvents(gen{Text: "fine"})})
			runs := map[string][]string{
				"print untrusted": append(anthropicFlags(srv), "--claude-hooks", "-p", "hi"),
				"print trusted":   append(anthropicFlags(srv), "--claude-hooks", "--trust-project", "-p", "hi"),
				"mcp list":        {"mcp", "list"},
				"trust":           {"trust", "--yes"},
			}
			// Each run names the configuration files it read and refused;
			// context files are left out without a note (see the test of
			// the system prompt). zot mcp list reads only the MCP files.
			configs := untrustedConfigPaths[:len(untrustedConfigPaths)-2]
			for name, args := range runs {
				stdout, stderr := runBounded(t, z, args...)
				want := configs
				switch name {
				case "print untrusted", "print trusted":
					if stdout != "fine\n" {
						t.Errorf("%s: the prompt did not run: stdout %q\nstderr:\n%s", name, stdout, stderr)
					}
				case "mcp list":
					want = configs[:2]
				case "trust":
					want = configs[:6] // the files that define programs
				}
				for _, rel := range want {
					if !strings.Contains(stderr, filepath.Join(z.cwd, rel)+": ") {
						t.Errorf("zot %s: nothing says %s was refused:\n%s", name, rel, stderr)
					}
				}
			}
		})
	}
}

// rssMeterArg starts the test binary as a meter: it runs the command that
// follows, passes its exit code on, and writes the command's peak memory
// (KiB) to the file $ZOT_TEST_RSS_FILE names. The peak the kernel reports
// for a child counts the memory of the process it was started from; a
// fresh, small meter keeps the test binary's own out of it.
const rssMeterArg = "__zot-test-rss-meter"

func init() {
	if len(os.Args) > 2 && os.Args[1] == rssMeterArg {
		os.Exit(meterRSS(os.Args[2:]))
	}
}

func meterRSS(argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintln(os.Stderr, "rss meter:", err)
		return 125
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		os.WriteFile(os.Getenv("ZOT_TEST_RSS_FILE"), []byte(strconv.FormatInt(int64(ru.Maxrss), 10)), 0o644)
	}
	return cmd.ProcessState.ExitCode()
}

// runBounded runs zot and fails the test if it has not ended within
// untrustedRunLimit (it is killed then) or used more than
// untrustedRSSLimit of memory.
func runBounded(t *testing.T, z *zotRun, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), untrustedRunLimit)
	defer cancel()
	cmd := z.cmd(args...)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rssFile := filepath.Join(t.TempDir(), "rss")
	cmd.Args = append([]string{exe, rssMeterArg}, cmd.Args...)
	cmd.Args[2] = cmd.Path
	cmd.Path = exe
	cmd.Env = append(cmd.Env, "ZOT_TEST_RSS_FILE="+rssFile)
	// The meter and zot are one process group, killed together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := context.AfterFunc(ctx, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err = cmd.Wait()
	stop()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("zot %s hung: killed after %s\nstderr:\n%s", strings.Join(args, " "), untrustedRunLimit, errb.String())
	}
	b, err := os.ReadFile(rssFile)
	if err != nil {
		t.Fatalf("zot %s: the meter reported no memory use: %v\nstderr:\n%s", strings.Join(args, " "), err, errb.String())
	}
	if kib, _ := strconv.ParseInt(string(b), 10, 64); kib<<10 > untrustedRSSLimit {
		t.Errorf("zot %s used %d MiB of memory", strings.Join(args, " "), kib>>10)
	}
	return out.String(), errb.String()
}
