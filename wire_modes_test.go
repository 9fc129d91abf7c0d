package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The modes through the binary: who chooses the one a run starts in, plan
// mode in -p and --json, rpc's set_mode, get_state and mode_changed, and
// a plan approved by an rpc client and an ACP editor.

// firstEvent is the first line of a --json run's output, decoded.
func firstEvent(t *testing.T, stdout string) map[string]any {
	t.Helper()
	line, _, _ := strings.Cut(stdout, "\n")
	var e map[string]any
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatalf("first line %q: %v", line, err)
	}
	return e
}

// defaultMode plan in ~/.claude/settings.json starts zot in plan mode: a
// write is refused, and no note says nobody chose the mode.
func TestClaudeDefaultModePlanStartsInPlanMode(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, toolStep("w1", "write", obj{"path": "out.txt", "content": "x"}), textStep("ok"))
	z := newZotRun(t)
	userSettings(t, z, perms("defaultMode", "plan"))
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "--json", "write it")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if e := firstEvent(t, stdout); e["type"] != "session_start" || e["mode"] != "plan" {
		t.Errorf("session_start = %v, want mode plan", e)
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "out.txt")); err == nil {
		t.Error("a write ran in plan mode")
	}
	if sent := toolResultTexts(srv); !strings.Contains(sent, "not run: zot is in plan mode") {
		t.Errorf("the model was not told why:\n%s", sent)
	}
	if strings.Contains(stderr, "Nobody chose") {
		t.Errorf("the settings chose the mode, yet: %s", stderr)
	}
}

// With no configuration, -p runs in auto and says so on stderr, once per
// $ZOT_HOME; --mode and config.json's "mode" choose another, a bad name
// is a usage error.
func TestModeChosenByFlagAndConfigAndNotedOnce(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, textStep("ok"))
	z := newZotRun(t).unnoted()
	_, stderr, code := z.run(append(anthropicFlags(srv), "-p", "hi")...)
	if code != 0 || !strings.Contains(stderr, "zot: mode auto:") || !strings.Contains(stderr, "commands are not confined") || !strings.Contains(stderr, "--mode NAME") {
		t.Errorf("the first -p: exit %d, stderr %q", code, stderr)
	}
	if _, stderr, _ = z.run(append(anthropicFlags(srv), "-p", "hi")...); strings.Contains(stderr, "Nobody chose") {
		t.Errorf("the note came twice: %q", stderr)
	}
	stdout, _, _ := z.run(append(anthropicFlags(srv), "--json", "--mode", "acceptEdits", "hi")...)
	if e := firstEvent(t, stdout); e["mode"] != "accept-edits" {
		t.Errorf("--mode acceptEdits: %v", e)
	}
	writeJSONFile(t, filepath.Join(z.home, "config.json"), obj{"mode": "ask"})
	stdout, _, _ = z.run(append(anthropicFlags(srv), "--json", "hi")...)
	if e := firstEvent(t, stdout); e["mode"] != "ask" {
		t.Errorf("config.json mode ask: %v", e)
	}
	if _, stderr, code = z.run(append(anthropicFlags(srv), "-p", "--mode", "yolo", "hi")...); code != exitUsage || !strings.Contains(stderr, `unknown mode "yolo"`) {
		t.Errorf("--mode yolo: exit %d, %q", code, stderr)
	}
}

// In -p nobody approves a plan: it is the run's answer, and nothing of it
// is carried out.
func TestPrintPlanModeAnswersWithThePlan(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, toolStep("p1", "present_plan", obj{"plan": "1. Do the thing"}), textStep("Presented."))
	z := newZotRun(t)
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--mode", "plan", "plan it")...)
	if code != 0 || strings.TrimSpace(stdout) != "1. Do the thing" {
		t.Errorf("exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if sent := toolResultTexts(srv); !strings.Contains(sent, "Nobody approves plans in this run") {
		t.Errorf("the model was told:\n%s", sent)
	}
}

// An rpc client sees the mode in get_state, changes it with set_mode and
// hears mode_changed; in plan mode it is sent the plan, approves it with a
// mode, hears the switch, and the next edit runs.
func TestRPCSetModeAndApproveAPlan(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("w1", "write", obj{"path": "notes.txt", "content": "early\n"}),
		toolStep("p1", "present_plan", obj{"plan": "- write notes.txt"}),
		toolStep("w2", "write", obj{"path": "notes.txt", "content": "planned\n"}),
		textStep("Done."))
	z := newZotRun(t)
	p := startRPCProc(t, z, append([]string{"rpc"}, anthropicFlags(srv)...)...)
	p.send(`{"id":"h","type":"hello","approvals":true}`)
	p.until(isResponse("h"))
	p.send(`{"id":"s","type":"get_state"}`)
	var state struct {
		Mode    string   `json:"mode"`
		Modes   []string `json:"modes"`
		Sandbox string   `json:"sandbox"`
	}
	json.Unmarshal(p.until(isResponse("s"))[0].Data, &state)
	if state.Mode != "auto" || !strings.Contains(strings.Join(state.Modes, " "), "ask accept-edits plan auto") || state.Sandbox != "off" {
		t.Errorf("get_state: %+v", state)
	}
	p.send(`{"id":"bad","type":"set_mode","mode":"yolo"}`)
	if r := p.until(isResponse("bad")); r[len(r)-1].Success || !strings.Contains(r[len(r)-1].Error, `unknown mode "yolo"`) {
		t.Errorf("set_mode yolo: %s", r[len(r)-1].Raw)
	}
	// The change is an event of its own, before the response.
	p.send(`{"id":"m","type":"set_mode","mode":"plan"}`)
	got := p.until(isResponse("m"))
	if r := got[len(got)-1]; !r.Success || !strings.Contains(string(r.Data), `"mode":"plan"`) {
		t.Errorf("set_mode plan: %s", r.Raw)
	}
	if !strings.Contains(rawLines(got), `{"type":"mode_changed","mode":"plan","sandbox":"`) {
		t.Errorf("no mode_changed for plan:\n%s", rawLines(got))
	}

	p.send(`{"id":"p","type":"prompt","message":"plan it"}`)
	o := p.until(isType("approval_request"))
	req := o[len(o)-1]
	var a struct {
		ApprovalID string   `json:"approval_id"`
		Tool       string   `json:"tool"`
		Plan       string   `json:"plan"`
		Modes      []string `json:"modes"`
	}
	json.Unmarshal([]byte(req.Raw), &a)
	if a.Tool != "present_plan" || a.Plan != "- write notes.txt" || len(a.Modes) == 0 {
		t.Fatalf("the plan's approval_request: %s", req.Raw)
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "notes.txt")); err == nil {
		t.Error("the write before the plan ran")
	}
	p.send(`{"id":"a","type":"approve","approval_id":"` + a.ApprovalID + `","decision":"allow","mode":"auto"}`)
	rest := rawLines(p.until(isType("done")))
	if !strings.Contains(rest, `{"type":"mode_changed","mode":"auto","sandbox":"off"}`) {
		t.Errorf("no mode_changed to auto:\n%s", rest)
	}
	if b, _ := os.ReadFile(filepath.Join(z.cwd, "notes.txt")); string(b) != "planned\n" {
		t.Errorf("notes.txt = %q: the write after the approval did not run", b)
	}
}

func rawLines(lines []rpcOut) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.Raw + "\n")
	}
	return b.String()
}

// An ACP editor sees zot's modes in session/new, sets one, and approves a
// plan by choosing the option of the mode to carry it out in; it hears the
// plan and the switch as session updates.
func TestACPModesAndAPlanApproved(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("p1", "present_plan", obj{"plan": "1. write a.txt\n2. check it"}),
		toolStep("w1", "write", obj{"path": "a.txt", "content": "a\n"}),
		textStep("Done."))
	z := newZotRun(t)
	p := startACPProc(t, z, anthropicFlags(srv)...)
	var mu sync.Mutex
	var options []string
	p.onRequest = func(method string, params json.RawMessage) (any, *acpError) {
		var r struct {
			Options []struct {
				OptionID string `json:"optionId"`
			} `json:"options"`
		}
		json.Unmarshal(params, &r)
		mu.Lock()
		defer mu.Unlock()
		for _, o := range r.Options {
			options = append(options, o.OptionID)
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "approve-plan:accept-edits"}}, nil
	}
	p.mustCall("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	var opened struct {
		SessionID string `json:"sessionId"`
		Modes     struct {
			CurrentModeID  string `json:"currentModeId"`
			AvailableModes []struct {
				ID string `json:"id"`
			} `json:"availableModes"`
		} `json:"modes"`
	}
	json.Unmarshal(p.mustCall("session/new", map[string]any{"cwd": z.cwd, "mcpServers": []any{}}), &opened)
	var ids []string
	for _, m := range opened.Modes.AvailableModes {
		ids = append(ids, m.ID)
	}
	if opened.Modes.CurrentModeID != "ask" || !strings.Contains(strings.Join(ids, " "), "ask accept-edits plan auto") {
		t.Errorf("session/new modes: %+v", opened.Modes)
	}
	p.mustCall("session/set_mode", map[string]any{"sessionId": opened.SessionID, "modeId": "plan"})
	p.waitFor(0, "current_mode_update plan", func(l acpLine) bool {
		u := l.update()
		return u["sessionUpdate"] == "current_mode_update" && u["currentModeId"] == "plan"
	})
	p.mustCall("session/prompt", promptParams(opened.SessionID, "plan it"))
	var plan, switched bool
	for _, u := range p.updates() {
		switch {
		case u["sessionUpdate"] == "plan":
			b, _ := json.Marshal(u["entries"])
			plan = strings.Contains(string(b), `"content":"write a.txt"`) && strings.Contains(string(b), `"content":"check it"`)
		case u["sessionUpdate"] == "current_mode_update" && u["currentModeId"] == "accept-edits":
			switched = true
		}
	}
	if !plan || !switched {
		t.Errorf("plan update %v, switch to accept-edits %v; updates: %v", plan, switched, p.updates())
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(options, " "), "approve-plan:accept-edits") || !strings.Contains(strings.Join(options, " "), "keep-planning") {
		t.Errorf("the editor was offered %v", options)
	}
	if b, _ := os.ReadFile(filepath.Join(z.cwd, "a.txt")); string(b) != "a\n" {
		t.Errorf("a.txt = %q: the write after the approval did not run (accept-edits)", b)
	}
}

// Plan mode runs an MCP tool its server marks readOnlyHint and refuses one
// it does not mark.
func TestPlanModeRunsOnlyReadOnlyMCPTools(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	writeFile(t, filepath.Join(z.cwd, "notes.txt"), "kiwi\n", 0o644)
	writeFile(t, filepath.Join(z.cwd, "servers.json"), fmt.Sprintf(`{"mcpServers": {"fake": %s}}`, fakeServer(t, "normal", t.TempDir(), "")), 0o644)
	srv := replayAfter(t, func() bool {
		log, _ := os.ReadFile(filepath.Join(z.home, "logs", "mcp-fake.log"))
		return strings.Contains(string(log), "ready,")
	},
		toolStep("t1", "mcp__fake__read_file", obj{"path": "notes.txt"}),
		toolStep("t2", "mcp__fake__echo", obj{"text": "changed"}),
		textStep("done"))
	_, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--mode", "plan", "--no-mcp", "--mcp-config", "servers.json", "look")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sent := toolResultTexts(srv)
	if !strings.Contains(sent, `kiwi\n`) {
		t.Errorf("the read-only MCP tool did not run:\n%s", sent)
	}
	if !strings.Contains(sent, "mcp__fake__echo is not marked read-only by its MCP server (readOnlyHint)") {
		t.Errorf("the other MCP tool was not refused:\n%s", sent)
	}
}

// grep, find and ls are off by default (their token cost), and plan mode
// offers them: the request a plan-mode run sends holds them and
// present_plan, an auto run's none of them.
func TestPlanModeOffersTheSearchTools(t *testing.T) {
	t.Parallel()
	sent := func(mode string) []string {
		srv := startReplay(t, textStep("ok"))
		z := newZotRun(t)
		if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--mode", mode, "look")...); code != 0 {
			t.Fatalf("--mode %s: exit %d: %s", mode, code, stderr)
		}
		var body struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range body.Tools {
			names = append(names, tl.Name)
		}
		return names
	}
	auto, plan := sent("auto"), sent("plan")
	for _, name := range []string{ToolGrep, ToolFind, ToolLs, "present_plan"} {
		if slices.Contains(auto, name) {
			t.Errorf("auto offers %s: %v", name, auto)
		}
		if !slices.Contains(plan, name) {
			t.Errorf("plan mode does not offer %s: %v", name, plan)
		}
	}
}
