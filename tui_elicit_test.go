package main

import (
	"context"
	"strings"
	"testing"
)

// The question dialog as a function of its state: what it shows, and the
// answer its keys make.

func elicitDialogFor(q Elicitation) (*elicitDialog, chan ElicitAnswer) {
	req := &elicitReq{ctx: context.Background(), q: q, reply: make(chan ElicitAnswer, 1)}
	return newElicitDialog(req), req.reply
}

func TestElicitDialogShowsTheWholeURLAndItsHost(t *testing.T) {
	t.Parallel()
	long := "https://xn--pypal-4ve.example/connect?session=" + strings.Repeat("a", 90) + "&end=1"
	d, reply := elicitDialogFor(Elicitation{Server: "pay\x1b[31m", Mode: ElicitURL, Message: "Confirm \x07the payment.", URL: long})
	rows, _, _ := d.view(nil, 60)
	screen := plainRowsOf(rows)
	flat := strings.NewReplacer("\n", "", "│", "", " ", "").Replace(screen)
	for _, want := range []string{"mcp server pay asks", "Confirm ␇the payment.", "host: xn--pypal-4ve.example", "letters from other scripts: check", "it is the one you expect", "zot does not open it", "[ accept: I will open it ]"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the dialog does not show %q:\n%s", want, screen)
		}
	}
	if !strings.Contains(flat, strings.ReplaceAll(long, " ", "")) {
		t.Errorf("the URL is not shown whole:\n%s", screen)
	}
	if strings.Contains(screen, "\x1b") {
		t.Errorf("an escape reached the screen")
	}
	if done := d.key(nil, tuiKey{code: keyRune, r: 'd'}); !done {
		t.Fatal("d did not answer")
	}
	if a := <-reply; a.Action != ElicitDecline {
		t.Errorf("answer = %+v", a)
	}
}

func TestElicitDialogKeysFillTheForm(t *testing.T) {
	t.Parallel()
	d, reply := elicitDialogFor(Elicitation{Server: "s", Mode: ElicitForm, Fields: []ElicitField{
		{Name: "name", Type: "string", Required: true},
		{Name: "ok", Type: "boolean", Default: false},
		{Name: "tags", Type: "string", Multiple: true, Options: []ElicitOption{{Value: "a"}, {Value: "b", Title: "Bee"}}},
	}})
	press := func(keys ...tuiKey) {
		for _, k := range keys {
			if d.key(nil, k) {
				return
			}
		}
	}
	rn := func(r rune) tuiKey { return tuiKey{code: keyRune, r: r} }
	// Submit at once: the required name is refused and the form stays.
	press(tuiKey{code: keyUp}, tuiKey{code: keyEnter})
	if d.sel != 0 || d.errs[0] != "required" {
		t.Fatalf("an empty required field was let through: sel %d errs %q", d.sel, d.errs)
	}
	press(rn('A'), rn('d'), rn('a'), tuiKey{code: keyTab}, rn(' '), tuiKey{code: keyTab}, tuiKey{code: keyRight}, rn(' '), tuiKey{code: keyEnter}, tuiKey{code: keyEnter})
	a := <-reply
	if a.Action != ElicitAccept || a.Content["name"] != "Ada" || a.Content["ok"] != true || strings.Join(a.Content["tags"].([]string), ",") != "b" {
		t.Errorf("answer = %+v", a)
	}
}
