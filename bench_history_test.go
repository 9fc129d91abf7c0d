package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkThousandStepSession runs the agent through one prompt of 1,000
// tool-calling steps against a local server that answers each request with
// a recorded-shape Anthropic stream calling read on a small file, and the
// last one with text. It reports the CPU (user+system, whole process) per
// step over steps 1–100 and 900–1,000, and their ratio: with the history
// encoded once the work of a step does not grow with the steps before it.
// Run it with bench/history.sh.
func BenchmarkThousandStepSession(b *testing.B) {
	const steps = 1000
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "f.go"), []byte(strings.Repeat("package pkg // a line of the file\n", 20)), 0o644)
	var early, late time.Duration
	for i := 0; i < b.N; i++ {
		var marks []time.Duration
		n := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			marks = append(marks, processCPU(b))
			n++
			w.Header().Set("Content-Type", "text/event-stream")
			blocks := []gen{{Text: "Reading it again."}, {ToolID: fmt.Sprintf("toolu_%04d", n), ToolName: "read", ToolArgs: `{"path":"f.go"}`}}
			if n > steps {
				blocks = []gen{{Text: "Done."}}
			}
			for _, ev := range anthropicEvents(blocks...) {
				io.WriteString(w, ev)
			}
		}))
		p, err := NewProvider(ProviderConfig{Name: "anthropic", APIKey: "k", BaseURL: srv.URL})
		if err != nil {
			b.Fatal(err)
		}
		reg := NewToolRegistry()
		env := NewToolEnv(dir, false)
		reg.SetSource("builtin", BuiltinTools(env))
		a := NewAgent(p, "claude-sonnet-4-6", reg)
		a.MaxSteps = steps + 10
		if err := a.Prompt(context.Background(), "Read f.go a thousand times.", nil, func(Event) {}); err != nil {
			b.Fatal(err)
		}
		env.Close()
		srv.Close()
		if len(marks) != steps+1 {
			b.Fatalf("%d requests, want %d", len(marks), steps+1)
		}
		early += marks[100] - marks[0]
		late += marks[steps] - marks[steps-100]
	}
	b.ReportMetric(float64(early.Microseconds())/float64(b.N)/100, "µs-cpu/step-1-100")
	b.ReportMetric(float64(late.Microseconds())/float64(b.N)/100, "µs-cpu/step-900-1000")
	b.ReportMetric(float64(late)/float64(early), "late/early")
}

// processCPU is the CPU time the process has used so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
