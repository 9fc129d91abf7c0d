package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// sanitizeCases are what an attacker puts in text that reaches a terminal,
// and what the user must see instead.
var sanitizeCases = []struct{ in, want string }{
	{"plain text\nline", "plain text\nline"},
	{"tab\there", "tab\there"},
	{"\x1b[31mred\x1b[0m \x1b[38:5:1mtoo\x1b[m", "red too"},
	{"\x1b]0;title\x07after", "␛after"},
	{"\x1b]52;c;cHduZWQ=\x1b\\after", "␛after"},
	{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "␛link␛"},
	{"\x1bP1$r\x1b\\dcs", "␛dcs"},
	{"\x1b_Gf=100;AAAA\x1b\\apc", "␛apc"},
	{"\x1b^pm\x07 \x1bXsos\x07", "␛ ␛"},
	{"\x1b[2J\x1b[Hhome", "␛␛home"},
	{"\x1b[?1049h\x1b[1 q\x1b[>4;1m", "␛␛␛"},
	{"\x1b7saved\x1b8 \x1b(Bcharset \x1bc", "␛saved␛ ␛charset ␛"},
	{"unterminated \x1b]0;title", "unterminated ␛"},
	{"x\x1b]0;t\ny", "x␛\ny"}, // a line break ends a string sequence
	{"\x1b", "␛"},
	{"8-bit \u009b31mcolour\u009b0m \u009b2J", "8-bit colour ␛"},
	{"\u009d52;c;aGk=\u0007x \u009d0;t\x1b\\y", "␛x ␛y"},
	{"\u0090d\x07a \u009fe\x07b \u009ef\x07c \u0098g\x07d", "␛a ␛b ␛c ␛d"},
	{"raw \x9b31m", "raw \uFFFD31m"}, // not UTF-8: no terminal in UTF-8 mode reads it as CSI
	{"c1 \u0085nel \u008dri \u009cst", "c1 \uFFFDnel \uFFFDri \uFFFDst"},
	{"bad\rgood", "bad␍good"},
	{"crlf\r\nline\r", "crlf\nline"},
	{"bell\a nul\x00 bs\b del\x7f", "bell␇ nul␀ bs␈ del␡"},
	{"bidi \u202eevil\u202c", "bidi \uFFFDevil\uFFFD"},
	{"\u061c\u200e\u200f\u202a\u202b\u202d\u2066\u2067\u2068\u2069", strings.Repeat("\uFFFD", 10)},
	{"bad utf8 \xff\xfe, cut \xe6\x97", "bad utf8 \uFFFD\uFFFD, cut \uFFFD\uFFFD"},
	{"\ufeffbom a\u2028b\u2029c", "bom a b c"},
	{"emoji 🎉 zwj 👨\u200d👩 e\u0301", "emoji 🎉 zwj 👨\u200d👩 e\u0301"},
}

func TestSanitizeShowsNothingATerminalWouldAct(t *testing.T) {
	t.Parallel()
	for _, c := range sanitizeCases {
		if got := sanitize(c.in); got != c.want {
			t.Errorf("sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTruncateKeepsCharactersWholeWithinTheBudget(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello world", 8, "hello…"},
		{"日本語", 8, "日…"},
		{"日本語", 6, "日…"},
		{"日本語", 5, "…"},
		{"abc", 2, "ab"},
		{"日本", 2, ""},
		{"x", -1, ""},
		{"", 0, ""},
	}
	for _, c := range cases {
		if got := truncate(c.in, c.n); got != c.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestUTF8PrefixDropsACharacterCutBefore(t *testing.T) {
	t.Parallel()
	if got := utf8Prefix([]byte("ab日"), 4); string(got) != "ab" {
		t.Errorf("cut inside 日: %q", got)
	}
	if got := utf8Prefix("ab\xe6\x97", 10); got != "ab" {
		t.Errorf("a character an earlier cut split: %q", got)
	}
	if got := utf8Prefix("ab\xff", 10); got != "ab\xff" {
		t.Errorf("an invalid byte is no cut character: %q", got)
	}
}

// checkTerminalSafe fails unless s is valid UTF-8 holding no escape, no
// control character but "\n" and tabs (when tabs), and no bidirectional
// control.
func checkTerminalSafe(t *testing.T, in, s string, tabs bool) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("%q → %q: not valid UTF-8", in, s)
	}
	for _, r := range s {
		switch {
		case r == '\n', r == '\t' && tabs:
		case r < 0x20, r >= 0x7f && r < 0xa0:
			t.Fatalf("%q → %q: control character %U", in, s, r)
		case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			t.Fatalf("%q → %q: bidirectional control %U", in, s, r)
		}
	}
}

// FuzzSanitize: whatever comes in, what comes out is safe for a terminal,
// the same whole or in pieces, and the same when cleaned again; a
// truncation of it or of the raw text stays within its budget and never
// splits a character.
func FuzzSanitize(f *testing.F) {
	for i, c := range sanitizeCases {
		f.Add(c.in, i, i*7-3)
	}
	f.Add("\x1b[\x1b]\x1bP\x1b\x1b\\\u009b\u009d\r\r\n\xf0\x9f\x8e", 2, 5)
	f.Fuzz(func(t *testing.T, s string, piece, n int) {
		out := sanitize(s)
		checkTerminalSafe(t, s, out, true)
		if again := sanitize(out); again != out {
			t.Fatalf("sanitize(%q) = %q, cleaned again %q", s, out, again)
		}
		step := 1 + (piece&0xff)%9
		for _, width := range []func(rune) int{nil, func(rune) int { return 1 }} {
			c := sanitizer{width: width}
			var b []byte
			for i, line := range strings.Split(s, "\n") {
				if i > 0 {
					b = append(b, '\n')
				}
				for len(line) > 0 {
					k := min(step, len(line))
					b = c.write(b, line[:k])
					line = line[k:]
				}
				b = c.end(b)
			}
			if width == nil && string(b) != out {
				t.Fatalf("%q in pieces of %d = %q, whole %q", s, step, b, out)
			}
			checkTerminalSafe(t, s, string(b), width == nil)
		}

		budget := n % (len(s) + 8)
		for _, text := range []string{s, out} {
			cut := truncate(text, budget)
			if len(text) <= budget {
				if cut != text {
					t.Fatalf("truncate(%q, %d) = %q: cut a text within its budget", text, budget, cut)
				}
				continue
			}
			if len(cut) > max(budget, 0) {
				t.Fatalf("truncate(%q, %d) = %q: over the budget", text, budget, cut)
			}
			if utf8.ValidString(text) && !utf8.ValidString(cut) {
				t.Fatalf("truncate(%q, %d) = %q: split a character", text, budget, cut)
			}
			head, room := cut, max(budget, 0)
			if budget >= len(ellipsis) {
				var marked bool
				if head, marked = strings.CutSuffix(cut, ellipsis); !marked {
					t.Fatalf("truncate(%q, %d) = %q: the cut is not marked", text, budget, cut)
				}
				room -= len(ellipsis)
			}
			if !strings.HasPrefix(text, head) || utf8.ValidString(text) && len(head) < room-(utf8.UTFMax-1) {
				t.Fatalf("truncate(%q, %d) = %q: not the longest whole prefix", text, budget, cut)
			}
		}
	})
}

// BenchmarkSanitize is the cost per byte of cleaning plain text (the fast
// path) and text full of escapes, controls and non-ASCII characters.
func BenchmarkSanitize(b *testing.B) {
	plain := strings.Repeat("go test -count=1 ./... # plain ASCII output\n", 100)
	var hostile strings.Builder
	for _, c := range sanitizeCases {
		hostile.WriteString(c.in)
	}
	for _, c := range []struct{ name, text string }{{"plain", plain}, {"hostile", strings.Repeat(hostile.String(), 4)}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sanitize(c.text)
			}
		})
	}
}

func TestReadUntrustedFileRefusesWhatIsNotABoundedRegularFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	os.WriteFile(path("ok"), []byte("fine"), 0o644)
	os.WriteFile(path("big"), make([]byte, 101), 0o644)
	syscall.Mkfifo(path("fifo"), 0o644)
	os.Symlink("/dev/zero", path("zero"))
	os.Mkdir(path("dir"), 0o755)
	ln, err := net.Listen("unix", path("sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for name, want := range map[string]string{
		"ok":      "",
		"big":     "101 bytes, more than the 100 zot reads of it",
		"fifo":    "a FIFO, not a regular file",
		"zero":    "a device, not a regular file",
		"dir":     "a directory, not a regular file",
		"sock":    "a socket, not a regular file",
		"missing": "no such file or directory",
	} {
		b, err := readUntrustedFile(path(name), 100)
		switch {
		case want == "" && (err != nil || string(b) != "fine"):
			t.Errorf("%s: %q, %v", name, b, err)
		case want != "" && (err == nil || !strings.HasPrefix(err.Error(), path(name)+": "+want)):
			t.Errorf("%s: error %v, want %q", name, err, want)
		}
	}
	if _, err := readUntrustedFile(path("missing"), 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file is not fs.ErrNotExist: %v", err)
	}
	if _, err := readUntrustedDir(path("fifo")); err == nil {
		t.Error("readUntrustedDir listed a FIFO")
	}
}

func TestLineReaderSplitsOnNewlineOnly(t *testing.T) {
	t.Parallel()
	input := "one\ntwo\r\n\u2028three\u2028\n" + strings.Repeat("x", 100) + "\nshort\n" + strings.Repeat("y", 50) + "\ntail"
	// One byte at a time, so no line arrives in one read.
	lr := newLineReader(iotest.OneByteReader(strings.NewReader(input)), 50, overLongSkip)
	var got []string
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		switch {
		case isLineTooLong(err):
			got = append(got, "TOO LONG: "+err.Error())
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, string(line))
		}
	}
	want := []string{"one", "two\r", "\u2028three\u2028", "TOO LONG: line 4 is longer than 50 bytes", "short", strings.Repeat("y", 50), "tail"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines = %q", got)
	}
	if lr.terminated || lr.consumed != int64(len(input)) {
		t.Errorf("terminated %v, consumed %d of %d", lr.terminated, lr.consumed, len(input))
	}
}

// endless is a line that never ends: a reader that holds it whole runs
// out of memory instead of failing.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	e.n += int64(len(p))
	return len(p), nil
}

func TestLineReaderFailPolicyStopsAtTheBound(t *testing.T) {
	t.Parallel()
	src := &endless{}
	lr := newLineReader(src, 1<<20, overLongFail)
	if _, err := lr.next(); !isLineTooLong(err) {
		t.Fatalf("err = %v", err)
	}
	if _, err := lr.next(); !isLineTooLong(err) {
		t.Fatalf("a failed stream went on: %v", err)
	}
	if src.n > 2<<20 {
		t.Errorf("read %d bytes of a stream bounded at 1 MiB", src.n)
	}
}

// TestOverLongLineGetsEachCallersPolicy feeds the same over-long line,
// then a good one, to every reader of outside lines. Each gets the policy
// it declares: MCP and rpc skip the line, report it and read the next; an
// event stream and a session file stop there. An extension skips it too,
// through a real extension (TestExtSkipsGarbageAndHugeLines).
func TestOverLongLineGetsEachCallersPolicy(t *testing.T) {
	t.Parallel()
	const max = 64
	long := strings.Repeat("x", max+1)

	t.Run("MCP stdio skips and logs", func(t *testing.T) {
		t.Parallel()
		logPath := filepath.Join(t.TempDir(), "mcp.log")
		log := openMCPLog(logPath)
		defer log.close()
		conn := newMCPConn("s", log)
		var mu sync.Mutex
		var got []string
		conn.onNotify = func(method string, _ json.RawMessage) {
			mu.Lock()
			got = append(got, method)
			mu.Unlock()
		}
		exited := make(chan error, 1)
		script := `printf '%s\n%s\n' "$1" '{"jsonrpc":"2.0","method":"after"}'`
		tr, err := startStdioMax("sh", "sh", []string{"-c", script, "sh", long}, nil, t.TempDir(), conn, log.file(), func(err error) { exited <- err }, max)
		if err != nil {
			t.Fatal(err)
		}
		<-exited
		tr.close(context.Background())
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(got, ",") != "after" {
			t.Fatalf("notifications %q", got)
		}
		if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "dropped a stdout line longer than 64 bytes") {
			t.Errorf("log = %q", b)
		}
	})
	t.Run("rpc skips and answers", func(t *testing.T) {
		t.Parallel()
		lines := make(chan inputLine, 4)
		sendLines(strings.NewReader(long+"\n"+`{"type":"ping"}`+"\n"), max, lines, nil)
		close(lines)
		var got []string
		for l := range lines {
			got = append(got, string(l.data)+"/"+map[bool]string{true: "too long"}[l.tooLong]+"/"+errString(l.err))
		}
		want := []string{"/too long/", `{"type":"ping"}//`, "//EOF"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("lines %q", got)
		}
	})
	t.Run("an event stream fails", func(t *testing.T) {
		t.Parallel()
		var events int
		err := readSSE(strings.NewReader("data: "+strings.Repeat("x", maxSSELine)+"\n\ndata: after\n\n"), func(sseEvent) error {
			events++
			return nil
		})
		if err == nil || err.Error() != "stream line longer than 16777216 bytes" || events != 0 {
			t.Errorf("err %v after %d events", err, events)
		}
	})
	t.Run("a session is refused whole", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "s.jsonl")
		body := `{"type":"meta","version":1,"id":"x"}` + "\n" + long + "\n" + `{"type":"model","model":"m"}` + "\n"
		_, err := scanSessionMax(path, strings.NewReader(body), max)
		want := "open session " + path + ": line 2 is longer than 64 bytes; zot reads no further and changes nothing"
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("err = %v", err)
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestStrictJSONRefusesWhatTwoReadersWouldReadTwoWays: a repeated key or a
// key that differs from a field's name only in case is an error for every
// protocol that decodes through decodeStrictJSON, and the fields that did
// decode are still there for the caller to answer with.
func TestStrictJSONRefusesWhatTwoReadersWouldReadTwoWays(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, err string }{
		{`{"type":"ready","id":"1"}`, ""},
		{`{"type":"ready","type":"hello","id":"1"}`, `field "type" appears more than once; send each field once`},
		{`{"type":"ready","TYPE":"hello","id":"1"}`, `field "TYPE": field names are case-sensitive; write "type"`},
		{`{"type":"ready","id":"1"} {}`, "invalid JSON: invalid character '{' after top-level value"},
		{`{"type":"ready","id":"1"`, "invalid JSON: unexpected end of JSON input"},
		{`{"type":7,"id":"1"}`, "json: cannot unmarshal number into Go struct field extMsg.type of type main.extFrame"},
	} {
		msg, err := decodeExtMsg([]byte(tt.in))
		if errString(err) != tt.err {
			t.Errorf("%s: err %q, want %q", tt.in, errString(err), tt.err)
		}
		if tt.err != "" && !strings.HasPrefix(tt.err, "invalid JSON") && msg.ID != "1" {
			t.Errorf("%s: the id was not kept to answer with", tt.in)
		}
	}
	// The same rules hold for an MCP message and a session row.
	if _, err := decodeRPC([]byte(`{"jsonrpc":"2.0","id":1,"result":{},"Result":{}}`)); err == nil || !strings.Contains(err.Error(), `field "Result": field names are case-sensitive; write "result"`) {
		t.Errorf("MCP: %v", err)
	}
	var row sessionRow
	if err := decodeStrictJSON([]byte(`{"type":"model","model":"a","model":"b"}`), &row); err == nil {
		t.Error("session row with a repeated key decoded")
	}
	var syntax *json.SyntaxError
	if err := decodeStrictJSON([]byte(`{"type":`), &row); !errors.As(err, &syntax) {
		t.Errorf("a torn row is not a syntax error: %v", err)
	}
}

// FuzzLineReader feeds arbitrary bytes through the one line reader, under
// each policy, and the extension decoder: lines come out exactly as a plain
// split on newlines says, an over-long one reported (skip) or ending the
// stream (fail), and nothing panics.
func FuzzLineReader(f *testing.F) {
	for _, s := range []string{
		`{"type":"hello","name":"x","version":"1","capabilities":["commands"]}` + "\n",
		`{"type":"register_tool","name":"t","schema":{"type":"object"}}` + "\n" + `{"type":"ready"}`,
		`{"type":"event_intercept_response","id":7,"block":true,"modified_args":{"a":1}}` + "\r\n",
		"not json\n\n[1,2]\n\"str\"\nnull\n",
		strings.Repeat("a", 300) + "\n" + `{"type":"ready"}` + "\n",
		"\r\r\n\n\r", "a\nb\r\n\nccc", "\u2028\n{}",
	} {
		f.Add([]byte(s), uint8(64), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, max uint8, fail bool) {
		if max == 0 {
			return
		}
		policy := overLongSkip
		if fail {
			policy = overLongFail
		}
		var want []string
		for _, piece := range bytes.SplitAfter(data, []byte("\n")) {
			if len(piece) == 0 {
				continue
			}
			line := bytes.TrimSuffix(piece, []byte("\n"))
			if len(line) > int(max) {
				want = append(want, "(too long)")
				if fail {
					break
				}
			} else {
				want = append(want, string(line))
			}
		}
		lr := newLineReader(bytes.NewReader(data), int(max), policy)
		var got []string
		for {
			line, err := lr.next()
			if isLineTooLong(err) {
				got = append(got, "(too long)")
				if fail {
					break
				}
				continue
			}
			if err != nil {
				break
			}
			got = append(got, string(line))
			if msg, err := decodeExtMsg(bytes.TrimRight(line, "\r")); err == nil && msg.Type == "" {
				t.Fatalf("decoded %q without a type", line)
			}
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("lines %q, want %q", got, want)
		}
	})
}

// FuzzStrictJSON: what decodeStrictJSON accepts, encoding/json reads the
// same way, and it holds no repeated or case-folded top-level key.
func FuzzStrictJSON(f *testing.F) {
	for _, s := range []string{
		`{"type":"hello","token":"t"}`, `{"type":"a","type":"b"}`, `{"Type":"a"}`, `{"\u0074ype":"a","type":"b"}`,
		`[1]`, `null`, `{"id":1} x`, `{"id":{"id":1,"id":2}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var strict, loose struct {
			Type  string          `json:"type"`
			ID    json.RawMessage `json:"id"`
			Token *string         `json:"token"`
		}
		// The byte scan finds the keys encoding/json's tokens do.
		if json.Valid(data) {
			var scanned []string
			scanTopLevelKeys(data, func(k string) bool { scanned = append(scanned, k); return true })
			var tokens []string
			dec := json.NewDecoder(bytes.NewReader(data))
			if tok, _ := dec.Token(); tok == json.Delim('{') {
				for dec.More() {
					tok, _ := dec.Token()
					tokens = append(tokens, tok.(string))
					var skip json.RawMessage
					dec.Decode(&skip)
				}
			}
			if !slices.Equal(scanned, tokens) {
				t.Fatalf("scanned keys %q, decoder's %q", scanned, tokens)
			}
		}
		if err := decodeStrictJSON(data, &strict); err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if err := json.Unmarshal(data, &loose); err != nil {
			t.Fatalf("accepted what encoding/json refuses: %v", err)
		}
		if strict.Type != loose.Type || !bytes.Equal(strict.ID, loose.ID) || (strict.Token == nil) != (loose.Token == nil) {
			t.Fatalf("read %+v, encoding/json %+v", strict, loose)
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(data, &members) == nil {
			for key := range members {
				for _, name := range []string{"type", "id", "token"} {
					if key != name && strings.EqualFold(key, name) {
						t.Fatalf("accepted key %q beside field %q", key, name)
					}
				}
			}
		}
	})
}
