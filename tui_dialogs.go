package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Dialogs: the stack of modal boxes drawn in place of the editor, and the
// kinds every part of the TUI opens (pickers, the hidden key prompt of
// /login, tool-call confirmations, extension panels). The UI loop owns the
// stack; a dialog gets every key until it reports it is done.

// dialog is a modal box drawn in place of the editor; it gets every key
// until key reports it is done.
type dialog interface {
	view(t *TUI, width int) (rows []string, crow, ccol int)
	key(t *TUI, k tuiKey) (done bool)
}

// dialogStack is the open dialogs, the last on top. Only the top one is
// drawn and gets keys; one opened while another waits (a confirmation
// during a picker) goes on top and is answered first.
type dialogStack []dialog

// pushDialog opens d on top; the slash popup closes, as the editor it
// belongs to is hidden.
func (t *TUI) pushDialog(d dialog) {
	t.pop.close()
	t.dialogs.push(d)
}

func (s *dialogStack) push(d dialog) { *s = append(*s, d) }

// top is the dialog drawn and given keys, nil when none is open.
func (s dialogStack) top() dialog {
	if len(s) == 0 {
		return nil
	}
	return s[len(s)-1]
}

// remove closes d wherever it is in the stack.
func (s *dialogStack) remove(d dialog) {
	s.drop(func(x dialog) bool { return x == d })
}

func (s *dialogStack) drop(drop func(dialog) bool) {
	kept := (*s)[:0]
	for _, d := range *s {
		if !drop(d) {
			kept = append(kept, d)
		}
	}
	*s = kept
}

// key gives k to the top dialog. ctrl+c closes any dialog as esc does;
// at a confirmation it also stops the prompt.
func (s *dialogStack) key(t *TUI, k tuiKey) {
	d := s.top()
	if k.mod == modCtrl && k.code == keyRune && k.r == 'c' {
		if _, ok := d.(*confirmDialog); ok {
			t.abort()
		}
		k = tuiKey{code: keyEsc}
	}
	// A dialog may close itself (and open another) as it answers.
	if d.key(t, k) {
		s.remove(d)
	}
}

// refuseAll closes every dialog, answering no to the confirmations and
// cancel to the MCP servers' questions, whose askers are waiting.
func (s *dialogStack) refuseAll() {
	for _, d := range *s {
		switch d := d.(type) {
		case *confirmDialog:
			d.answer(false)
		case *elicitDialog:
			d.answer(ElicitAnswer{Action: ElicitCancel})
		}
	}
	*s = nil
}

// panel is the open panel with this id, or nil.
func (s dialogStack) panel(id string) *panelDialog {
	var open *panelDialog
	for _, d := range s {
		if p, ok := d.(*panelDialog); ok && p.p.ID == id {
			open = p
		}
	}
	return open
}

// boxInner is how wide the rows a box holds may be: its two edges and a
// column of padding inside each take four.
func boxInner(width int) int { return max(width-4, 1) }

// dialogBox frames rows, each at most boxInner(width) wide, with both edges at
// any width: a title bar, the rows between bars, a footer.
func dialogBox(width int, title, footer string, body []string) []string {
	inner := boxInner(width)
	rows := []string{boxEdge(width, "┌", "┐", title, sBold)}
	left, right := dimText("│ "), dimText(" │")
	for _, r := range body {
		rows = append(rows, left+r+strings.Repeat(" ", max(inner-visibleWidth(r), 0))+right)
	}
	return append(rows, boxEdge(width, "└", "┘", footer, sDim))
}

// boxEdge is the top or bottom of a box: corners, and a label cut to fit
// between them.
func boxEdge(width int, left, right, label string, st style) string {
	room := width - 6 // "┌─ " and " ─┐" at the least
	if room < 1 || label == "" {
		return fitLine(width, span{left + strings.Repeat("─", max(width-2, 0)) + right, sDim})
	}
	label = fitLine(room, span{label, st})
	fill := strings.Repeat("─", max(width-5-visibleWidth(label), 1))
	return dimText(left+"─ ") + label + dimText(" "+fill+right)
}

func dimText(s string) string { return string(renderRow(nil, []span{{s, sDim}}, nil)) }

// pickerDialog chooses one of a list; cancel, when set, runs on esc.
// Typing filters the list: an item stays when it holds every word typed,
// in any case.
type pickerDialog struct {
	title  string
	items  []string
	sel    int // in shown
	pick   func(t *TUI, i int)
	cancel func(t *TUI)

	filter []rune
	shown  []int // the items the filter lets through; nil: not yet computed
}

// refilter recomputes what the filter shows, keeping the selected item
// selected when it is still there.
func (d *pickerDialog) refilter() {
	was := -1
	if d.shown != nil && d.sel < len(d.shown) {
		was = d.shown[d.sel]
	}
	words := strings.Fields(strings.ToLower(string(d.filter)))
	d.shown = d.shown[:0:0]
	for i, it := range d.items {
		lower := strings.ToLower(it)
		if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(lower, w) }) {
			d.shown = append(d.shown, i)
		}
	}
	d.sel = max(slices.Index(d.shown, was), 0)
}

// ensureShown shows every item, as before anything is typed.
func (d *pickerDialog) ensureShown() {
	if d.shown == nil {
		d.shown = make([]int, len(d.items))
		for i := range d.shown {
			d.shown[i] = i
		}
	}
}

func (d *pickerDialog) view(t *TUI, width int) ([]string, int, int) {
	d.ensureShown()
	show := max(min(10, t.height-8), 3)
	top := 0
	if len(d.shown) > show {
		top = min(max(d.sel-show/2, 0), len(d.shown)-show)
	}
	var body []string
	for j := top; j < len(d.shown) && j < top+show; j++ {
		mark, st := "  ", style(0)
		if j == d.sel {
			mark, st = "› ", fgCyan|sBold
		}
		body = append(body, fitLine(boxInner(width), span{mark, st}, span{oneLine(d.items[d.shown[j]]), st}))
	}
	if len(d.shown) == 0 {
		body = append(body, fitLine(boxInner(width), span{"  nothing matches " + oneLine(string(d.filter)), sDim}))
	}
	footer := "↑↓ choose · enter select · type to filter · esc cancel"
	if len(d.filter) > 0 {
		footer = "filter: " + oneLine(string(d.filter)) + " · backspace · esc cancel"
	}
	if len(d.shown) > show {
		footer = fmt.Sprintf("%d/%d · %s", d.sel+1, len(d.shown), footer)
	}
	return dialogBox(width, oneLine(d.title), footer, body), 1 + d.sel - top, -1
}

func (d *pickerDialog) key(t *TUI, k tuiKey) bool {
	d.ensureShown()
	n := max(len(d.shown), 1)
	switch k.code {
	case keyUp:
		d.sel = (d.sel - 1 + n) % n
	case keyDown, keyTab:
		d.sel = (d.sel + 1) % n
	case keyPgUp:
		d.sel = max(d.sel-10, 0)
	case keyPgDn:
		d.sel = min(d.sel+10, n-1)
	case keyHome:
		d.sel = 0
	case keyEnd:
		d.sel = n - 1
	case keyEsc:
		if d.cancel != nil {
			t.dialogs.remove(d)
			d.cancel(t)
		}
		return true
	case keyEnter:
		if len(d.shown) == 0 {
			return false
		}
		t.dialogs.remove(d)
		d.pick(t, d.shown[d.sel])
		return false
	case keyBackspace:
		if len(d.filter) > 0 {
			d.filter = d.filter[:len(d.filter)-1]
			d.refilter()
		}
	case keyRune:
		if k.mod == modCtrl && (k.r == 'p' || k.r == 'n') {
			return d.key(t, tuiKey{code: map[rune]keyCode{'p': keyUp, 'n': keyDown}[k.r]})
		}
		if k.mod == 0 {
			d.filter = append(d.filter, k.r)
			d.refilter()
		}
	case keyPaste:
		d.filter = append(d.filter, []rune(oneLine(k.text))...)
		d.refilter()
	}
	return false
}

// secretDialog reads a key without showing it; cancel, when set, runs
// on esc.
type secretDialog struct {
	title  string
	buf    []rune
	done   func(t *TUI, s string)
	cancel func(t *TUI)
}

func (d *secretDialog) view(t *TUI, width int) ([]string, int, int) {
	line := fitLine(boxInner(width), span{"key: ", sBold}, span{fmt.Sprintf("(%d characters, hidden)", len(d.buf)), sDim})
	return dialogBox(width, d.title, "enter save · esc cancel", []string{line}), 1, 2 + len("key: ")
}

func (d *secretDialog) key(t *TUI, k tuiKey) bool {
	switch {
	case k.code == keyEsc:
		d.buf = nil
		if d.cancel != nil {
			t.dialogs.remove(d)
			d.cancel(t)
		}
		return true
	case k.code == keyEnter:
		s := string(d.buf)
		d.buf = nil
		t.dialogs.remove(d)
		d.done(t, s)
		return false
	case k.code == keyBackspace && len(d.buf) > 0:
		d.buf = d.buf[:len(d.buf)-1]
	case k.code == keyRune && k.mod == modCtrl && k.r == 'u':
		d.buf = nil
	case k.code == keyRune && k.mod == 0:
		d.buf = append(d.buf, k.r)
	case k.code == keyPaste:
		d.buf = append(d.buf, []rune(strings.TrimSpace(editorClean(k.text)))...)
	}
	return false
}

// confirmDialog asks whether a tool call may run. It shows the call whole
// (see callRows); when that is taller than the terminal, the call scrolls,
// and a yes is taken only once its last row has been on screen. When it
// opens while the user is typing, keys other than esc are ignored until
// armAt, so that a prompt being typed cannot answer it by accident.
type confirmDialog struct {
	req   *confirmReq
	yolo  bool // only --no-yolo asked: offer the "this session" answers
	sel   int
	sent  bool
	armAt time.Time

	body      []string // the call and who asks, laid out for bodyWidth
	bodyWidth int
	top, room int  // the first body row shown, and how many fit
	seenAll   bool // every body row has been on screen

	typing bool   // a message for the model is being typed (m)
	msg    []rune // that message
	yes    bool   // it goes with a yes: a plan's changes (e)
}

const (
	confirmTypingGap = time.Second            // a key this recent means the user is typing
	confirmPause     = 600 * time.Millisecond // how long the dialog then ignores keys
)

func (d *confirmDialog) options() [][2]string {
	if d.req.q.Plan != nil {
		return append(approvalOptions(d.req.q), [2]string{"n", "no, keep planning"}, [2]string{"m", "no, keep planning, and tell the model why (type it)"})
	}
	opts := [][2]string{{"y", "yes, run it"}}
	if d.yolo {
		opts = [][2]string{
			{"y", "yes"},
			{"t", "yes, and do not ask again for " + oneLine(d.req.call.Name) + " this session"},
			{"a", "yes to every tool call this session"},
		}
	}
	opts = append(opts, approvalOptions(d.req.q)...)
	opts = append(opts, [2]string{"n", "no: the model is told the call was refused"})
	if d.req.detail != nil {
		opts = append(opts, [2]string{"m", "no, and tell the model why (type it)"})
	}
	return opts
}

// layout fits the body into the terminal beside the dialog's fixed rows
// (title, options, footer) and the status bar, and notes whether the end
// of the body is on screen.
func (d *confirmDialog) layout(t *TUI, width int) {
	if d.body == nil || d.bodyWidth != width {
		d.body, d.bodyWidth = approvalBody(d.req, boxInner(width)), width
		for _, a := range d.req.asks {
			first := []span{{oneLine(a.By) + " asks: ", fgYellow}}
			d.body = append(d.body, plainRows(drawText(a.Reason), boxInner(width), 0, first, []span{{"  ", 0}})...)
		}
	}
	// The live region is at most height-1 rows; beside the status bar, one
	// row is kept for the rule or a hint, and the dialog's title, options
	// and footer take theirs.
	d.room = max(t.height-1-2-(2+len(d.options())), 3)
	if len(d.body) > d.room {
		d.room = max(d.room-1, 3) // for the row that says where the view is
	}
	d.top = max(min(d.top, len(d.body)-d.room), 0)
	if d.top+d.room >= len(d.body) {
		d.seenAll = true
	}
}

func (d *confirmDialog) view(t *TUI, width int) ([]string, int, int) {
	d.layout(t, width)
	end := min(d.top+d.room, len(d.body))
	body := append([]string(nil), d.body[d.top:end]...)
	if len(d.body) > d.room {
		where := fmt.Sprintf("rows %d–%d of %d · pgup pgdn home end scroll", d.top+1, end, len(d.body))
		st := sDim
		if !d.seenAll {
			where = fmt.Sprintf("rows %d–%d of %d · read to the end (pgdn) before answering yes", d.top+1, end, len(d.body))
			st = fgYellow
		}
		body = append(body, fitLine(boxInner(width), span{where, st}))
	}
	title := "allow this tool call?"
	if d.req.q.Plan != nil {
		title = "approve this plan?"
	}
	if d.typing {
		label, footer := "message to the model: ", "enter: no, with this message · esc: back"
		if d.yes {
			label, footer = "changes to the plan: ", "enter: approve, with these changes · esc: back"
		}
		body = append(body, fitLine(boxInner(width), span{label, fgCyan | sBold}, span{drawText(string(d.msg)) + "▏", 0}))
		return dialogBox(width, title, footer, body), 0, -1
	}
	for i, o := range d.options() {
		mark, st := "  ", style(0)
		if i == d.sel {
			mark, st = "› ", fgCyan|sBold
		}
		body = append(body, fitLine(boxInner(width), span{mark, st}, span{o[1], st}, span{" (" + o[0] + ")", sDim}))
	}
	footer := "↑↓ enter, or the letter · esc: no"
	if time.Now().Before(d.armAt) {
		footer = "a moment: keys typed now do not answer · esc: no"
	}
	return dialogBox(width, title, footer, body), 0, -1
}

func (d *confirmDialog) key(t *TUI, k tuiKey) bool {
	opts := d.options()
	choose := func(letter string) bool {
		if letter != "n" && letter != "m" && !d.seenAll {
			return false // a yes waits until the whole call was on screen
		}
		if d.chooseApproval(t, letter) {
			return true
		}
		switch letter {
		case "m", "e":
			d.typing, d.yes = true, letter == "e"
			return false
		case "y":
		case "t":
			t.setApproval(d.req.call.Name, false)
		case "a":
			t.setApproval("", true)
		default:
			d.answer(false)
			return true
		}
		d.answer(true)
		return true
	}
	if d.typing {
		return d.typedKey(k)
	}
	d.layout(t, t.width) // the dialog may not have been drawn yet
	switch k.code {
	case keyPgDn:
		d.top += max(d.room-1, 1)
	case keyPgUp:
		d.top -= max(d.room-1, 1)
	case keyHome:
		d.top = 0
	case keyEnd:
		d.top = len(d.body)
	}
	d.layout(t, t.width) // clamps the scroll and notes what is now seen
	if k.code != keyEsc && time.Now().Before(d.armAt) {
		return false
	}
	switch k.code {
	case keyUp:
		d.sel = (d.sel - 1 + len(opts)) % len(opts)
	case keyDown, keyTab:
		d.sel = (d.sel + 1) % len(opts)
	case keyEsc:
		return choose("n")
	case keyEnter:
		return choose(opts[d.sel][0])
	case keyRune:
		for _, o := range opts {
			if k.mod == 0 && string(k.r) == o[0] {
				return choose(o[0])
			}
		}
	}
	return false
}

// confirmArgRows bounds each argument a confirmation shows, except for
// bash: what a shell will run is always shown whole.
const confirmArgRows = 20

// callRows lays out a tool call for the confirmation dialog, width columns
// wide: the tool, then each argument as "key: value" when that fits on one
// row, else as numbered lines broken at any column, so that neither a run
// of spaces nor a newline can push part of a command out of sight. For
// tools other than bash a long argument is cut after confirmArgRows rows,
// and a row says how much is not shown.
func callRows(call ToolCall, width int) []string {
	rows := []string{fitLine(width, span{oneLine(call.Name), sBold})}
	limit := confirmArgRows
	if call.Name == ToolBash {
		limit = 0
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(call.Args, &args) != nil || args == nil {
		return append(rows, argRows("arguments (not a JSON object)", string(call.Args), width, limit)...)
	}
	// What a call acts on comes first: the command, the path.
	rank := func(k string) int {
		switch k {
		case "command":
			return 0
		case "path":
			return 1
		}
		return 2
	}
	keys := sortedKeys(args)
	sort.SliceStable(keys, func(i, j int) bool { return rank(keys[i]) < rank(keys[j]) })
	for _, k := range keys {
		v := args[k]
		var text string
		if json.Unmarshal(v, &text) != nil {
			var b bytes.Buffer
			if json.Indent(&b, v, "", "  ") == nil {
				text = b.String()
			} else {
				text = string(v)
			}
		}
		var secs float64
		if call.Name == ToolBash && k == "timeout" && json.Unmarshal(v, &secs) == nil && secs > bashMaxTime.Seconds() {
			// The model chose it; the user should not think it holds.
			text += fmt.Sprintf(" (above the maximum: the command is stopped after %gs)", bashMaxTime.Seconds())
		}
		rows = append(rows, argRows(k, text, width, limit)...)
	}
	return rows
}

// argRows lays out one argument (see callRows); limit 0 shows it whole.
func argRows(key, value string, width, limit int) []string {
	value = drawText(value)
	lines := strings.Split(value, "\n")
	if len(lines) == 1 && stringWidth(key)+2+stringWidth(value) <= width {
		return []string{fitLine(width, span{key + ": ", sDim}, span{value, 0})}
	}
	head := key + ":"
	if len(lines) > 1 {
		head += fmt.Sprintf(" (%d lines)", len(lines))
	}
	rows := []string{fitLine(width, span{head, sDim})}
	numW := len(fmt.Sprint(len(lines)))
	cont := []span{{strings.Repeat(" ", numW+2) + "┆ ", sDim}}
	for i, line := range lines {
		first := []span{{fmt.Sprintf("  %*d│ ", numW, i+1), sDim}}
		wrapped, _ := wrapCells(appendCells(nil, line, 0), wrapSpec{width: width, first: first, cont: cont, hard: true})
		room := limit - (len(rows) - 1)
		if limit == 0 || len(wrapped) <= room {
			rows = append(rows, wrapped...)
			continue
		}
		rows = append(rows, wrapped[:room]...)
		more := len(lines) - i - 1
		note := fmt.Sprintf("… %d more %s not shown", more+1, pluralNoun(more+1, "line", "lines"))
		if room > 0 {
			note = fmt.Sprintf("… the rest of line %d and %d more %s not shown", i+1, more, pluralNoun(more, "line", "lines"))
			if more == 0 {
				note = fmt.Sprintf("… the rest of line %d not shown", i+1)
			}
		}
		return append(rows, fitLine(width, span{"  " + note, fgYellow}))
	}
	return rows
}

// answer replies once; the agent's goroutine is waiting.
func (d *confirmDialog) answer(ok bool) {
	if ok {
		d.answerWith(approvalAnswer{Decision: ApprovalAllow})
	} else {
		d.answerWith(approvalAnswer{Decision: ApprovalDeny})
	}
}

// typedKey edits the message for the model while one is being typed:
// enter sends the no with it, esc goes back to the choices. It returns
// whether the dialog is done.
func (d *confirmDialog) typedKey(k tuiKey) bool {
	switch k.code {
	case keyEnter:
		a := approvalAnswer{Decision: ApprovalDeny, Message: strings.TrimSpace(string(d.msg))}
		if d.yes {
			a.Decision, a.Mode = ApprovalAllow, d.req.q.Plan.Modes[0]
		}
		d.answerWith(a)
		return true
	case keyEsc:
		d.typing, d.msg, d.yes = false, nil, false
	case keyBackspace:
		if len(d.msg) > 0 {
			d.msg = d.msg[:len(d.msg)-1]
		}
	case keyRune:
		if k.mod == 0 {
			d.msg = append(d.msg, k.r)
		}
	}
	return false
}

// answerWith replies once with a whole answer; a request made outside
// ask (only the tests make one) takes only yes or no.
func (d *confirmDialog) answerWith(a approvalAnswer) {
	if d.sent {
		return
	}
	d.sent = true
	if d.req.detail != nil {
		d.req.detail <- a
		return
	}
	d.req.reply <- a.Decision != ApprovalDeny
}

// panelDialog is an extension's panel: its lines, and every key sent to
// the extension; esc closes it.
type panelDialog struct {
	p tuiPanel
}

func (d *panelDialog) view(t *TUI, width int) ([]string, int, int) {
	var body []string
	limit := max(t.height-8, 3)
	for i, l := range d.p.Lines {
		if i == limit {
			body = append(body, fitLine(boxInner(width), span{fmt.Sprintf("… %d more lines", len(d.p.Lines)-i), sDim}))
			break
		}
		body = append(body, fitLine(boxInner(width), span{oneLine(l), 0}))
	}
	footer := "esc close"
	if d.p.Footer != "" {
		footer = oneLine(d.p.Footer) + " · " + footer
	}
	title := oneLine(d.p.Title)
	if title == "" {
		title = oneLine(d.p.ID)
	}
	if d.p.Extension != "" {
		title += "  [" + oneLine(d.p.Extension) + "]"
	}
	return dialogBox(width, title, footer, body), 0, -1
}

func (d *panelDialog) key(t *TUI, k tuiKey) bool {
	if k.code == keyEsc {
		t.sendPanel(panelMsg{close: true, id: d.p.ID})
		return true
	}
	t.sendPanel(panelKeyMsg(d.p.ID, k))
	return false
}

// panelKeyMsg is a key as panel_key names it (docs/extensions.md): a
// character typed alone is "rune" with the character in text, as the
// extension SDKs and examples read it; a paste is "paste" with the text;
// any other key goes by its name, modifiers first ("ctrl+a", "up").
func panelKeyMsg(panelID string, k tuiKey) panelMsg {
	switch {
	case k.code == keyPaste:
		return panelMsg{id: panelID, key: "paste", text: k.text}
	case k.code == keyRune && k.mod == 0:
		return panelMsg{id: panelID, key: "rune", text: string(k.r)}
	}
	return panelMsg{id: panelID, key: k.String()}
}

// panelUpdate applies an extension's open, render or close.
func (t *TUI) panelUpdate(u tuiPanelUpdate) {
	open := t.dialogs.panel(u.Panel.ID)
	switch u.Kind {
	case "open", "render":
		if open != nil {
			open.p = u.Panel
		} else if u.Kind == "open" {
			t.pushDialog(&panelDialog{p: u.Panel})
		}
	case "close":
		if open != nil {
			t.dialogs.remove(open)
		}
	}
}

// panelMsg is a key for, or the closing of, a panel.
type panelMsg struct {
	close         bool
	id, key, text string
}

// sendPanel hands a panel key or close to the extension host in order,
// without making the UI wait for it.
func (t *TUI) sendPanel(m panelMsg) {
	if t.Ext == nil {
		return
	}
	if t.panelKeys == nil {
		ch := make(chan panelMsg, 256)
		t.panelKeys = ch
		ext := t.Ext
		// It exits when the TUI's context ends.
		t.background(func() {
			for {
				select {
				case m := <-ch:
					var err error
					if m.close {
						err = ext.ClosePanel(m.id)
					} else {
						err = ext.PanelKey(m.id, m.key, m.text)
					}
					if err != nil {
						t.post(msgLog{fmt.Sprintf("panel %s: %v", m.id, err), fgRed})
					}
				case <-t.ctx.Done():
					return
				}
			}
		})
	}
	select {
	case t.panelKeys <- m:
	default:
		t.logf(fgYellow, "panel %s: the extension is not keeping up; a key was dropped", oneLine(m.id))
	}
}
