package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// A server that reports more cached tokens than the prompt had: the
// counts and the cost stay at zero or above, the cached part is cut to
// the prompt, and the user is told once, not on every call.
func TestUsageNeverNegative(t *testing.T) {
	t.Parallel()
	odd := func(prompt, cached int) replayStep {
		ev := openaiEvents(gen{Text: "ok"})
		ev[len(ev)-2] = sseEventText("", obj{"id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": []any{},
			"usage": obj{"prompt_tokens": prompt, "completion_tokens": 3, "prompt_tokens_details": obj{"cached_tokens": cached}}})
		return replayStep{Events: ev}
	}
	srv := startReplay(t, odd(100, 120), odd(50, 90))
	p, _ := testProvider(t, "openai", srv.URL)
	a := NewAgent(p, "gpt-4o", NewToolRegistry())
	var mu sync.Mutex
	var logged []string
	a.Log = func(format string, args ...any) {
		mu.Lock()
		logged = append(logged, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	var log eventLog
	for _, prompt := range []string{"one", "two"} {
		if err := a.Prompt(context.Background(), prompt, nil, log.sink); err != nil {
			t.Fatal(err)
		}
	}
	var usages []Event
	for _, e := range log.all() {
		if e.Type == EventUsage {
			usages = append(usages, e)
		}
	}
	if len(usages) != 2 {
		t.Fatalf("usage events = %d", len(usages))
	}
	for i, want := range []Usage{{Input: 0, Output: 3, CacheRead: 100}, {Input: 0, Output: 3, CacheRead: 50}} {
		u := usages[i].Usage
		if u.Input != want.Input || u.Output != want.Output || u.CacheRead != want.CacheRead || u.CostUSD < 0 {
			t.Errorf("usage %d = %+v, want %+v with a cost of zero or more", i, u, want)
		}
	}
	if c := usages[1].Cumulative; c.Input < 0 || c.CacheRead != 150 || c.CostUSD <= 0 {
		t.Errorf("cumulative = %+v", c)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 1 || !strings.Contains(logged[0], "120 cached tokens of a 100-token prompt") || !strings.Contains(logged[0], "openai") {
		t.Errorf("logged %q, want one note naming the server's inconsistency", logged)
	}
}

// No usage a server can report prices below zero.
func TestCostNeverNegative(t *testing.T) {
	t.Parallel()
	m := lookupModel("anthropic", "claude-sonnet-4-6")
	for _, u := range []Usage{
		{Input: -20, CacheRead: 120},
		{Input: -1 << 40},
		{Output: -5, CacheWrite: -3, CacheWrite1h: -9},
		{CacheWrite: 10, CacheWrite1h: 50},
	} {
		if c := m.Cost(u); c < 0 {
			t.Errorf("Cost(%+v) = %v", u, c)
		}
		if c, _ := u.clamped(); c.Input < 0 || c.Output < 0 || c.CacheRead < 0 || c.CacheWrite < 0 || c.CacheWrite1h < 0 {
			t.Errorf("clamped(%+v) = %+v", u, c)
		}
	}
	// A 1-hour write costs twice the input price, a 5-minute one 1.25×.
	if c := m.Cost(Usage{CacheWrite: 3e6, CacheWrite1h: 1e6}); c != 2*3.75+1*6 {
		t.Errorf("cost of 2M 5-minute and 1M 1-hour cache writes = %v, want 13.5", c)
	}
}
