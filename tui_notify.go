package main

import (
	"fmt"
	"strings"
)

// Telling a user who looks elsewhere that zot needs them: when a run ends
// or a dialog waits for an answer and the terminal is not focused, the
// TUI rings the bell or sends a desktop notification (OSC 9, OSC 777).
// The terminal says where the focus is once focus reporting is on
// (DECSET 1004: ESC [ I when it gains it, ESC [ O when it loses it).

// Notification kinds, as config.json's "notify" names them.
const (
	notifyBell   = "bell"
	notifyOSC9   = "osc9"
	notifyOSC777 = "osc777"
	notifyOff    = "off"
)

// notifyDefault rings the bell: every terminal has one, and one that
// cannot show it ignores it, where an OSC a terminal does not know may
// show up as garbage in some.
const notifyDefault = notifyBell

// ParseNotify reads config.json's "notify": "" is the default; a value
// that is not a kind is an error, and the default stands.
func ParseNotify(v string) (string, error) {
	switch v {
	case "":
		return notifyDefault, nil
	case notifyBell, notifyOSC9, notifyOSC777, notifyOff:
		return v, nil
	}
	return notifyDefault, fmt.Errorf("config.json: notify %q is not one of %q, %q, %q, %q (the default, %s, is used)", v, notifyBell, notifyOSC9, notifyOSC777, notifyOff, notifyDefault)
}

// Focus reporting, turned on at start and off on the way out.
const (
	focusReportOn  = "\x1b[?1004h"
	focusReportOff = "\x1b[?1004l"
)

// focusState is what the terminal last said about its focus.
type focusState uint8

const (
	// focusUnknown: no report yet. A terminal that never reports (focus
	// reporting off in tmux, an old terminal) would otherwise never
	// notify, so unknown notifies, as unfocused does.
	focusUnknown focusState = iota
	focusIn
	focusOut
)

// notifyText is a notification's payload: one line of printable text,
// bounded, with nothing that could end the OSC early.
func notifyText(s string) string {
	return sessionOneLine(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s), 120)
}

// notifyBytes are the bytes a notification of kind writes.
func notifyBytes(kind, text string) []byte {
	text = notifyText(text)
	switch kind {
	case notifyBell:
		return []byte("\a")
	case notifyOSC9:
		return []byte("\x1b]9;" + text + "\a")
	case notifyOSC777:
		return []byte("\x1b]777;notify;zot;" + text + "\a")
	}
	return nil
}

// notify tells the user text, unless the terminal is focused or the
// user turned notifications off.
func (t *TUI) notify(text string) {
	if t.focus == focusIn {
		return
	}
	t.write(notifyBytes(t.cfg.Notify, text))
}

// runEndText is what a run's end notification says.
func runEndText(err error) string {
	if err != nil {
		return "zot stopped: " + err.Error()
	}
	return "zot is done"
}
