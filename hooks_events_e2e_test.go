package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// hookEventsTen are the Claude Code events zot fires.
var hookEventsTen = []string{
	"SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PostToolUse",
	"PostToolUseFailure", "PermissionRequest", "Notification", "Stop", "PreCompact",
}

// hookRecorder is an http hook endpoint that records what it is sent and
// answers 200 with nothing.
type hookRecorder struct {
	*httptest.Server
	mu     sync.Mutex
	inputs []obj
	bad    []string
}

func startHookRecorder(t *testing.T) *hookRecorder {
	r := &hookRecorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		var in obj
		r.mu.Lock()
		defer r.mu.Unlock()
		if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &in) != nil {
			r.bad = append(r.bad, req.Method+" "+req.Header.Get("Content-Type")+" "+string(b))
			return
		}
		if req.Header.Get("X-Team") != "zot-tests" || req.Header.Get("Authorization") != "Bearer" { // not "Bearer leaked"
			r.bad = append(r.bad, "headers: "+jsonOf(req.Header))
		}
		r.inputs = append(r.inputs, in)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hookRecorder) got() []obj {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.inputs)
}

// byEvent is the first input of each event.
func byEvent(inputs []obj) map[string]obj {
	out := map[string]obj{}
	for _, in := range inputs {
		ev, _ := in["hook_event_name"].(string)
		if _, ok := out[ev]; !ok {
			out[ev] = in
		}
	}
	return out
}

// Every event zot fires reaches a recording command hook and an http hook
// of the same settings, through the binary: a -p run with a call that
// asks, one that fails, and its end; an rpc session compacted by hand.
func TestHooksEveryEventReachesACommandAndAnHTTPHook(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	rec := filepath.Join(t.TempDir(), "inputs.jsonl")
	web := startHookRecorder(t)
	// A variable a header names but allowedEnvVars does not is sent as "".
	z.env = append(z.env, "TEAM=zot-tests", "ZOT_TEST_NOT_ALLOWED=leaked")
	cmd := specHook(t, obj{"record": rec})
	hooks := obj{}
	for _, ev := range hookEventsTen {
		hooks[ev] = []obj{{"matcher": "", "hooks": []obj{
			{"type": "command", "command": cmd},
			{"type": "http", "url": web.URL + "/hook", "timeout": 20,
				"headers": obj{"X-Team": "${TEAM}", "Authorization": "Bearer $ZOT_TEST_NOT_ALLOWED"}, "allowedEnvVars": []string{"TEAM"}},
		}}}
	}
	claudeSettings(t, z, hooks)
	userSettings(t, z, perms("ask", []string{"Bash(echo asked)"}))

	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "echo asked"}),
		toolStep("t2", "bash", obj{"command": "exit 3"}),
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	if stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--claude-hooks", "--approve-asks", "go")...); code != 0 || stdout != "done\n" {
		t.Fatalf("zot -p: exit %d, stdout %q\n%s", code, stdout, stderr)
	}

	srv2 := startReplay(t,
		replayStep{Events: anthropicEvents(gen{Text: "a"})},
		replayStep{Events: anthropicEvents(gen{Text: "b"})},
		replayStep{Events: anthropicEvents(gen{Text: "c"})},
		replayStep{Events: anthropicEvents(gen{Text: "the summary"})})
	p := startRPCProc(t, z, append([]string{"rpc", "--claude-hooks"}, anthropicFlags(srv2)...)...)
	for _, m := range []string{"one", "two", "three"} {
		p.send(`{"type":"prompt","message":"` + m + `"}`)
		p.until(isType("done"))
	}
	p.send(`{"type":"compact"}`)
	p.until(isType("done"))
	p.stdin.Close()
	if code := p.wait(); code != 0 {
		t.Fatalf("zot rpc: exit %d: %s", code, p.stderr)
	}

	web.mu.Lock()
	if len(web.bad) > 0 {
		t.Errorf("the http hook was sent:\n%s", strings.Join(web.bad, "\n"))
	}
	web.mu.Unlock()
	for name, inputs := range map[string][]obj{"command": readRecords(t, rec), "http": web.got()} {
		got := byEvent(inputs)
		for _, ev := range hookEventsTen {
			if _, ok := got[ev]; !ok {
				t.Errorf("%s hook: no %s (got %v)", name, ev, sortedKeys(got))
			}
		}
		for _, c := range []struct{ ev, field, want string }{
			{"PermissionRequest", "tool_name", "Bash"},
			{"PermissionRequest", "tool_input", `{"command":"echo asked"}`},
			{"Notification", "notification_type", "permission_prompt"},
			{"Notification", "message", "zot needs your permission to use Bash"},
			{"PostToolUse", "tool_input", `{"command":"echo asked"}`},
			{"PostToolUseFailure", "tool_input", `{"command":"exit 3"}`},
			{"PostToolUseFailure", "is_interrupt", "false"},
			{"PreCompact", "trigger", "manual"},
			{"PreCompact", "custom_instructions", ""},
			{"SessionStart", "source", "startup"},
			{"UserPromptSubmit", "prompt", "go"},
		} {
			v := got[c.ev][c.field]
			s, ok := v.(string)
			if !ok {
				s = jsonOf(v)
			}
			if s != c.want {
				t.Errorf("%s hook: %s %s = %s, want %s", name, c.ev, c.field, s, c.want)
			}
		}
		if e, _ := got["PostToolUseFailure"]["error"].(string); !strings.Contains(e, "[exit code 3]") {
			t.Errorf("%s hook: PostToolUseFailure error = %q", name, e)
		}
	}
}

// A PreToolUse http hook whose server never answers blocks the call once
// its timeout passes, and the model is told why; so does one that answers
// 500. A command hook that times out is let through, as in Claude Code.
func TestHooksHTTPPreToolUseFailsClosed(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // then the server sees zot hang up
		select {                    // never answers
		case <-r.Context().Done():
		case <-gone:
		}
	}))
	t.Cleanup(silent.Close)
	t.Cleanup(func() { close(gone) }) // runs first
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "policy server down", http.StatusInternalServerError)
	}))
	t.Cleanup(broken.Close)
	for _, tc := range []struct {
		name, url, want string
	}{
		{"silent", silent.URL, "PreToolUse http hook " + silent.URL + " did not answer (no answer within 1s); an http hook that cannot answer blocks"},
		{"500", broken.URL, "PreToolUse http hook " + broken.URL + " did not answer (it answered 500 Internal Server Error); an http hook that cannot answer blocks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			claudeSettings(t, z, obj{"PreToolUse": []obj{{"matcher": "Bash", "hooks": []obj{{"type": "http", "url": tc.url, "timeout": 1}}}}})
			result, _ := toolResultSent(t, z, "bash", obj{"command": "touch made"}, "--claude-hooks")
			if _, err := os.Stat(filepath.Join(z.cwd, "made")); err == nil {
				t.Errorf("the command ran")
			}
			if !strings.Contains(result, tc.want) {
				t.Errorf("the model was told:\n%s", result)
			}
		})
	}
}
