package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// vt is a small terminal emulator for tests. It understands exactly the
// escape sequences zot's renderer may write, and reports any other escape
// or raw control character as a test error: that is how the tests check
// that nothing untrusted reaches the terminal raw. "\n" is taken as the tty
// driver delivers it with ONLCR: carriage return and line feed.
type vt struct {
	t        testing.TB
	w, h     int
	grid     [][]string // cells; a wide character's second cell is ""
	scroll   []string   // rows scrolled off the top
	x, y     int
	cursorOn bool
	paste    bool
	bytes    int
	rest     []byte // an escape sequence cut by a write

	// With images set, the picture sequences of tui_images.go are taken
	// (any other use of them is still an error): pictures holds each
	// picture's decoded bytes, kitty's chunks joined; saved is the cursor
	// that ESC 7 saved.
	images   bool
	pictures [][]byte
	kitty    []byte // base64 of a kitty picture whose chunks are arriving
	saved    [2]int
}

func newVT(t testing.TB, w, h int) *vt {
	v := &vt{t: t, w: w, h: h, cursorOn: true}
	for i := 0; i < h; i++ {
		v.grid = append(v.grid, v.blankRow())
	}
	return v
}

func (v *vt) blankRow() []string {
	row := make([]string, v.w)
	for i := range row {
		row[i] = " "
	}
	return row
}

func (v *vt) Write(b []byte) (int, error) {
	v.bytes += len(b)
	data := append(v.rest, b...)
	v.rest = nil
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == 0x1b:
			n := v.escape(data[i:])
			if n == 0 {
				v.rest = append([]byte(nil), data[i:]...)
				return len(b), nil
			}
			i += n
		case c == '\r':
			v.x = 0
			i++
		case c == '\n':
			v.x = 0
			v.lineFeed()
			i++
		case c < 0x20 || c == 0x7f:
			v.t.Errorf("raw control character %#x written to the terminal", c)
			i++
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				v.t.Errorf("invalid UTF-8 written to the terminal")
			}
			if r >= 0x80 && r < 0xa0 {
				v.t.Errorf("C1 control %U written to the terminal", r)
			}
			v.put(string(data[i:i+size]), runeWidth(r))
			i += size
		}
	}
	return len(b), nil
}

func (v *vt) lineFeed() {
	if v.y < v.h-1 {
		v.y++
		return
	}
	v.scroll = append(v.scroll, v.rowText(v.grid[0]))
	v.grid = append(v.grid[1:], v.blankRow())
}

func (v *vt) put(s string, w int) {
	if w == 0 {
		x := max(v.x-1, 0)
		if v.x >= v.w {
			x = v.w - 1
		}
		v.grid[v.y][x] += s
		return
	}
	if v.x+w > v.w {
		v.x = 0
		v.lineFeed()
	}
	v.grid[v.y][v.x] = s
	if w == 2 {
		v.grid[v.y][v.x+1] = ""
	}
	v.x += w
}

// escape handles the sequence at the start of b and returns its length, 0
// when b holds only its beginning.
func (v *vt) escape(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	if v.images && b[1] != '[' {
		if n, ok := v.picture(b); ok {
			return n
		}
	}
	if b[1] != '[' {
		v.t.Errorf("unexpected escape %q written to the terminal", b[:2])
		return 2
	}
	i := 2
	for i < len(b) && b[i] >= 0x30 && b[i] <= 0x3f {
		i++
	}
	if i == len(b) {
		return 0
	}
	params, final := string(b[2:i]), b[i]
	n := 1
	if params != "" && params[0] != '?' && final != 'm' {
		if p, err := strconv.Atoi(params); err == nil {
			n = p
		} else {
			v.t.Errorf("unexpected escape parameters %q%c", params, final)
		}
	}
	switch {
	case final == 'A':
		v.y = max(v.y-n, 0)
		v.x = min(v.x, v.w-1)
	case final == 'B':
		v.y = min(v.y+n, v.h-1)
		v.x = min(v.x, v.w-1)
	case final == 'G':
		v.x = min(n-1, v.w-1)
	case final == 'L':
		for i := 0; i < n; i++ {
			v.grid = append(v.grid[:v.y], append([][]string{v.blankRow()}, v.grid[v.y:v.h-1]...)...)
		}
		v.x = 0
	case final == 'H' && params == "":
		v.x, v.y = 0, 0
	case final == 'K' && params == "":
		for x := min(v.x, v.w-1); x < v.w; x++ {
			v.grid[v.y][x] = " "
		}
	case final == 'J' && (params == "" || params == "2"):
		from := v.y
		if params == "2" {
			from = 0
		} else {
			for x := min(v.x, v.w-1); x < v.w; x++ {
				v.grid[v.y][x] = " "
			}
			from++
		}
		for y := from; y < v.h; y++ {
			v.grid[y] = v.blankRow()
		}
	case final == 'm':
		for _, p := range strings.Split(params, ";") {
			if _, ok := sgrNames[p]; !ok {
				v.t.Errorf("unexpected SGR parameter %q", p)
			}
		}
	case params == "?25" && final == 'h':
		v.cursorOn = true
	case params == "?25" && final == 'l':
		v.cursorOn = false
	case params == "?2004" && (final == 'h' || final == 'l'):
		v.paste = final == 'h'
	default:
		v.t.Errorf("unexpected escape %q written to the terminal", b[:i+1])
	}
	return i + 1
}

var sgrNames = map[string]string{"0": "", "1": "b", "2": "dim", "3": "i", "4": "u", "7": "rev",
	"31": "red", "32": "green", "33": "yellow", "34": "blue", "35": "magenta", "36": "cyan", "90": "gray"}

func (v *vt) rowText(row []string) string {
	return strings.TrimRight(strings.Join(row, ""), " ")
}

// screen is the visible rows, trailing blank rows dropped.
func (v *vt) screen() []string {
	var out []string
	for _, r := range v.grid {
		out = append(out, v.rowText(r))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// all is the scrollback followed by the screen.
func (v *vt) all() []string { return append(append([]string(nil), v.scroll...), v.screen()...) }

func (v *vt) String() string { return strings.Join(v.all(), "\n") }

// tagged shows a rendered row's styles as [names] markers: [b]bold[/].
func tagged(row string) string {
	var b strings.Builder
	for i := 0; i < len(row); {
		if row[i] == 0x1b {
			n, _ := escapeLen(row[i:])
			seq := row[i : i+n]
			i += n
			if !strings.HasSuffix(seq, "m") {
				fmt.Fprintf(&b, "<%q>", seq)
				continue
			}
			var names []string
			for _, p := range strings.Split(seq[2:len(seq)-1], ";") {
				if name := sgrNames[p]; name != "" {
					names = append(names, name)
				}
			}
			if len(names) == 0 {
				b.WriteString("[/]")
			} else {
				b.WriteString("[" + strings.Join(names, ",") + "]")
			}
			continue
		}
		b.WriteByte(row[i])
		i++
	}
	return b.String()
}

func plain(row string) string {
	var b strings.Builder
	for i := 0; i < len(row); {
		if row[i] == 0x1b {
			n, _ := escapeLen(row[i:])
			i += n
			continue
		}
		b.WriteByte(row[i])
		i++
	}
	return b.String()
}

// picture handles the sequences that draw pictures: ESC 7 and ESC 8, a
// kitty graphics command, an iTerm2 OSC 1337 file. It returns 0, true
// when b holds only the beginning of one.
func (v *vt) picture(b []byte) (int, bool) {
	switch b[1] {
	case '7':
		v.saved = [2]int{v.x, v.y}
		return 2, true
	case '8':
		v.x, v.y = v.saved[0], v.saved[1]
		return 2, true
	case '_':
		end := bytes.Index(b, []byte("\x1b\\"))
		if end < 0 {
			return 0, true
		}
		keys, payload, _ := strings.Cut(string(b[3:end]), ";")
		if b[2] != 'G' || !regexp.MustCompile(`^(a=T,f=100,q=2,C=1,c=\d+,r=\d+,)?m=[01]$`).MatchString(keys) {
			v.t.Errorf("unexpected kitty command %q", keys)
		}
		if len(payload) > 4096 {
			v.t.Errorf("a kitty chunk of %d bytes", len(payload))
		}
		v.kitty = append(v.kitty, payload...)
		if strings.HasSuffix(keys, "m=0") {
			data, err := base64.StdEncoding.DecodeString(string(v.kitty))
			if err != nil {
				v.t.Errorf("kitty picture: %v", err)
			}
			v.pictures, v.kitty = append(v.pictures, data), nil
		}
		return end + 2, true
	case ']':
		end := bytes.IndexByte(b, '\a')
		if end < 0 {
			return 0, true
		}
		head, payload, _ := strings.Cut(string(b[2:end]), ":")
		if !regexp.MustCompile(`^1337;File=inline=1;size=\d+;width=\d+;height=\d+;preserveAspectRatio=1;doNotMoveCursor=1$`).MatchString(head) {
			v.t.Errorf("unexpected OSC %q", head)
		}
		data, err := base64.StdEncoding.DecodeString(payload)
		if err != nil {
			v.t.Errorf("iTerm2 picture: %v", err)
		}
		v.pictures = append(v.pictures, data)
		return end + 1, true
	}
	return 0, false
}
