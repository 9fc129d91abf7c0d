package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// Text from outside zot — a model, a tool, a file, an extension, a hook, a
// validator, a server — passes through this file on its way to a terminal
// or a bounded field. There is one sanitiser (sanitize for whole text,
// sanitizer for text that arrives in pieces) and one cut (utf8Prefix, and
// truncate, which marks it). zot's renderer is the only code that writes
// escape sequences; nothing that leaves here holds one.
//
// Files from outside — a repository's configuration and context files —
// are read here too (readUntrustedFile, readUntrustedDir): bounded in
// size and time, and never a FIFO or a device that could hang zot or
// fill its memory; so are the bodies of the OAuth servers' answers
// (readUntrustedBody).
//
// Lines of the protocols zot speaks — extension frames, MCP stdio, rpc
// requests, server-sent events, session rows — are split by one reader,
// lineReader, whose caller says what an over-long line does (overLong),
// and their JSON is read by one strict decoder, decodeStrictJSON.

// sanitize returns s safe to write to a terminal, keeping line breaks and
// tabs; sanitizer says what becomes of the rest.
func sanitize(s string) string {
	var c sanitizer
	return c.text(s)
}

// sanitizer cleans untrusted text for a terminal a line at a time, the
// line arriving whole or in pieces. In what it returns:
//
//   - a colour sequence (SGR, such as ESC [ 3 1 m) is dropped;
//   - every other escape sequence — CSI, OSC (title, clipboard, hyperlink),
//     DCS, APC, PM, SOS, two-byte escapes, and the 8-bit forms that begin
//     with U+009B, U+009D, U+0090, U+009F, U+009E or U+0098 — becomes one
//     visible ␛, and the rest of the sequence goes with it; a string
//     sequence (OSC, DCS, APC, PM, SOS) ends at BEL, ESC \ or the end of the
//     line, whichever comes first;
//   - a carriage return that ends the line (as in "\r\n") is dropped, any
//     other shows as ␍, so it cannot hide the text before it;
//   - other C0 controls and DEL show as their pictures (␀, ␇, ␡);
//   - other C1 controls, the bidirectional controls (U+061C, U+200E,
//     U+200F, U+202A–U+202E, U+2066–U+2069) and each byte of invalid UTF-8
//     show as U+FFFD; U+2028 and U+2029 become spaces; U+FEFF is dropped;
//   - a tab is kept, or, when width is set, becomes spaces up to the next
//     multiple of tabWidth columns, each rune measured by width.
//
// So the result is valid UTF-8 with no escape and no control character but
// the tabs kept, and cleaning it again changes nothing. The sanitizer holds
// back only what depends on bytes still to come — an escape sequence not
// yet ended, a carriage return, part of a character — so what write returns
// is final.
type sanitizer struct {
	width func(rune) int // of a rune in columns; set when tabs become spaces

	col   int // columns so far, for tab stops
	esc   escState
	sgr   bool // the control sequence so far may be a colour sequence
	cr    bool
	part  [utf8.UTFMax]byte // a character begun: its first nPart bytes
	nPart int
}

// tabWidth is the distance between tab stops when tabs become spaces.
const tabWidth = 4

type escState uint8

const (
	escNone      escState = iota
	escStart              // ESC
	escShort              // ESC and intermediate bytes
	escCSI                // ESC [ (or U+009B) and parameter bytes
	escCSIMid             // … and intermediate bytes
	escString             // OSC, DCS, APC, PM or SOS: up to BEL or ESC \
	escStringEsc          // … and an ESC
)

// text cleans the whole of s, line by line. The sanitizer must be fresh,
// or just ended.
func (c *sanitizer) text(s string) string {
	if c.plain(s) {
		return s
	}
	b := make([]byte, 0, len(s))
	for {
		line, rest, more := strings.Cut(s, "\n")
		b = c.end(c.write(b, line))
		if !more {
			return string(b)
		}
		b = append(b, '\n')
		s = rest
	}
}

// plain reports whether s comes out of text as it went in.
func (c *sanitizer) plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; (b < 0x20 || b >= 0x7f) && b != '\n' && (b != '\t' || c.width != nil) {
			return false
		}
	}
	return true
}

// write appends the clean text that raw, the next piece of the line (it
// holds no "\n"), decides.
func (c *sanitizer) write(dst []byte, raw string) []byte {
	for i := 0; i < len(raw); i++ {
		dst = c.byte(dst, raw[i])
	}
	return dst
}

// end appends what the line's last bytes mean now that it is over, and
// readies the sanitizer for the next line.
func (c *sanitizer) end(dst []byte) []byte {
	switch c.esc {
	case escStringEsc:
		dst = utf8.AppendRune(dst, '␛')
		fallthrough
	case escStart, escShort, escCSI, escCSIMid, escString:
		dst = utf8.AppendRune(dst, '␛')
	}
	for range c.nPart {
		dst = utf8.AppendRune(dst, utf8.RuneError) // each byte of a cut character
	}
	*c = sanitizer{width: c.width}
	return dst
}

func (c *sanitizer) byte(dst []byte, b byte) []byte {
	if c.nPart > 0 || (b >= 0x80 && c.esc == escNone && !c.cr) {
		c.part[c.nPart] = b
		c.nPart++
		if !utf8.FullRune(c.part[:c.nPart]) {
			return dst
		}
		r, size := utf8.DecodeRune(c.part[:c.nPart])
		dst = c.rune(dst, r)
		rest, n := c.part, c.nPart // a copy: reading it may begin another character
		c.nPart = 0
		for _, b := range rest[size:n] {
			dst = c.byte(dst, b)
		}
		return dst
	}
	switch c.esc {
	case escStart:
		switch {
		case b == '[':
			c.esc, c.sgr = escCSI, true
			return dst
		case b == ']' || b == 'P' || b == '_' || b == '^' || b == 'X':
			c.esc = escString
			return dst
		case b >= 0x20 && b <= 0x2f:
			c.esc = escShort
			return dst
		}
		return c.escEnd(dst, b, b >= 0x30 && b <= 0x7e)
	case escShort:
		if b >= 0x20 && b <= 0x2f {
			return dst
		}
		return c.escEnd(dst, b, b >= 0x30 && b <= 0x7e)
	case escCSI, escCSIMid:
		switch {
		case c.esc == escCSI && b >= 0x30 && b <= 0x3f:
			c.sgr = c.sgr && (b <= '9' || b == ';' || b == ':')
			return dst
		case b >= 0x20 && b <= 0x2f:
			c.esc, c.sgr = escCSIMid, false
			return dst
		case b >= 0x40 && b <= 0x7e:
			if b == 'm' && c.sgr {
				c.esc = escNone
				return dst
			}
			return c.escEnd(dst, b, true)
		}
		return c.escEnd(dst, b, false)
	case escString:
		switch b {
		case 0x07:
			return c.escEnd(dst, b, true)
		case 0x1b:
			c.esc = escStringEsc
		}
		return dst
	case escStringEsc:
		if b == '\\' {
			return c.escEnd(dst, b, true)
		}
		// The string ended at the ESC, which begins a new sequence.
		dst = c.picture(dst, '␛')
		c.esc = escStart
		return c.byte(dst, b)
	}
	if c.cr {
		c.cr = false
		dst = c.picture(dst, '␍')
	}
	switch {
	case b == '\t' && c.width == nil:
		return append(dst, b)
	case b == '\t':
		n := tabWidth - c.col%tabWidth
		c.col += n
		return append(dst, "    "[:n]...)
	case b == '\r':
		c.cr = true
		return dst
	case b == 0x1b:
		c.esc = escStart
		return dst
	case b < 0x20:
		return c.picture(dst, 0x2400+rune(b))
	case b == 0x7f:
		return c.picture(dst, '␡')
	case b >= 0x80:
		return c.byte(dst, b) // a character begins after a picture
	}
	c.col++
	return append(dst, b)
}

// escEnd ends an escape sequence with ␛; b, the byte after it, is part of
// the sequence when used, else it is read again on its own.
func (c *sanitizer) escEnd(dst []byte, b byte, used bool) []byte {
	c.esc = escNone
	dst = c.picture(dst, '␛')
	if used {
		return dst
	}
	return c.byte(dst, b)
}

func (c *sanitizer) picture(dst []byte, r rune) []byte {
	c.col++
	return utf8.AppendRune(dst, r)
}

func (c *sanitizer) rune(dst []byte, r rune) []byte {
	switch {
	case r == 0x9b: // CSI
		c.esc, c.sgr = escCSI, true
		return dst
	case r == 0x9d, r == 0x90, r == 0x9f, r == 0x9e, r == 0x98: // OSC, DCS, APC, PM, SOS
		c.esc = escString
		return dst
	case r == utf8.RuneError || r < 0xa0 || isBidiControl(r):
		return c.picture(dst, utf8.RuneError)
	case r == 0xfeff:
		return dst
	case r == 0x2028 || r == 0x2029:
		c.col++
		return append(dst, ' ')
	}
	if c.width != nil {
		c.col += c.width(r)
	}
	return utf8.AppendRune(dst, r)
}

// isBidiControl reports the characters that reorder text on screen: the
// Arabic letter mark, the left-to-right and right-to-left marks, the
// embeddings and overrides, and the isolates. Shown raw they can make a
// command or a line of code read differently from what it is.
func isBidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// ellipsis marks the place where truncate cut.
const ellipsis = "…"

// truncate returns s cut to at most n bytes: the cut never splits a
// character and ends in "…", which counts toward the n bytes, so a cut text
// is told from a whole one. Under 3 bytes there is no room for the mark and
// the cut is bare. Bytes before the cut are not checked: sanitize what is
// to be shown.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < len(ellipsis) {
		return utf8Prefix(s, n)
	}
	return utf8Prefix(s, n-len(ellipsis)) + ellipsis
}

// utf8Prefix returns the longest prefix of s of at most n bytes that does
// not end inside a character: one split by this cut, or by an earlier one
// that made s (a capture buffer that filled up), is left out whole. It adds
// no mark; truncate does.
func utf8Prefix[T ~string | ~[]byte](s T, n int) T {
	s = s[:max(0, min(n, len(s)))]
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(string(s[i:])) {
				s = s[:i]
			}
			break
		}
	}
	return s
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// untrustedReadTime bounds the reading of one file from outside: a
// regular file on a slow or hostile file system must not hold zot's
// start-up.
const untrustedReadTime = 5 * time.Second

// readUntrustedFile reads a file that zot does not control — a
// repository's .mcp.json, validators.json, extension.json, settings,
// skills, templates, context files: a regular file only, at most limit
// bytes, within untrustedReadTime. A FIFO, a device or a socket is
// refused with the file named, never waited on nor read: the type is
// looked at before the open, the open does not block, and what was
// opened is checked again. A missing file is an error that satisfies
// errors.Is(err, fs.ErrNotExist). The time limit is checked between
// reads: a single read that a hung network file system never answers
// is not cut short.
func readUntrustedFile(path string, limit int64) ([]byte, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s: %w", path, pathErrorReason(err))
	} else if err := wantRegular(path, st); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, pathErrorReason(err))
	}
	defer f.Close()
	return readUntrustedOpen(f, path, limit)
}

// readUntrustedBody reads an HTTP body from a server zot does not
// control — an authorization server's answer, a metadata document — up
// to limit bytes; a longer one is an error, never read on. How long the
// read may take is the request's context's to bound.
func readUntrustedBody(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read the answer: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("the answer is larger than %d bytes", limit)
	}
	return b, nil
}

// readUntrustedOpen is readUntrustedFile for a file already opened (by
// the file tools' checked open); name is how errors call it.
func readUntrustedOpen(f *os.File, name string, limit int64) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, pathErrorReason(err))
	}
	if err := wantRegular(name, st); err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d zot reads of it", name, st.Size(), limit)
	}
	deadline := time.Now().Add(untrustedReadTime)
	out := make([]byte, 0, min(st.Size(), limit)+1)
	chunk := make([]byte, 32<<10)
	r := io.LimitReader(f, limit+1)
	for {
		n, err := r.Read(chunk)
		out = append(out, chunk[:n]...)
		switch {
		case int64(len(out)) > limit:
			return nil, fmt.Errorf("%s: more than the %d bytes zot reads of it", name, limit)
		case err == io.EOF:
			return out, nil
		case err != nil:
			return nil, fmt.Errorf("%s: %w", name, pathErrorReason(err))
		case time.Now().After(deadline):
			return nil, fmt.Errorf("%s: not read within %s", name, untrustedReadTime)
		}
	}
}

// wantRegular refuses what is not a regular file, naming what it is.
func wantRegular(name string, st fs.FileInfo) error {
	if st.Mode().IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch m := st.Mode(); {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a FIFO"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("%s: %s, not a regular file (zot does not read it)", name, what)
}

// pathErrorReason is the reason of an *fs.PathError without the
// operation and path it repeats.
func pathErrorReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readUntrustedDir lists a directory that zot does not control, sorted
// by name, as os.ReadDir does — but a FIFO in its place is refused, not
// waited on.
func readUntrustedDir(path string) ([]fs.DirEntry, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err // ENOTDIR for a FIFO, which is not opened
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, err
}

// overLong is what a lineReader does with a line longer than its bound.
// Each caller chooses one; none writes its own.
type overLong uint8

const (
	// overLongFail ends the stream: next returns a *lineTooLongError at
	// once, without reading the rest of the line, and the same error after.
	// For a stream whose lines depend on each other (an event stream).
	overLongFail overLong = iota
	// overLongSkip reads the line to its end without keeping it: next
	// returns a *lineTooLongError for it and goes on with the line after.
	// For independent messages, where the sender learns of the loss.
	overLongSkip
)

// lineTooLongError is a line over a lineReader's bound.
type lineTooLongError struct {
	line int // 1-based
	max  int
}

func (e *lineTooLongError) Error() string {
	return fmt.Sprintf("line %d is longer than %d bytes", e.line, e.max)
}

// isLineTooLong reports whether err is a lineReader's over-long line.
func isLineTooLong(err error) bool {
	if err == nil {
		return false // without the allocation errors.As makes
	}
	var e *lineTooLongError
	return errors.As(err, &e)
}

// lineReader splits outside input into lines of at most max bytes, not
// counting the "\n" that ends one. Only "\n" ends a line: a "\r" before it
// is part of the line, for the caller to trim if its protocol says so. A
// last line without "\n" still counts. Memory is bounded by max whatever
// the input: an over-long line is never held whole.
type lineReader struct {
	br     *bufio.Reader
	max    int
	policy overLong
	buf    []byte
	err    error // sticky: io.EOF, a read error, or a failed stream

	lines      int   // lines read so far, over-long ones included
	consumed   int64 // bytes read so far, newlines included
	terminated bool  // the last line returned ended in "\n"
}

func newLineReader(r io.Reader, max int, policy overLong) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, min(16<<10, max+1)), max: max, policy: policy}
}

// next returns the next line, valid until the next call; io.EOF after the
// last. A read error ends the stream, the line it cut short dropped.
func (lr *lineReader) next() ([]byte, error) {
	if lr.err != nil {
		return nil, lr.err
	}
	if cap(lr.buf) > 1<<20 {
		lr.buf = nil // a big line's buffer is not kept for the small ones after it
	}
	lr.buf = lr.buf[:0]
	tooLong := false
	for {
		chunk, err := lr.br.ReadSlice('\n')
		lr.consumed += int64(len(chunk))
		if !tooLong {
			lr.buf = lr.grow(len(chunk))
			lr.buf = append(lr.buf, chunk...)
			nl := 0
			if err == nil {
				nl = 1
			}
			if len(lr.buf)-nl > lr.max {
				lr.lines++
				tooLong, lr.buf = true, lr.buf[:0]
				if lr.policy == overLongFail {
					lr.err = &lineTooLongError{lr.lines, lr.max}
					return nil, lr.err
				}
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && !errors.Is(err, io.EOF):
			lr.err = err
			return nil, err
		case tooLong:
			return nil, &lineTooLongError{lr.lines, lr.max} // at EOF the next call says so
		case err != nil && len(lr.buf) == 0:
			lr.err = io.EOF
			return nil, io.EOF
		}
		lr.lines++
		lr.terminated = err == nil
		if lr.terminated {
			return lr.buf[:len(lr.buf)-1], nil
		}
		lr.err = io.EOF
		return lr.buf, nil
	}
}

// grow makes room in buf for n more bytes, doubling it: append grows a
// big slice by a quarter at a time, and a 64 MiB line (an RPC prompt with
// images) then costs 300 MB of fresh memory, copied and zeroed, against
// 128 MB doubled. It never makes room for more than max+1 bytes (a line
// and its "\n") that the line does not already need.
func (lr *lineReader) grow(n int) []byte {
	need := len(lr.buf) + n
	if need <= cap(lr.buf) {
		return lr.buf
	}
	size := max(need, min(2*cap(lr.buf), lr.max+1))
	return slices.Grow(lr.buf, size-len(lr.buf))
}

// inputLine is one line of a protocol's input as sendLines hands it on:
// a copy of its bytes, or tooLong for a line over the bound, which was
// skipped; err (io.EOF or a read error) comes with the last one.
type inputLine struct {
	data    []byte
	tooLong bool
	err     error
}

// sendLines sends r's lines, split on \n only, until r ends or quit
// closes: the reader goroutine of a protocol served on stdin (rpc, acp).
// A line over max is skipped (the caller tells the client) and the next
// one read.
func sendLines(r io.Reader, max int, lines chan<- inputLine, quit <-chan struct{}) {
	lr := newLineReader(r, max, overLongSkip)
	for {
		data, err := lr.next()
		l := inputLine{data: bytes.Clone(data), err: err}
		if isLineTooLong(err) {
			l = inputLine{tooLong: true}
		}
		select {
		case lines <- l:
		case <-quit:
			return
		}
		if l.err != nil {
			return
		}
	}
}

// decodeStrictJSON decodes data, one JSON value from outside zot, into v,
// a pointer. Strict means, beyond encoding/json:
//
//   - data is one value: anything but white space after it is an error;
//   - in the top-level object, a key given twice is an error (encoding/json
//     would let the last win, so two readers could see two values);
//   - a top-level key that names one of v's fields only when case is
//     folded ("Type" for "type") is an error (encoding/json would take it
//     for the field).
//
// known adds field names to check case against when v is a map or a
// json.RawMessage. As with encoding/json, fields of the wrong type leave an
// error while the others are still decoded, so a caller can name what it
// could read (an id to answer); a key error is returned before a type
// error. Nested objects are read by encoding/json's rules: their keys are
// the protocol's payload, which the receiving code checks.
func decodeStrictJSON(data []byte, v any, known ...string) error {
	uerr := json.Unmarshal(data, v)
	var syntax *json.SyntaxError
	if errors.As(uerr, &syntax) {
		return fmt.Errorf("invalid JSON: %w", uerr)
	}
	if kerr := checkTopLevelKeys(data, append(jsonFieldNames(v), known...)); kerr != nil {
		return kerr
	}
	return uerr
}

// checkTopLevelKeys finds, in data (valid JSON), a top-level key given
// twice or one that matches a known name only when case is folded. It
// scans the bytes once and keeps only the keys, so a large value (a
// session row with images) costs no copy.
func checkTopLevelKeys(data []byte, known []string) error {
	var seen []string
	var set map[string]bool // once there are many keys
	var problem error
	scanTopLevelKeys(data, func(key string) bool {
		dup := false
		if set != nil {
			dup = set[key]
			set[key] = true
		} else {
			dup = slices.Contains(seen, key)
			seen = append(seen, key)
			if len(seen) > 16 {
				set = map[string]bool{}
				for _, k := range seen {
					set[k] = true
				}
			}
		}
		if dup {
			problem = fmt.Errorf("field %q appears more than once; send each field once", key)
			return false
		}
		for _, name := range known {
			if key != name && strings.EqualFold(key, name) {
				problem = fmt.Errorf("field %q: field names are case-sensitive; write %q", key, name)
				return false
			}
		}
		return true
	})
	return problem
}

// scanTopLevelKeys calls fn with each key of data's top-level object, in
// order, until fn returns false. data must be valid JSON; a value that is
// not an object has no keys.
func scanTopLevelKeys(data []byte, fn func(key string) bool) {
	depth, wantKey := 0, false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			start, escaped := i, false // escaped: the key needs encoding/json to read it
			for i++; i < len(data) && data[i] != '"'; i++ {
				switch {
				case data[i] == '\\':
					escaped = true
					i++
				case data[i] >= 0x80:
					escaped = true // read as encoding/json does, invalid UTF-8 and all
				}
			}
			if depth != 1 || !wantKey {
				continue
			}
			wantKey = false
			key := string(data[start+1 : min(i, len(data))])
			if escaped && json.Unmarshal(data[start:min(i+1, len(data))], &key) != nil {
				return
			}
			if !fn(key) {
				return
			}
		case '{', '[':
			if depth == 0 && c == '[' {
				return
			}
			depth++
			wantKey = depth == 1
		case '}', ']':
			depth--
		case ',':
			wantKey = depth == 1
		}
	}
}

// strictObjectKeys checks data as decodeStrictJSON says and returns the
// members of its top-level object by key (nil when data is not an object
// or not valid JSON, with the error). A key error comes with the members.
func strictObjectKeys(data []byte, known []string) (map[string]json.RawMessage, error) {
	if !json.Valid(data) {
		var v any
		return nil, fmt.Errorf("invalid JSON: %w", json.Unmarshal(data, &v))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return nil, nil
	}
	fields := map[string]json.RawMessage{}
	var problem error
	for dec.More() {
		tok, err := dec.Token()
		key, _ := tok.(string)
		var value json.RawMessage
		if err == nil {
			err = dec.Decode(&value)
		}
		if err != nil { // json.Valid passed: not expected, but not trusted either
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		if _, seen := fields[key]; seen {
			if problem == nil {
				problem = fmt.Errorf("field %q appears more than once; send each field once", key)
			}
			continue
		}
		for _, name := range known {
			if key != name && strings.EqualFold(key, name) && problem == nil {
				problem = fmt.Errorf("field %q: field names are case-sensitive; write %q", key, name)
			}
		}
		fields[key] = value
	}
	return fields, problem
}

// jsonFieldNames are the top-level JSON names of the struct v points to,
// embedded structs' included; none for other types.
func jsonFieldNames(v any) []string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	if names, ok := jsonFieldNamesOf.Load(t); ok {
		return names.([]string)
	}
	names := structJSONNames(t)
	jsonFieldNamesOf.Store(t, names)
	return names
}

// jsonFieldNamesOf caches jsonFieldNames by type: protocols decode the
// same few types for every line.
var jsonFieldNamesOf sync.Map

func structJSONNames(t reflect.Type) []string {
	var names []string
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case tag == "-":
			case f.Anonymous && tag == "" && ft.Kind() == reflect.Struct:
				walk(ft)
			case !f.IsExported():
			case tag != "":
				names = append(names, tag)
			default:
				names = append(names, f.Name)
			}
		}
	}
	walk(t)
	return slices.Clip(names)
}

func isJSONObject(raw json.RawMessage) bool {
	s := strings.TrimLeft(string(raw), " \t\r\n")
	return strings.HasPrefix(s, "{")
}

// lazyRegexp compiles expr on first use: zot's patterns are many and most
// runs use few of them, and compiling them all at start cost a tenth of
// the memory `zot --version` touched.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
