package main

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The TUI's answer to an MCP server's question (elicitation): a dialog
// that names the server and shows its message, then either a form — the
// server's fields with their defaults filled in, each checked as it is
// left and all again on submit — or the URL it asks the user to open,
// whole, with its host picked out. zot opens nothing itself. esc cancels;
// decline is an explicit no.

// elicitReq is a question waiting for the user.
type elicitReq struct {
	ctx   context.Context
	q     Elicitation
	reply chan ElicitAnswer // buffered: one answer
}

// Elicit is the TUI's Elicitor Ask: it shows the question and waits for
// the answer, a cancel when the question ends first (the server withdrew
// it, the prompt was stopped) or zot exits.
func (t *TUI) Elicit(ctx context.Context, q Elicitation) ElicitAnswer {
	req := &elicitReq{ctx: ctx, q: q, reply: make(chan ElicitAnswer, 1)}
	t.post(msgElicit{req})
	select {
	case a := <-req.reply:
		return a
	case <-ctx.Done():
		t.post(msgElicitGone{req})
		return ElicitAnswer{Action: ElicitCancel, Why: "(the question ended before the user answered)"}
	case <-t.ctx.Done():
		return ElicitAnswer{Action: ElicitCancel, Why: "(zot exited)"}
	}
}

type (
	msgElicit     struct{ req *elicitReq }
	msgElicitGone struct{ req *elicitReq }
)

// elicitButtons are the answers the last row offers, in order.
var elicitButtons = []struct {
	action    ElicitAction
	form, url string
	key       rune
}{
	{ElicitAccept, "submit", "accept: I will open it", 's'},
	{ElicitDecline, "decline", "decline", 'd'},
	{ElicitCancel, "cancel", "cancel", 'c'},
}

// elicitDialog is the question's dialog. sel is the field being edited,
// len(fields) the row of buttons.
type elicitDialog struct {
	req   *elicitReq
	sel   int
	btn   int
	text  [][]rune // per field: what is typed (text and number fields)
	pick  []int    // per field: the choice (-1: none), or for a list the option under the cursor
	on    [][]bool // per list field: the options chosen
	flag  []int    // per boolean field: -1 unset, 0 no, 1 yes
	errs  []string // per field: what is wrong with it
	sent  bool
	armAt time.Time
}

func newElicitDialog(req *elicitReq) *elicitDialog {
	n := len(req.q.Fields)
	d := &elicitDialog{req: req, text: make([][]rune, n), pick: make([]int, n), on: make([][]bool, n), flag: make([]int, n), errs: make([]string, n)}
	for i, f := range req.q.Fields {
		d.pick[i], d.flag[i] = -1, -1
		switch {
		case f.Type == "boolean":
			if b, ok := f.Default.(bool); ok {
				d.flag[i] = map[bool]int{false: 0, true: 1}[b]
			}
		case f.Multiple:
			d.on[i] = make([]bool, len(f.Options))
			d.pick[i] = 0
			if vs, ok := f.Default.([]string); ok {
				for j, o := range f.Options {
					d.on[i][j] = slices.Contains(vs, o.Value)
				}
			}
		case len(f.Options) > 0:
			for j, o := range f.Options {
				if o.Value == f.Default {
					d.pick[i] = j
				}
			}
		default:
			d.text[i] = []rune(f.Text(f.Default))
		}
	}
	if n == 0 {
		d.sel = 0 // the buttons
	}
	return d
}

// value is field i's value as the form holds it: nil when left empty.
func (d *elicitDialog) value(i int) (any, error) {
	f := d.req.q.Fields[i]
	switch {
	case f.Type == "boolean":
		if d.flag[i] < 0 {
			return nil, nil
		}
		return d.flag[i] == 1, nil
	case f.Multiple:
		picked := []string{}
		for j, on := range d.on[i] {
			if on {
				picked = append(picked, f.Options[j].Value)
			}
		}
		return f.Check(picked)
	case len(f.Options) > 0:
		if d.pick[i] < 0 {
			return nil, nil
		}
		return f.Options[d.pick[i]].Value, nil
	}
	return f.Parse(string(d.text[i]))
}

// check notes what is wrong with field i, if anything.
func (d *elicitDialog) check(i int) {
	d.errs[i] = ""
	if v, err := d.value(i); err != nil {
		d.errs[i] = err.Error()
	} else if v == nil && d.req.q.Fields[i].Required {
		d.errs[i] = "required"
	}
}

// content is the form's values, for Complete.
func (d *elicitDialog) content() map[string]any {
	out := map[string]any{}
	for i, f := range d.req.q.Fields {
		if v, err := d.value(i); err == nil && v != nil {
			out[f.Name] = v
		}
	}
	return out
}

func (d *elicitDialog) view(t *TUI, width int) ([]string, int, int) {
	inner := boxInner(width)
	q := d.req.q
	body := plainRows(drawText(strings.TrimSpace(q.Message)), inner, 0, nil, nil)
	body = append(body, "")
	crow, ccol := -1, -1
	if q.Mode == ElicitURL {
		body = append(body, d.urlRows(inner)...)
	}
	for i, f := range q.Fields {
		mark, st := "  ", style(0)
		if i == d.sel {
			mark, st = "› ", fgCyan|sBold
		}
		label := oneLine(f.Label())
		if f.Required {
			label += " *"
		}
		row := []span{{mark, st}, {label + ": ", st}}
		row = append(row, d.valueSpans(i)...)
		if i == d.sel && d.typed(i) {
			crow, ccol = len(body)+1, 2+visibleWidth(string(renderRow(nil, row, nil)))
		}
		body = append(body, fitLine(inner, row...))
		if f.Description != "" {
			body = append(body, plainRows(drawText(f.Description), inner, sDim, []span{{"    ", 0}}, []span{{"    ", 0}})...)
		}
		if d.errs[i] != "" {
			body = append(body, fitLine(inner, span{"    ! " + oneLine(d.errs[i]), fgRed}))
		}
	}
	if len(q.Fields) > 0 {
		body = append(body, "")
	}
	var btns []span
	for j, b := range elicitButtons {
		label := b.form
		if q.Mode == ElicitURL {
			label = b.url
		}
		st := style(0)
		if d.sel == len(q.Fields) && j == d.btn {
			st = fgCyan | sBold | sReverse
		}
		btns = append(btns, span{"[ " + label + " ]", st}, span{"  ", 0})
	}
	body = append(body, fitLine(inner, btns...))
	footer := "↑↓ field · enter next · ←→ choose · esc cancel"
	if d.sel == len(q.Fields) {
		footer = "←→ choose · enter answer · esc cancel"
	}
	if time.Now().Before(d.armAt) {
		footer = "a moment: keys typed now do not answer · esc cancel"
	}
	title := "mcp server " + oneLine(q.Server) + " asks"
	return dialogBox(width, title, footer, body), crow, ccol
}

// urlRows show the URL whole, broken at any column, and its host.
func (d *elicitDialog) urlRows(width int) []string {
	raw := drawText(d.req.q.URL)
	rows, _ := wrapCells(appendCells(nil, raw, fgBlue), wrapSpec{width: width, first: []span{{"open: ", sBold}}, cont: []span{{"      ", 0}}, hard: true})
	host := ""
	if u, err := url.Parse(d.req.q.URL); err == nil {
		host = u.Hostname()
	}
	rows = append(rows, fitLine(width, span{"host: ", sBold}, span{oneLine(host), sBold | fgYellow}))
	if strings.Contains(host, "xn--") || strings.ContainsFunc(host, func(r rune) bool { return r > 0x7e }) {
		rows = append(rows, plainRows("this host name has letters from other scripts: check it is the one you expect", width, fgRed, []span{{"  ", 0}}, []span{{"  ", 0}})...)
	}
	return append(rows, plainRows("zot does not open it: accepting tells the server you will", width, sDim, nil, nil)...)
}

// typed says whether field i is edited as text.
func (d *elicitDialog) typed(i int) bool {
	f := d.req.q.Fields[i]
	return f.Type != "boolean" && len(f.Options) == 0
}

func (d *elicitDialog) valueSpans(i int) []span {
	f := d.req.q.Fields[i]
	switch {
	case f.Type == "boolean":
		return []span{{map[int]string{-1: "( ) unset", 0: "[ ] no", 1: "[x] yes"}[d.flag[i]], 0}}
	case f.Multiple:
		var out []span
		for j, o := range f.Options {
			st := style(0)
			if i == d.sel && j == d.pick[i] {
				st = sReverse
			}
			box := "[ ] "
			if d.on[i][j] {
				box = "[x] "
			}
			out = append(out, span{box + oneLine(optionLabel(o)), st}, span{"  ", 0})
		}
		return out
	case len(f.Options) > 0:
		if d.pick[i] < 0 {
			return []span{{"‹ none ›", sDim}}
		}
		return []span{{"‹ " + oneLine(optionLabel(f.Options[d.pick[i]])) + " ›", 0}, {fmt.Sprintf("  (%d of %d)", d.pick[i]+1, len(f.Options)), sDim}}
	}
	return []span{{drawText(string(d.text[i])), 0}}
}

func optionLabel(o ElicitOption) string {
	if o.Title != "" {
		return o.Title
	}
	return o.Value
}

func (d *elicitDialog) key(t *TUI, k tuiKey) bool {
	n := len(d.req.q.Fields)
	if k.code != keyEsc && time.Now().Before(d.armAt) {
		return false
	}
	switch k.code {
	case keyEsc:
		return d.answer(ElicitAnswer{Action: ElicitCancel})
	case keyUp, keyBacktab:
		d.leave()
		d.sel = (d.sel - 1 + n + 1) % (n + 1)
		return false
	case keyDown, keyTab:
		d.leave()
		d.sel = (d.sel + 1) % (n + 1)
		return false
	}
	if d.sel == n {
		return d.buttonKey(k)
	}
	if k.code == keyEnter {
		d.leave()
		d.sel++
		return false
	}
	d.fieldKey(d.sel, k)
	return false
}

// leave checks the field being left.
func (d *elicitDialog) leave() {
	if d.sel < len(d.req.q.Fields) {
		d.check(d.sel)
	}
}

func (d *elicitDialog) buttonKey(k tuiKey) bool {
	switch k.code {
	case keyLeft:
		d.btn = (d.btn - 1 + len(elicitButtons)) % len(elicitButtons)
	case keyRight:
		d.btn = (d.btn + 1) % len(elicitButtons)
	case keyEnter:
		return d.choose(elicitButtons[d.btn].action)
	case keyRune:
		for _, b := range elicitButtons {
			if k.mod == 0 && k.r == b.key {
				return d.choose(b.action)
			}
		}
	}
	return false
}

// choose answers with action; a submit first checks every field, and a
// form with a field wrong stays open on it.
func (d *elicitDialog) choose(action ElicitAction) bool {
	if action != ElicitAccept || d.req.q.Mode == ElicitURL {
		return d.answer(ElicitAnswer{Action: action})
	}
	for i := range d.req.q.Fields {
		d.check(i)
	}
	for i, e := range d.errs {
		if e != "" {
			d.sel = i
			return false
		}
	}
	content, err := d.req.q.Complete(d.content())
	if err != nil { // the fields passed one by one; the whole cannot fail, but never send what it refuses
		return false
	}
	return d.answer(ElicitAnswer{Action: ElicitAccept, Content: content})
}

func (d *elicitDialog) fieldKey(i int, k tuiKey) {
	f := d.req.q.Fields[i]
	switch {
	case f.Type == "boolean":
		switch {
		case k.code == keyLeft || k.code == keyRight || k.code == keyRune && k.r == ' ':
			d.flag[i] = map[int]int{-1: 1, 0: 1, 1: 0}[d.flag[i]]
		case k.code == keyRune && (k.r == 'y' || k.r == 'n'):
			d.flag[i] = map[rune]int{'y': 1, 'n': 0}[k.r]
		case k.code == keyBackspace && !f.Required:
			d.flag[i] = -1
		}
	case f.Multiple:
		switch {
		case k.code == keyLeft:
			d.pick[i] = (d.pick[i] - 1 + len(f.Options)) % len(f.Options)
		case k.code == keyRight:
			d.pick[i] = (d.pick[i] + 1) % len(f.Options)
		case k.code == keyRune && k.r == ' ':
			d.on[i][d.pick[i]] = !d.on[i][d.pick[i]]
		}
	case len(f.Options) > 0:
		// none (-1) is one of the choices unless the field is required.
		low := -1
		if f.Required {
			low = 0
		}
		m := len(f.Options) - low
		switch {
		case k.code == keyLeft:
			d.pick[i] = (d.pick[i]-low-1+m)%m + low
		case k.code == keyRight || k.code == keyRune && k.r == ' ':
			d.pick[i] = (d.pick[i]-low+1)%m + low
		}
	default:
		switch {
		case k.code == keyBackspace && len(d.text[i]) > 0:
			d.text[i] = d.text[i][:len(d.text[i])-1]
		case k.code == keyRune && k.mod == modCtrl && k.r == 'u':
			d.text[i] = nil
		case k.code == keyRune && k.mod == 0:
			d.text[i] = append(d.text[i], k.r)
		case k.code == keyPaste:
			d.text[i] = append(d.text[i], []rune(oneLine(k.text))...)
		}
		d.errs[i] = ""
	}
}

// answer replies once; the question's goroutine is waiting.
func (d *elicitDialog) answer(a ElicitAnswer) bool {
	if !d.sent {
		d.sent = true
		d.req.reply <- a
	}
	return true
}
