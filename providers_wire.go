package main

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// A request's body is its frame (model, tools, limits) with the
// transcript spliced in: each message's items are encoded once per session
// (Message.wireEncoded) and the request joins them, so a session's 1,000th
// request costs what its first did, not a thousand encodings.

// jsonItems is the encoding of a slice without its brackets: its items,
// comma-separated, to be joined with other messages' items.
func jsonItems[T any](items []T) ([]byte, error) {
	if len(items) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	return b[1 : len(b)-1], nil
}

// joinItems appends items to out, comma-separated, skipping empty ones.
func joinItems(out []byte, items [][]byte) []byte {
	first := true
	for _, it := range items {
		if len(it) == 0 {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		out = append(out, it...)
		first = false
	}
	return out
}

// spliceJSON puts value in place of the member "key":null of frame, the
// encoding of a request whose field key was left nil. Only a member can
// hold those bytes: inside a JSON string every quote is escaped.
func spliceJSON(frame []byte, key string, value []byte) ([]byte, error) {
	member := []byte(`"` + key + `":null`)
	i := bytes.Index(frame, member)
	if i < 0 {
		return nil, fmt.Errorf("request has no %q member to fill", key)
	}
	at := i + len(member) - len("null")
	out := make([]byte, 0, len(frame)-len("null")+len(value))
	out = append(out, frame[:at]...)
	out = append(out, value...)
	return append(out, frame[at+len("null"):]...), nil
}

// spliceItems fills the array member key of frame with items, joined; it
// stays null when every item is empty, as a nil slice encodes.
func spliceItems(frame []byte, key string, items [][]byte) ([]byte, error) {
	size := 2
	for _, it := range items {
		size += len(it) + 1
	}
	array := joinItems(append(make([]byte, 0, size), '['), items)
	if len(array) == 1 {
		return frame, nil
	}
	return spliceJSON(frame, key, append(array, ']'))
}
