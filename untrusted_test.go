package main

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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
