package main

import (
	"strings"
	"testing"
)

func TestFocusReportsAreNotKeys(t *testing.T) {
	t.Parallel()
	keys, n := decodeKeys([]byte("\x1b[Ia\x1b[O\x1b[1;5I"), false)
	var got []string
	for _, k := range keys {
		got = append(got, k.String())
	}
	if n != 13 || strings.Join(got, " ") != "focus-in a focus-out unknown" {
		t.Fatalf("decoded %d bytes as %q", n, got)
	}
}

func TestNotifyPayloadCannotEndTheEscape(t *testing.T) {
	t.Parallel()
	for kind, want := range map[string]string{
		notifyBell:   "\a",
		notifyOSC9:   "\x1b]9;done ]0;title x\a",
		notifyOSC777: "\x1b]777;notify;zot;done ]0;title x\a",
		notifyOff:    "",
	} {
		if got := string(notifyBytes(kind, "done\a\x1b]0;title\u009cx")); got != want {
			t.Errorf("%s: %q, want %q", kind, got, want)
		}
	}
	if k, err := ParseNotify("chime"); k != notifyBell || err == nil || !strings.Contains(err.Error(), `"osc777"`) {
		t.Errorf("ParseNotify(chime) = %q, %v", k, err)
	}
}
