package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An MCP server's question (elicitation) through the real binary, in each
// mode: the fake server's elicit tool asks where to deploy (a form with a
// choice, a bounded number with a default and a required text) and
// returns the answer it got, which the model then sees.

// elicitRun is a zot run whose model calls mcp__fake__elicit once, once
// the fake server is ready, then says "Deployed."; state is the server's
// state directory.
func elicitRun(t *testing.T) (z *zotRun, srv *replayServer, state string) {
	z = newZotRun(t)
	state = t.TempDir()
	writeFile(t, filepath.Join(z.cwd, "servers.json"), fmt.Sprintf(`{"mcpServers": {"fake": %s}}`, fakeServer(t, "normal", state, "")), 0o644)
	log := filepath.Join(z.home, "logs", "mcp-fake.log")
	srv = replayAfter(t, func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "ready,")
	}, toolStep("t1", "mcp__fake__elicit", obj{}), textStep("Deployed."))
	return z, srv, state
}

func elicitFlags(srv *replayServer, more ...string) []string {
	return append(append(anthropicFlags(srv), "--no-mcp", "--mcp-config", "servers.json"), more...)
}

func TestElicitationAnsweredInTheTUI(t *testing.T) {
	t.Parallel()
	needTmux(t)
	z, srv, state := elicitRun(t)
	tm := startTUI(t, z, elicitFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("deploy it")
	tm.keys("Enter")
	tm.waitFor("mcp server fake asks")
	screen := tm.waitFor("Where should this deploy go?")
	for _, want := range []string{"Target *: ‹ staging ›", "Replicas: 2", "Note *:", "Why now?", "[ submit ]"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the form does not show %q:\n%s", want, screen)
		}
	}
	tm.waitFor("enter next") // typing just stopped: the dialog waits a moment
	tm.keys("Right", "Down", "BSpace")
	tm.typeText("30")
	tm.keys("Down")
	tm.waitFor("want a number from 1 to 9")
	tm.keys("Up", "BSpace", "BSpace")
	tm.typeText("3")
	tm.keys("Down", "Down", "Enter") // submit with the note empty
	tm.waitFor("! required")
	tm.typeText("ship it")
	tm.keys("Enter", "Enter")
	tm.waitFor("Deployed.")
	if sent := toolResultTexts(srv); !strings.Contains(sent, `{\"action\":\"accept\",\"content\":{\"note\":\"ship it\",\"replicas\":3,\"target\":\"production\"}}`) {
		t.Errorf("the server did not get the answer:\n%s", sent)
	}
	if caps := readState(state, "caps"); !strings.Contains(caps, `"elicitation":{"form":{},"url":{}}`) {
		t.Errorf("the TUI did not offer elicitation: %s", caps)
	}
	tm.exitAndCheck()
}

func TestElicitationOverRPC(t *testing.T) {
	t.Parallel()
	z, srv, state := elicitRun(t)
	p := startRPCProc(t, z, append([]string{"rpc"}, elicitFlags(srv)...)...)
	p.send(`{"id":"h","type":"hello","elicitation":true}`)
	if r := p.until(isResponse("h")); !strings.Contains(r[len(r)-1].Raw, `"elicitation":true`) {
		t.Errorf("hello = %s", r[len(r)-1].Raw)
	}
	p.send(`{"id":"p1","type":"prompt","message":"deploy it"}`)
	got := p.until(isType("elicitation_request"))
	var q struct {
		ID      string        `json:"elicitation_id"`
		Server  string        `json:"server"`
		Mode    string        `json:"mode"`
		Message string        `json:"message"`
		Fields  []ElicitField `json:"fields"`
	}
	json.Unmarshal([]byte(got[len(got)-1].Raw), &q)
	if q.ID == "" || q.Server != "fake" || q.Mode != "form" || q.Message != "Where should this deploy go?" || len(q.Fields) != 3 ||
		q.Fields[0].Name != "target" || q.Fields[1].Default != float64(2) || !q.Fields[2].Required {
		t.Errorf("elicitation_request = %s", got[len(got)-1].Raw)
	}
	// An answer the form refuses is an error, and the question waits on.
	p.send(`{"id":"e1","type":"elicit","elicitation_id":"` + q.ID + `","action":"accept","content":{"target":"moon","note":"x"}}`)
	if r := p.until(isResponse("e1")); r[len(r)-1].Success || !strings.Contains(r[len(r)-1].Error, `Target: want one of "staging", "production"`) {
		t.Errorf("a bad answer: %s", r[len(r)-1].Raw)
	}
	p.send(`{"id":"e2","type":"elicit","elicitation_id":"` + q.ID + `","action":"accept","content":{"target":"production","note":"ship it"}}`)
	if r := p.until(isResponse("e2")); !r[len(r)-1].Success {
		t.Errorf("the answer: %s", r[len(r)-1].Raw)
	}
	p.until(isType("done"))
	if sent := toolResultTexts(srv); !strings.Contains(sent, `{\"action\":\"accept\",\"content\":{\"note\":\"ship it\",\"replicas\":2,\"target\":\"production\"}}`) {
		t.Errorf("the server did not get the answer with the default filled in:\n%s", sent)
	}
	if caps := readState(state, "caps"); !strings.Contains(caps, `"elicitation":{"form":{},"url":{}}`) {
		t.Errorf("rpc did not offer elicitation: %s", caps)
	}
}

func TestElicitationWithJSONAndElicitationStdin(t *testing.T) {
	t.Parallel()
	z, srv, _ := elicitRun(t)
	p := startRPCProc(t, z, elicitFlags(srv, "--json", "--elicitation-stdin", "deploy", "it")...)
	got := p.until(isType("elicitation_request"))
	var q struct {
		ID string `json:"elicitation_id"`
	}
	json.Unmarshal([]byte(got[len(got)-1].Raw), &q)
	p.send(`{"type":"elicit","elicitation_id":"` + q.ID + `","action":"decline"}`)
	p.until(isType("done"))
	if code := p.wait(); code != 0 {
		t.Errorf("exit %d: %s", code, p.stderr)
	}
	if sent := toolResultTexts(srv); !strings.Contains(sent, `{\"action\":\"decline\"}`) {
		t.Errorf("the server did not get the decline:\n%s", sent)
	}
}

// An editor that advertised form elicitation gets the question as ACP's
// elicitation/create, the form as a requested schema; its answer reaches
// the server with the defaults filled in. URL mode, not advertised, is
// not offered to the server.
func TestElicitationThroughACP(t *testing.T) {
	t.Parallel()
	z, srv, state := elicitRun(t)
	p := startACPProc(t, z, elicitFlags(srv)...)
	asked := make(chan json.RawMessage, 1)
	p.onRequest = func(method string, params json.RawMessage) (any, *acpError) {
		if method != "elicitation/create" {
			return nil, &acpError{Code: acpMethodNotFound, Message: "not offered"}
		}
		asked <- params
		return map[string]any{"action": "accept", "content": map[string]any{"target": "production", "note": "from the editor"}}, nil
	}
	session := p.newSession(z.cwd, map[string]any{"elicitation": map[string]any{"form": map[string]any{}}})
	p.mustCall("session/set_mode", map[string]any{"sessionId": session, "modeId": "bypassPermissions"})
	p.mustCall("session/prompt", promptParams(session, "deploy it"))
	var q struct {
		SessionID string         `json:"sessionId"`
		Mode      string         `json:"mode"`
		Message   string         `json:"message"`
		Schema    map[string]any `json:"requestedSchema"`
	}
	json.Unmarshal(<-asked, &q)
	schema, _ := json.Marshal(q.Schema)
	if q.SessionID != session || q.Mode != "form" || q.Message != `MCP server "fake" asks: Where should this deploy go?` ||
		!strings.Contains(string(schema), `"target":{"default":"staging","oneOf":[{"const":"staging","title":"staging"},{"const":"production","title":"production"}],"title":"Target","type":"string"}`) ||
		!strings.Contains(string(schema), `"required":["target","note"]`) {
		t.Errorf("elicitation/create = %+v\nschema %s", q, schema)
	}
	if sent := toolResultTexts(srv); !strings.Contains(sent, `{\"action\":\"accept\",\"content\":{\"note\":\"from the editor\",\"replicas\":2,\"target\":\"production\"}}`) {
		t.Errorf("the server did not get the editor's answer:\n%s", sent)
	}
	if caps := readState(state, "caps"); !strings.Contains(caps, `"elicitation":{"form":{}}`) {
		t.Errorf("zot acp offered the server other than form elicitation: %s", caps)
	}
}

// In -p nobody can answer: zot does not offer elicitation, and a server
// that asks anyway gets an error that says why.
func TestElicitationDeclinedInPrint(t *testing.T) {
	t.Parallel()
	z, srv, state := elicitRun(t)
	stdout, stderr, code := z.run(elicitFlags(srv, "-p", "deploy it")...)
	if code != 0 || stdout != "Deployed.\n" {
		t.Fatalf("exit %d stdout %q stderr %s", code, stdout, stderr)
	}
	if sent := toolResultTexts(srv); !strings.Contains(sent, `\"code\":-32602,\"message\":\"zot runs here as -p, with nobody to answer a question`) {
		t.Errorf("the server was not told why:\n%s", sent)
	}
	if caps := readState(state, "caps"); strings.Contains(caps, "elicitation") {
		t.Errorf("-p offered elicitation: %s", caps)
	}
}

// An rpc client that did not opt in gets nothing; the server is declined.
func TestElicitationRPCClientThatDidNotOptInDeclines(t *testing.T) {
	t.Parallel()
	z, srv, _ := elicitRun(t)
	p := startRPCProc(t, z, append([]string{"rpc"}, elicitFlags(srv)...)...)
	p.send(`{"id":"p1","type":"prompt","message":"deploy it"}`)
	for _, o := range p.until(isType("done")) {
		if o.Type == "elicitation_request" {
			t.Errorf("a client that did not opt in was asked: %s", o.Raw)
		}
	}
	if sent := toolResultTexts(srv); !strings.Contains(sent, `{\"action\":\"decline\"}`) {
		t.Errorf("the server was not declined:\n%s", sent)
	}
}

func TestElicitFieldsFromARequestedSchema(t *testing.T) {
	t.Parallel()
	fields, err := elicitFields(json.RawMessage(`{"type":"object","required":["b"],"properties":{
		"z":{"type":"string","format":"email","default":"a@b.example"},
		"b":{"type":"boolean","default":"yes"},
		"c":{"type":"string","oneOf":[{"const":"#f00","title":"Red"},{"const":"#0f0","title":"Green"}],"default":"#0f0"},
		"m":{"type":"array","items":{"anyOf":[{"const":"x"},{"const":"y"}]},"minItems":1,"default":["y"]},
		"n":{"type":"number","minimum":0,"maximum":1,"default":5}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fields {
		got = append(got, fmt.Sprintf("%s:%s:%v:%v:%d", f.Name, f.Type, f.Required, f.Default, len(f.Options)))
	}
	// In the order written; a default the field refuses is dropped.
	want := "z:string:false:a@b.example:0 b:boolean:true:<nil>:0 c:string:false:#0f0:2 m:string:false:[y]:2 n:number:false:<nil>:0"
	if strings.Join(got, " ") != want {
		t.Errorf("fields = %s\nwant     %s", strings.Join(got, " "), want)
	}
	for _, bad := range []string{`{"type":"object","properties":{"o":{"type":"object"}}}`, `{"type":"array"}`, ``,
		`{"type":"object","properties":{"l":{"type":"array","items":{"type":"number"}}}}`,
		`{"type":"object","properties":{"l":{"type":"array","items":{"type":"0","enum":[""]}}}}`} {
		if _, err := elicitFields(json.RawMessage(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestElicitationCompleteChecksAndFillsDefaults(t *testing.T) {
	t.Parallel()
	min1, max3 := 1, 3
	q := Elicitation{Fields: []ElicitField{
		{Name: "name", Type: "string", Required: true, MinLength: &min1, MaxLength: &max3},
		{Name: "age", Type: "integer", Default: float64(30)},
		{Name: "mail", Type: "string", Format: "email"},
		{Name: "on", Type: "boolean", Required: true, Default: true},
		{Name: "pick", Type: "string", Multiple: true, Options: []ElicitOption{{Value: "a"}, {Value: "b"}}, MaxItems: &min1},
	}}
	for _, tt := range []struct {
		content map[string]any
		want    string
	}{
		{map[string]any{"name": "ab"}, `{"age":30,"name":"ab","on":true}`},
		{map[string]any{"name": "ab", "age": 2.5}, "age: want a whole number"},
		{map[string]any{"name": "abcd"}, "name: want at most 3 characters"},
		{map[string]any{}, "name: required"},
		{map[string]any{"name": "ab", "mail": "not mail"}, "mail: want an email address"},
		{map[string]any{"name": "ab", "pick": []any{"a", "b"}}, "pick: choose at most 1"},
		{map[string]any{"name": "ab", "pick": []any{"c"}}, `pick: "c" is not one of "a", "b"`},
		{map[string]any{"name": "ab", "extra": 1}, `the form has no field "extra"`},
	} {
		got, err := q.Complete(tt.content)
		s := fmt.Sprint(err)
		if err == nil {
			b, _ := json.Marshal(got)
			s = string(b)
		}
		if s != tt.want {
			t.Errorf("Complete(%v) = %s, want %s", tt.content, s, tt.want)
		}
	}
	if v, err := q.Fields[3].Parse("no"); v != false || err != nil {
		t.Errorf("Parse(no) = %v, %v", v, err)
	}
}

// A question the user has not answered ends with its call: the server
// cancelled it, or the call's context ended.
func TestElicitationEndsWithTheServersCancel(t *testing.T) {
	t.Parallel()
	c := newMCPConn("s", nil)
	asked := make(chan struct{})
	c.onRequest = func(ctx context.Context, method string, _ json.RawMessage) (any, *jsonrpcError) {
		close(asked)
		<-ctx.Done()
		return map[string]any{"action": "cancel"}, nil
	}
	sent := make(chan string, 4)
	c.t = funcTransport(func(out mcpOut) { sent <- string(out.body) })
	c.deliverData([]byte(`{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{}}`), "test", 0)
	<-asked
	c.deliverData([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`), "test", 0)
	c.stopAnswers()
	select {
	case s := <-sent:
		t.Errorf("a cancelled request was answered: %s", s)
	default:
	}
}

// funcTransport hands what is sent to a function.
type funcTransport func(mcpOut)

func (f funcTransport) send(_ context.Context, out mcpOut) error { f(out); return nil }
func (f funcTransport) close(context.Context)                    {}
