package main

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// The key decoder turns the bytes a terminal sends into keys. It is a pure
// function of its input, so a test can feed it any byte string; the caller
// keeps the bytes it did not consume (an escape sequence cut in half by a
// read) and offers them again with the next read, or with flush set once the
// terminal has been quiet for a moment, which is how a lone esc is told from
// the start of a sequence.

type keyCode uint8

const (
	keyRune keyCode = iota // r holds the rune; with modCtrl, the lower-case letter
	keyEnter
	keyTab
	keyBacktab
	keyBackspace
	keyDelete
	keyEsc
	keyUp
	keyDown
	keyRight
	keyLeft
	keyHome
	keyEnd
	keyPgUp
	keyPgDn
	keyInsert
	keyPaste    // text holds what was pasted
	keyFocusIn  // the terminal gained the focus (ESC [ I, tui_notify.go)
	keyFocusOut // the terminal lost it (ESC [ O)
	keyUnknown  // a sequence zot does not use; ignored
)

type keyMod uint8

const (
	modShift keyMod = 1 << iota
	modAlt
	modCtrl
)

// tuiKey is one key press (or one bracketed paste).
type tuiKey struct {
	code keyCode
	r    rune
	mod  keyMod
	text string
}

var keyNames = [...]string{
	keyRune: "rune", keyEnter: "enter", keyTab: "tab", keyBacktab: "shift+tab",
	keyBackspace: "backspace", keyDelete: "delete", keyEsc: "esc", keyUp: "up",
	keyDown: "down", keyRight: "right", keyLeft: "left", keyHome: "home", keyEnd: "end",
	keyPgUp: "pageup", keyPgDn: "pagedown", keyInsert: "insert", keyPaste: "paste",
	keyFocusIn: "focus-in", keyFocusOut: "focus-out", keyUnknown: "unknown",
}

// String names the key as the docs and panel_key frames do: "a", "ctrl+a",
// "alt+b", "enter", "alt+enter", "up".
func (k tuiKey) String() string {
	var b []byte
	if k.mod&modCtrl != 0 {
		b = append(b, "ctrl+"...)
	}
	if k.mod&modAlt != 0 {
		b = append(b, "alt+"...)
	}
	if k.mod&modShift != 0 && k.code != keyBacktab {
		b = append(b, "shift+"...)
	}
	if k.code == keyRune {
		if k.r == ' ' && k.mod != 0 {
			return string(append(b, "space"...))
		}
		return string(utf8.AppendRune(b, k.r))
	}
	return string(append(b, keyNames[k.code]...))
}

func ctrlKey(r rune) tuiKey { return tuiKey{code: keyRune, r: r, mod: modCtrl} }

const (
	pasteStart = "\x1b[200~"
	pasteEnd   = "\x1b[201~"
	// maxPaste bounds a paste whose end marker never comes: past it, what
	// arrived is taken as the paste.
	maxPaste = 16 << 20
	// maxSeq bounds an escape sequence; a longer one is garbage.
	maxSeq = 64
)

// decodeKeys decodes the keys at the start of buf. It returns them and the
// number of bytes consumed; the rest is an incomplete sequence to offer
// again with more bytes. With flush, nothing is left incomplete except an
// unfinished bracketed paste: a lone esc is the esc key.
func decodeKeys(buf []byte, flush bool) (keys []tuiKey, n int) {
	for n < len(buf) {
		k, size := decodeKey(buf[n:], flush)
		if size == 0 {
			break
		}
		n += size
		keys = append(keys, k)
	}
	return keys, n
}

// decodeKey decodes one key; size 0 means buf holds only its beginning.
func decodeKey(buf []byte, flush bool) (tuiKey, int) {
	c := buf[0]
	switch {
	case c == 0x1b:
		return decodeEscape(buf, flush)
	case c == '\r':
		return tuiKey{code: keyEnter}, 1
	case c == '\t':
		return tuiKey{code: keyTab}, 1
	case c == 0x7f || c == 0x08:
		return tuiKey{code: keyBackspace}, 1
	case c == 0:
		return ctrlKey(' '), 1
	case c < 0x1b:
		return ctrlKey(rune('a' + c - 1)), 1
	case c < 0x20:
		return ctrlKey(rune("\\]^_"[c-0x1c])), 1
	case c < 0x80:
		return tuiKey{code: keyRune, r: rune(c)}, 1
	}
	if !utf8.FullRune(buf) && !flush {
		return tuiKey{}, 0
	}
	r, size := utf8.DecodeRune(buf)
	if r == utf8.RuneError || r < 0xa0 {
		return tuiKey{code: keyUnknown}, size // invalid UTF-8 or a C1 control
	}
	return tuiKey{code: keyRune, r: r}, size
}

func decodeEscape(buf []byte, flush bool) (tuiKey, int) {
	if len(buf) == 1 {
		if flush {
			return tuiKey{code: keyEsc}, 1
		}
		return tuiKey{}, 0
	}
	switch buf[1] {
	case '[':
		return decodeCSI(buf, flush)
	case 'O':
		if len(buf) == 2 {
			if flush {
				return tuiKey{code: keyRune, r: 'O', mod: modAlt}, 2
			}
			return tuiKey{}, 0
		}
		code, ok := ss3Keys[buf[2]]
		if !ok {
			return tuiKey{code: keyUnknown}, 3
		}
		return tuiKey{code: code}, 3
	case 0x1b:
		// esc esc: the first is a key of its own.
		return tuiKey{code: keyEsc}, 1
	}
	k, size := decodeKey(buf[1:], flush)
	if size == 0 {
		return tuiKey{}, 0
	}
	if k.code == keyPaste || k.code == keyUnknown {
		return tuiKey{code: keyEsc}, 1
	}
	k.mod |= modAlt
	return k, 1 + size
}

var ss3Keys = map[byte]keyCode{
	'A': keyUp, 'B': keyDown, 'C': keyRight, 'D': keyLeft, 'H': keyHome, 'F': keyEnd,
	'P': keyUnknown, 'Q': keyUnknown, 'R': keyUnknown, 'S': keyUnknown,
}

var csiFinalKeys = map[byte]keyCode{
	'A': keyUp, 'B': keyDown, 'C': keyRight, 'D': keyLeft, 'H': keyHome, 'F': keyEnd, 'Z': keyBacktab,
}

var csiTildeKeys = map[int]keyCode{
	1: keyHome, 7: keyHome, 4: keyEnd, 8: keyEnd, 2: keyInsert, 3: keyDelete, 5: keyPgUp, 6: keyPgDn,
}

// decodeCSI decodes ESC [ params intermediates final.
func decodeCSI(buf []byte, flush bool) (tuiKey, int) {
	i := 2
	for i < len(buf) && buf[i] >= 0x30 && buf[i] <= 0x3f {
		i++
	}
	for i < len(buf) && buf[i] >= 0x20 && buf[i] <= 0x2f {
		i++
	}
	if i >= len(buf) || i >= maxSeq {
		switch {
		case i >= maxSeq:
			return tuiKey{code: keyUnknown}, i
		case !flush:
			return tuiKey{}, 0
		case i == 2:
			return tuiKey{code: keyRune, r: '[', mod: modAlt}, 2
		}
		return tuiKey{code: keyUnknown}, i
	}
	final := buf[i]
	size := i + 1
	if final < 0x40 || final > 0x7e {
		// Not a CSI byte: drop the introducer and decode the rest anew.
		return tuiKey{code: keyUnknown}, 2
	}
	params := buf[2:i]
	nums := csiParams(params)
	mod := keyMod(0)
	if len(nums) >= 2 && nums[1] > 1 {
		mod = keyMod(nums[1]-1) & (modShift | modAlt | modCtrl)
	}
	switch final {
	case '~':
		if len(nums) == 0 {
			return tuiKey{code: keyUnknown}, size
		}
		switch nums[0] {
		case 200:
			// Terminals open a paste with exactly these bytes; another
			// spelling (0200, 200;5) would hold every key after it back
			// as a paste.
			if string(params) != "200" {
				return tuiKey{code: keyUnknown}, size
			}
			return decodePaste(buf, size)
		case 27: // xterm modifyOtherKeys: 27;mod;code~
			if len(nums) == 3 {
				k := codepointKey(nums[2])
				k.mod |= keyMod(max(nums[1]-1, 0)) & (modShift | modAlt | modCtrl)
				return k, size
			}
			return tuiKey{code: keyUnknown}, size
		}
		if code, ok := csiTildeKeys[nums[0]]; ok {
			return tuiKey{code: code, mod: mod}, size
		}
	case 'u': // the kitty keyboard protocol: code;mod u
		if len(nums) >= 1 && len(params) > 0 && params[0] != '?' {
			k := codepointKey(nums[0])
			k.mod |= mod
			return k, size
		}
	case 'I': // focus reports: never keys, never text
		if len(params) == 0 {
			return tuiKey{code: keyFocusIn}, size
		}
	case 'O':
		if len(params) == 0 {
			return tuiKey{code: keyFocusOut}, size
		}
	default:
		if code, ok := csiFinalKeys[final]; ok && (len(params) == 0 || params[0] != '<') {
			if code == keyBacktab {
				mod |= modShift
			}
			return tuiKey{code: code, mod: mod}, size
		}
	}
	return tuiKey{code: keyUnknown}, size
}

// codepointKey is the key for a Unicode code point reported by a keyboard
// protocol.
func codepointKey(cp int) tuiKey {
	switch cp {
	case 13:
		return tuiKey{code: keyEnter}
	case 9:
		return tuiKey{code: keyTab}
	case 127, 8:
		return tuiKey{code: keyBackspace}
	case 27:
		return tuiKey{code: keyEsc}
	}
	if cp < 0x20 || cp > utf8.MaxRune || (cp >= 0x7f && cp < 0xa0) {
		return tuiKey{code: keyUnknown}
	}
	return tuiKey{code: keyRune, r: rune(cp)}
}

// csiParams parses "1;5" into [1 5]; empty or odd fields count as 0.
func csiParams(p []byte) []int {
	if len(p) == 0 {
		return nil
	}
	var out []int
	for _, f := range bytes.Split(p, []byte{';'}) {
		if i := bytes.IndexByte(f, ':'); i >= 0 {
			f = f[:i] // kitty sub-parameters: the first is enough
		}
		n, err := strconv.Atoi(string(f))
		if err != nil || n < 0 || n > 1<<21 {
			n = 0
		}
		out = append(out, n)
	}
	return out
}

// decodePaste reads a bracketed paste whose start marker ends at from.
func decodePaste(buf []byte, from int) (tuiKey, int) {
	end := bytes.Index(buf[from:], []byte(pasteEnd))
	if end < 0 {
		if len(buf) < maxPaste {
			return tuiKey{}, 0
		}
		return tuiKey{code: keyPaste, text: string(buf[from:])}, len(buf)
	}
	return tuiKey{code: keyPaste, text: string(buf[from : from+end])}, from + end + len(pasteEnd)
}
