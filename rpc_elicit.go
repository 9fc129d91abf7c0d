package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// MCP servers' questions answered by a program: an rpc client that said
// hello with "elicitation": true, or the reader of --json started with
// --elicitation-stdin. Each question becomes an elicitation_request event
// with its own elicitation_id; the run waits for the elicit command that
// answers it, for at most the approval timeout, then the server is told
// the question was cancelled. An answer the form does not allow is
// refused with an error naming the field, and the question goes on
// waiting for a better one.

// elicitationRequestEvent is the elicitation_request event: the server
// that asks, the mode, its message, and the form's fields or the URL.
type elicitationRequestEvent struct {
	Type          EventType     `json:"type"`
	ElicitationID string        `json:"elicitation_id"`
	Server        string        `json:"server"`
	Mode          ElicitMode    `json:"mode"`
	Message       string        `json:"message"`
	Fields        []ElicitField `json:"fields,omitempty"`
	URL           string        `json:"url,omitempty"`
	TimeoutMS     int64         `json:"timeout_ms"`
}

// elicitBroker sends questions to a client and matches its answers.
type elicitBroker struct {
	timeout time.Duration
	emit    func(elicitationRequestEvent)

	mu      sync.Mutex
	issued  int
	pending map[string]*elicitWait
}

type elicitWait struct {
	q     Elicitation
	reply chan ElicitAnswer // buffered: one answer
}

func newElicitBroker(timeout time.Duration, emit func(elicitationRequestEvent)) *elicitBroker {
	if timeout <= 0 {
		timeout = defaultApprovalTimeout
	}
	return &elicitBroker{timeout: timeout, emit: emit, pending: map[string]*elicitWait{}}
}

// ask is an Elicitor's Ask: it sends the question and waits for its
// answer, the question's end or the timeout, the last two a cancel.
func (b *elicitBroker) ask(ctx context.Context, q Elicitation) ElicitAnswer {
	w := &elicitWait{q: q, reply: make(chan ElicitAnswer, 1)}
	b.mu.Lock()
	b.issued++
	id := fmt.Sprintf("elicitation-%d", b.issued)
	b.pending[id] = w
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
	}()
	b.emit(elicitationRequestEvent{Type: EventElicitationRequest, ElicitationID: id, Server: q.Server, Mode: q.Mode,
		Message: q.Message, Fields: q.Fields, URL: q.URL, TimeoutMS: b.timeout.Milliseconds()})
	timer := time.NewTimer(b.timeout)
	defer timer.Stop()
	select {
	case a := <-w.reply:
		return a
	case <-ctx.Done():
		return ElicitAnswer{Action: ElicitCancel, Why: "(the question ended before the client answered)"}
	case <-timer.C:
		return ElicitAnswer{Action: ElicitCancel, Why: fmt.Sprintf("(the client did not answer within %s)", b.timeout)}
	}
}

// answer hands a client's answer to the question waiting for it. content,
// with accept in form mode, is checked against the form; an error leaves
// the question waiting.
func (b *elicitBroker) answer(id string, action ElicitAction, content json.RawMessage) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, ok := b.pending[id]
	if !ok {
		return fmt.Errorf("no elicitation %q is waiting for an answer (unknown, already answered, or timed out)", id)
	}
	a := ElicitAnswer{Action: action}
	switch action {
	case ElicitAccept:
		if w.q.Mode == ElicitForm {
			if err := decodeStrictJSON(orEmptyObject(content), &a.Content); err != nil {
				return fmt.Errorf(`"content" must be a JSON object of the form's fields: %v`, err)
			}
			if _, err := w.q.Complete(a.Content); err != nil {
				return fmt.Errorf("the answer does not fit the form: %v (the question still waits)", err)
			}
		}
	case ElicitDecline, ElicitCancel:
	default:
		return fmt.Errorf("unknown action %q (accept, decline or cancel); the question still waits", action)
	}
	delete(b.pending, id)
	w.reply <- a
	return nil
}

func orEmptyObject(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`)
	}
	return raw
}
