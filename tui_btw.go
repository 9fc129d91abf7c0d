package main

import (
	"context"
	"fmt"
	"strings"
)

// /btw: a side question. An overlay asks the model with the conversation
// as it stood when the overlay opened, plus the side exchange so far;
// nothing of it is added to the conversation or the session file, and the
// main thread never sees it. It works while the agent works too: the side
// call is a provider call of its own on a copy of the messages, and never
// touches the agent.

// btwInstruction is added to the system prompt of a side question.
const btwInstruction = "\n\nThe user is asking a side question about the conversation above. Answer it briefly and directly from what you already know. Do not call tools: none will run. This exchange is not part of the conversation and will not be remembered in it."

// btwDialog is the overlay: the exchange, the answer streaming, and an
// editor for the next question.
type btwDialog struct {
	frozen   []Message // the conversation when the overlay opened
	exchange []Message // questions and answers so far, text only
	ed       editor

	asking   bool
	seq      int // the side call in flight; replies of older ones are dropped
	cancel   context.CancelFunc
	question string
	answer   strings.Builder
	note     string // how the last call ended, when not with an answer
	usage    Usage
	cost     float64
	back     int // rows scrolled up from the end

	version   int      // bumped on every change to what layout shows
	rows      []string // the exchange laid out at rowsWidth, for version rowsOf
	rowsWidth int
	rowsOf    int
}

// Messages from a side call to the UI loop.
type (
	msgBtwDelta struct {
		d     *btwDialog
		seq   int
		delta string
	}
	msgBtwDone struct {
		d     *btwDialog
		seq   int
		reply Reply
		err   error
	}
)

func (t *TUI) cmdBtw(args string) {
	d := &btwDialog{frozen: sideContext(t.agent.Messages())}
	d.ed.histAt = -1
	t.pushDialog(d)
	if strings.TrimSpace(args) != "" {
		d.ask(t, args)
	}
}

// sideContext is the conversation as a side question may follow it: an
// assistant message whose tool calls have no results yet (the agent is
// running them) is left out, since a provider refuses calls without
// results.
func sideContext(msgs []Message) []Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == RoleAssistant && len(msgs[n-1].ToolCalls()) > 0 {
		msgs = msgs[:n-1]
	}
	return msgs
}

// ask sends a question on its own goroutine.
func (d *btwDialog) ask(t *TUI, question string) {
	question = strings.TrimSpace(question)
	if question == "" || d.asking {
		return
	}
	d.version++
	prov := t.agent.Provider
	if t.missingKey != "" || prov == nil {
		d.note = "no provider to ask: " + t.missingKey + " (/login adds a key)"
		return
	}
	d.asking, d.question, d.note, d.back = true, question, "", 0
	d.answer.Reset()
	d.seq++
	seq := d.seq
	msgs := append(append(append([]Message(nil), d.frozen...), d.exchange...),
		Message{Role: RoleUser, Content: []Block{TextBlock(question)}})
	req := Request{Model: t.agent.CurrentModel(), System: t.agent.System + btwInstruction, Messages: msgs, Tools: t.agent.Tools.Specs()}
	ctx, cancel := context.WithCancel(t.ctx)
	d.cancel = cancel
	// Owner: the dialog, which cancels it on esc or close; the TUI's
	// context ends it on exit. It ends when the provider call returns.
	t.background(func() {
		defer cancel()
		reply, err := prov.Stream(ctx, req, func(se StreamEvent) {
			if se.Type == "text" {
				t.post(msgBtwDelta{d, seq, se.Delta})
			}
		})
		t.post(msgBtwDone{d, seq, reply, err})
	})
}

// stop cancels the side call in flight.
func (d *btwDialog) stop() {
	if d.asking {
		d.cancel()
		d.version++
		d.asking, d.seq = false, d.seq+1
		d.note = "cancelled"
		d.question = ""
	}
}

func (d *btwDialog) delta(seq int, text string) {
	if seq == d.seq && d.asking {
		d.version++
		d.answer.WriteString(text)
	}
}

// done ends a side call: a whole answer joins the exchange; a failed one
// leaves only its error. The model's tool calls are dropped (none run).
func (d *btwDialog) done(t *TUI, seq int, reply Reply, err error) {
	if seq != d.seq || !d.asking {
		return
	}
	d.asking, d.cancel = false, nil
	d.version++
	model := t.agent.CurrentModel()
	d.usage.Add(reply.Usage)
	d.cost += lookupModel(t.provider, model).Cost(reply.Usage)
	if err != nil {
		d.note = "✗ " + err.Error()
		d.question = ""
		return
	}
	var text strings.Builder
	var tools []string
	for _, b := range reply.Content {
		switch b.Type {
		case BlockText:
			text.WriteString(b.Text)
		case BlockToolCall:
			tools = append(tools, b.Name)
		}
	}
	answer := text.String()
	if len(tools) > 0 {
		answer += fmt.Sprintf("\n\n(the model asked to run %s; side questions run no tools)", joinNames(tools, ", "))
	}
	d.exchange = append(d.exchange,
		Message{Role: RoleUser, Content: []Block{TextBlock(d.question)}},
		Message{Role: RoleAssistant, Content: []Block{TextBlock(answer)}})
	d.question = ""
	d.answer.Reset()
}

func (d *btwDialog) key(t *TUI, k tuiKey) bool {
	switch {
	case k.code == keyEsc:
		if d.asking {
			d.stop()
			return false
		}
		return true
	case k.code == keyEnter && k.mod == 0:
		if !d.asking {
			d.ask(t, d.ed.text())
			if d.asking {
				d.ed.reset()
			}
		}
	case k.code == keyPgUp:
		d.back += max(d.room(t)-1, 1)
	case k.code == keyPgDn:
		d.back = max(d.back-max(d.room(t)-1, 1), 0)
	default:
		d.ed.key(k, t.width)
	}
	return false
}

// room is how many rows of the exchange fit beside the main live region's
// rule and status bar, the box's edges and the editor.
func (d *btwDialog) room(t *TUI) int { return max(t.height-10, 3) }

// layout lays out the exchange for the box: questions after "›", answers
// as markdown, the answer streaming, and how the last call ended.
func (d *btwDialog) layout(width int) []string {
	var rows []string
	q := func(text string) {
		rows = append(rows, plainRows(drawText(text), width, sBold, []span{{editorPrompt, fgCyan | sBold}}, []span{{"  ", 0}})...)
	}
	for i := 0; i+1 < len(d.exchange); i += 2 {
		q(d.exchange[i].Text())
		rows = append(rows, renderMarkdown(d.exchange[i+1].Text(), width, 0)...)
		rows = append(rows, "")
	}
	if d.question != "" {
		q(d.question)
		if d.answer.Len() > 0 {
			rows = append(rows, renderMarkdown(d.answer.String(), width, 0)...)
		}
	}
	if d.note != "" {
		rows = append(rows, plainRows(drawText(d.note), width, fgYellow, nil, nil)...)
	}
	if len(rows) == 0 {
		rows = append(rows, fitLine(width, span{"Ask about the conversation; nothing here is added to it.", sDim}))
	}
	return rows
}

func (d *btwDialog) view(t *TUI, width int) ([]string, int, int) {
	inner := boxInner(width)
	if d.rows == nil || d.rowsWidth != width || d.rowsOf != d.version {
		d.rows, d.rowsWidth, d.rowsOf = d.layout(inner), width, d.version
	}
	rows := d.rows
	room := d.room(t)
	d.back = min(d.back, max(len(rows)-room, 0))
	end := len(rows) - d.back
	body := rows[max(end-room, 0):end]
	if d.asking && d.answer.Len() == 0 {
		body = append(body[:len(body):len(body)], fitLine(inner, span{t.spinner() + " asking " + t.provider + "/" + t.agent.CurrentModel() + "…", fgCyan}))
	}
	footer := "enter ask · esc close"
	if d.asking {
		footer = "esc cancel"
	}
	if len(rows) > room {
		footer += " · pgup pgdn scroll"
	}
	if d.usage.Input+d.usage.Output > 0 {
		footer += fmt.Sprintf(" · side: ↑%s ↓%s", tokenCount(d.usage.ContextTokens()), tokenCount(d.usage.Output))
		if lookupModel(t.provider, t.agent.CurrentModel()).Known {
			footer += fmt.Sprintf(" $%.4f", d.cost)
		}
	}
	out := dialogBox(width, "btw: a side question (not added to the conversation)", footer, body)
	placeholder := "a question about the conversation"
	if d.asking {
		placeholder = "type the next question · esc cancels this one"
	}
	erows, er, ec := d.ed.view(width, 3, placeholder)
	return append(out, erows...), len(out) + er, ec
}
