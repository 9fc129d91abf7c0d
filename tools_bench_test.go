package main

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"runtime"
	"syscall"
	"testing"
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
