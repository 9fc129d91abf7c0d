package main

import (
	"fmt"
	"slices"
	"strings"
)

// /permissions, /mcp and /diff, and the parts of /status that come from
// parts the TUI may not use (the rules, the MCP servers, trust): wire.go
// gives the TUI a tuiInspect that reads them now, each time it is asked.

// tuiInspect is what those commands read. A nil one (tests that build the
// TUI alone) shows none of it.
type tuiInspect interface {
	Permissions() tuiPermissions
	// MCPServers are the configured servers, in configuration order;
	// started is false before the servers were loaded (the trust dialog
	// is open) or when MCP is off.
	MCPServers() (servers []tuiMCPServer, started bool)
	Trust() tuiTrust
}

// tuiPermissions are the rules in force and where they came from.
type tuiPermissions struct {
	Files      []tuiRuleFile
	Defaults   []string // what each rule source does with a call no rule matches
	Validators []string // the command validators asked, each with its file
	Skipped    []string // files and validators not applied, and why
	Notes      []string // what is wrong with the rules (zot validate --check)
}

// tuiRuleFile is one rules file and its rules that apply.
type tuiRuleFile struct {
	File, Source string
	Rules        []tuiRule
}

type tuiRule struct {
	Action, Text, Where string // Where: "line 3", "allow[2]"
}

// tuiMCPServer is one configured MCP server, as `zot mcp list` shows it.
type tuiMCPServer struct {
	Name, Transport, Target, State, Error, Source string
	Tools                                         int
}

// tuiTrust is where the project directory stands.
type tuiTrust struct {
	Dir     string
	Running bool     // its own programs may start in this run
	Why     string   // how Running came to be: trusted, --trust-project, declined …
	Skipped []string // its programs that are not running, each "kind name (file)"
	Warning string   // trust.json could not be read
}

// cmdPermissions is /permissions: the rules in force, file by file.
func (t *TUI) cmdPermissions(string) {
	if t.cfg.Inspect == nil {
		t.logf(sDim, "/permissions: nothing to show in this session")
		return
	}
	p := t.cfg.Inspect.Permissions()
	t.commitLine(span{"Permissions", sBold})
	var rows [][2]string
	if m := t.cfg.Modes.Current(); m != "" {
		rows = append(rows, [2]string{"mode", fmt.Sprintf("%s: %s (/mode)", m, m.About())})
	}
	for _, d := range p.Defaults {
		rows = append(rows, [2]string{"default", d})
	}
	if len(p.Validators) == 0 {
		rows = append(rows, [2]string{"validators", "none (validators.json)"})
	}
	for _, v := range p.Validators {
		rows = append(rows, [2]string{"validator", v})
	}
	if a := t.cfg.Approvals; a != nil {
		for _, l := range a.Answers() {
			rows = append(rows, [2]string{"your answer", l})
		}
	}
	t.gateMu.Lock()
	if t.askTools && t.approveAll {
		rows = append(rows, [2]string{"your answer", "allow every tool call this session (--no-yolo answered \"yes to every\")"})
	}
	var names []string
	for name := range t.approved {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		rows = append(rows, [2]string{"your answer", "allow every " + name + " call this session (--no-yolo)"})
	}
	t.gateMu.Unlock()
	t.commitRows(helpRows(rows, t.width))
	if len(p.Files) == 0 {
		t.commitLine(span{"no rules files (Claude Code settings with permissions, runok.yml)", sDim})
	}
	actionStyle := map[string]style{"deny": fgRed, "ask": fgYellow, "allow": fgGreen}
	for _, f := range p.Files {
		head := []span{{oneLine(f.File), sBold}}
		if f.Source != "" {
			head = append(head, span{"  " + f.Source, sDim})
		}
		if len(f.Rules) == 0 {
			head = append(head, span{"  (no rules)", sDim})
		}
		t.commitLine(head...)
		for _, r := range f.Rules {
			t.commitLine(span{"  " + fmt.Sprintf("%-5s ", r.Action), actionStyle[r.Action]}, span{oneLine(r.Text), 0}, span{"  " + r.Where, sDim})
		}
	}
	for _, s := range p.Skipped {
		t.logf(fgYellow, "skipped: %s", s)
	}
	for _, n := range p.Notes {
		t.logf(sDim, "note: %s", n)
	}
}

// cmdMCP is /mcp: the MCP servers, their state and their tools.
func (t *TUI) cmdMCP(string) {
	var servers []tuiMCPServer
	started := false
	if t.cfg.Inspect != nil {
		servers, started = t.cfg.Inspect.MCPServers()
	}
	t.commitLine(span{"MCP servers", sBold})
	switch {
	case !started:
		t.commitLine(span{"none started in this session (--no-mcp, or the directory's trust question is open)", sDim})
		return
	case len(servers) == 0:
		t.commitLine(span{"none configured (./.mcp.json, ./.zot/mcp.json, $ZOT_HOME/mcp.json; zot mcp)", sDim})
		return
	}
	stateStyle := map[string]style{"ready": fgGreen, "starting": fgCyan, "failed": fgRed, "invalid": fgRed, "exited": fgYellow, "untrusted": fgYellow}
	for _, s := range servers {
		t.commitLine(span{oneLine(s.Name), sBold}, span{"  " + s.State, stateStyle[s.State]},
			span{fmt.Sprintf("  %s · %d tools · %s", s.Transport, s.Tools, oneLine(s.Target)), 0}, span{"  " + oneLine(s.Source), sDim})
		if s.Error != "" {
			t.logf(fgYellow, "  %s", s.Error)
		}
	}
}

// mcpStates are the servers' states in the order /status counts them.
var mcpStates = []string{"ready", "starting", "failed", "exited", "invalid", "untrusted", "disabled", "stopped"}

// mcpSummary is /status's line about the MCP servers: how many, by state.
func mcpSummary(servers []tuiMCPServer, started bool) string {
	if !started {
		return "none started"
	}
	if len(servers) == 0 {
		return "none configured"
	}
	count := map[string]int{}
	for _, s := range servers {
		count[s.State]++
	}
	var parts []string
	for _, st := range mcpStates {
		if count[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[st], st))
			delete(count, st)
		}
	}
	for st, n := range count { // a state the list lacks
		parts = append(parts, fmt.Sprintf("%d %s", n, st))
	}
	return fmt.Sprintf("%d: %s (/mcp)", len(servers), strings.Join(parts, ", "))
}

// trustSummary is /status's line about the project's trust.
func trustSummary(tr tuiTrust) string {
	s := tr.Why
	if len(tr.Skipped) > 0 {
		s += "; not running: " + strings.Join(tr.Skipped, ", ")
	}
	if tr.Warning != "" {
		s += "; " + tr.Warning
	}
	return s
}

// tuiFileDiff is one file the session changed (/diff).
type tuiFileDiff struct {
	Path   string
	Change string // added, modified, deleted
	Diff   string // unified; "" when Note says why not
	Note   string
}

// msgDiff brings /diff's answer to the UI loop: reading the checkpoints
// waits for a snapshot under way, which the loop must not.
type msgDiff struct {
	files []tuiFileDiff
	err   error
}

// diffMaxLines bounds what /diff prints; the rest is counted.
const diffMaxLines = 400

// cmdDiff is /diff: what this session changed, file by file.
func (t *TUI) cmdDiff(string) {
	if t.cfg.Checkpoints == nil {
		t.logf(sDim, "/diff: checkpoints are off (\"checkpoints\" in config.json), so zot did not record what changed")
		return
	}
	cp := t.cfg.Checkpoints
	t.background(func() {
		files, err := cp.Diff()
		t.post(msgDiff{files, err})
	})
}

// showDiff prints /diff's answer: a summary line per file, then the
// diffs, at most diffMaxLines lines of them.
func (t *TUI) showDiff(m msgDiff) {
	if m.err != nil {
		t.logf(fgRed, "/diff: %v", m.err)
	}
	if len(m.files) == 0 {
		if m.err == nil {
			t.logf(sDim, "/diff: this session has changed no files (that zot's checkpoints cover)")
		}
		return
	}
	count := map[string]int{}
	for _, f := range m.files {
		count[f.Change]++
	}
	t.commitLine(span{fmt.Sprintf("Changed in this session: %d files (%d added, %d modified, %d deleted)", len(m.files), count["added"], count["modified"], count["deleted"]), sBold})
	mark := map[string]span{"added": {"A ", fgGreen}, "modified": {"M ", fgYellow}, "deleted": {"D ", fgRed}}
	for _, f := range m.files {
		row := []span{mark[f.Change], {oneLine(f.Path), 0}}
		if f.Note != "" {
			row = append(row, span{"  (" + oneLine(f.Note) + ")", sDim})
		}
		t.commitLine(row...)
	}
	shown, cut := 0, 0
	for _, f := range m.files {
		if f.Diff == "" {
			continue
		}
		for _, l := range strings.Split(strings.TrimSuffix(f.Diff, "\n"), "\n") {
			if shown == diffMaxLines {
				cut++
				continue
			}
			shown++
			st := style(0)
			switch {
			case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
				st = sBold
			case strings.HasPrefix(l, "+"):
				st = fgGreen
			case strings.HasPrefix(l, "-"):
				st = fgRed
			case strings.HasPrefix(l, "@@"):
				st = fgCyan
			}
			t.commitLine(span{oneLine(l), st})
		}
	}
	if cut > 0 {
		t.logf(sDim, "… %d more lines of diff not shown (/diff shows at most %d)", cut, diffMaxLines)
	}
}
