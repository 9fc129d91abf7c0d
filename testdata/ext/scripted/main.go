// scripted is a test extension whose behaviour a JSON spec (argv[1])
// describes. It is Go, not Python, for its start: the tests start it
// about seventy times, and a Python start costs 41 ms of CPU against this
// one's 5 ms.
//
// Spec keys (all optional):
//
//	name          hello name (default "scripted")
//	first_line    a raw first line instead of hello
//	wait_ack      read hello_ack before sending frames (default: send at once)
//	big_line      bytes of one oversize notify frame sent before frames
//	frames        frames sent after hello
//	ready         send ready after frames (default true)
//	record        file that gets every frame received, one JSON per line
//	intercept     {event: [rule, ...]}; the first rule whose "match" is a
//	              substring of the frame's line as zot sent it applies:
//	                reply {..}  fields of event_intercept_response
//	                delay s     sleep first
//	                exit n      exit instead of answering
//	                exit_after n  answer, then exit at once
//	                raw "..."   answer with this line ({id} is the request's id)
//	                silent      do not answer
//	                late        answer only when the next frame comes in
//	                            (after the host gave up waiting for it)
//	tools         {name: {text, echo, image, is_error, exit, delay, raw}}
//	commands      {name: {reply fields; "{args}" in strings is replaced}}
//	panels        answer panel_key with panel_render, close on the key q (rune "q")
//	shutdown      "ack" (default) or "ignore"
//	env_file      file that gets the process's environment as one JSON object,
//	              written before hello
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

type obj = map[string]any

var (
	spec = obj{}
	out  = bufio.NewWriter(os.Stdout)
	late []obj
)

func main() {
	specJSON := []byte("{}")
	if len(os.Args) > 1 {
		specJSON = []byte(os.Args[1])
	}
	if err := json.Unmarshal(specJSON, &spec); err != nil {
		fmt.Fprintln(os.Stderr, "scripted: spec:", err)
		os.Exit(1)
	}
	if path, _ := spec["env_file"].(string); path != "" {
		env := obj{}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		b, _ := json.Marshal(env)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "scripted:", err)
			os.Exit(1)
		}
	}
	if first, ok := spec["first_line"]; ok {
		emit(first)
	} else {
		emit(obj{"type": "hello", "name": or(spec["name"], "scripted"), "version": "0.0.1",
			"capabilities": []string{"commands", "tools", "events"}})
	}
	in := bufio.NewReader(os.Stdin)
	if spec["wait_ack"] == true {
		line, _ := in.ReadBytes('\n')
		record(line)
	}
	if n, ok := spec["big_line"].(float64); ok && n > 0 {
		emit(`{"type":"notify","level":"info","message":"` + strings.Repeat("a", int(n)) + `"}`)
	}
	// Frames go out as the spec has them, their keys in its order.
	var verbatim struct{ Frames []json.RawMessage }
	json.Unmarshal(specJSON, &verbatim)
	for _, f := range verbatim.Frames {
		emit(f)
	}
	if spec["ready"] != false {
		emit(obj{"type": "ready"})
	}
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 && !serve(line) {
			return
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "scripted:", err)
			os.Exit(1)
		}
	}
}

// serve answers one frame; false when the extension is to end.
func serve(line []byte) bool {
	var msg obj
	if json.Unmarshal(line, &msg) != nil {
		return true
	}
	record(line)
	for _, answer := range late {
		emit(answer)
	}
	late = nil
	switch msg["type"] {
	case "event_intercept":
		event, _ := msg["event"].(string)
		rules, _ := field(spec, "intercept")[event].([]any)
		for _, r := range rules {
			rule, _ := r.(obj)
			if match, _ := rule["match"].(string); strings.Contains(string(line), match) {
				answer := obj{}
				for k, v := range field(rule, "reply") {
					answer[k] = v
				}
				answer["type"], answer["id"] = "event_intercept_response", msg["id"]
				act(rule, answer)
				return true
			}
		}
		emit(obj{"type": "event_intercept_response", "id": msg["id"]})
	case "tool_call":
		name, _ := msg["name"].(string)
		rule, _ := field(spec, "tools")[name].(obj)
		content := []any{obj{"type": "text", "text": or(rule["text"], "ok")}}
		if rule["echo"] == true {
			args, _ := json.Marshal(msg["args"]) // keys sorted
			content = []any{obj{"type": "text", "text": "args=" + string(args)}}
		}
		if rule["image"] == true {
			content = append(content, obj{"type": "image", "mime_type": "image/png",
				"data": base64.StdEncoding.EncodeToString([]byte("\x89PNG fake"))})
		}
		act(rule, obj{"type": "tool_result", "id": msg["id"], "content": content, "is_error": rule["is_error"] == true})
	case "command_invoked":
		name, _ := msg["name"].(string)
		rule, ok := field(spec, "commands")[name].(obj)
		if !ok {
			rule = obj{"action": "noop"}
		}
		args, _ := msg["args"].(string)
		answer := obj{}
		for k, v := range rule {
			switch k {
			case "delay", "exit", "silent", "raw":
			default:
				answer[k] = substitute(v, args)
			}
		}
		answer["type"], answer["id"] = "command_response", msg["id"]
		act(rule, answer)
	case "panel_key":
		if spec["panels"] == nil || spec["panels"] == false {
			return true
		}
		text, _ := msg["text"].(string)
		if msg["key"] == "rune" && text == "q" {
			emit(obj{"type": "panel_close", "panel_id": msg["panel_id"]})
		} else {
			emit(obj{"type": "panel_render", "panel_id": msg["panel_id"], "title": "keys",
				"lines": []string{fmt.Sprintf("key=%v text=%s", msg["key"], text)}})
		}
	case "shutdown":
		if or(spec["shutdown"], "ack") == "ack" {
			emit(obj{"type": "shutdown_ack"})
			return false
		}
	}
	return true
}

// act answers by rule: later, after a delay, with a raw line, not at
// all, or by exiting.
func act(rule obj, answer obj) {
	if rule["late"] == true {
		late = append(late, answer)
		return
	}
	if delay, ok := rule["delay"].(float64); ok {
		time.Sleep(time.Duration(delay * float64(time.Second)))
	}
	if code, ok := rule["exit"].(float64); ok {
		out.Flush()
		os.Exit(int(code))
	}
	if rule["silent"] == true {
		return
	}
	if raw, ok := rule["raw"].(string); ok {
		id, _ := answer["id"].(string)
		emit(strings.ReplaceAll(raw, "{id}", id))
	} else {
		emit(answer)
	}
	if code, ok := rule["exit_after"].(float64); ok {
		out.Flush()
		os.Exit(int(code))
	}
}

// emit writes a frame: a string as it is, anything else as JSON.
func emit(frame any) {
	if raw, ok := frame.(json.RawMessage); ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			frame = s
		} else {
			var b bytes.Buffer
			json.Compact(&b, raw)
			frame = b.String()
		}
	}
	if s, ok := frame.(string); ok {
		out.WriteString(s)
	} else {
		b, err := json.Marshal(frame)
		if err != nil {
			panic(err)
		}
		out.Write(b)
	}
	out.WriteByte('\n')
	out.Flush()
}

// record appends a frame received to the spec's record file.
func record(line []byte) {
	path, _ := spec["record"].(string)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scripted:", err)
		os.Exit(1)
	}
	f.Write(append([]byte(strings.TrimRight(string(line), "\r\n")), '\n'))
	f.Close()
}

// substitute puts args for "{args}" in v's strings, in maps too.
func substitute(v any, args string) any {
	switch v := v.(type) {
	case string:
		return strings.ReplaceAll(v, "{args}", args)
	case obj:
		m := obj{}
		for k, x := range v {
			m[k] = substitute(x, args)
		}
		return m
	}
	return v
}

func field(o obj, key string) obj {
	m, _ := o[key].(obj)
	return m
}

func or(v any, fallback string) any {
	if v == nil {
		return fallback
	}
	return v
}
