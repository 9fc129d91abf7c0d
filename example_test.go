package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
)

// ExampleAgent_Prompt is the main of docs/embedding.md, run. A server
// replaying two answers in the shape of the recorded streams of
// testdata/sse stands in for the API (no network, no key): the model
// calls bash, then answers.
func ExampleAgent_Prompt() {
	answers := [][]string{
		anthropicEvents(gen{ToolID: "toolu_1", ToolName: "bash", ToolArgs: `{"command":"echo hello"}`}),
		anthropicEvents(gen{Text: "It said hello."}),
	}
	var asked atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, strings.Join(answers[min(int(asked.Add(1)), len(answers))-1], ""))
	}))
	defer api.Close()
	dir, _ := os.MkdirTemp("", "zot-example-")
	defer os.RemoveAll(dir)

	p, _ := NewProvider(ProviderConfig{Name: "anthropic", BaseURL: api.URL, APIKey: "test-key"})
	env := NewToolEnv(dir, false)
	defer env.Close()
	reg := NewToolRegistry()
	reg.SetSource("builtin", BuiltinTools(env))
	a := NewAgent(p, "claude-sonnet-4-5", reg)
	fmt.Println(a.Prompt(context.Background(), "what does echo say?", nil, func(e Event) {
		switch e.Type {
		case EventToolCall:
			fmt.Printf("%s %s\n", e.Name, e.Args)
		case EventToolResult:
			fmt.Printf("%s returned %q\n", e.Name, e.Content[0].Text)
		case EventAssistantMessage:
			for _, b := range e.Content {
				if b.Type == BlockText {
					fmt.Println(b.Text)
				}
			}
		case EventDone:
			fmt.Println(e.Type)
		}
	}))
	// Output:
	// bash {"command":"echo hello"}
	// bash returned "hello\n[exit code 0]"
	// It said hello.
	// done
	// <nil>
}
