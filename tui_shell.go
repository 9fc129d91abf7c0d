package main

import (
	"strings"
	"time"
)

// The user's own shell commands (!cmd) and the search through the prompt
// history (ctrl+r).

// msgShellDone is a !command that finished.
type msgShellDone struct {
	command string
	res     ToolResult
	took    time.Duration
}

// shellCommand is what follows the ! of a prompt that runs a command, if
// it is one: "!!" sends a prompt that starts with "!".
func shellCommand(text string) (command string, ok bool) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "!") || strings.HasPrefix(text, "!!") {
		return "", false
	}
	command = strings.TrimSpace(text[1:])
	return command, command != ""
}

// runShellCommand runs a command the user typed after !, as the bash tool
// would run it, in the same sandbox, but with no gate: the user is the
// one asking. The model is not called; the command and its output go to
// the model with the next prompt (pendingShell).
func (t *TUI) runShellCommand(command string) {
	env := t.cfg.ToolEnv
	if env == nil {
		t.logf(fgRed, "!%s: no shell in this session", oneLine(command))
		return
	}
	t.hint = "running " + oneLine(command) + ": its output shows here when it ends, and goes to the model with your next prompt"
	// Owner: the UI loop's background work, which ends with t.ctx; the
	// command is stopped then, or after bashMaxTime.
	t.background(func() {
		start := time.Now()
		res := runShell(t.ctx, env, command, bashMaxTime, nil)
		t.post(msgShellDone{command: command, res: res, took: time.Since(start)})
	})
}

// shellDone shows a !command's result and keeps it for the next prompt.
func (t *TUI) shellDone(m msgShellDone) {
	t.commitToolResult("!", oneLine(m.command), "", m.res.IsError, m.res.Content, m.took)
	var out strings.Builder
	for _, b := range m.res.Content {
		out.WriteString(b.Text)
	}
	t.pendingShell = append(t.pendingShell, "The user ran this command in the terminal:\n$ "+m.command+"\n"+out.String())
}

// takeShellContext is the !commands run since the last prompt, as blocks
// that go before the prompt's text, as attached files do: a resumed
// transcript or /fork shows the prompt as typed.
func (t *TUI) takeShellContext() []Block {
	var blocks []Block
	for _, s := range t.pendingShell {
		blocks = append(blocks, TextBlock(s))
	}
	t.pendingShell = nil
	return blocks
}

// searchHistory is ctrl+r: the prompt history, newest first, filtered by
// what is typed (starting with what the editor holds); the chosen prompt
// goes into the editor to be edited or sent.
func (t *TUI) searchHistory() {
	if len(t.ed.hist) == 0 {
		t.hint = "no prompt history yet"
		return
	}
	hist := append([]string(nil), t.ed.hist...)
	d := &pickerDialog{
		title:  "search the prompt history (newest first)",
		items:  hist,
		pick:   func(t *TUI, i int) { t.ed.set(hist[i]) },
		filter: []rune(strings.TrimSpace(t.ed.text())),
	}
	d.refilter()
	t.pushDialog(d)
}
