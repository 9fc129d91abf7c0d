package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// rawServer answers each connection with answer(request number on the
// connection, request head), as a hostile or broken server would: the
// bytes go out as given. It counts the connections it accepted.
type rawServer struct {
	ln       net.Listener
	scheme   string
	accepted atomic.Int32
}

func startRawServer(t *testing.T, answer func(n int, head string, c net.Conn) bool) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveRaw(t, &rawServer{ln: ln, scheme: "http"}, answer)
}

// startRawTLSServer is startRawServer over TLS, each write of answer one
// record, and a transport that trusts its certificate.
func startRawTLSServer(t *testing.T, answer func(n int, head string, c net.Conn) bool) (*rawServer, *directTransport) {
	t.Helper()
	cert := httptest.NewUnstartedServer(nil)
	cert.StartTLS()
	cfg := cert.TLS.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	cfg.DynamicRecordSizingDisabled = true
	pool := x509.NewCertPool()
	pool.AddCert(cert.Certificate())
	cert.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := serveRaw(t, &rawServer{ln: ln, scheme: "https"}, answer)
	return s, &directTransport{tlsConfig: &tls.Config{RootCAs: pool}, fallback: failingTransport{t}}
}

func serveRaw(t *testing.T, s *rawServer, answer func(n int, head string, c net.Conn) bool) *rawServer {
	ln := s.ln
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for n := 0; ; n++ {
					head, err := readRequestHead(r)
					if err != nil || !answer(n, head, c) {
						return
					}
				}
			}()
		}
	}()
	return s
}

// readRequestHead reads a request's head and its body (by Content-Length).
func readRequestHead(r *bufio.Reader) (string, error) {
	var head strings.Builder
	length := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		head.WriteString(line)
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
			length = atoiOr(strings.TrimSpace(v))
		}
		if line == "\r\n" {
			_, err := io.CopyN(io.Discard, r, int64(length))
			return head.String(), err
		}
	}
}

func atoiOr(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func (s *rawServer) url() string { return s.scheme + "://" + s.ln.Addr().String() }

// directGet posts a small body through tr and reads the whole answer.
func directPost(t *testing.T, ctx context.Context, tr http.RoundTripper, url string) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/messages", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, string(body), err
}

// One connection carries request after request when each answer is read
// to its end; an answer read only in part, or one the server ends with
// "Connection: close", ends its connection.
func TestDirectTransportKeepsConnections(t *testing.T) {
	t.Parallel()
	srv := startRawServer(t, func(n int, head string, c net.Conn) bool {
		switch {
		case strings.Contains(head, "X-Close: yes"):
			io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
			return false
		case strings.Contains(head, "X-Long: yes"):
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok")
		default:
			io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
		}
		return true
	})
	tr := &directTransport{fallback: failingTransport{t}}
	for i := 0; i < 3; i++ {
		if _, body, err := directPost(t, context.Background(), tr, srv.url()); err != nil || body != "ok" {
			t.Fatalf("request %d: %q, %v", i, body, err)
		}
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Fatalf("three requests read whole took %d connections, want 1", n)
	}

	// Read in part: the connection goes with the body.
	req, _ := http.NewRequest("POST", srv.url(), strings.NewReader("x"))
	req.Header.Set("X-Long", "yes")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Read(make([]byte, 1))
	resp.Body.Close()
	if _, _, err := directPost(t, context.Background(), tr, srv.url()); err != nil {
		t.Fatal(err)
	}
	if n := srv.accepted.Load(); n != 2 {
		t.Fatalf("after an answer read in part: %d connections, want 2", n)
	}

	req, _ = http.NewRequest("POST", srv.url(), strings.NewReader("x"))
	req.Header.Set("X-Close", "yes")
	resp, err = tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if !resp.Close {
		t.Error("an answer with Connection: close did not say so")
	}
	if _, _, err := directPost(t, context.Background(), tr, srv.url()); err != nil {
		t.Fatal(err)
	}
	if n := srv.accepted.Load(); n != 3 {
		t.Fatalf("after Connection: close: %d connections, want 3", n)
	}
}

// An event stream is read up to its last event and closed: when the end
// of the body has come behind that event, the connection serves the next
// request; when it has not, it is closed, not waited on.
func TestDirectTransportKeepsAConnectionWhoseEndHasCome(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	answer := func(n int, head string, c net.Conn) bool {
		switch {
		case strings.Contains(head, "X-End: held"):
			io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nevent1\r\n")
			<-hold
			return false
		case strings.Contains(head, "X-End: sent"):
			// One write: the end is there before the client closes.
			io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nevent1\r\n0\r\n\r\n")
		default:
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext")
		}
		return true
	}
	plain := startRawServer(t, answer)
	tlsServer, tlsTransport := startRawTLSServer(t, answer)
	for _, s := range []struct {
		srv *rawServer
		tr  *directTransport
	}{{plain, &directTransport{fallback: failingTransport{t}}}, {tlsServer, tlsTransport}} {
		for _, tc := range []struct {
			end   string
			conns int32
		}{{"sent", 1}, {"held", 2}} {
			req, _ := http.NewRequest("POST", s.srv.url(), strings.NewReader("x"))
			req.Header.Set("X-End", tc.end)
			resp, err := s.tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			event := make([]byte, 6)
			if _, err := io.ReadFull(resp.Body, event); err != nil || string(event) != "event1" {
				t.Fatalf("%s: %q, %v", tc.end, event, err)
			}
			resp.Body.Close()
			if _, body, err := directPost(t, context.Background(), s.tr, s.srv.url()); err != nil || body != "next" {
				t.Fatalf("%s %s: the next request: %q, %v", s.srv.scheme, tc.end, body, err)
			}
			if n := s.srv.accepted.Load(); n != tc.conns {
				t.Errorf("%s, end %s: %d connections so far, want %d", s.srv.scheme, tc.end, n, tc.conns)
			}
		}
	}
}

// A request that could not be written at all on a connection kept idle
// goes again on a new one, once; a request written whole is not sent
// again, whatever became of its answer — the server may be answering it
// (httpStreamer.post retries as the user said). The kept connections are
// stand-ins that fail as a server's closed connection would.
func TestDirectTransportSendsAgainOnlyWhatWasNotSent(t *testing.T) {
	t.Parallel()
	srv := startRawServer(t, func(n int, head string, c net.Conn) bool {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		return true
	})
	req, _ := http.NewRequest("POST", srv.url(), strings.NewReader("x"))
	key := "http://" + directAddr(req.URL)
	for _, tc := range []struct {
		name  string
		kept  *failingConn
		conns int32 // connections the server has seen after the request
	}{
		{"not written", &failingConn{write: syscall.EPIPE}, 1},
		{"written, no answer", &failingConn{read: io.EOF}, 1},
		{"written in part", &failingConn{write: syscall.EPIPE, part: 5}, 1},
	} {
		tr := &directTransport{fallback: failingTransport{t}}
		tr.putIdle(key, newDirectConn(tc.kept, tc.kept))
		_, body, err := directPost(t, context.Background(), tr, srv.url())
		switch {
		case tc.kept.write != nil && tc.kept.part == 0 && (err != nil || body != "ok"):
			t.Errorf("%s: %q, %v; want it sent again", tc.name, body, err)
		case (tc.kept.read != nil || tc.kept.part > 0) && err == nil:
			t.Errorf("%s: sent again (%q)", tc.name, body)
		}
		if n := srv.accepted.Load(); n != tc.conns {
			t.Errorf("%s: %d connections, want %d", tc.name, n, tc.conns)
		}
		if !tc.kept.closed.Load() {
			t.Errorf("%s: the failed connection was not closed", tc.name)
		}
	}

	// A new connection that gets no answer is not tried again.
	silent := startRawServer(t, func(int, string, net.Conn) bool { return false })
	tr := &directTransport{fallback: failingTransport{t}}
	if _, _, err := directPost(t, context.Background(), tr, silent.url()); err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("no answer: %v", err)
	}
	if n := silent.accepted.Load(); n != 1 {
		t.Errorf("a request without answer was sent %d times on new connections", n)
	}
}

// failingConn is a kept connection that fails its writes (after part
// bytes) or its reads.
type failingConn struct {
	net.Conn
	write, read error
	part        int
	closed      atomic.Bool
}

func (c *failingConn) Write(p []byte) (int, error) {
	if c.write != nil {
		return min(c.part, len(p)), c.write
	}
	return len(p), nil
}
func (c *failingConn) Read([]byte) (int, error)        { return 0, c.read }
func (c *failingConn) Close() error                    { c.closed.Store(true); return nil }
func (c *failingConn) SetReadDeadline(time.Time) error { return nil }

// A connection kept idle whose server has closed it is dropped, not
// written to. (A Unix socket pair, closed at its other end.)
func TestDirectTransportDropsAClosedIdleConnection(t *testing.T) {
	t.Parallel()
	srv := startRawServer(t, func(n int, head string, c net.Conn) bool {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		return true
	})
	client, server := socketPair(t)
	server.Close()
	tr := &directTransport{fallback: failingTransport{t}}
	req, _ := http.NewRequest("POST", srv.url(), strings.NewReader("x"))
	tr.putIdle("http://"+directAddr(req.URL), newDirectConn(client, client))
	if _, body, err := directPost(t, context.Background(), tr, srv.url()); err != nil || body != "ok" {
		t.Fatalf("%q, %v", body, err)
	}
	if _, err := client.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the closed connection was not dropped: a write gives %v", err)
	}
}

// socketPair is two connected ends of a Unix socket: what one end writes
// is there for the other when the write returns.
func socketPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		conns[i], err = net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conns[i].Close() })
	}
	return conns[0], conns[1]
}

// An idle connection is taken again only when nothing came on it while it
// waited: a server's 408 or its end means the connection is dropped, and
// the 408 is never read as the next request's answer. (A Unix socket pair:
// what one end writes is there for the other when the write returns.)
func TestIdleConnectionIsTakenOnlyWhenQuiet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		server func(net.Conn)
		quiet  bool
	}{
		{func(net.Conn) {}, true},
		{func(c net.Conn) { io.WriteString(c, "HTTP/1.1 408 Request Timeout\r\n\r\n") }, false},
		{func(c net.Conn) { c.Close() }, false},
	} {
		client, server := socketPair(t)
		conns := []net.Conn{client, server}
		tc.server(conns[1])
		c := newDirectConn(conns[0], conns[0])
		if got := c.quiet(); got != tc.quiet {
			t.Errorf("quiet() = %v, want %v", got, tc.quiet)
		}
		// A quiet connection still reads what comes after.
		if tc.quiet {
			io.WriteString(conns[1], "x")
			if b, err := c.r.ReadByte(); err != nil || b != 'x' {
				t.Errorf("after the check: %q, %v", b, err)
			}
		}
	}
}

// The attacker is the server (or whatever answers for it): every answer
// below is refused with an error, or read and the connection not trusted
// again, and none makes zot buffer more than the head's bound.
func TestDirectTransportHoldsAgainstHostileAnswers(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", maxResponseHead)
	cases := []struct {
		name   string
		answer string
		err    string // in the error of the request or of reading its body
		body   string // when it is read whole
		reuse  bool   // the connection carries the next request
		closes bool   // the server ends the body by closing
	}{
		{"headers without end", "HTTP/1.1 200 OK\r\nX: " + long + long, "longer than", "", false, false},
		{"header lines without end", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-A: b\r\n", maxResponseHead/8+1), "longer than", "", false, false},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", "malformed HTTP status line", "", false, false},
		{"HTTP/2 status line", "HTTP/2 200 OK\r\n\r\n", "malformed HTTP status line", "", false, false},
		{"status of four digits", "HTTP/1.1 2000 OK\r\n\r\n", "malformed HTTP status line", "", false, false},
		{"conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", "conflicting Content-Length", "", false, false},
		{"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\nok", "malformed Content-Length", "", false, false},
		{"signed length", "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", "malformed Content-Length", "", false, false},
		{"unknown encoding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok", "unsupported transfer encoding", "", false, false},
		{"two encodings", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\nok", "unsupported transfer encoding", "", false, false},
		{"cut short", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok", "unexpected EOF", "", false, false},
		{"chunk size not hex", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n", "malformed chunked", "", false, false},
		{"chunk size past 63 bits", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nok", "malformed chunked", "", false, false},
		{"chunk size signed", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+2\r\nok\r\n0\r\n\r\n", "malformed chunked", "", false, false},
		{"chunk without its line end", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX0\r\n\r\n", "malformed chunked", "", false, false},
		{"chunk line without end", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;" + strings.Repeat("x", 8<<10), "malformed chunked", "", false, false},
		{"trailers without end", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + strings.Repeat("X: y\r\n", maxTrailerLines+1), "malformed chunked", "", false, false},
		{"chunks cut short", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nok", "unexpected EOF", "", false, false},
		{"informational answers without end", strings.Repeat("HTTP/1.1 103 Early Hints\r\n\r\n", maxInformational+1), "unexpected answer", "", false, false},
		{"switching protocols", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n", "unexpected answer", "", false, false},
		{"chunks beside a length", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n2\r\nok\r\n0\r\n\r\n", "", "ok", false, false},
		{"more than the body", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nsent", "", "ok", false, false},
		{"a body to the end of the connection", "HTTP/1.1 200 OK\r\n\r\nok", "", "ok", false, true},
		{"informational, then the answer", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "", "ok", true, false},
		{"trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nok\r\n0\r\nX-T: 1\r\n\r\n", "", "ok", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var answered atomic.Bool
			srv := startRawServer(t, func(n int, head string, c net.Conn) bool {
				if !answered.Swap(true) {
					io.WriteString(c, tc.answer)
					// Kept open, so that a connection trusted again
					// would carry the next request here.
					return tc.err == "" && !tc.closes
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain")
				return true
			})
			tr := &directTransport{fallback: failingTransport{t}}
			_, body, err := directPost(t, context.Background(), tr, srv.url())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || body != tc.body {
				t.Fatalf("body %q, err %v; want %q", body, err, tc.body)
			}
			if _, body, err := directPost(t, context.Background(), tr, srv.url()); err != nil || body != "again" {
				t.Fatalf("the next request: %q, %v", body, err)
			}
			want := int32(2)
			if tc.reuse {
				want = 1
			}
			if n := srv.accepted.Load(); n != want {
				t.Errorf("%d connections for two requests, want %d", n, want)
			}
		})
	}
}

// An event in a chunk is given to the reader as soon as it has come: not
// held back for the line end after the chunk, or for the next chunk's
// size line, which a server may send only with the next event.
func TestDirectTransportGivesAChunkWithoutWaiting(t *testing.T) {
	t.Parallel()
	for _, sent := range []string{"5\r\nhello", "5\r\nhello\r", "5\r\nhello\r\n", "2\r\nhe\r\n3\r\nllo\r\n"} {
		conn := &heldConn{data: []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + sent)}
		c := newDirectConn(conn, conn)
		req, _ := http.NewRequest("POST", "http://example.test/", strings.NewReader("x"))
		resp, err := (&directTransport{}).exchange(context.Background(), c, req, strings.NewReader("x"), "k")
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		buf := make([]byte, 64)
		for len(got) < 5 && !conn.waited {
			n, err := resp.Body.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				break
			}
		}
		if string(got) != "hello" || conn.waited {
			t.Errorf("%q: read %q, waited for more: %v", sent, got, conn.waited)
		}
	}
}

// heldConn gives data, then counts a read past it as a wait on the server.
type heldConn struct {
	net.Conn
	data   []byte
	waited bool
}

func (c *heldConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		c.waited = true
		return 0, errors.New("waited for the server")
	}
	n := copy(p, c.data)
	c.data = c.data[n:]
	return n, nil
}
func (c *heldConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *heldConn) Close() error                { return nil }

// Over TLS, bytes behind an answer can wait inside the TLS connection,
// taken off the socket with the answer's last record: a forged second
// answer there ends the connection as it does over plain TCP, and is
// never read as the next request's answer.
func TestDirectTransportTLSDropsWhatCameBehindTheAnswer(t *testing.T) {
	t.Parallel()
	const forged = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nFORGED"
	// The answer fills the reader's 4 KiB, so what follows it stays in
	// the TLS connection.
	head := "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
	size := 4<<10 - len(fmt.Sprintf(head, 4000))
	first := strings.Repeat("a", size)
	var answered atomic.Bool
	srv, tr := startRawTLSServer(t, func(n int, _ string, c net.Conn) bool {
		if !answered.Swap(true) {
			fmt.Fprintf(c, head+"%s"+forged, size, first) // one record
			return true
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nreal")
		return true
	})
	for _, want := range []string{first, "real"} {
		if _, body, err := directPost(t, context.Background(), tr, srv.url()); err != nil || body != want {
			t.Fatalf("%.20q, %v; want %.20q", body, err, want)
		}
	}
	if n := srv.accepted.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// A header value with a line break would start a header of its own: the
// request is refused before anything is sent, without the value.
func TestDirectTransportRefusesHeaderInjection(t *testing.T) {
	t.Parallel()
	srv := startRawServer(t, func(int, string, net.Conn) bool { return false })
	tr := &directTransport{fallback: failingTransport{t}}
	for _, h := range [][2]string{{"X-Api-Key", "secret\r\nX-Evil: 1"}, {"X-Api-Key", "secret\nX-Evil: 1"}, {"Bad Name", "v"}, {"X:Y", "v"}} {
		req, _ := http.NewRequest("POST", srv.url(), strings.NewReader("x"))
		req.Header[h[0]] = []string{h[1]}
		_, err := tr.RoundTrip(req)
		if err == nil || !strings.Contains(err.Error(), "invalid header field") || strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: %v", h, err)
		}
	}
	if n := srv.accepted.Load(); n != 0 {
		t.Errorf("%d connections were opened for refused requests", n)
	}
}

// Cancelling the request's context ends a read that waits on a server
// gone silent, and so does closing the body from another goroutine (how
// streamFrames stops a stalled stream).
func TestDirectTransportStopsWaitingOnASilentServer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := startRawServer(t, func(n int, head string, c net.Conn) bool {
		if strings.Contains(head, "X-Head: none") {
			<-release
			return false
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n")
		<-release
		return false
	})
	tr := &directTransport{fallback: failingTransport{t}}
	for _, stop := range []string{"cancel", "close"} {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.url(), strings.NewReader("x"))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		read := make(chan error, 1)
		go func() {
			_, err := io.ReadAll(resp.Body)
			read <- err
		}()
		if stop == "cancel" {
			cancel()
		} else {
			resp.Body.Close()
		}
		if err := <-read; err == nil {
			t.Errorf("%s: the read ended without an error", stop)
		}
		cancel()
	}

	// Waiting for the head: cancelling ends that wait too.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.url(), strings.NewReader("x"))
	req.Header.Set("X-Head", "none")
	done := make(chan error, 1)
	go func() {
		_, err := tr.RoundTrip(req)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while waiting for the head: %v", err)
	}
}

// Over https the server's certificate is checked against the roots the
// transport trusts, and the connection is kept like a plain one.
func TestDirectTransportTLS(t *testing.T) {
	t.Parallel()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok "+r.Proto)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	t.Cleanup(srv.Close)

	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tr := &directTransport{tlsConfig: &tls.Config{RootCAs: pool}, fallback: failingTransport{t}}
	for i := 0; i < 2; i++ {
		if _, body, err := directPost(t, context.Background(), tr, srv.URL); err != nil || body != "ok HTTP/1.1" {
			t.Fatalf("%q, %v", body, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
	// The system's roots do not know the test's certificate.
	_, _, err := directPost(t, context.Background(), &directTransport{fallback: failingTransport{t}}, srv.URL)
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("a certificate nobody vouches for: %v", err)
	}
}

// Requests directTransport does not send itself go to its fallback.
func TestDirectTransportHandsOnWhatItDoesNotSend(t *testing.T) {
	t.Parallel()
	tr := &directTransport{fallback: failingTransport{t}}
	unknownLength, _ := http.NewRequest("POST", "http://127.0.0.1:1/", io.MultiReader(strings.NewReader("x")))
	unknownLength.ContentLength = -1
	other, _ := http.NewRequest("GET", "ftp://127.0.0.1/", nil)
	for _, req := range []*http.Request{unknownLength, other} {
		if tr.handles(req) {
			t.Errorf("%s %s with length %d: sent directly", req.Method, req.URL, req.ContentLength)
		}
	}
	plain, _ := http.NewRequest("POST", "http://127.0.0.1:1/", strings.NewReader("x"))
	if !tr.handles(plain) {
		t.Error("a plain request was handed on")
	}
}

// With HTTP_PROXY set, a provider's requests go through the proxy (the
// environment is read once per process, so this runs zot).
func TestProviderRequestsGoThroughTheProxy(t *testing.T) {
	t.Parallel()
	var seen atomic.Value
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Method + " " + r.RequestURI)
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, strings.Join(anthropicEvents(gen{Text: "through the proxy"}), ""))
	}))
	t.Cleanup(proxy.Close)
	z := newZotRun(t)
	z.env = []string{"HTTP_PROXY=" + proxy.URL}
	out, errOut, code := z.run("--provider", "anthropic", "--base-url", "http://provider.invalid", "--api-key", "k", "-p", "hi")
	if code != 0 || out != "through the proxy\n" {
		t.Fatalf("exit %d, %q, %s", code, out, errOut)
	}
	if got, _ := seen.Load().(string); got != "POST http://provider.invalid/v1/messages" {
		t.Errorf("the proxy saw %q", got)
	}
}

// failingTransport is a fallback that must not be reached.
type failingTransport struct{ t *testing.T }

func (f failingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f.t.Errorf("%s %s went to the fallback", req.Method, req.URL)
	return nil, errors.New("fallback")
}

// fuzzConn is a connection whose server says data and hears anything.
type fuzzConn struct {
	net.Conn
	r *bytes.Reader
}

func (c fuzzConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c fuzzConn) Write(p []byte) (int, error) { return len(p), nil }
func (c fuzzConn) Close() error                { return nil }

// FuzzDirectResponse gives the response reader any bytes a server could
// send: it must not panic, must not give more body than the server sent,
// and a body with a length must come whole or with an error.
func FuzzDirectResponse(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x\r\nok\r\n0\r\nT: 1\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 204 No Content\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\n\r\nto the end"))
	f.Fuzz(func(t *testing.T, data []byte) {
		conn := fuzzConn{r: bytes.NewReader(data)}
		c := newDirectConn(conn, conn)
		req, _ := http.NewRequest("POST", "http://example.test/", strings.NewReader("x"))
		tr := &directTransport{}
		resp, err := tr.exchange(context.Background(), c, req, strings.NewReader("x"), "k")
		if err != nil {
			return
		}
		body, err := io.ReadAll(resp.Body)
		if len(body) > len(data) {
			t.Fatalf("%d bytes of body from %d sent", len(body), len(data))
		}
		if err == nil && resp.ContentLength >= 0 && int64(len(body)) != resp.ContentLength {
			t.Fatalf("a body of %d bytes read without error as %d", resp.ContentLength, len(body))
		}
		resp.Body.Close()
	})
}
