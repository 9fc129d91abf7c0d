package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

// gobenchExt is the compiled benchmark extension in a directory of its own.
func gobenchExt(b *testing.B, name string) string {
	bin := buildGo(b, testdataPath(b, "gobench"))
	return writeManifest(b, filepath.Join(b.TempDir(), name), obj{"name": name, "exec": bin})
}

func startBenchManager(b *testing.B, onNote func(ExtNote), dirs ...string) *ExtManager {
	b.Helper()
	m := NewExtManager(ExtConfig{Home: b.TempDir(), Cwd: b.TempDir(), Discover: onlyExtPaths(dirs), OnNote: onNote,
		Log: func(format string, args ...any) { b.Logf(format, args...) }})
	if st := m.Start(context.Background()); st.Ready != len(dirs) {
		b.Fatalf("stats %+v", st)
	}
	b.Cleanup(func() { m.Shutdown(context.Background()) })
	return m
}

// BenchmarkExtInterceptRoundTrip is one tool_call through a compiled Go
// interceptor: event_intercept out, event_intercept_response back.
func BenchmarkExtInterceptRoundTrip(b *testing.B) {
	m := startBenchManager(b, nil, gobenchExt(b, "gobench"))
	call := ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"go test ./..."}`)}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if r := m.ToolGate(context.Background(), call); r.Verdict != GateAllow || len(r.Notes) != 1 {
			b.Fatalf("gate %+v", r)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkExtStartup is Start until every extension is ready, for 1 and
// 20 compiled extensions that send ready.
func BenchmarkExtStartup(b *testing.B) {
	for _, n := range []int{1, 20} {
		b.Run(fmt.Sprintf("%d", n), func(b *testing.B) {
			var dirs []string
			for i := range n {
				dirs = append(dirs, gobenchExt(b, fmt.Sprintf("gobench%d", i)))
			}
			home := b.TempDir()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m := NewExtManager(ExtConfig{Home: home, Cwd: home, Discover: onlyExtPaths(dirs)})
				if st := m.Start(context.Background()); st.Ready != n {
					b.Fatalf("stats %+v", st)
				}
				b.StopTimer()
				m.Shutdown(context.Background())
				b.StartTimer()
			}
		})
	}
}

// BenchmarkExtEventThroughput floods a subscriber with turn_start events and
// reports how many per second it received (a slow reader loses the oldest).
func BenchmarkExtEventThroughput(b *testing.B) {
	counts := make(chan int, 1)
	m := startBenchManager(b, func(n ExtNote) {
		c, _ := strconv.Atoi(n.Message)
		counts <- c
	}, gobenchExt(b, "gobench"))
	const burst = 10000
	delivered := 0
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for step := 1; step <= burst; step++ {
			m.Observe(Event{Type: "turn_start", Step: step})
		}
		m.Observe(Event{Type: "turn_end", Stop: "end_turn"})
		delivered += <-counts
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(delivered)/elapsed.Seconds(), "events/s")
	b.ReportMetric(100*float64(b.N*burst-delivered)/float64(b.N*burst), "dropped-%")
}
