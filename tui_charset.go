package main

import (
	"strings"
	"unicode/utf8"
)

// What the terminal is asked to show. NO_COLOR (https://no-color.org)
// takes the colours out of everything the TUI draws and keeps bold, dim,
// italic, underline and reverse, so the layout is the same. A locale
// whose character set is not UTF-8 gets ASCII for the box drawing, marks
// and spinner, and ? for any other character, as many as it has columns,
// so the layout is the same there too. Both rewrite the bytes on their way
// to the terminal, after the renderer, which needs to know of neither.

// termCaps is what the terminal may be sent.
type termCaps struct {
	noColor bool // NO_COLOR is set
	ascii   bool // the locale's character set is not UTF-8
}

// detectTermCaps reads NO_COLOR and the locale. An unset locale counts as
// UTF-8: terminals are today, and containers and ssh sessions often leave
// LANG unset; a locale set to C, POSIX or another character set does not.
func detectTermCaps(getenv func(string) string) termCaps {
	c := termCaps{noColor: getenv("NO_COLOR") != ""}
	for _, v := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if loc := getenv(v); loc != "" {
			charset := loc
			if _, after, ok := strings.Cut(loc, "."); ok {
				charset, _, _ = strings.Cut(after, "@")
			}
			charset = strings.ToLower(strings.ReplaceAll(charset, "-", ""))
			c.ascii = charset != "utf8"
			break
		}
	}
	return c
}

// filter rewrites what is about to be written; b is left alone.
func (c termCaps) filter(b []byte) []byte {
	if !c.noColor && !c.ascii {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		if c.noColor && b[i] == 0x1b && i+1 < len(b) && b[i+1] == '[' {
			if n, ok := sgrLength(b[i:]); ok {
				out = appendWithoutColours(out, b[i+2:i+n-1])
				i += n
				continue
			}
		}
		if b[i] < utf8.RuneSelf || !c.ascii {
			out = append(out, b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		out = append(out, asciiFor(r)...)
		i += size
	}
	return out
}

// sgrLength is the length of the SGR sequence (ESC [ digits and ; m) b
// starts with, if it is one.
func sgrLength(b []byte) (int, bool) {
	for j := 2; j < len(b); j++ {
		switch c := b[j]; {
		case c == 'm':
			return j + 1, true
		case c != ';' && (c < '0' || c > '9'):
			return 0, false
		}
	}
	return 0, false
}

// appendWithoutColours writes an SGR sequence with params, less its
// foreground and background colours.
func appendWithoutColours(out, params []byte) []byte {
	out = append(out, "\x1b["...)
	first := true
	for _, p := range strings.Split(string(params), ";") {
		if n := len(p); n == 2 && (p[0] == '3' || p[0] == '4' || p[0] == '9') || n == 3 && p[:2] == "10" {
			continue // 30–39, 40–49, 90–97, 100–107
		}
		if !first {
			out = append(out, ';')
		}
		out, first = append(out, p...), false
	}
	return append(out, 'm')
}

// asciiGlyphs are the characters zot draws and what stands in for them.
var asciiGlyphs = map[rune]string{
	'─': "-", '━': "-", '│': "|", '┃': "|", '┆': ":", '┌': "+", '┐': "+", '└': "+", '┘': "+",
	'├': "+", '┤': "+", '┬': "+", '┴': "+", '┼': "+", '╭': "+", '╮': "+", '╰': "+", '╯': "+",
	'›': ">", '•': "*", '·': ".", '…': ".", '⋮': ":", '∴': ":", '■': "#", '⊘': "/", '↻': "@",
	'✓': "+", '✗': "x", '↑': "^", '↓': "v", '←': "<", '→': ">", '⏎': "~", '–': "-", '—': "-",
	'“': `"`, '”': `"`, '‘': "'", '’': "'", '×': "x", '⏳': "..",
	'⠋': "|", '⠙': "/", '⠹': "-", '⠸': `\`, '⠼': "|", '⠴': "/", '⠦': "-", '⠧': `\`, '⠇': "|", '⠏': "/",
}

// asciiFor is r in ASCII, one character per column it takes.
func asciiFor(r rune) string {
	w := runeWidth(r)
	if s, ok := asciiGlyphs[r]; ok && len(s) == w {
		return s
	}
	return strings.Repeat("?", w)
}
