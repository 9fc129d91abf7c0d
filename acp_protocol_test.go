package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The parts of ACP that docs/acp.md says zot supports, each driven through
// the built `zot acp` on stdin and stdout; every message zot writes is
// checked against the schema too (acp_schema_test.go).

// mark is the index of the next line zot writes.
func (p *acpProc) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lines)
}

// updatesOf are the updates of one session from line index from on.
func (p *acpProc) updatesOf(session string, from, to int) []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []map[string]any
	for _, l := range p.lines[from:min(to, len(p.lines))] {
		var params struct {
			SessionID string `json:"sessionId"`
		}
		json.Unmarshal(l.Params, &params)
		if l.Method == "session/update" && params.SessionID == session {
			out = append(out, l.update())
		}
	}
	return out
}

// open opens a session in cwd on an initialized connection.
func (p *acpProc) open(cwd string) string {
	p.t.Helper()
	var r struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(p.mustCall("session/new", obj{"cwd": cwd, "mcpServers": []any{}}), &r)
	if r.SessionID == "" {
		p.t.Fatal("session/new gave no sessionId")
	}
	return r.SessionID
}

// prompt sends a prompt of blocks and returns its stop reason.
func (p *acpProc) prompt(session string, blocks ...any) string {
	p.t.Helper()
	var r struct {
		StopReason string `json:"stopReason"`
	}
	json.Unmarshal(p.mustCall("session/prompt", obj{"sessionId": session, "prompt": blocks}), &r)
	return r.StopReason
}

func textBlock(text string) obj { return obj{"type": "text", "text": text} }

// errorCode is the code of a call's error; 0 when it succeeded.
func (p *acpProc) errorCode(method string, params any) int {
	p.t.Helper()
	if l := p.call(method, params); l.Error != nil {
		return l.Error.Code
	}
	return 0
}

// chunkText joins the text of the updates of one kind.
func chunkText(updates []map[string]any, kind string) string {
	var b strings.Builder
	for _, u := range updates {
		if u["sessionUpdate"] == kind {
			c, _ := u["content"].(map[string]any)
			s, _ := c["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// TestACPSessionsListResumeAndClose: session/list shows the sessions of
// every directory (the terminal's too) or of one, with their titles;
// session/close frees a session, cancelling its prompt; session/resume
// opens it again without replaying it, and the model sees the
// conversation go on.
func TestACPSessionsListResumeAndClose(t *testing.T) {
	t.Parallel()
	slow := anthropicEvents(gen{Text: "I am talking slowly"})
	srv := startReplay(t, textStep("From the terminal."), textStep("First answer."), textStep("Elsewhere."), textStep("Resumed answer."),
		replayStep{Events: slow, HangAfter: len(slow) - 2})
	z := newZotRun(t)
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "a terminal prompt")...); code != 0 {
		t.Fatalf("zot -p: exit %d\n%s", code, stderr)
	}
	other := t.TempDir()
	p := startACPProc(t, z, anthropicFlags(srv)...)
	caps := p.initialize()
	for _, c := range []string{"list", "resume", "close"} {
		if string(caps.SessionCapabilities[c]) != "{}" {
			t.Errorf("sessionCapabilities.%s is %s, want {}", c, caps.SessionCapabilities[c])
		}
	}
	if !caps.LoadSession {
		t.Error("loadSession is not advertised")
	}

	here := p.open(z.cwd)
	if stop := p.prompt(here, textBlock("Fix the  parser\nplease")); stop != "end_turn" {
		t.Fatalf("the first prompt stopped %q", stop)
	}
	there := p.open(other)
	if stop := p.prompt(there, textBlock("elsewhere")); stop != "end_turn" {
		t.Fatalf("the second session's prompt stopped %q", stop)
	}

	type listed struct {
		SessionID string `json:"sessionId"`
		Cwd       string `json:"cwd"`
		Title     string `json:"title"`
		UpdatedAt string `json:"updatedAt"`
	}
	list := func(params obj) map[string]listed {
		t.Helper()
		var r struct {
			Sessions   []listed `json:"sessions"`
			NextCursor *string  `json:"nextCursor"`
		}
		json.Unmarshal(p.mustCall("session/list", params), &r)
		if r.NextCursor != nil {
			t.Errorf("session/list %v: a next cursor %q for three sessions", params, *r.NextCursor)
		}
		out := map[string]listed{}
		for _, s := range r.Sessions {
			if _, err := time.Parse(time.RFC3339, s.UpdatedAt); err != nil {
				t.Errorf("session %s: updatedAt %q is not ISO 8601", s.SessionID, s.UpdatedAt)
			}
			s.UpdatedAt = ""
			out[s.Title] = s
		}
		return out
	}
	all := list(obj{})
	want := map[string]listed{
		"a terminal prompt":     {SessionID: all["a terminal prompt"].SessionID, Cwd: z.cwd, Title: "a terminal prompt"},
		"Fix the parser please": {SessionID: here, Cwd: z.cwd, Title: "Fix the parser please"},
		"elsewhere":             {SessionID: there, Cwd: other, Title: "elsewhere"},
	}
	if len(all) != 3 || all["a terminal prompt"].SessionID == "" || !maps.Equal(all, want) {
		t.Errorf("session/list of every directory:\n got %+v\nwant %+v", all, want)
	}
	if one := list(obj{"cwd": other}); len(one) != 1 || one["elsewhere"].SessionID != there {
		t.Errorf("session/list of %s: %+v", other, one)
	}
	if code := p.errorCode("session/list", obj{"cwd": "relative/dir"}); code != acpInvalidParams {
		t.Errorf("session/list of a relative cwd: code %d, want %d", code, acpInvalidParams)
	}

	if r := string(p.mustCall("session/close", obj{"sessionId": here})); r != "{}" {
		t.Errorf("session/close answered %s", r)
	}
	if code := p.errorCode("session/prompt", obj{"sessionId": here, "prompt": []any{textBlock("still there?")}}); code != acpNotFound {
		t.Errorf("a prompt to a closed session: code %d, want %d", code, acpNotFound)
	}
	if code := p.errorCode("session/close", obj{"sessionId": here}); code != acpNotFound {
		t.Errorf("closing a closed session: code %d, want %d", code, acpNotFound)
	}
	if code := p.errorCode("session/resume", obj{"sessionId": "no-such-session", "cwd": z.cwd}); code != acpNotFound {
		t.Errorf("resuming a session that does not exist: code %d, want %d", code, acpNotFound)
	}
	if code := p.errorCode("session/resume", obj{"sessionId": there, "cwd": other}); code != acpInvalidRequest {
		t.Errorf("resuming a session that is open: code %d, want %d", code, acpInvalidRequest)
	}

	from := p.mark()
	var resumed struct {
		Modes         *struct{ CurrentModeID string } `json:"modes"`
		ConfigOptions []struct{ ID string }           `json:"configOptions"`
	}
	json.Unmarshal(p.mustCall("session/resume", obj{"sessionId": here, "cwd": z.cwd, "mcpServers": []any{}}), &resumed)
	if resumed.Modes == nil || resumed.Modes.CurrentModeID != "ask" || len(resumed.ConfigOptions) != 3 {
		t.Errorf("session/resume answered modes %+v and config options %+v", resumed.Modes, resumed.ConfigOptions)
	}
	for _, u := range p.updatesOf(here, from, p.mark()) {
		if k := u["sessionUpdate"]; k != "available_commands_update" {
			t.Errorf("session/resume replayed %v (only session/load replays)", u)
		}
	}
	if stop := p.prompt(here, textBlock("and now?")); stop != "end_turn" {
		t.Fatalf("the resumed session's prompt stopped %q", stop)
	}
	reqs := srv.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, `Fix the  parser\nplease`) || !strings.Contains(body, "First answer.") || !strings.Contains(body, "and now?") {
		t.Errorf("the model did not see the resumed conversation go on: %s", body)
	}

	// A close while a prompt runs cancels it first, as session/cancel would.
	from = p.mark()
	running := p.request("session/prompt", obj{"sessionId": there, "prompt": []any{textBlock("talk slowly")}})
	p.waitFor(from, "the slow answer's first words", func(l acpLine) bool { return l.update()["sessionUpdate"] == "agent_message_chunk" })
	closing := p.request("session/close", obj{"sessionId": there})
	answer, _ := p.waitFor(from, "the running prompt's answer", func(l acpLine) bool { return l.Method == "" && string(l.ID) == running })
	if !strings.Contains(string(answer.Result), `"stopReason":"cancelled"`) {
		t.Errorf("the prompt the close ended answered %s", answer.Raw)
	}
	closed, _ := p.waitFor(from, "the close's answer", func(l acpLine) bool { return l.Method == "" && string(l.ID) == closing })
	if string(closed.Result) != "{}" {
		t.Errorf("session/close of a running session answered %s", closed.Raw)
	}
}

// TestACPWithoutSessionsOffersNoList: with --no-session nothing is saved,
// so session/list, resume and load are neither advertised nor answered;
// close still is.
func TestACPWithoutSessionsOffersNoList(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("Not kept."))
	z := newZotRun(t)
	p := startACPProc(t, z, append(anthropicFlags(srv), "--no-session")...)
	agent := p.initialize()
	caps := agent.SessionCapabilities
	if agent.LoadSession || caps["list"] != nil || caps["resume"] != nil || string(caps["close"]) != "{}" {
		t.Errorf("with --no-session: loadSession %v, sessionCapabilities %s", agent.LoadSession, jsonText(caps))
	}
	session := p.open(z.cwd)
	if stop := p.prompt(session, textBlock("hello")); stop != "end_turn" {
		t.Fatalf("the prompt stopped %q", stop)
	}
	if code := p.errorCode("session/list", obj{}); code != acpMethodNotFound {
		t.Errorf("session/list with --no-session: code %d, want %d", code, acpMethodNotFound)
	}
	for _, method := range []string{"session/resume", "session/load"} {
		if code := p.errorCode(method, obj{"sessionId": session, "cwd": z.cwd, "mcpServers": []any{}}); code != acpNotFound {
			t.Errorf("%s with --no-session: code %d, want %d", method, code, acpNotFound)
		}
	}
	if r := string(p.mustCall("session/close", obj{"sessionId": session})); r != "{}" {
		t.Errorf("session/close answered %s", r)
	}
	if entries, _ := os.ReadDir(filepath.Join(z.home, "sessions")); len(entries) != 0 {
		t.Errorf("--no-session saved %d session directories", len(entries))
	}
}

// onePixelPNG is a whole PNG image, one pixel.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// anthropicPrompt is the last message of a recorded Anthropic request:
// the prompt the model received, block by block.
func anthropicPrompt(t *testing.T, r capturedRequest) []map[string]any {
	t.Helper()
	var body struct {
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || len(body.Messages) == 0 {
		t.Fatalf("the model request: %v\n%s", err, r.Body)
	}
	last := body.Messages[len(body.Messages)-1]
	if last.Role != "user" {
		t.Fatalf("the model request ends with a %s message", last.Role)
	}
	return last.Content
}

// TestACPPromptWithAnImageALinkAndAnEmbeddedFile: what the editor puts in
// a prompt is what the model receives: an image as an image, a resource
// link as the file's path to read, an embedded file's text whole (its own
// code fences cannot end it early), an embedded image as an image.
func TestACPPromptWithAnImageALinkAndAnEmbeddedFile(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("A pixel, a link and a README."))
	z := newZotRun(t)
	p := startACPProc(t, z, anthropicFlags(srv)...)
	if c := p.initialize().PromptCapabilities; !c["image"] || !c["embeddedContext"] || c["audio"] {
		t.Errorf("promptCapabilities %v, want image and embeddedContext, no audio", c)
	}
	session := p.open(z.cwd)

	linked := filepath.Join(z.cwd, "main.go")
	readme := filepath.Join(z.cwd, "README.md")
	const readmeText = "# Tool\n\nBuild it:\n\n```sh\nmake\n```\n\nThen run it.\n"
	for _, bad := range []obj{
		{"type": "image", "mimeType": "image/bmp", "data": onePixelPNG},
		{"type": "image", "mimeType": "image/png", "data": "not base64!"},
		{"type": "audio", "mimeType": "audio/wav", "data": onePixelPNG},
	} {
		if code := p.errorCode("session/prompt", obj{"sessionId": session, "prompt": []any{textBlock("see"), bad}}); code != acpInvalidParams {
			t.Errorf("a prompt with %v: code %d, want %d", bad, code, acpInvalidParams)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("the refused prompts reached the model %d times", n)
	}

	stop := p.prompt(session,
		textBlock("What are these?"),
		obj{"type": "image", "mimeType": "image/png", "data": onePixelPNG},
		obj{"type": "resource_link", "uri": "file://" + linked, "name": "main.go"},
		obj{"type": "resource", "resource": obj{"uri": "file://" + readme, "mimeType": "text/markdown", "text": readmeText}},
		obj{"type": "resource", "resource": obj{"uri": "file://" + filepath.Join(z.cwd, "logo.png"), "mimeType": "image/png", "blob": onePixelPNG}})
	if stop != "end_turn" {
		t.Fatalf("the prompt stopped %q", stop)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests, want 1", len(reqs))
	}
	var images, texts []string
	for _, b := range anthropicPrompt(t, reqs[0]) {
		switch b["type"] {
		case "image":
			images = append(images, jsonText(b["source"]))
		case "text":
			texts = append(texts, b["text"].(string))
		default:
			t.Errorf("the model received a %v block", b["type"])
		}
	}
	image := jsonText(obj{"data": onePixelPNG, "media_type": "image/png", "type": "base64"})
	if !slices.Equal(images, []string{image, image}) {
		t.Errorf("the model received the images %q, want the inline and the embedded one as %s", images, image)
	}
	wantTexts := []string{
		"The user refers to " + linked + " (main.go): read it with your tools if you need it.",
		"Contents of " + readme + ", as the user's editor has it:\n\n````\n" + readmeText + "````",
		"What are these?",
	}
	for _, w := range wantTexts {
		if !slices.Contains(texts, w) {
			t.Errorf("the model did not receive %q; it received %q", w, texts)
		}
	}
	if len(texts) == 0 || texts[len(texts)-1] != "What are these?" {
		t.Errorf("the prompt's own text is not its last block: %q", texts)
	}
}

// configOption is one of a session's config options, as the editor reads it.
type configOption struct {
	ID           string `json:"id"`
	Category     string `json:"category"`
	CurrentValue string `json:"currentValue"`
	Options      []struct {
		Value string `json:"value"`
	} `json:"options"`
}

func configOptionsOf(t *testing.T, raw json.RawMessage) map[string]configOption {
	t.Helper()
	var r struct {
		ConfigOptions []configOption `json:"configOptions"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	out := map[string]configOption{}
	for _, o := range r.ConfigOptions {
		out[o.ID] = o
	}
	return out
}

func (o configOption) values() []string {
	var out []string
	for _, v := range o.Options {
		out = append(out, v.Value)
	}
	return out
}

// TestACPConfigOptionsModelAndThinkingLevel: the model and the thinking
// level are session config options whose values are what the model can
// take; setting one answers the options as they are now, and the next
// model request carries the choice. A mode set as a config option is a
// current_mode_update and a config_option_update.
func TestACPConfigOptionsModelAndThinkingLevel(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("Thought hard."), textStep("Did not think."))
	z := newZotRun(t)
	p := startACPProc(t, z, anthropicFlags(srv)...)
	p.initialize()
	opened := p.mustCall("session/new", obj{"cwd": z.cwd, "mcpServers": []any{}})
	var session struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(opened, &session)
	opts := configOptionsOf(t, opened)
	if m := opts["model"]; m.Category != "model" || m.CurrentValue != "claude-sonnet-4-6" || !slices.Contains(m.values(), "claude-haiku-4-5") {
		t.Errorf("the model option: %+v", m)
	}
	if l := opts["thought_level"]; l.Category != "thought_level" || l.CurrentValue != "default" || !slices.Equal(l.values(), []string{"default", "off", "low", "medium", "high", "max"}) {
		t.Errorf("the thinking option of claude-sonnet-4-6: %+v", l)
	}

	set := func(id, value string) map[string]configOption {
		t.Helper()
		return configOptionsOf(t, p.mustCall("session/set_config_option", obj{"sessionId": session.SessionID, "configId": id, "value": value}))
	}
	opts = set("model", "claude-haiku-4-5")
	if m, l := opts["model"], opts["thought_level"]; m.CurrentValue != "claude-haiku-4-5" || !slices.Equal(l.values(), []string{"default", "off", "low", "medium", "high"}) {
		t.Errorf("after the model change: model %+v, thinking %+v (haiku has no max)", m, l)
	}
	if l := set("thought_level", "high")["thought_level"]; l.CurrentValue != "high" {
		t.Errorf("after the thinking change: %+v", l)
	}
	for _, bad := range [][2]string{{"thought_level", "max"}, {"model", "no-such-model"}, {"temperature", "hot"}} {
		if code := p.errorCode("session/set_config_option", obj{"sessionId": session.SessionID, "configId": bad[0], "value": bad[1]}); code != acpInvalidParams {
			t.Errorf("setting %s to %s: code %d, want %d", bad[0], bad[1], code, acpInvalidParams)
		}
	}
	if stop := p.prompt(session.SessionID, textBlock("think")); stop != "end_turn" {
		t.Fatalf("the prompt stopped %q", stop)
	}
	set("thought_level", "off")
	if stop := p.prompt(session.SessionID, textBlock("do not think")); stop != "end_turn" {
		t.Fatalf("the second prompt stopped %q", stop)
	}
	type sent struct {
		Model    string `json:"model"`
		Thinking *struct {
			Type         string `json:"type"`
			BudgetTokens int    `json:"budget_tokens"`
		} `json:"thinking"`
	}
	var bodies []sent
	for _, r := range srv.Requests() {
		var b sent
		json.Unmarshal(r.Body, &b)
		bodies = append(bodies, b)
	}
	if len(bodies) != 2 || bodies[0].Model != "claude-haiku-4-5" || bodies[0].Thinking == nil || bodies[0].Thinking.Type != "enabled" || bodies[0].Thinking.BudgetTokens != thinkingBudget["high"] {
		t.Errorf("the first request, at high on claude-haiku-4-5: %s", jsonText(bodies))
	}
	if len(bodies) == 2 && (bodies[1].Model != "claude-haiku-4-5" || bodies[1].Thinking != nil) {
		t.Errorf("the second request, thinking off: %s", jsonText(bodies[1]))
	}

	from := p.mark()
	if m := set("mode", "accept-edits")["mode"]; m.CurrentValue != "accept-edits" {
		t.Errorf("the mode option after setting it: %+v", m)
	}
	p.waitFor(from, "current_mode_update accept-edits", func(l acpLine) bool {
		u := l.update()
		return u["sessionUpdate"] == "current_mode_update" && u["currentModeId"] == "accept-edits"
	})
	l, _ := p.waitFor(from, "config_option_update", func(l acpLine) bool { return l.update()["sessionUpdate"] == "config_option_update" })
	var update struct {
		Update json.RawMessage `json:"update"`
	}
	json.Unmarshal(l.Params, &update)
	if u := configOptionsOf(t, update.Update); u["mode"].CurrentValue != "accept-edits" || u["model"].CurrentValue != "claude-haiku-4-5" || u["thought_level"].CurrentValue != "off" {
		t.Errorf("config_option_update after the mode change: %s", update.Update)
	}
}

// withStop is an Anthropic stream whose message ends for reason.
func withStop(events []string, reason string) []string {
	out := slices.Clone(events)
	for i, e := range out {
		if strings.HasPrefix(e, "event: message_delta") {
			out[i] = strings.Replace(e, `"stop_reason":"end_turn"`, `"stop_reason":"`+reason+`"`, 1)
		}
	}
	return out
}

// TestACPStopReasons: a prompt stops max_tokens when the model ran out of
// output, max_turn_requests at --max-steps, and refusal when a hook
// refused it — whose reason the editor shows, and which the model never
// sees, then or later.
func TestACPStopReasons(t *testing.T) {
	t.Parallel()
	t.Run("max_tokens", func(t *testing.T) {
		t.Parallel()
		srv := startReplay(t, replayStep{Events: withStop(anthropicEvents(gen{Text: "The answer is cut"}), "max_tokens")}, textStep("Whole again."))
		z := newZotRun(t)
		p := startACPProc(t, z, anthropicFlags(srv)...)
		session := p.newSession(z.cwd, obj{})
		if stop := p.prompt(session, textBlock("a long answer")); stop != "max_tokens" {
			t.Errorf("a reply cut at the output limit stopped %q", stop)
		}
		if text := chunkText(p.updates(), "agent_message_chunk"); text != "The answer is cut" {
			t.Errorf("the cut answer streamed as %q", text)
		}
		if stop := p.prompt(session, textBlock("again")); stop != "end_turn" {
			t.Errorf("the next prompt stopped %q", stop)
		}
	})
	t.Run("max_turn_requests", func(t *testing.T) {
		t.Parallel()
		srv := startReplay(t, toolStep("r1", "read", obj{"path": "notes.txt"}), toolStep("r2", "read", obj{"path": "notes.txt"}), textStep("Read it twice."))
		z := newZotRun(t)
		os.WriteFile(filepath.Join(z.cwd, "notes.txt"), []byte("kiwi\n"), 0o644)
		p := startACPProc(t, z, append(anthropicFlags(srv), "--max-steps", "2")...)
		session := p.newSession(z.cwd, obj{})
		if stop := p.prompt(session, textBlock("read forever")); stop != "max_turn_requests" {
			t.Errorf("a prompt past --max-steps stopped %q", stop)
		}
		if n := len(srv.Requests()); n != 2 {
			t.Errorf("%d model requests, want --max-steps 2", n)
		}
		if stop := p.prompt(session, textBlock("go on")); stop != "end_turn" {
			t.Errorf("the next prompt stopped %q", stop)
		}
	})
	t.Run("refusal", func(t *testing.T) {
		t.Parallel()
		z := newZotRun(t)
		claudeSettings(t, z, obj{"UserPromptSubmit": []obj{group("", specHook(t, obj{"rules": []obj{{"match": "deploy", "stderr": "no deploys on Fridays", "exit": 2}}}))}})
		srv := startReplay(t, textStep("Tests pass."))
		p := startACPProc(t, z, append(anthropicFlags(srv), "--claude-hooks")...)
		session := p.newSession(z.cwd, obj{})
		from := p.mark()
		if stop := p.prompt(session, textBlock("deploy to production")); stop != "refusal" {
			t.Errorf("a prompt the hook refused stopped %q", stop)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Errorf("the refused prompt reached the model (%d requests)", n)
		}
		if text := chunkText(p.updatesOf(session, from, p.mark()), "agent_message_chunk"); !strings.Contains(text, "no deploys on Fridays") {
			t.Errorf("the editor was not told why the prompt was refused: %q", text)
		}
		if stop := p.prompt(session, textBlock("run the tests")); stop != "end_turn" {
			t.Errorf("the next prompt stopped %q", stop)
		}
		if body := string(srv.Requests()[0].Body); strings.Contains(body, "deploy to production") || !strings.Contains(body, "run the tests") {
			t.Errorf("after a refusal the model saw: %s", body)
		}
	})
}

// sseDeltas joins the deltas of one kind (text, thinking) of a recorded
// Anthropic stream.
func sseDeltas(t *testing.T, stream, kind string) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(stream, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type  string            `json:"type"`
			Delta map[string]string `json:"delta"`
		}
		if json.Unmarshal([]byte(data), &ev) == nil && ev.Type == "content_block_delta" && ev.Delta["type"] == kind+"_delta" {
			b.WriteString(ev.Delta[kind])
		}
	}
	return b.String()
}

// TestACPThoughtChunksStreamTheModelsReasoning: a recorded stream of
// extended thinking reaches the editor as agent_thought_chunks, whole and
// before the answer, and session/load in a second process replays it.
func TestACPThoughtChunksStreamTheModelsReasoning(t *testing.T) {
	t.Parallel()
	stream := fixture(t, "anthropic_recorded_thinking_then_text.sse")
	thinking, answer := sseDeltas(t, stream, "thinking"), sseDeltas(t, stream, "text")
	if thinking == "" || answer == "" {
		t.Fatal("the fixture has no thinking or no text")
	}
	srv := startReplay(t, replayStep{Events: splitSSE(stream)})
	z := newZotRun(t)
	p := startACPProc(t, z, anthropicFlags(srv)...)
	session := p.newSession(z.cwd, obj{})
	if stop := p.prompt(session, textBlock("how do I cross a street?")); stop != "end_turn" {
		t.Fatalf("the prompt stopped %q", stop)
	}
	updates := p.updatesOf(session, 0, p.mark())
	if got := chunkText(updates, "agent_thought_chunk"); got != thinking {
		t.Errorf("the thought chunks say %q, want the stream's thinking %q", got, thinking)
	}
	if got := chunkText(updates, "agent_message_chunk"); got != answer {
		t.Errorf("the message chunks say %q, want %q", got, answer)
	}
	lastThought, firstText := -1, -1
	for i, u := range updates {
		switch u["sessionUpdate"] {
		case "agent_thought_chunk":
			lastThought = i
		case "agent_message_chunk":
			if firstText < 0 {
				firstText = i
			}
		}
	}
	if lastThought > firstText {
		t.Errorf("a thought chunk came after the answer began (update %d, the answer's first %d)", lastThought, firstText)
	}
	replayed := replayInANewProcess(t, p, z, srv, session)
	if got := chunkText(replayed, "agent_thought_chunk"); got != thinking {
		t.Errorf("session/load replayed the thinking as %q, want %q", got, thinking)
	}
	if got := chunkText(replayed, "agent_message_chunk"); got != answer {
		t.Errorf("session/load replayed the answer as %q, want %q", got, answer)
	}
}

// anthropicConversation is what an Anthropic request carried, a line a
// message: its role and its text and tool results, in order.
func anthropicConversation(t *testing.T, r capturedRequest) []string {
	t.Helper()
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type    string          `json:"type"`
				Text    string          `json:"text"`
				Content json.RawMessage `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("the model request: %v\n%s", err, r.Body)
	}
	var out []string
	for _, m := range body.Messages {
		var parts []string
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				parts = append(parts, b.Text)
			case "tool_use":
				parts = append(parts, "(a tool call)")
			case "tool_result":
				parts = append(parts, "(a tool result "+string(b.Content)+")")
			}
		}
		out = append(out, m.Role+": "+strings.Join(parts, " "))
	}
	return out
}

// TestACPModelRefusalLeavesThePromptOut: a model that refuses (Anthropic's
// stop_reason refusal, in the stream the SDK authors recorded) answers
// the prompt refusal; the editor sees what the model said and that it
// refused, and neither the refused prompt nor the model's reply goes with
// the next prompt — then, or after session/load in a second process.
func TestACPModelRefusalLeavesThePromptOut(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("First answer."), fixtureStep(t, "anthropic_thinking_signature_refusal.sse"), textStep("Tests pass."))
	z := newZotRun(t)
	p := startACPProc(t, z, anthropicFlags(srv)...)
	session := p.newSession(z.cwd, obj{})
	if stop := p.prompt(session, textBlock("hello")); stop != "end_turn" {
		t.Fatalf("the first prompt stopped %q", stop)
	}
	from := p.mark()
	if stop := p.prompt(session, textBlock("what is an eclipse, claudius?")); stop != "refusal" {
		t.Errorf("a prompt the model refused stopped %q", stop)
	}
	refused := p.updatesOf(session, from, p.mark())
	if text := chunkText(refused, "agent_message_chunk"); !strings.HasPrefix(text, "Hi\n\nzot: the model refused to answer.") || !strings.Contains(text, "left out of the conversation") {
		t.Errorf("the editor was shown %q for the refusal", text)
	}
	if chunkText(refused, "agent_thought_chunk") == "" {
		t.Error("the refused reply's thinking did not stream")
	}
	if stop := p.prompt(session, textBlock("run the tests")); stop != "end_turn" {
		t.Fatalf("the prompt after the refusal stopped %q", stop)
	}
	reqs := srv.Requests()
	want := []string{"user: hello", "assistant: First answer.", "user: run the tests"}
	if got := anthropicConversation(t, reqs[len(reqs)-1]); !slices.Equal(got, want) {
		t.Errorf("after the refusal the model received\n%q\nwant\n%q", got, want)
	}
	replayed := replayInANewProcess(t, p, z, srv, session)
	if got := chunkText(replayed, "user_message_chunk"); got != "hello"+"run the tests" {
		t.Errorf("session/load replayed the prompts %q", got)
	}
	if got := chunkText(replayed, "agent_message_chunk"); got != "First answer."+"Tests pass." {
		t.Errorf("session/load replayed the answers %q", got)
	}
}

// TestACPModelRefusalAfterToolsKeepsThePrompt: a refusal after the
// model's tools ran still answers refusal, but the prompt stays in the
// conversation: what the tools did happened, and the model must know.
func TestACPModelRefusalAfterToolsKeepsThePrompt(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, toolStep("r1", "read", obj{"path": "notes.txt"}), fixtureStep(t, "anthropic_thinking_signature_refusal.sse"), textStep("Noted."))
	z := newZotRun(t)
	os.WriteFile(filepath.Join(z.cwd, "notes.txt"), []byte("kiwi\n"), 0o644)
	p := startACPProc(t, z, anthropicFlags(srv)...)
	session := p.newSession(z.cwd, obj{})
	from := p.mark()
	if stop := p.prompt(session, textBlock("read the notes")); stop != "refusal" {
		t.Errorf("a prompt refused after a tool ran stopped %q", stop)
	}
	if text := chunkText(p.updatesOf(session, from, p.mark()), "agent_message_chunk"); !strings.Contains(text, "stays in the conversation") {
		t.Errorf("the editor was shown %q for the refusal", text)
	}
	if stop := p.prompt(session, textBlock("and now?")); stop != "end_turn" {
		t.Fatalf("the prompt after the refusal stopped %q", stop)
	}
	reqs := srv.Requests()
	got := anthropicConversation(t, reqs[len(reqs)-1])
	if len(got) != 5 || got[0] != "user: read the notes" || !strings.Contains(got[2], "kiwi") || got[3] != "assistant: Hi" || got[4] != "user: and now?" {
		t.Errorf("after a refusal that followed a tool, the model received %q", got)
	}
}

// TestACPContentFilterIsARefusal: OpenAI's finish_reason content_filter
// answers refusal too, and leaves the prompt out of the next request.
func TestACPContentFilterIsARefusal(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, fixtureStep(t, "openai_chat_handwritten_content_filter.sse"), replayStep{Events: openaiEvents(gen{Text: "Fine."})})
	z := newZotRun(t)
	p := startACPProc(t, z, "--provider", "openai", "--base-url", srv.URL, "--api-key", "test-key", "--model", "gpt-4o")
	session := p.newSession(z.cwd, obj{})
	if stop := p.prompt(session, textBlock("tell me the story")); stop != "refusal" {
		t.Errorf("a reply the content filter stopped answered %q", stop)
	}
	if stop := p.prompt(session, textBlock("something else")); stop != "end_turn" {
		t.Fatalf("the prompt after the refusal stopped %q", stop)
	}
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	reqs := srv.Requests()
	json.Unmarshal(reqs[len(reqs)-1].Body, &body)
	if sent := jsonText(body.Messages); strings.Contains(sent, "tell me the story") || strings.Contains(sent, "the story goes on") || !strings.Contains(sent, "something else") {
		t.Errorf("after the content filter the model received %s", sent)
	}
}

// TestACPThinkingLevelFollowsTheModel: max, chosen on a model that has
// it, becomes high on a model whose top is high — the level the editor
// shows is the level the request carries — and stays high on the way back.
func TestACPThinkingLevelFollowsTheModel(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("Thought hard."))
	z := newZotRun(t)
	p := startACPProc(t, z, anthropicFlags(srv)...)
	session := p.newSession(z.cwd, obj{})
	set := func(id, value string) map[string]configOption {
		t.Helper()
		return configOptionsOf(t, p.mustCall("session/set_config_option", obj{"sessionId": session, "configId": id, "value": value}))
	}
	if l := set("thought_level", "max")["thought_level"]; l.CurrentValue != "max" {
		t.Fatalf("max on claude-sonnet-4-6: %+v", l)
	}
	if l := set("model", "claude-haiku-4-5")["thought_level"]; l.CurrentValue != "high" || slices.Contains(l.values(), "max") {
		t.Errorf("max after the switch to claude-haiku-4-5, whose top is high: %+v", l)
	}
	if stop := p.prompt(session, textBlock("think")); stop != "end_turn" {
		t.Fatalf("the prompt stopped %q", stop)
	}
	var sent struct {
		Thinking struct {
			BudgetTokens int `json:"budget_tokens"`
		} `json:"thinking"`
	}
	json.Unmarshal(srv.Requests()[0].Body, &sent)
	if sent.Thinking.BudgetTokens != thinkingBudget["high"] {
		t.Errorf("the request thought with a budget of %d tokens, want high's %d", sent.Thinking.BudgetTokens, thinkingBudget["high"])
	}
	if l := set("model", "claude-sonnet-4-6")["thought_level"]; l.CurrentValue != "high" {
		t.Errorf("back on claude-sonnet-4-6: %+v", l)
	}
}

// replayInANewProcess ends p and loads session in a second zot acp, as an
// editor reopening it would, and returns the updates its load replayed.
func replayInANewProcess(t *testing.T, p *acpProc, z *zotRun, srv *replayServer, session string) []map[string]any {
	t.Helper()
	p.stdin.Close()
	p.cmd.Wait()
	loader := startACPProc(t, z, anthropicFlags(srv)...)
	loader.initialize()
	loader.mustCall("session/load", obj{"sessionId": session, "cwd": z.cwd, "mcpServers": []any{}})
	return loader.updatesOf(session, 0, loader.mark())
}
