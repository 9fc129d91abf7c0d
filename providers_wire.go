package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
)

// A request's body is its frame (model, tools, limits) with the
// transcript spliced in. Each message's items are encoded once per session
// (Message.wireEncoded); each provider keeps what it laid out of the
// transcript it was sent last (wireLog), and a request adds to that only
// the messages that are new, so a session's 1,000th request costs what
// its first did, not a thousand encodings nor a thousand pieces.

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
// encodings kept, without copying them: the request sends each piece as it
// is (wireBody).
type jsonList struct {
	parts  [][][]byte // pieces before these, shared with a wireLog
	pieces [][]byte
	items  int // items of the array
	inside int // items of the object open, when one is (open)
	size   int
}

var (
	jsonComma = []byte(",")
	jsonOpen  = []byte("[")
	jsonClose = []byte("]")
)

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

// adopt appends the items of a log's list as they are now, sharing its
// pieces: the log only ever appends to them, past what was adopted.
func (l *jsonList) adopt(log *jsonList) {
	if log.items == 0 {
		return
	}
	if l.items > 0 {
		l.piece(jsonComma)
	}
	n := len(log.pieces)
	l.parts = append(l.parts, l.pieces, log.pieces[:n:n])
	l.pieces = nil
	l.items += log.items
	l.size += log.size
}

// splice is frame with l as the value of its member "key":null, the
// encoding of a request whose field key was left nil; with no items it
// stays null, as a nil slice encodes. Only a member can hold those bytes:
// inside a JSON string every quote is escaped.
func (l *jsonList) splice(frame []byte, key string) (wireBody, error) {
	if l.items == 0 {
		return wireBody{parts: [][][]byte{{frame}}, size: len(frame)}, nil
	}
	member := []byte(`"` + key + `":null`)
	i := bytes.Index(frame, member)
	if i < 0 {
		return wireBody{}, fmt.Errorf("request has no %q member to fill", key)
	}
	at := i + len(member) - len("null")
	parts := append([][][]byte{{frame[:at], jsonOpen}}, l.parts...)
	parts = append(parts, l.pieces, [][]byte{jsonClose, frame[at+len("null"):]})
	return wireBody{parts: parts, size: len(frame) - len("null") + 2 + l.size}, nil
}

// wireBody is a request's JSON as the pieces it was put together from,
// sent one after the other and never joined: a request copies the
// conversation only into the socket, and leaves no garbage the size of the
// conversation behind.
type wireBody struct {
	parts [][][]byte
	size  int
}

// reader reads the body from its start; each attempt at a request gets
// one of its own.
func (b wireBody) reader() io.Reader { return &piecesReader{parts: b.parts} }

// piecesReader reads pieces it shares with the body, other readers and a
// wireLog, so it keeps its place instead of cutting them.
type piecesReader struct {
	parts       [][][]byte
	piece, read int // in parts[0]; bytes of that piece read
}

func (r *piecesReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && len(r.parts) > 0 {
		if r.piece == len(r.parts[0]) {
			r.parts, r.piece = r.parts[1:], 0
			continue
		}
		c := copy(p[n:], r.parts[0][r.piece][r.read:])
		n += c
		if r.read += c; r.read == len(r.parts[0][r.piece]) {
			r.piece, r.read = r.piece+1, 0
		}
	}
	if n == 0 && len(r.parts) == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// wireLog is what a provider laid out of the transcript it was sent last,
// in one format: the pieces of its first messages, up to where no later
// request lays the transcript out differently while it only grows (for
// Anthropic, the turn before the last two user turns, which carry the
// cache breakpoints). A request whose transcript starts with those
// messages adopts the pieces and lays out the rest; any other request
// starts the log afresh. Only messages of the agent's transcript are
// logged: they carry a messageWire, which names them.
type wireLog struct {
	mu     sync.Mutex
	format string
	msgs   []loggedMessage
	list   jsonList
	// lastRole is the role of the last turn logged, for formats that merge
	// messages of one role into a turn (Anthropic): a transcript going on
	// with that role would merge into a turn the log has closed.
	lastRole Role
}

type loggedMessage struct {
	wire    *messageWire
	content []Block
}

// resume is how many of msgs the log covers, after starting it afresh
// when msgs does not start with its messages or the format changed. The
// caller holds mu.
func (w *wireLog) resume(format string, msgs []Message) int {
	if w.format == format && len(w.msgs) <= len(msgs) && w.covers(msgs) {
		return len(w.msgs)
	}
	w.restart(format)
	return 0
}

// restart empties the log into a new list, not the old one cut: requests
// still sending share that.
func (w *wireLog) restart(format string) {
	w.format, w.msgs, w.list, w.lastRole = format, nil, jsonList{}, ""
}

func (w *wireLog) covers(msgs []Message) bool {
	for i, l := range w.msgs {
		if m := msgs[i]; m.wire != l.wire || !sameBlocks(m.Content, l.content) {
			return false
		}
	}
	return true
}

// loggable says whether a log may keep m's pieces: only a message of the
// agent's transcript, which is never changed in place.
func loggable(m Message) bool { return m.wire != nil }

// note records that the pieces of m are in the list.
func (w *wireLog) note(m Message) {
	w.msgs = append(w.msgs, loggedMessage{m.wire, m.Content})
}

// addEach lays msgs out into list for a format that encodes each message
// on its own, whatever comes after it: the log takes every message it can
// and list adopts the log's pieces, then gets the messages after the
// first one the log cannot take. encode makes the items of msgs[i].
func (w *wireLog) addEach(list *jsonList, format string, msgs []Message, encode func(i int, m Message) wireEncoding) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := w.resume(format, msgs)
	encoded := func(i int) wireEncoding {
		return msgs[i].wireEncoded(format, func(m Message) wireEncoding { return encode(i, m) })
	}
	for ; i < len(msgs) && loggable(msgs[i]); i++ {
		e := encoded(i)
		if e.err != nil {
			return e.err
		}
		w.list.add(e.data)
		w.note(msgs[i])
	}
	list.adopt(&w.list)
	for ; i < len(msgs); i++ {
		e := encoded(i)
		if e.err != nil {
			return e.err
		}
		list.add(e.data)
	}
	return nil
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
