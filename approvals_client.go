package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// Approvals answered by a program: an rpc client that said hello with
// "approvals": true, or the reader of --json started with
// --approvals-stdin. Each ask becomes an approval_request event with its
// own approval_id; the run waits for the approve command that answers it,
// for at most the approval timeout. Everything but a well-formed allow or
// always for a question still waiting is a deny: an unknown id, a second
// answer, an unknown decision, silence.

// defaultApprovalTimeout is how long a run waits for a client's answer.
const defaultApprovalTimeout = 5 * time.Minute

// approvalRequestEvent is the approval_request event: the call, why it was
// asked about and who asked, the change an edit or write would make, and
// what "always" would allow (absent: always allows this call only).
type approvalRequestEvent struct {
	Type       EventType       `json:"type"`
	ApprovalID string          `json:"approval_id"`
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	Reason     string          `json:"reason"`
	Rule       string          `json:"rule"`
	Diff       string          `json:"diff,omitempty"`
	Always     string          `json:"always,omitempty"`
	TimeoutMS  int64           `json:"timeout_ms"`
	// Plan and Modes: a plan to approve (present_plan), and the modes
	// an approve's "mode" may choose to carry it out in.
	Plan  string   `json:"plan,omitempty"`
	Modes []string `json:"modes,omitempty"`
}

// approvalBroker sends questions to a client and matches its answers.
type approvalBroker struct {
	timeout time.Duration
	emit    func(approvalRequestEvent)

	mu      sync.Mutex
	issued  int
	pending map[string]chan approvalAnswer
}

func newApprovalBroker(timeout time.Duration, emit func(approvalRequestEvent)) *approvalBroker {
	if timeout <= 0 {
		timeout = defaultApprovalTimeout
	}
	return &approvalBroker{timeout: timeout, emit: emit, pending: map[string]chan approvalAnswer{}}
}

// ask is the approvalAsker: it sends the question and waits for its
// answer, the run's end or the timeout, the last two a deny.
func (b *approvalBroker) ask(ctx context.Context, q approvalQuestion) approvalAnswer {
	reply := make(chan approvalAnswer, 1)
	b.mu.Lock()
	b.issued++
	id := fmt.Sprintf("approval-%d", b.issued)
	b.pending[id] = reply
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
	}()
	args := q.Call.Args
	if !json.Valid(args) {
		args, _ = json.Marshal(string(args))
	}
	e := approvalRequestEvent{Type: EventApprovalRequest, ApprovalID: id, Tool: q.Call.Name, Args: args,
		Reason: q.Reason(), Rule: q.Askers(), Diff: q.Diff, Always: q.Offer.Describe(), TimeoutMS: b.timeout.Milliseconds()}
	if q.Plan != nil {
		e.Plan, e.Modes = q.Plan.Text, q.Plan.Modes
	}
	b.emit(e)
	timer := time.NewTimer(b.timeout)
	defer timer.Stop()
	select {
	case a := <-reply:
		return a
	case <-ctx.Done():
		return approvalAnswer{Decision: ApprovalDeny, By: "the client (the run ended before it answered)"}
	case <-timer.C:
		return approvalAnswer{Decision: ApprovalDeny, By: fmt.Sprintf("the client, which did not answer within %s", b.timeout)}
	}
}

// answer hands a client's answer to the question waiting for it (for a
// plan also the mode to carry it out in and the plan as the client edited
// it). An unknown decision still answers it, as a deny; the error says
// why.
func (b *approvalBroker) answer(id string, a approvalAnswer) error {
	decision := a.Decision
	b.mu.Lock()
	reply, ok := b.pending[id]
	delete(b.pending, id)
	b.mu.Unlock()
	if !ok {
		return fmt.Errorf("no approval %q is waiting for an answer (unknown, already answered, or timed out)", id)
	}
	switch decision {
	case ApprovalAllow, ApprovalAlways, ApprovalDeny:
		a.By = "the client"
		reply <- a
		return nil
	}
	reply <- approvalAnswer{Decision: ApprovalDeny, By: fmt.Sprintf("the client (an unknown decision %q counts as no)", decision)}
	return fmt.Errorf("unknown decision %q (allow, deny or always): the call was refused", decision)
}
