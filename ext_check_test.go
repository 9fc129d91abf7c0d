package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkExt runs the checker in-process with tune's limits and checks that
// nothing of the extension is left running.
func checkExt(t *testing.T, dir string, tune func(*extLimits)) checkReport {
	t.Helper()
	c := &extChecker{lim: defaultExtLimits, cwd: t.TempDir()}
	// Every limit only bounds a hang here: a loaded machine can pause an
	// extension for seconds. A test of a limit sets it back in tune, against
	// an extension that never does what the limit waits for.
	const patient = time.Minute
	l := &c.lim
	l.hello, l.idle, l.startup, l.command, l.tool, l.intercept, l.grace = patient, patient, patient, patient, patient, patient, patient
	if tune != nil {
		tune(&c.lim)
	}
	c.run(dir)
	if c.proc != nil && groupAlive(c.proc.pid) {
		t.Errorf("the checked extension's process group %d is still alive", c.proc.pid)
	}
	return c.report
}

// TestExtCheckEnvironmentHasNoSecrets: `zot ext check` starts the
// extension as the host does, without zot's secrets.
func TestExtCheckEnvironmentHasNoSecrets(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-not-for-extensions")
	t.Setenv("ZOT_EXT_TEST_GIVEN", "yes")
	out := filepath.Join(t.TempDir(), "env.json")
	checkExt(t, scriptedExt(t, "env", obj{"env_file": out}), nil)
	assertEnvHasNoSecrets(t, out)
}

func TestExtCheckExamplesAreConformant(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	t.Setenv("WEATHER_URL", fakeWeather(t).URL)
	dirs := map[string]string{"weather": weatherExt(t)}
	for _, name := range []string{"hello-py", "clock", "guard", "redact"} {
		dirs[name] = exampleExt(t, name)
	}
	if _, err := exec.LookPath("jq"); err != nil {
		delete(dirs, "redact") // the redact example needs jq (.ci/run installs it)
	}
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := checkExt(t, dir, nil)
			if !r.Conformant || len(r.Violations) != 0 {
				t.Fatalf("not conformant:\n%s", r.text())
			}
			r.Warnings = untimedWarnings(r)
			want := map[string]string{
				"hello-py": `command          /hellopy "" → prompt`,
				"clock":    `command          /clock "" → display "It is `,
				"guard":    `intercept        tool_call: bash {"command":"echo zot ext check"} → allow`,
				"redact":   `intercept        assistant_message: "zot ext check: a sample answer from the assistant." → allow`,
				"weather":  `tool             weather {"city":"zot-ext-check"} → 1 block(s) [text]`,
			}[name]
			if text := r.text(); !strings.Contains(text, want) || !strings.Contains(text, "ok    shutdown         acked after") {
				t.Errorf("report lacks %q:\n%s", want, text)
			}
			if len(r.Warnings) != 0 {
				t.Errorf("a shipped example draws warnings: %v", r.Warnings) // issue 38: the clock's missing ready
			}
		})
	}
}

// untimedWarnings leaves out the warnings a loaded machine can cause (an
// interceptor slower than 1 s).
func untimedWarnings(r checkReport) []string {
	var out []string
	for _, w := range r.Warnings {
		if !strings.Contains(w, "; slow: ") {
			out = append(out, w)
		}
	}
	return out
}

func TestExtCheckReportsEachViolation(t *testing.T) {
	t.Parallel()
	broken := scriptedExt(t, "broken", obj{
		"name": "broken-hello",
		"frames": []obj{
			{"type": "register_tool", "name": "stringy", "description": "d", "schema": obj{"type": "string"}},
			{"type": "register_tool", "name": "typeless", "description": "d", "schema": obj{"properties": obj{"a": obj{"type": "string"}}}},
			{"type": "register_tool", "name": "img", "description": "d", "schema": obj{"type": "object"}},
			{"type": "register_tool", "name": "req", "schema": obj{"type": "object", "properties": obj{"a": obj{"type": "string"}}, "required": []string{"b"}}},
			{"type": "register_command", "name": "act", "description": "unknown action"},
			{"type": "register_command", "name": "wrongtype", "description": "answers with a tool_result"},
			{"type": "register_command", "name": "nopanelid", "description": "opens a panel without id"},
			{"type": "notify", "level": "loud", "message": "hi"},
			{"type": "panel_render", "panel_id": "ghost", "lines": []string{"boo"}},
			{"type": "subscribe", "events": []string{"bogus", "turn_end"}, "intercept": []string{"tool_call", "turn_start", "assistant_message", "nope"}},
			{"type": "register_tool", "name": "bad", "schema": obj{"type": "object"}, "description": 7},
		},
		"commands": obj{
			"act":       obj{"action": "explode"},
			"wrongtype": obj{"raw": `{"type":"tool_result","id":"{id}","content":[]}`},
			"nopanelid": obj{"action": "noop", "open_panel": obj{"title": "no id"}},
		},
		"tools": obj{
			"img": obj{"raw": `{"type":"tool_result","id":"{id}","content":[{"type":"image","mime_type":"text/plain","data":"!!"}]}`},
			"req": obj{"raw": `{"type":"tool_result","id":"{id}","content":[{"type":"video","text":"x"}]}`},
		},
		"intercept": obj{
			"tool_call":  []obj{{"reply": obj{"modified_args": "rm -rf /"}}},
			"turn_start": []obj{{"raw": `{"type":"event_intercept_response","id":"{id}","block":"yes"}`}},
		},
	})
	// Answers the intercept only when the next frame, shutdown, comes in:
	// after the limit, whatever the machine's speed.
	late := scriptedExt(t, "late", obj{
		"frames":    []obj{{"type": "subscribe", "intercept": []string{"assistant_message"}}},
		"intercept": obj{"assistant_message": []obj{{"late": true}}},
	})
	nohello := writeManifest(t, filepath.Join(t.TempDir(), "quitter"), obj{"name": "quitter", "exec": "sh", "args": []string{"-c", "echo giving up >&2; exit 3"}})
	tests := []struct {
		name  string
		dir   string
		fails []string
		warns []string
	}{
		{"no manifest", t.TempDir(), []string{"manifest: ", "no extension.json in this directory"}, nil},
		{"exec not found", writeManifest(t, filepath.Join(t.TempDir(), "ghost"), obj{"name": "ghost", "exec": "./nowhere"}), []string{"spawn: exec ", "nowhere is missing"}, nil},
		{"silent", scriptExt(t, "silent", "nohello.sh"), []string{"hello: no frame within 500ms: the first line must be a hello frame"}, nil},
		{"exits before hello", nohello, []string{"hello: it exited (exit status 3) before saying hello"}, nil},
		{"first line not hello", scriptedExt(t, "rude", obj{"first_line": "hi there"}), []string{`hello: the first line must be a hello frame, got "hi there"`}, nil},
		{"garbage", scriptExt(t, "garbage", "garbage.sh"), []string{
			`stdout: stray output, not a JSON frame: "this is not json"`,
			`frame: unknown type "no_such_frame"`,
			`tool_result: for id "999999999", which no request has`,
			`stdout: stray output, not a JSON frame: "[1,2,3]"`,
			`register_tool: badschema: refused: schema must be a JSON object, got "[1]"`,
			`register_tool: refused: name "bad name!" may only hold letters, digits, _ and -`,
		}, []string{"after_garbage: no description"}},
		{"never answers", scriptExt(t, "noready", "noready.sh"), []string{"command: /late: no command_response within 2s"}, []string{"ready: no ready frame: counted as ready after 250ms"}},
		{"crashes mid-call", scriptExt(t, "crash", "crash.sh"), []string{"command: /boom: it exited (exit status 3) instead of answering"}, nil},
		{"closes stdout mid-call", scriptExt(t, "hangup", "hangup.sh"), []string{"tool: hangup: it closed its stdout but is still running instead of answering"}, nil},
		{"ignores shutdown", scriptExt(t, "stubborn", "stubborn.sh"), []string{"shutdown: no shutdown_ack (optional), but still running 500ms after shutdown: zot would send SIGTERM now"}, []string{"registered: nothing"}},
		{"answers late", late, []string{
			`intercept: assistant_message: no event_intercept_response within 300ms`,
			`event_intercept_response: for id "check-`,
		}, nil},
		{"broken answers", broken, []string{
			`register_tool: stringy: refused: schema "type" must be "object", got "string"`,
			`register_tool: req: schema requires "b", which is not among its properties`,
			`notify: level "loud" is not info, success, warn or error`,
			`panel_render: for panel "ghost", which it has not opened`,
			`subscribe: unknown event "bogus"`,
			`subscribe: unknown intercept "nope"`,
			`frame: json: cannot unmarshal number into Go struct field extMsg.description of type string`,
			`command: /act answered with unknown action "explode"`,
			`command: /wrongtype: answered with tool_result instead of command_response`,
			`command: /nopanelid opened a panel without an id`,
			`tool: img: block 0 is an invalid image`,
			`tool: req: block 0 has unknown type "video"`,
			`intercept: tool_call: modified_args is not a JSON object: "\"rm -rf /\""`,
			`intercept: turn_start: a malformed event_intercept_response`,
		}, []string{`hello: names "broken-hello" but the manifest says "broken"`, "req: no description", `typeless: schema has no "type": zot adds "type": "object"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Each limit under test is short, against an extension that
			// never does what it waits for.
			r := checkExt(t, tt.dir, func(l *extLimits) {
				l.term = 300 * time.Millisecond
				switch tt.name {
				case "silent":
					l.hello, l.grace = 500*time.Millisecond, 500*time.Millisecond
				case "garbage":
					l.tool = 300 * time.Millisecond // after_garbage is never answered
				case "ignores shutdown":
					l.grace = 500 * time.Millisecond
				case "never answers":
					l.idle, l.command = defaultExtLimits.idle, 2*time.Second
				case "answers late":
					l.intercept = 300 * time.Millisecond
				}
			})
			if r.Conformant {
				t.Fatalf("conformant:\n%s", r.text())
			}
			violations := strings.Join(r.Violations, "\n")
			for _, want := range tt.fails {
				if !strings.Contains(violations, want) {
					t.Errorf("violations lack %q:\n%s", want, r.text())
				}
			}
			warnings := strings.Join(r.Warnings, "\n")
			for _, want := range tt.warns {
				if !strings.Contains(warnings, want) {
					t.Errorf("warnings lack %q:\n%s", want, r.text())
				}
			}
		})
	}
}

func TestExtCheckReportOfAFloodIsBounded(t *testing.T) {
	t.Parallel()
	r := checkExt(t, scriptExt(t, "flood", "flood.sh"), nil)
	if r.Conformant || len(r.Lines) > maxCheckLines+1 || !strings.Contains(strings.Join(r.Violations, "\n"), "more violations not shown") {
		t.Errorf("%d lines, violations %d: %s", len(r.Lines), len(r.Violations), truncate(r.text(), 2000))
	}
}

func TestExtCheckSampleArgsFollowTheSchema(t *testing.T) {
	t.Parallel()
	tests := []struct{ schema, want string }{
		{`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`, `{"city":"zot-ext-check"}`},
		{`{"type":"object","properties":{"n":{"type":"integer","minimum":3},"f":{"type":"number"},"ok":{"type":"boolean"},"unit":{"enum":["c","f"]},"v":{"const":7},"d":{"type":"string","default":"x"}}}`, `{"d":"x","f":1,"n":3,"ok":true,"unit":"c","v":7}`},
		{`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}},"opt":{"type":["null","integer"]},"any":{"anyOf":[{"type":"boolean"},{"type":"string"}]}}}`, `{"any":true,"opt":1,"tags":["zot-ext-check"]}`},
		{`{"type":"object","properties":{"o":{"properties":{"deep":{"type":"number"}}}}}`, `{"o":{"deep":1}}`},
		{`{"type":"object"}`, `{}`},
		{`{"type":"string"}`, `{}`},
	}
	for _, tt := range tests {
		if got := string(sampleArgs(json.RawMessage(tt.schema))); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.schema, got, tt.want)
		}
	}
}

func TestExtCheckCommandLine(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	stdout, stderr, code := z.run("ext", "check", exampleExt(t, "hello-py"))
	if code != 0 || !strings.HasSuffix(stdout, "conformant (0 warning(s))\n") || stderr != "" {
		t.Errorf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	stdout, _, code = z.run("ext", "check", "--json", scriptedExt(t, "rude", obj{"first_line": "hi there"}))
	var r checkReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 1 || r.Conformant || r.Extension != "rude" || len(r.Violations) != 1 || len(r.Lines) == 0 {
		t.Errorf("exit %d %v: %s", code, err, stdout)
	}
	stdout, _, code = z.run("ext", "check", filepath.Join(t.TempDir(), "nothing"))
	if code != 1 || !strings.Contains(stdout, "not conformant: 1 violation(s)") {
		t.Errorf("exit %d: %s", code, stdout)
	}
	if _, stderr, code := z.run("ext", "check"); code != 2 || !strings.Contains(stderr, "wrong number of arguments") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// TestExtCheckKillsWhatTheExtensionLeftInItsSession: the checker stops the
// extension as zot does, with what left its group but not its session.
func TestExtCheckKillsWhatTheExtensionLeftInItsSession(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	checkExt(t, escapingExt(t, pidFile), nil)
	if pid := readPid(t, pidFile); !processGone(pid) {
		t.Errorf("process %d outlived the check", pid)
	}
}

// zot ext check knows the TUI's own slash commands (main.go passes them):
// an extension that registers one is told that the built-in wins.
func TestExtCheckWarnsOfTheTUIsOwnCommands(t *testing.T) {
	t.Parallel()
	frames := []obj{{"type": "register_command", "name": "model"}, {"type": "register_command", "name": "mine"}}
	stdout, _, code := newZotRun(t).run("ext", "check", scriptedExt(t, "grabby", obj{"frames": frames}))
	if code != 0 || !strings.Contains(stdout, "/model: a built-in command has this name and wins") || strings.Contains(stdout, "/mine: a built-in") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
}
