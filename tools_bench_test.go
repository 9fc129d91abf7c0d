package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// BenchmarkBash1GBOutput shows that bash's memory does not grow with a
// command's output: peak-RSS-MiB is the whole test process's high-water
// mark after 1 GB per iteration has gone through the tool.
func BenchmarkBash1GBOutput(b *testing.B) {
	bash := BuiltinTools(NewToolEnv(b.TempDir(), false))[3]
	args := json.RawMessage(`{"command":"head -c 1000000000 /dev/zero | tr '\\0' 'x'"}`)
	spill := regexp.MustCompile(` are in (\S+) …`)
	b.SetBytes(1_000_000_000)
	for i := 0; i < b.N; i++ {
		r := bash.Run(context.Background(), args, nil)
		if r.IsError {
			b.Fatalf("bash failed: %s", r.Content[0].Text)
		}
		if m := spill.FindStringSubmatch(r.Content[0].Text); m != nil {
			os.Remove(m[1])
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	rss := float64(ru.Maxrss) / 1024 // KiB on Linux
	if runtime.GOOS == "darwin" {
		rss /= 1024 // bytes on macOS
	}
	b.ReportMetric(rss, "peak-RSS-MiB")
}

// BenchmarkShellStart is what the shell costs a bash call: a start of
// `bash -c true` as zot runs it, with --noprofile --norc (which a -c shell
// does not need: it reads no startup files but $BASH_ENV, and has no job
// control), and `sh -c true` (dash, where /bin/sh is dash), through
// proc.go; then a bash tool call of `true` with bash and with sh as the
// tool's shell. cpu-µs is the shell's CPU (user and system), the
// benchmark's own not counted.
func BenchmarkShellStart(b *testing.B) {
	bash := bashToolShell().Path
	if !bashToolShell().Bash {
		b.Skip("no bash here")
	}
	childCPU := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for _, c := range []struct {
		name string
		argv []string
	}{{"bash", []string{bash, "-c", "true"}}, {"bash-noprofile-norc", []string{bash, "--noprofile", "--norc", "-c", "true"}}, {"sh", []string{"/bin/sh", "-c", "true"}}} {
		b.Run(c.name, func(b *testing.B) {
			before := childCPU()
			for i := 0; i < b.N; i++ {
				if _, err := runToEnd(context.Background(), procSpec{argv: c.argv, env: envNoSecrets}, nil, 1<<10, time.Second); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((childCPU()-before).Microseconds())/float64(b.N), "cpu-µs/start")
		})
	}
	for _, sh := range []commandShell{{Path: bash, Bash: true}, {Path: "/bin/sh"}} {
		b.Run("tool-"+filepath.Base(sh.Path), func(b *testing.B) {
			saved := bashToolShell
			bashToolShell = func() commandShell { return sh }
			defer func() { bashToolShell = saved }()
			tool := BuiltinTools(NewToolEnv(b.TempDir(), false))[3]
			before := childCPU()
			for i := 0; i < b.N; i++ {
				if r := tool.Run(context.Background(), json.RawMessage(`{"command":"true"}`), nil); r.IsError {
					b.Fatal(r.Content[0].Text)
				}
			}
			b.ReportMetric(float64((childCPU()-before).Microseconds())/float64(b.N), "cpu-µs/call")
		})
	}
}
