package main

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// /session: export the session as one portable file, import one into this
// directory, and the tree of a session and its forks to switch between
// them. The formats are session_port.go's.

const sessionCommandUsage = "/session export [PATH] · /session import PATH · /session tree"

func (t *TUI) cmdSession(args string) {
	sub, rest, _ := strings.Cut(strings.TrimSpace(args), " ")
	rest = strings.TrimSpace(rest)
	switch {
	case sub == "export":
		t.exportSession(rest)
	case sub == "import" && rest != "":
		t.importSession(rest)
	case sub == "tree" && rest == "":
		t.sessionTree()
	default:
		t.logf(fgYellow, "usage: %s", sessionCommandUsage)
	}
}

// userPath reads a path the user typed: ~/ is the home directory, and a
// relative path is taken from the working directory.
func (t *TUI) userPath(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, rest)
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(t.cfg.Cwd, p)
	}
	return p
}

// exportSession writes the current session to dst (a file or a
// directory), by default into the working directory.
func (t *TUI) exportSession(dst string) {
	if t.session == nil {
		t.logf(fgYellow, "/session export: this conversation is not saved (--no-session), so there is no session to export")
		return
	}
	if _, err := os.Stat(t.session.Path); err != nil {
		t.logf(sDim, "nothing to export yet: send a prompt first")
		return
	}
	if dst != "" {
		dst = t.userPath(dst)
	}
	dst = exportPath(t.session.Path, dst, t.cfg.Cwd)
	if err := ExportSession(t.session.Path, dst); err != nil {
		t.logf(fgRed, "/session export: %v", err)
		return
	}
	t.logf(fgCyan, "exported to %s (without the working directory)", dst)
}

// importSession makes the file at src a session of this directory and
// switches to it (after the running turn, as /sessions does).
func (t *TUI) importSession(src string) {
	path, notes, err := ImportSession(t.userPath(src), t.cfg.Home, t.cfg.Cwd)
	for _, n := range notes {
		t.logf(fgYellow, "%s", n)
	}
	if err != nil {
		t.logf(fgRed, "/session import: %v", err)
		return
	}
	t.logf(fgCyan, "imported %s as %s", src, filepath.Base(path))
	t.resumeSession(path)
}

// sessionTree shows the sessions of this directory with each fork under the
// session it came from; choosing one switches to it.
func (t *TUI) sessionTree() {
	list, err := ListSessions(t.cfg.Home, t.cfg.Cwd)
	if err != nil {
		t.logf(fgRed, "/session tree: %v", err)
		return
	}
	if len(list) == 0 {
		t.logf(sDim, "no saved sessions for %s yet", t.cfg.Cwd)
		return
	}
	rows := SessionTree(list)
	lines := FormatSessionTree(rows, time.Now())
	sel := 0
	for i, r := range rows {
		if t.session != nil && r.Info.Path == t.session.Path {
			lines[i] += "  (current)"
			sel = i
		}
	}
	t.pushDialog(&pickerDialog{
		title: "sessions and their forks: choose one to switch to it",
		items: lines,
		sel:   sel,
		pick:  func(t *TUI, i int) { t.resumeSession(rows[i].Info.Path) },
	})
}
