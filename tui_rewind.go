package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// /undo and /rewind: the files back to before a prompt's tool calls changed
// them (from the checkpoints zot takes around each call, see
// docs/checkpoints.md), the conversation back to before the prompt, or
// both. A restore that would overwrite what someone else changed since
// asks first.

// tuiCheckpoints is what /undo and /rewind use of the checkpoints; wire.go
// passes them in TUIConfig, nil when they are off.
type tuiCheckpoints interface {
	// Points are the prompts of the current session that have
	// checkpoints, oldest first.
	Points() ([]tuiRewindPoint, error)
	// Restore takes the files back to before checkpoint id, or with id ""
	// to before the latest prompt that changed files and was not undone.
	// Files someone else changed since are conflicts, and then nothing is
	// done, unless force; keep are files to leave as they are.
	Restore(id string, force bool, keep []string) (tuiRestoreResult, error)
	// Diff is what the session changed in the files, first checkpoint to
	// last (/diff).
	Diff() ([]tuiFileDiff, error)
}

// tuiRewindPoint is a prompt with checkpoints: the first of them, and the
// files its calls changed.
type tuiRewindPoint struct {
	Prompt     string
	PromptTime time.Time
	Checkpoint string
	Files      []string
	More       int
}

// tuiRestoreResult is what a restore did, or would do (Conflicts).
type tuiRestoreResult struct {
	Checkpoint string // restored to
	Prompt     string // the prompt of the checkpoint's call; "" for a restore's
	Written    []string
	Removed    []string
	Left       []string // not recorded then or now: left as they are
	Conflicts  []tuiConflict
	Errors     []string
	Undo       string // the checkpoint that undoes this restore
}

type tuiConflict struct{ Path, Why string }

// rewindQuote shows a prompt in a message.
func rewindQuote(p string) string {
	if p == "" {
		return "the prompt"
	}
	return `"` + sessionOneLine(p, 40) + `"`
}

// cmdUndo restores the files to before the last prompt's changes, or with
// an id (zot checkpoints list shows them) to before that checkpoint.
func (t *TUI) cmdUndo(args string) {
	if t.cfg.Checkpoints == nil {
		t.logf(sDim, "checkpoints are off (\"checkpoints\" in config.json), so there is nothing to undo")
		return
	}
	id := strings.TrimSpace(args)
	t.whenIdle("/undo", func(t *TUI) { t.restoreFiles("/undo", id, false, nil, nil) })
}

// restoreFiles restores checkpoint id's files; when someone else changed
// some of them since, it shows them and asks. then runs once the files
// are restored.
func (t *TUI) restoreFiles(what, id string, force bool, keep []string, then func(t *TUI)) {
	r, err := t.cfg.Checkpoints.Restore(id, force, keep)
	if len(r.Conflicts) > 0 {
		t.logf(fgYellow, "%s: %d files changed after zot recorded them, and restoring would overwrite those changes:", what, len(r.Conflicts))
		var paths []string
		for _, c := range r.Conflicts {
			t.logf(fgYellow, "  %s: %s", oneLine(c.Path), oneLine(c.Why))
			paths = append(paths, c.Path)
		}
		nothing := func(t *TUI) { t.logf(sDim, "%s: nothing changed", what) }
		t.pushDialog(&pickerDialog{
			title: what + ": overwrite the files changed since?",
			items: []string{
				"overwrite them too (the restore is a checkpoint: /undo with its id brings them back)",
				"restore the rest, and leave these files as they are",
				"cancel: change nothing",
			},
			sel: 2,
			pick: func(t *TUI, i int) {
				switch i {
				case 0:
					t.whenIdle(what, func(t *TUI) { t.restoreFiles(what, r.Checkpoint, true, nil, then) })
				case 1:
					t.whenIdle(what, func(t *TUI) { t.restoreFiles(what, r.Checkpoint, false, paths, then) })
				default:
					nothing(t)
				}
			},
			cancel: nothing,
		})
		return
	}
	if err != nil {
		t.logf(fgRed, "%s: %v", what, err)
		return
	}
	t.showRestore(what, r)
	if then != nil {
		then(t)
	}
}

// showRestore says what a restore did.
func (t *TUI) showRestore(what string, r tuiRestoreResult) {
	names := func(list []string) string {
		var shown []string
		for _, p := range list[:min(len(list), 8)] {
			shown = append(shown, oneLine(p))
		}
		if len(list) > len(shown) {
			shown = append(shown, fmt.Sprintf("and %d more", len(list)-len(shown)))
		}
		return strings.Join(shown, ", ")
	}
	head := fmt.Sprintf("%s: files back to before checkpoint %s", what, r.Checkpoint)
	if r.Prompt != "" {
		head = fmt.Sprintf("%s: files back to before %s (checkpoint %s)", what, rewindQuote(r.Prompt), r.Checkpoint)
	}
	switch {
	case len(r.Written)+len(r.Removed) == 0:
		t.logf(fgCyan, "%s: they were already so", head)
	default:
		var parts []string
		if len(r.Written) > 0 {
			parts = append(parts, "restored "+names(r.Written))
		}
		if len(r.Removed) > 0 {
			parts = append(parts, "removed "+names(r.Removed))
		}
		t.logf(fgCyan, "%s: %s", head, strings.Join(parts, "; "))
	}
	if len(r.Left) > 0 {
		t.logf(sDim, "  left as they are (not recorded then or now): %s", names(r.Left))
	}
	for _, e := range r.Errors {
		t.logf(fgRed, "  %s", oneLine(e))
	}
	if r.Undo != "" {
		t.logf(sDim, "  /undo %s takes this back", r.Undo)
	}
}

// rewindChoice is a line of the /rewind picker: a prompt of the
// conversation (at its index) or one only the checkpoints still know
// (at -1), and the checkpoint its files go back to.
type rewindChoice struct {
	at     int
	n      int // the prompt's number in the conversation
	prompt string
	when   time.Time
	point  *tuiRewindPoint
	files  string
}

func (t *TUI) cmdRewind(string) {
	msgs := t.agent.Messages()
	var points []tuiRewindPoint
	if t.cfg.Checkpoints != nil {
		var err error
		if points, err = t.cfg.Checkpoints.Points(); err != nil {
			t.logf(fgYellow, "/rewind: %v", err)
		}
	}
	used := map[int]bool{}
	var choices []rewindChoice
	for i, m := range msgs {
		if !m.isPrompt() {
			continue
		}
		typed, _ := splitPrompt(m)
		c := rewindChoice{at: i, n: len(choices) + 1, prompt: typed, when: m.Time}
		for k := range points {
			if points[k].PromptTime.Equal(m.Time) {
				c.point, used[k] = &points[k], true
			}
		}
		choices = append(choices, c)
	}
	for k := range points {
		if !used[k] {
			choices = append(choices, rewindChoice{at: -1, prompt: points[k].Prompt, when: points[k].PromptTime, point: &points[k]})
		}
	}
	if len(choices) == 0 {
		t.logf(sDim, "nothing to rewind yet: send a prompt first")
		return
	}
	sort.SliceStable(choices, func(i, j int) bool { return choices[i].when.Before(choices[j].when) })
	// A prompt whose calls changed nothing goes back to the checkpoint of
	// the next prompt that did: the files as they were before either.
	for i := len(choices) - 1; i >= 0; i-- {
		switch {
		case choices[i].point != nil:
			choices[i].files = choices[i].point.Checkpoint
		case i+1 < len(choices):
			choices[i].files = choices[i+1].files
		}
	}
	items := make([]string, len(choices))
	for i, c := range choices {
		label := fmt.Sprintf("%d) %s", c.n, sessionOneLine(c.prompt, 60))
		if c.at < 0 {
			label = "(no longer in the conversation) " + sessionOneLine(c.prompt, 40)
		}
		switch {
		case c.point != nil && len(c.point.Files) > 0:
			label += "  — changed " + strings.Join(c.point.Files[:min(len(c.point.Files), 4)], ", ")
			if more := len(c.point.Files) - min(len(c.point.Files), 4) + c.point.More; more > 0 {
				label += fmt.Sprintf(" (+%d)", more)
			}
		default:
			label += "  — no file changes"
		}
		items[i] = label
	}
	t.pushDialog(&pickerDialog{
		title: "rewind to before which prompt?",
		items: items,
		sel:   len(items) - 1,
		pick:  func(t *TUI, i int) { t.rewindTo(choices[i]) },
	})
}

// rewindTo asks what to take back to before the chosen prompt.
func (t *TUI) rewindTo(c rewindChoice) {
	var items []string
	var acts []func(t *TUI)
	conversation := func(t *TUI) { t.rewindConversation(c) }
	if c.files != "" && c.at >= 0 {
		items = append(items, "the files and the conversation")
		acts = append(acts, func(t *TUI) { t.restoreFiles("/rewind", c.files, false, nil, conversation) })
	}
	if c.at >= 0 {
		items = append(items, "the conversation only (the files stay as they are)")
		acts = append(acts, conversation)
	}
	if c.files != "" {
		items = append(items, "the files only (the conversation stays)")
		acts = append(acts, func(t *TUI) { t.restoreFiles("/rewind", c.files, false, nil, nil) })
	}
	if len(items) == 0 {
		t.logf(sDim, "/rewind: that prompt is no longer in the conversation and no file changed since")
		return
	}
	items = append(items, "cancel")
	t.pushDialog(&pickerDialog{
		title: "rewind " + rewindQuote(c.prompt) + ": restore what?",
		items: items,
		pick: func(t *TUI, i int) {
			if i < len(acts) {
				t.whenIdle("/rewind", acts[i])
			}
		},
	})
}

// rewindConversation takes the conversation back to before prompt c,
// which goes back into the editor, as /fork does, but in this session.
func (t *TUI) rewindConversation(c rewindChoice) {
	msgs := t.agent.Messages()
	if c.at >= len(msgs) || !msgs[c.at].isPrompt() || !msgs[c.at].Time.Equal(c.when) {
		t.logf(fgRed, "/rewind: the conversation changed meanwhile; run /rewind again")
		return
	}
	if err := t.agent.Rewind(c.at); err != nil {
		t.logf(fgRed, "/rewind: %v", err)
		return
	}
	t.commitRule(fmt.Sprintf("rewound the conversation to before prompt %d", c.n))
	t.ed.set(editorClean(c.prompt))
}
