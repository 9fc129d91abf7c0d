package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The authorization code flow with PKCE (OAuth 2.1 4.1): the user approves
// zot in a browser, and the authorization server sends the browser back to
// a listener zot opened on 127.0.0.1 (RFC 8252) with the code.

// authorizationCode runs the flow: a client id (the configured one, a
// client ID metadata document, the stored registration or a new one), the
// browser, the code, the token.
func (o *mcpOAuth) authorizationCode(ctx context.Context, d *mcpDiscovery, scope string) (*mcpToken, error) {
	meta := d.meta
	if !meta.guessed && !slices.Contains(meta.CodeChallengeMethods, "S256") {
		return nil, fmt.Errorf("authorization server %s does not list PKCE with S256 in code_challenge_methods_supported: zot does not authorize without it", redactURL(meta.Issuer))
	}
	if meta.AuthorizationEndpoint == "" {
		return nil, fmt.Errorf("authorization server %s names no authorization_endpoint", redactURL(meta.Issuer))
	}
	l, c, err := o.callbackAndClient(ctx, meta)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	redirectURI := callbackURI(l)
	verifier := randomToken()
	sum := sha256.Sum256([]byte(verifier))
	state := randomToken()
	au, err := url.Parse(meta.AuthorizationEndpoint)
	if err != nil {
		return nil, fmt.Errorf("authorization_endpoint %q is not a URL", truncate(meta.AuthorizationEndpoint, 200))
	}
	q := au.Query()
	q.Set("response_type", "code")
	q.Set("client_id", c.ID)
	q.Set("redirect_uri", redirectURI)
	q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
	q.Set("code_challenge_method", "S256")
	q.Set("state", state)
	if scope != "" {
		q.Set("scope", scope)
	}
	if d.resource != "" {
		q.Set("resource", d.resource)
	}
	au.RawQuery = q.Encode()
	code, err := o.browserCode(ctx, l, au.String(), state, meta.Issuer)
	if err != nil {
		return nil, err
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}, "code_verifier": {verifier}}
	return o.tokenRequest(ctx, d, c, form, scope)
}

// callbackAndClient opens the loopback listener and finds the client id
// to go with its redirect URI. A dynamic registration is kept and reused
// while its port is free; the configured callbackPort is always used.
func (o *mcpOAuth) callbackAndClient(ctx context.Context, meta mcpASMeta) (net.Listener, mcpClient, error) {
	c, ok, err := o.configuredClient(meta)
	if err != nil {
		return nil, c, err
	}
	if !ok && meta.CIMDSupported && o.cfg.ClientMetadataURL != "" {
		c, ok = mcpClient{ID: o.cfg.ClientMetadataURL, AuthMethod: "none"}, true
	}
	if ok || o.cfg.CallbackPort != 0 {
		l, err := listenCallback(o.cfg.CallbackPort)
		if err != nil {
			return nil, c, err
		}
		if !ok {
			if c, err = o.storedOrNewClient(ctx, meta, l); err != nil {
				l.Close()
				return nil, c, err
			}
		}
		return l, c, nil
	}
	if meta.RegistrationEndpoint == "" {
		return nil, c, fmt.Errorf("authorization server %s offers no client registration: set oauth.clientId (and clientSecret) for server %s in %s", redactURL(meta.Issuer), o.server, o.source)
	}
	// A stored registration's port first; when it is taken, any port and
	// a new registration.
	e, err := o.store.load(o.key)
	if err != nil {
		o.log.printf("oauth: %v", err)
	}
	if sc := e.Client; sc != nil && sc.Issuer == meta.Issuer {
		if u, err := url.Parse(sc.RedirectURI); err == nil {
			if port, _ := strconv.Atoi(u.Port()); port > 0 {
				if l, err := listenCallback(port); err == nil {
					return l, mcpClient{ID: sc.ID, Secret: sc.Secret, AuthMethod: sc.AuthMethod}, nil
				}
			}
		}
	}
	l, err := listenCallback(0)
	if err != nil {
		return nil, c, err
	}
	if c, err = o.storedOrNewClient(ctx, meta, l); err != nil {
		l.Close()
		return nil, c, err
	}
	return l, c, nil
}

// storedOrNewClient is the stored registration for l's redirect URI, or a
// new one, stored.
func (o *mcpOAuth) storedOrNewClient(ctx context.Context, meta mcpASMeta, l net.Listener) (mcpClient, error) {
	redirectURI := callbackURI(l)
	e, _ := o.store.load(o.key)
	if sc := e.Client; sc != nil && sc.Issuer == meta.Issuer && sc.RedirectURI == redirectURI {
		return mcpClient{ID: sc.ID, Secret: sc.Secret, AuthMethod: sc.AuthMethod}, nil
	}
	if meta.RegistrationEndpoint == "" {
		return mcpClient{}, fmt.Errorf("authorization server %s offers no client registration: set oauth.clientId (and clientSecret) for server %s in %s", redactURL(meta.Issuer), o.server, o.source)
	}
	c, err := o.register(ctx, meta, redirectURI)
	if err != nil {
		return c, err
	}
	err = o.store.update(o.key, func(e *mcpStoredServer) error {
		e.Name = o.server
		e.Client = &mcpStoredClient{Issuer: meta.Issuer, ID: c.ID, Secret: c.Secret, AuthMethod: c.AuthMethod, RedirectURI: redirectURI}
		return nil
	})
	return c, err
}

func listenCallback(port int) (net.Listener, error) {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("open the login callback on 127.0.0.1: %v", err)
	}
	return l, nil
}

func callbackURI(l net.Listener) string {
	return fmt.Sprintf("http://127.0.0.1:%d/callback", l.Addr().(*net.TCPAddr).Port)
}

// mcpLoginWait is the longest wait for a login in the browser: `zot mcp
// login` waits this long, and so does a request without a deadline of its
// own (the background GET stream).
const mcpLoginWait = 5 * time.Minute

// browserCode shows the authorization URL, opens it in a browser, and
// waits, until ctx ends, for the authorization server to send the browser
// to the callback with the code. A request with another state, or to
// another path, is answered and ignored: only the browser zot sent knows
// the state.
func (o *mcpOAuth) browserCode(ctx context.Context, l net.Listener, authURL, state, issuer string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, mcpLoginWait)
	defer cancel()
	got := make(chan loginCallback, 1)
	stopServing := serveCallback(l, func(method, target string) (int, string) {
		res, ours := readLoginCallback(method, target, state, issuer)
		if !ours {
			return http.StatusBadRequest, "zot: not the answer to this login"
		}
		select {
		case got <- res:
		default:
		}
		if res.err != nil {
			return http.StatusOK, fmt.Sprintf("zot could not log in to %s: %s", o.server, res.err)
		}
		return http.StatusOK, fmt.Sprintf("zot is authorized for MCP server %s. You can close this tab.", o.server)
	})
	defer stopServing()
	o.login.Show(o.server, authURL)
	stop := openBrowser(authURL, o.log)
	defer stop()
	select {
	case r := <-got:
		return r.code, r.err
	case <-ctx.Done():
		return "", fmt.Errorf("no login in the browser (%v): run `zot mcp login %s` to try again", ctx.Err(), o.server)
	}
}

// loginCallback is what the authorization server sent back through the
// browser: the code, or why there is none.
type loginCallback struct {
	code string
	err  error
}

// readLoginCallback reads one request to the callback listener. It is
// ours when it is a GET of /callback carrying the state zot sent; any
// other request, from whatever else can reach the port, is not.
func readLoginCallback(method, target, state, issuer string) (res loginCallback, ours bool) {
	u, err := url.ParseRequestURI(target)
	if method != http.MethodGet || err != nil || u.Path != "/callback" {
		return res, false
	}
	q := u.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 {
		return res, false
	}
	res.code = q.Get("code")
	switch {
	case q.Get("error") != "":
		res.err = fmt.Errorf("the authorization server refused: %s", truncate(sanitize(strings.TrimSpace(q.Get("error")+" "+q.Get("error_description"))), 300))
	case q.Get("iss") != "" && strings.TrimSuffix(q.Get("iss"), "/") != strings.TrimSuffix(issuer, "/"):
		// RFC 9207: an answer from another authorization server.
		res.err = fmt.Errorf("the callback came from issuer %q, not %q", truncate(q.Get("iss"), 200), truncate(issuer, 200))
	case res.code == "":
		res.err = errors.New("the callback has no code")
	}
	return res, true
}

// The callback listener's limits on one request: its head (request line
// and headers) must arrive whole within callbackReadTimeout and
// callbackHeadLimit bytes, or the connection is closed unanswered.
const (
	callbackReadTimeout = 10 * time.Second
	callbackHeadLimit   = 64 << 10
)

// serveCallback answers the requests that reach l, one per connection
// and each connection on its own, so that a client that connects and says
// nothing (a browser's speculative connection, or a local process) does
// not hold up the browser's request. answer gets the request line's
// method and target and returns the status and the text of the page to
// send (answerCallbackRequest escapes it into HTML).
// stop closes l and every connection and returns when nothing started here
// is left.
//
// zot answers HTTP itself here rather than with net/http's server: the
// callback needs one GET, and net/http's server (with its HTTP/2 half)
// is 150 KB of code mapped into every run of zot, where it raised the
// memory of a one-answer `zot -p` by half a MiB, for a path walked once a
// login; it is also less for an attacker on the loopback to reach.
func serveCallback(l net.Listener, answer func(method, target string) (status int, message string)) (stop func()) {
	var (
		mu      sync.Mutex
		conns   = map[net.Conn]bool{}
		stopped bool
		running sync.WaitGroup
	)
	running.Add(1)
	// Owned by serveCallback's caller: ends when stop closes l.
	go func() {
		defer running.Done()
		for {
			c, err := l.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				// Out of descriptors, say: net/http waits and goes on too.
				time.Sleep(50 * time.Millisecond)
				continue
			}
			mu.Lock()
			if stopped {
				mu.Unlock()
				c.Close()
				return
			}
			conns[c] = true
			running.Add(1)
			mu.Unlock()
			// One a connection: ends with its answer, its deadline, or stop.
			go func() {
				defer running.Done()
				answerCallbackRequest(c, answer)
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
				c.Close()
			}()
		}
	}()
	return func() {
		mu.Lock()
		stopped = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		l.Close()
		running.Wait()
	}
}

// answerCallbackRequest reads one request's head from c and writes the
// answer, closing the connection after it.
func answerCallbackRequest(c net.Conn, answer func(method, target string) (int, string)) {
	c.SetDeadline(time.Now().Add(callbackReadTimeout))
	head := bufio.NewReader(io.LimitReader(c, callbackHeadLimit))
	requestLine, err := head.ReadString('\n')
	if err != nil {
		return
	}
	for {
		// The headers say nothing the callback needs: read to the blank
		// line that ends them, so the answer follows the whole request.
		line, err := head.ReadString('\n')
		if err != nil {
			return
		}
		if line == "\r\n" || line == "\n" {
			break
		}
	}
	status, message := http.StatusBadRequest, "zot: not an HTTP/1 request"
	method, rest, _ := strings.Cut(strings.TrimRight(requestLine, "\r\n"), " ")
	if target, version, ok := strings.Cut(rest, " "); ok && strings.HasPrefix(version, "HTTP/1.") {
		status, message = answer(method, target)
	}
	page := "<!doctype html><title>zot</title><p>" + html.EscapeString(message) + "</p>"
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(page), page)
}

// openBrowser opens u with $BROWSER when it is set (its first entry;
// "%s" in it is u, else u is its last argument), else with the desktop's
// opener when there is a display, else not at all: the URL was shown.
// The opener runs as zot's child like any other, without zot's secrets;
// stop ends what it left running and reaps it.
func openBrowser(u string, log *mcpLog) (stop func()) {
	var argv []string
	if b := strings.TrimSpace(strings.Split(os.Getenv("BROWSER"), string(os.PathListSeparator))[0]); b != "" {
		argv = strings.Fields(b)
		if strings.Contains(b, "%s") {
			for i := range argv {
				argv[i] = strings.ReplaceAll(argv[i], "%s", u)
			}
		} else {
			argv = append(argv, u)
		}
	} else if opener := desktopOpener(); opener != "" {
		argv = []string{opener, u}
	}
	if argv == nil {
		return func() {}
	}
	p, err := startProc(procSpec{argv: argv, env: envNoSecrets})
	if err != nil {
		log.printf("oauth: could not open a browser with %s: %v", argv[0], err)
		return func() {}
	}
	return func() {
		p.Stop(killGrace)
		p.Reap()
	}
}

// desktopOpener is the program that opens a URL in the user's browser,
// or "" where there is no display to open one on.
func desktopOpener() string {
	name := "xdg-open"
	switch {
	case runtime.GOOS == "darwin":
		name = "open"
	case os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "":
		return ""
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

// randomToken is 32 random bytes, base64url: a PKCE verifier (43
// characters, RFC 7636 4.1), a state, a JWT id.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
