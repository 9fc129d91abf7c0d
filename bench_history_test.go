package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkThousandStepSession runs the agent through one prompt of 1,000
// tool-calling steps against a server that answers each request with a
// recorded-shape Anthropic stream calling read on a small file, and the
// last one with text. The server is another process, as a provider is, so
// the figures are zot's own: the CPU (user, and user+system) per step over
// steps 1–100 and 900–1,000, and their ratios. With the history encoded
// once and sent without copies, the user CPU of a step does not grow with
// the steps before it; the system CPU does, a little, since each request
// still carries the whole conversation to the socket. Run it with
// bench/history.sh.
func BenchmarkThousandStepSession(b *testing.B) {
	const steps = 1000
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "f.go"), []byte(strings.Repeat("package pkg // a line of the file\n", 20)), 0o644)
	var early, late cpuTimes
	for i := 0; i < b.N; i++ {
		url, stop := startHistoryServer(b, steps)
		p, err := NewProvider(ProviderConfig{Name: "anthropic", APIKey: "k", BaseURL: url})
		if err != nil {
			b.Fatal(err)
		}
		reg := NewToolRegistry()
		env := NewToolEnv(dir, false)
		reg.SetSource("builtin", BuiltinTools(env))
		a := NewAgent(p, "claude-sonnet-4-6", reg)
		a.MaxSteps = steps + 10
		var marks []cpuTimes
		err = a.Prompt(context.Background(), "Read f.go a thousand times.", nil, func(ev Event) {
			if ev.Type == EventAssistantStart {
				marks = append(marks, processCPU(b))
			}
		})
		env.Close()
		stop()
		if err != nil {
			b.Fatal(err)
		}
		if len(marks) != steps+1 {
			b.Fatalf("%d requests, want %d", len(marks), steps+1)
		}
		early = early.plus(marks[100].minus(marks[0]))
		late = late.plus(marks[steps].minus(marks[steps-100]))
	}
	perStep := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) / 100 }
	b.ReportMetric(perStep(early.user), "µs-user/step-1-100")
	b.ReportMetric(perStep(late.user), "µs-user/step-900-1000")
	b.ReportMetric(float64(late.user)/float64(early.user), "user-late/early")
	b.ReportMetric(perStep(early.total()), "µs-cpu/step-1-100")
	b.ReportMetric(perStep(late.total()), "µs-cpu/step-900-1000")
	b.ReportMetric(float64(late.total())/float64(early.total()), "late/early")
}

// startHistoryServer starts the benchmark's provider in a child process
// (TestHistoryServerChild) and returns its URL and how to stop it.
func startHistoryServer(tb testing.TB, steps int) (string, func()) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHistoryServerChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ZOT_TEST_CHILD=1", "ZOT_HISTORY_SERVER_STEPS="+strconv.Itoa(steps))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		tb.Fatalf("history server: %v", err)
	}
	return "http://" + strings.TrimSpace(addr), func() {
		in.Close()
		cmd.Wait()
	}
}

// TestHistoryServerChild is BenchmarkThousandStepSession's provider when
// run as its child: it prints its address, serves until its stdin closes,
// and is skipped otherwise.
func TestHistoryServerChild(t *testing.T) {
	steps, err := strconv.Atoi(os.Getenv("ZOT_HISTORY_SERVER_STEPS"))
	if err != nil {
		t.Skip("BenchmarkThousandStepSession's server")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n++
		w.Header().Set("Content-Type", "text/event-stream")
		blocks := []gen{{Text: "Reading it again."}, {ToolID: fmt.Sprintf("toolu_%04d", n), ToolName: "read", ToolArgs: `{"path":"f.go"}`}}
		if n > steps {
			blocks = []gen{{Text: "Done."}}
		}
		for _, ev := range anthropicEvents(blocks...) {
			io.WriteString(w, ev)
		}
	})}
	go srv.Serve(ln)
	fmt.Println(ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	srv.Close()
}

// cpuTimes is CPU time used, in user space and in the kernel.
type cpuTimes struct{ user, system time.Duration }

func (c cpuTimes) total() time.Duration { return c.user + c.system }

func (c cpuTimes) minus(d cpuTimes) cpuTimes { return cpuTimes{c.user - d.user, c.system - d.system} }

func (c cpuTimes) plus(d cpuTimes) cpuTimes { return cpuTimes{c.user + d.user, c.system + d.system} }

// processCPU is the CPU time the process has used so far.
func processCPU(tb testing.TB) cpuTimes {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return cpuTimes{time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())}
}
