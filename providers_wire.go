package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
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

// jsonList is the contents of a JSON array being put together from the
// encodings kept, without copying them: the request copies each piece once,
// into its body.
type jsonList struct {
	pieces [][]byte
	items  int // items of the array
	inside int // items of the object open, when one is (open)
	size   int
}

var jsonComma = []byte(",")

// newJSONList makes a list with room for n pieces.
func newJSONList(n int) jsonList { return jsonList{pieces: make([][]byte, 0, n)} }

func (l *jsonList) piece(p []byte) {
	l.pieces = append(l.pieces, p)
	l.size += len(p)
}

// add appends one item; an item without bytes is none.
func (l *jsonList) add(item []byte) {
	if len(item) == 0 {
		return
	}
	if l.items > 0 {
		l.piece(jsonComma)
	}
	l.piece(item)
	l.items++
}

// open starts an item that holds a list of its own (head ends with the
// list's opening bracket); inner adds to that list, close ends the item.
func (l *jsonList) open(head []byte) {
	l.add(head)
	l.inside = 0
}

func (l *jsonList) inner(item []byte) {
	if len(item) == 0 {
		return
	}
	if l.inside > 0 {
		l.piece(jsonComma)
	}
	l.piece(item)
	l.inside++
}

func (l *jsonList) close(tail []byte) { l.piece(tail) }

// splice is frame with l as the value of its member "key":null, the
// encoding of a request whose field key was left nil; with no items it
// stays null, as a nil slice encodes. Only a member can hold those bytes:
// inside a JSON string every quote is escaped.
func (l *jsonList) splice(frame []byte, key string) ([]byte, error) {
	if l.items == 0 {
		return frame, nil
	}
	member := []byte(`"` + key + `":null`)
	i := bytes.Index(frame, member)
	if i < 0 {
		return nil, fmt.Errorf("request has no %q member to fill", key)
	}
	at := i + len(member) - len("null")
	out := make([]byte, 0, len(frame)-len("null")+l.size+2)
	out = append(append(out, frame[:at]...), '[')
	for _, p := range l.pieces {
		out = append(out, p...)
	}
	out = append(out, ']')
	return append(out, frame[at+len("null"):]...), nil
}

// sortedTools is the tools in name order: the same tools in the same order
// every request, so the prompt cache keeps the prefix they are part of.
func sortedTools(tools []ToolSpec) []ToolSpec {
	out := append([]ToolSpec(nil), tools...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// oaiTools is the tools as Chat Completions (and ollama's /api/chat) take
// them.
func oaiTools(tools []ToolSpec) []oaiTool {
	var out []oaiTool
	for _, t := range sortedTools(tools) {
		var ot oaiTool
		ot.Type = "function"
		ot.Function.Name, ot.Function.Description, ot.Function.Parameters = t.Name, t.Description, schemaOrEmpty(t.Schema)
		out = append(out, ot)
	}
	return out
}
