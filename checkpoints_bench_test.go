package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchTree writes a project of n files, 50 to a directory in two levels,
// of a few hundred bytes to a few KiB each, with a .gitignore, and returns
// its directory.
func benchTree(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	mustWrite(b, filepath.Join(dir, ".gitignore"), "*.log\n/build/\n", 0o644)
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("pkg%02d", i/1000), fmt.Sprintf("sub%02d", i/50%20), fmt.Sprintf("file%05d.go", i))
		mustWrite(b, p, strings.Repeat(fmt.Sprintf("// line of file %d\n", i), 10+i%200), 0o644)
	}
	return dir
}

// benchCheckpoints is a store for dir whose clock runs racyWindow ahead:
// the tree was written a moment ago, and a real project's files are older
// than the window, in which the index does not trust a stat (a sleep would
// do the same, slower).
func benchCheckpoints(b *testing.B, dir string) *Checkpoints {
	ck := OpenCheckpoints(b.TempDir(), dir, nil, DefaultCheckpointSettings())
	ck.now = func() time.Time { return time.Now().Add(2 * racyWindow) }
	ck.pruned = true
	return ck
}

// BenchmarkCheckpointUnchanged10k is one checkpoint (before and after a
// call) of a 10,000-file project where nothing changed: a stat per file.
// The target is under 50 ms on two cores.
func BenchmarkCheckpointUnchanged10k(b *testing.B) {
	dir := benchTree(b, 10_000)
	ck := benchCheckpoints(b, dir)
	info := ckStepInfo{Session: "bench", Tool: "bash", Prompt: "p", PromptTime: time.Now()}
	after, _, err := ck.Before(info) // the first one reads every file
	if err != nil {
		b.Fatal(err)
	}
	after()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		after, _, err := ck.Before(info)
		if err != nil {
			b.Fatal(err)
		}
		if err := after(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N)/2, "ms/snapshot")
	// On a shared machine the wall clock counts other processes' turns;
	// the CPU time this process used is what a snapshot costs.
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/float64(b.N)/2, "cpu-ms/snapshot")
}

// cpuTime is the user and system time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCheckpointFirst10k is the first checkpoint of the project: every
// file read, hashed and stored.
func BenchmarkCheckpointFirst10k(b *testing.B) {
	dir := benchTree(b, 10_000)
	for i := 0; i < b.N; i++ {
		ck := benchCheckpoints(b, dir)
		if _, _, err := ck.Before(ckStepInfo{Session: "bench", Tool: "bash"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckpointSession50 runs a 50-step session over the 10,000-file
// project, each step changing one file (a 4 KiB edit), and reports how much
// the store grew beyond the first snapshot per step.
func BenchmarkCheckpointSession50(b *testing.B) {
	dir := benchTree(b, 10_000)
	for i := 0; i < b.N; i++ {
		ck := benchCheckpoints(b, dir)
		info := ckStepInfo{Session: "bench", Tool: "edit", Prompt: "p", PromptTime: time.Now()}
		after, _, err := ck.Before(info)
		if err != nil {
			b.Fatal(err)
		}
		after()
		first := dirSize(ck.dir)
		for step := 0; step < 50; step++ {
			after, _, err := ck.Before(info)
			if err != nil {
				b.Fatal(err)
			}
			mustWrite(b, filepath.Join(dir, "pkg03", "sub07", fmt.Sprintf("file%05d.go", 3000+step)), strings.Repeat(fmt.Sprintf("edited in run %d, step %d\n", i, step), 160), 0o644)
			if err := after(); err != nil {
				b.Fatal(err)
			}
		}
		total := dirSize(ck.dir)
		b.ReportMetric(float64(first)/(1<<20), "MiB-first-snapshot")
		b.ReportMetric(float64(total-first)/(1<<10), "KiB-added-by-50-steps")
		b.ReportMetric(float64(total-first)/50/(1<<10), "KiB/step")
	}
}
