// fakeserver is a fake MCP stdio server for zot's fault tests. It is Go,
// not Python, for its start: the tests start it about fifty times, and a
// Python start costs 41 ms of CPU against this one's 5 ms.
//
// Usage: fakeserver MODE [STATE_DIR]
//
// MODE picks a misbehaviour:
//
//	normal     a well-behaved server
//	noinit     never answers initialize
//	slowinit   answers initialize after a second (a server that starts slowly)
//	oldversion answers initialize with protocol version 1999-01-01
//	garbage    writes non-JSON and broken JSON-RPC lines among its answers
//	paged      lists its tools two per page
//	stubborn   ignores stdin EOF and SIGTERM (only SIGKILL stops it)
//	orphan     its crash tool starts a child that ignores SIGTERM and
//	           outlives it (pid in STATE_DIR/child), then exits with status 4
//	mute       its crash tool closes stdout and keeps running
//
// STATE_DIR, when given, receives pid (this process's pid), calls (one
// line per tools/call), cancelled (one line per notifications/cancelled)
// and caps (the client's capabilities at initialize).
//
// Tools: echo, read_file, crash, big, slow, deaf, progress, ask, elicit,
// change, fail, env. elicit asks the client a form question
// (elicitation/create), whether or not the client offered elicitation,
// and returns its answer.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type obj = map[string]any

var (
	mode  = "normal"
	state string
	out   = bufio.NewWriter(os.Stdout)
	// The reader reads a line only when asked: a server busy elsewhere
	// (deaf, slowinit) leaves what the client writes in the pipe, as a
	// single-threaded server does, and the client's write can fill it.
	wanted  = make(chan struct{})
	lines   = make(chan []byte) // the line asked for; closed at stdin's end
	pending bool                // a line was asked for and has not come
	held    []obj               // messages read while waiting for a reply
)

// The tools and the form are written out, not built from maps, to keep
// their keys in order: a client shows a form's fields in the order its
// schema lists them.
var tools = []json.RawMessage{
	json.RawMessage(`{"name": "echo", "description": "Echo the text back.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}`),
	json.RawMessage(`{"name": "read_file", "description": "Read a file of the working directory.", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}, "annotations": {"readOnlyHint": true}}`),
	plainTool("crash", "Exit in the middle of the call."),
	plainTool("big", "Return 5 MB of text."),
	plainTool("slow", "Never answer; note a cancellation."),
	plainTool("deaf", "Stop reading stdin for a minute."),
	plainTool("progress", "Report progress three times."),
	plainTool("ask", "Ask the client roots/list, sampling and ping."),
	plainTool("elicit", "Ask the user where to deploy."),
	plainTool("change", "Add a tool and announce list_changed."),
	plainTool("fail", "Return an error result."),
	plainTool("env", "Return the cwd and FAKE_ENV."),
}

func plainTool(name, description string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"name": %q, "description": %q, "inputSchema": {"type": "object"}}`, name, description))
}

var deployForm = json.RawMessage(`{
	"mode": "form",
	"message": "Where should this deploy go?",
	"requestedSchema": {
		"type": "object",
		"properties": {
			"target": {"type": "string", "title": "Target", "enum": ["staging", "production"], "default": "staging"},
			"replicas": {"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 9, "default": 2},
			"note": {"type": "string", "title": "Note", "description": "Why now?", "minLength": 1}
		},
		"required": ["target", "note"]
	}
}`)

func main() {
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	if len(os.Args) > 2 {
		state = os.Args[2]
	}
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	}
	note("pid", strconv.Itoa(os.Getpid()))
	fmt.Fprintf(os.Stderr, "fake server %s starting\n", mode)
	// Owned by main; ends at stdin's end (the process ends with main).
	go func() {
		in := bufio.NewReader(os.Stdin)
		for range wanted {
			line, err := in.ReadBytes('\n')
			if len(line) == 0 && err != nil {
				close(lines)
				return
			}
			lines <- line
		}
	}()
	for {
		m, _ := read(0)
		handle(m)
	}
}

// read returns the client's next message; with a timeout, false when
// none came in time. At stdin's end the server exits (a stubborn one
// waits for its SIGKILL).
func read(timeout time.Duration) (obj, bool) {
	if len(held) > 0 {
		m := held[0]
		held = held[1:]
		return m, true
	}
	if !pending {
		wanted <- struct{}{}
		pending = true
	}
	var expired <-chan time.Time
	if timeout > 0 {
		expired = time.After(timeout)
	}
	select {
	case line, ok := <-lines:
		pending = false
		if !ok {
			if mode == "stubborn" {
				select {}
			}
			os.Exit(0)
		}
		var m obj
		if err := json.Unmarshal(line, &m); err != nil {
			fmt.Fprintln(os.Stderr, "fake server: bad line:", err)
			os.Exit(1)
		}
		return m, true
	case <-expired:
		return nil, false
	}
}

func send(msg obj) {
	b, err := json.Marshal(msg)
	if err != nil {
		panic(err)
	}
	out.Write(append(b, '\n'))
	out.Flush()
}

func note(name, line string) {
	if state == "" {
		return
	}
	f, err := os.OpenFile(filepath.Join(state, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake server:", err)
		os.Exit(1)
	}
	fmt.Fprintln(f, line)
	f.Close()
}

func result(msg obj, res any) {
	send(obj{"jsonrpc": "2.0", "id": msg["id"], "result": res})
}

func text(s string, isError bool) obj {
	return obj{"content": []obj{{"type": "text", "text": s}}, "isError": isError}
}

// ask sends the client a request and waits for its reply, holding what
// else comes in meanwhile.
func ask(id any, method string, params json.RawMessage) obj {
	if params == nil {
		params = json.RawMessage(`{}`)
	}
	send(obj{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	var others []obj
	defer func() { held = append(others, held...) }()
	for {
		m, _ := read(0)
		if _, isRequest := m["method"]; !isRequest && fmt.Sprint(m["id"]) == fmt.Sprint(id) {
			return m
		}
		others = append(others, m)
	}
}

func call(msg obj) {
	p, _ := msg["params"].(obj)
	name, _ := p["name"].(string)
	args, _ := p["arguments"].(obj)
	meta, _ := p["_meta"].(obj)
	token := meta["progressToken"]
	note("calls", name)
	switch name {
	case "echo":
		s, _ := args["text"].(string)
		result(msg, text(s, false))
	case "read_file":
		path, _ := args["path"].(string)
		b, err := os.ReadFile(path)
		if err != nil {
			result(msg, text(err.Error(), true))
		} else {
			result(msg, text(string(b), false))
		}
	case "crash":
		out.Flush()
		switch mode {
		case "orphan":
			// The child inherits SIGTERM ignored.
			signal.Ignore(syscall.SIGTERM)
			child := exec.Command("sleep", "600")
			if err := child.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "fake server:", err)
				os.Exit(1)
			}
			note("child", strconv.Itoa(child.Process.Pid))
			os.Exit(4)
		case "mute":
			syscall.Close(1)
			note("mute", "yes")
			time.Sleep(600 * time.Second)
		}
		os.Exit(3)
	case "big":
		result(msg, text(strings.Repeat("x", 5<<20), false))
	case "deaf":
		note("deaf", "yes")
		time.Sleep(60 * time.Second)
	case "slow":
		for {
			m, ok := read(60 * time.Second)
			if !ok {
				return
			}
			if m["method"] == "notifications/cancelled" {
				cp, _ := m["params"].(obj)
				note("cancelled", fmt.Sprintf("%s %s", asText(cp["requestId"]), asText(cp["reason"])))
				return
			}
			handle(m)
		}
	case "progress":
		for i := 1; i <= 3; i++ {
			send(obj{"jsonrpc": "2.0", "method": "notifications/progress",
				"params": obj{"progressToken": token, "progress": i, "total": 3, "message": fmt.Sprintf("step %d", i)}})
		}
		result(msg, text("done", false))
	case "ask":
		replies := []obj{ask("s1", "roots/list", nil), ask(2, "sampling/createMessage", nil), ask("s3", "ping", nil)}
		b, _ := json.Marshal(replies)
		result(msg, text(string(b), false))
	case "elicit":
		reply := ask("e1", "elicitation/create", deployForm)
		answer := reply["result"]
		if answer == nil {
			answer = reply["error"]
		}
		b, _ := json.Marshal(answer) // keys sorted
		result(msg, text(string(b), false))
	case "change":
		tools = append(tools, plainTool("added", "Appeared later."))
		send(obj{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
		result(msg, text("changed", false))
	case "fail":
		result(msg, text("it went wrong", true))
	case "env":
		cwd, _ := os.Getwd()
		result(msg, text(cwd+" "+os.Getenv("FAKE_ENV"), false))
	default:
		send(obj{"jsonrpc": "2.0", "id": msg["id"], "error": obj{"code": -32602, "message": "unknown tool " + asText(p["name"])}})
	}
}

func handle(msg obj) {
	method, ok := msg["method"].(string)
	if !ok {
		return // a reply nobody waits for
	}
	switch method {
	case "initialize":
		if mode == "noinit" {
			return
		}
		if mode == "slowinit" {
			time.Sleep(time.Second)
		}
		params, _ := msg["params"].(obj)
		version := params["protocolVersion"]
		caps, _ := json.Marshal(params["capabilities"]) // keys sorted
		note("caps", string(caps))
		if mode == "oldversion" {
			version = "1999-01-01"
		}
		result(msg, obj{"protocolVersion": version,
			"capabilities": obj{"tools": obj{"listChanged": true}, "logging": obj{}},
			"serverInfo":   obj{"name": "fake", "version": "1.0"}})
	case "notifications/initialized":
		send(obj{"jsonrpc": "2.0", "method": "notifications/message",
			"params": obj{"level": "info", "logger": "fake", "data": "hello from the fake server"}})
		if mode == "garbage" {
			for _, l := range []string{"Starting server on stdio...", "{not json", "[]",
				`{"jsonrpc":"1.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":999,"result":{}}`, ""} {
				out.WriteString(l + "\n")
			}
			out.Flush()
		}
	case "tools/list":
		params, _ := msg["params"].(obj)
		cursor, _ := params["cursor"].(string)
		if mode != "paged" {
			result(msg, obj{"tools": tools})
			return
		}
		start, _ := strconv.Atoi(cursor)
		page := obj{"tools": tools[start:min(start+2, len(tools))]}
		if start+2 < len(tools) {
			page["nextCursor"] = strconv.Itoa(start + 2)
		}
		result(msg, page)
	case "tools/call":
		call(msg)
	case "ping":
		result(msg, obj{})
	default:
		if _, isRequest := msg["id"]; isRequest {
			send(obj{"jsonrpc": "2.0", "id": msg["id"], "error": obj{"code": -32601, "message": "no method " + method}})
		}
	}
}

// asText spells a JSON value as the tests read it back, as the Python
// server did: a string as it is, null as None, a whole number without a
// fraction.
func asText(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case string:
		return v
	case float64:
		if v == float64(int64(v)) {
			return strconv.FormatInt(int64(v), 10)
		}
	}
	return fmt.Sprint(v)
}
