package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// OAuth 2.1 for remote MCP servers, as the authorization part of the MCP
// specification (2025-11-25) asks of a client. An HTTP server that answers
// 401 is asked where its authorization server is (protected resource
// metadata, RFC 9728, or the 2025-03-26 fallbacks), that server for its
// endpoints (RFC 8414 or OpenID discovery), and then for a token: by
// authorization code with PKCE in the user's browser, by refresh token, by
// client credentials, or by an enterprise identity provider's assertion.
// The token goes on every request to that server and to no other host.
// This file is the client; mcp_oauth_login.go the browser and loopback
// part, mcp_oauth_store.go the token file.

// mcpOAuthConfig is a server entry's "oauth" object, ${VAR}s expanded.
// Secret fields never appear in messages or logs.
type mcpOAuthConfig struct {
	ClientID     string
	ClientSecret string // a secret
	CallbackPort int    // 0: any free port
	// Scopes, when set, is the scope asked for, whatever the server says.
	Scopes string
	// AuthServerMetadataURL skips discovery: the authorization server's
	// metadata is read from here.
	AuthServerMetadataURL string
	// ClientMetadataURL is the client's id, as a client ID metadata
	// document, where the authorization server accepts one.
	ClientMetadataURL string
	// Grant is how a token is had: "authorization_code" (a user in a
	// browser), "client_credentials" (the client alone) or "jwt-bearer"
	// (an assertion from an enterprise identity provider, IDP).
	Grant          string
	PrivateKey     string // PEM, for private_key_jwt; a secret
	PrivateKeyFile string // an absolute path to that PEM
	SigningAlg     string // ES256, ES384 or RS256; from the key when empty
	IDP            mcpIDPConfig
	// Off: the entry sends its own Authorization header, or says
	// "oauth": false. A 401 is then an error like any other.
	Off bool
	// Given: the entry has an "oauth" object. Without one, only a 401
	// with a Bearer challenge starts OAuth; another is the server's
	// error (a wrong key in the headers, say).
	Given bool
}

// mcpIDPConfig is where a jwt-bearer client exchanges the user's ID token
// for an assertion the MCP server's authorization server takes
// (Enterprise-Managed Authorization, SEP-990: RFC 8693 then RFC 7523).
type mcpIDPConfig struct {
	TokenEndpoint string
	ClientID      string
	ClientSecret  string // a secret
	IDToken       string // a secret
}

const (
	grantAuthorizationCode = "authorization_code"
	grantClientCredentials = "client_credentials"
	grantJWTBearer         = "jwt-bearer"
)

// mcpOAuthEntry is the "oauth" object as written. The names are Claude
// Code's where it has them (clientId, callbackPort, scopes,
// authServerMetadataUrl).
type mcpOAuthEntry struct {
	ClientID              string   `json:"clientId"`
	ClientSecret          string   `json:"clientSecret"`
	CallbackPort          *float64 `json:"callbackPort"`
	Scopes                string   `json:"scopes"`
	AuthServerMetadataURL string   `json:"authServerMetadataUrl"`
	ClientMetadataURL     string   `json:"clientMetadataUrl"`
	Grant                 string   `json:"grant"`
	PrivateKey            string   `json:"privateKey"`
	PrivateKeyFile        string   `json:"privateKeyFile"`
	SigningAlg            string   `json:"signingAlg"`
	IDP                   *struct {
		TokenEndpoint string `json:"tokenEndpoint"`
		ClientID      string `json:"clientId"`
		ClientSecret  string `json:"clientSecret"`
		IDToken       string `json:"idToken"`
	} `json:"idp"`
}

// parseMCPOAuth reads an entry's "oauth" value (absent, false, or an
// object); expand fills in ${VAR}s and records its own errors.
func parseMCPOAuth(raw json.RawMessage, headers map[string]string, expand func(field, v string) string) (mcpOAuthConfig, error) {
	c := mcpOAuthConfig{Grant: grantAuthorizationCode}
	for k := range headers {
		c.Off = c.Off || strings.EqualFold(k, "Authorization")
	}
	if len(raw) == 0 || string(raw) == "null" || string(raw) == "true" {
		return c, nil
	}
	if string(raw) == "false" {
		c.Off = true
		return c, nil
	}
	var e mcpOAuthEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return c, fmt.Errorf(`"oauth" must be an object or false: %v`, err)
	}
	c.Given = true
	c.ClientID, c.Scopes, c.SigningAlg = expand("oauth.clientId", e.ClientID), e.Scopes, e.SigningAlg
	c.ClientSecret = expand("oauth.clientSecret", e.ClientSecret)
	c.AuthServerMetadataURL = expand("oauth.authServerMetadataUrl", e.AuthServerMetadataURL)
	c.ClientMetadataURL = expand("oauth.clientMetadataUrl", e.ClientMetadataURL)
	c.PrivateKey = expand("oauth.privateKey", e.PrivateKey)
	c.PrivateKeyFile = expand("oauth.privateKeyFile", e.PrivateKeyFile)
	if e.IDP != nil {
		c.IDP = mcpIDPConfig{TokenEndpoint: expand("oauth.idp.tokenEndpoint", e.IDP.TokenEndpoint), ClientID: expand("oauth.idp.clientId", e.IDP.ClientID),
			ClientSecret: expand("oauth.idp.clientSecret", e.IDP.ClientSecret), IDToken: expand("oauth.idp.idToken", e.IDP.IDToken)}
	}
	if p := e.CallbackPort; p != nil {
		if *p < 1 || *p > 65535 || *p != float64(int(*p)) {
			return c, errors.New("oauth.callbackPort must be a port number from 1 to 65535")
		}
		c.CallbackPort = int(*p)
	}
	switch e.Grant {
	case "", grantAuthorizationCode:
	case grantClientCredentials, grantJWTBearer:
		c.Grant = e.Grant
	default:
		return c, fmt.Errorf("oauth.grant %q is not authorization_code, client_credentials or jwt-bearer", truncate(e.Grant, 40))
	}
	switch c.SigningAlg {
	case "", "ES256", "ES384", "RS256":
	default:
		return c, fmt.Errorf("oauth.signingAlg %q is not ES256, ES384 or RS256", truncate(c.SigningAlg, 20))
	}
	for _, u := range []struct{ name, v string }{{"authServerMetadataUrl", c.AuthServerMetadataURL}, {"clientMetadataUrl", c.ClientMetadataURL}, {"idp.tokenEndpoint", c.IDP.TokenEndpoint}} {
		if u.v == "" {
			continue
		}
		if err := secureEndpoint(u.v); err != nil {
			return c, fmt.Errorf("oauth.%s: %v", u.name, err)
		}
	}
	if c.PrivateKeyFile != "" && !filepath.IsAbs(c.PrivateKeyFile) {
		return c, errors.New("oauth.privateKeyFile must be an absolute path (${HOME}/… works)")
	}
	needsClient := c.Grant != grantAuthorizationCode
	switch {
	case needsClient && c.ClientID == "":
		return c, fmt.Errorf("oauth.grant %s needs oauth.clientId", c.Grant)
	case c.Grant == grantClientCredentials && c.ClientSecret == "" && c.PrivateKey == "" && c.PrivateKeyFile == "":
		return c, errors.New("oauth.grant client_credentials needs oauth.clientSecret, oauth.privateKey or oauth.privateKeyFile")
	case c.Grant == grantJWTBearer && (c.IDP.TokenEndpoint == "" || c.IDP.IDToken == ""):
		return c, errors.New("oauth.grant jwt-bearer needs oauth.idp.tokenEndpoint and oauth.idp.idToken")
	}
	return c, nil
}

// MCPLogin lets a user authorize zot in a browser while zot waits: the
// TUI and `zot mcp` have one. Without it (-p, --json, rpc, acp) a server
// that needs a user's login fails at once, naming `zot mcp login`.
type MCPLogin struct {
	// Show tells the user the URL to open; it is called before zot waits,
	// whether or not a browser could be started.
	Show func(server, url string)
}

// mcpOAuth is the OAuth client of one HTTP server, for the life of the
// manager: its transport asks it for each request's Authorization header
// and hands it the server's 401 and 403 answers (mcpAuthorizer).
//
// One authorization runs at a time (flow); mu guards the token.
type mcpOAuth struct {
	server    string   // the configured name, for messages
	serverURL *url.URL // expanded: its query may hold a secret, never shown
	key       string   // the canonical server URL: the token file's key
	cfg       mcpOAuthConfig
	source    string // the configuration file, for messages
	login     *MCPLogin
	store     mcpTokenStore
	log       *mcpLog
	http      *http.Client

	flow chan struct{} // held by the one authorization under way

	mu     sync.Mutex
	loaded bool      // the token file was read
	tok    *mcpToken // nil: none yet
	disc   *mcpDiscovery
}

// mcpToken is a token and what zot needs to use and renew it. It lives in
// memory and, for tokens a user authorized, in the token file.
type mcpToken struct {
	AccessToken   string    `json:"access_token"`
	RefreshToken  string    `json:"refresh_token,omitempty"`
	ExpiresAt     time.Time `json:"expires_at,omitzero"`
	Scope         string    `json:"scope,omitempty"`
	Resource      string    `json:"resource,omitempty"`
	Issuer        string    `json:"issuer,omitempty"`
	TokenEndpoint string    `json:"token_endpoint"`
	ClientID      string    `json:"client_id"`
	AuthMethod    string    `json:"auth_method"`
}

// mcpTokenSkew renews a token this long before it expires, so that it
// does not run out on the way.
const mcpTokenSkew = 30 * time.Second

func (t *mcpToken) expired(now time.Time) bool {
	return !t.ExpiresAt.IsZero() && now.Add(mcpTokenSkew).After(t.ExpiresAt)
}

// newMCPOAuth makes the OAuth client of an HTTP server, or nil when the
// entry turns OAuth off.
func newMCPOAuth(c mcpServerConfig, home string, login *MCPLogin, log *mcpLog) *mcpOAuth {
	if c.OAuth.Off {
		return nil
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return nil // parseMCPEntry checked it
	}
	return &mcpOAuth{server: c.Name, serverURL: u, key: canonicalResource(u), cfg: c.OAuth, source: c.Source, login: login,
		store: mcpTokenStore{path: filepath.Join(home, mcpTokenFile)}, log: log, http: oauthHTTPClient(), flow: make(chan struct{}, 1)}
}

// errMCPNeedsLogin says that a user must log in and nobody can here.
type errMCPNeedsLogin struct {
	server string
	scope  string // the scope a step-up needs, or ""
}

func (e *errMCPNeedsLogin) Error() string {
	if e.scope != "" {
		return fmt.Sprintf("this server needs a login with more scope: run `zot mcp login %s --scope '%s'` in a terminal", e.server, e.scope)
	}
	return fmt.Sprintf("this server needs you to log in: run `zot mcp login %s` in a terminal", e.server)
}

// authorization is the Authorization header for the next request: the
// token, renewed first when it is about to expire and can be; "" when
// there is none yet (the server's 401 starts the flow).
func (o *mcpOAuth) authorization(ctx context.Context) (string, error) {
	tok := o.current()
	if tok == nil {
		return "", nil
	}
	if tok.expired(time.Now()) {
		if tok.RefreshToken == "" {
			return "", nil
		}
		if err := o.acquire(ctx); err != nil {
			return "", err
		}
		if o.current() == tok {
			if err := o.refresh(ctx, tok); err != nil {
				o.log.printf("oauth: refresh failed: %v", err)
			}
		}
		o.release()
		if tok = o.current(); tok == nil || tok.expired(time.Now()) {
			return "", nil
		}
	}
	if err := secureEndpoint(o.serverURL.String()); err != nil {
		return "", fmt.Errorf("not sending the token: %v", err)
	}
	return "Bearer " + tok.AccessToken, nil
}

// current is the token in use, read from the token file the first time.
func (o *mcpOAuth) current() *mcpToken {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.loaded {
		o.loaded = true
		if o.cfg.Grant == grantAuthorizationCode {
			e, err := o.store.load(o.key)
			if err != nil {
				o.log.printf("oauth: %v", err)
			}
			o.tok = e.Token
		}
	}
	return o.tok
}

func (o *mcpOAuth) setToken(t *mcpToken) {
	o.mu.Lock()
	o.loaded, o.tok = true, t
	o.mu.Unlock()
}

// acquire and release bracket one authorization or refresh; waiting for
// another ends with ctx.
func (o *mcpOAuth) acquire(ctx context.Context) error {
	select {
	case o.flow <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (o *mcpOAuth) release() { <-o.flow }

// challenge answers the server's 401 or 403 to a request that carried
// sent (its Authorization header, or ""), the attempt'th answer to it:
// retry says that the request should go again with a new token. A 401 is
// met with a refresh first (attempt 0), then a new authorization; a 403
// with error insufficient_scope by asking for the scopes it names beside
// those held (step-up), unless the token has them all already.
func (o *mcpOAuth) challenge(ctx context.Context, resp *http.Response, sent string, attempt int) (retry bool, err error) {
	ch, bearer := bearerChallenge(resp.Header.Values("WWW-Authenticate"))
	if !bearer && !o.cfg.Given {
		return false, nil
	}
	if err := o.acquire(ctx); err != nil {
		return false, err
	}
	defer o.release()
	tok := o.current()
	if tok != nil && !tok.expired(time.Now()) && "Bearer "+tok.AccessToken != sent {
		return true, nil // renewed while this request was out
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		if tok != nil && tok.RefreshToken != "" && attempt == 0 {
			if err := o.refresh(ctx, tok); err == nil {
				return true, nil
			} else {
				o.log.printf("oauth: refresh failed, authorizing anew: %v", err)
			}
		}
		return true, o.obtain(ctx, ch["scope"], ch["resource_metadata"], false)
	case http.StatusForbidden:
		if ch["error"] != "insufficient_scope" || tok == nil {
			return false, nil
		}
		need, have := strings.Fields(ch["scope"]), strings.Fields(tok.Scope)
		missing := slices.DeleteFunc(slices.Clone(need), func(s string) bool { return slices.Contains(have, s) })
		if len(missing) == 0 {
			return false, fmt.Errorf("the server refuses the token for insufficient scope %q, which it holds already; zot does not ask again", truncate(ch["scope"], 200))
		}
		o.log.printf("oauth: the server asks for scope %q beyond the token's: authorizing again (step-up)", truncate(ch["scope"], 200))
		return true, o.obtain(ctx, strings.Join(append(have, missing...), " "), ch["resource_metadata"], true)
	}
	return false, nil
}

// obtain gets a new token by the configured grant. scope is what the
// server's challenge named; stepUp means it is the whole set wanted.
func (o *mcpOAuth) obtain(ctx context.Context, scope, metadataHint string, stepUp bool) error {
	if o.cfg.Grant == grantAuthorizationCode && o.login == nil {
		e := &errMCPNeedsLogin{server: o.server}
		if stepUp {
			e.scope = truncate(sanitize(scope), 200)
		}
		return e
	}
	tok, err := o.grant(ctx, scope, metadataHint, stepUp)
	if err != nil {
		o.log.printf("oauth: %v", err)
		return err
	}
	o.setToken(tok)
	if o.cfg.Grant == grantAuthorizationCode {
		return o.store.update(o.key, func(e *mcpStoredServer) error {
			e.Name, e.Token = o.server, tok
			return nil
		})
	}
	return nil
}

// grant runs discovery and the configured grant.
func (o *mcpOAuth) grant(ctx context.Context, scope, metadataHint string, stepUp bool) (*mcpToken, error) {
	d, err := o.discover(ctx, metadataHint)
	if err != nil {
		return nil, err
	}
	if !stepUp {
		scope = o.selectScope(d, scope)
	}
	var tok *mcpToken
	switch o.cfg.Grant {
	case grantClientCredentials:
		tok, err = o.clientCredentials(ctx, d, scope)
	case grantJWTBearer:
		tok, err = o.jwtBearer(ctx, d, scope)
	default:
		tok, err = o.authorizationCode(ctx, d, scope)
	}
	if err != nil {
		return nil, err
	}
	o.log.printf("oauth: authorized by %s (%s) for %s, scope %q%s", redactURL(d.meta.TokenEndpoint), o.cfg.Grant, tok.Resource, tok.Scope, tokenExpiry(tok))
	return tok, nil
}

func tokenExpiry(t *mcpToken) string {
	if t.ExpiresAt.IsZero() {
		return ""
	}
	return ", expires " + t.ExpiresAt.Local().Format(time.DateTime)
}

// selectScope is the MCP scope selection strategy: the configured scopes,
// else the challenge's, else all the resource lists, else none. A
// user's client also asks for offline_access (a refresh token) where the
// authorization server offers it.
func (o *mcpOAuth) selectScope(d *mcpDiscovery, challenged string) string {
	scope := o.cfg.Scopes
	if scope == "" {
		scope = challenged
	}
	if scope == "" {
		scope = strings.Join(d.scopes, " ")
	}
	if scope != "" && o.cfg.Grant == grantAuthorizationCode && slices.Contains(d.meta.ScopesSupported, "offline_access") && !slices.Contains(strings.Fields(scope), "offline_access") {
		scope += " offline_access"
	}
	return scope
}

// mcpDiscovery is what discovery found: the authorization server, and the
// resource as the server's metadata names it.
type mcpDiscovery struct {
	meta     mcpASMeta
	resource string   // the resource parameter; "" on the 2025-03-26 path
	scopes   []string // the resource's scopes_supported
}

// mcpASMeta is an authorization server's metadata (RFC 8414; OpenID
// discovery has the same names).
type mcpASMeta struct {
	Issuer                   string   `json:"issuer"`
	AuthorizationEndpoint    string   `json:"authorization_endpoint"`
	TokenEndpoint            string   `json:"token_endpoint"`
	RegistrationEndpoint     string   `json:"registration_endpoint"`
	ScopesSupported          []string `json:"scopes_supported"`
	CodeChallengeMethods     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethods []string `json:"token_endpoint_auth_methods_supported"`
	CIMDSupported            bool     `json:"client_id_metadata_document_supported"`
	// guessed: no metadata was found and the endpoints are the 2025-03-26
	// defaults at the server's origin.
	guessed bool
}

// mcpResourceMeta is protected resource metadata (RFC 9728).
type mcpResourceMeta struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// discover finds the authorization server: from the protected resource
// metadata (at hint, the challenge's resource_metadata, else the
// well-known URLs), else, as the 2025-03-26 revision had it, at the
// server's origin, else that revision's default endpoints there. The
// result is kept for the manager's life.
func (o *mcpOAuth) discover(ctx context.Context, hint string) (*mcpDiscovery, error) {
	o.mu.Lock()
	d := o.disc
	o.mu.Unlock()
	if d != nil {
		return d, nil
	}
	d = &mcpDiscovery{}
	rm, err := o.resourceMetadata(ctx, hint)
	if err != nil {
		return nil, err
	}
	var as string
	if rm != nil {
		d.resource, d.scopes = rm.Resource, rm.ScopesSupported
		for _, a := range rm.AuthorizationServers {
			if secureEndpoint(a) == nil {
				as = a
				break
			}
		}
		if as == "" {
			return nil, fmt.Errorf("the server's resource metadata names no authorization server zot may use (https, or http on a loopback address): %s", truncate(strings.Join(rm.AuthorizationServers, ", "), 300))
		}
	}
	switch {
	case o.cfg.AuthServerMetadataURL != "":
		d.meta, err = o.fetchASMeta(ctx, o.cfg.AuthServerMetadataURL, "")
	case as != "":
		d.meta, err = o.asMetadata(ctx, as)
	default:
		d.meta, err = o.legacyASMeta(ctx)
	}
	if err != nil {
		return nil, err
	}
	for _, e := range []string{d.meta.AuthorizationEndpoint, d.meta.TokenEndpoint, d.meta.RegistrationEndpoint} {
		if e == "" {
			continue
		}
		if err := secureEndpoint(e); err != nil {
			return nil, fmt.Errorf("authorization server %s: %v", redactURL(d.meta.Issuer), err)
		}
	}
	if d.meta.TokenEndpoint == "" {
		return nil, fmt.Errorf("authorization server %s names no token_endpoint", redactURL(d.meta.Issuer))
	}
	o.mu.Lock()
	o.disc = d
	o.mu.Unlock()
	return d, nil
}

// resourceMetadata reads the protected resource metadata: nil, nil when
// there is none (a 2025-03-26 server). Its resource must be this server.
func (o *mcpOAuth) resourceMetadata(ctx context.Context, hint string) (*mcpResourceMeta, error) {
	var tries []string
	if hint != "" {
		tries = append(tries, hint)
	}
	origin := &url.URL{Scheme: o.serverURL.Scheme, Host: o.serverURL.Host}
	if p := strings.TrimSuffix(o.serverURL.EscapedPath(), "/"); p != "" {
		tries = append(tries, origin.String()+"/.well-known/oauth-protected-resource"+p)
	}
	tries = append(tries, origin.String()+"/.well-known/oauth-protected-resource")
	for _, u := range tries {
		var rm mcpResourceMeta
		found, err := o.getJSON(ctx, u, &rm)
		if err != nil {
			o.log.printf("oauth: resource metadata at %s: %v", redactURL(u), err)
			continue
		}
		if !found {
			continue
		}
		if err := o.checkResource(rm.Resource); err != nil {
			return nil, fmt.Errorf("resource metadata at %s: %v", redactURL(u), err)
		}
		if len(rm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("resource metadata at %s names no authorization_servers", redactURL(u))
		}
		return &rm, nil
	}
	o.log.printf("oauth: no protected resource metadata: trying the 2025-03-26 discovery at %s", redactURL(origin.String()))
	return nil, nil
}

// checkResource holds the metadata's resource to this server: the same
// origin, and a path that this server's URL is in. A server cannot point
// zot at another resource's tokens this way.
func (o *mcpOAuth) checkResource(resource string) error {
	if resource == "" {
		return errors.New(`no "resource"`)
	}
	r, err := url.Parse(resource)
	if err != nil || r.Fragment != "" || r.Host == "" {
		return fmt.Errorf("resource %q is not an absolute URL without a fragment", truncate(resource, 200))
	}
	rp, sp := strings.TrimSuffix(r.EscapedPath(), "/"), strings.TrimSuffix(o.serverURL.EscapedPath(), "/")
	if !strings.EqualFold(r.Scheme, o.serverURL.Scheme) || !strings.EqualFold(hostPort(r), hostPort(o.serverURL)) ||
		!(sp == rp || strings.HasPrefix(sp, rp+"/")) {
		return fmt.Errorf("it is for resource %s, not this server (%s): zot will not authorize for it", truncate(redactURL(resource), 200), o.key)
	}
	return nil
}

// asMetadata reads an authorization server's metadata at the well-known
// URLs, in the order the MCP specification gives; the issuer it states
// must be the one asked for (RFC 8414 3.3).
func (o *mcpOAuth) asMetadata(ctx context.Context, issuer string) (mcpASMeta, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return mcpASMeta{}, fmt.Errorf("authorization server %q is not a URL", truncate(issuer, 200))
	}
	origin := u.Scheme + "://" + u.Host
	var tries []string
	if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
		tries = []string{origin + "/.well-known/oauth-authorization-server" + p, origin + "/.well-known/openid-configuration" + p, origin + p + "/.well-known/openid-configuration"}
	} else {
		tries = []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}
	}
	for _, t := range tries {
		m, err := o.fetchASMeta(ctx, t, issuer)
		if errors.Is(err, errNotFound) {
			continue
		}
		return m, err
	}
	return mcpASMeta{}, fmt.Errorf("authorization server %s: no metadata at %s", redactURL(issuer), strings.Join(tries, ", "))
}

// legacyASMeta is the 2025-03-26 discovery: metadata at the server's
// origin, else the default endpoints there.
func (o *mcpOAuth) legacyASMeta(ctx context.Context) (mcpASMeta, error) {
	origin := o.serverURL.Scheme + "://" + o.serverURL.Host
	m, err := o.fetchASMeta(ctx, origin+"/.well-known/oauth-authorization-server", "")
	if !errors.Is(err, errNotFound) {
		return m, err
	}
	return mcpASMeta{Issuer: origin, AuthorizationEndpoint: origin + "/authorize", TokenEndpoint: origin + "/token", RegistrationEndpoint: origin + "/register", guessed: true}, nil
}

var errNotFound = errors.New("not found")

// fetchASMeta reads one metadata document; issuer, when given, is the one
// it must state. errNotFound: the server has none there.
func (o *mcpOAuth) fetchASMeta(ctx context.Context, u, issuer string) (mcpASMeta, error) {
	var m mcpASMeta
	found, err := o.getJSON(ctx, u, &m)
	switch {
	case err != nil:
		return m, fmt.Errorf("authorization server metadata at %s: %v", redactURL(u), err)
	case !found:
		return m, errNotFound
	case issuer != "" && strings.TrimSuffix(m.Issuer, "/") != strings.TrimSuffix(issuer, "/"):
		return m, fmt.Errorf("authorization server metadata at %s states issuer %q, not %q: not used", redactURL(u), truncate(m.Issuer, 200), truncate(issuer, 200))
	}
	if m.Issuer == "" {
		m.Issuer = issuer
	}
	return m, nil
}

// getJSON reads a JSON document: found is false for a 404 or 410 (and
// any 4xx but 429, as other clients do: the next place is tried), err
// says what else went wrong. A document is at most mcpMaxOAuthBody bytes.
func (o *mcpOAuth) getJSON(ctx context.Context, u string, v any) (found bool, err error) {
	if err := secureEndpoint(u); err != nil {
		return false, err
	}
	rctx, cancel := context.WithTimeout(ctx, mcpOAuthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := o.http.Do(req)
	if err != nil {
		return false, oauthNetError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests {
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	body, err := readUntrustedBody(resp.Body, mcpMaxOAuthBody)
	if err != nil {
		return false, err
	}
	if err := decodeStrictJSON(body, v); err != nil {
		return false, fmt.Errorf("not a metadata document: %v", err)
	}
	return true, nil
}

const (
	// mcpOAuthTimeout bounds one request to an authorization server or
	// for metadata: a server that never answers costs this, not a hang.
	mcpOAuthTimeout = 30 * time.Second
	// mcpMaxOAuthBody bounds a metadata document or token response.
	mcpMaxOAuthBody = 256 << 10
)

// oauthHTTPClient is the client for metadata and the authorization
// server: a GET may follow up to five redirects to https (or loopback)
// URLs; a POST, which carries a secret, follows none.
func oauthHTTPClient() *http.Client {
	// A connection for each request: they are few, and none is left
	// open to go stale while the user is in the browser.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	return &http.Client{Timeout: mcpOAuthTimeout, Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if via[0].Method != http.MethodGet {
			return http.ErrUseLastResponse
		}
		if len(via) > 5 {
			return errors.New("more than 5 redirects")
		}
		return secureEndpoint(req.URL.String())
	}}
}

func hostPort(u *url.URL) string {
	return net.JoinHostPort(strings.ToLower(u.Hostname()), effectivePort(u))
}

// oauthNetError is a request's error without the URL that net/http puts
// in front of it: the caller names the endpoint, without its query.
func oauthNetError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// secureEndpoint accepts https URLs, and http ones on a loopback address:
// tokens, codes and secrets travel nowhere else (OAuth 2.1 1.5).
func secureEndpoint(raw string) error {
	u, err := url.Parse(raw)
	// A host of only a port (https://:443) would dial this machine.
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("%q is not an absolute URL with a host", truncate(raw, 200))
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%s is not https (plain http only to a loopback address)", redactURL(raw))
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// canonicalResource is a server's URL as the MCP specification's
// canonical URI: lower-case scheme and host, no query, fragment or
// trailing slash.
func canonicalResource(u *url.URL) string {
	c := url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: u.Path, RawPath: u.RawPath}
	return strings.TrimSuffix(c.String(), "/")
}

// bearerChallenge reads the parameters of the Bearer challenge in
// WWW-Authenticate headers (RFC 9110 11.6.1; RFC 6750 3): names lower
// case, values unquoted; ok says there is one. Other schemes' challenges
// are skipped. A header is read up to 8 KB.
func bearerChallenge(headers []string) (params map[string]string, ok bool) {
	for _, h := range headers {
		for _, c := range parseChallenges(utf8Prefix(h, 8<<10)) {
			if strings.EqualFold(c.scheme, "Bearer") {
				return c.params, true
			}
		}
	}
	return map[string]string{}, false
}

type authChallenge struct {
	scheme string
	params map[string]string
}

// parseChallenges splits a WWW-Authenticate value into its challenges:
// a scheme, then name=value parameters. A token68 (Basic's credentials
// form) is skipped, its padding too.
func parseChallenges(s string) []authChallenge {
	var out []authChallenge
	for n := 0; n < 64; n++ {
		s = strings.TrimLeft(s, " \t,")
		tok, rest := httpToken(s)
		if tok == "" {
			break
		}
		r := strings.TrimLeft(rest, " \t")
		switch {
		case len(out) > 0 && strings.HasPrefix(r, "=") && !strings.HasPrefix(r, "=="):
			v := strings.TrimLeft(r[1:], " \t")
			var val string
			if strings.HasPrefix(v, `"`) {
				val, v = quotedString(v)
			} else {
				val, v = httpToken(v)
			}
			out[len(out)-1].params[strings.ToLower(tok)] = val
			s = v
		case strings.HasPrefix(r, "="):
			s = strings.TrimLeft(r, "=")
		default:
			out = append(out, authChallenge{scheme: tok, params: map[string]string{}})
			s = rest
		}
	}
	return out
}

// httpToken splits off an RFC 9110 token, or a token68 up to its
// padding.
func httpToken(s string) (tok, rest string) {
	i := 0
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~/", s[i]) >= 0) {
		i++
	}
	return s[:i], s[i:]
}

// quotedString splits off a quoted-string (s starts with its quote),
// unescaped; an unterminated one runs to the end.
func quotedString(s string) (val, rest string) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '"':
			return b.String(), s[i+1:]
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), ""
}

// mcpClient is who zot is at an authorization server.
type mcpClient struct {
	ID, Secret string
	AuthMethod string // client_secret_basic, client_secret_post, private_key_jwt or none
	signer     *jwtSigner
}

// tokenEndpointAuth chooses how to authenticate at the token endpoint:
// with a key, private_key_jwt; with a secret, Basic where the server
// takes it (RFC 8414's default), else the form; else none.
func tokenEndpointAuth(supported []string, secret bool, key bool) string {
	switch {
	case key:
		return "private_key_jwt"
	case !secret:
		return "none"
	case len(supported) == 0 || slices.Contains(supported, "client_secret_basic"):
		return "client_secret_basic"
	case slices.Contains(supported, "client_secret_post"):
		return "client_secret_post"
	}
	return "client_secret_basic"
}

// configuredClient is the client of the configuration (clientId, with a
// secret or key), or ok false when there is none.
func (o *mcpOAuth) configuredClient(meta mcpASMeta) (c mcpClient, ok bool, err error) {
	if o.cfg.ClientID == "" {
		return c, false, nil
	}
	c = mcpClient{ID: o.cfg.ClientID, Secret: o.cfg.ClientSecret}
	if o.cfg.PrivateKey != "" || o.cfg.PrivateKeyFile != "" {
		if c.signer, err = o.signer(); err != nil {
			return c, false, err
		}
	}
	c.AuthMethod = tokenEndpointAuth(meta.TokenEndpointAuthMethods, c.Secret != "", c.signer != nil)
	return c, true, nil
}

func (o *mcpOAuth) signer() (*jwtSigner, error) {
	pem := o.cfg.PrivateKey
	if pem == "" {
		b, err := readUntrustedFile(o.cfg.PrivateKeyFile, 64<<10)
		if err != nil {
			return nil, fmt.Errorf("oauth.privateKeyFile: %v", err)
		}
		pem = string(b)
	}
	s, err := newJWTSigner([]byte(pem), o.cfg.SigningAlg)
	if err != nil {
		return nil, fmt.Errorf("oauth.privateKey: %v", err)
	}
	return s, nil
}

// clientCredentials asks for a token for the client itself (RFC 6749
// 4.4): no user, no browser. It is kept in memory only.
func (o *mcpOAuth) clientCredentials(ctx context.Context, d *mcpDiscovery, scope string) (*mcpToken, error) {
	c, _, err := o.configuredClient(d.meta)
	if err != nil {
		return nil, err
	}
	form := url.Values{"grant_type": {"client_credentials"}}
	return o.tokenRequest(ctx, d, c, form, scope)
}

// jwtBearer is Enterprise-Managed Authorization (SEP-990): the user's ID
// token goes to their identity provider for an identity assertion
// (ID-JAG, RFC 8693 token exchange), which the MCP server's authorization
// server takes as a grant (RFC 7523).
func (o *mcpOAuth) jwtBearer(ctx context.Context, d *mcpDiscovery, scope string) (*mcpToken, error) {
	c, _, err := o.configuredClient(d.meta)
	if err != nil {
		return nil, err
	}
	idp := o.cfg.IDP
	form := url.Values{
		"grant_type":           {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:id-jag"},
		"audience":             {d.meta.Issuer},
		"subject_token":        {idp.IDToken},
		"subject_token_type":   {"urn:ietf:params:oauth:token-type:id_token"},
	}
	if d.resource != "" {
		form.Set("resource", d.resource)
	}
	if scope != "" {
		form.Set("scope", scope)
	}
	idpClient := mcpClient{ID: idp.ClientID, Secret: idp.ClientSecret, AuthMethod: tokenEndpointAuth(nil, idp.ClientSecret != "", false)}
	tr, err := o.post(ctx, idp.TokenEndpoint, idpClient, form, "")
	if err != nil {
		return nil, fmt.Errorf("identity provider: %w", err)
	}
	if tr.AccessToken == "" {
		return nil, fmt.Errorf("identity provider %s: the token exchange gave no assertion", redactURL(idp.TokenEndpoint))
	}
	grant := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {tr.AccessToken}}
	return o.tokenRequest(ctx, d, c, grant, scope)
}

// tokenRequest posts form, with the resource and scope, to the token
// endpoint as client c and makes a token of the answer.
func (o *mcpOAuth) tokenRequest(ctx context.Context, d *mcpDiscovery, c mcpClient, form url.Values, scope string) (*mcpToken, error) {
	if d.resource != "" {
		form.Set("resource", d.resource)
	}
	if scope != "" {
		form.Set("scope", scope)
	}
	tr, err := o.post(ctx, d.meta.TokenEndpoint, c, form, d.meta.Issuer)
	if err != nil {
		return nil, err
	}
	return tr.token(d, c, scope)
}

// refresh renews tok with its refresh token (RFC 6749 6). Another zot may
// have renewed it first, rotating the refresh token: the token file is
// read, and written, under its lock.
func (o *mcpOAuth) refresh(ctx context.Context, tok *mcpToken) error {
	var fresh *mcpToken
	var dead error
	do := func(e *mcpStoredServer) error {
		if e != nil && e.Token != nil && e.Token.AccessToken != tok.AccessToken && !e.Token.expired(time.Now()) {
			fresh = e.Token
			return nil
		}
		c := mcpClient{ID: tok.ClientID, AuthMethod: tok.AuthMethod}
		switch {
		case tok.ClientID == o.cfg.ClientID:
			c.Secret = o.cfg.ClientSecret
			if tok.AuthMethod == "private_key_jwt" {
				s, err := o.signer()
				if err != nil {
					return err
				}
				c.signer = s
			}
		case e != nil && e.Client != nil && e.Client.ID == tok.ClientID:
			c.Secret = e.Client.Secret
		}
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}
		if tok.Resource != "" {
			form.Set("resource", tok.Resource)
		}
		tr, err := o.post(ctx, tok.TokenEndpoint, c, form, tok.Issuer)
		var refusal *oauthRefusal
		if errors.As(err, &refusal) && refusal.code == "invalid_grant" && e != nil && e.Token != nil && e.Token.AccessToken == tok.AccessToken {
			// Dead for good: forgotten, so that no run tries it again.
			e.Token, dead = nil, err
			return nil
		}
		if err != nil {
			return err
		}
		d := &mcpDiscovery{meta: mcpASMeta{Issuer: tok.Issuer, TokenEndpoint: tok.TokenEndpoint}, resource: tok.Resource}
		if fresh, err = tr.token(d, c, tok.Scope); err != nil {
			return err
		}
		if fresh.RefreshToken == "" {
			fresh.RefreshToken = tok.RefreshToken
		}
		if e != nil {
			e.Token = fresh
		}
		return nil
	}
	var err error
	if o.cfg.Grant == grantAuthorizationCode {
		err = o.store.update(o.key, func(e *mcpStoredServer) error { return do(e) })
	} else {
		err = do(nil)
	}
	if err == nil {
		err = dead
	}
	if err != nil {
		o.mu.Lock()
		if o.tok == tok {
			o.tok = nil
		}
		o.mu.Unlock()
		return err
	}
	o.log.printf("oauth: token refreshed%s", tokenExpiry(fresh))
	o.setToken(fresh)
	return nil
}

// oauthRefusal is an authorization server's error answer (RFC 6749 5.2).
type oauthRefusal struct {
	endpoint, code, desc string
	status               int
}

func (e *oauthRefusal) Error() string {
	msg := e.code
	if e.desc != "" {
		msg += ": " + e.desc
	}
	return fmt.Sprintf("%s refused: %s (HTTP %d)", e.endpoint, truncate(sanitize(msg), 300), e.status)
}

// mcpTokenResponse is a token endpoint's answer (RFC 6749 5.1, 5.2).
type mcpTokenResponse struct {
	AccessToken      string          `json:"access_token"`
	TokenType        string          `json:"token_type"`
	ExpiresIn        json.RawMessage `json:"expires_in"`
	RefreshToken     string          `json:"refresh_token"`
	Scope            string          `json:"scope"`
	Error            string          `json:"error"`
	ErrorDescription string          `json:"error_description"`
}

// token makes the token of a successful answer; scope is what was asked,
// which the answer's own scope replaces when it has one.
func (tr mcpTokenResponse) token(d *mcpDiscovery, c mcpClient, scope string) (*mcpToken, error) {
	if tr.AccessToken == "" {
		return nil, fmt.Errorf("token endpoint %s: the answer has no access_token", redactURL(d.meta.TokenEndpoint))
	}
	if !strings.EqualFold(tr.TokenType, "bearer") {
		return nil, fmt.Errorf("token endpoint %s: token_type %q is not Bearer, the only kind zot sends", redactURL(d.meta.TokenEndpoint), truncate(tr.TokenType, 40))
	}
	t := &mcpToken{AccessToken: tr.AccessToken, RefreshToken: tr.RefreshToken, Scope: scope, Resource: d.resource, Issuer: d.meta.Issuer,
		TokenEndpoint: d.meta.TokenEndpoint, ClientID: c.ID, AuthMethod: c.AuthMethod}
	if tr.Scope != "" {
		t.Scope = tr.Scope
	}
	if len(tr.ExpiresIn) > 0 && string(tr.ExpiresIn) != "null" {
		s := strings.Trim(string(tr.ExpiresIn), `"`)
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || !(n >= 0 && n <= 10*365*24*3600) { // NaN is neither
			return nil, fmt.Errorf("token endpoint %s: expires_in %q is not a number of seconds", redactURL(d.meta.TokenEndpoint), truncate(s, 40))
		}
		t.ExpiresAt = time.Now().Add(time.Duration(n) * time.Second).Truncate(time.Second)
	}
	return t, nil
}

// post sends form to an authorization server's endpoint as client c and
// reads the JSON answer; audience is who a client assertion is for (the
// issuer). It follows no redirect: the form carries a secret.
func (o *mcpOAuth) post(ctx context.Context, endpoint string, c mcpClient, form url.Values, audience string) (mcpTokenResponse, error) {
	var tr mcpTokenResponse
	if err := secureEndpoint(endpoint); err != nil {
		return tr, err
	}
	var basic bool
	switch c.AuthMethod {
	case "client_secret_basic":
		basic = true
	case "client_secret_post":
		form.Set("client_id", c.ID)
		form.Set("client_secret", c.Secret)
	case "private_key_jwt":
		if audience == "" {
			audience = endpoint
		}
		a, err := c.signer.clientAssertion(c.ID, audience)
		if err != nil {
			return tr, err
		}
		form.Set("client_id", c.ID)
		form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		form.Set("client_assertion", a)
	default:
		if c.ID != "" {
			form.Set("client_id", c.ID)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, mcpOAuthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return tr, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		// RFC 6749 2.3.1: each part form-encoded first.
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(c.ID)+":"+url.QueryEscape(c.Secret))))
	}
	resp, err := o.http.Do(req)
	if err != nil {
		return tr, fmt.Errorf("%s: %v", redactURL(endpoint), oauthNetError(err))
	}
	defer resp.Body.Close()
	body, err := readUntrustedBody(resp.Body, mcpMaxOAuthBody)
	if err != nil {
		return tr, fmt.Errorf("%s: %v", redactURL(endpoint), err)
	}
	derr := decodeStrictJSON(body, &tr)
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return tr, fmt.Errorf("%s answered with a redirect (HTTP %d), which zot does not follow with credentials", redactURL(endpoint), resp.StatusCode)
	case tr.Error != "":
		return tr, &oauthRefusal{endpoint: redactURL(endpoint), code: tr.Error, desc: tr.ErrorDescription, status: resp.StatusCode}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return tr, fmt.Errorf("%s: HTTP %d", redactURL(endpoint), resp.StatusCode)
	case derr != nil:
		return tr, fmt.Errorf("%s: the answer is not a token response: %v", redactURL(endpoint), derr)
	}
	return tr, nil
}

// register is dynamic client registration (RFC 7591) of zot as a public
// client with a loopback redirect, or a confidential one where the server
// takes no public clients.
func (o *mcpOAuth) register(ctx context.Context, meta mcpASMeta, redirectURI string) (mcpClient, error) {
	method := "none"
	if len(meta.TokenEndpointAuthMethods) > 0 && !slices.Contains(meta.TokenEndpointAuthMethods, "none") {
		method = tokenEndpointAuth(meta.TokenEndpointAuthMethods, true, false)
	}
	body, _ := json.Marshal(map[string]any{
		"client_name":                "zot",
		"redirect_uris":              []string{redirectURI},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
	})
	rctx, cancel := context.WithTimeout(ctx, mcpOAuthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, meta.RegistrationEndpoint, strings.NewReader(string(body)))
	if err != nil {
		return mcpClient{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := o.http.Do(req)
	if err != nil {
		return mcpClient{}, fmt.Errorf("client registration at %s: %v", redactURL(meta.RegistrationEndpoint), oauthNetError(err))
	}
	defer resp.Body.Close()
	data, err := readUntrustedBody(resp.Body, mcpMaxOAuthBody)
	if err != nil {
		return mcpClient{}, fmt.Errorf("client registration at %s: %v", redactURL(meta.RegistrationEndpoint), err)
	}
	var r struct {
		ClientID         string `json:"client_id"`
		ClientSecret     string `json:"client_secret"`
		AuthMethod       string `json:"token_endpoint_auth_method"`
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	derr := decodeStrictJSON(data, &r)
	if resp.StatusCode < 200 || resp.StatusCode > 299 || r.ClientID == "" {
		why := fmt.Sprintf("HTTP %d", resp.StatusCode)
		if r.Error != "" {
			why = truncate(sanitize(r.Error+" "+r.ErrorDescription), 300)
		} else if derr != nil {
			why += ": " + derr.Error()
		}
		return mcpClient{}, fmt.Errorf("client registration at %s failed: %s; set oauth.clientId for server %s in %s", redactURL(meta.RegistrationEndpoint), why, o.server, o.source)
	}
	c := mcpClient{ID: r.ClientID, Secret: r.ClientSecret, AuthMethod: r.AuthMethod}
	if c.AuthMethod == "" {
		c.AuthMethod = tokenEndpointAuth(meta.TokenEndpointAuthMethods, c.Secret != "", false)
	}
	o.log.printf("oauth: registered as client %s at %s", truncate(c.ID, 80), redactURL(meta.RegistrationEndpoint))
	return c, nil
}

// logout forgets the server's token and registration. It does not revoke
// the token at the authorization server.
func (o *mcpOAuth) logout() (had bool, err error) {
	o.setToken(nil)
	err = o.store.update(o.key, func(e *mcpStoredServer) error {
		had = e.Token != nil || e.Client != nil
		e.Token, e.Client = nil, nil
		return nil
	})
	return had, err
}
