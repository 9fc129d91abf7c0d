package main

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The reference markdown-lite: the straightforward renderer that parses a
// whole line at once. The streaming parser (mdStream) must draw every line
// shorter than blockLookahead exactly as this does, whole or in pieces.

// refDrawText is drawText written plainly, a whole text at a time, escapes
// measured by escapeLen.
func refDrawText(s string) string {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n') || c >= 0x7f {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	col := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			b.WriteByte('\n')
			col = 0
			i++
		case c == '\t':
			n := tabWidth - col%tabWidth
			b.WriteString("    "[:n])
			col += n
			i++
		case c == '\r':
			if i+1 == len(s) || s[i+1] == '\n' {
				i++ // a line ending, not an overwrite
				continue
			}
			b.WriteRune(0x240d)
			col++
			i++
		case c == 0x1b:
			n, silent := escapeLen(s[i:])
			if !silent {
				b.WriteRune(0x241b)
				col++
			}
			i += n
		case c < 0x20:
			b.WriteRune(0x2400 + rune(c))
			col++
			i++
		case c == 0x7f:
			b.WriteRune(0x2421)
			col++
			i++
		case c < 0x80:
			b.WriteByte(c)
			col++
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			switch {
			case c1Escapes[r] != "": // measured as its 7-bit form
				n, silent := escapeLen("\x1b" + c1Escapes[r] + s[i:])
				if !silent {
					b.WriteRune(0x241b)
					col++
				}
				i += n - 2
			case r == utf8.RuneError || r < 0xa0 || isBidiControl(r):
				b.WriteRune(utf8.RuneError)
				col++
			case r == 0xfeff:
			case r == 0x2028 || r == 0x2029:
				b.WriteByte(' ')
				col++
			default:
				b.WriteRune(r)
				col += runeWidth(r)
			}
		}
	}
	return b.String()
}

// c1Escapes are the 8-bit C1 controls that begin an escape sequence, and
// the byte that begins it after ESC.
var c1Escapes = map[rune]string{0x9b: "[", 0x9d: "]", 0x90: "P", 0x9f: "_", 0x9e: "^", 0x98: "X"}

func refMarkdownLine(dst []cell, raw string, st *mdState, base style) mdLine {
	line := refDrawText(raw)
	var m mdLine
	if st.fence != "" {
		if isFenceClose(line, st.fence) {
			st.fence = ""
			m.cells = appendCells(dst, line, base|sDim)
			return m
		}
		m.cells = appendCells(dst, line, base|codeStyle)
		m.hard = true
		return m
	}
	trimmed := strings.TrimLeft(line, " ")
	indent := len(line) - len(trimmed)
	if f := refFenceOpen(trimmed); f != "" && indent <= 3 {
		st.fence, st.code = f, codeLang(trimmed)
		m.cells = appendCells(dst, line, base|sDim)
		return m
	}
	if indent <= 3 {
		if n := headingLevel(trimmed); n > 0 {
			hs := base | headingStyle
			if n == 1 {
				hs |= sUnderline
			}
			m.cells = refInlineCells(dst, strings.TrimLeft(trimmed[n:], " "), hs)
			return m
		}
		if isRule(trimmed) {
			m.cells = appendCells(dst, strings.Repeat("─", 40), base|sDim)
			return m
		}
		if strings.HasPrefix(trimmed, ">") {
			var bars strings.Builder
			for strings.HasPrefix(trimmed, ">") {
				bars.WriteString("│ ")
				trimmed = strings.TrimPrefix(trimmed[1:], " ")
			}
			p := []span{{bars.String(), base | quoteStyle}}
			m.first, m.cont = p, p
			m.cells = refInlineCells(dst, trimmed, base|sItalic)
			return m
		}
	}
	if marker, rest, ok := listItem(trimmed); ok {
		pad := strings.Repeat(" ", min(indent, 12))
		m.first = []span{{pad, 0}, {marker, base | fgCyan}}
		m.cont = []span{{pad + strings.Repeat(" ", stringWidth(marker)), 0}}
		m.cells = refInlineCells(dst, rest, base)
		return m
	}
	m.cells = refInlineCells(dst, line, base)
	return m
}

func refFenceOpen(s string) string {
	for _, c := range []string{"`", "~"} {
		n := len(s) - len(strings.TrimLeft(s, c))
		if n >= 3 && (c == "~" || !strings.Contains(s[n:], "`")) {
			return s[:n]
		}
	}
	return ""
}

func refInlineCells(dst []cell, s string, base style) []cell {
	var bold, italic, link bool
	code, url := 0, 0 // backticks of the open code span; paren depth of a link address
	for i := 0; i < len(s); {
		c := s[i]
		st := base
		switch {
		case code > 0:
			if c == '`' {
				n := runLength(s, i)
				i += n
				if n == code {
					code = 0
				} else {
					dst = appendCells(dst, s[i-n:i], base|codeStyle)
				}
				continue
			}
			st |= codeStyle
		case url > 0:
			switch c {
			case '(':
				url++
			case ')':
				url--
			}
			st |= sDim
		case c == '`':
			code = runLength(s, i)
			i += code
			continue
		case c == '*' || c == '_':
			n := runLength(s, i)
			prev, next := runeBefore(s, i), runeAfter(s, i+n)
			canOpen := !unicode.IsSpace(next) && next != 0 && (c == '*' || !isWordRune(prev))
			canClose := !unicode.IsSpace(prev) && prev != 0 && (c == '*' || !isWordRune(next))
			toggled := false
			if n == 2 || n == 3 {
				if bold && canClose || !bold && canOpen {
					bold, toggled = !bold, true
				}
			}
			if n == 1 || n == 3 {
				if italic && canClose || !italic && canOpen {
					italic, toggled = !italic, true
				}
			}
			if toggled {
				i += n
				continue
			}
			dst = appendCells(dst, s[i:i+n], base|styleOf(bold, italic, link))
			i += n
			continue
		case c == '[' && !link:
			link = strings.Contains(s[i:], "](")
		case c == ']' && link:
			link = false
			if i+1 < len(s) && s[i+1] == '(' {
				dst = appendCells(dst, "](", base|sDim)
				i += 2
				url = 1
				continue
			}
		}
		if st == base {
			st |= styleOf(bold, italic, link)
			if link && c == '[' {
				st = base
			}
		}
		size := 1
		if c >= 0x80 {
			_, size = utf8.DecodeRuneInString(s[i:])
		}
		dst = appendCells(dst, s[i:i+size], st)
		i += size
	}
	return dst
}

func runLength(s string, i int) int {
	n := 1
	for i+n < len(s) && s[i+n] == s[i] {
		n++
	}
	return n
}

func runeBefore(s string, i int) rune {
	if i == 0 {
		return ' '
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return r
}

func runeAfter(s string, i int) rune {
	if i >= len(s) {
		return 0
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r
}
