package main

import "fmt"

// The workspace-trust dialog: on start in a directory whose own programs
// (MCP servers, extensions, validators, hooks) the user has not trusted,
// the TUI lists them and asks before any starts. wire.go decides what is
// listed and what each answer does.

// tuiTrustAsk is the question: the directory, its programs, and what to
// do with the answer.
type tuiTrustAsk struct {
	Dir      string
	Programs []tuiTrustProgram
	Warning  string // trust.json could not be read
	// Answer is called once, in the UI loop: true to trust the directory
	// and run its programs, false to go on without them (remembered for
	// these programs). Quitting calls nothing.
	Answer func(trust bool)
}

// tuiTrustProgram is one program on one line; Change is "", new, changed
// or removed.
type tuiTrustProgram struct {
	Change string
	Text   string
}

// AskTrust makes the trust dialog the first thing Run shows. Call it
// before Run.
func (t *TUI) AskTrust(a tuiTrustAsk) { t.trustAsk = &a }

// trustDialog shows the programs, scrolling when they do not fit. It
// opens on "continue without them", and answers only to arrows, enter and
// esc (continue without them): no letter, so that a prompt typed before
// the dialog appeared cannot answer it.
type trustDialog struct {
	ask      tuiTrustAsk
	sel      int
	answered bool
	top      int
	room     int
}

var trustOptions = [][2]string{
	{"trust", "trust this directory and run them"},
	{"skip", "continue without them"},
	{"quit", "quit"},
}

func (d *trustDialog) body(width int) []string {
	inner := boxInner(width)
	rows := []string{fitLine(inner, span{"This directory would start programs of its own, with your privileges:", 0})}
	for _, p := range d.ask.Programs {
		first := []span{{"  ", 0}}
		if p.Change != "" {
			first = []span{{"  (" + p.Change + ") ", fgYellow}}
		}
		rows = append(rows, plainRows(drawText(p.Text), inner, 0, first, []span{{"      ", 0}})...)
	}
	if d.ask.Warning != "" {
		rows = append(rows, plainRows(drawText("warning: "+d.ask.Warning), inner, fgYellow, nil, nil)...)
	}
	return rows
}

func (d *trustDialog) view(t *TUI, width int) ([]string, int, int) {
	body := d.body(width)
	d.room = max(t.height-1-2-(2+len(trustOptions))-1, 3)
	d.top = max(min(d.top, len(body)-d.room), 0)
	end := min(d.top+d.room, len(body))
	rows := append([]string(nil), body[d.top:end]...)
	if len(body) > d.room {
		rows = append(rows, fitLine(boxInner(width), span{fmt.Sprintf("rows %d–%d of %d · pgup pgdn scroll", d.top+1, end, len(body)), sDim}))
	}
	for i, o := range trustOptions {
		mark, st := "  ", style(0)
		if i == d.sel {
			mark, st = "› ", fgCyan|sBold
		}
		rows = append(rows, fitLine(boxInner(width), span{mark, st}, span{o[1], st}))
	}
	return dialogBox(width, "trust "+oneLine(d.ask.Dir)+"?", "↑↓ enter · esc: continue without them", rows), 0, -1
}

func (d *trustDialog) key(t *TUI, k tuiKey) bool {
	choose := func(option string) bool {
		if d.answered {
			return true
		}
		d.answered = true
		switch option {
		case "trust":
			d.ask.Answer(true)
		case "skip":
			t.logf(fgYellow, "zot: this directory's own programs are not running, and zot will not ask again until they change (zot trust runs them; zot trust --revoke asks again)")
			d.ask.Answer(false)
		default:
			t.exit(exitOK)
		}
		return true
	}
	switch k.code {
	case keyPgDn:
		d.top += max(d.room-1, 1)
	case keyPgUp:
		d.top = max(d.top-max(d.room-1, 1), 0)
	case keyUp:
		d.sel = (d.sel - 1 + len(trustOptions)) % len(trustOptions)
	case keyDown, keyTab:
		d.sel = (d.sel + 1) % len(trustOptions)
	case keyEsc:
		return choose("skip")
	case keyEnter:
		return choose(trustOptions[d.sel][0])
	}
	return false
}
