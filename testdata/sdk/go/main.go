// The SDK test extension (see ../README.md), written with sdk/go. Build it
// with `go build -o sdk-go .`.
package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"zot.local/zotext"
)

var png, _ = hex.DecodeString("89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
	"1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")

func main() {
	ext := zotext.New("sdk-go", "1.0.0")
	released := make(chan struct{})
	var releaseOnce sync.Once
	var mu sync.Mutex
	count := map[string]int{}
	counter := func(id string) zotext.Panel {
		mu.Lock()
		defer mu.Unlock()
		return zotext.Panel{ID: id, Title: "counter", Lines: []string{strconv.Itoa(count[id])}, Footer: "+ adds, q closes"}
	}

	ext.Command("echo", "echo the arguments as a prompt", func(args string) zotext.Response {
		return zotext.Prompt("echo: " + args)
	})
	// /release is registered before /wait: `zot ext check` invokes commands
	// in that order, and so finds /wait released instead of waiting its
	// 10 s out.
	ext.Command("release", "release /wait", func(string) zotext.Response {
		releaseOnce.Do(func() { close(released) })
		return zotext.Noop()
	})
	ext.Command("wait", "wait for /release", func(string) zotext.Response {
		ext.Notify("info", "waiting")
		select {
		case <-released:
			return zotext.Display("released")
		case <-time.After(10 * time.Second):
			return zotext.Display("timed out")
		}
	})
	ext.Command("boom", "panics", func(string) zotext.Response { panic("boom") })
	ext.Command("notes", "a note, then none", func(string) zotext.Response {
		ext.Notify("warn", "hello")
		ext.ClearNotes()
		return zotext.Noop()
	})
	ext.Command("panel", "a counter panel", func(string) zotext.Response {
		mu.Lock()
		count["p1"] = 0
		mu.Unlock()
		return zotext.Noop().WithPanel(counter("p1"))
	})
	ext.OnPanelKey(func(panelID, key, text string) {
		switch {
		case key == "rune" && text == "+":
			mu.Lock()
			count[panelID]++
			mu.Unlock()
			ext.RenderPanel(counter(panelID))
		case key == "rune" && text == "q":
			ext.ClosePanel(panelID)
		}
	})
	ext.OnPanelClose(func(panelID string) { ext.Notify("info", "closed "+panelID) })
	ext.Command("info", "protocol version and data directory", func(string) zotext.Response {
		info := ext.Info()
		return zotext.Display(fmt.Sprintf("%d %s", info.ProtocolVersion, filepath.Base(info.DataDir)))
	})

	ext.Tool("add", "Add two numbers.",
		json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
		func(args json.RawMessage) zotext.ToolResult {
			var in struct{ A, B float64 }
			if err := json.Unmarshal(args, &in); err != nil {
				return zotext.TextErrorResult("add needs numbers a and b")
			}
			return zotext.TextResult(strconv.FormatFloat(in.A+in.B, 'g', -1, 64))
		})
	ext.Tool("fail", "Always fails.", nil, func(json.RawMessage) zotext.ToolResult {
		panic(errors.New("tool broke"))
	})
	ext.Tool("pic", "A tiny picture.", nil, func(json.RawMessage) zotext.ToolResult {
		return zotext.ImageResult("image/png", png)
	})

	ext.On("session_start", func(zotext.Event) { ext.Notify("info", "session started") })
	ext.On("turn_end", func(ev zotext.Event) { ext.Notify("info", "turn_end "+ev.Stop) })

	ext.InterceptToolCallX(func(tool string, args json.RawMessage) zotext.ToolCallDecision {
		if tool != "bash" {
			return zotext.ToolCallDecision{}
		}
		var in struct{ Command string }
		json.Unmarshal(args, &in)
		switch {
		case strings.Contains(in.Command, "rm -rf"):
			return zotext.ToolCallDecision{Block: true, Reason: "no rm -rf"}
		case in.Command == "ls":
			return zotext.ToolCallDecision{ModifiedArgs: json.RawMessage(`{"command":"ls -la"}`)}
		case in.Command == "throw":
			panic("interceptor broke")
		}
		return zotext.ToolCallDecision{}
	})
	ext.InterceptTurnStart(func(step int) zotext.TurnStartDecision {
		if step >= 5 {
			return zotext.TurnStartDecision{Block: true, Reason: "turn budget: 4"}
		}
		return zotext.TurnStartDecision{}
	})
	ext.InterceptAssistantMessage(func(text string) zotext.AssistantMessageDecision {
		switch {
		case strings.Contains(text, "throw"):
			panic("redactor broke")
		case strings.Contains(text, "HIDE"):
			return zotext.AssistantMessageDecision{Block: true}
		case strings.Contains(text, "SECRET"):
			return zotext.AssistantMessageDecision{ReplaceText: strings.ReplaceAll(text, "SECRET", "[redacted]")}
		}
		return zotext.AssistantMessageDecision{}
	})

	ext.OnShutdown(func() {
		os.WriteFile(filepath.Join(ext.Info().DataDir, "shutdown.txt"), []byte("bye"), 0o644)
	})

	if err := ext.Run(); err != nil {
		ext.Logf("%v", err)
		os.Exit(1)
	}
}
