package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkPrintModeOverhead runs `zot -p` against a local server that
// streams a recorded reply, and reports the time zot itself adds (process
// start to exit, minus the time the server spent streaming) and the
// process's peak RSS.
func BenchmarkPrintModeOverhead(b *testing.B) {
	events := splitSSE(fixture(b, "anthropic_recorded_thinking_then_text.sse"))
	var mu sync.Mutex
	var serverTime time.Duration
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range events {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
		mu.Lock()
		serverTime += time.Since(start)
		mu.Unlock()
	}))
	defer srv.Close()
	home := b.TempDir()
	var wall time.Duration
	var peakKiB int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(zotBin(b), "-p", "--no-session", "--provider", "anthropic", "--base-url", srv.URL, "--api-key", "k", "hi")
		cmd.Env = []string{"ZOT_HOME=" + home, "HOME=" + home, "PATH=" + os.Getenv("PATH")}
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		wall += time.Since(start)
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > peakKiB {
			peakKiB = ru.Maxrss
		}
	}
	b.StopTimer()
	mu.Lock()
	overhead := (wall - serverTime) / time.Duration(b.N)
	mu.Unlock()
	b.ReportMetric(float64(overhead.Microseconds())/1000, "ms-overhead/run")
	b.ReportMetric(float64(peakKiB)/1024, "peak-RSS-MiB")
}
