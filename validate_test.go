package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// testValidator is a validator running a script from testdata/validate.
func testValidator(t *testing.T, name, script string, args ...string) Validator {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", "validate", script))
	if err != nil {
		t.Fatal(err)
	}
	// Generous, for a loaded machine; tests of the limit set their own.
	return Validator{Name: name, Argv: append([]string{path}, args...), Timeout: 30 * time.Second, Source: "test"}
}

var curlPost = ValidateParams{
	Command: "curl", Flags: map[string]string{"X": "POST"}, Args: []string{"https://api.example.com"},
	RawCommandLine: "curl -X POST https://api.example.com", Env: map[string]string{}, Cwd: os.TempDir(),
}

func TestValidatorAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		script                      string
		status, message, fix, fails string
	}{
		{"allow.sh", "allow", "", "", ""},
		{"deny_post.py", "deny", "POST requests are not allowed in production", "curl -X GET https://api.example.com", ""},
		{"ask.sh", "ask", "this touches production", "run it against staging first", ""},
		{"unknown_status.sh", "ask", `validator "v" answered with an unknown status "maybe" (want allow, deny or ask): not sure`, "", `unknown status "maybe"`},
		{"rpc_error.sh", "ask", `validator "v" failed: invalid response: JSON-RPC error -32600: Invalid request: missing required field 'command'`, "", "JSON-RPC error -32600"},
		{"garbage.sh", "ask", `validator "v" failed: invalid response: not a JSON-RPC response: invalid character 'h'`, "", "not a JSON-RPC response"},
		{"silent.sh", "ask", `validator "v" failed: exited without answering (exit status 3)`, "", "exited without answering"},
		{"stderr_flood.sh", "allow", "survived the flood", "", ""},
		{"huge_stdout.sh", "ask", `validator "v" failed: answered with more than 1048576 bytes`, "", "more than 1048576 bytes"},
		{"control_chars.py", "deny", "␛␛cleared␀ screen\ttab\nline two", "red", ""},
	}
	for _, tc := range cases {
		t.Run(tc.script, func(t *testing.T) {
			t.Parallel()
			r := testValidator(t, "v", tc.script).Ask(context.Background(), curlPost)
			if string(r.Status) != tc.status || !strings.HasPrefix(r.Message, tc.message) || r.FixSuggestion != tc.fix || !strings.Contains(r.Failure, tc.fails) {
				t.Errorf("got %+v\nwant status %s message %q fix %q failure containing %q", r, tc.status, tc.message, tc.fix, tc.fails)
			}
		})
	}
}

func TestValidatorMissingBinaryAsks(t *testing.T) {
	t.Parallel()
	v := Validator{Name: "gone", Argv: []string{"/nonexistent/validator"}, Timeout: time.Second}
	r := v.Ask(context.Background(), curlPost)
	if r.Status != "ask" || !strings.Contains(r.Message, `validator "gone" failed: could not start /nonexistent/validator`) {
		t.Errorf("got %+v", r)
	}
}

// readPids waits for a script to record its pids in a file.
func readPids(t *testing.T, path string) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			var pids []int
			for _, f := range strings.Fields(string(b)) {
				n, _ := strconv.Atoi(f)
				pids = append(pids, n)
			}
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid file %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		waitUntil(t, "process "+strconv.Itoa(pid)+" has exited", 10*time.Second, func() bool { return processGone(pid) })
	}
}

func TestValidatorPastTheTimeoutIsKilledAndAsks(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	checkNoGoroutineLeak(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	v := testValidator(t, "slow", "sleeper.sh", pidFile)
	// Long enough for a loaded machine to start the script and its sleep.
	v.Timeout = 2 * time.Second
	r := v.Ask(context.Background(), curlPost)
	if r.Status != "ask" || r.Message != `validator "slow" failed: no answer within 2s; killed it` {
		t.Errorf("got %+v", r)
	}
	pids := readPids(t, pidFile)
	if len(pids) != 2 {
		t.Fatalf("pids %v", pids)
	}
	waitGone(t, pids) // the script and the sleep it started
}

func TestValidatorThatAnswersAndLingersIsKilled(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	v := testValidator(t, "linger", "linger.sh", pidFile)
	v.Timeout = time.Minute
	if r := v.Ask(context.Background(), curlPost); r.Status != "allow" {
		t.Errorf("got %+v", r)
	}
	waitGone(t, readPids(t, pidFile))
}

func TestValidatorAbortedByContextAsks(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	v := testValidator(t, "slow", "sleeper.sh", pidFile)
	v.Timeout = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan ValidatorReply)
	go func() { done <- v.Ask(ctx, curlPost) }()
	pids := readPids(t, pidFile)
	cancel()
	r := <-done
	if r.Status != "ask" || !strings.Contains(r.Message, "zot stopped waiting") {
		t.Errorf("got %+v", r)
	}
	waitGone(t, pids)
}

func TestValidatorThatNeverReadsStdinStillAnswers(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	checkNoGoroutineLeak(t)
	p := curlPost
	p.RawCommandLine = "curl -X POST x # " + strings.Repeat("a", 512<<10) // far more than a pipe holds
	r := testValidator(t, "lazy", "no_stdin.sh").Ask(context.Background(), p)
	if r.Status != "deny" || r.Message != "denied unread" {
		t.Errorf("got %+v", r)
	}
}

func TestValidatorGetsParamsEnvAndCwd(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	out := filepath.Join(t.TempDir(), "requests.jsonl")
	v := testValidator(t, "rec", "record.py", out)
	v.Env = []string{"AWS_PROFILE", "ZOT_TEST_FROM_ENV", "UNSET_VAR"}
	t.Setenv("ZOT_TEST_FROM_ENV", "outside")
	t.Setenv("ANTHROPIC_API_KEY", "sk-secret")
	t.Setenv("AWS_PROFILE", "dev")
	cwd := t.TempDir()
	line := `AWS_PROFILE=prod curl -X POST --silent https://api.example.com | jq .`
	r := CheckCommandLine(context.Background(), []Validator{v}, line, cwd)
	if r.Decision != "allow" || len(r.Answers) != 2 {
		t.Fatalf("report %+v", r)
	}
	b, _ := os.ReadFile(out)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d requests", len(lines))
	}
	var req struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      int            `json:"id"`
		Method  string         `json:"method"`
		Params  ValidateParams `json:"params"`
		Environ []string       `json:"environ"`
		Cwd     string         `json:"process_cwd"`
	}
	for _, l := range lines {
		if err := json.Unmarshal([]byte(l), &req); err != nil {
			t.Fatal(err)
		}
		if req.Params.Command == "curl" {
			break
		}
	}
	p := req.Params
	if req.JSONRPC != "2.0" || req.ID != 1 || req.Method != "validateCommand" {
		t.Errorf("envelope %+v", req)
	}
	if p.Command != "curl" || p.Flags["X"] != "POST" || p.Flags["silent"] != "" || len(p.Flags) != 2 ||
		strings.Join(p.Args, " ") != "https://api.example.com" || p.RawCommandLine != line || p.Cwd != cwd {
		t.Errorf("params %+v", p)
	}
	if len(p.Env) != 2 || p.Env["AWS_PROFILE"] != "prod" || p.Env["ZOT_TEST_FROM_ENV"] != "outside" {
		t.Errorf("env %v: want AWS_PROFILE from the line, ZOT_TEST_FROM_ENV from zot's environment, nothing else", p.Env)
	}
	if req.Cwd != cwd {
		t.Errorf("validator ran in %s, want %s", req.Cwd, cwd)
	}
	for _, e := range req.Environ {
		if e == "ANTHROPIC_API_KEY" {
			t.Error("the validator's environment holds the API key")
		}
	}
}

func TestCheckCommandLineCombines(t *testing.T) {
	t.Parallel()
	allow := testValidator(t, "allow", "allow.sh")
	ask := testValidator(t, "ask", "ask.sh")
	ask.Commands = []string{"kubectl"}
	deny := testValidator(t, "deny-post", "deny_post.py")
	deny.Commands = []string{"curl"}
	vs := []Validator{allow, ask, deny}
	cases := []struct {
		line, decision string
		answers        int
	}{
		{"ls -la", "allow", 1},
		{"echo hi; echo hi", "allow", 2},
		{"kubectl get pods", "ask", 2},
		{"curl https://x", "allow", 2},
		{"kubectl get pods && curl -X POST https://x", "deny", 4},
		{"sudo curl -X POST https://x", "deny", 3},
	}
	for _, tc := range cases {
		r := CheckCommandLine(context.Background(), vs, tc.line, t.TempDir())
		if string(r.Decision) != tc.decision || len(r.Answers) != tc.answers {
			t.Errorf("%q: decision %s with %d answers, want %s with %d: %+v", tc.line, r.Decision, len(r.Answers), tc.decision, tc.answers, r.Answers)
		}
	}
	if r := CheckCommandLine(context.Background(), nil, "curl -X POST x", "/"); r.Decision != "allow" || len(r.Answers) != 0 {
		t.Errorf("no validators: %+v", r)
	}
	deep := "echo " + strings.Repeat("$(echo ", 100) + "curl x" + strings.Repeat(")", 100)
	r := CheckCommandLine(context.Background(), []Validator{allow}, deep, "/")
	g := r.gateResult()
	if r.Decision != "ask" || !r.Incomplete || g.Verdict != GateAsk || g.Notes[len(g.Notes)-1].By != "zot:splitter" || !strings.Contains(g.Notes[len(g.Notes)-1].Reason, "nesting deeper than 64 levels") {
		t.Errorf("too deep: %s %+v", r.Decision, g)
	}
}

func TestValidatorConfig(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(cwd, ".zot"), 0o755)
	os.WriteFile(filepath.Join(home, "validators.json"), []byte(`[
		{"name": "global", "executor": "'my validator' --flag \"two words\" ./rel.py ../up.sh plain", "commands": ["curl"], "env": ["AWS_PROFILE"], "timeout_ms": 250},
		{"name": "rel-program", "executor": "bin/check --x=./not-resolved"},
		{"name": "", "executor": "x"},
		{"name": "no-exec"},
		{"name": "quote", "executor": "python3 'unclosed"},
		{"name": "path-cmd", "executor": "x", "commands": ["/usr/bin/curl"]},
		{"name": "bad-env", "executor": "x", "env": ["A-B"]},
		{"name": "bad-timeout", "executor": "x", "timeout_ms": -5},
		{"name": "frac-timeout", "executor": "x", "timeout_ms": 1.5},
		{"name": "global", "executor": "again"},
		"not an object",
		{"name": "typo", "executor": "x", "timeout": 5},
		{"name": "zot:splitter", "executor": "x"}
	]`), 0o644)
	os.WriteFile(filepath.Join(cwd, ".zot", "validators.json"), []byte(`[{"name": "global", "executor": "/abs/project-check"}]`), 0o644)
	var warnings []string
	vs := LoadValidators(home, cwd, func(m string) { warnings = append(warnings, m) })

	var names []string
	for _, v := range vs {
		names = append(names, v.Name)
	}
	if strings.Join(names, ",") != "global,rel-program,typo,global" {
		t.Fatalf("loaded %v\nwarnings:\n%s", names, strings.Join(warnings, "\n"))
	}
	g := vs[0]
	wantArgv := []string{"my validator", "--flag", "two words", filepath.Join(home, "rel.py"), filepath.Join(filepath.Dir(home), "up.sh"), "plain"}
	if strings.Join(g.Argv, "|") != strings.Join(wantArgv, "|") || g.Timeout != 250*time.Millisecond || g.Commands[0] != "curl" || g.Env[0] != "AWS_PROFILE" {
		t.Errorf("global = %+v", g)
	}
	if r := vs[1]; r.Argv[0] != filepath.Join(home, "bin/check") || r.Argv[1] != "--x=./not-resolved" || r.Timeout != 5*time.Second {
		t.Errorf("rel-program = %+v", r)
	}
	if p := vs[3]; p.Source != filepath.Join(cwd, ".zot", "validators.json") || p.Argv[0] != "/abs/project-check" {
		t.Errorf("project entry = %+v", p)
	}
	file := filepath.Join(home, "validators.json")
	for _, want := range []string{
		file + `: entry 3: field "name": want a non-empty string; entry skipped`,
		file + `: entry 4 ("no-exec"): field "executor": want a non-empty string`,
		file + `: entry 5 ("quote"): field "executor": a single quote is not closed; entry skipped`,
		file + `: entry 6 ("path-cmd"): field "commands": "/usr/bin/curl" is not a base command name`,
		file + `: entry 7 ("bad-env"): field "env": "A-B" is not an environment variable name`,
		file + `: entry 8 ("bad-timeout"): field "timeout_ms": want a whole number of milliseconds from 1 to 600000, got -5`,
		file + `: entry 9 ("frac-timeout"): field "timeout_ms"`,
		file + `: entry 10 ("global"): field "name": another entry of this file has that name`,
		file + `: entry 11: want an object`,
		file + `: entry 12 ("typo"): unknown field "timeout" ignored`,
		file + `: entry 13 ("zot:splitter"): field "name": names starting with "zot:" are zot's own`,
	} {
		found := false
		for _, w := range warnings {
			found = found || strings.HasPrefix(w, want)
		}
		if !found {
			t.Errorf("no warning %q in\n%s", want, strings.Join(warnings, "\n"))
		}
	}

	os.WriteFile(file, []byte(`{"name": "x"}`), 0o644)
	warnings = nil
	if vs := LoadValidators(home, t.TempDir(), func(m string) { warnings = append(warnings, m) }); len(vs) != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "want a JSON list of validators") {
		t.Errorf("not a list: %v %v", vs, warnings)
	}
}

func TestSplitExecutor(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`deno run --allow-net ./checks/url_check.ts`: `deno|run|--allow-net|./checks/url_check.ts`,
		`"a b" 'c d' e\ f`:                           `a b|c d|e f`,
		`"x \"y\" \$z \\ \q"`:                        `x "y" $z \ \q`,
		"  spaced\t\tout \n":                         `spaced|out`,
		`a''b ""`:                                    `ab|`,
	}
	for in, want := range cases {
		got, err := splitExecutor(in)
		if err != nil || strings.Join(got, "|") != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{``, `   `, `'x`, `"x`, `x\`} {
		if _, err := splitExecutor(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzSplitExecutor(f *testing.F) {
	for _, s := range []string{`deno run ./x.ts`, `"a b" 'c' d\ e`, `'`, `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := splitExecutor(s)
		if err == nil && len(words) == 0 {
			t.Fatalf("%q: no words and no error", s)
		}
	})
}

func FuzzValidatorConfig(f *testing.F) {
	f.Add([]byte(`[{"name":"a","executor":"x ./y","commands":["curl"],"env":["A"],"timeout_ms":5}]`))
	f.Add([]byte(`[{"name":1},{},null,"x",[]]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, v := range parseValidators("/cfg/validators.json", data, func(string) {}) {
			if v.Name == "" || len(v.Argv) == 0 || v.Timeout <= 0 {
				t.Fatalf("accepted %+v", v)
			}
		}
	})
}

func TestValidatorText(t *testing.T) {
	t.Parallel()
	in := "ok\x1b[31m red\x07\x00 \r\n\t\u009b2J é \xff end"
	if got := validatorText(in); got != "ok red␇␀ \n\t␛ é \uFFFD end" {
		t.Errorf("%q", got)
	}
	long := validatorText(strings.Repeat("é", validatorMaxText))
	if len(long) > validatorMaxText || !strings.HasSuffix(long, "…") || !utf8.ValidString(long) {
		t.Errorf("long text: %d bytes", len(long))
	}
}
