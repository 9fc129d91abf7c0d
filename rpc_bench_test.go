package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// rpcBenchServer serves agent over in-process pipes for a benchmark.
func rpcBenchServer(b *testing.B, agent *Agent) (in io.Writer, out *bufio.Reader) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := newRPCServer(rpcConfig{Agent: agent, Provider: "anthropic"}, inR, outW)
	served := make(chan struct{})
	// Owned by the benchmark; ends when its input closes.
	go func() {
		defer close(served)
		srv.Serve(context.Background())
		outW.Close()
	}()
	b.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		<-served
	})
	return inW, bufio.NewReader(outR)
}

// BenchmarkRPCPing measures command round trips over the pipes: write a
// ping, read its response.
func BenchmarkRPCPing(b *testing.B) {
	in, out := rpcBenchServer(b, NewAgent(nil, "m", nil))
	line := []byte(`{"id":"1","type":"ping"}` + "\n")
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		in.Write(line)
		if _, err := out.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pings/s")
}

// BenchmarkRPCPromptToFirstDelta measures the time from writing a prompt to
// reading its first text_delta, minus what the replay provider itself took
// between receiving the request and flushing that delta.
func BenchmarkRPCPromptToFirstDelta(b *testing.B) {
	events := anthropicEvents(gen{Text: "hello from the replay provider"})
	var mu sync.Mutex
	var providerTime time.Duration
	httpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i, ev := range events {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
			if i == 2 { // message_start, content_block_start, first text delta
				mu.Lock()
				providerTime += time.Since(start)
				mu.Unlock()
			}
		}
	}))
	defer httpSrv.Close()
	p, _ := testProvider(b, "anthropic", httpSrv.URL)
	in, out := rpcBenchServer(b, NewAgent(p, "claude-sonnet-4-5", nil))
	prompt := []byte(`{"type":"prompt","message":"hi"}` + "\n")
	clear := []byte(`{"type":"clear"}` + "\n")
	readUntil := func(marker string) {
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if strings.Contains(line, marker) {
				return
			}
		}
	}
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		in.Write(prompt)
		readUntil(`"type":"text_delta"`)
		total += time.Since(start)
		readUntil(`{"type":"done"}`)
		in.Write(clear) // keep every request the same size
		readUntil(`"command":"clear"`)
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	b.ReportMetric(float64((total-providerTime).Microseconds())/float64(b.N), "µs-zot/first-delta")
	b.ReportMetric(float64(providerTime.Microseconds())/float64(b.N), "µs-provider/first-delta")
}
