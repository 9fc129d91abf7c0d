package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// hangProvider answers nothing until the request is cancelled: a prompt
// that runs for as long as a test needs.
type hangProvider struct{ name string }

func (p *hangProvider) Name() string { return p.name }

func (p *hangProvider) Stream(ctx context.Context, req Request, on func(StreamEvent)) (Reply, error) {
	<-ctx.Done()
	return Reply{}, ctx.Err()
}

// startExtPrompt runs an extension command that answers with a prompt,
// as a slow command's reply does when it arrives while a dialog is open,
// and waits until the agent is in its turn.
func startExtPrompt(t *testing.T, tui *TUI) {
	t.Helper()
	tui.Ext = &fakeExt{resp: map[string]tuiCommandResponse{"go": {Action: "prompt", Prompt: "hello"}}}
	tui.invokeExtCommand("go", "")
	handleUntil(t, tui, isCmdDone)
	if tui.run == nil {
		t.Fatal("the extension's prompt did not start a run")
	}
	handleUntil(t, tui, func(m any) bool { e, ok := m.(msgEvent); return ok && e.ev.Type == "assistant_start" })
}

func stopRun(t *testing.T, tui *TUI) {
	t.Helper()
	tui.abort()
	handleUntil(t, tui, func(m any) bool { _, ok := m.(msgRunDone); return ok })
}

// homeFiles lists the files under dir.
func homeFiles(dir string) []string {
	var files []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return nil
	})
	return files
}

// TestDialogAnswersStopTheRunningPromptFirst opens each dialog whose
// answer changes the agent, starts a prompt the way a slow extension
// command's reply does, then answers: the running prompt is stopped and
// the user told so; nothing about the agent changes while the prompt's
// goroutine still runs (no provider swapped under it, no key saved, no
// session resumed or forked); once it has ended, the change is made.
func TestDialogAnswersStopTheRunningPromptFirst(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, args string
		pick       string // the picker item to choose
		keys       string
		changed    func(tui *TUI) bool
	}{
		{"model", "", "openai/", "\r", func(tui *TUI) bool { return tui.provider == "openai" }},
		{"login", "anthropic", "", "sk-new\r", func(tui *TUI) bool {
			key, _, _ := resolveKey("anthropic", "", tui.cfg.Home)
			return key == "sk-new"
		}},
		{"sessions", "", "an old prompt", "\r", func(tui *TUI) bool { return tui.agent.Messages()[0].Text() == "an old prompt" }},
		{"fork", "", "", "\r", func(tui *TUI) bool { return len(tui.agent.Messages()) == 0 }},
	} {
		t.Run(c.name+" "+c.args, func(t *testing.T) {
			tui, v := newTestTUI(t, 120, 30)
			prov := &hangProvider{"anthropic"}
			tui.agent.Provider = prov
			old := NewSession(tui.cfg.Home, tui.cfg.Cwd, "anthropic", "claude-sonnet-4-5")
			if err := old.Append(Message{Role: "user", Content: []Block{TextBlock("an old prompt")}}); err != nil {
				t.Fatal(err)
			}
			old.Close()
			tui.swapSession(NewSession(tui.cfg.Home, tui.cfg.Cwd, "anthropic", "claude-sonnet-4-5"))
			tui.agent.SetMessages([]Message{{Role: "user", Content: []Block{TextBlock("earlier")}}, {Role: "assistant", Content: []Block{TextBlock("ok")}}}, Usage{})

			tui.command(c.name, c.args)
			if len(tui.dialogs) != 1 {
				t.Fatalf("/%s %s opened %d dialogs", c.name, c.args, len(tui.dialogs))
			}
			if p, ok := tui.dialogs[0].(*pickerDialog); ok {
				for i, it := range p.items {
					if strings.Contains(it, c.pick) {
						p.sel = i
						break
					}
				}
			}
			startExtPrompt(t, tui)
			session, files := tui.session, homeFiles(tui.cfg.Home)
			tui.input([]byte(c.keys), false)
			tui.render()
			if want := "/" + c.name + ": stopped the running turn first"; !strings.Contains(v.String(), want) {
				t.Errorf("the screen does not say %q:\n%s", want, v.String())
			}
			if tui.run == nil || !tui.run.aborted {
				t.Fatal("the running prompt was not stopped")
			}
			if tui.agent.Provider != prov || tui.provider != "anthropic" || tui.agent.CurrentModel() != "claude-sonnet-4-5" {
				t.Errorf("the running prompt's provider changed: %s/%s (%T)", tui.provider, tui.agent.CurrentModel(), tui.agent.Provider)
			}
			if tui.session != session || len(tui.dialogs) != 0 {
				t.Errorf("session %v → %v, %d dialogs open", session.Path, tui.session.Path, len(tui.dialogs))
			}
			if now := homeFiles(tui.cfg.Home); strings.Join(now, "\n") != strings.Join(files, "\n") {
				t.Errorf("files in ZOT_HOME changed while the prompt ran:\n%s\nnow:\n%s", strings.Join(files, "\n"), strings.Join(now, "\n"))
			}
			handleUntil(t, tui, func(m any) bool { _, ok := m.(msgRunDone); return ok })
			if tui.run != nil || !c.changed(tui) {
				t.Errorf("after the prompt stopped, /%s made no change:\n%s", c.name, v.String())
			}
		})
	}
}

// TestCommandsActWhileTheAgentWorks: read-only commands act at once and
// leave the running prompt alone; commands that change the conversation
// stop it first and then run, in the order given.
func TestCommandsActWhileTheAgentWorks(t *testing.T) {
	t.Parallel()
	tui, v := newTestTUI(t, 120, 40)
	tui.agent.Provider = &hangProvider{"anthropic"}
	tui.agent.SetMessages([]Message{{Role: "user", Content: []Block{TextBlock("earlier")}}, {Role: "assistant", Content: []Block{TextBlock("ok")}}}, Usage{})
	tui.startPrompt(queuedPrompt{display: "work", text: "work"})
	handleUntil(t, tui, func(m any) bool { e, ok := m.(msgEvent); return ok && e.ev.Type == "assistant_start" })
	for _, cmd := range []string{"/help", "/jail", "/unjail", "/skills"} {
		tui.submitText(cmd, cmd)
	}
	tui.render()
	if tui.run == nil || tui.run.aborted {
		t.Fatal("a read-only command stopped the running prompt")
	}
	if s := v.String(); !strings.Contains(s, "Commands") || !strings.Contains(s, "jail on") || !strings.Contains(s, "jail off") {
		t.Errorf("read-only commands did not act at once:\n%s", s)
	}
	tui.submitText("/clear", "/clear")
	tui.submitText("/model claude-haiku-4-5", "/model claude-haiku-4-5")
	tui.render()
	if tui.run == nil || !tui.run.aborted || len(tui.agent.Messages()) == 0 {
		t.Fatal("/clear did not stop the prompt, or cleared under it")
	}
	handleUntil(t, tui, func(m any) bool { _, ok := m.(msgRunDone); return ok })
	tui.render()
	s := v.String()
	if len(tui.agent.Messages()) != 0 || tui.agent.CurrentModel() != "claude-haiku-4-5" {
		t.Errorf("after the stop: %d messages, model %s", len(tui.agent.Messages()), tui.agent.CurrentModel())
	}
	if strings.Index(s, "/clear: stopped the running turn first") > strings.Index(s, "conversation cleared") ||
		strings.Index(s, "conversation cleared") > strings.Index(s, "model: anthropic/claude-haiku-4-5") {
		t.Errorf("not stopped first, then cleared, then switched:\n%s", s)
	}
}

// TestModelPickerSwitchesProviderAndModelTogether picks a model of
// another provider when the agent is idle: the agent gets the new client
// and the new model in one step, and the session file records the model.
func TestModelPickerSwitchesProviderAndModelTogether(t *testing.T) {
	t.Parallel()
	tui, _ := newTestTUI(t, 120, 30)
	tui.agent.Provider = &hangProvider{"anthropic"}
	sess := NewSession(tui.cfg.Home, tui.cfg.Cwd, "anthropic", "claude-sonnet-4-5")
	tui.swapSession(sess)
	tui.command("model", "")
	p := tui.dialogs[0].(*pickerDialog)
	want := modelsFor("openai")[0].ID
	for i, it := range p.items {
		if strings.Contains(it, "openai/"+want+" ") {
			p.sel = i
		}
	}
	tui.input([]byte("\r"), false)
	if got := tui.agent.Provider; got == nil || got.Name() != "openai" || tui.agent.CurrentModel() != want || tui.provider != "openai" {
		t.Fatalf("after picking openai/%s: %s/%s", want, tui.provider, tui.agent.CurrentModel())
	}
	if sess.Meta.Model != want {
		t.Errorf("the session records model %q", sess.Meta.Model)
	}
	if b, err := os.ReadFile(filepath.Join(tui.cfg.Home, "config.json")); err != nil || !strings.Contains(string(b), want) {
		t.Errorf("config.json: %s %v", b, err)
	}
}

// TestConfigIsPrivate: config.json can hold a base URL with credentials
// in it, so it is written 0600 whatever mode it had, unless its own mode
// is stricter.
func TestConfigIsPrivate(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path := filepath.Join(home, "config.json")
	cfg := userConfig{Provider: "openai", Model: "m", BaseURL: "https://user:secret@llm.example/v1?key=k"}
	for _, c := range []struct{ had, want os.FileMode }{{0, 0o600}, {0o644, 0o600}, {0o666, 0o600}, {0o640, 0o600}, {0o400, 0o400}} {
		if c.had != 0 {
			if err := os.Chmod(path, c.had); err != nil {
				t.Fatal(err)
			}
		}
		if err := saveConfig(home, cfg); err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != c.want {
			t.Errorf("config.json that was %o is now %o, want %o", c.had, info.Mode().Perm(), c.want)
		}
		if got, err := loadConfig(home); err != nil || got.Provider != cfg.Provider || got.Model != cfg.Model || got.BaseURL != cfg.BaseURL {
			t.Errorf("config read back: %+v %v", got, err)
		}
	}
}

// TestExtensionsCannotTakeTheTUIsCommands wires a real extension host into
// the TUI as main.go does. An extension that registers every built-in
// command's name, and one of its own, keeps only its own: the host
// reserves the TUI's names, whatever list of its own it keeps.
func TestExtensionsCannotTakeTheTUIsCommands(t *testing.T) {
	t.Parallel()
	tui, _ := newUnwiredTestTUI(t, 100, 30)
	names := tuiCommandNames()
	if len(names) != len(builtinCommands()) || names[0] != "help" {
		t.Fatalf("tuiCommandNames() = %q", names)
	}
	var frames []obj
	for _, name := range append(names, "mine") {
		frames = append(frames, obj{"type": "register_command", "name": name})
	}
	s := &setup{home: tui.cfg.Home, cwd: tui.cfg.Cwd, provider: "anthropic", agent: tui.agent,
		opts: zotOptions{ext: []string{scriptedExt(t, "grabby", obj{"frames": frames})}, noExt: true, noMCP: true}}
	tui.agent.Pipeline.AddToolGate(armedStage, s.armedGate) // as newSetup does
	stop := s.plugTUI(tui)
	defer stop()
	if tui.Ext == nil {
		t.Fatal("the TUI was not armed: see its notes")
	}
	var got []string
	for _, c := range tui.Ext.Commands() {
		got = append(got, c.Name)
	}
	if strings.Join(got, " ") != "mine" {
		t.Errorf("the extension holds the commands %q", got)
	}
}

// A resumed session shows how full its context is at once, not "ctx 0%"
// until the next model call: through /sessions and through -c.
func TestResumedSessionShowsItsContextInTheStatusBar(t *testing.T) {
	t.Parallel()
	tui, _ := newTestTUI(t, 150, 30)
	path := newTestSession(t, tui.cfg.Home, tui.cfg.Cwd, sampleTranscript(), Usage{Input: 60000})
	tui.resumeSession(path)
	if row := plain(tui.statusRow(150)); !strings.Contains(row, "ctx 30%") {
		t.Errorf("after /sessions the status bar is %q, want ctx 30%%", row)
	}
	tui.session.Close() // one open at a time: the file is locked while open

	s := &setup{home: tui.cfg.Home, cwd: tui.cfg.Cwd, provider: "anthropic", opts: zotOptions{continueLast: true},
		agent: NewAgent(nil, "claude-sonnet-4-5", nil)}
	if err := s.openSession(true, nil); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if _, last := s.agent.Totals(); last != 60000 {
		t.Errorf("after -c the last context is %d, want 60000", last)
	}
}

// A prompt's attached files are blocks of their own before the text the
// user typed. /fork, the session lists and a resumed transcript show that
// text, not the files: re-sending a forked prompt attaches them once.
func TestAttachedFilesStayOutOfForkSessionsAndTranscripts(t *testing.T) {
	t.Parallel()
	tui, v := newTestTUI(t, 100, 30)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "Read it."})})
	tui.agent.Provider, _ = testProvider(t, "anthropic", srv.URL)
	tui.agent.Pipeline.AddPromptGate(testStage, func(context.Context, string) (bool, string, string) { return false, "", "context from a hook" })
	tui.session = NewSession(tui.cfg.Home, tui.cfg.Cwd, "anthropic", "claude-sonnet-4-5")
	tui.agent.Recorder = tui.session
	defer func() { tui.session.Close() }()
	os.WriteFile(filepath.Join(tui.cfg.Cwd, "notes.txt"), []byte("secret contents\n"), 0o644)

	tui.startPrompt(queuedPrompt{display: "check @notes.txt", text: "check @notes.txt"})
	handleUntil(t, tui, func(m any) bool { _, ok := m.(msgRunDone); return ok })
	tui.render()
	if s := v.String(); !strings.Contains(s, "› check @notes.txt") || !strings.Contains(s, "+ @notes.txt (1 lines)") {
		t.Fatalf("the prompt was not shown with its attachment:\n%s", s)
	}
	msgs := tui.agent.Messages()
	if typed, added := splitPrompt(msgs[0]); typed != "check @notes.txt" || len(added) != 2 {
		t.Errorf("splitPrompt = %q, %+v", typed, added)
	}

	list, err := ListSessions(tui.cfg.Home, tui.cfg.Cwd)
	if err != nil || len(list) != 1 || list[0].FirstPrompt != "check @notes.txt" {
		t.Errorf("sessions list %+v, %v: want the first prompt as typed", list, err)
	}

	resumed, rv := newTestTUI(t, 100, 30)
	resumed.showTranscript(msgs)
	resumed.render()
	s := rv.String()
	if !strings.Contains(s, "› check @notes.txt") || !strings.Contains(s, "+ @notes.txt (1 lines)") {
		t.Errorf("the resumed transcript does not show the prompt as it was sent:\n%s", s)
	}
	if strings.Contains(s, "secret contents") || strings.Contains(s, "<file") || strings.Contains(s, "context from a hook") {
		t.Errorf("the resumed transcript shows what was attached:\n%s", s)
	}

	for b, want := range map[*Block]string{
		{Type: "image", MimeType: "image/png", Data: "iVBORw=="}:   "[image: not an image zot can read, 4 bytes]",
		{Type: "text", Text: "<file path=\"a b.txt\">\n\n</file>"}: "@a b.txt (0 lines)",
		{Type: "text", Text: "<file path=\"x\">\nno end"}:          "",
		{Type: "text", Text: "context from a hook"}:                "",
	} {
		if got, ok := describeAttachment(*b); got != want || ok != (want != "") {
			t.Errorf("describeAttachment(%+v) = %q, %v; want %q", *b, got, ok, want)
		}
	}

	tui.cmdFork("")
	picker, ok := tui.dialogs[len(tui.dialogs)-1].(*pickerDialog)
	if !ok || len(picker.items) != 1 || picker.items[0] != "1) check @notes.txt" {
		t.Fatalf("fork picker %+v", tui.dialogs)
	}
	tui.input([]byte("\r"), false)
	if got := tui.ed.text(); got != "check @notes.txt" {
		t.Errorf("after /fork the editor holds %q", got)
	}
}

// commandFromRows reads a command back from the rows callRows made for it:
// the numbered lines, and the rows each wrapped onto, without the gutter.
func commandFromRows(t *testing.T, rows []string) string {
	t.Helper()
	gutter := regexp.MustCompile(`^ +(\d+│|┆) `)
	var lines []string
	for _, r := range rows {
		r = plain(r)
		m := gutter.FindString(r)
		switch {
		case m == "":
			continue
		case strings.Contains(m, "│"):
			lines = append(lines, r[len(m):])
		case len(lines) == 0:
			t.Fatalf("a continuation row before the first line: %q", r)
		default:
			lines[len(lines)-1] += r[len(m):]
		}
	}
	return strings.Join(lines, "\n")
}

// A confirmation shows every character of a bash command: a run of
// spaces or a newline cannot push its dangerous part out of sight.
func TestConfirmShowsTheWholeBashCommand(t *testing.T) {
	t.Parallel()
	padded := "echo safe" + strings.Repeat(" ", 150) + "; echo DANGER > pwned.txt"
	multi := "echo hi\nrm -rf ~/important\n\n  echo done"
	long := strings.Repeat("echo line\n", 299) + "rm -rf ~/the-end"
	for _, width := range []int{20, 78, 200} {
		for _, cmd := range []string{padded, multi, long} {
			args, _ := json.Marshal(obj{"command": cmd, "timeout": 30})
			rows := callRows(ToolCall{Name: "bash", Args: args}, width)
			for _, r := range rows {
				if w := visibleWidth(r); w > width {
					t.Fatalf("width %d: row %q is %d wide", width, plain(r), w)
				}
			}
			text := plain(strings.Join(rows, "\n"))
			if !strings.HasPrefix(text, "bash\n") || !strings.Contains(text, "timeout: 30") {
				t.Errorf("width %d: rows:\n%s", width, text)
			}
			inline := "command: " + cmd
			if strings.Contains(text, inline) {
				continue // it fitted on one row, all of it
			}
			if got := commandFromRows(t, rows); got != cmd {
				t.Errorf("width %d: the rows show the command as\n%q\nwant\n%q", width, got, cmd)
			}
		}
	}
	args, _ := json.Marshal(obj{"command": multi})
	text := plain(strings.Join(callRows(ToolCall{Name: "bash", Args: args}, 60), "\n"))
	if !strings.Contains(text, "command: (4 lines)\n  1│ echo hi\n  2│ rm -rf ~/important\n  3│ \n  4│   echo done") {
		t.Errorf("a command of several lines is not shown line by line:\n%s", text)
	}
}

// Other tools' arguments are shown too; a long one is cut after a bounded
// number of rows, saying how much is left out.
func TestConfirmShowsOtherToolsArgumentsAndWhatItLeavesOut(t *testing.T) {
	t.Parallel()
	content := strings.Repeat("some text\n", 99) + "last line"
	args, _ := json.Marshal(obj{"path": "notes.txt", "content": content})
	text := plain(strings.Join(callRows(ToolCall{Name: "write", Args: args}, 80), "\n"))
	for _, want := range []string{"write\npath: notes.txt\ncontent: (100 lines)\n    1│ some text", " 20│ some text", "… 80 more lines not shown"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, " 21│") || strings.Contains(text, "last line") {
		t.Errorf("a long argument was not cut:\n%s", text)
	}
	huge, _ := json.Marshal(obj{"data": strings.Repeat("x", 5000) + "\nsecond"})
	text = plain(strings.Join(callRows(ToolCall{Name: "mcp__x", Args: huge}, 80), "\n"))
	if !strings.Contains(text, "… the rest of line 1 and 1 more line not shown") || strings.Contains(text, "second") {
		t.Errorf("a huge line was not cut:\n%s", text)
	}
	edits, _ := json.Marshal(obj{"path": "a.go", "edits": []obj{{"oldText": "a", "newText": "b"}}})
	text = plain(strings.Join(callRows(ToolCall{Name: "edit", Args: edits}, 80), "\n"))
	if !strings.Contains(text, "path: a.go\nedits: (6 lines)") || !strings.Contains(text, `"newText": "b"`) {
		t.Errorf("edit arguments:\n%s", text)
	}
	bad := plain(strings.Join(callRows(ToolCall{Name: "bash", Args: json.RawMessage(`{"command": "rm -rf`)}, 80), "\n"))
	if !strings.Contains(bad, `{"command": "rm -rf`) {
		t.Errorf("arguments that are not JSON are not shown:\n%s", bad)
	}
}

// A call taller than the terminal scrolls, and yes is taken only once its
// last row has been on screen; no is always taken.
func TestConfirmDialogScrollsAndWantsTheEndSeenBeforeYes(t *testing.T) {
	t.Parallel()
	tui, _ := newTestTUI(t, 80, 24)
	var cmd strings.Builder
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&cmd, "echo step-%d\n", i)
	}
	cmd.WriteString("rm -rf ~/hidden-at-the-end")
	args, _ := json.Marshal(obj{"command": cmd.String()})
	req := &confirmReq{ctx: context.Background(), call: ToolCall{ID: "1", Name: "bash", Args: args},
		asks: []GateNote{{By: "--no-yolo", Decision: "ask"}}, reply: make(chan bool, 1)}
	tui.handle(msgConfirm{req})
	seen := map[string]bool{}
	look := func() string {
		tui.render()
		rows, _, _ := tui.view()
		if len(rows) > 23 {
			t.Fatalf("the live region is %d rows in a 24-row terminal", len(rows))
		}
		view := plain(strings.Join(rows, "\n"))
		for _, l := range strings.Split(view, "\n") {
			if i := strings.Index(l, "│ echo step-"); i >= 0 {
				seen[l[i+len("│ "):]] = true
			}
			if strings.Contains(l, "rm -rf ~/hidden-at-the-end") {
				seen["end"] = true
			}
		}
		if !strings.Contains(view, "› yes") || !strings.Contains(view, "esc: no") {
			t.Fatalf("the options or the footer are off screen:\n%s", view)
		}
		return view
	}
	if view := look(); !strings.Contains(view, "read to the end (pgdn) before answering yes") || seen["end"] {
		t.Fatalf("a tall call is not scrolled:\n%s", view)
	}
	for _, yes := range []string{"y", "a", "t", "\r"} {
		tui.input([]byte(yes), false)
		if len(tui.dialogs) != 1 || len(req.reply) != 0 {
			t.Fatalf("%q answered before the end of the call was seen", yes)
		}
	}
	for i := 0; i < 10 && !seen["end"]; i++ {
		tui.input([]byte("\x1b[6~"), false) // page down
		look()
	}
	if len(seen) != 61 {
		t.Errorf("paging showed %d of the 61 lines", len(seen))
	}
	if view := look(); !strings.Contains(view, "pgup pgdn home end scroll") {
		t.Errorf("at the end:\n%s", view)
	}
	tui.input([]byte("\x1b[H"), false) // home: back to the top, yes still taken
	if view := look(); !strings.Contains(view, "rows 1–") {
		t.Errorf("home did not go back to the top:\n%s", view)
	}
	tui.input([]byte("y"), false)
	if len(tui.dialogs) != 0 || !<-req.reply {
		t.Errorf("yes after reading to the end was not taken")
	}

	req = &confirmReq{ctx: context.Background(), call: req.call, asks: req.asks, reply: make(chan bool, 1)}
	tui.lastKeyAt = time.Time{} // not typing
	tui.handle(msgConfirm{req})
	tui.input([]byte("n"), false)
	if len(tui.dialogs) != 0 || <-req.reply {
		t.Errorf("no was not taken at once")
	}
}
