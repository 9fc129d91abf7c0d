// gobench is a compiled extension for the benchmarks: it allows every
// intercepted tool call at once, counts turn_start events and reports the
// count in a notify when a turn_end arrives.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
)

func main() {
	w := bufio.NewWriter(os.Stdout)
	send := func(s string) {
		w.WriteString(s)
		w.WriteByte('\n')
		w.Flush()
	}
	send(`{"type":"hello","name":"gobench","version":"1"}`)
	send(`{"type":"subscribe","events":["turn_start","turn_end"],"intercept":["tool_call"]}`)
	send(`{"type":"ready"}`)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 8<<20)
	count := 0
	for in.Scan() {
		var f struct{ Type, ID, Event string }
		if err := json.Unmarshal(in.Bytes(), &f); err != nil {
			fmt.Fprintln(os.Stderr, "bad frame:", err)
			continue
		}
		switch {
		case f.Type == "event_intercept":
			send(`{"type":"event_intercept_response","id":` + strconv.Quote(f.ID) + `}`)
		case f.Type == "event" && f.Event == "turn_start":
			count++
		case f.Type == "event" && f.Event == "turn_end":
			send(`{"type":"notify","level":"info","message":"` + strconv.Itoa(count) + `"}`)
			count = 0
		case f.Type == "shutdown":
			send(`{"type":"shutdown_ack"}`)
			return
		}
	}
}
