package main

import (
	"bufio"
	"debug/elf"
	"debug/gosym"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// While zot waits for a login, anything on the machine can reach the
// callback port. A client that connects and says nothing, one that sends
// an endless head, requests without the state, with another method or to
// another path, and bytes that are no HTTP at all: none of them is taken
// for the answer, none holds up the browser's request, and stopping ends
// every connection.
func TestLoginCallbackHoldsAgainstLocalClients(t *testing.T) {
	t.Parallel()
	l, err := listenCallback(0)
	if err != nil {
		t.Fatal(err)
	}
	uri := callbackURI(l)
	got := make(chan loginCallback, 10)
	stop := serveCallback(l, func(method, target string) (int, string) {
		res, ours := readLoginCallback(method, target, "s3cret", "https://as.example")
		if !ours {
			return http.StatusBadRequest, "not ours"
		}
		got <- res
		return http.StatusOK, "ours"
	})
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// exchange sends raw bytes on a new connection and returns all that
	// comes back before the server closes it.
	exchange := func(raw string) string {
		t.Helper()
		c := dial()
		io.WriteString(c, raw)
		back, _ := io.ReadAll(c)
		return string(back)
	}

	// The silent client comes first and finishes its request only after
	// the browser's was answered: a listener that served one connection at
	// a time would have timed it out by then, or kept the browser waiting.
	silent := dial()
	io.WriteString(silent, "GET /callback?state=s3cret&code=slow")

	for _, raw := range []string{
		"GET /callback?state=wrong&code=evil HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /callback?code=evil HTTP/1.1\r\n\r\n",
		"GET /elsewhere?state=s3cret&code=evil HTTP/1.1\r\n\r\n",
		"POST /callback?state=s3cret&code=evil HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
		"GET /callback?state=s3cret&code=evil\r\n\r\n", // HTTP/0.9: no version
		"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n",
	} {
		if back := exchange(raw); !strings.HasPrefix(back, "HTTP/1.1 400 Bad Request\r\n") || !strings.Contains(back, "Connection: close\r\n") {
			t.Errorf("%q was answered %q, want a 400", raw, back)
		}
	}
	endless := exchange("GET /callback?state=s3cret&code=evil HTTP/1.1\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("a", 1000)+"\r\n", 70))
	if endless != "" {
		t.Errorf("a head past the limit was answered %q, want the connection closed", endless)
	}

	res, err := http.Get(uri + "?state=s3cret&code=the-code")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasSuffix(string(page), "<p>ours</p>") || res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the browser got %d %q %v", res.StatusCode, page, res.Header)
	}
	if r := <-got; r.code != "the-code" || r.err != nil {
		t.Errorf("the answer taken is %+v, want the browser's code", r)
	}

	io.WriteString(silent, " HTTP/1.1\r\n\r\n")
	if back, _ := io.ReadAll(silent); !strings.HasPrefix(string(back), "HTTP/1.1 200 OK\r\n") {
		t.Errorf("the slow client, once it finished, got %q", back)
	}
	// Its answer was sent after what it read was taken.
	select {
	case r := <-got:
		if r.code != "slow" {
			t.Errorf("the slow client's request read as %+v", r)
		}
	default:
		t.Error("the slow client's request was not taken")
	}

	// stop ends a connection that is still waiting, and the listener.
	idle := dial()
	idle.Write([]byte("GET /"))
	stop()
	stopped = true
	if n, err := idle.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("a connection left open read %d bytes, %v, after stop", n, err)
	}
	if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener still accepts after stop")
	}
	select {
	case r := <-got:
		t.Errorf("a request that was not the browser's was taken: %+v", r)
	default:
	}
}

// What the authorization server sent back, read from the callback's
// request line.
func TestLoginCallbackReading(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		method, target string
		ours           bool
		code, err      string
	}{
		{"GET", "/callback?state=s&code=c", true, "c", ""},
		{"GET", "/callback?state=s&code=c&iss=https://as.example/", true, "c", ""},
		{"GET", "/callback?state=s&code=c&iss=https://evil.example", true, "c", `the callback came from issuer "https://evil.example", not "https://as.example"`},
		{"GET", "/callback?state=s&error=access_denied&error_description=not+today", true, "", "the authorization server refused: access_denied not today"},
		{"GET", "/callback?state=s", true, "", "the callback has no code"},
		{"GET", "http://127.0.0.1:1/callback?state=s&code=c", true, "c", ""},
		{"GET", "/callback?state=S&code=c", false, "", ""},
		{"GET", "/callback?state=s2&code=c", false, "", ""},
		{"GET", "/callback/?state=s&code=c", false, "", ""},
		{"HEAD", "/callback?state=s&code=c", false, "", ""},
		{"GET", "callback?state=s&code=c", false, "", ""},
		{"GET", "*", false, "", ""},
	} {
		res, ours := readLoginCallback(tt.method, tt.target, "s", "https://as.example")
		errText := ""
		if res.err != nil {
			errText = res.err.Error()
		}
		if ours != tt.ours || (ours && (res.code != tt.code || errText != tt.err)) {
			t.Errorf("%s %s: ours %v, %+v; want ours %v, code %q, error %q", tt.method, tt.target, ours, res, tt.ours, tt.code, tt.err)
		}
	}
}

// The answer's head is read to its blank line whatever the line endings,
// so a client that ends lines with a bare LF is answered too.
func TestLoginCallbackBareLineFeeds(t *testing.T) {
	t.Parallel()
	l, err := listenCallback(0)
	if err != nil {
		t.Fatal(err)
	}
	stop := serveCallback(l, func(method, target string) (int, string) { return http.StatusOK, method + " " + target + " <&>" })
	defer stop()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /callback HTTP/1.0\nHost: x\n\n")
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	// The message is escaped into the page.
	if res.StatusCode != 200 || string(body) != "<!doctype html><title>zot</title><p>GET /callback &lt;&amp;&gt;</p>" {
		t.Errorf("got %d %q", res.StatusCode, body)
	}
}

// scriptedConn is a connection whose peer sent in and then closed its
// side: what the callback writes back is kept in out.
type scriptedConn struct {
	net.Conn
	in  *strings.Reader
	out strings.Builder
}

func (c *scriptedConn) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c *scriptedConn) Write(p []byte) (int, error) { return c.out.Write(p) }
func (c *scriptedConn) SetDeadline(time.Time) error { return nil }
func (c *scriptedConn) Close() error                { return nil }
func (c *scriptedConn) RemoteAddr() net.Addr        { return &net.TCPAddr{} }
func (c *scriptedConn) LocalAddr() net.Addr         { return &net.TCPAddr{} }

// Whatever a local process sends to the callback port: zot answers at
// most once, with a well-formed response, and only a request carrying the
// state is taken for the login's answer.
func FuzzLoginCallbackRequest(f *testing.F) {
	for _, seed := range []string{
		"GET /callback?state=s3cret&code=c HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"GET /callback?state=wrong&code=c HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1:1/callback?state=s3cret&code=c HTTP/1.0\n\n",
		"GET /callback?state=s3cret&error=access_denied HTTP/1.1\r\n\r\n",
		"POST /callback HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
		"GET /callback?state=s3cret",
		"\x16\x03\x01\x00\xa5\x01\x00\r\n\r\n",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c := &scriptedConn{in: strings.NewReader(raw)}
		answers := 0
		taken := false
		answerCallbackRequest(c, func(method, target string) (int, string) {
			answers++
			res, ours := readLoginCallback(method, target, "s3cret", "https://as.example")
			if !ours {
				return http.StatusBadRequest, "not ours"
			}
			taken = true
			if res.err == nil && res.code == "" {
				t.Errorf("taken without a code or an error: %q", raw)
			}
			return http.StatusOK, "ours"
		})
		if answers > 1 {
			t.Fatalf("answered %d times: %q", answers, raw)
		}
		if taken && !strings.Contains(raw, "state=s3cret") {
			t.Errorf("taken without the state: %q", raw)
		}
		if c.out.Len() == 0 {
			return
		}
		res, err := http.ReadResponse(bufio.NewReader(strings.NewReader(c.out.String())), nil)
		if err != nil {
			t.Fatalf("the answer to %q is not HTTP: %v\n%s", raw, err, c.out.String())
		}
		body, err := io.ReadAll(res.Body)
		if err != nil || int64(len(body)) != res.ContentLength || (res.StatusCode == 200) != taken {
			t.Errorf("the answer to %q: %d, %q (%v)", raw, res.StatusCode, body, err)
		}
	})
}

// zot answers the login callback itself so that net/http's server is not
// linked (docs/choices.md, "The -p peak"): it lay among the client code
// every answer runs and raised `zot -p`'s peak by half a MiB. This keeps
// it out of the binary as built (the function table names every function
// linked, even in a stripped binary).
func TestBinaryLinksNoHTTPServer(t *testing.T) {
	t.Parallel()
	f, err := elf.Open(zotBin(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text, pcln := f.Section(".text"), f.Section(".gopclntab")
	if text == nil || pcln == nil {
		t.Fatal("no .text or .gopclntab in the binary")
	}
	data, err := pcln.Data()
	if err != nil {
		t.Fatal(err)
	}
	table, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		t.Fatal(err)
	}
	client, server := false, []string{}
	for _, fn := range table.Funcs {
		switch {
		case fn.Name == "net/http.(*Transport).RoundTrip":
			client = true
		case strings.HasPrefix(fn.Name, "net/http.(*Server)."), strings.HasPrefix(fn.Name, "net/http.(*http2Server)."):
			server = append(server, fn.Name)
		}
	}
	if len(server) > 0 {
		t.Errorf("the binary links %d functions of net/http's server, %s among them: something in zot uses it", len(server), server[0])
	}
	if !client {
		t.Errorf("no net/http.(*Transport).RoundTrip among %d functions: the table was not read", len(table.Funcs))
	}
}
