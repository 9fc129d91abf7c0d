// Command zot-rpc-client drives `zot rpc` from Go: it sends one prompt,
// prints the streamed answer and the tool calls as they happen, then the
// cost.
//
//	go run ./examples/rpc/go "fix the failing test" [zot flags ...]
//
// ZOT_BIN names the zot binary (default: zot on PATH). When
// ZOTCORE_RPC_TOKEN is set, zot requires it in the first command, hello.
// Standard library only; see docs/rpc.md for the protocol.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
)

// message is any line zot writes: a response or an event.
type message struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Command string          `json:"command"`
	Success bool            `json:"success"`
	Data    json.RawMessage `json:"data"`
	Error   string          `json:"error"`
	Delta   string          `json:"delta"`
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args"`
	Message string          `json:"message"`
}

type usage struct {
	Input   int     `json:"input"`
	Output  int     `json:"output"`
	CostUSD float64 `json:"cost_usd"`
}

// client is one `zot rpc` process. One goroutine reads its stdout, handing
// responses to the request waiting for that id and events to Events.
type client struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	Events chan message

	mu      sync.Mutex
	nextID  int
	waiting map[string]chan message
}

func start(zot string, args ...string) (*client, error) {
	cmd := exec.Command(zot, append([]string{"rpc"}, args...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s rpc: %w", zot, err)
	}
	c := &client{cmd: cmd, stdin: stdin, Events: make(chan message, 64), waiting: map[string]chan message{}}
	// The reader ends when zot closes its stdout; it then closes Events
	// and wakes every request still waiting.
	go c.read(stdout)
	return c, nil
}

func (c *client) read(stdout io.Reader) {
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadBytes('\n') // lines split on \n only
		if len(line) > 0 {
			var m message
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				fmt.Fprintf(os.Stderr, "zot: not JSON: %s", line)
			} else if m.Type == "response" {
				c.mu.Lock()
				ch := c.waiting[m.ID]
				delete(c.waiting, m.ID)
				c.mu.Unlock()
				if ch != nil {
					ch <- m
				}
			} else {
				c.Events <- m
			}
		}
		if err != nil {
			break
		}
	}
	close(c.Events)
	c.mu.Lock()
	for id, ch := range c.waiting {
		close(ch)
		delete(c.waiting, id)
	}
	c.mu.Unlock()
}

// request sends a command and waits for its response's data.
func (c *client) request(typ string, fields map[string]any) (json.RawMessage, error) {
	c.mu.Lock()
	c.nextID++
	id := strconv.Itoa(c.nextID)
	ch := make(chan message, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	cmd := map[string]any{"id": id, "type": typ}
	for k, v := range fields {
		cmd[k] = v
	}
	line, _ := json.Marshal(cmd)
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("%s: %w", typ, err)
	}
	m, ok := <-ch
	switch {
	case !ok:
		return nil, fmt.Errorf("%s: zot rpc exited", typ)
	case !m.Success:
		return nil, fmt.Errorf("%s: %s", typ, m.Error)
	}
	return m.Data, nil
}

// close ends stdin, which lets zot finish its work and exit.
func (c *client) close() error {
	c.stdin.Close()
	return c.cmd.Wait()
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: zot-rpc-client PROMPT [zot flags ...]")
		os.Exit(2)
	}
	zot := os.Getenv("ZOT_BIN")
	if zot == "" {
		zot = "zot"
	}
	c, err := start(zot, os.Args[2:]...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	err = converse(c, os.Args[1])
	if cerr := c.close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func converse(c *client, prompt string) error {
	hello := map[string]any{}
	if tok := os.Getenv("ZOTCORE_RPC_TOKEN"); tok != "" {
		hello["token"] = tok
	}
	data, err := c.request("hello", hello)
	if err != nil {
		return err
	}
	var info struct {
		ProtocolVersion int `json:"protocol_version"`
	}
	json.Unmarshal(data, &info)
	if info.ProtocolVersion != 1 {
		return fmt.Errorf("zot speaks protocol %d; this client knows 1", info.ProtocolVersion)
	}
	// Responses and events come from one reader; this goroutine consumes
	// Events while request waits, so neither blocks the other.
	sent := make(chan error, 1)
	go func() {
		_, err := c.request("prompt", map[string]any{"message": prompt})
		sent <- err
	}()
	var failed error
	for ev := range c.Events {
		switch ev.Type {
		case "text_delta":
			fmt.Print(ev.Delta)
		case "tool_call":
			fmt.Printf("\n[tool] %s %s\n", ev.Name, ev.Args)
		case "error":
			fmt.Fprintln(os.Stderr, "error: "+ev.Message)
			failed = errors.New(ev.Message)
		}
		if ev.Type == "done" {
			break
		}
	}
	if err := <-sent; err != nil {
		return err
	}
	data, err = c.request("get_state", nil)
	if err != nil {
		return err
	}
	var state struct {
		Usage usage `json:"usage"`
	}
	json.Unmarshal(data, &state)
	fmt.Printf("\ncost: $%.6f (%d in, %d out tokens)\n", state.Usage.CostUSD, state.Usage.Input, state.Usage.Output)
	return failed
}
