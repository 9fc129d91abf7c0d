package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"
)

// The attacker's fuzz targets for what an MCP server sends zot beyond the
// JSON-RPC frames (FuzzDecodeRPC has those): a question for the user, the
// OAuth challenge and the documents discovery reads, and an event stream
// that is cut and resumed. Each target states the property it holds and
// what a hostile or broken server would gain were it broken. No network:
// the server is a function, an in-memory transport or a byte string.

// FuzzMCPElicitation puts a server's elicitation/create params through
// the connection to a user who answers at once, and reads what zot sends
// back. It holds:
//   - every request gets exactly one answer: a -32602 error when zot
//     refuses the question (the user was never asked), else a result
//     whose action is accept, decline or cancel — never silence, which
//     would hang the server's tool call, and never a crash;
//   - the question the user sees is bounded (fields, choices, text) and
//     a URL to open is an http(s) URL with a host: a server must not get
//     a javascript: or file: URL into the user's browser, nor a form that
//     swamps the terminal;
//   - accepted content validates against the requested schema as JSON
//     Schema reads MCP's keywords (type, enum, oneOf consts, min/max
//     length, minimum/maximum, items, min/max items, required), all of
//     them applied: a schema zot accepted must not have zot send an
//     answer the server's own validation rejects or misreads (a required
//     confirmation missing, a value outside the choices offered);
//   - the form given to an editor (Schema) reads back as the same form,
//     so an editor's dialog asks what zot then checks.
func FuzzMCPElicitation(f *testing.F) {
	for _, s := range []struct{ params, answer string }{
		{`{"message":"Where to?","requestedSchema":{"type":"object","required":["target","note"],"properties":{
			"target":{"type":"string","title":"Target","enum":["staging","production"],"default":"staging"},
			"replicas":{"type":"integer","minimum":1,"maximum":9,"default":2},
			"note":{"type":"string","minLength":1,"maxLength":20}}}}`, "\x00\x01"},
		{`{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{
			"z":{"type":"string","format":"email","default":"a@b.example"},
			"c":{"type":"string","oneOf":[{"const":"#f00","title":"Red"},{"const":"#0f0","title":"Green"}]},
			"m":{"type":"array","items":{"anyOf":[{"const":"x"},{"const":"y"}]},"minItems":1,"maxItems":2},
			"d":{"type":"string","format":"date"},"u":{"type":"string","format":"uri"},"t":{"type":"string","format":"date-time"},
			"b":{"type":"boolean","default":true},"n":{"type":"number","minimum":0.5}}}}`, "\x00"},
		{`{"requestedSchema":{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","enum":["a","b"]},"maxItems":1}}}}`, "\x01{\"l\":[\"a\",\"b\"]}"},
		{`{"requestedSchema":{"type":"object","properties":{"n":{"type":"number"}}}}`, "\x01{\"n\":1e308}"},
		{`{"requestedSchema":{"type":"object","properties":{"s":{"type":"string","enumNames":["A"],"enum":["a"]}}}}`, "\x02"},
		{`{"requestedSchema":{"type":"object","properties":{"o":{"type":"object"}}}}`, "\x00"},
		{`{"requestedSchema":{"type":"array"}}`, "\x00"},
		{`{"mode":"url","message":"Sign in","url":"https://auth.example.com/start?x=1","elicitationId":"e1"}`, "\x00"},
		{`{"mode":"url","url":"javascript:alert(1)"}`, "\x00"},
		{`{"mode":"url","url":"https:///no-host"}`, "\x00"},
		{`{"mode":"telepathy"}`, "\x03"},
		{`{}`, "\x00"},
		{`null`, "\x00"},
	} {
		f.Add([]byte(s.params), []byte(s.answer))
	}
	f.Fuzz(func(t *testing.T, params, answer []byte) {
		if !json.Valid(params) {
			t.Skip("not JSON: the JSON-RPC decoder's (FuzzDecodeRPC)")
		}
		var asked *Elicitation
		s := &mcpServer{cfg: mcpServerConfig{Name: "fuzz"}, m: &MCPManager{cfg: MCPConfig{Elicit: Elicitor{Form: true, URL: true,
			Ask: func(_ context.Context, q Elicitation) ElicitAnswer {
				asked = &q
				return fuzzUser(q, answer)
			}}}}}
		c := newMCPConn("fuzz", nil)
		c.onRequest = s.onRequest
		var mu sync.Mutex
		var sent [][]byte
		c.t = funcTransport(func(out mcpOut) {
			mu.Lock()
			sent = append(sent, out.body)
			mu.Unlock()
		})
		if c.deliverData([]byte(`{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":`+string(params)+`}`), "fuzz", 0) == nil {
			t.Skip("params that are not an object: the JSON-RPC decoder's")
		}
		c.answers.Wait()
		if len(sent) != 1 {
			t.Fatalf("%d answers to one question: %q", len(sent), sent)
		}
		var reply struct {
			ID     json.RawMessage `json:"id"`
			Result *struct {
				Action  string         `json:"action"`
				Content map[string]any `json:"content"`
			} `json:"result"`
			Error *jsonrpcError `json:"error"`
		}
		if err := json.Unmarshal(sent[0], &reply); err != nil || string(reply.ID) != "7" || (reply.Result == nil) == (reply.Error == nil) {
			t.Fatalf("not one answer to request 7: %s", sent[0])
		}
		if reply.Error != nil {
			if asked != nil || reply.Error.Code != -32602 {
				t.Fatalf("refused with %s after asking the user %+v", sent[0], asked)
			}
			return
		}
		if asked == nil {
			t.Fatalf("answered %s without asking anyone", sent[0])
		}
		var p mcpElicitParams
		json.Unmarshal(params, &p)
		checkAskedQuestion(t, *asked, p)
		switch a := reply.Result; a.Action {
		case "decline", "cancel":
			if a.Content != nil {
				t.Fatalf("a %s with content: %s", a.Action, sent[0])
			}
		case "accept":
			if asked.Mode == ElicitURL {
				if a.Content != nil {
					t.Fatalf("a URL question answered with content: %s", sent[0])
				}
				return
			}
			if err := fuzzSchemaAccepts(p.RequestedSchema, a.Content); err != nil {
				t.Fatalf("zot sent content its requested schema refuses: %v\nschema %s\nsent %s", err, p.RequestedSchema, sent[0])
			}
		default:
			t.Fatalf("action %q: %s", a.Action, sent[0])
		}
	})
}

// checkAskedQuestion holds what the user was shown to the bounds zot
// promises, and the form zot hands an editor to the form it checks.
func checkAskedQuestion(t *testing.T, q Elicitation, p mcpElicitParams) {
	t.Helper()
	if q.Server != "fuzz" || len(q.Message) > mcpMaxQuestion || !strings.HasPrefix(p.Message, q.Message) || !utf8.ValidString(q.Message) {
		t.Fatalf("message %q (server %q) from %q", q.Message, q.Server, p.Message)
	}
	if q.Mode == ElicitURL {
		u, err := url.Parse(q.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(q.URL) > mcpMaxElicitURL || q.URL != p.URL {
			t.Fatalf("the user was asked to open %q", q.URL)
		}
		return
	}
	if q.Mode != ElicitForm || len(q.Fields) > mcpMaxFields {
		t.Fatalf("mode %q with %d fields", q.Mode, len(q.Fields))
	}
	for _, fl := range q.Fields {
		if len(fl.Options) > mcpMaxOptions || len(fl.Title) > mcpMaxFieldText || len(fl.Description) > mcpMaxFieldText {
			t.Fatalf("field %q: %d options, title %d bytes, description %d bytes", fl.Name, len(fl.Options), len(fl.Title), len(fl.Description))
		}
	}
	schema, err := json.Marshal(q.Schema())
	if err != nil {
		t.Fatalf("the editor's schema does not encode: %v", err)
	}
	again, err := elicitFields(schema)
	if err != nil {
		t.Fatalf("the editor's schema is one zot refuses: %v\n%s", err, schema)
	}
	if a, b := fuzzFormShape(q.Fields), fuzzFormShape(again); !reflect.DeepEqual(a, b) {
		t.Fatalf("the editor's schema is another form:\nasked  %v\neditor %v", a, b)
	}
}

// fuzzFormShape is what a form asks, by field name: what Schema keeps
// (an option's title becomes its value when it had none, and the order
// of the fields is the JSON object's).
func fuzzFormShape(fields []ElicitField) map[string]string {
	out := map[string]string{}
	for _, f := range fields {
		var values []string
		for _, o := range f.Options {
			values = append(values, o.Value)
		}
		f.Options = nil
		b, _ := json.Marshal(f)
		out[f.Name] = fmt.Sprintf("%s options %q", b, values)
	}
	return out
}

// fuzzUser answers a question as its first byte says: accept with a value
// that fits each field (a field left out on a set bit of the second byte,
// for its default), accept with the JSON content the rest holds, decline,
// or answer with an action zot does not know.
func fuzzUser(q Elicitation, answer []byte) ElicitAnswer {
	src := fuzzBytes(answer)
	switch src.next() % 4 {
	case 1:
		var content map[string]any
		json.Unmarshal(src, &content)
		return ElicitAnswer{Action: ElicitAccept, Content: content}
	case 2:
		return ElicitAnswer{Action: ElicitDecline}
	case 3:
		return ElicitAnswer{Action: "maybe"}
	}
	if q.Mode == ElicitURL {
		return ElicitAnswer{Action: ElicitAccept}
	}
	content := map[string]any{}
	leaveOut := src.next()
	for i, f := range q.Fields {
		if leaveOut>>(i%8)&1 != 0 {
			continue
		}
		content[f.Name] = fuzzFittingValue(f)
	}
	return ElicitAnswer{Action: ElicitAccept, Content: content}
}

// fuzzFittingValue is a value a person would give the field: its first
// choices, its lower bound, a sample of its format, text of its least
// length (not ASCII, so that length counts characters).
func fuzzFittingValue(f ElicitField) any {
	switch f.Type {
	case "boolean":
		return true
	case "number", "integer":
		n := 0.0
		switch {
		case f.Minimum != nil:
			n = *f.Minimum
			if f.Type == "integer" {
				n = math.Ceil(n)
			}
		case f.Maximum != nil:
			n = *f.Maximum
			if f.Type == "integer" {
				n = math.Floor(n)
			}
		}
		return n
	}
	if f.Multiple {
		k := 1
		if f.MinItems != nil {
			k = *f.MinItems
		}
		picked := []any{}
		for _, o := range f.Options[:max(0, min(k, len(f.Options)))] {
			picked = append(picked, o.Value)
		}
		return picked
	}
	if len(f.Options) > 0 {
		return f.Options[0].Value
	}
	switch f.Format {
	case "email":
		return "a@b.example"
	case "uri":
		return "https://b.example/"
	case "date":
		return "2026-07-28"
	case "date-time":
		return "2026-07-28T09:30:00Z"
	}
	n := 0
	if f.MinLength != nil {
		n = max(0, min(*f.MinLength, 64))
	}
	return strings.Repeat("é", n)
}

// fuzzSchemaProp is one property of a requested schema, read the way
// JSON Schema reads MCP's keywords; the JSON is decoded as zot decodes
// it, so only the meaning of the keywords is checked here.
type fuzzSchemaProp struct {
	Type      string          `json:"type"`
	Enum      []any           `json:"enum"`
	OneOf     []fuzzConst     `json:"oneOf"`
	MinLength *float64        `json:"minLength"`
	MaxLength *float64        `json:"maxLength"`
	Minimum   *float64        `json:"minimum"`
	Maximum   *float64        `json:"maximum"`
	MinItems  *float64        `json:"minItems"`
	MaxItems  *float64        `json:"maxItems"`
	Items     *fuzzSchemaItem `json:"items"`
}

type fuzzSchemaItem struct {
	Type  string      `json:"type"`
	Enum  []any       `json:"enum"`
	AnyOf []fuzzConst `json:"anyOf"`
}

// fuzzConst is a subschema of a oneOf or anyOf; one without a const
// accepts every value.
type fuzzConst struct {
	Const json.RawMessage `json:"const"`
}

func (c fuzzConst) accepts(v any) bool {
	var want any
	return len(c.Const) == 0 || json.Unmarshal(c.Const, &want) == nil && reflect.DeepEqual(want, v)
}

// fuzzSchemaAccepts says why content does not validate against the
// requested schema, or nil. A oneOf of consts is read as MCP means it:
// the value is one of them (not "exactly one", which two equal consts
// would fail).
func fuzzSchemaAccepts(raw json.RawMessage, content map[string]any) error {
	var s struct {
		Properties map[string]fuzzSchemaProp `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	for _, name := range s.Required {
		if _, ok := content[name]; !ok {
			return fmt.Errorf("required %q is missing", name)
		}
	}
	for name, v := range content {
		if p, ok := s.Properties[name]; ok {
			if err := p.accepts(v); err != nil {
				return fmt.Errorf("%q = %#v: %v", name, v, err)
			}
		}
	}
	return nil
}

func (p fuzzSchemaProp) accepts(v any) error {
	switch p.Type {
	case "string":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("not a string")
		}
		n := float64(utf8.RuneCountInString(s))
		if p.MinLength != nil && n < *p.MinLength || p.MaxLength != nil && n > *p.MaxLength {
			return fmt.Errorf("%v characters, not within minLength/maxLength", n)
		}
		return fuzzOneOf(v, p.Enum, p.OneOf)
	case "number", "integer":
		n, ok := v.(float64)
		if !ok || p.Type == "integer" && n != math.Trunc(n) {
			return fmt.Errorf("not a %s", p.Type)
		}
		if p.Minimum != nil && n < *p.Minimum || p.Maximum != nil && n > *p.Maximum {
			return fmt.Errorf("not within minimum/maximum")
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("not a boolean")
		}
	case "array":
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("not an array")
		}
		n := float64(len(list))
		if p.MinItems != nil && n < *p.MinItems || p.MaxItems != nil && n > *p.MaxItems {
			return fmt.Errorf("%v items, not within minItems/maxItems", n)
		}
		for _, e := range list {
			if p.Items == nil {
				continue
			}
			if _, ok := e.(string); p.Items.Type == "string" && !ok || p.Items.Type != "" && p.Items.Type != "string" {
				return fmt.Errorf("item %#v is not of type %q", e, p.Items.Type)
			}
			if err := fuzzOneOf(e, p.Items.Enum, p.Items.AnyOf); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("type %q is no type of a form", p.Type)
	}
	return nil
}

// fuzzOneOf checks v against an enum and a list of consts, each when
// given.
func fuzzOneOf(v any, enum []any, consts []fuzzConst) error {
	if enum != nil && !slices.ContainsFunc(enum, func(e any) bool { return reflect.DeepEqual(e, v) }) {
		return fmt.Errorf("not in enum %v", enum)
	}
	if consts != nil && !slices.ContainsFunc(consts, func(c fuzzConst) bool { return c.accepts(v) }) {
		return fmt.Errorf("none of the consts %v", consts)
	}
	return nil
}

// fuzzBytes hands out a fuzzer's bytes one at a time, zeros once spent.
type fuzzBytes []byte

func (b *fuzzBytes) next() byte {
	if len(*b) == 0 {
		return 0
	}
	c := (*b)[0]
	*b = (*b)[1:]
	return c
}

// The hosts of FuzzMCPOAuthDiscovery: the MCP server zot is configured
// for, and the identity provider of the jwt-bearer grant (configured,
// trusted). Every other host is the fuzzer's.
const (
	oauthFuzzServer = "https://mcp.example.com/team/mcp"
	oauthFuzzIDP    = "https://idp.example.com/oauth2/token"
	// What must travel only where docs/mcp.md's table says: long and
	// unlike anything a document could hold by chance.
	oauthFuzzClientSecret = "client-secret-9f3b2c7d1e"
	oauthFuzzIDPSecret    = "idp-secret-4a8e6b0c2f"
	oauthFuzzIDToken      = "id-token-7c1d9e3f5a"
	oauthFuzzAssertion    = "id-jag-assertion-2b6f8d0e4c"
)

// FuzzMCPOAuthDiscovery answers zot's OAuth client with a fuzzed
// WWW-Authenticate header, protected resource metadata, authorization
// server metadata and token answer, served at whatever URL zot asks (a
// fake network: every host answers by path), through three challenges
// in turn: a 401 (discovery and a grant), a 401 to the new token (a
// refresh, or a new grant), and a 403 (step-up). A server that could
// bend any of these gets the user's secrets or a token meant for
// another resource. It holds, for every request zot makes, what
// docs/mcp.md "Which hosts receive what" promises:
//   - it goes over https, or plain http to a loopback address only;
//   - the client secret and the identity provider's assertion go only in
//     a POST to the token endpoint discovery settled on, the ID token and
//     the identity provider's secret only to the configured idp endpoint;
//     a GET carries no credentials;
//   - a POST follows no redirect, a GET at most five;
//   - a refresh goes to the token endpoint the token came from;
//   - the resource zot asks a token for is this server, or a path of its
//     origin that holds it (RFC 9728 as the MCP specification asks);
//     where it came from resource metadata, the authorization server is
//     the first secure one it names, and its metadata states that issuer;
//   - a step-up asks for the scopes held and those challenged, and an
//     answer's expires_in is a number of seconds within ten years.
func FuzzMCPOAuthDiscovery(f *testing.F) {
	prm := `{"resource":"https://mcp.example.com/team/mcp","authorization_servers":["https://as.example.com"],"scopes_supported":["mcp:tools"]}`
	as := `{"issuer":"https://as.example.com","authorization_endpoint":"https://as.example.com/authorize","token_endpoint":"https://as.example.com/token",
		"token_endpoint_auth_methods_supported":["client_secret_post"],"code_challenge_methods_supported":["S256"]}`
	token := `{"access_token":"at-1","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-1","scope":"mcp:tools"}`
	challenge := `Bearer error="insufficient_scope", scope="mcp:tools files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/team/mcp"`
	for _, s := range []struct {
		header, prm, as, token string
		mode                   byte
	}{
		{challenge, prm, as, token, 0},
		{challenge, prm, as, token, oauthFuzzJWT | oauthFuzzScopes},
		{`Basic realm="x", Bearer scope="a b"`, prm, strings.Replace(as, `["client_secret_post"]`, `["client_secret_basic"]`, 1), `{"access_token":"at","token_type":"bearer","expires_in":"0"}`, 0},
		{`Bearer resource_metadata="https://meta.example.net/redirect"`, prm, as, token, oauthFuzzRedirectPOST},
		{`Bearer`, `{"resource":"https://mcp.example.com/","authorization_servers":["http://as.example.com","http://127.0.0.1:9/","https://as.example.com"]}`, as, token, 0},
		{`Bearer`, `{"resource":"https://mcp.example.com/other","authorization_servers":["https://as.example.com"]}`, as, token, 0},
		{`Bearer`, prm, `{"issuer":"https://evil.example.com","token_endpoint":"https://evil.example.com/token"}`, token, 0},
		{`Bearer`, prm, `{"issuer":"https://as.example.com","token_endpoint":"http://as.example.com/token"}`, token, 0},
		{`Bearer`, prm, as, `{"error":"invalid_client","error_description":"no"}`, 0},
		{`Bearer`, prm, as, `{"access_token":"x","token_type":"DPoP"}`, 0},
		{`Bearer`, prm, as, `{"access_token":"x","token_type":"Bearer","expires_in":-1}`, 0},
		{`Bearer`, prm, as, token, oauthFuzzNoResourceMeta},
		{`Bearer`, prm, as, token, oauthFuzzNoResourceMeta | oauthFuzzNoASMeta | oauthFuzzJWT},
		{`Bearer error="insufficient_scope", scope="mcp:tools"`, prm, as, token, 0},
	} {
		f.Add(s.header, s.prm, s.as, s.token, "https://as.example.com/token2", s.mode)
	}
	store := filepath.Join(f.TempDir(), mcpTokenFile)
	f.Fuzz(func(t *testing.T, header, prm, as, token, location string, mode byte) {
		network := &oauthFuzzNet{prm: prm, as: as, token: token, location: location, mode: mode}
		client := oauthHTTPClient()
		client.Transport = network
		u, _ := url.Parse(oauthFuzzServer)
		cfg := mcpOAuthConfig{Given: true, Grant: grantClientCredentials, ClientID: "zot-client", ClientSecret: oauthFuzzClientSecret}
		if mode&oauthFuzzJWT != 0 {
			cfg.Grant = grantJWTBearer
			cfg.IDP = mcpIDPConfig{TokenEndpoint: oauthFuzzIDP, ClientID: "idp-client", ClientSecret: oauthFuzzIDPSecret, IDToken: oauthFuzzIDToken}
		}
		if mode&oauthFuzzScopes != 0 {
			cfg.Scopes = "configured:scope"
		}
		o := &mcpOAuth{server: "fuzz", serverURL: u, key: canonicalResource(u), cfg: cfg, store: mcpTokenStore{path: store}, http: client, flow: make(chan struct{}, 1)}
		ctx := context.Background()
		respond := func(status int) *http.Response {
			return &http.Response{StatusCode: status, Header: http.Header{"Www-Authenticate": {header}}, Body: http.NoBody}
		}
		sent := func() string {
			if tok := o.current(); tok != nil {
				return "Bearer " + tok.AccessToken
			}
			return ""
		}

		start := time.Now()
		o.challenge(ctx, respond(http.StatusUnauthorized), "", 0)
		network.check(t, o, "the first 401")
		checkFuzzToken(t, o, token, start, time.Now())
		first := len(network.reqs)
		for _, r := range network.reqs {
			if s := r.form().Get("scope"); r.method == http.MethodPost && cfg.Scopes != "" && s != cfg.Scopes {
				t.Fatalf("asked for scope %q, not the configured %q", s, cfg.Scopes)
			}
		}

		held := o.current()
		start = time.Now()
		o.challenge(ctx, respond(http.StatusUnauthorized), sent(), 0)
		network.check(t, o, "the second 401")
		for _, r := range network.reqs[first:] {
			if f := r.form(); r.method == http.MethodPost && f.Get("grant_type") == "refresh_token" &&
				(held == nil || !sameFuzzURL(r.url, held.TokenEndpoint) || f.Get("refresh_token") != held.RefreshToken) {
				t.Fatalf("a refresh went to %s, not to the token endpoint %+v", r.url, held)
			}
		}
		checkFuzzToken(t, o, token, start, time.Now())

		held, before := o.current(), len(network.reqs)
		_, err := o.challenge(ctx, respond(http.StatusForbidden), sent(), 0)
		network.check(t, o, "the 403")
		ch, _ := bearerChallenge([]string{header})
		if held == nil || ch["error"] != "insufficient_scope" {
			if len(network.reqs) != before {
				t.Fatalf("a 403 without a step-up to make sent %d requests", len(network.reqs)-before)
			}
			return
		}
		want := fuzzScopeSet(held.Scope + " " + ch["scope"])
		if reflect.DeepEqual(want, fuzzScopeSet(held.Scope)) {
			if err == nil || len(network.reqs) != before {
				t.Fatalf("a step-up for scope %q the token holds (%q) went ahead: %v", ch["scope"], held.Scope, err)
			}
			return
		}
		for _, r := range network.reqs[before:] {
			if r.method == http.MethodPost && r.url != oauthFuzzIDP && !reflect.DeepEqual(fuzzScopeSet(r.form().Get("scope")), want) {
				t.Fatalf("the step-up asked for scope %q, want those held (%q) and those challenged (%q)", r.form().Get("scope"), held.Scope, ch["scope"])
			}
		}
	})
}

// The mode bits of FuzzMCPOAuthDiscovery.
const (
	oauthFuzzJWT            = 1 << iota // the jwt-bearer grant, else client credentials
	oauthFuzzScopes                     // oauth.scopes is configured
	oauthFuzzNoResourceMeta             // no protected resource metadata anywhere (404)
	oauthFuzzNoASMeta                   // no authorization server metadata anywhere (404)
	oauthFuzzRedirectPOST               // a POST to the token endpoint is answered 307 to location
)

// oauthFuzzNet is the network of FuzzMCPOAuthDiscovery: every host
// answers by path from the fuzzed documents, and each request is kept.
type oauthFuzzNet struct {
	prm, as, token, location string
	mode                     byte
	reqs                     []oauthFuzzRequest
}

type oauthFuzzRequest struct {
	method, url string
	header      http.Header
	body        string
	// hops is how many redirects led here, firstMethod the method of the
	// request that began them.
	hops        int
	firstMethod string
}

func (r oauthFuzzRequest) form() url.Values {
	v, _ := url.ParseQuery(r.body)
	return v
}

func (n *oauthFuzzNet) RoundTrip(req *http.Request) (*http.Response, error) {
	r := oauthFuzzRequest{method: req.Method, url: req.URL.String(), header: req.Header.Clone(), firstMethod: req.Method}
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		req.Body.Close()
		r.body = string(b)
	}
	for via := req.Response; via != nil; via = via.Request.Response {
		r.hops++
		r.firstMethod = via.Request.Method
	}
	n.reqs = append(n.reqs, r)
	reply := func(status int, body string, h http.Header) (*http.Response, error) {
		if h == nil {
			h = http.Header{"Content-Type": {"application/json"}}
		}
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
	}
	path := req.URL.Path
	switch {
	case req.Method == http.MethodPost && r.url == oauthFuzzIDP:
		return reply(200, `{"access_token":"`+oauthFuzzAssertion+`","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}`, nil)
	case req.Method == http.MethodPost && n.mode&oauthFuzzRedirectPOST != 0:
		return reply(http.StatusTemporaryRedirect, "", http.Header{"Location": {n.location}})
	case req.Method == http.MethodPost:
		return reply(200, n.token, nil)
	case strings.HasSuffix(path, "/redirect"):
		return reply(http.StatusFound, "", http.Header{"Location": {n.location}})
	case strings.HasPrefix(path, "/.well-known/oauth-protected-resource") && n.mode&oauthFuzzNoResourceMeta == 0:
		return reply(200, n.prm, nil)
	case (strings.Contains(path, "/.well-known/oauth-authorization-server") || strings.Contains(path, "/.well-known/openid-configuration")) && n.mode&oauthFuzzNoASMeta == 0:
		return reply(200, n.as, nil)
	}
	return reply(404, `{"error":"not_found"}`, nil)
}

// check holds every request so far to where docs/mcp.md lets it go.
func (n *oauthFuzzNet) check(t *testing.T, o *mcpOAuth, step string) {
	t.Helper()
	var d *mcpDiscovery
	o.mu.Lock()
	d = o.disc
	o.mu.Unlock()
	if len(n.reqs) > 100 {
		t.Fatalf("%s: %d requests", step, len(n.reqs))
	}
	for _, r := range n.reqs {
		u, err := url.Parse(r.url)
		if err != nil || !fuzzSecureURL(u) {
			t.Fatalf("%s: a %s to %s, which is neither https nor loopback http", step, r.method, r.url)
		}
		if r.hops > 0 && r.firstMethod != http.MethodGet || r.hops > 5 {
			t.Fatalf("%s: a %s followed %d redirects to %s", step, r.firstMethod, r.hops, r.url)
		}
		// Whatever a request carries, anywhere: its URL, headers, body,
		// and the Basic credentials decoded.
		hay := r.url + "\n" + r.body
		for k, vs := range r.header {
			hay += "\n" + k + ": " + strings.Join(vs, ", ")
		}
		if b, ok := strings.CutPrefix(r.header.Get("Authorization"), "Basic "); ok {
			creds, _ := base64.StdEncoding.DecodeString(b)
			hay += "\n" + string(creds)
		}
		hay += "\n" + r.form().Encode()
		toIDP := r.method == http.MethodPost && r.url == oauthFuzzIDP
		toToken := r.method == http.MethodPost && !toIDP && d != nil && sameFuzzURL(r.url, d.meta.TokenEndpoint)
		for secret, ok := range map[string]bool{oauthFuzzClientSecret: toToken, oauthFuzzAssertion: toToken, oauthFuzzIDToken: toIDP, oauthFuzzIDPSecret: toIDP} {
			if !ok && strings.Contains(hay, secret) {
				t.Fatalf("%s: %q went in a %s to %s", step, secret, r.method, r.url)
			}
		}
		if r.method == http.MethodGet && (r.header.Get("Authorization") != "" || r.body != "") {
			t.Fatalf("%s: a GET to %s with credentials or a body", step, r.url)
		}
		if r.method != http.MethodPost {
			continue
		}
		if !toIDP && !toToken {
			t.Fatalf("%s: a POST to %s, not the token endpoint (%+v)", step, r.url, d)
		}
		if res, ok := r.form()["resource"]; d == nil || ok && (len(res) != 1 || res[0] != d.resource || fuzzResourceOfServer(res[0]) != nil) || !ok && d.resource != "" {
			t.Fatalf("%s: a token asked for resource %q (discovery found %q): %v", step, res, d.resource, fuzzResourceOfServer(d.resource))
		}
	}
	if d == nil {
		return
	}
	var as struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	json.Unmarshal([]byte(n.as), &as)
	guessed := strings.TrimSuffix(oauthFuzzServer, "/team/mcp") + "/token"
	if d.meta.TokenEndpoint != as.TokenEndpoint && (n.mode&oauthFuzzNoASMeta == 0 || d.meta.TokenEndpoint != guessed) {
		t.Fatalf("%s: token endpoint %q, named by no metadata served (%q)", step, d.meta.TokenEndpoint, as.TokenEndpoint)
	}
	if d.resource == "" {
		return
	}
	var rm struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	json.Unmarshal([]byte(n.prm), &rm)
	first := ""
	for _, a := range rm.AuthorizationServers {
		if u, err := url.Parse(a); err == nil && fuzzSecureURL(u) {
			first = a
			break
		}
	}
	if strings.TrimSuffix(d.meta.Issuer, "/") != strings.TrimSuffix(first, "/") {
		t.Fatalf("%s: authorization server %q, not the first secure one of %q", step, d.meta.Issuer, rm.AuthorizationServers)
	}
}

// checkFuzzToken holds the token zot took, if any, to the answer it came
// from: from the token endpoint discovery found, for its resource, and
// expiring when the answer said, which must be a number of seconds.
func checkFuzzToken(t *testing.T, o *mcpOAuth, answer string, before, after time.Time) {
	t.Helper()
	tok := o.current()
	if tok == nil || o.disc == nil {
		return
	}
	if tok.AccessToken == "" || tok.TokenEndpoint != o.disc.meta.TokenEndpoint || tok.Resource != o.disc.resource {
		t.Fatalf("token %+v from discovery %+v", tok, o.disc)
	}
	var tr struct {
		ExpiresIn json.RawMessage `json:"expires_in"`
	}
	json.Unmarshal([]byte(answer), &tr)
	if len(tr.ExpiresIn) == 0 || string(tr.ExpiresIn) == "null" {
		if !tok.ExpiresAt.IsZero() {
			t.Fatalf("no expires_in, yet the token expires at %v", tok.ExpiresAt)
		}
		return
	}
	n, err := strconv.ParseFloat(strings.Trim(string(tr.ExpiresIn), `"`), 64)
	if err != nil || math.IsNaN(n) || n < 0 || n > 10*365*24*3600 {
		t.Fatalf("took a token whose expires_in is %s (expires at %v)", tr.ExpiresIn, tok.ExpiresAt)
	}
	lo, hi := before.Add(time.Duration(n)*time.Second-time.Second), after.Add(time.Duration(n)*time.Second)
	if tok.ExpiresAt.Before(lo) || tok.ExpiresAt.After(hi) {
		t.Fatalf("expires_in %s, yet the token expires at %v (want %v to %v)", tr.ExpiresIn, tok.ExpiresAt, lo, hi)
	}
}

// fuzzSecureURL is where a credential may travel: https, or http to a
// loopback address.
func fuzzSecureURL(u *url.URL) bool {
	if u.Host == "" {
		return false
	}
	if u.Scheme == "https" {
		return true
	}
	h := u.Hostname()
	ip := net.ParseIP(h)
	return u.Scheme == "http" && (strings.EqualFold(h, "localhost") || ip != nil && ip.IsLoopback())
}

// fuzzResourceOfServer says why resource is not oauthFuzzServer or a path
// of its origin that holds it.
func fuzzResourceOfServer(resource string) error {
	r, err := url.Parse(resource)
	if err != nil || r.Fragment != "" {
		return fmt.Errorf("%q is not a URL without a fragment", resource)
	}
	port := r.Port()
	if port == "" && strings.EqualFold(r.Scheme, "https") {
		port = "443"
	}
	path := strings.TrimSuffix(r.EscapedPath(), "/")
	if !strings.EqualFold(r.Scheme, "https") || !strings.EqualFold(r.Hostname(), "mcp.example.com") || port != "443" ||
		!slices.Contains([]string{"", "/team", "/team/mcp"}, path) {
		return fmt.Errorf("%q is another resource than %s", resource, oauthFuzzServer)
	}
	return nil
}

// sameFuzzURL says whether two URLs are one, as a request writes them.
func sameFuzzURL(a, b string) bool {
	ua, err := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err == nil && err2 == nil && ua.String() == ub.String()
}

func fuzzScopeSet(s string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(s) {
		set[w] = true
	}
	return set
}

// FuzzMCPStreamResumption plays a 2025-11-25 server's event stream for a
// request: its messages (notifications, requests of its own, pings, then
// the response), each an event with an id, written the ways SSE allows
// (CRLF, data on several lines, id after data, comments, retry:). The
// stream is cut, up to four times, at a byte the fuzzer picks, ending
// cleanly or with a read error; each reconnection gets, as a server that
// keeps its promise does, exactly the events after the Last-Event-ID zot
// would send. Cuts are what resumption is for — a proxy's timeout, a
// dropped connection, a server that ends a stream to have the client
// poll — so it holds that wherever they fall:
//   - every message reaches zot exactly once, in order, and the server's
//     requests are answered once each: a message lost or repeated is a
//     tool's result never arriving, or a question put to the user twice;
//   - zot resumes only from an id the server sent, and gives up only when
//     no event with an id had come yet;
//   - the reconnection delay stays within mcpMinRetry and mcpMaxRetry.
func FuzzMCPStreamResumption(f *testing.F) {
	for _, s := range [][]byte{
		// Whole: three notifications and the response.
		{0, 3, 0, 1, 0, 2, 0},
		// A priming event, requests and a ping in every style; cut inside
		// an event (a read error), at an event's end (cleanly), inside
		// one again, then whole.
		{1, 0, 1, 3, 4, 1, 2, 0x66, 5, 2, 0, 0x9d, 7, 1, 1, 0x03, 2, 1, 0xd4, 3, 0, 150, 1, 0, 81, 3, 0, 30, 0},
		// Ids 1 and 10: a read error inside "id: 10" leaves "id: 1".
		{0, 2, 0, 0, 0, 1, 0, 0, 0, 8, 1, 2, 0, 1, 0, 3, 0, 212, 0},
		// Cut before any event: nothing to resume from.
		{0, 0, 0, 1, 0, 1, 0, 3},
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, layout []byte) {
		src := fuzzBytes(layout)
		events := fuzzEventLog(&src)
		c := newMCPConn("fuzz", nil)
		var got []int // the indices of the messages that reached zot, in order
		c.onNotify = func(_ string, params json.RawMessage) {
			var p struct{ Data int }
			json.Unmarshal(params, &p)
			got = append(got, p.Data)
		}
		c.t = funcTransport(func(out mcpOut) {
			var m struct{ ID string }
			json.Unmarshal(out.body, &m)
			n, _ := strconv.Atoi(m.ID[1:])
			got = append(got, n)
		})
		call := &mcpCall{ctx: context.Background(), reply: make(chan jsonrpcMessage, 4), fail: make(chan error, 1)}
		c.pending[1] = call
		tr := &httpTransport{conn: c}

		var cur sseCursor
		from := 0 // the first event of the next connection
		done := false
		for conn := 0; !done; conn++ {
			var stream []byte
			for _, e := range events[from:] {
				stream = append(stream, e.wire...)
			}
			body := io.Reader(bytes.NewReader(stream))
			if how := src.next(); conn < 4 && how%4 != 0 {
				end := io.EOF
				if how%4 == 3 {
					end = io.ErrUnexpectedEOF
				}
				cut := (int(src.next())<<8 | int(src.next())) % (len(stream) + 1)
				body = io.MultiReader(bytes.NewReader(stream[:cut]), iotest.ErrReader(end))
			}
			done, _ = tr.readStream(body, 1, &cur)
			if d := retryDelay(&cur); d < mcpMinRetry || d > mcpMaxRetry {
				t.Fatalf("retry delay %v", d)
			}
			if done {
				break
			}
			if cur.LastID == "" {
				if conn > 0 {
					t.Fatalf("no id to resume from after connection %d, though the first brought one", conn)
				}
				break // the call fails: nothing to resume from, as follow says
			}
			i := slices.IndexFunc(events, func(e fuzzEvent) bool { return e.id == cur.LastID })
			if i < 0 {
				t.Fatalf("zot would resume from %q, an id the server never sent; the server sent %v", cur.LastID, fuzzEventIDs(events))
			}
			from = i + 1
			if conn >= 4 {
				t.Fatalf("the whole stream did not bring the response; delivered %v", got)
			}
		}
		var want []int
		for i, e := range events {
			if e.message {
				want = append(want, i)
			}
		}
		if !done {
			want = want[:0]
			for _, i := range got {
				if len(want) == 0 || i > want[len(want)-1] {
					want = append(want, i)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("before zot gave up, messages came as %v", got)
			}
			return
		}
		if !slices.Equal(got, want[:len(want)-1]) || len(call.reply) != 1 {
			t.Fatalf("messages came as %v and the response %d times; the server sent %v once each\n%q", got, len(call.reply), want, fuzzWire(events))
		}
	})
}

// fuzzEvent is one event of FuzzMCPStreamResumption's server: its id, and
// its bytes as the server writes them every time.
type fuzzEvent struct {
	id      string
	wire    []byte
	message bool // a message that reaches zot, not a priming event
}

// fuzzEventLog is a server's events for request 1, as src says: maybe a
// priming event (an id and empty data), up to six messages, then the
// response. Ids are numbers that grow, each maybe with a prefix.
func fuzzEventLog(src *fuzzBytes) []fuzzEvent {
	var events []fuzzEvent
	v := 0
	id := func() string {
		v += 1 + int(src.next()%12)
		if src.next()%4 == 0 {
			return "s:" + strconv.Itoa(v)
		}
		return strconv.Itoa(v)
	}
	if src.next()%2 == 1 {
		e := fuzzEvent{id: id()}
		e.wire = []byte("id: " + e.id + "\ndata:\n\n")
		events = append(events, e)
	}
	n := int(src.next() % 7)
	for i := 0; i <= n; i++ {
		k := len(events)
		msg := fmt.Sprintf(`{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": %d}}`, k)
		switch {
		case i == n:
			msg = `{"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": false}}`
		case src.next()%3 == 1:
			msg = fmt.Sprintf(`{"jsonrpc": "2.0", "id": "r%d", "method": "roots/list"}`, k)
		case src.next()%3 == 2:
			msg = fmt.Sprintf(`{"jsonrpc": "2.0", "id": "p%d", "method": "ping"}`, k)
		}
		e := fuzzEvent{id: id(), message: true}
		e.wire = fuzzEventWire(e.id, msg, src.next())
		events = append(events, e)
	}
	return events
}

// fuzzEventWire writes one event as style says: CRLF, the id after the
// data, an event: line, a comment, a retry:, "data:" without its space,
// and the data cut into up to four lines at its commas.
func fuzzEventWire(id, msg string, style byte) []byte {
	eol := "\n"
	if style&1 != 0 {
		eol = "\r\n"
	}
	sep := "data: "
	if style&32 != 0 {
		sep = "data:"
	}
	parts := strings.SplitAfter(msg, ", ")
	lines := int(style>>6) + 1
	var data string
	for i := 0; i < lines; i++ {
		lo, hi := i*len(parts)/lines, (i+1)*len(parts)/lines
		if lo < hi {
			data += sep + strings.Join(parts[lo:hi], "") + eol
		}
	}
	var b strings.Builder
	if style&4 != 0 {
		b.WriteString("event: message" + eol)
	}
	if style&8 != 0 {
		b.WriteString(": keep-alive" + eol)
	}
	if style&16 != 0 {
		fmt.Fprintf(&b, "retry: %d%s", int(style)*997, eol)
	}
	if style&2 != 0 {
		b.WriteString(data + "id: " + id + eol)
	} else {
		b.WriteString("id: " + id + eol + data)
	}
	b.WriteString(eol)
	return []byte(b.String())
}

func fuzzEventIDs(events []fuzzEvent) []string {
	var ids []string
	for _, e := range events {
		ids = append(ids, e.id)
	}
	return ids
}

func fuzzWire(events []fuzzEvent) string {
	var b strings.Builder
	for _, e := range events {
		b.Write(e.wire)
	}
	return b.String()
}
