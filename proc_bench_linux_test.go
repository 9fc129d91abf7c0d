package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// BenchmarkPrintBash1GBOwnCPU is `zot -p` through one bash call that
// prints 1 GB, as BenchmarkPrintBash1GB: its wall time, and the CPU time
// of zot's own process (all its threads) apart from the command's, which
// is what zot spends on a gigabyte.
func BenchmarkPrintBash1GBOwnCPU(b *testing.B) {
	bins := benchBins(b)
	home, cwd := b.TempDir(), b.TempDir()
	steps := []replayStep{
		toolStep("t1", "bash", obj{"command": "head -c 1000000000 /dev/zero | tr '\\0' x | fold -w 100"}),
		{Events: anthropicEvents(gen{Text: "done"})},
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, bin := range bins {
			wall, own, children := benchOwnCPU(b, bin.path, home, cwd, steps, "go")
			bin.add("s", wall.Seconds())
			bin.add("own-cpu-s", own.Seconds())
			bin.add("command-cpu-s", children.Seconds())
		}
	}
	b.StopTimer()
	reportBins(b, bins)
}

// benchOwnCPU runs bin as benchRun does and returns its wall time, its own
// CPU time and its children's: read from its /proc stat once it has
// exited and before it is reaped, where the kernel keeps both apart
// (rusage adds them up).
func benchOwnCPU(b *testing.B, bin, home, cwd string, steps []replayStep, args ...string) (wall, own, children time.Duration) {
	b.Helper()
	srv := startReplay(b, steps...)
	defer srv.Close()
	cmd := benchCommand(bin, home, cwd, srv, args)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	const pPID = 1
	var info [128]byte
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(cmd.Process.Pid), uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno == 0 {
			break
		}
		if errno != syscall.EINTR {
			b.Fatal(errno)
		}
	}
	wall = time.Since(start)
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("%s: %v", bin, err)
	}
	// After the name in parentheses: state is field 3; utime, stime,
	// cutime and cstime are 14 to 17, in clock ticks (USER_HZ, 100).
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	tick := func(i int) time.Duration {
		n, _ := strconv.ParseInt(fields[i-3], 10, 64)
		return time.Duration(n) * 10 * time.Millisecond
	}
	return wall, tick(14) + tick(15), tick(16) + tick(17)
}

// BenchmarkStartRSS is the peak RSS of `zot --version` and of `zot -p`
// answering once with no tool call (GNU time's, see benchPeakRSS).
func BenchmarkStartRSS(b *testing.B) {
	bins := benchBins(b)
	home, cwd := b.TempDir(), b.TempDir()
	gnuTime := "/usr/bin/time"
	if _, err := os.Stat(gnuTime); err != nil {
		b.Fatal("the peak RSS needs GNU time (apt-get install time)")
	}
	steps := []replayStep{{Events: anthropicEvents(gen{Text: "hello"})}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, bin := range bins {
			report := b.TempDir() + "/rss"
			cmd := exec.Command(gnuTime, "-f", "%M", "-o", report, bin.path, "--version")
			cmd.Dir, cmd.Env = cwd, []string{"ZOT_HOME=" + home, "HOME=" + home, "PATH=" + os.Getenv("PATH")}
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
			kb, err := os.ReadFile(report)
			if err != nil {
				b.Fatal(err)
			}
			v, _ := strconv.ParseFloat(strings.TrimSpace(string(kb)), 64)
			bin.add("version-RSS-MiB", v/1024)
			_, rss := benchPeakRSS(b, bin.path, home, cwd, steps, "hi")
			bin.add("print-RSS-MiB", rss)
		}
	}
	b.StopTimer()
	reportBins(b, bins)
}
