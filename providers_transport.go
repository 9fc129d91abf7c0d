package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// directTransport is the HTTP/1.1 client provider requests go over when
// the embedder gives no http.Client of its own: one request at a time on
// a connection, written and read on the caller's goroutine, with idle
// connections kept for the next request to the same server.
//
// Why not http.Transport: it dials, reads and writes each connection on
// goroutines of its own, which start with a small stack and grow it as
// they go, and each growth walks the goroutine's frames through the
// runtime's function tables; the pages of those tables it reads stay
// mapped, 0.8 MiB of `zot -p`'s peak (bench/rss.sh). A provider request
// has a known length and an answer the caller reads as it comes: it needs
// none of that machinery.
//
// What it hands to http.DefaultTransport instead: a request that goes
// through a proxy (HTTPS_PROXY, HTTP_PROXY and NO_PROXY, as
// http.ProxyFromEnvironment reads them), a body of unknown length, a
// scheme other than http and https. It speaks HTTP/1.1 only and asks for
// no compression.
type directTransport struct {
	mu   sync.Mutex
	idle map[string][]*directConn // by scheme://host:port
	// tlsConfig is copied for each connection; nil verifies servers
	// against the system's roots.
	tlsConfig *tls.Config
	fallback  http.RoundTripper
}

// providerTransport carries every provider request of the process, so a
// connection opened for one turn serves the next.
var providerTransport = &directTransport{fallback: http.DefaultTransport}

const (
	// maxResponseHead bounds the status line and headers of an answer: a
	// server that sends headers without end is cut off, not buffered.
	maxResponseHead = 1 << 20
	// maxChunkLine bounds a chunk's size line and each trailer line: it
	// is the size of a connection's reader, whose ReadSlice gives no
	// longer line.
	maxChunkLine = 4 << 10
	// maxInformational is how many 1xx answers may come before the answer.
	maxInformational = 5
	// maxTrailerLines bounds the trailer after the last chunk.
	maxTrailerLines  = 100
	maxIdlePerServer = 2
	// idleConnTimeout is how long an idle connection is kept; a server
	// closes one it has kept longer, and a request on it would fail.
	idleConnTimeout = 90 * time.Second
	// maxDrain and drainWait bound what closing a body reads of its rest
	// to keep the connection (directBody.readWhatCame).
	maxDrain  = 4 << 10
	drainWait = 250 * time.Millisecond
	unlimited = 1<<63 - 1
)

// directConn is one connection and its reader, kept across requests.
type directConn struct {
	net.Conn           // what requests are written to: TLS over raw, or raw
	raw       net.Conn // closed without a TLS goodbye, which could wait on the server
	head      *headLimit
	r         *bufio.Reader
	idleSince time.Time
	deadline  time.Time // the read deadline set, which quiet puts back
}

func (c *directConn) Close() error { return c.raw.Close() }

func (c *directConn) setReadDeadline(t time.Time) {
	c.deadline = t
	c.raw.SetReadDeadline(t)
}

// quiet says whether nothing more has come on the connection, asked
// without waiting: on an idle one, a server that closed it sent an end,
// and some send a 408 first, which must not be read as the next
// request's answer; after an answer, more than its body.
func (c *directConn) quiet() bool {
	if c.r.Buffered() > 0 {
		return false
	}
	if c.Conn != c.raw {
		// TLS keeps records it has taken off the socket, where the peek
		// below cannot see them: a read that may not wait hands them
		// over. A deadline passed fails only the read of the socket, and
		// TLS does not keep that error.
		c.raw.SetReadDeadline(time.Unix(1, 0))
		_, err := c.r.Peek(1)
		c.raw.SetReadDeadline(c.deadline)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return false
		}
	}
	sc, ok := c.raw.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	quiet := false
	var b [1]byte
	rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		quiet = err == syscall.EAGAIN
		return true
	})
	return quiet
}

// headLimit is the connection as the reader sees it: while a response
// head is read, at most n bytes more come through, and unlimited after.
type headLimit struct {
	r net.Conn
	n int64
}

func (l *headLimit) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

var errHeadTooLarge = fmt.Errorf("the response's status line and headers are longer than %d bytes", maxResponseHead)

// errNotSent is a request of which not one byte could be written: on a
// connection that had been idle, the server closed it meanwhile, and the
// request is sent again on a new one, as net/http does. A request sent
// whole is not sent again here, whatever became of its answer: the
// server may be answering it, and httpStreamer.post retries as the user
// said.
type errNotSent struct{ error }

func (e errNotSent) Unwrap() error { return e.error }

func (t *directTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.handles(req) {
		return t.fallback.RoundTrip(req)
	}
	body := io.Reader(req.Body)
	if req.Body == nil || req.Body == http.NoBody {
		body = nil
	} else {
		defer req.Body.Close()
	}
	if err := checkRequestHeader(req.Header); err != nil {
		return nil, err
	}
	if body == nil && req.ContentLength > 0 {
		return nil, fmt.Errorf("a request of Content-Length %d without a body", req.ContentLength)
	}
	ctx := req.Context()
	key := req.URL.Scheme + "://" + directAddr(req.URL)
	for retried := false; ; retried = true {
		c, reused, err := t.conn(ctx, req.URL, key)
		if err != nil {
			return nil, err
		}
		resp, err := t.exchange(ctx, c, req, body, key)
		if err == nil {
			return resp, nil
		}
		c.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		var notSent errNotSent
		if !reused || retried || !errors.As(err, &notSent) {
			return nil, err
		}
		if body != nil {
			if req.GetBody == nil {
				return nil, err
			}
			again, gerr := req.GetBody()
			if gerr != nil {
				return nil, err
			}
			defer again.Close()
			body = again
		}
	}
}

// handles says whether req is one directTransport sends itself.
func (t *directTransport) handles(req *http.Request) bool {
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" {
		return false
	}
	if req.Body != nil && req.Body != http.NoBody && req.ContentLength <= 0 {
		return false
	}
	proxy, err := http.ProxyFromEnvironment(req)
	return err == nil && proxy == nil
}

// checkRequestHeader refuses a header net/http would refuse too, rather
// than send a line break inside a value: a header configured with one
// would otherwise start a header of its own. The value is not shown: it
// may be a key.
func checkRequestHeader(h http.Header) error {
	for name, values := range h {
		if name == "" || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) }) {
			return fmt.Errorf("invalid header field name %q", name)
		}
		for _, v := range values {
			if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
				return fmt.Errorf("invalid header field value for %q", name)
			}
		}
	}
	return nil
}

// directAddr is u's host and port, the scheme's port when u names none.
func directAddr(u *url.URL) string {
	return net.JoinHostPort(u.Hostname(), effectivePort(u))
}

// conn is an idle connection to the server of key, or a new one.
func (t *directTransport) conn(ctx context.Context, u *url.URL, key string) (c *directConn, reused bool, err error) {
	for c := t.takeIdle(key); c != nil; c = t.takeIdle(key) {
		if c.quiet() {
			return c, true, nil
		}
		c.Close()
	}
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", directAddr(u))
	if err != nil {
		return nil, false, err
	}
	conn := raw
	if u.Scheme == "https" {
		cfg := &tls.Config{}
		if t.tlsConfig != nil {
			cfg = t.tlsConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, false, err
		}
		conn = tc
	}
	return newDirectConn(conn, raw), false, nil
}

// newDirectConn is conn (over raw, or raw itself) with its reader.
func newDirectConn(conn, raw net.Conn) *directConn {
	head := &headLimit{r: conn, n: unlimited}
	return &directConn{Conn: conn, raw: raw, head: head, r: bufio.NewReaderSize(head, maxChunkLine)}
}

func (t *directTransport) takeIdle(key string) *directConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	for list := t.idle[key]; len(list) > 0; {
		c := list[len(list)-1]
		list = list[:len(list)-1]
		t.idle[key] = list
		if time.Since(c.idleSince) < idleConnTimeout {
			return c
		}
		c.Close()
	}
	delete(t.idle, key)
	return nil
}

func (t *directTransport) putIdle(key string, c *directConn) {
	c.idleSince = time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.idle[key]) >= maxIdlePerServer {
		c.Close()
		return
	}
	if t.idle == nil {
		t.idle = map[string][]*directConn{}
	}
	t.idle[key] = append(t.idle[key], c)
}

// exchange writes req on c and reads the head of its answer; the body is
// read as the caller reads resp.Body. Cancelling ctx closes c, which ends
// whatever waits on it.
func (t *directTransport) exchange(ctx context.Context, c *directConn, req *http.Request, body io.Reader, key string) (*http.Response, error) {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	if written, err := writeDirectRequest(c, req, body); err != nil {
		stop()
		if written == 0 {
			err = errNotSent{err}
		}
		return nil, err
	}
	resp, framing, keep, err := readDirectResponse(c, req)
	if err != nil {
		stop()
		return nil, err
	}
	b := &directBody{t: t, key: key, c: c, r: framing, stop: stop, keep: keep, ctx: ctx}
	if framing == nil {
		b.finish()
		resp.Body = http.NoBody
	} else {
		resp.Body = b
	}
	return resp, nil
}

// requestHeaderWrittenApart are the fields writeDirectRequest writes
// from the request itself, never from its Header (as net/http does).
var requestHeaderWrittenApart = map[string]bool{"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Trailer": true}

// writeDirectRequest writes req; written is how much of it reached the
// connection.
func writeDirectRequest(c *directConn, req *http.Request, body io.Reader) (written int64, err error) {
	out := &countingWriter{w: c.Conn}
	w := bufio.NewWriterSize(out, 4<<10)
	host := cmp.Or(req.Host, req.URL.Host)
	fmt.Fprintf(w, "%s %s HTTP/1.1\r\nHost: %s\r\n", cmp.Or(req.Method, "GET"), req.URL.RequestURI(), host)
	if _, ok := req.Header["User-Agent"]; !ok {
		w.WriteString("User-Agent: Go-http-client/1.1\r\n")
	}
	if body != nil || req.Method == "POST" || req.Method == "PUT" || req.Method == "PATCH" {
		fmt.Fprintf(w, "Content-Length: %d\r\n", max(req.ContentLength, 0))
	}
	if req.Close {
		w.WriteString("Connection: close\r\n")
	}
	if err := req.Header.WriteSubset(w, requestHeaderWrittenApart); err != nil {
		return out.n, err
	}
	w.WriteString("\r\n")
	if body != nil {
		n, err := io.Copy(w, io.LimitReader(body, req.ContentLength))
		if err != nil {
			return out.n, err
		}
		if n != req.ContentLength {
			return out.n, fmt.Errorf("the request's body is %d bytes, not the %d of its Content-Length", n, req.ContentLength)
		}
	}
	err = w.Flush()
	return out.n, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// readDirectResponse reads the head of the answer to req. framing reads
// its body (nil when it has none); keep says whether c may carry another
// request once the body is read to its end.
func readDirectResponse(c *directConn, req *http.Request) (resp *http.Response, framing io.Reader, keep bool, err error) {
	c.head.n = maxResponseHead
	defer func() {
		if err != nil && c.head.n <= 0 {
			err = errHeadTooLarge
		}
		c.head.n = unlimited
	}()
	tp := textproto.NewReader(c.r)
	for informational := 0; ; informational++ {
		line, err := tp.ReadLine()
		if err != nil {
			return nil, nil, false, headError(err)
		}
		resp, err = parseStatusLine(line)
		if err != nil {
			return nil, nil, false, err
		}
		header, err := tp.ReadMIMEHeader()
		if err != nil {
			return nil, nil, false, headError(err)
		}
		resp.Header = http.Header(header)
		if resp.StatusCode >= 200 {
			break
		}
		if resp.StatusCode == http.StatusSwitchingProtocols || informational == maxInformational {
			return nil, nil, false, fmt.Errorf("unexpected answer %q", resp.Status)
		}
	}
	resp.Request = req
	resp.ContentLength = -1
	keep = resp.ProtoAtLeast(1, 1) && !req.Close && !headerHasToken(resp.Header, "Connection", "close")
	resp.Close = !keep
	te, cl := resp.Header.Values("Transfer-Encoding"), resp.Header.Values("Content-Length")
	switch {
	case req.Method == "HEAD" || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified:
		resp.ContentLength = 0
		return resp, nil, keep, nil
	case len(te) > 0:
		if len(te) != 1 || !strings.EqualFold(strings.TrimSpace(te[0]), "chunked") {
			return nil, nil, false, fmt.Errorf("unsupported transfer encoding %q", strings.Join(te, ", "))
		}
		// A length beside chunks says two things of one body: read the
		// chunks, and trust the connection with nothing more.
		resp.Header.Del("Content-Length")
		resp.TransferEncoding = []string{"chunked"}
		return resp, &chunkedReader{r: c.r}, keep && len(cl) == 0, nil
	case len(cl) > 0:
		n, err := parseContentLength(cl)
		if err != nil {
			return nil, nil, false, err
		}
		resp.ContentLength = n
		if n == 0 {
			return resp, nil, keep, nil
		}
		return resp, &lengthReader{r: c.r, left: n}, keep, nil
	}
	// The body ends when the server closes the connection.
	resp.Close = true
	return resp, c.r, false, nil
}

func headError(err error) error {
	if err == io.EOF {
		return fmt.Errorf("the server closed the connection before answering: %w", io.ErrUnexpectedEOF)
	}
	return err
}

func parseStatusLine(line string) (*http.Response, error) {
	proto, status, _ := strings.Cut(line, " ")
	code, _, _ := strings.Cut(status, " ")
	major, minor, ok := http.ParseHTTPVersion(proto)
	n, err := strconv.Atoi(code)
	if !ok || major != 1 || len(code) != 3 || err != nil || n < 100 {
		return nil, fmt.Errorf("malformed HTTP status line %.80q", line)
	}
	return &http.Response{Status: status, StatusCode: n, Proto: proto, ProtoMajor: major, ProtoMinor: minor}, nil
}

func parseContentLength(values []string) (int64, error) {
	first := strings.TrimSpace(values[0])
	for _, v := range values[1:] {
		if strings.TrimSpace(v) != first {
			return 0, fmt.Errorf("conflicting Content-Length headers %q", values)
		}
	}
	n, err := strconv.ParseInt(first, 10, 64)
	if err != nil || n < 0 || strings.HasPrefix(first, "+") {
		return 0, fmt.Errorf("malformed Content-Length %.40q", first)
	}
	return n, nil
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), token) {
				return true
			}
		}
	}
	return false
}

// directBody is an answer's body: read to its end, it gives the
// connection back for the next request; closed before, it closes it.
type directBody struct {
	t    *directTransport
	key  string
	c    *directConn
	r    io.Reader
	stop func() bool
	keep bool
	ctx  context.Context

	// reading is held while a Read reads: Close reads the rest only when
	// no Read does.
	reading        sync.Mutex
	mu             sync.Mutex
	finished, shut bool
}

var errBodyClosed = errors.New("read on a closed response body")

func (b *directBody) Read(p []byte) (int, error) {
	b.reading.Lock()
	defer b.reading.Unlock()
	b.mu.Lock()
	finished, shut := b.finished, b.shut
	b.mu.Unlock()
	switch {
	case finished:
		return 0, io.EOF
	case shut:
		return 0, errBodyClosed
	}
	n, err := b.r.Read(p)
	switch {
	case err == io.EOF:
		b.finish()
	case err != nil:
		b.shutDown()
	}
	return n, err
}

// finish is the body read to its end: the connection serves again, unless
// the server said it would not, the request was cancelled meanwhile, or
// the server sent more than the body.
func (b *directBody) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shut || b.finished {
		return
	}
	b.finished = true
	if b.stop() && b.keep && b.c.quiet() {
		b.t.putIdle(b.key, b.c)
		return
	}
	b.c.Close()
}

// Close may come from another goroutine while Read waits: closing the
// connection is what ends that wait. Otherwise the rest of the body, if it
// has come, is read first, so that the connection serves again.
func (b *directBody) Close() error {
	if b.reading.TryLock() {
		b.readWhatCame()
		b.reading.Unlock()
	}
	return b.shutDown()
}

func (b *directBody) shutDown() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shut || b.finished {
		return nil
	}
	b.shut = true
	b.stop()
	return b.c.Close()
}

// readWhatCame reads the rest of the body while it is already there: an
// event stream is left at its last event, and the server's end of the
// body follows it at once; waiting on the next turn's request for a new
// connection, over TLS a new handshake, costs more. Nothing is waited for
// that has not begun to come, and a server that sends part of what is
// left and stops holds Close for drainWait at most.
func (b *directBody) readWhatCame() {
	b.mu.Lock()
	done := b.finished || b.shut
	b.mu.Unlock()
	if done || !b.keep || b.ctx.Err() != nil {
		return
	}
	b.c.setReadDeadline(time.Now().Add(drainWait))
	ended := false
	var buf [512]byte
	for n := 0; n < maxDrain && !b.c.quiet(); {
		m, err := b.r.Read(buf[:])
		n += m
		if err != nil {
			ended = err == io.EOF
			break
		}
	}
	// Put back before finish: after it, the connection may be another
	// request's.
	b.c.setReadDeadline(time.Time{})
	if ended {
		b.finish()
	}
}

// lengthReader is a body of a known length.
type lengthReader struct {
	r    io.Reader
	left int64
}

func (l *lengthReader) Read(p []byte) (int, error) {
	if l.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if err == io.EOF && l.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && l.left == 0 {
		err = io.EOF
	}
	return n, err
}

// chunkedReader is a body in chunks (RFC 9112, section 7.1). Trailers are
// read and dropped. A read gives what has come without waiting for more:
// a stream's event must not wait for the line end after its chunk, the
// next chunk's size, or the trailers.
type chunkedReader struct {
	r        *bufio.Reader
	left     int64 // of the chunk being read
	checkEnd bool  // a chunk's data is read; its line end is not
	trailers int   // trailer lines read, once the last chunk has come
	last     bool  // the last chunk has come
	done     bool
}

var errMalformedChunk = errors.New("malformed chunked encoding")

func (cr *chunkedReader) Read(p []byte) (n int, err error) {
	for {
		switch {
		case cr.checkEnd:
			if n > 0 && cr.r.Buffered() < 2 {
				return n, nil
			}
			line, err := cr.line()
			if err != nil {
				return n, err
			}
			if len(line) != 0 {
				return n, errMalformedChunk
			}
			cr.checkEnd = false
		case cr.done:
			return n, io.EOF
		case cr.left == 0:
			if n > 0 && !cr.lineBuffered() {
				return n, nil
			}
			if err := cr.next(); err != nil {
				return n, err
			}
		case n == len(p):
			return n, nil
		default:
			q := p[n:]
			if int64(len(q)) > cr.left {
				q = q[:cr.left]
			}
			m, err := cr.r.Read(q)
			n += m
			cr.left -= int64(m)
			if err == io.EOF {
				return n, io.ErrUnexpectedEOF
			}
			if err != nil || cr.left > 0 {
				return n, err
			}
			cr.checkEnd = true
		}
	}
}

func (cr *chunkedReader) lineBuffered() bool {
	buf, _ := cr.r.Peek(cr.r.Buffered())
	return bytes.IndexByte(buf, '\n') >= 0
}

// next reads the next line between chunks: a chunk's size line, or after
// the last chunk a trailer line.
func (cr *chunkedReader) next() error {
	line, err := cr.line()
	if err != nil {
		return err
	}
	if cr.last {
		cr.trailers++
		switch {
		case len(line) == 0:
			cr.done = true
		case cr.trailers > maxTrailerLines:
			return errMalformedChunk
		}
		return nil
	}
	size, _, _ := bytes.Cut(line, []byte(";"))
	size = bytes.TrimRight(size, " \t")
	n, err := strconv.ParseUint(string(size), 16, 63)
	if err != nil || len(size) == 0 || size[0] == '+' {
		return errMalformedChunk
	}
	cr.left = int64(n)
	cr.last = n == 0
	return nil
}

// line is the next line without its line end, refused past maxChunkLine.
func (cr *chunkedReader) line() ([]byte, error) {
	line, err := cr.r.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		return nil, errMalformedChunk
	case err == io.EOF:
		return nil, io.ErrUnexpectedEOF
	case err != nil:
		return nil, err
	}
	line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
	return line, nil
}
