// weather: a tool the model can call, in Go with the standard library only.
//
// The tool "weather" takes {"city": "Berlin"} and answers with one line of
// current weather from wttr.in (or from $WEATHER_URL, for a mirror or a
// test server). Build it with `go build -o weather .`.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// frame is every field this extension reads or writes.
type frame struct {
	Type        string          `json:"type"`
	ID          string          `json:"id,omitempty"`
	Name        string          `json:"name,omitempty"`
	Version     string          `json:"version,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Args        json.RawMessage `json:"args,omitempty"`
	Content     []block         `json:"content,omitempty"`
	IsError     bool            `json:"is_error,omitempty"`
}

type block struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

var (
	outMu sync.Mutex
	out   = json.NewEncoder(os.Stdout)
)

// send writes one frame; calls answered on their own goroutines share stdout.
func send(f frame) {
	outMu.Lock()
	defer outMu.Unlock()
	if err := out.Encode(f); err != nil {
		fmt.Fprintln(os.Stderr, "weather: write:", err)
		os.Exit(1)
	}
}

func main() {
	send(frame{Type: "hello", Name: "weather", Version: "1.0.0"})
	send(frame{Type: "register_tool", Name: "weather",
		Description: "Get the current weather for a city.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"city name"}},"required":["city"]}`)})
	send(frame{Type: "ready"})

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 8<<20)
	var calls sync.WaitGroup
	for in.Scan() {
		var f frame
		if err := json.Unmarshal(in.Bytes(), &f); err != nil {
			fmt.Fprintln(os.Stderr, "weather: bad frame:", err)
			continue
		}
		switch f.Type {
		case "tool_call":
			calls.Add(1)
			go func() { // one lookup must not hold up the next frame
				defer calls.Done()
				send(answer(f))
			}()
		case "shutdown":
			calls.Wait()
			send(frame{Type: "shutdown_ack"})
			return
		}
	}
}

func answer(call frame) frame {
	res := frame{Type: "tool_result", ID: call.ID}
	var args struct {
		City string `json:"city"`
	}
	if err := json.Unmarshal(call.Args, &args); err != nil || strings.TrimSpace(args.City) == "" {
		res.IsError = true
		res.Content = []block{{Type: "text", Text: `weather needs {"city": "<name>"}`}}
		return res
	}
	text, err := lookup(args.City)
	if err != nil {
		res.IsError = true
		text = "weather for " + args.City + ": " + err.Error()
	}
	res.Content = []block{{Type: "text", Text: text}}
	return res
}

func lookup(city string) (string, error) {
	base := os.Getenv("WEATHER_URL")
	if base == "" {
		base = "https://wttr.in"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(base, "/")+"/"+url.PathEscape(city)+"?format=3", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %s", base, resp.Status)
	}
	return strings.TrimSpace(string(body)), nil
}
