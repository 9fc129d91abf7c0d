package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// askingPipeline is a pipeline whose one gate asks about every call, with
// hooks' PermissionRequest and Notification where the call waits, and a
// confirm that records that it was asked and answers yes.
func askingPipeline(h *Hooks, asked *bool) *Pipeline {
	var p Pipeline
	p.AddToolGate(testStage, func(context.Context, ToolCall) GateResult {
		return GateResult{Verdict: GateAsk, Notes: []GateNote{{By: "rule", Decision: DecisionAsk, Reason: "bash asks"}}}
	})
	p.SetAskHooks(h.PermissionRequest, h.NotifyApproval)
	p.SetConfirm(func(context.Context, ToolCall, []GateNote) (bool, string) { *asked = true; return true, "the user" })
	return &p
}

func TestHooksPermissionRequestSettlesAsks(t *testing.T) {
	t.Parallel()
	decision := func(behavior, message string) obj {
		return obj{"stdout": obj{"hookSpecificOutput": obj{"hookEventName": "PermissionRequest", "decision": obj{"behavior": behavior, "message": message}}}}
	}
	for _, tc := range []struct {
		name    string
		spec    obj
		matcher string
		block   bool
		reason  string
		asked   bool
	}{
		{"deny", decision("deny", "no deploys today"), "Bash", true, "not run: no deploys today", false},
		{"allow", decision("allow", ""), "Bash", false, "", false},
		{"exit 2", obj{"stderr": "ask the lead", "exit": 2}, "Bash", true, "not run: ask the lead", false},
		{"no say", obj{}, "Bash", false, "", true},
		{"other tool", decision("deny", "x"), "Read", false, "", true},
		{"failing command", obj{"exit": 1}, "Bash", false, "", true}, // not fail closed: a command
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, _, _ := newTestHooks(t, obj{"PermissionRequest": []obj{group(tc.matcher, specHook(t, tc.spec))}})
			asked := false
			d := askingPipeline(h, &asked).Decide(context.Background(), bashLS)
			if d.Block != tc.block || d.Reason != tc.reason || asked != tc.asked {
				t.Errorf("block %v reason %q asked %v; want %v %q %v", d.Block, d.Reason, asked, tc.block, tc.reason, tc.asked)
			}
		})
	}
}

// An http hook that answers with a redirect, or more than it may, has
// not answered: at PermissionRequest that denies.
func TestHooksHTTPAnswersAreBounded(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/allow", http.StatusTemporaryRedirect)
		case "/allow":
			w.Write([]byte(`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`))
		case "/huge":
			w.Write([]byte(strings.Repeat(" ", hookOutputLimit+1)))
		}
	}))
	t.Cleanup(srv.Close)
	for path, want := range map[string]string{
		"/allow":    "",
		"/redirect": "it answered 307 Temporary Redirect",
		"/huge":     "its answer is longer than 1048576 bytes",
	} {
		h, _, _ := newTestHooks(t, obj{"PermissionRequest": []obj{{"hooks": []obj{{"type": "http", "url": srv.URL + path}}}}})
		asked := false
		d := askingPipeline(h, &asked).Decide(context.Background(), bashLS)
		if want == "" && (d.Block || asked) || want != "" && (!d.Block || !strings.Contains(d.Reason, want)) {
			t.Errorf("%s: block %v asked %v reason %q", path, d.Block, asked, d.Reason)
		}
	}
}

// At UserPromptSubmit, too, an http hook that cannot answer refuses the
// prompt; one that answers lets it through with its context.
func TestHooksHTTPUserPromptSubmitFailsClosed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/down":
			http.Error(w, "policy server down", http.StatusServiceUnavailable)
		case "/context":
			w.Write([]byte(`{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"ticket ZOT-9"}}`))
		}
	}))
	t.Cleanup(srv.Close)
	for path, want := range map[string]struct {
		block         bool
		reason, extra string
	}{
		"/down":    {true, "UserPromptSubmit http hook " + srv.URL + "/down did not answer (it answered 503 Service Unavailable); an http hook that cannot answer blocks", ""},
		"/context": {false, "", "ticket ZOT-9"},
	} {
		h, _, _ := newTestHooks(t, obj{"UserPromptSubmit": []obj{{"hooks": []obj{{"type": "http", "url": srv.URL + path}}}}})
		block, reason, extra := h.BeforePrompt(context.Background(), "fix the bug")
		if block != want.block || reason != want.reason || extra != want.extra {
			t.Errorf("%s: got %v %q %q; want %v %q %q", path, block, reason, extra, want.block, want.reason, want.extra)
		}
	}
}
