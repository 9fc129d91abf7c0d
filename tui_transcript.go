package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// The agent's work as the transcript shows it: prompts started and
// stopped, events turned into rows, streamed text committed to the
// scrollback row by row, tool calls summarised, loaded sessions replayed,
// extension notes kept.

// Agent runs.

// startPrompt sends a prompt to the agent on a goroutine of its own.
func (t *TUI) startPrompt(q queuedPrompt) {
	if t.missingKey != "" {
		// Left in the editor, the prompt would catch the /login the
		// warning suggests ("hello/login"): the key is asked for at once,
		// and the prompt comes back once it is saved.
		t.warnNoKey()
		t.loginPrompt = &q
		t.askKey(t.provider)
		return
	}
	if name, _, ok := parseSlash(q.text); ok && t.isTemplate(name) {
		// The template's @paths and !`commands` are the expansion's: it
		// runs on the run's goroutine, where a gate may ask the user.
		t.notes = nil
		t.commitPrompt(q.display, nil)
		t.beginRun(func(ctx context.Context, sink Sink) error {
			return t.Prompts.Send(ctx, q.text, sink)
		})
		return
	}
	var files []Block
	var attached []string
	for _, ref := range atRefs(q.text) {
		b, desc, err := attachFile(ref, t.cfg.ToolEnv)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				attached = append(attached, "not attached: "+err.Error())
			}
			continue
		}
		files = append(files, b)
		attached = append(attached, desc)
	}
	t.notes = nil
	t.commitPrompt(q.display, attached)
	t.commitRows(t.pictures(files))
	files = append(t.takeShellContext(), files...)
	t.beginRun(func(ctx context.Context, sink Sink) error {
		return t.agent.Prompt(ctx, q.text, files, sink)
	})
	t.run.rescuable = true
}

// beginRun starts agent work whose events go to the UI loop.
func (t *TUI) beginRun(work func(ctx context.Context, sink Sink) error) {
	ctx, cancel := context.WithCancel(t.ctx)
	t.runSeq++
	id := t.runSeq
	t.run = &runState{id: id, cancel: cancel, start: time.Now()}
	t.stream = streamState{}
	t.waitFor(waitingForModel)
	sink := TeeSinks(t.Observe, func(e Event) { t.post(msgEvent{id, e}) })
	// Owner: the UI loop, which waits for msgRunDone. It ends when the
	// agent returns, which cancelling ctx brings about promptly.
	t.background(func() {
		err := work(ctx, sink)
		cancel()
		t.post(msgRunDone{id, err})
	})
}

// abort cancels the running prompt (esc, ctrl+c). Queued prompts go back
// into the editor rather than starting unasked.
func (t *TUI) abort() {
	if t.run == nil || t.run.aborted {
		return
	}
	t.run.aborted = true
	t.run.cancel()
	if len(t.queue) > 0 {
		var parts []string
		for _, q := range t.queue {
			parts = append(parts, q.text)
		}
		if !t.ed.empty() {
			parts = append(parts, t.ed.text())
		}
		t.ed.set(strings.Join(parts, "\n"))
		t.queue = nil
	}
}

func (t *TUI) runDone(id int, err error) {
	if t.run == nil || t.run.id != id {
		return
	}
	t.endThinking()
	t.flushText()
	for _, lt := range t.stream.tools {
		t.commitLine(span{"✗ ", fgRed}, span{lt.name, sBold}, span{"  " + lt.summary, 0}, span{"  (not finished)", sDim})
	}
	t.stream = streamState{}
	if errors.Is(err, ErrBlocked) {
		t.logf(fgRed, "✗ %s", err.Error())
	}
	t.dialogs.drop(func(d dialog) bool {
		c, ok := d.(*confirmDialog)
		return ok && c.req.ctx.Err() != nil
	})
	aborted, rescuable := t.run.aborted, t.run.rescuable
	t.run = nil
	if !aborted { // a user who stopped it is here
		t.notify(runEndText(err))
	}
	t.stopGrace = time.Now().Add(ctrlCStopGrace)
	if !aborted && rescuable && err != nil && t.offerRescue(err) {
		return // queued prompts and changes wait for the user's choice
	}
	// Changes asked for while the turn ran; one that starts work of its
	// own (/compact) leaves the rest for when that ends.
	for len(t.afterStop) > 0 && t.run == nil {
		change := t.afterStop[0]
		t.afterStop = t.afterStop[1:]
		change(t)
	}
	// What was queued when the run was stopped went back into the editor
	// (abort); what is queued now was sent after the stop, to run next.
	if !t.quit {
		t.startQueued()
	}
}

// waitingForModel is what the live region says until the answer begins.
const waitingForModel = "waiting for the model"

// waitFor shows what the agent waits for, with a spinner and the time,
// where the answer will appear, until something of it arrives.
func (t *TUI) waitFor(what string) {
	t.stream.wait, t.stream.waitSince, t.stream.retry = what, time.Now(), nil
}

// event shows one agent event.
func (t *TUI) event(e Event) {
	st := &t.stream
	switch e.Type {
	case EventTextDelta, EventThinkingDelta, EventToolUseStart, EventToolCall, EventTurnEnd, EventError:
		st.wait = ""
	case EventTurnStart:
		t.waitFor(waitingForModel)
	case EventRetry:
		if st.wait == "" {
			t.waitFor(waitingForModel)
		}
		st.retry = &retryWait{at: time.Now().Add(e.Wait), attempt: e.Attempt, attempts: e.Attempts, reason: oneLine(e.Error)}
	}
	switch e.Type {
	case EventUserMessage:
		t.run.prompts++
		if t.run.prompts > 1 {
			typed, _ := splitPrompt(Message{Content: e.Content})
			t.commitLine(span{"↻ ", fgCyan}, span{oneLine(typed), sDim})
		}
	case EventAssistantStart:
		st.md, st.hasText = mdState{}, false
	case EventThinkingDelta:
		if st.thinking == nil {
			st.thinkStart = time.Now()
		}
		st.thinking = append(st.thinking, e.Delta...)
	case EventTextDelta:
		t.endThinking()
		t.appendText(e.Delta)
	case EventToolUseStart:
		t.endThinking()
		t.flushText()
		st.tools = append(st.tools, &liveTool{id: e.ID, name: oneLine(e.Name), start: time.Now()})
	case EventToolUseArgs:
		if lt := t.liveTool(e.ID); lt != nil {
			lt.argBytes += len(e.Delta)
		}
	case EventAssistantMessage:
		t.endThinking()
		t.flushText()
		st.tools = nil
		st.md = mdState{}
		st.hasText = false
	case EventToolCall:
		lt := t.liveTool(e.ID)
		if lt == nil {
			lt = &liveTool{id: e.ID, name: oneLine(e.Name)}
			st.tools = append(st.tools, lt)
		}
		lt.summary, lt.start = toolSummary(e.Name, e.Args), time.Now() // it runs from now
	case EventToolProgress:
		if lt := t.liveTool(e.ID); lt != nil {
			lt.progress = append(lt.progress, strings.Split(strings.TrimRight(e.Text, "\n"), "\n")...)
			if n := len(lt.progress); n > 3 {
				lt.progress = append(lt.progress[:0], lt.progress[n-3:]...)
			}
		}
	case EventToolResult:
		summary, took := "", time.Duration(0)
		if lt := t.liveTool(e.ID); lt != nil {
			summary, took = lt.summary, time.Since(lt.start)
			t.dropLiveTool(e.ID)
		}
		t.commitToolResult(e.Name, summary, e.Details, e.IsError, e.Content, took)
	case EventTurnEnd:
		if e.Stop == StopAborted {
			t.endThinking()
			t.flushText()
			t.commitLine(span{"■ aborted", fgYellow})
		}
	case EventError:
		t.endThinking()
		t.flushText()
		t.commitRows(plainRows(drawText("✗ "+e.Message), t.width, fgRed, nil, []span{{"  ", 0}}))
	case EventMessageBlocked:
		t.endThinking()
		t.flushText()
		t.commitRows(plainRows(drawText("⊘ "+e.Reason), t.width, fgYellow, nil, []span{{"  ", 0}}))
	case EventCompactDone:
		t.commitRule("compacted")
		rows := renderMarkdown(e.Summary, t.width, sDim)
		if len(rows) > 6 {
			rows = append(rows[:6], fitLine(t.width, span{fmt.Sprintf("… %d more lines of summary", len(rows)-6), sDim}))
		}
		t.commitRows(rows)
	}
}

func (t *TUI) liveTool(id string) *liveTool {
	for _, lt := range t.stream.tools {
		if lt.id == id {
			return lt
		}
	}
	return nil
}

func (t *TUI) dropLiveTool(id string) {
	tools := t.stream.tools[:0]
	for _, lt := range t.stream.tools {
		if lt.id != id {
			tools = append(tools, lt)
		}
	}
	t.stream.tools = tools
}

// appendText adds streamed assistant text. Finished lines are committed to
// the scrollback at once; of the unfinished line, every row but the last is
// committed too, so the live region stays one row tall however long the
// paragraph grows. Each byte is parsed once and each cell wrapped about
// once, however long the line: a reply can be megabytes without a newline.
func (t *TUI) appendText(delta string) {
	st := &t.stream
	if !st.hasText {
		t.blockBreak("text")
	}
	st.hasText = true
	for {
		line, rest, more := strings.Cut(delta, "\n")
		if line != "" || more {
			if !st.inLine {
				st.line.reset(st.md, 0)
				st.inLine = true
			}
			st.line.write(line)
		}
		if !more {
			break
		}
		t.endLine()
		delta = rest
	}
	t.flowText()
}

// flowText commits the rows of the unfinished line that are decided and
// will not change, and lays out the rest at the current width.
func (t *TUI) flowText() {
	st := &t.stream
	st.liveText = nil
	if !st.inLine {
		return
	}
	m := &st.line
	if m.known && !m.blk.table {
		t.endTable() // the line is not a row: the table above it ends
		rows, ends := wrapCells(m.cells, st.wrapSpec(m.blk, t.width))
		if n := len(rows); n > 1 {
			t.commitRows(rows[:n-1])
			m.drop(ends[n-2])
			st.started = true
			rows = rows[n-1:]
		}
		st.liveText = rows
	}
	cells, blk := m.pending(append(st.cells[:0], m.cells...))
	st.cells = cells
	if !m.known || m.blk.table || len(cells) > len(m.cells) {
		st.liveText, _ = wrapCells(cells, st.wrapSpec(blk, t.width))
	}
}

// endLine commits the line that a line break ended, or, when it may be a
// row of a table, hands it to the table being gathered.
func (t *TUI) endLine() {
	st := &t.stream
	if st.inLine {
		st.md = st.line.end()
		if st.line.blk.table {
			if st.table == nil {
				st.table = &mdTable{}
			}
			t.commitRows(st.table.add(string(st.line.row), t.width, max(t.height-10, 5)))
		} else {
			t.endTable()
			rows, _ := wrapCells(st.line.cells, st.wrapSpec(st.line.blk, t.width))
			t.commitRows(rows)
		}
	}
	st.inLine, st.started, st.liveText = false, false, nil
}

// endTable commits the table being gathered: a line that is no row of it
// came, or the text ended.
func (t *TUI) endTable() {
	if st := &t.stream; st.table != nil {
		t.commitRows(st.table.finish(t.width))
		st.table = nil
	}
}

// flushText commits the unfinished line and table: the text block ended.
func (t *TUI) flushText() {
	t.endLine()
	t.endTable()
}

// wrapSpec is how the rest of the unfinished line is wrapped: after its
// first row was committed, the rest takes the continuation prefix.
func (st *streamState) wrapSpec(b mdBlock, width int) wrapSpec {
	first := b.first
	if st.started {
		first = b.cont
	}
	return wrapSpec{width: width, first: first, cont: b.cont, hard: b.hard}
}

// endThinking collapses the thinking shown so far into one line.
func (t *TUI) endThinking() {
	st := &t.stream
	if st.thinking == nil {
		return
	}
	words := len(strings.Fields(string(st.thinking)))
	secs := time.Since(st.thinkStart).Seconds()
	t.commitLine(span{fmt.Sprintf("∴ thought for %.0fs (%d words)", secs, words), sDim | sItalic})
	st.thinking = nil
}

// Committing to the scrollback.

// blockBreak puts a blank line between assistant text and tool calls.
func (t *TUI) blockBreak(kind string) {
	if t.lastBlock != "" && t.lastBlock != kind {
		t.commit = append(t.commit, "")
	}
	t.lastBlock = kind
}

func (t *TUI) commitRows(rows []string) { t.commit = append(t.commit, rows...) }

func (t *TUI) commitLine(spans ...span) { t.commit = append(t.commit, fitLine(t.width, spans...)) }

func (t *TUI) commitRule(label string) {
	label = oneLine(label)
	t.commitLine(span{"── " + label + " " + strings.Repeat("─", max(0, t.width-stringWidth(label)-4)), sDim})
}

// logf commits a message of zot's own.
func (t *TUI) logf(st style, format string, args ...any) {
	t.commitRows(plainRows(drawText(fmt.Sprintf(format, args...)), t.width, st, nil, nil))
}

func (t *TUI) commitPrompt(display string, attached []string) {
	t.lastBlock = ""
	t.commitRows([]string{""})
	t.commitRows(plainRows(drawText(display), t.width, sBold, []span{{editorPrompt, fgCyan | sBold}}, []span{{"  ", 0}}))
	for _, a := range attached {
		t.commitLine(span{"  + " + oneLine(a), sDim})
	}
	t.commitRows([]string{""})
}

// toolSummary is the one line a tool call is shown as: the command of
// bash, the path of read, write and edit, as each tool reads its
// arguments; the arguments of anything else, or of a call its tool will
// refuse.
func toolSummary(name string, raw json.RawMessage) string {
	switch name {
	case ToolBash:
		if a, err := ParseBashArgs(raw); err == nil {
			first, rest, more := strings.Cut(strings.TrimSpace(a.Command), "\n")
			if more && strings.TrimSpace(rest) != "" {
				first += " …"
			}
			return oneLine(first)
		}
	case ToolRead:
		if a, err := ParseReadArgs(raw); err == nil {
			s := a.Path
			if a.Offset > 0 || a.Limit > 0 {
				s += fmt.Sprintf(" (from line %d", max(a.Offset, 1))
				if a.Limit > 0 {
					s += fmt.Sprintf(", %d lines", a.Limit)
				}
				s += ")"
			}
			return oneLine(s)
		}
	case ToolWrite:
		if a, err := ParseWriteArgs(raw); err == nil {
			return oneLine(fmt.Sprintf("%s (%d lines)", a.Path, textLines(a.Content)))
		}
	case ToolEdit:
		if a, err := ParseEditArgs(raw); err == nil {
			return oneLine(fmt.Sprintf("%s (%d %s)", a.Path, len(a.Edits), pluralNoun(len(a.Edits), "edit", "edits")))
		}
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil {
		return oneLine(string(raw))
	}
	var parts []string
	for _, k := range sortedKeys(args) {
		v := string(args[k])
		var s string
		if json.Unmarshal(args[k], &s) == nil {
			v = s
		}
		parts = append(parts, k+"="+v)
	}
	return oneLine(truncate(strings.Join(parts, " "), 300))
}

// showTranscript prints a loaded conversation: prompts, answers, tool
// calls with their results, thinking collapsed.
func (t *TUI) showTranscript(msgs []Message) {
	results := map[string]Block{}
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type == BlockToolResult {
				results[b.CallID] = b
			}
		}
	}
	for _, m := range msgs {
		if m.isPrompt() {
			typed, added := splitPrompt(m)
			var attached []string
			for _, b := range added {
				if desc, ok := describeAttachment(b); ok {
					attached = append(attached, desc)
				}
			}
			t.commitPrompt(typed, attached)
			continue
		}
		if m.Role != RoleAssistant {
			continue
		}
		for _, b := range m.Content {
			switch b.Type {
			case BlockText:
				t.commitRows(renderMarkdown(b.Text, t.width, 0))
			case BlockThinking:
				t.commitLine(span{fmt.Sprintf("∴ thought (%d words)", len(strings.Fields(b.Text))), sDim | sItalic})
			case BlockToolCall:
				r := results[b.ID]
				t.commitToolResult(b.Name, toolSummary(b.Name, b.Args), "", r.IsError, r.Content, 0)
			}
		}
	}
}

// Notes from extensions.

func (t *TUI) note(n tuiNote) {
	if n.Clear {
		kept := t.notes[:0]
		for _, old := range t.notes {
			if old.Extension != n.Extension {
				kept = append(kept, old)
			}
		}
		t.notes = kept
		return
	}
	t.notes = append(t.notes, n)
	if len(t.notes) > 20 {
		t.notes = t.notes[len(t.notes)-20:]
	}
}

func noteStyle(level string) style {
	switch level {
	case "error":
		return fgRed
	case "warn", "warning":
		return fgYellow
	case "success":
		return fgGreen
	}
	return fgBlue
}
