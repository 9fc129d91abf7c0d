package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// oauthFixture is a protected MCP server and its authorization server, as
// two HTTP servers: the resource server checks bearer tokens and passes
// good requests on to the MCP server behind it (without the token); the
// authorization server registers clients, sends a browser back with a
// code, and issues, refreshes and revokes tokens. It records what it saw.
type oauthFixture struct {
	t        *testing.T
	as, rs   *httptest.Server
	resource string // rs.URL + "/mcp"

	mu       sync.Mutex
	clients  map[string]string // client_id → redirect_uri
	codes    map[string]oauthCode
	access   map[string]bool // access token → valid
	refresh  map[string]bool // refresh token → valid
	n        int
	grants   []string // grant_type of each token request
	unauth   int      // 401s the resource server gave
	seen     []string // the Authorization headers the resource server saw
	ccSecret string   // the client_credentials client "ci"'s secret
}

type oauthCode struct {
	client, redirect, challenge, resource string
}

// startOAuthFixture puts upstream (an MCP server's URL) behind OAuth.
func startOAuthFixture(t *testing.T, upstream string) *oauthFixture {
	f := &oauthFixture{t: t, clients: map[string]string{}, codes: map[string]oauthCode{}, access: map[string]bool{}, refresh: map[string]bool{}, ccSecret: "ci-secret"}
	f.as = httptest.NewServer(http.HandlerFunc(f.serveAS))
	t.Cleanup(f.as.Close)
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.URL.Path = target.Path
		r.Out.Header.Del("Authorization")
	}}
	f.rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			writeJSON(w, 200, obj{"resource": f.resource, "authorization_servers": []string{f.as.URL}, "scopes_supported": []string{"mcp:tools"}})
			return
		}
		h := r.Header.Get("Authorization")
		f.mu.Lock()
		f.seen = append(f.seen, h)
		ok := f.access[strings.TrimPrefix(h, "Bearer ")]
		if !ok {
			f.unauth++
		}
		f.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_token", resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, f.rs.URL))
			writeJSON(w, 401, obj{"error": "invalid_token"})
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.rs.Close)
	f.resource = f.rs.URL + "/mcp"
	return f
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (f *oauthFixture) serveAS(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		writeJSON(w, 200, obj{"issuer": f.as.URL, "authorization_endpoint": f.as.URL + "/authorize", "token_endpoint": f.as.URL + "/token",
			"registration_endpoint": f.as.URL + "/register", "code_challenge_methods_supported": []string{"S256"},
			"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic"}, "scopes_supported": []string{"mcp:tools", "offline_access"}})
	case "/register":
		var req struct {
			RedirectURIs []string `json:"redirect_uris"`
			AuthMethod   string   `json:"token_endpoint_auth_method"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if len(req.RedirectURIs) != 1 || req.AuthMethod != "none" {
			writeJSON(w, 400, obj{"error": "invalid_client_metadata"})
			return
		}
		f.n++
		id := fmt.Sprintf("dcr-%d", f.n)
		f.clients[id] = req.RedirectURIs[0]
		writeJSON(w, 201, obj{"client_id": id, "redirect_uris": req.RedirectURIs, "token_endpoint_auth_method": "none"})
	case "/authorize":
		q := r.URL.Query()
		redirect := q.Get("redirect_uri")
		if f.clients[q.Get("client_id")] != redirect || q.Get("code_challenge_method") != "S256" || q.Get("resource") != f.resource {
			http.Error(w, "bad authorization request: "+q.Encode(), 400)
			return
		}
		f.n++
		code := fmt.Sprintf("code-%d", f.n)
		f.codes[code] = oauthCode{client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource")}
		http.Redirect(w, r, redirect+"?code="+code+"&state="+url.QueryEscape(q.Get("state"))+"&iss="+url.QueryEscape(f.as.URL), http.StatusFound)
	case "/token":
		r.ParseForm()
		grant := r.PostForm.Get("grant_type")
		f.grants = append(f.grants, grant)
		if r.PostForm.Get("resource") != f.resource {
			writeJSON(w, 400, obj{"error": "invalid_target"})
			return
		}
		switch grant {
		case "authorization_code":
			c, ok := f.codes[r.PostForm.Get("code")]
			delete(f.codes, r.PostForm.Get("code"))
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if !ok || c.client != r.PostForm.Get("client_id") || c.redirect != r.PostForm.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
				writeJSON(w, 400, obj{"error": "invalid_grant"})
				return
			}
			f.issue(w, true)
		case "refresh_token":
			if !f.refresh[r.PostForm.Get("refresh_token")] {
				writeJSON(w, 400, obj{"error": "invalid_grant"})
				return
			}
			delete(f.refresh, r.PostForm.Get("refresh_token")) // rotated
			f.issue(w, true)
		case "client_credentials":
			if id, secret, ok := r.BasicAuth(); !ok || id != "ci" || secret != f.ccSecret {
				writeJSON(w, 401, obj{"error": "invalid_client"})
				return
			}
			f.issue(w, false)
		default:
			writeJSON(w, 400, obj{"error": "unsupported_grant_type"})
		}
	default:
		http.NotFound(w, r)
	}
}

// issue answers with a new token (and refresh token); f.mu is held.
func (f *oauthFixture) issue(w http.ResponseWriter, withRefresh bool) {
	f.n++
	at := fmt.Sprintf("at-%d-%s", f.n, randomToken()[:8])
	f.access[at] = true
	resp := obj{"access_token": at, "token_type": "Bearer", "expires_in": 3600, "scope": "mcp:tools"}
	if withRefresh {
		rt := fmt.Sprintf("rt-%d", f.n)
		f.refresh[rt] = true
		resp["refresh_token"] = rt
	}
	writeJSON(w, 200, resp)
}

// expireAll makes every access token issued so far invalid, as their
// expiry would; refresh tokens stay good.
func (f *oauthFixture) expireAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.access {
		f.access[k] = false
	}
}

func (f *oauthFixture) counts() (grants []string, unauth int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.grants...), f.unauth
}

// The whole path with a real server from npm behind OAuth, in zot -p: a
// login in a "browser", a tool call, a refresh when the token expired
// (at the server, then by the clock), and client credentials with no
// browser at all. The token never leaves the token file but for the
// resource server.
func TestMCPOAuthEndToEndWithARealServer(t *testing.T) {
	t.Parallel()
	f := startOAuthFixture(t, startEverythingHTTP(t))
	z := newZotRun(t)
	browser := mcpTestdataBin(t, "browser")
	writeFile(t, filepath.Join(z.cwd, "web.json"), fmt.Sprintf(`{"mcpServers": {"web": {"type": "http", "url": %q}}}`, f.resource), 0o644)
	web := []string{"--no-mcp", "--mcp-config", "web.json"}

	// Without a login, -p says what to do in one line and goes on.
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "no tools"})})
	stdout, stderr, code := z.run(append(append(anthropicFlags(srv), web...), "--mcp-wait", "60s", "-p", "hi")...)
	if code != 0 || stdout != "no tools\n" || !strings.Contains(stderr, "this server needs you to log in: run `zot mcp login web` in a terminal") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("-p before a login: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	z.env = []string{"BROWSER=" + browser}
	stdout, stderr, code = z.run(append([]string{"mcp", "login", "web"}, web...)...)
	if code != 0 || !strings.Contains(stdout, `server "web": authorized; the token is in `+filepath.Join(z.home, "mcp-oauth.json")) ||
		!strings.Contains(stderr, "to authorize zot for server \"web\", open:\n  "+f.as.URL+"/authorize?") {
		t.Fatalf("login: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	tokens := filepath.Join(z.home, "mcp-oauth.json")
	st, err := os.Stat(tokens)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st, err)
	}
	stored := func() *mcpToken {
		e, err := mcpTokenStore{path: tokens}.load(f.resource)
		if err != nil || e.Token == nil {
			t.Fatalf("no token stored for %s: %v", f.resource, err)
		}
		return e.Token
	}
	first := stored()

	z.env = nil // no browser from here on
	echo := func(what string) {
		t.Helper()
		srv := startReplay(t, toolStep("t1", "mcp__web__echo", obj{"message": what}), replayStep{Events: anthropicEvents(gen{Text: "done"})})
		stdout, stderr, code := z.run(append(append(anthropicFlags(srv), web...), "--mcp-wait", "60s", "-p", "echo")...)
		reqs := srv.Requests()
		if code != 0 || stdout != "done\n" || len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "Echo: "+what) {
			t.Fatalf("%s: exit %d stdout %q stderr %s requests %d", what, code, stdout, stderr, len(reqs))
		}
	}
	echo("through oauth")

	// The server forgets the token: zot refreshes it and goes on.
	f.expireAll()
	echo("after a refresh")
	second := stored()
	if grants, _ := f.counts(); strings.Join(grants, ",") != "authorization_code,refresh_token" || second.AccessToken == first.AccessToken || second.RefreshToken == first.RefreshToken {
		t.Errorf("grants %q; the refresh did not replace the stored tokens", grants)
	}

	// The token's time is up by the clock: zot refreshes before asking.
	mcpTokenStore{path: tokens}.update(f.resource, func(e *mcpStoredServer) error {
		e.Token.ExpiresAt = time.Now().Add(-time.Minute)
		return nil
	})
	_, unauthBefore := f.counts()
	echo("refreshed by the clock")
	if grants, unauth := f.counts(); len(grants) != 3 || grants[2] != "refresh_token" || unauth != unauthBefore {
		t.Errorf("grants %q, 401s %d → %d: want a refresh before the request", grants, unauthBefore, unauth)
	}

	// The refresh token is revoked too: the dead token is forgotten and -p
	// says to log in again.
	f.mu.Lock()
	clear(f.refresh)
	f.mu.Unlock()
	f.expireAll()
	srv = startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "no tools"})})
	_, stderr, code = z.run(append(append(anthropicFlags(srv), web...), "--mcp-wait", "60s", "-p", "hi")...)
	if e, _ := (mcpTokenStore{path: tokens}).load(f.resource); code != 0 || !strings.Contains(stderr, "run `zot mcp login web`") || e.Token != nil || e.Client == nil {
		t.Errorf("after the refresh token died: exit %d, stderr %q, stored %+v", code, stderr, e)
	}

	// Client credentials: no user, no browser, nothing stored.
	writeFile(t, filepath.Join(z.cwd, "ci.json"), fmt.Sprintf(`{"mcpServers": {"ci": {"type": "http", "url": %q,
		"oauth": {"grant": "client_credentials", "clientId": "ci", "clientSecret": "${CI_SECRET}"}}}}`, f.resource), 0o644)
	z.env = []string{"CI_SECRET=ci-secret"}
	srv = startReplay(t, toolStep("t1", "mcp__ci__echo", obj{"message": "from ci"}), replayStep{Events: anthropicEvents(gen{Text: "ci done"})})
	stdout, stderr, code = z.run(append(anthropicFlags(srv), "--no-mcp", "--mcp-config", "ci.json", "--mcp-wait", "60s", "-p", "echo")...)
	if code != 0 || stdout != "ci done\n" || !strings.Contains(string(srv.Requests()[1].Body), "Echo: from ci") {
		t.Fatalf("client credentials: exit %d stdout %q stderr %s", code, stdout, stderr)
	}
	if grants, _ := f.counts(); grants[len(grants)-1] != "client_credentials" {
		t.Errorf("grants %q", grants)
	}
	d, _ := mcpTokenStore{path: tokens}.read()
	if len(d.Servers) != 1 {
		t.Errorf("the token file has %d servers: a client_credentials token was stored", len(d.Servers))
	}

	// No token anywhere but in the token file and at the resource server.
	f.mu.Lock()
	issued := make([]string, 0, len(f.access))
	for at := range f.access {
		issued = append(issued, at)
	}
	for _, h := range f.seen {
		if h != "" && !strings.HasPrefix(h, "Bearer at-") {
			t.Errorf("the resource server saw Authorization %q", h)
		}
	}
	f.mu.Unlock()
	filepath.Walk(z.home, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || path == tokens {
			return nil
		}
		b, _ := os.ReadFile(path)
		for _, at := range issued {
			if strings.Contains(string(b), at) {
				t.Errorf("%s holds an access token", path)
			}
		}
		return nil
	})

	// logout forgets it; the next -p says to log in again.
	stdout, _, code = z.run(append([]string{"mcp", "logout", "web"}, web...)...)
	if code != 0 || !strings.Contains(stdout, `server "web": forgot its token`) {
		t.Errorf("logout: %d %q", code, stdout)
	}
	if d, _ := (mcpTokenStore{path: tokens}).read(); len(d.Servers) != 0 {
		t.Errorf("after logout: %+v", d.Servers)
	}
}

// A token is sent only to the URL it was issued for: a server of the same
// name at another URL (a project's, say) does not get it.
func TestMCPOAuthTokenGoesOnlyToItsServer(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var auth []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusForbidden)
	}))
	t.Cleanup(other.Close)
	home := t.TempDir()
	mcpTokenStore{path: filepath.Join(home, mcpTokenFile)}.update("https://mcp.example.com/mcp", func(e *mcpStoredServer) error {
		e.Name, e.Token = "web", &mcpToken{AccessToken: "the-secret-token", TokenEndpoint: "https://as.example.com/token"}
		return nil
	})
	newMCPHarnessIn(t, home, map[string]string{"web": fmt.Sprintf(`{"url": %q}`, other.URL+"/mcp")}).settle()
	mu.Lock()
	defer mu.Unlock()
	if len(auth) == 0 {
		t.Fatal("the server was not asked")
	}
	for _, a := range auth {
		if a != "" {
			t.Errorf("the other server got Authorization %q", a)
		}
	}
}

// A hostile or broken authorization server costs a bounded read and a
// clear error, never a hang or memory: an endless metadata document, one
// that never answers, a token endpoint that redirects, a token that is
// not a bearer token.
func TestMCPOAuthHostileAuthorizationServer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, want string
		serve      func(w http.ResponseWriter, r *http.Request, as string) bool
	}{
		{"endless metadata", "the answer is larger than 262144 bytes", func(w http.ResponseWriter, r *http.Request, as string) bool {
			if r.URL.Path != "/.well-known/oauth-authorization-server" {
				return false
			}
			w.Write([]byte(`{"issuer": "`))
			chunk := strings.Repeat("x", 64<<10)
			for i := 0; i < 1000 && r.Context().Err() == nil; i++ {
				if _, err := io.WriteString(w, chunk); err != nil {
					break
				}
			}
			return true
		}},
		{"silent", "no answer to initialize within 1s", func(w http.ResponseWriter, r *http.Request, as string) bool {
			<-r.Context().Done()
			return true
		}},
		{"redirecting token endpoint", "answered with a redirect (HTTP 307), which zot does not follow with credentials", func(w http.ResponseWriter, r *http.Request, as string) bool {
			if r.URL.Path != "/token" {
				return false
			}
			http.Redirect(w, r, "https://elsewhere.example/token", http.StatusTemporaryRedirect)
			return true
		}},
		{"not a bearer token", `token_type "DPoP" is not Bearer`, func(w http.ResponseWriter, r *http.Request, as string) bool {
			if r.URL.Path != "/token" {
				return false
			}
			writeJSON(w, 200, obj{"access_token": "x", "token_type": "DPoP"})
			return true
		}},
		{"issuer mismatch", `states issuer "https://evil.example", not`, func(w http.ResponseWriter, r *http.Request, as string) bool {
			if r.URL.Path != "/.well-known/oauth-authorization-server" {
				return false
			}
			writeJSON(w, 200, obj{"issuer": "https://evil.example", "token_endpoint": as + "/token"})
			return true
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var as *httptest.Server
			as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.serve(w, r, as.URL) {
					return
				}
				switch r.URL.Path {
				case "/.well-known/oauth-authorization-server":
					writeJSON(w, 200, obj{"issuer": as.URL, "token_endpoint": as.URL + "/token"})
				case "/token":
					writeJSON(w, 200, obj{"access_token": "x", "token_type": "Bearer"})
				default:
					http.NotFound(w, r)
				}
			}))
			t.Cleanup(as.Close)
			var rs *httptest.Server
			rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
					writeJSON(w, 200, obj{"resource": rs.URL + "/mcp", "authorization_servers": []string{as.URL}})
					return
				}
				w.Header().Set("WWW-Authenticate", "Bearer")
				w.WriteHeader(401)
			}))
			t.Cleanup(rs.Close)
			// Only the silent server is waited for, a second; the others
			// answer, however loaded the machine.
			timeout := 60000
			if tt.name == "silent" {
				timeout = 1000
			}
			h := newMCPHarness(t, map[string]string{"web": fmt.Sprintf(`{"url": %q, "startup_timeout_ms": %d,
				"oauth": {"grant": "client_credentials", "clientId": "c", "clientSecret": "s"}}`, rs.URL+"/mcp", timeout)})
			st := h.settle()
			if st[0].State != MCPFailed || !strings.Contains(st[0].Error, tt.want) {
				t.Errorf("status = %+v, want an error with %q", st[0], tt.want)
			}
		})
	}
}

func TestMCPOAuthChallengeParsing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		headers []string
		want    map[string]string
		bearer  bool
	}{
		{[]string{`Bearer resource_metadata="https://x/.well-known/oauth-protected-resource", scope="files:read"`},
			map[string]string{"resource_metadata": "https://x/.well-known/oauth-protected-resource", "scope": "files:read"}, true},
		{[]string{`Bearer error="insufficient_scope", scope="a b c", error_description="say \"more\""`},
			map[string]string{"error": "insufficient_scope", "scope": "a b c", "error_description": `say "more"`}, true},
		{[]string{`Basic realm="x", Bearer scope=a`}, map[string]string{"scope": "a"}, true},
		{[]string{`Basic dXNlcjpwYXNz==, Bearer realm="r"`}, map[string]string{"realm": "r"}, true},
		{[]string{`Basic realm="x"`, `bearer Scope="s"`}, map[string]string{"scope": "s"}, true},
		{[]string{`Bearer`}, map[string]string{}, true},
		{[]string{`Basic realm="x"`}, map[string]string{}, false},
		{[]string{`Bearer scope="unterminated`}, map[string]string{"scope": "unterminated"}, true},
		{[]string{""}, map[string]string{}, false},
	}
	for _, tt := range tests {
		got, bearer := bearerChallenge(tt.headers)
		if bearer != tt.bearer || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q = %v %v, want %v %v", tt.headers, got, bearer, tt.want, tt.bearer)
		}
	}
	// Hostile headers end, bounded.
	bearerChallenge([]string{strings.Repeat("a=b, ", 1<<20)})
	bearerChallenge([]string{strings.Repeat(`Bearer x="`, 1<<16)})
}

func TestMCPOAuthResourceMustBeThisServer(t *testing.T) {
	t.Parallel()
	u, _ := url.Parse("https://MCP.example.com/team/mcp?key=secret")
	o := &mcpOAuth{serverURL: u, key: canonicalResource(u)}
	if o.key != "https://mcp.example.com/team/mcp" {
		t.Errorf("canonical = %q", o.key)
	}
	for resource, ok := range map[string]bool{
		"https://mcp.example.com/team/mcp":      true,
		"https://mcp.example.com/team/mcp/":     true,
		"https://mcp.example.com/team":          true,
		"https://mcp.example.com":               true,
		"https://mcp.example.com:443/":          true,
		"https://mcp.example.com/te":            false,
		"https://mcp.example.com/other/mcp":     false,
		"https://evil.example.com/team/mcp":     false,
		"http://mcp.example.com/team/mcp":       false,
		"https://mcp.example.com:8443/team/mcp": false,
		"https://mcp.example.com/team/mcp#x":    false,
		"":                                      false,
	} {
		if err := o.checkResource(resource); (err == nil) != ok {
			t.Errorf("%q: %v", resource, err)
		}
	}
	for raw, ok := range map[string]bool{"https://a.example/x": true, "http://127.0.0.1:9/x": true, "http://localhost/x": true, "http://[::1]:8/": true,
		"http://a.example/x": false, "ftp://a.example/": false, "/relative": false, "https://:#": false, "https://:443/token": false, "http://:8080/": false} {
		if err := secureEndpoint(raw); (err == nil) != ok {
			t.Errorf("secureEndpoint(%q) = %v", raw, err)
		}
	}
}

func TestMCPOAuthConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		entry, err string
		check      func(c mcpServerConfig) bool
	}{
		{`{"url": "https://x/mcp"}`, "", func(c mcpServerConfig) bool {
			return !c.OAuth.Off && !c.OAuth.Given && c.OAuth.Grant == grantAuthorizationCode
		}},
		{`{"url": "https://x/mcp", "oauth": false}`, "", func(c mcpServerConfig) bool { return c.OAuth.Off }},
		{`{"url": "https://x/mcp", "headers": {"authorization": "Bearer k"}}`, "", func(c mcpServerConfig) bool { return c.OAuth.Off }},
		{`{"url": "https://x/mcp", "oauth": {"clientId": "id", "clientSecret": "${ZOT_TEST_OAUTH_SECRET}", "callbackPort": 8765, "scopes": "a b"}}`, "",
			func(c mcpServerConfig) bool {
				return c.OAuth.ClientSecret == "s3cret" && c.OAuth.CallbackPort == 8765 && c.OAuth.Grant == grantAuthorizationCode && c.OAuth.Given
			}},
		{`{"url": "https://x/mcp", "oauth": {"callbackPort": 70000}}`, "oauth.callbackPort must be a port number", nil},
		{`{"url": "https://x/mcp", "oauth": {"grant": "password"}}`, `oauth.grant "password" is not`, nil},
		{`{"url": "https://x/mcp", "oauth": {"grant": "client_credentials"}}`, "needs oauth.clientId", nil},
		{`{"url": "https://x/mcp", "oauth": {"grant": "client_credentials", "clientId": "c"}}`, "needs oauth.clientSecret, oauth.privateKey", nil},
		{`{"url": "https://x/mcp", "oauth": {"grant": "jwt-bearer", "clientId": "c"}}`, "needs oauth.idp.tokenEndpoint and oauth.idp.idToken", nil},
		{`{"url": "https://x/mcp", "oauth": {"authServerMetadataUrl": "http://as.example/x"}}`, "oauth.authServerMetadataUrl: http://as.example/x is not https", nil},
		{`{"url": "https://x/mcp", "oauth": {"privateKeyFile": "key.pem"}}`, "must be an absolute path", nil},
		{`{"url": "https://x/mcp", "oauth": {"clientSecret": "${ZOT_TEST_UNSET_VAR}"}}`, "${ZOT_TEST_UNSET_VAR} is not set", nil},
		{`{"url": "https://x/mcp", "oauth": "yes"}`, `"oauth" must be an object or false`, nil},
		{`{"command": "x", "oauth": {}}`, `"oauth" is for http servers`, nil},
	}
	for _, tt := range tests {
		c, err := parseMCPEntry("s", json.RawMessage(tt.entry), map[string]string{"ZOT_TEST_OAUTH_SECRET": "s3cret"})
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: error %v, want %q", tt.entry, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.entry, err)
		case tt.check != nil && !tt.check(c):
			t.Errorf("%s: %+v", tt.entry, c.OAuth)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
}

// The token file is 0600, refused when others can read it, and two
// writers at once both land.
func TestMCPOAuthTokenFile(t *testing.T) {
	t.Parallel()
	s := mcpTokenStore{path: filepath.Join(t.TempDir(), "home", mcpTokenFile)}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.update(fmt.Sprintf("https://s%d.example/mcp", i), func(e *mcpStoredServer) error {
				e.Token = &mcpToken{AccessToken: fmt.Sprint(i)}
				return nil
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	d, err := s.read()
	if err != nil || len(d.Servers) != 8 {
		t.Fatalf("%d servers, %v", len(d.Servers), err)
	}
	if st, _ := os.Stat(s.path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	os.Chmod(s.path, 0o644)
	if _, err := s.load("https://s1.example/mcp"); err == nil || !strings.Contains(err.Error(), "is readable by other users (mode 0644); run: chmod 600") {
		t.Errorf("a readable token file: %v", err)
	}
}

func TestMCPOAuthClientAssertions(t *testing.T) {
	t.Parallel()
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	for _, k := range []struct {
		pem    []byte
		alg    string
		verify func(input, sig []byte) bool
	}{
		{pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}), "ES256", func(input, sig []byte) bool {
			h := sha256.Sum256(input)
			return len(sig) == 64 && ecdsa.Verify(&ec.PublicKey, h[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
		}},
		{pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)}), "RS256", func(input, sig []byte) bool {
			h := sha256.Sum256(input)
			return rsa.VerifyPKCS1v15(&rk.PublicKey, crypto.SHA256, h[:], sig) == nil
		}},
	} {
		s, err := newJWTSigner(k.pem, "")
		if err != nil || s.alg != k.alg {
			t.Fatalf("%s: %v %v", k.alg, s, err)
		}
		jwt, err := s.clientAssertion("client-1", "https://as.example")
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(jwt, ".")
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		var claims struct {
			Iss, Sub, Aud, Jti string
			Iat, Exp           int64
		}
		b, _ := base64.RawURLEncoding.DecodeString(parts[1])
		json.Unmarshal(b, &claims)
		if !k.verify([]byte(parts[0]+"."+parts[1]), sig) || claims.Iss != "client-1" || claims.Sub != "client-1" || claims.Aud != "https://as.example" || claims.Exp-claims.Iat != 300 || claims.Jti == "" {
			t.Errorf("%s: bad assertion %s", k.alg, b)
		}
	}
	if _, err := newJWTSigner(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}), "RS256"); err == nil {
		t.Error("an EC key signed RS256")
	}
	if _, err := newJWTSigner([]byte("not pem"), ""); err == nil {
		t.Error("garbage was a key")
	}
}
