package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The completion popup under the editor: slash commands (built-in, the
// extensions', prompt templates) while "/word" is typed, and paths after
// tab on an @word. The UI loop owns its state; it acts on the editor it
// completes and never on the rest of the TUI.

// popupState is the popup as the UI loop keeps it between keys: the list
// shown (nil when closed) and what it remembers while closed.
type popupState struct {
	list      *popup
	dismissed string      // the text for which esc closed the slash popup
	extItems  []popupItem // the extensions' commands, read when the slash popup opens
}

func (p *popupState) close() { p.list = nil }

// dismiss is esc: the popup stays closed while the text is unchanged.
func (p *popupState) dismiss(text string) {
	p.dismissed = text
	p.list = nil
}

// submitted forgets a dismissal once the editor's text was sent.
func (p *popupState) submitted() { p.dismissed = "" }

// commandsChanged drops the extensions' commands read earlier (after
// /reload-ext); the next popup reads them again.
func (p *popupState) commandsChanged() { p.extItems = nil }

// move goes up (-1) or down (1) the list; false when no popup is open,
// and the key is the editor's.
func (p *popupState) move(dir int) bool {
	if p.list == nil {
		return false
	}
	p.list.move(dir)
	return true
}

func (p *popupState) view(width int) []string {
	if p.list == nil {
		return nil
	}
	return p.list.view(width)
}

// endFileList closes an @path list: a key typed into the editor ends it.
func (p *popupState) endFileList() {
	if p.list != nil && p.list.file {
		p.list = nil
	}
}

// edited follows a change of the editor's text outside an @path list: the
// slash list shows the commands matching what is typed while the editor
// holds only "/word" with the cursor in it. ext and templates are the
// other sections' items; ext is read only when the list opens.
func (p *popupState) edited(ed *editor, ext, templates func() []popupItem) {
	if p.list != nil && p.list.file {
		return
	}
	text := ed.text()
	if !strings.HasPrefix(text, "/") || strings.ContainsAny(text, " \n") || text == p.dismissed || ed.cur == 0 {
		p.list = nil
		return
	}
	if p.list == nil {
		p.extItems = ext()
	}
	prevSel := ""
	if it, ok := p.list.selected(); ok {
		prevSel = it.label
	}
	p.list = slashPopup(text[1:], builtinItems(), popupSection{"extensions", p.extItems}, popupSection{"prompt templates", templates()})
	if p.list != nil && prevSel != "" {
		for i, it := range p.list.items {
			if it.label == prevSel && !it.divider {
				p.list.sel = i
			}
		}
	}
}

// enter takes the selected item into the editor: a path is completed,
// and true says the editor is not to be submitted; a command replaces the
// text, which is then submitted.
func (p *popupState) enter(ed *editor) (completed bool) {
	if it, ok := p.list.selected(); ok {
		if p.list.file {
			p.acceptFile(ed, it.label)
			return true
		}
		ed.set("/" + it.label)
	}
	p.list = nil
	return false
}

// complete is tab: finish a slash command or an @path (cwd is where paths
// are relative to). It returns a hint when nothing matches.
func (p *popupState) complete(ed *editor, cwd string) (hint string) {
	if it, ok := p.list.selected(); ok {
		if p.list.file {
			p.acceptFile(ed, it.label)
			return ""
		}
		ed.set("/" + it.label + " ")
		p.list = nil
		return ""
	}
	start, ref, ok := ed.atWord()
	if !ok {
		return ""
	}
	cands := fileCandidates(cwd, ref)
	switch len(cands) {
	case 0:
		return "no file matches @" + oneLine(ref)
	case 1:
		p.acceptFile(ed, cands[0])
	default:
		if prefix := commonPrefix(cands); len(prefix) > len(ref) {
			ed.replaceRange(start, "@"+prefix)
		}
		p.list = &popup{file: true}
		for _, c := range cands {
			p.list.items = append(p.list.items, popupItem{label: c})
		}
	}
	return ""
}

func (p *popupState) acceptFile(ed *editor, path string) {
	start, _, ok := ed.atWord()
	if !ok {
		p.list = nil
		return
	}
	suffix := " "
	if strings.HasSuffix(path, "/") {
		suffix = ""
	}
	ed.replaceRange(start, "@"+path+suffix)
	p.list = nil
}

// popupItem is one line of a completion popup; a divider is not selectable.
type popupItem struct {
	label   string // what is shown and inserted
	desc    string
	divider bool
}

// popup is the list shown under the editor while completing.
type popup struct {
	file  bool // @path completion rather than slash commands
	items []popupItem
	sel   int
}

const popupRows = 8

func (p *popup) move(dir int) {
	for i := 0; i < len(p.items); i++ {
		p.sel = (p.sel + dir + len(p.items)) % len(p.items)
		if !p.items[p.sel].divider {
			return
		}
	}
}

func (p *popup) selected() (popupItem, bool) {
	if p == nil || p.sel < 0 || p.sel >= len(p.items) || p.items[p.sel].divider {
		return popupItem{}, false
	}
	return p.items[p.sel], true
}

// view draws the popup: a window of popupRows items around the selection.
func (p *popup) view(width int) []string {
	top := 0
	if len(p.items) > popupRows {
		top = min(max(p.sel-popupRows/2, 0), len(p.items)-popupRows)
	}
	labelW := 0
	for _, it := range p.items {
		labelW = max(labelW, stringWidth(it.label))
	}
	labelW = min(labelW, width/2)
	var out []string
	for i := top; i < len(p.items) && i < top+popupRows; i++ {
		it := p.items[i]
		if it.divider {
			out = append(out, fitLine(width, span{"  ── " + it.label + " " + strings.Repeat("─", max(0, 20-stringWidth(it.label))), sDim}))
			continue
		}
		mark, st := "  ", style(0)
		if i == p.sel {
			mark, st = "› ", fgCyan|sBold
		}
		pad := strings.Repeat(" ", max(0, labelW-stringWidth(it.label)))
		out = append(out, fitLine(width, span{mark, st}, span{it.label + pad, st}, span{"  " + it.desc, sDim}))
	}
	if len(p.items) > popupRows {
		out = append(out, fitLine(width, span{fmt.Sprintf("  %d/%d", p.sel+1, len(p.items)), sDim}))
	}
	return out
}

// slashPopup lists the commands whose names start with what is typed after
// "/": built-in ones, then extension commands under a divider.
func slashPopup(typed string, builtins []popupItem, sections ...popupSection) *popup {
	p := &popup{}
	for _, it := range builtins {
		if strings.HasPrefix(it.label, typed) {
			p.items = append(p.items, it)
		}
	}
	for _, sec := range sections {
		var matches []popupItem
		for _, it := range sec.items {
			if strings.HasPrefix(it.label, typed) {
				matches = append(matches, it)
			}
		}
		if len(matches) > 0 {
			p.items = append(p.items, popupItem{label: sec.title, divider: true})
			p.items = append(p.items, matches...)
		}
	}
	if len(p.items) == 0 {
		return nil
	}
	if p.items[0].divider {
		p.sel = 1
	}
	return p
}

// popupSection is a titled group of the slash popup: the extensions'
// commands, the prompt templates.
type popupSection struct {
	title string
	items []popupItem
}

// fileCandidates lists the paths under cwd that complete ref: entries of
// ref's directory whose names start with its last element; directories
// end in "/". Hidden entries appear only when asked for with a leading dot.
func fileCandidates(cwd, ref string) []string {
	dir, base := filepath.Split(ref)
	abs := dir
	if strings.HasPrefix(dir, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			abs = filepath.Join(home, dir[2:])
		}
	} else if !filepath.IsAbs(dir) {
		abs = filepath.Join(cwd, dir)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil
	}
	var out []string
	for _, ent := range entries {
		name := ent.Name()
		if !strings.HasPrefix(name, base) || (strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		if strings.ContainsAny(name, " \t\n") || sanitize(name) != name {
			continue // not something an @word can name
		}
		full := dir + name
		if ent.IsDir() {
			full += "/"
		} else if ent.Type()&os.ModeSymlink != 0 {
			if st, err := os.Stat(filepath.Join(abs, name)); err == nil && st.IsDir() {
				full += "/"
			}
		}
		out = append(out, full)
		if len(out) >= 200 {
			break
		}
	}
	sort.Strings(out)
	return out
}

// commonPrefix is the longest prefix all of list share.
func commonPrefix(list []string) string {
	if len(list) == 0 {
		return ""
	}
	p := list[0]
	for _, s := range list[1:] {
		for !strings.HasPrefix(s, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}

func builtinItems() []popupItem {
	var items []popupItem
	for _, c := range builtinCommands() {
		items = append(items, popupItem{label: c.name, desc: strings.TrimSpace(c.args + "  " + c.help)})
	}
	return items
}

// extCommandItems lists the extensions' commands that no built-in shadows.
func (t *TUI) extCommandItems() []popupItem {
	if t.Ext == nil {
		return nil
	}
	var items []popupItem
	for _, c := range t.Ext.Commands() {
		name := oneLine(c.Name)
		if name == "" || t.builtin(name) != nil || strings.ContainsAny(name, " /") {
			continue
		}
		items = append(items, popupItem{label: name, desc: oneLine(c.Description) + "  [" + oneLine(c.Extension) + "]"})
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].label < items[j].label })
	return items
}

// templateItems are the templates in the slash popup.
func (t *TUI) templateItems() []popupItem {
	var items []popupItem
	for _, p := range t.templates() {
		desc := oneLine(strings.TrimSpace(p.ArgumentHint + "  " + p.Description))
		items = append(items, popupItem{label: p.Name, desc: desc + "  [" + oneLine(p.Source) + "]"})
	}
	return items
}
