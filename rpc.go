package main

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// eventWriter writes JSON lines — events and RPC responses — through one
// lock with one Write per line, so lines from concurrent writers never
// interleave. It is the one encoder of the --json / rpc schema.
type eventWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func newEventWriter(w io.Writer) *eventWriter { return &eventWriter{w: w} }

// Write encodes v as one line. After the first write error (the reader went
// away) it stops writing and keeps reporting that error.
func (ew *eventWriter) Write(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	ew.mu.Lock()
	defer ew.mu.Unlock()
	if ew.err != nil {
		return ew.err
	}
	_, ew.err = ew.w.Write(buf.Bytes())
	return ew.err
}
