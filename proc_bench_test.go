package main

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The costs of issue 28 through the real binary, with a replayed model.
// bench/procs.sh runs them with 0, 200 and 1,000 idle processes on the
// machine. With ZOT_BENCH_REF naming another zot binary, each benchmark
// runs that one in turn with this one, A B A B, and reports both: the
// machine's load then weighs on both alike. The binary to name is the
// reference's, ../shared/anchors/zot-ref, as bench/vs-ref.sh and
// bench/procs.sh do: an older build of ours is no reference.

// benchBin is a zot binary a benchmark runs, and its figures.
type benchBin struct {
	name, path string
	figures    map[string][]float64
}

func benchBins(b *testing.B) []*benchBin {
	bins := []*benchBin{{name: "", path: zotBin(b)}}
	if ref := os.Getenv("ZOT_BENCH_REF"); ref != "" {
		bins = append(bins, &benchBin{name: "ref-", path: ref})
	}
	for _, bin := range bins {
		bin.figures = map[string][]float64{}
	}
	return bins
}

func (bin *benchBin) add(unit string, v float64) { bin.figures[unit] = append(bin.figures[unit], v) }

// report reports the median of each figure, and for the reference the
// ratio of this binary's median to the reference's.
func reportBins(b *testing.B, bins []*benchBin) {
	median := func(vs []float64) float64 {
		vs = slices.Clone(vs)
		slices.Sort(vs)
		return vs[len(vs)/2]
	}
	for _, bin := range bins {
		for unit, vs := range bin.figures {
			b.ReportMetric(median(vs), bin.name+unit)
			if bin.name != "" {
				b.ReportMetric(median(bins[0].figures[unit])/median(vs), "ratio-"+unit)
			}
		}
	}
}

// benchRun runs bin with args against a replay of steps, in home and cwd,
// and returns its wall and CPU time (its own and its children's), its
// peak RSS in MiB, and when the server had sent the last step.
func benchRun(b *testing.B, bin, home, cwd string, steps []replayStep, args ...string) (wall, cpu time.Duration, lastSent time.Time) {
	b.Helper()
	srv := startReplay(b, steps...)
	defer srv.Close()
	cmd := benchCommand(bin, home, cwd, srv, args)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", bin, err, out)
	}
	wall = time.Since(start)
	cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return wall, cpu, srv.lastSent()
}

func benchCommand(bin, home, cwd string, srv *replayServer, args []string) *exec.Cmd {
	cmd := exec.Command(bin, append(append([]string{"-p", "--no-session"}, anthropicFlags(srv)...), args...)...)
	cmd.Dir = cwd
	cmd.Env = []string{"ZOT_HOME=" + home, "HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir()}
	return cmd
}

// benchPeakRSS is benchRun's wall time and the peak RSS of zot's process
// in MiB, which GNU time reports: it forks, and its child execs zot. The
// rusage os/exec gets cannot tell it, since Go starts a child with vfork
// and the kernel counts the high-water mark of the memory a child execs
// from — the benchmark's own — in the child's peak.
func benchPeakRSS(b *testing.B, bin, home, cwd string, steps []replayStep, args ...string) (wall time.Duration, rssMiB float64) {
	b.Helper()
	gnuTime, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		b.Fatal("the peak RSS needs GNU time (apt-get install time)")
	}
	srv := startReplay(b, steps...)
	defer srv.Close()
	report := filepath.Join(b.TempDir(), "rss")
	cmd := benchCommand(bin, home, cwd, srv, args)
	cmd.Args = append([]string{gnuTime, "-f", "%M", "-o", report}, cmd.Args...)
	cmd.Path = gnuTime
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", bin, err, out)
	}
	wall = time.Since(start)
	kb, err := os.ReadFile(report)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := fmt.Sscan(string(kb), &rssMiB); err != nil {
		b.Fatalf("GNU time said %q: %v", kb, err)
	}
	return wall, rssMiB / 1024
}

// BenchmarkToolLoop is one step of the bash tool loop: `zot -p` through
// 20 steps that each run `echo hi`, less a run of none, over 20; the
// median of b.N such pairs, wall and CPU (zot's and the commands'). The
// whole run of 20 steps, start and exit included, is issue 39's figure
// (ms/run, cpu-ms/run). `echo hi` runs without bash and takes no
// checkpoint (tools_bash_direct.go); ZOT_BENCH_LINE runs another line, as
// bench/vs-ref.sh does to price the calls that take a checkpoint
// (/usr/bin/echo hi) or bash as well (echo hi && true).
func BenchmarkToolLoop(b *testing.B) {
	bins := benchBins(b)
	line := cmp.Or(os.Getenv("ZOT_BENCH_LINE"), "echo hi")
	var steps []replayStep
	for i := range 20 {
		steps = append(steps, toolStep(fmt.Sprint("t", i), "bash", obj{"command": line}))
	}
	steps = append(steps, replayStep{Events: anthropicEvents(gen{Text: "done"})})
	home, cwd := b.TempDir(), b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, bin := range bins {
			wall20, cpu20, _ := benchRun(b, bin.path, home, cwd, steps, "go")
			wall0, cpu0, _ := benchRun(b, bin.path, home, cwd, steps[20:], "go")
			bin.add("ms/call", float64(wall20-wall0)/20/float64(time.Millisecond))
			bin.add("cpu-ms/call", float64(cpu20-cpu0)/20/float64(time.Millisecond))
			bin.add("ms/run", float64(wall20)/float64(time.Millisecond))
			bin.add("cpu-ms/run", float64(cpu20)/float64(time.Millisecond))
		}
	}
	b.StopTimer()
	reportBins(b, bins)
}

// BenchmarkPrintExit is how long `zot -p` takes to exit once the model's
// last answer is sent, with five MCP servers (Python, stdio) and five
// extensions (compiled Go) to stop.
func BenchmarkPrintExit(b *testing.B) {
	bins := benchBins(b)
	home, cwd := b.TempDir(), b.TempDir()
	var servers, args []string
	for i := range 5 {
		servers = append(servers, fmt.Sprintf("%q: %s", fmt.Sprint("s", i), fakeServer(b, "normal", b.TempDir(), "")))
		args = append(args, "--ext", gobenchExt(b, fmt.Sprint("gobench", i)))
	}
	writeFile(b, filepath.Join(cwd, "servers.json"), `{"mcpServers": {`+strings.Join(servers, ", ")+`}}`, 0o644)
	args = append(args, "--mcp-config", "servers.json", "go")
	steps := []replayStep{toolStep("t1", "bash", obj{"command": "echo hi"}), {Events: anthropicEvents(gen{Text: "done"})}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, bin := range bins {
			_, _, sent := benchRun(b, bin.path, home, cwd, steps, args...)
			bin.add("ms-to-exit", float64(time.Since(sent))/float64(time.Millisecond))
		}
	}
	b.StopTimer()
	reportBins(b, bins)
}

// BenchmarkPrintBash1GB is `zot -p` through one bash call that prints
// 1 GB: wall time and peak RSS (zot's; its commands' are far smaller).
func BenchmarkPrintBash1GB(b *testing.B) {
	bins := benchBins(b)
	home, cwd := b.TempDir(), b.TempDir()
	const command = "head -c 1000000000 /dev/zero | tr '\\0' x"
	steps := []replayStep{
		toolStep("t1", "bash", obj{"command": command}),
		{Events: anthropicEvents(gen{Text: "done"})},
	}
	var floor []float64
	b.SetBytes(1_000_000_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, bin := range bins {
			wall, rss := benchPeakRSS(b, bin.path, home, cwd, steps, "go")
			bin.add("s", wall.Seconds())
			bin.add("peak-RSS-MiB", rss)
		}
		// The floor: the same command read by cat, which does nothing
		// with the bytes.
		start := time.Now()
		if out, err := exec.Command("bash", "-c", command+" | cat >/dev/null").CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		floor = append(floor, time.Since(start).Seconds())
	}
	b.StopTimer()
	reportBins(b, bins)
	slices.Sort(floor)
	b.ReportMetric(floor[len(floor)/2], "cat-s")
}
